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
# hand-written 2-stage plan (build/example-given-plan/). Then trains it on one
# device (300 steps, a held-out loss, an ONNX export) and with the searched
# plan over an A100 and three T4s as one process per device, beside one
# device at the same batch.
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
# CPU builds only: they run here on the CPU backend (a CUDA build would be
# for each device's own GPU, and CUDA 13's nvcc cannot build for the V100s).
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=2x16 \
  --cluster "$cluster" --search-budget 10 --targets=cpu -o "$build/example-cluster"
# One process per device of the plan (hetpar-run starts them with mpirun), on
# the CPU backend.
"$build/bin/hetpar-run" "$build/example-cluster" --backend cpu \
  --inputs "$root/examples/models/gpt2/input_0.npy" \
  --check "$root/examples/models/gpt2"
echo
"$build/bin/hetpar-compile" "$model" --input-shape input_ids=2x16 \
  --cluster "$cluster" --baseline tensor_parallel --targets=cpu \
  -o "$build/example-cluster-tp"
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
echo
# Distributed training with the searched plan (docs/training.md): the same
# GPT-2 at 128x32 on examples/clusters/a100-t4x3-pcie.yaml (an A100 and three
# T4s on PCIe). The search picks four data-parallel replicas with the batch
# split by speed (59:23:23:23); hetpar-run trains them 300 steps as one
# process per device on the CPU backend, beside one device at the same batch,
# and prints both loss curves, the predicted step time (on the cluster's GPUs)
# beside the measured one (here: 2 CPU cores standing in for four devices),
# and the measured timeline of the last step (--trace).
cluster=$root/examples/clusters/a100-t4x3-pcie.yaml
train_opts=(--input-shape input_ids=128x32 --mode training --loss cross-entropy
  --labels labels --optimizer adamw --lr 3e-3 --lr-schedule warmup-cosine
  --warmup-steps 20 --total-steps 300 --clip-grad-norm 1.0 --targets cpu
  --eval-program=false)
"$build/bin/hetpar-compile" "$model" "${train_opts[@]}" --cluster "$cluster" \
  -o "$build/example-train-cluster"
"$build/bin/hetpar-compile" "$model" "${train_opts[@]}" \
  -o "$build/example-train-one" > /dev/null
run_opts=(--backend cpu --train --data "$build/example-train-data" --steps 300
  --shuffle --seed 1)
"$build/bin/hetpar-run" "$build/example-train-one" "${run_opts[@]}" \
  --loss-log "$build/example-train-one-loss.jsonl" 2>&1 | grep -v '^step '
"$build/bin/hetpar-run" "$build/example-train-cluster" "${run_opts[@]}" \
  --loss-log "$build/example-train-cluster-loss.jsonl" \
  --trace "$build/example-train-cluster-trace.json" 2>&1 | grep -v '^step '
"$python" - "$build/example-train-one-loss.jsonl" \
  "$build/example-train-cluster-loss.jsonl" \
  "$build/example-train-cluster/plan.json" <<'PY'
import json, statistics, sys
def losses(path):
    return [json.loads(l) for l in open(path) if '"loss"' in l]
one, plan = losses(sys.argv[1]), losses(sys.argv[2])
print("step  one device  searched plan")
for k in (1, 50, 100, 150, 200, 250, 300):
    print("%4d  %10.5f  %13.5f" % (k, one[k - 1]["loss"], plan[k - 1]["loss"]))
rel = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(one, plan))
print("largest relative loss difference over %d steps: %.2g" % (len(plan), rel))
predicted = json.load(open(sys.argv[3]))["predicted_step_time_s"]
measured = statistics.median(128 / r["samples_per_s"] for r in plan[10:])
print("step time: predicted %.3f ms on the cluster's GPUs; measured %.1f ms "
      "here (median, CPU backend)" % (predicted * 1e3, measured * 1e3))
PY
