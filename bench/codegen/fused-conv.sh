#!/usr/bin/env bash
# Convolution epilogues (hetpar-onnx-fuse-conv) on the CPU backend: the
# bundled ResNet-18/8 at its test shape (2 x 3 x 64 x 64) and at batch 32,
# compiled with the fusion and with --fuse-conv=false, side by side with ONNX
# Runtime on the same model files and inputs, in one run (issue 15; numbers
# in docs/performance.md, "Convolution epilogues").
#
# Usage: bench/codegen/fused-conv.sh [ROUNDS]   (after a build; default 3)
#
# Each round runs, in turn, the fused program, the unfused one and ONNX
# Runtime (bench/peers/ort_latency.py, CPU provider, all graph optimizations),
# each the median of N runs (200 at batch 2, 50 at batch 32) with all
# $(nproc) cores; the best median of the rounds counts. Prints the latencies,
# fused / unfused and fused / ORT. ONNX Runtime comes from PyPI into the
# virtual environment of bench/peers/run.sh ($HETPAR_PEERS_VENV).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
bin=$build/bin
rounds=${1:-3}
venv=${HETPAR_PEERS_VENV:-$build/peers-venv}
threads=$(nproc)
export OMP_NUM_THREADS=$threads
[[ -x $bin/hetpar-compile ]] || { echo "fused-conv.sh: build HetPar first (scripts/build.sh)" >&2; exit 2; }
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import onnxruntime' 2> /dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnxruntime numpy
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
m=$root/examples/models/resnet18
/usr/bin/python3 -c 'import numpy as np, sys; a = np.load(sys.argv[1]); np.save(sys.argv[2], np.concatenate([a] * 16))' \
  "$m/input_0.npy" "$work/b32.npy"
for v in fused unfused; do
  flag=$([[ $v == unfused ]] && echo --fuse-conv=false || true)
  "$bin/hetpar-compile" "$m/model.onnx" -o "$work/b2-$v" --targets=cpu $flag > /dev/null 2> "$work/compile.log" || { cat "$work/compile.log" >&2; exit 1; }
  "$bin/hetpar-compile" "$m/model-dynamic.onnx" --input-shape image=32x3x64x64 -o "$work/b32-$v" \
    --targets=cpu $flag > /dev/null 2> "$work/compile.log" || { cat "$work/compile.log" >&2; exit 1; }
done
hp() { # OUT INPUT REPEAT -> median in ms
  "$bin/hetpar-run" "$1" --backend cpu --repeat "$3" --inputs "$2" |
    sed -n 's/^hetpar_run alone: median \([0-9.]*\) \(us\|ms\|s\) .*/\1 \2/p' |
    awk '{ print $2 == "us" ? $1 / 1000 : $2 == "s" ? $1 * 1000 : $1 }'
}
declare -A best
keep() { best[$1]=$(/usr/bin/python3 -c 'import sys; print(min(float(a) for a in sys.argv[1:] if a))' "$2" "${best[$1]:-}"); }
for ((r = 0; r < rounds; ++r)); do
  for shape in b2 b32; do
    if [[ $shape == b2 ]]; then in=$m/input_0.npy n=200 model=$m/model.onnx
    else in=$work/b32.npy n=50 model=$m/model-dynamic.onnx; fi
    keep "$shape-fused" "$(hp "$work/$shape-fused" "$in" $n)"
    keep "$shape-unfused" "$(hp "$work/$shape-unfused" "$in" $n)"
    keep "$shape-ort" "$("$venv/bin/python" "$root/bench/peers/ort_latency.py" "$model" $n "$threads" "$in" |
      sed -n 's/^median \([0-9.]*\) .*/\1/p')"
  done
done
echo "ResNet-18/8, $threads threads, best of $rounds rounds of medians (ms)"
printf '%-6s %10s %10s %10s %16s %12s\n' shape fused unfused ort fused/unfused fused/ort
for shape in b2 b32; do
  /usr/bin/python3 -c 'import sys; f, u, o = map(float, sys.argv[2:]); print("%-6s %10.3f %10.3f %10.3f %15.2fx %11.2fx" % (sys.argv[1], f, u, o, f / u, f / o))' \
    "$shape" "${best[$shape-fused]}" "${best[$shape-unfused]}" "${best[$shape-ort]}"
done
