//===- CPUBackend.cpp - hetpar-profile's kernels on the CPU
//----------------===//
//
// GEMMs through OpenBLAS (cblas_sgemm, what the CPU backend runs); the other
// kernels as plain loops, one thread, as the CPU runtime runs them.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

namespace hetpar::profile {

namespace {

/// A medianTime sequence on the host's clock.
template <typename Run> auto sequence(Run run) {
  return [run](int count) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i)
      run();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  };
}

/// Keeps the compiler from dropping a loop whose result is unused.
volatile float sink;

class CPUBackend : public Backend {
public:
  std::string name() const override { return "cpu"; }
  std::string deviceName() const override {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0 &&
          line.find(':') != std::string::npos)
        return line.substr(line.find(':') + 2);
    return "CPU";
  }

  std::optional<double> time(const Kernel &k, std::string &why) override {
    const auto &a = k.args;
    if (k.kind == "gemm") {
      int64_t m = a[0], n = a[1], kk = a[2], batch = a[3];
      if (a[4] != 4) {
        why = "the CPU backend has float32 GEMMs only";
        return std::nullopt;
      }
      std::vector<float> A(batch * m * kk, 0.5f), B(batch * kk * n, 0.25f),
          C(batch * m * n);
      return medianTime(sequence([&] {
                          for (int64_t b = 0; b < batch; ++b)
                            cblas_sgemm(CblasRowMajor, CblasNoTrans,
                                        CblasNoTrans, m, n, kk, 1.0f,
                                        A.data() + b * m * kk, kk,
                                        B.data() + b * kk * n, n, 0.0f,
                                        C.data() + b * m * n, n);
                        }),
                        samples, minSeconds);
    }
    if (k.kind == "elementwise") {
      int64_t n = a[0], inputs = a[2];
      std::vector<std::vector<float>> in;
      for (int64_t i = 0; i < inputs; ++i)
        in.emplace_back(std::max<int64_t>(a[3 + i], 1), 1.5f);
      std::vector<float> out(n);
      // Full-size inputs stream; a smaller one repeats (broadcast), input by
      // input, so that the common cases vectorize.
      return medianTime(sequence([&] {
                          for (size_t j = 0; j < in.size(); ++j) {
                            const float *x = in[j].data();
                            int64_t size = in[j].size();
                            float *y = out.data();
                            if (size == n && j == 0)
                              for (int64_t i = 0; i < n; ++i)
                                y[i] = x[i];
                            else if (size == n)
                              for (int64_t i = 0; i < n; ++i)
                                y[i] += x[i];
                            else if (size == 1)
                              for (int64_t i = 0; i < n; ++i)
                                y[i] = (j == 0 ? 0.0f : y[i]) + x[0];
                            else
                              for (int64_t i = 0; i < n; ++i)
                                y[i] = (j == 0 ? 0.0f : y[i]) + x[i % size];
                          }
                          sink = out[n / 2];
                        }),
                        samples, minSeconds);
    }
    if (k.kind == "reduce" || k.kind == "softmax" || k.kind == "layernorm") {
      int64_t rows = a[0], cols = a[1];
      std::vector<float> in(rows * cols, 0.5f),
          out(k.kind == "reduce" ? rows : rows * cols);
      bool reduce = k.kind == "reduce", softmax = k.kind == "softmax";
      return medianTime(sequence([&] {
                          for (int64_t r = 0; r < rows; ++r) {
                            const float *x = &in[r * cols];
                            if (reduce) {
                              float s = 0;
                              for (int64_t c = 0; c < cols; ++c)
                                s += x[c];
                              out[r] = s;
                            } else if (softmax) {
                              float mx = x[0], s = 0;
                              for (int64_t c = 1; c < cols; ++c)
                                mx = std::max(mx, x[c]);
                              float *y = &out[r * cols];
                              for (int64_t c = 0; c < cols; ++c)
                                s += (y[c] = std::exp(x[c] - mx));
                              for (int64_t c = 0; c < cols; ++c)
                                y[c] /= s;
                            } else {
                              float mean = 0, var = 0;
                              for (int64_t c = 0; c < cols; ++c)
                                mean += x[c];
                              mean /= cols;
                              for (int64_t c = 0; c < cols; ++c)
                                var += (x[c] - mean) * (x[c] - mean);
                              float inv = 1.0f / std::sqrt(var / cols + 1e-5f);
                              float *y = &out[r * cols];
                              for (int64_t c = 0; c < cols; ++c)
                                y[c] = (x[c] - mean) * inv;
                            }
                          }
                          sink = out[out.size() / 2];
                        }),
                        samples, minSeconds);
    }
    if (k.kind == "copy") {
      int64_t half = std::max<int64_t>(a[0] / 2, 1);
      std::vector<char> src(half, 1), dst(half);
      return medianTime(sequence([&] {
                          std::memcpy(dst.data(), src.data(), half);
                          sink = dst[half / 2];
                        }),
                        samples, minSeconds);
    }
    why = "unknown kernel kind '" + k.kind + "'";
    return std::nullopt;
  }
};

} // namespace

std::unique_ptr<Backend> createCPUBackend() {
  return std::make_unique<CPUBackend>();
}

} // namespace hetpar::profile
