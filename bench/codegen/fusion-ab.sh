#!/usr/bin/env bash
# One code-generation fusion on the CPU backend, A/B: each model compiled
# with the fusion and with FLAG (the hetpar-compile option that turns it
# off), side by side with ONNX Runtime on the same model files and inputs, in
# one run (issue 15; numbers in docs/performance.md).
#
# Usage: bench/codegen/fusion-ab.sh FLAG [ROUNDS [MODEL...]]
#   FLAG    --fuse-conv=false (convolution epilogues, hetpar-onnx-fuse-conv)
#           or --fuse-epilogues=false (GEMM epilogues, LayerNorm prologues)
#   ROUNDS  default 3
#   MODEL   a bundled model (examples/models/NAME), run at its test shape
#           and at a batch of 32 (its inputs repeated), or gpt2-small (a
#           GPT-2-small-shaped model from bench/import/make_gpt2.py, 1 x 128
#           tokens). Default: resnet18 for --fuse-conv=false; gpt2 bert vit
#           gpt2-small otherwise.
# (after a build). Each round runs, in turn, the fused program, the unfused
# one and ONNX Runtime (bench/peers/ort_latency.py, CPU provider, all graph
# optimizations), each the median of N runs (200 at the test shape, 50 at
# batch 32, 20 for gpt2-small) with all $(nproc) cores; the best median of
# the rounds counts. Prints the latencies, fused / unfused and fused / ORT.
# ONNX Runtime comes from PyPI into the virtual environment of
# bench/peers/run.sh ($HETPAR_PEERS_VENV).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
bin=$build/bin
[[ $# -ge 1 ]] || { sed -n 7,16p "$0" >&2; exit 2; }
flag=$1
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
models=("$@")
if [[ ${#models[@]} -eq 0 ]]; then
  [[ $flag == --fuse-conv=false ]] && models=(resnet18) || models=(gpt2 bert vit gpt2-small)
fi
venv=${HETPAR_PEERS_VENV:-$build/peers-venv}
threads=$(nproc)
export OMP_NUM_THREADS=$threads
[[ -x $bin/hetpar-compile ]] || { echo "fusion-ab.sh: build HetPar first (scripts/build.sh)" >&2; exit 2; }
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import onnxruntime' 2> /dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnxruntime numpy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Entries: name, model file, inputs (comma-separated), repeats, shape options.
names=() files=() inputs=() repeats=() shapes=()
for m in "${models[@]}"; do
  if [[ $m == gpt2-small ]]; then
    /usr/bin/python3 "$root/bench/import/make_gpt2.py" "$work/gpt2-small.onnx" > /dev/null
    /usr/bin/python3 -c 'import numpy as np, sys; np.save(sys.argv[1], (np.arange(128) % 50257).reshape(1, 128).astype(np.int64))' "$work/ids.npy"
    names+=(gpt2-small) files+=("$work/gpt2-small.onnx") inputs+=("$work/ids.npy") repeats+=(20) shapes+=("")
    continue
  fi
  dir=$root/examples/models/$m
  [[ -f $dir/model.onnx ]] || { echo "fusion-ab.sh: no model $dir/model.onnx" >&2; exit 2; }
  names+=("$m") files+=("$dir/model.onnx") repeats+=(200) shapes+=("")
  inputs+=("$(ls "$dir"/input_*.npy | sort | paste -sd,)")
  # Batch 32: each input repeated along dimension 0, on the dynamic export.
  args=$(/usr/bin/python3 "$root/bench/lib/batch_inputs.py" "$dir" "$work/$m-b32")
  names+=("$m-b32") files+=("$dir/model-dynamic.onnx") repeats+=(50)
  inputs+=("${args%% *}") shapes+=("${args#* }")
done
for i in "${!names[@]}"; do
  for v in fused unfused; do
    off=$([[ $v == unfused ]] && echo "$flag" || true)
    "$bin/hetpar-compile" "${files[$i]}" -o "$work/${names[$i]}-$v" --targets=cpu ${shapes[$i]} $off \
      > /dev/null 2> "$work/compile.log" || { cat "$work/compile.log" >&2; exit 1; }
  done
done
hp() { # OUT INPUTS REPEAT -> median in ms
  "$bin/hetpar-run" "$1" --backend cpu --repeat "$3" --inputs "$2" |
    sed -n 's/^hetpar_run alone: median \([0-9.]*\) \(us\|ms\|s\) .*/\1 \2/p' |
    awk '{ print $2 == "us" ? $1 / 1000 : $2 == "s" ? $1 * 1000 : $1 }'
}
declare -A best
keep() { best[$1]=$(/usr/bin/python3 -c 'import sys; print(min(float(a) for a in sys.argv[1:] if a))' "$2" "${best[$1]:-}"); }
for ((r = 0; r < rounds; ++r)); do
  for i in "${!names[@]}"; do
    n=${names[$i]}
    keep "$n-fused" "$(hp "$work/$n-fused" "${inputs[$i]}" "${repeats[$i]}")"
    keep "$n-unfused" "$(hp "$work/$n-unfused" "${inputs[$i]}" "${repeats[$i]}")"
    keep "$n-ort" "$("$venv/bin/python" "$root/bench/peers/ort_latency.py" "${files[$i]}" "${repeats[$i]}" "$threads" ${inputs[$i]//,/ } |
      sed -n 's/^median \([0-9.]*\) .*/\1/p')"
    echo "round $r: $n fused ${best[$n-fused]} unfused ${best[$n-unfused]} ort ${best[$n-ort]} (best so far, ms)" >&2
  done
done
echo "fusion-ab.sh $flag: $threads threads, best of $rounds rounds of medians (ms)"
printf '%-14s %10s %10s %10s %14s %10s\n' model fused unfused ort fused/unfused fused/ort
for n in "${names[@]}"; do
  /usr/bin/python3 -c 'import sys; f, u, o = map(float, sys.argv[2:]); print("%-14s %10.3f %10.3f %10.3f %13.2fx %9.2fx" % (sys.argv[1], f, u, o, f / u, f / o))' \
    "$n" "${best[$n-fused]}" "${best[$n-unfused]}" "${best[$n-ort]}"
done
