#!/usr/bin/env bash
# Coverage-guided fuzzing of HetPar's run-time parsers with libFuzzer (Debian's
# clang-22; docs/reliability.md, "Fuzzing").
#
# Usage: bench/fuzz/run.sh HARNESS SECONDS [libFuzzer options...]
#   HARNESS: npy (the .npy reader of inputs and training data) or safetensors
#   (the checkpoint reader). Builds build/fuzz/HARNESS with
#   -fsanitize=fuzzer,address,undefined (UBSan traps, so undefined behaviour is
#   a crash), then fuzzes for SECONDS from the seed corpus
#   test/Fuzz/corpus/HARNESS (new inputs go to build/fuzz/corpus-HARNESS, the
#   seeds are never modified), and prints the executions, the coverage and
#   the crashes. Exit status 0 when nothing crashed, leaked or hung (a run of
#   one input over 10 s is a hang); a crashing input is left in
#   build/fuzz/crash-* (add it to the seed corpus once fixed: a regression
#   input).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
harness=${1:?usage: run.sh HARNESS SECONDS}
seconds=${2:?usage: run.sh HARNESS SECONDS}
shift 2
case $harness in
  npy) sources=(runtime/lib/Npy.cpp runtime/lib/DType.cpp runtime/lib/File.cpp) ;;
  safetensors) sources=(runtime/lib/Safetensors.cpp runtime/lib/DType.cpp runtime/lib/File.cpp runtime/lib/Npy.cpp) ;;
  *) echo "run.sh: unknown harness '$harness' (npy, safetensors)" >&2; exit 2 ;;
esac
clang=${CLANGXX:-clang++-22}
command -v "$clang" > /dev/null || { echo "run.sh: $clang not found (apt-get install clang-22 libclang-rt-22-dev)" >&2; exit 2; }
out=${HETPAR_BUILD_DIR:-$root/build}/fuzz
mkdir -p "$out"
bin=$out/$harness
srcs=("$root/bench/fuzz/$harness.cpp")
for s in "${sources[@]}"; do srcs+=("$root/$s"); done
# Rebuild when a source is newer than the harness binary.
if [[ ! -x $bin ]] || [[ -n $(find "${srcs[@]}" "$root/runtime/lib/Internal.h" "$root/runtime/include" -newer "$bin" -print -quit) ]]; then
  "$clang" -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$root/runtime/include" "${srcs[@]}" -lz -o "$bin"
fi
corpus=$out/corpus-$harness
mkdir -p "$corpus"
log=$out/$harness.log
status=0
(cd "$out" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$@" "$corpus" "$root/test/Fuzz/corpus/$harness") > "$log" 2>&1 || status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
crashes=$(find "$out" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \) | wc -l)
echo "$harness: ${runs:-0} executions in ${seconds} s, coverage ${cov:-0} edges, status $status, $crashes crash/leak/timeout files in $out"
if [[ $status -ne 0 ]]; then
  grep -m5 -E 'ERROR|runtime error|SUMMARY' "$log" || tail -20 "$log"
fi
exit $status
