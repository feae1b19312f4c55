#!/usr/bin/env bash
# What the index checks cost (docs/reliability.md, "Indices"; numbers in
# docs/performance.md): each model compiled twice for the CPU, with the checks
# (the default) and with --unchecked-indices, run side by side in one process
# each round, rounds interleaved; prints the median `hetpar_run alone` latency
# of each build per round and the checked / unchecked ratio.
#
# Usage: bench/codegen/index-checks.sh [ROUNDS] [REPEAT]   (after a build)
#   default 3 rounds of 300 runs; OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are 1
#   unless set.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${HETPAR_BUILD_DIR:-$root/build}/bin
rounds=${1:-3}
repeat=${2:-300}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The models whose graphs read indices from data: token embeddings (Gather).
models=(gpt2 bert llama)
median() { sed -n 's/.*hetpar_run alone: median \([0-9.]*\) \([mu]s\).*/\1 \2/p' "$1"; }
to_us() { awk '{ print ($2 == "ms") ? $1 * 1000 : $1 }'; }
for m in "${models[@]}"; do
  for v in checked unchecked; do
    flag=()
    [[ $v == unchecked ]] && flag=(--unchecked-indices)
    "$bin/hetpar-compile" "$root/examples/models/$m/model.onnx" --targets cpu "${flag[@]}" \
      -o "$work/$m-$v" > /dev/null 2>&1
  done
done
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $OMP_NUM_THREADS thread(s); $rounds rounds of $repeat runs"
printf '%-8s %-6s %14s %14s %8s\n' model round "checked (us)" "unchecked (us)" ratio
for m in "${models[@]}"; do
  ins=$(ls "$root"/examples/models/$m/input_*.npy | sort -V | paste -sd,)
  for r in $(seq 1 "$rounds"); do
    for v in checked unchecked; do
      "$bin/hetpar-run" "$work/$m-$v" --backend cpu --inputs "$ins" --repeat "$repeat" \
        > "$work/$m-$v.log"
    done
    c=$(median "$work/$m-checked.log" | to_us)
    u=$(median "$work/$m-unchecked.log" | to_us)
    printf '%-8s %-6s %14.1f %14.1f %8.3f\n' "$m" "$r" "$c" "$u" "$(awk -v c="$c" -v u="$u" 'BEGIN { print c / u }')"
  done
done
