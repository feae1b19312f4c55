#!/usr/bin/env bash
# The main job on the bundled example: installs what HetPar needs, builds it, imports
# the bundled GPT-2-style model exported with dynamic batch and sequence axes, fixes
# the input shape, makes the model fully static (shape inference and folding), and
# prints a summary of its ops, parameters and FLOPs. Then compiles the model for a
# bundled heterogeneous cluster (four A100s and four V100s in two servers): the
# search chooses the plan, the partitioner splits the model into one program per
# device (build/example-cluster: device_<id>.cu and their CPU builds, plan.json,
# trace.json), hetpar-run starts one process per device and checks the joined
# outputs against the stored ONNX Runtime outputs; the same with the tensor-parallel
# baseline over all eight devices (uneven shards by device speed). Then searches
# the best training plan at 64x64 on the same cluster and prints it with its
# alternatives and the baselines (build/example-plan/), and evaluates the
# hand-written 2-stage plan (build/example-given-plan/).
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
cluster=$root/examples/clusters/a100x4-v100x4-2nodes.yaml
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=2x16 \
  --cluster "$cluster" --search-budget 10 -o "$build/example-cluster"
# One process per device of the plan (hetpar-run starts them with mpirun); the
# CPU backend: the multi-device CUDA path is not written yet.
"$build/bin/hetpar-run" "$build/example-cluster" --backend cpu \
  --inputs "$root/examples/models/gpt2/input_0.npy" \
  --check "$root/examples/models/gpt2"
echo
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=2x16 \
  --cluster "$cluster" --baseline tensor_parallel -o "$build/example-cluster-tp"
"$build/bin/hetpar-run" "$build/example-cluster-tp" --backend cpu \
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
echo
# Training on one device (docs/training.md): the same GPT-2 as a character-level
# language model of the GPL-3 text that ships with Debian, 300 AdamW steps with
# warm-up and cosine decay on the CPU backend. The loss starts near ln(512) =
# 6.2 (an untrained model over its 512-token vocabulary) and falls below 3. The
# last 96 windows of the text are held out: their loss (the evaluation step,
# --eval-data) every 100 steps.
python=/usr/bin/python3
[[ -x $python ]] || python=python3
"$python" "$root/scripts/models/make_chars.py" /usr/share/common-licenses/GPL-3 \
  "$build/example-train-data" --seq 32 --eval-windows 96
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=8x32 --mode training \
  --loss cross-entropy --labels labels --optimizer adamw --lr 3e-3 \
  --lr-schedule warmup-cosine --warmup-steps 20 --total-steps 300 \
  --clip-grad-norm 1.0 --targets cpu -o "$build/example-train"
"$build/bin/hetpar-run" "$build/example-train" --backend cpu --train \
  --data "$build/example-train-data" --steps 300 --shuffle --seed 1 \
  --checkpoint "$build/example-train-ckpt" --checkpoint-every 100 \
  --loss-log "$build/example-train-loss.jsonl" \
  --eval-data "$build/example-train-data/eval" --eval-every 100 \
  --export-onnx "$build/example-trained.onnx"
"$python" - "$build/example-train-loss.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
losses = [r["loss"] for r in rows if "loss" in r]
held = {r["step"]: r["eval_loss"] for r in rows if "eval_loss" in r}
for k in (1, 50, 100, 150, 200, 250, 300):
    print("step %3d: loss %.3f%s" % (k, losses[k - 1],
          ", held-out %.3f" % held[k] if k in held else ""))
PY
