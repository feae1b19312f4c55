//===- CUDABackend.cu - hetpar-profile's kernels on an NVIDIA GPU
//----------===//
//
// GEMMs through cuBLAS (float32: cublasSgemm without TF32; float16:
// cublasGemmEx with float32 accumulation), the other kernels as simple CUDA
// kernels of the kind the code generator emits (one thread per element; one
// block per row for row-wise kernels). Times from CUDA events around sequences
// of back-to-back launches.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <functional>

namespace hetpar::profile {

namespace {

/// Input `k` of an elementwise kernel: streamed when full-size, a scalar when
/// of one element, else repeated (broadcast along the leading dimensions). The
/// index arithmetic is kept out of the streaming cases, as generated code does.
__device__ __forceinline__ float load(const float *x, int64_t size, int64_t n,
                                      int64_t i) {
  if (size == n)
    return x[i];
  if (size == 1)
    return x[0];
  return x[i % size];
}

__global__ void elementwiseKernel(float *out, int64_t n, const float *a,
                                  int64_t na, const float *b, int64_t nb,
                                  const float *c, int64_t nc) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n)
    return;
  float v = load(a, na, n, i);
  if (b)
    v += load(b, nb, n, i);
  if (c)
    v += load(c, nc, n, i);
  out[i] = v;
}

/// One block per row; `mode` 0 reduce (sum), 1 softmax, 2 layernorm.
__global__ void rowKernel(float *out, const float *in, int64_t cols, int mode) {
  __shared__ float partial[256];
  const float *x = in + blockIdx.x * cols;
  auto blockReduce = [&](float v, bool isMax) {
    partial[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s)
        partial[threadIdx.x] =
            isMax ? fmaxf(partial[threadIdx.x], partial[threadIdx.x + s])
                  : partial[threadIdx.x] + partial[threadIdx.x + s];
      __syncthreads();
    }
    float r = partial[0];
    __syncthreads();
    return r;
  };
  if (mode == 0) {
    float s = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      s += x[c];
    s = blockReduce(s, false);
    if (threadIdx.x == 0)
      out[blockIdx.x] = s;
    return;
  }
  float *y = out + blockIdx.x * cols;
  if (mode == 1) {
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      m = fmaxf(m, x[c]);
    m = blockReduce(m, true);
    float s = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      s += __expf(x[c] - m);
    s = blockReduce(s, false);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      y[c] = __expf(x[c] - m) / s;
    return;
  }
  float s = 0, sq = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    s += x[c];
    sq += x[c] * x[c];
  }
  float mean = blockReduce(s, false) / cols;
  float var = blockReduce(sq, false) / cols - mean * mean;
  float inv = rsqrtf(var + 1e-5f);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    y[c] = (x[c] - mean) * inv;
}

#define CHECK(call, what)                                                      \
  if (cudaError_t e = (call); e != cudaSuccess) {                              \
    why = std::string(what) + ": " + cudaGetErrorString(e);                    \
    return std::nullopt;                                                       \
  }

class CUDABackend : public Backend {
public:
  CUDABackend(int device) : device(device) {
    cudaSetDevice(device);
    cublasCreate(&blas);
    cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH); // no TF32 for float32 GEMMs
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~CUDABackend() override {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cublasDestroy(blas);
  }
  std::string name() const override { return "cuda"; }
  std::string deviceName() const override {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, device);
    return prop.name;
  }

  std::optional<double> time(const Kernel &k, std::string &why) override {
    const auto &a = k.args;
    // Buffers: the largest any operand needs, allocated per kernel.
    auto alloc = [&](int64_t bytes, void **p) {
      return cudaMalloc(p, std::max<int64_t>(bytes, 4));
    };
    std::vector<void *> buffers;
    bool outOfMemory = false;
    auto release = [&] {
      for (void *p : buffers)
        cudaFree(p);
    };
    auto buffer = [&](int64_t bytes) -> void * {
      void *p = nullptr;
      if (alloc(bytes, &p) != cudaSuccess) {
        outOfMemory = true;
        return nullptr;
      }
      cudaMemset(p, 0, std::max<int64_t>(bytes, 4));
      buffers.push_back(p);
      return p;
    };
    std::function<void()> run;
    if (k.kind == "gemm") {
      int64_t m = a[0], n = a[1], kk = a[2], batch = a[3], eb = a[4];
      if (eb != 4 && eb != 2) {
        why = "GEMMs of float32 and float16 only";
        return std::nullopt;
      }
      void *A = buffer(batch * m * kk * eb), *B = buffer(batch * kk * n * eb),
           *C = buffer(batch * m * n * eb);
      static const float one = 1, zero = 0;
      cudaDataType t = eb == 4 ? CUDA_R_32F : CUDA_R_16F;
      // Row-major C[m,n] = A[m,k] B[k,n] is column-major C^T = B^T A^T.
      cublasHandle_t handle = blas;
      run = [=] {
        cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, kk,
                                   &one, B, t, n, kk * n, A, t, kk, m * kk,
                                   &zero, C, t, n, m * n, batch,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      };
    } else if (k.kind == "elementwise") {
      int64_t n = a[0], inputs = std::min<int64_t>(a[2], 3);
      float *out = static_cast<float *>(buffer(n * 4));
      const float *in[3] = {nullptr, nullptr, nullptr};
      int64_t sizes[3] = {1, 1, 1};
      for (int64_t i = 0; i < inputs; ++i) {
        sizes[i] = std::max<int64_t>(a[3 + i], 1);
        in[i] = static_cast<float *>(buffer(sizes[i] * 4));
      }
      int64_t blocks = (n + 255) / 256;
      run = [=] {
        elementwiseKernel<<<blocks, 256>>>(out, n, in[0], sizes[0], in[1],
                                           sizes[1], in[2], sizes[2]);
      };
    } else if (k.kind == "reduce" || k.kind == "softmax" ||
               k.kind == "layernorm") {
      int64_t rows = a[0], cols = a[1];
      int mode = k.kind == "reduce" ? 0 : k.kind == "softmax" ? 1 : 2;
      float *in = static_cast<float *>(buffer(rows * cols * 4));
      float *out =
          static_cast<float *>(buffer((mode == 0 ? rows : rows * cols) * 4));
      int threads = cols >= 256 ? 256 : cols >= 64 ? 64 : 32;
      run = [=] { rowKernel<<<rows, threads>>>(out, in, cols, mode); };
    } else if (k.kind == "copy") {
      int64_t half = std::max<int64_t>(a[0] / 2, 1);
      void *src = buffer(half), *dst = buffer(half);
      run = [=] { cudaMemcpyAsync(dst, src, half, cudaMemcpyDeviceToDevice); };
    } else {
      why = "unknown kernel kind '" + k.kind + "'";
      return std::nullopt;
    }
    if (outOfMemory) {
      release();
      cudaGetLastError(); // clear the allocation error
      why = "out of device memory";
      return std::nullopt;
    }
    // Sequences of back-to-back launches timed by CUDA events (the GPU's
    // timeline).
    auto sequence = [&](int count) {
      cudaEventRecord(start);
      for (int i = 0; i < count; ++i)
        run();
      cudaEventRecord(stop);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      return ms / 1e3;
    };
    double t = medianTime(sequence, samples, minSeconds);
    release();
    CHECK(cudaGetLastError(), "kernel launch");
    return t;
  }

private:
  int device;
  cublasHandle_t blas;
  cudaEvent_t start, stop;
};

} // namespace

std::unique_ptr<Backend> createCUDABackend(int device, std::string &why) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count);
      e != cudaSuccess || count == 0) {
    why = e != cudaSuccess
              ? std::string("no usable CUDA device: ") + cudaGetErrorString(e)
              : "no CUDA device";
    return nullptr;
  }
  if (device < 0 || device >= count) {
    why = "no CUDA device " + std::to_string(device) + " (there are " +
          std::to_string(count) + ")";
    return nullptr;
  }
  return std::make_unique<CUDABackend>(device);
}

} // namespace hetpar::profile
