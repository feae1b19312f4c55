//===- Backend.h - where hetpar-profile runs its kernels ----------*- C++
//-*-===//
//
// hetpar-profile builds without LLVM or MLIR (only a C++17 compiler, and the
// CUDA toolkit for the GPU backend), so that it runs on GPU machines that have
// nothing else. A backend runs one kind of kernel at given sizes and reports
// its time: seconds per kernel in a sequence of back-to-back kernels (launch
// gaps included), the median of several such sequences.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PROFILE_BACKEND_H
#define HETPAR_PROFILE_BACKEND_H

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetpar::profile {

/// One kernel: a line of a kernel list (docs/cost-model.md, "Kernel lists").
///   gemm M N K BATCH ELEMENT_BYTES
///   elementwise N ELEMENT_BYTES INPUTS N_1 .. N_INPUTS
///   reduce ROWS COLS ELEMENT_BYTES
///   softmax ROWS COLS ELEMENT_BYTES
///   layernorm ROWS COLS ELEMENT_BYTES
///   copy BYTES
struct Kernel {
  std::string kind;
  std::vector<int64_t> args;
  /// Bytes moved as the cost model counts them (inputs + outputs).
  double bytes() const;
  /// FLOP as the cost model counts them (GEMMs only; 0 otherwise).
  double flops() const;
  std::string text() const;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu" or "cuda".
  virtual std::string name() const = 0;
  /// What the hardware calls itself ("NVIDIA H200", the CPU's model name).
  virtual std::string deviceName() const = 0;
  /// Seconds per kernel, or std::nullopt with `why` set when this backend has
  /// no such kernel (a float16 GEMM on the CPU) or it failed.
  virtual std::optional<double> time(const Kernel &kernel,
                                     std::string &why) = 0;

  /// Sequences timed per kernel, and the least length of one (seconds).
  int samples = 5;
  double minSeconds = 0.01;
};

/// Seconds per run: the median of `samples` sequences of back-to-back runs,
/// each sequence at least `minSeconds` long. `sequence(count)` runs the kernel
/// `count` times back to back and returns the seconds that took (by the host's
/// clock on the CPU, by CUDA events on the GPU); one call warms up first.
template <typename Sequence>
double medianTime(Sequence sequence, int samples, double minSeconds) {
  constexpr int kMaxCount = 1 << 20;
  sequence(1); // warm-up
  int count = 1;
  for (;;) { // find a sequence length that lasts minSeconds
    double t = sequence(count);
    if (t >= minSeconds || count >= kMaxCount)
      break;
    int grow = t > 0 ? std::max(2, static_cast<int>(minSeconds / t) + 1) : 16;
    count =
        static_cast<int>(std::min<int64_t>(kMaxCount, int64_t(count) * grow));
  }
  std::vector<double> times;
  for (int s = 0; s < samples; ++s)
    times.push_back(sequence(count) / count);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// Null when built without OpenBLAS.
std::unique_ptr<Backend> createCPUBackend();
/// Null with `why` set when built without CUDA or no GPU is usable.
std::unique_ptr<Backend> createCUDABackend(int device, std::string &why);

} // namespace hetpar::profile

#endif // HETPAR_PROFILE_BACKEND_H
