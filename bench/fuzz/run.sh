#!/usr/bin/env bash
# Coverage-guided fuzzing of HetPar's parsers with libFuzzer (Debian's
# clang-22; docs/reliability.md, "Fuzzing").
#
# Usage: bench/fuzz/run.sh HARNESS SECONDS [libFuzzer options...]
#   HARNESS, each bench/fuzz/HARNESS.cpp:
#     npy, safetensors, manifest, weights-index  the runtime's readers
#     cluster, plan, profile                     the compiler's YAML/JSON readers
#     onnx         the importer through static shapes, on any bytes
#     onnx-mutate  structure-aware: mutated models through import, the
#                  baseline plans and code generation
#   Builds $HETPAR_FUZZ_DIR/HARNESS (default build/fuzz) with
#   -fsanitize=fuzzer,address,undefined (UBSan traps, so undefined behaviour
#   is a crash). The compiler's harnesses instrument the sources under test
#   with the flags of the HetPar build in $HETPAR_BUILD_DIR (default build/,
#   which must be built) and link its other libraries. Then fuzzes for
#   SECONDS from the seed corpus test/Fuzz/corpus/HARNESS (the ONNX harnesses
#   also read the ONNX backend test suite's models; new inputs go to
#   $HETPAR_FUZZ_DIR/corpus-HARNESS, the seeds are never modified) and prints
#   the executions, the coverage and the crashes. Exit status 0 when nothing
#   crashed, leaked or hung (one input running over 10 s is a hang, one over 2 GB
#   out of memory); a failing input is left in $HETPAR_FUZZ_DIR/crash-*
#   (leak-*, timeout-*, oom-*) (add it to the seed
#   corpus once fixed: a regression input). To rerun saved inputs without
#   libFuzzer: build/bin/hetpar-fuzz-replay-HARNESS PATH... (Replay.cpp).
#   Leaks: the ONNX harnesses are checked once, when the campaign ends (a
#   leak of any input is then reported, status non-zero, "a leak reported"
#   in the summary, and no leak-* file names the input: rerun with the option
#   -detect_leaks=1 to have libFuzzer find it); the others after every input
#   whose allocations and frees differ (libFuzzer's default).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
harness=${1:?usage: run.sh HARNESS SECONDS}
seconds=${2:?usage: run.sh HARNESS SECONDS}
shift 2
build=${HETPAR_BUILD_DIR:-$root/build}
out=${HETPAR_FUZZ_DIR:-$build/fuzz}
mapfile -t runtime_all < <(cd "$root" && printf '%s\n' runtime/lib/*.cpp)
imp=(lib/Import/ONNXImporter.cpp lib/Import/OpImporters.cpp
  lib/Import/SchemaInference.cpp lib/Import/TensorData.cpp
  lib/Transforms/InferShapes.cpp lib/Transforms/FoldConstants.cpp
  lib/Transforms/VerifyStaticShapes.cpp lib/Support/ShapeUtils.cpp)
extra_corpus=()
kind=runtime
case $harness in
  npy) sources=(runtime/lib/Npy.cpp runtime/lib/DType.cpp runtime/lib/File.cpp) ;;
  safetensors) sources=(runtime/lib/Safetensors.cpp runtime/lib/DType.cpp runtime/lib/File.cpp runtime/lib/Npy.cpp) ;;
  manifest | weights-index) sources=("${runtime_all[@]}") ;;
  cluster)
    sources=(lib/Cluster/ClusterParser.cpp lib/Cluster/Cluster.cpp lib/Cluster/Catalog.cpp lib/Support/YAMLReader.cpp)
    kind=compiler ;;
  plan) sources=(lib/Plan/Plan.cpp lib/Support/YAMLReader.cpp); kind=compiler ;;
  profile) sources=(lib/CostModel/CostModel.cpp lib/Support/YAMLReader.cpp); kind=compiler ;;
  onnx) sources=("${imp[@]}"); kind=compiler ;;
  onnx-mutate)
    sources=("${imp[@]}" lib/Plan/Baselines.cpp lib/Plan/Simulator.cpp lib/Plan/Sharding.cpp
      lib/Codegen/CheckSupport.cpp lib/Codegen/EmitProgram.cpp lib/Codegen/EmitOp.cpp
      lib/Codegen/EmitElementwise.cpp lib/Codegen/EmitGemmOps.cpp lib/Codegen/EmitCollectives.cpp
      lib/Codegen/EmitTrainingState.cpp lib/Codegen/MemoryPlan.cpp)
    kind=compiler ;;
  *) echo "run.sh: unknown harness '$harness' (npy, safetensors, manifest, weights-index, cluster, plan, profile, onnx, onnx-mutate)" >&2; exit 2 ;;
esac
# Seeds beyond test/Fuzz/corpus/HARNESS: the examples users start from, and
# for the ONNX harnesses the small bundled models and the ONNX backend test
# suite's node models (libonnx-testdata).
case $harness in
  cluster) extra_corpus=("$root/examples/clusters") ;;
  plan) extra_corpus=("$root/examples/plans") ;;
  profile) extra_corpus=("$root/examples/profiles") ;;
  onnx | onnx-mutate)
    seeds=$out/seeds-onnx
    if [[ ! -d $seeds ]]; then
      mkdir -p "$seeds"
      # libFuzzer reads a folder's files, not its subfolders: link the models.
      for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
        [[ -f $m ]] && ln -sf "$m" "$seeds/$(basename "$(dirname "$m")").onnx"
      done
      for m in "$root"/examples/models/{mlp,digits-mlp}/model.onnx; do
        ln -sf "$m" "$seeds/$(basename "$(dirname "$m")").onnx"
      done
    fi
    # Each ONNX harness also starts from the other's regression inputs.
    other=onnx; [[ $harness == onnx ]] && other=onnx-mutate
    extra_corpus=("$seeds")
    [[ -d $root/test/Fuzz/corpus/$other ]] && extra_corpus+=("$root/test/Fuzz/corpus/$other") ;;
esac
clang=${CLANGXX:-clang++-22}
command -v "$clang" > /dev/null || { echo "run.sh: $clang not found (apt-get install clang-22 libclang-rt-22-dev)" >&2; exit 2; }
mkdir -p "$out"
bin=$out/$harness
# Line tables are all a sanitizer's stack trace needs (file:line); full
# debug info of MLIR's templates made the builds about 20% slower.
fuzzflags=(-gline-tables-only -O1 -fsanitize=address,undefined -fno-sanitize=vptr,function
  -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-unknown-warning-option -w)
srcs=("bench/fuzz/$harness.cpp" "${sources[@]}")
# Objects are kept per source in $out/obj-KIND and shared by the harnesses
# (the runtime's sources are in three of them); one is rebuilt when its
# source, or any header, is newer.
objs=$out/obj-$kind
mkdir -p "$objs"
newest_header=$(cd "$root" && find bench/fuzz/*.h runtime/lib/*.h runtime/include include -type f -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2)
objects=()
stale=()
for src in "${srcs[@]}"; do
  obj=$objs/${src//\//_}.o
  objects+=("$obj")
  if [[ ! -f $obj || $root/$src -nt $obj || $root/$newest_header -nt $obj ]]; then
    stale+=("$src")
  fi
done
if [[ $kind == compiler && ${#stale[@]} -gt 0 ]]; then
  [[ -f $build/compile_commands.json ]] || { echo "run.sh: $harness needs a HetPar build in $build (scripts/build.sh)" >&2; exit 2; }
fi
if [[ ${#stale[@]} -gt 0 ]]; then
  # Each source with its flags: the runtime's own, or those of the HetPar
  # build (a harness with the importer's: ONNX's defines, exceptions);
  # compiled by clang with the sanitizers and libFuzzer's coverage, two at a
  # time. The build's precompiled header (-include, in GCC's format) is
  # left out: clang parses the sources' own includes.
  /usr/bin/python3 - "$kind" "$build/compile_commands.json" "$root" "$objs" "${stale[@]}" > "$objs/commands" <<'PY'
import json, os, shlex, sys
kind, db, root, objs, srcs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
flags, ref = {}, []
if kind == "compiler":
    for e in json.load(open(db)):
        args = shlex.split(e["command"])[1:]
        keep, skip = [], False
        for a in args:
            if skip: skip = False; continue
            if a in ("-o", "-c", "-MT", "-MF", "-include"): skip = True; continue
            if a in ("-MD", "-Winvalid-pch") or a.startswith("-O"): continue
            keep.append(a)
        flags[os.path.relpath(e["file"], root)] = keep
    ref = flags["lib/Import/ONNXImporter.cpp"]
else:
    ref = ["-std=c++17", "-fexceptions", "-I" + os.path.join(root, "runtime/include")]
for s in srcs:
    obj = os.path.join(objs, s.replace("/", "_") + ".o")
    print(shlex.join(flags.get(s, ref) + ["-c", s, "-o", obj]))
PY
  (cd "$root" && xargs -P 2 -L 1 "$clang" "${fuzzflags[@]}" -fsanitize=fuzzer-no-link < "$objs/commands")
fi
if [[ ! -x $bin || ${#stale[@]} -gt 0 ]] || [[ -n $(find "${objects[@]}" -newer "$bin" -print -quit) ]]; then
  if [[ $kind == runtime ]]; then
    "$clang" "${fuzzflags[@]}" -fsanitize=fuzzer "${objects[@]}" -lz -ldl -o "$bin"
  else
    # Every HetPar library (the instrumented sources take precedence over
    # their copies there), so that what they call is found.
    "$clang" "${fuzzflags[@]}" -fsanitize=fuzzer "${objects[@]}" "$build"/lib/libHetPar*.so \
      -L/usr/lib/llvm-22/lib -lMLIR -lLLVM -lonnx -lonnx_proto -lprotobuf \
      -Wl,-rpath,"$build/lib" -Wl,-rpath,/usr/lib/llvm-22/lib -o "$bin"
  fi
fi
corpus=$out/corpus-$harness
mkdir -p "$corpus"
seed_dirs=("${extra_corpus[@]}")
[[ -d $root/test/Fuzz/corpus/$harness ]] && seed_dirs=("$root/test/Fuzz/corpus/$harness" "${seed_dirs[@]}")
log=$out/$harness.log
status=0
# The compiler's harnesses hold the sources under test twice (their
# instrumented copies and the build's libraries); in the sanitizer build both
# are instrumented, which AddressSanitizer would report as an ODR violation.
# LLVM's allocators poison their slabs in header code, instrumented here but
# not in Debian's libMLIR, so user poisoning is off (scripts/run-tests.sh).
asan=${ASAN_OPTIONS:-}
[[ $kind == compiler ]] && asan="${asan:+$asan:}detect_odr_violation=0:allow_user_poisoning=0"
# libFuzzer checks for leaks after every input that allocates more than it
# frees, with a scan of the whole heap. The ONNX harnesses keep one
# MLIRContext for 256 inputs (ImportHarness.h), whose uniqued types and
# attributes make nearly every input such a one: the scans took the onnx
# harness from 16,900 to 1,165 inputs per second and onnx-mutate from 2,630
# to 322 (30-45 s each way, 2026-12-07). LeakSanitizer still scans once when
# the process exits, which reports a leak of any input of the campaign
# (checked with a harness that leaks once in 4.5 million inputs). Options
# given to run.sh come later and win (-detect_leaks=1).
leakflags=()
[[ $harness == onnx || $harness == onnx-mutate ]] && leakflags=(-detect_leaks=0)
started=$SECONDS
(cd "$out" && ASAN_OPTIONS=$asan "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "${leakflags[@]}" "$@" "$corpus" "${seed_dirs[@]}") > "$log" 2>&1 || status=$?
# The time it ran: less than SECONDS when an input stopped the campaign.
elapsed=$((SECONDS - started))
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
crashes=$(find "$out" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
# A LeakSanitizer report (at exit it comes with no file: the input is not
# known).
exit_leak=
grep -q 'ERROR: LeakSanitizer' "$log" && exit_leak=", a leak reported in $log"
echo "$harness: ${runs:-0} executions in ${elapsed} s, coverage ${cov:-0} edges, status $status, $crashes crash/leak/timeout/oom files in $out$exit_leak"
if [[ $status -ne 0 ]]; then
  grep -m5 -E 'ERROR|runtime error|SUMMARY' "$log" || tail -20 "$log"
fi
exit $status
