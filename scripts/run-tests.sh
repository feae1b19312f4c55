#!/usr/bin/env bash
# Runs every HetPar test on a fresh Debian 12 machine: installs the system packages,
# builds, and runs the lit suite (which includes the GoogleTest unit tests, the ONNX
# test-data import run, the bundled real models and the out-of-tree plugin build).
# Usage: scripts/run-tests.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build=${HETPAR_BUILD_DIR:-$root/build}
cmake --build "$build" --target check-hetpar
