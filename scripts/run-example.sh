#!/usr/bin/env bash
# The main job on the bundled example: installs what HetPar needs, builds it, imports
# the bundled GPT-2-style model exported with dynamic batch and sequence axes, fixes
# the input shape, makes the model fully static (shape inference and folding), and
# prints a summary of its ops, parameters and FLOPs.
# Usage: scripts/run-example.sh [MODEL.onnx [--input-shape NAME=DxD ...]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" > /dev/null
build=${HETPAR_BUILD_DIR:-$root/build}
if [[ $# -eq 0 ]]; then
  set -- "$root/examples/models/gpt2/model-dynamic.onnx" --input-shape input_ids=1x16
fi
exec "$build/bin/hetpar-compile" "$@" --emit=summary
