//===- gemm_panels.cpp - hp_gemm_panels against OpenBLAS and the FMA peak -===//
//
// Driver of bench/codegen/gemm-panels.sh: times the CPU device library's
// GEMM on packed panels (hetpar_device.h, hp_gemm_panels) and OpenBLAS's
// cblas_sgemm on the same float32 shapes, C[M, N] = A[M, K] B[K, N], and the
// core's vector FMA peak (24 independent AVX-512 FMA chains), on the threads
// OpenMP is given. Prints one line per shape: milliseconds and GFLOP/s
// (2 M N K per product) of both, and hp_gemm_panels' share of the peak times
// the thread count.
//
// Usage: gemm_panels M N K REPEAT [M N K REPEAT ...]
//
//===----------------------------------------------------------------------===//
#include "hetpar/device/hetpar_device.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// GFLOP/s of one core's vector FMAs: 24 independent chains of 16-lane
/// multiply-adds, enough to hide the FMA latency on every x86 core.
double fmaPeak() {
  typedef float v16 __attribute__((vector_size(64)));
  v16 acc[24];
  for (int i = 0; i < 24; ++i)
    acc[i] = v16{} + 0.001f * (float)i;
  v16 b = v16{} + 0.999f, c = v16{} + 0.001f;
  const long steps = 20000000;
  auto t0 = std::chrono::steady_clock::now();
  for (long s = 0; s < steps; ++s) {
#pragma GCC unroll 24
    for (int j = 0; j < 24; ++j)
      acc[j] = acc[j] * b + c;
    asm volatile("" : "+v"(b));
  }
  double t = seconds(t0);
  float sink = 0;
  for (int i = 0; i < 24; ++i)
    sink += acc[i][0];
  asm volatile("" : : "r"(sink));
  return steps * 24.0 * 16 * 2 / t / 1e9;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 5 || (argc - 1) % 4 != 0) {
    std::fprintf(stderr,
                 "usage: gemm_panels M N K REPEAT [M N K REPEAT ...]\n");
    return 2;
  }
  const int threads = omp_get_max_threads();
  const double peak = fmaPeak();
  std::printf("vector FMA peak: %.1f GFLOP/s per core, %d threads\n", peak,
              threads);
  std::printf("%6s %6s %6s %12s %10s %12s %10s %10s\n", "M", "N", "K",
              "panels-ms", "GFLOP/s", "openblas-ms", "GFLOP/s", "of peak");
  for (int a = 1; a + 3 < argc; a += 4) {
    const int64_t M = std::atol(argv[a]), N = std::atol(argv[a + 1]),
                  K = std::atol(argv[a + 2]);
    const int reps = std::atoi(argv[a + 3]);
    const int64_t panels = (N + HP_GEMM_PANEL - 1) / HP_GEMM_PANEL;
    std::vector<float> A(M * K), B(K * N), Bp(panels * K * HP_GEMM_PANEL, 0),
        C(M * N);
    for (size_t i = 0; i < A.size(); ++i)
      A[i] = (float)(i % 7) * 0.01f;
    for (size_t i = 0; i < B.size(); ++i)
      B[i] = (float)(i % 5) * 0.01f;
    for (int64_t k = 0; k < K; ++k) // the packing hetpar-compile writes
      for (int64_t n = 0; n < N; ++n)
        Bp[(n / HP_GEMM_PANEL * K + k) * HP_GEMM_PANEL + n % HP_GEMM_PANEL] =
            B[k * N + n];
    const double flops = 2.0 * M * N * K;
    auto run = [&](int which) {
      if (which == 0)
        hp_gemm_panels(M, N, K, 1.0f, A.data(), K, Bp.data(), 0.0f, nullptr,
                       C.data(), N);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N,
                    (int)K, 1.0f, A.data(), (int)K, B.data(), (int)N, 0.0f,
                    C.data(), (int)N);
    };
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < 3; ++round) // alternating, best of 3
      for (int which = 0; which < 2; ++which) {
        run(which);
        auto t0 = std::chrono::steady_clock::now();
        for (int r = 0; r < reps; ++r)
          run(which);
        double t = seconds(t0) / reps;
        best[which] = t < best[which] ? t : best[which];
      }
    std::printf("%6ld %6ld %6ld %12.3f %10.1f %12.3f %10.1f %9.0f%%\n", (long)M,
                (long)N, (long)K, best[0] * 1e3, flops / best[0] / 1e9,
                best[1] * 1e3, flops / best[1] / 1e9,
                100.0 * flops / best[0] / 1e9 / (peak * threads));
  }
  return 0;
}
