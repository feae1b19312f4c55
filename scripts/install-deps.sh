#!/usr/bin/env bash
# Installs every Debian 12 package HetPar needs to build and test.
# Idempotent: when everything is present it only runs dpkg-query and exits (well under a second).
# Usage: scripts/install-deps.sh   (as root, or with sudo available)
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ pkg-config time
  # IR, passes, tools: LLVM/MLIR 22.1 (bookworm-security carries 22.1)
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  # tests: lit and FileCheck come with llvm-22-tools; GoogleTest
  libgtest-dev
  # ONNX protobuf classes + checker; the ONNX backend test suite
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  # CPU backend: GEMM (OpenBLAS's OpenMP build, which generated programs link:
  # lib/Codegen/CMakeLists.txt) and multi-process collectives
  libopenblas-dev libopenblas-openmp-dev libopenmpi-dev openmpi-bin
  # runtime: manifest and weights index (JSON), weight checksums (CRC-32)
  nlohmann-json3-dev zlib1g-dev
  # ILP solver for the sharding search
  coinor-libcbc-dev
  # benchmark model generators and test-model scripts (Debian's python3, not pyenv's)
  python3-onnx python3-numpy
  # the digits training tests (scikit-learn ships the digits dataset)
  python3-sklearn
  # the real-export tests export torchvision and nn.Transformer models
  # (test/E2E/Inputs/make_exports.py)
  python3-torch python3-torchvision
  # libFuzzer harnesses (bench/fuzz, test/Fuzz) and the sanitizer build
  # (run-tests.sh --sanitize; its generated programs use clang's OpenMP)
  clang-22 libclang-rt-22-dev libomp-22-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present" >&2
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done" >&2
