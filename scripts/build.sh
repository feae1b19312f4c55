#!/usr/bin/env bash
# Configures and builds HetPar into build/ (or $HETPAR_BUILD_DIR) with Ninja.
# Usage: scripts/build.sh [extra cmake arguments]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HETPAR_BUILD_DIR:-$root/build}
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$build"
