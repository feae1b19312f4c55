#!/usr/bin/env bash
# Benchmarks of issue 6 (numbers in docs/performance.md):
#  1. Compile time end to end for GPT-2 small (124M, bench/import/make_gpt2.py,
#     8 x 128 tokens) on examples/clusters/mixed-64.yaml: import, search (10 s
#     budget), partition, code generation of every device's program; once with
#     sources only (--targets=none) and once with the CPU builds (mpicxx, as
#     many at once as there are cores).
#  2. CPU-backend step time of 4-process plans against the one-process
#     program on the same machine: the overhead of the runtime and MPI. GPT-2
#     tiny (examples/models/gpt2, 8 x 16 tokens, the dynamic export) with
#     4-way data parallelism, 4-way tensor parallelism and a 4-stage pipeline
#     (4 microbatches); median of 20 steps after a warm-up (hetpar-run --repeat).
# Usage: bench/partition/run.sh [WORKDIR]   (after scripts/build.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${HETPAR_BUILD_DIR:-$root/build}/bin
work=${1:-$(mktemp -d)}
mkdir -p "$work"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
seconds() { /usr/bin/python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$1"; }

echo "== compile time, GPT-2 small on mixed-64.yaml ($(nproc) cores)"
/usr/bin/python3 "$root/bench/import/make_gpt2.py" "$work/gpt2-small.onnx" --batch 8 > /dev/null
for targets in none cpu; do
  start=$(date +%s.%N)
  "$bin/hetpar-compile" "$work/gpt2-small.onnx" \
    --cluster "$root/examples/clusters/mixed-64.yaml" --search-budget 10 \
    --targets=$targets -o "$work/gpt2-small-mixed64-$targets" > "$work/compile-$targets.log" 2>&1
  echo "targets=$targets: $(seconds "$start") s end to end; $(grep -m1 '^programs:' "$work/compile-$targets.log")"
done
grep -m1 -A1 '^plan' "$work/compile-cpu.log"

echo
echo "== CPU step time: 4 processes against 1 (GPT-2 tiny, 8 x 16 tokens)"
model=$root/examples/models/gpt2/model-dynamic.onnx
/usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], (np.arange(128) * 7 % 512).reshape(8, 16).astype(np.int64))' "$work/ids.npy"
step() { # median step time printed by hetpar-run
  "$bin/hetpar-run" "$1" --backend cpu --repeat 20 --inputs "$work/ids.npy" 2>&1 |
    sed -n 's/^latency: median \([0-9.]* [mu]s\).*/\1/p'
}
"$bin/hetpar-compile" "$model" --input-shape input_ids=8x16 --targets=cpu -o "$work/one" > /dev/null 2>&1
echo "1 process (one-device program):          $(step "$work/one")"
cat > "$work/dp4.json" <<JSON
{"microbatches": 1, "stages": [{"first": "/transformer/wte/Gather", "last": "/lm_head/MatMul", "devices": [0, 1, 2, 3], "data": 4}]}
JSON
first=$("$bin/hetpar-compile" "$model" --input-shape input_ids=8x16 --cluster "$root/examples/clusters/a100-t4x3-pcie.yaml" --baseline pipeline --plan-only -o "$work/names" > /dev/null && /usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["stages"][0]["ops"][0], p["stages"][-1]["ops"][-1])' "$work/names/plan.json")
set -- $first
sed -i "s|/transformer/wte/Gather|$1|; s|/lm_head/MatMul|$2|" "$work/dp4.json"
for how in "data parallel 4:--plan $work/dp4.json" "tensor parallel 4:--baseline tensor_parallel" "pipeline 4 stages:--baseline pipeline"; do
  name=${how%%:*}
  args=${how#*:}
  "$bin/hetpar-compile" "$model" --input-shape input_ids=8x16 --targets=cpu \
    --cluster "$root/examples/clusters/a100-t4x3-pcie.yaml" $args -o "$work/p4" > /dev/null 2>&1
  printf '4 processes, %-24s %s\n' "$name:" "$(step "$work/p4")"
done
echo "(step: all microbatches of the batch through every device's program, host copies included; median of 20 after a warm-up)"
