#!/usr/bin/env bash
# hp_gemm_panels (the CPU GEMM on weights packed at compile time) against
# OpenBLAS on the same shapes and the core's FMA peak, on 1 thread and on all
# cores (bench/codegen/gemm_panels.cpp; numbers in docs/performance.md, "GEMM
# on packed panels"). Shapes: GPT-2 small at 1 x 128 (QKV, attention output,
# MLP up and down, the tied LM head) and the bundled Llama at 32 x 16 (its Q,
# K, gate and down projections).
#
# Usage: bench/codegen/gemm-panels.sh   (needs g++ and Debian's OpenBLAS, as
# the generated CPU programs do; no HetPar build)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp
c++ -std=c++14 -O2 -march=native -fopenmp -w -I"$root/runtime/include" \
  -I/usr/include/x86_64-linux-gnu/openblas-openmp \
  "$root/bench/codegen/gemm_panels.cpp" -o "$work/gemm_panels" \
  -L"$blas" -Wl,-rpath,"$blas" -lopenblas
shapes=(128 2304 768 50  128 768 768 100  128 3072 768 40  128 768 3072 40
  128 50257 768 3  512 64 64 2000  512 32 64 2000  512 176 64 1000
  512 64 176 1000)
for t in 1 $(nproc); do
  echo "== $t thread(s)"
  OMP_NUM_THREADS=$t "$work/gemm_panels" "${shapes[@]}"
done
