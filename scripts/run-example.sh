#!/usr/bin/env bash
# The main job on the bundled example: installs what HetPar needs, builds it, imports
# the bundled GPT-2-style model exported with dynamic batch and sequence axes, fixes
# the input shape, makes the model fully static (shape inference and folding), and
# prints a summary of its ops, parameters and FLOPs. Compiles it for one device
# (build/example-program: device_0.cu, its CPU build, its CUDA build when nvcc is
# present, weights), runs it on the CPU backend and checks the outputs against
# the stored ONNX Runtime outputs. Then searches the best training
# plan for it on two servers (four A100s, four V100s) and prints it with its
# alternatives and the baselines (plan.json and trace.json in build/example-plan/),
# and evaluates the hand-written 2-stage plan on the same cluster
# (build/example-given-plan/).
# Usage: scripts/run-example.sh [MODEL.onnx [--input-shape NAME=DxD ...]]
#   (with a model: only its summary)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" > /dev/null
build=${HETPAR_BUILD_DIR:-$root/build}
if [[ $# -gt 0 ]]; then
  exec "$build/bin/hetpar-compile" "$@" --emit=summary
fi
model=$root/examples/models/gpt2/model-dynamic.onnx
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=1x16 --emit=summary
echo
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=2x16 -o "$build/example-program"
"$build/bin/hetpar-run" "$build/example-program" --backend cpu --repeat 20 \
  --inputs "$root/examples/models/gpt2/input_0.npy" \
  --check "$root/examples/models/gpt2"
echo
echo
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=64x64 \
  --cluster "$root/examples/clusters/a100x4-v100x4-2nodes.yaml" --mode training \
  --plan-only --explain -o "$build/example-plan"
echo
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=16x64 \
  --cluster "$root/examples/clusters/a100x4-v100x4-2nodes.yaml" \
  --plan "$root/examples/plans/gpt2-a100x4-v100x4.json" --plan-only -o "$build/example-given-plan"
