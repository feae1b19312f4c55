#!/usr/bin/env bash
# The GPU checks, in two halves.
#
# On a GPU machine (which needs only the CUDA toolkit, CMake and Ninja; no LLVM):
#   scripts/gpu-check.sh OUTDIR
# builds hetpar-profile with its CUDA backend, writes OUTDIR/profile.json (the
# GPU's measured GEMM FLOP/s, bandwidths and launch overhead), times every kernel
# of the real models' kernel lists in bench/kernels/ (OUTDIR/measured.txt), and
# keeps nvidia-smi's report and the logs.
#
# Then, where HetPar is built:
#   scripts/gpu-check.sh --report OUTDIR
# predicts every kernel again with the measured profile (bench/kernels/make-lists.sh)
# and prints the median relative error of predicted against measured kernel
# times, per model and overall (target: within 15%), and the same for the
# datasheet-only predictions.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

if [[ "${1:-}" == "--report" ]]; then
  dir=${2:?usage: gpu-check.sh --report OUTDIR}
  kind=$(/usr/bin/python3 -c 'import json,sys; print(next(iter(json.load(open(sys.argv[1]))["devices"])))' "$dir/profile.json")
  echo "== device: $(grep -o '"device_name": "[^"]*"' "$dir/profile.json") as $kind"
  rm -rf "$dir/predicted" "$dir/datasheet"
  PROFILE="$dir/profile.json" DEVICE_KIND=$kind "$root/bench/kernels/make-lists.sh" "$dir/predicted"
  DEVICE_KIND=$kind "$root/bench/kernels/make-lists.sh" "$dir/datasheet"
  for list in "$dir"/predicted/*.txt; do
    name=$(basename "$list" .txt)
    echo "== $name (calibrated)"
    /usr/bin/python3 "$root/scripts/compare-kernels.py" --predicted "$list" \
      --measured "$dir/measured.txt" --worst 3 | grep -v '^kind\|^elementwise\|^gemm\|^copy\|^reduce\|^softmax\|^layernorm'
  done
  echo "== all models, datasheet numbers only"
  /usr/bin/python3 "$root/scripts/compare-kernels.py" --predicted "$dir"/datasheet/*.txt \
    --measured "$dir/measured.txt" --worst 0
  echo "== all models, calibrated with the measured profile"
  exec /usr/bin/python3 "$root/scripts/compare-kernels.py" --predicted "$dir"/predicted/*.txt \
    --measured "$dir/measured.txt" --max-median 0.15
fi

out=${1:?usage: gpu-check.sh OUTDIR | gpu-check.sh --report OUTDIR}
mkdir -p "$out"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
build=${TMPDIR:-/tmp}/hetpar-profile-build
echo "== building hetpar-profile for sm_${cc:-90}"
cmake -S "$root/tools/hetpar-profile" -B "$build" -G Ninja \
  -DCMAKE_CUDA_ARCHITECTURES="${cc:-90}" > "$out/build.log" 2>&1
cmake --build "$build" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "== microbenchmarks"
"$build/hetpar-profile" --backend cuda -o "$out/profile.json" 2>&1 | tee "$out/profile.log"
echo "== the real models' kernels"
lists=()
for f in "$root"/bench/kernels/*.txt; do lists+=(--kernels "$f"); done
"$build/hetpar-profile" --backend cuda --quick "${lists[@]}" --measured "$out/measured.txt" \
  2> "$out/kernels.log"
tail -1 "$out/kernels.log"
cat "$out/profile.json"
