#!/usr/bin/env bash
# Runs every HetPar test on a fresh Debian 12 machine: installs the system packages,
# builds, and runs the lit suite (which includes the GoogleTest unit tests, the ONNX
# test-data import run, the bundled real models, the out-of-tree plugin build and
# the bounded fuzzing runs).
#
# Usage: scripts/run-tests.sh [--sanitize] [lit options...]
#   --sanitize: the sanitizer build (docs/reliability.md, "Sanitizer build"):
#     builds into build-sanitize/ (or $HETPAR_BUILD_DIR) with Debian's clang-22,
#     AddressSanitizer and UndefinedBehaviorSanitizer (-DHETPAR_SANITIZE=ON: the
#     compiler, the runtime, and every CPU program the tests generate), and runs
#     the suite there; any sanitizer report fails its test. Lit options after
#     it pick tests, e.g. `--filter Tools/` (HETPAR_LIT_OPTS).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
if [[ ${1:-} == --sanitize ]]; then
  shift
  export HETPAR_BUILD_DIR=${HETPAR_BUILD_DIR:-$root/build-sanitize}
  "$root/scripts/build.sh" -DHETPAR_SANITIZE=ON \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
  # A sanitizer report ends the process with a non-zero status; leaks are
  # reports too. Stack traces name source lines (llvm-symbolizer-22).
  # allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs in
  # header code, which is instrumented in HetPar's objects but not in
  # Debian's libMLIR; a slab our copy poisoned and libMLIR's copy hands out
  # reads as use-after-poison (StringAttr::get in hetpar-dist-partition).
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1:symbolize=1:allow_user_poisoning=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}
  if [[ $# -gt 0 ]]; then export LIT_OPTS="${LIT_OPTS:-} $*"; fi
else
  "$root/scripts/build.sh"
fi
build=${HETPAR_BUILD_DIR:-$root/build}
cmake --build "$build" --target check-hetpar
