//===- hetpar_gpu_libraries.h - cuBLASLt and cuDNN paths of the GPU kernels ==//
//
// The paths of the GPU kernels (hetpar_device.h) that call NVIDIA's libraries
// beside cuBLAS: GEMMs with a bias epilogue on cuBLASLt, 2-D convolutions and
// pooling on cuDNN, and the context's start and release of those libraries.
//
// Each path makes its library plan (the descriptors, and the algorithm the
// library's heuristic chose) once per distinct call and context, and keeps it
// until the context ends (hp_gpu_plans), as PyTorch keeps its cuDNN
// convolution algorithms per parameter set (aten's BenchmarkCache). Runs
// captured as a CUDA graph never pay for a plan after the capture, but eager
// runs do on every call: one device of several (MPI collectives on the
// host), tracing, HETPAR_CUDA_GRAPHS=0. A call the library declined is kept
// declined, so its caller takes the other path without asking again.
//
// Included by hetpar_device.h after hp_ctx, HP_GEMM_PARAMS and
// hp_gemm_compute; copied into every output folder with it. The plan cache
// (hp_gpu_plans) is host code, also compiled on the CPU where
// HETPAR_GPU_PLANS_ON_HOST is defined (the runtime's unit tests); nothing
// else here is compiled without CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_GPU_LIBRARIES_H
#define HETPAR_GPU_LIBRARIES_H

#if HP_CUDA || defined(HETPAR_GPU_PLANS_ON_HOST)
#include <initializer_list>
#include <map>
#include <memory>
#include <new>
#include <utility>
#include <vector>

/// What one library path made for one call: derived per path.
struct hp_gpu_plan {
  virtual ~hp_gpu_plan() {}
  /// Whether the library takes the call. A declined call keeps a plan too,
  /// so that it is not asked again.
  bool ok = false;
};

/// The library plans of one context (hp_ctx::plans), keyed by the path and
/// the call's parameters. A context runs one step at a time (its stream and
/// workspace are shared the same way), so the map needs no lock.
struct hp_gpu_plans {
  std::map<std::vector<int64_t>, std::unique_ptr<hp_gpu_plan>> plans;

  /// The plan of `key` (its first element names the path, so that the
  /// static_cast is to the type that path stored), made by `make(plan)` the
  /// first time it is asked for.
  template <typename P, typename Make>
  P *get(std::vector<int64_t> key, Make make) {
    auto it = plans.find(key);
    if (it == plans.end()) {
      std::unique_ptr<P> plan(new P());
      make(*plan);
      it = plans.emplace(std::move(key), std::move(plan)).first;
    }
    return static_cast<P *>(it->second.get());
  }
};

/// The paths' first key element.
enum hp_gpu_path : int64_t {
  HP_PATH_CUDNN_POOL = 1,
  HP_PATH_CUDNN_CONV = 2,
  HP_PATH_LT = 3
};

/// Appends to a plan's `key` the first `nsp` extents of each of `dims`,
/// dimension by dimension (the window of a convolution or a pooling).
static inline void hp_key_append(std::vector<int64_t> &key, int nsp,
                                 std::initializer_list<const hp_dims *> dims) {
  for (int d = 0; d < nsp; ++d)
    for (const hp_dims *v : dims)
      key.push_back(v->v[d]);
}
#endif

#if HP_CUDA
/// A library handle destroyed with its holder (`Destroy`, the library's
/// destroy function); null until created.
template <typename H, typename Status, Status (*Destroy)(H)> struct hp_handle {
  H h = NULL;
  hp_handle() = default;
  hp_handle(const hp_handle &) = delete;
  hp_handle &operator=(const hp_handle &) = delete;
  ~hp_handle() {
    if (h)
      Destroy(h);
  }
};
typedef hp_handle<cudnnTensorDescriptor_t, cudnnStatus_t,
                  cudnnDestroyTensorDescriptor>
    hp_cudnn_tensor;
typedef hp_handle<cudnnFilterDescriptor_t, cudnnStatus_t,
                  cudnnDestroyFilterDescriptor>
    hp_cudnn_filter;
typedef hp_handle<cudnnConvolutionDescriptor_t, cudnnStatus_t,
                  cudnnDestroyConvolutionDescriptor>
    hp_cudnn_convolution;
typedef hp_handle<cudnnPoolingDescriptor_t, cudnnStatus_t,
                  cudnnDestroyPoolingDescriptor>
    hp_cudnn_pooling;
typedef hp_handle<cublasLtMatmulDesc_t, cublasStatus_t,
                  cublasLtMatmulDescDestroy>
    hp_lt_desc;
typedef hp_handle<cublasLtMatrixLayout_t, cublasStatus_t,
                  cublasLtMatrixLayoutDestroy>
    hp_lt_layout;
typedef hp_handle<cublasLtMatmulPreference_t, cublasStatus_t,
                  cublasLtMatmulPreferenceDestroy>
    hp_lt_preference;

/// Runs `call`, a library path that returns non-zero when it declines
/// (hp_gemm_lt, hp_conv_cudnn, hp_pool_cudnn), and clears the CUDA
/// error a declined call may leave, so that the path taken instead does not
/// fail the run at hetpar_run's check; an error already pending from an
/// earlier launch stays for that check.
template <typename F> static int hp_try_library(F call) {
  const cudaError_t pending = cudaPeekAtLastError();
  const int rc = call();
  if (rc && pending == cudaSuccess)
    (void)cudaGetLastError();
  return rc;
}

/// The data types of T in the CUDA libraries (cudaDataType for cuBLASLt,
/// cudnnDataType_t for cuDNN), -1 for a T that hp_gemm_lt,
/// hp_conv_cudnn and hp_pool_cudnn leave to the other paths.
template <typename T> struct hp_gpu_types {
  static const int cuda = -1, cudnn = -1;
};
template <> struct hp_gpu_types<float> {
  static const int cuda = CUDA_R_32F, cudnn = CUDNN_DATA_FLOAT;
};
template <> struct hp_gpu_types<hp_half> {
  static const int cuda = CUDA_R_16F, cudnn = CUDNN_DATA_HALF;
};
template <> struct hp_gpu_types<hp_bf16> {
  static const int cuda = CUDA_R_16BF, cudnn = CUDNN_DATA_BFLOAT16;
};

//===----------------------------------------------------------------------===//
// Pooling (cuDNN)
//===----------------------------------------------------------------------===//

/// Sets `t` to the packed NC... tensor of `dims` (n of them).
static bool hp_cudnn_tensor_nd(cudnnTensorDescriptor_t t, cudnnDataType_t dt,
                               int n, const int *dims) {
  int strides[HP_MAX_RANK];
  strides[n - 1] = 1;
  for (int d = n - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dims[d + 1];
  return !cudnnSetTensorNdDescriptor(t, dt, n, dims, strides);
}

/// The cuDNN plan of one pooling: its descriptors.
struct hp_cudnn_pool_plan : hp_gpu_plan {
  hp_cudnn_tensor x, y;
  hp_cudnn_pooling pool;
};

/// Makes `p` for hp_pool_cudnn's call (ok unless cuDNN sizes the output
/// otherwise, or a descriptor fails).
static void hp_cudnn_pool_make(hp_cudnn_pool_plan &p, cudnnDataType_t dt,
                               cudnnPoolingMode_t mode, int nsp, int64_t planes,
                               hp_dims inSp, hp_dims outSp, hp_dims kernel,
                               hp_dims stride, hp_dims pad) {
  const int n = nsp + 2;
  int x[HP_MAX_RANK] = {1, (int)planes}, y[HP_MAX_RANK] = {0},
      window[HP_MAX_RANK], padding[HP_MAX_RANK], strides[HP_MAX_RANK];
  for (int d = 0; d < nsp; ++d) {
    x[d + 2] = (int)inSp.v[d];
    window[d] = (int)kernel.v[d];
    padding[d] = (int)pad.v[d];
    strides[d] = (int)stride.v[d];
  }
  p.ok = !cudnnCreateTensorDescriptor(&p.x.h) &&
         !cudnnCreateTensorDescriptor(&p.y.h) &&
         !cudnnCreatePoolingDescriptor(&p.pool.h) &&
         hp_cudnn_tensor_nd(p.x.h, dt, n, x) &&
         !cudnnSetPoolingNdDescriptor(p.pool.h, mode, CUDNN_PROPAGATE_NAN, nsp,
                                      window, padding, strides) &&
         !cudnnGetPoolingNdForwardOutputDim(p.pool.h, p.x.h, n, y) &&
         y[0] == 1 && y[1] == planes;
  for (int d = 0; p.ok && d < nsp; ++d)
    p.ok = y[d + 2] == outSp.v[d];
  p.ok = p.ok && hp_cudnn_tensor_nd(p.y.h, dt, n, y);
}

/// 2-D or 3-D (`nsp`) max or average pooling of `planes` planes (N * C) by
/// cuDNN's cudnnPoolingForward (NC... as [1, planes, ...]): max propagates
/// NaN, as PyTorch's; average counts the padding or not as
/// count_include_pad says. cuDNN pads both ends alike and has no dilation:
/// pooling with dilation, unequal padding, an output cuDNN sizes otherwise
/// (ceil_mode), or a type other than float32/float16/bfloat16 is declined.
/// Returns 0 when it ran, non-zero when it declined before anything ran.
template <typename T, bool MAX>
static int hp_pool_cudnn(hp_ctx *ctx, int nsp, int64_t planes, hp_dims inSp,
                         hp_dims outSp, hp_dims kernel, hp_dims stride,
                         hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
                         int countIncludePad, const T *in, T *out) {
  const int type = hp_gpu_types<T>::cudnn;
  if (type < 0 || !ctx->dnn || !ctx->plans || nsp < 2 || nsp > 3)
    return 1;
  // cuDNN's dims and strides are int: inputs and outputs below 2^30.
  int64_t inElements = planes, outElements = planes;
  for (int d = 0; d < nsp; ++d) {
    if (dilation.v[d] != 1 || padBegin.v[d] != padEnd.v[d])
      return 1;
    inElements *= inSp.v[d];
    outElements *= outSp.v[d];
  }
  if (inElements >= (1 << 30) || outElements >= (1 << 30))
    return 1;
  const cudnnPoolingMode_t mode =
      MAX ? CUDNN_POOLING_MAX
          : (countIncludePad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
  std::vector<int64_t> key = {HP_PATH_CUDNN_POOL, type, (int64_t)mode, nsp,
                              planes};
  hp_key_append(key, nsp, {&inSp, &outSp, &kernel, &stride, &padBegin});
  hp_cudnn_pool_plan *p = ctx->plans->get<hp_cudnn_pool_plan>(
      std::move(key), [&](hp_cudnn_pool_plan &plan) {
        hp_cudnn_pool_make(plan, (cudnnDataType_t)type, mode, nsp, planes, inSp,
                           outSp, kernel, stride, padBegin);
      });
  if (!p->ok)
    return 1;
  const float one = 1.0f, zero = 0.0f;
  return cudnnPoolingForward(ctx->dnn, p->pool.h, &one, p->x.h, in, &zero,
                             p->y.h, out) != CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Convolution (cuDNN)
//===----------------------------------------------------------------------===//

/// The math type cuDNN's heuristic chooses convolutions of T among (it
/// considers only the one set before the query): tensor cores for 16-bit
/// types; for float32 FMA kernels (no TF32), or cuDNN's default, which takes
/// TF32 tensor cores, when the program allows TF32 (--allow-tf32, as
/// PyTorch's torch.backends.cudnn.allow_tf32).
template <typename T> static cudnnMathType_t hp_cudnn_math() {
  if (!std::is_same<T, float>::value)
    return CUDNN_TENSOR_OP_MATH;
#ifdef HP_ALLOW_TF32
  return CUDNN_DEFAULT_MATH;
#else
  return CUDNN_FMA_MATH;
#endif
}

/// Whether cuDNN may run an algorithm of math type `math` on T: float32
/// only on FMA kernels (no TF32) unless the program allows TF32.
template <typename T> static bool hp_cudnn_math_ok(cudnnMathType_t math) {
#ifdef HP_ALLOW_TF32
  (void)math;
  return true;
#else
  return !std::is_same<T, float>::value || math == CUDNN_FMA_MATH;
#endif
}

/// The cuDNN plan of one convolution: its descriptors (the convolution's
/// math type set to the algorithm's) and the algorithm.
struct hp_cudnn_conv_plan : hp_gpu_plan {
  hp_cudnn_tensor x, y;
  hp_cudnn_filter w;
  hp_cudnn_convolution conv;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
};

/// The descriptors of `s` in `p` (false when cuDNN sizes the output
/// otherwise than `s`, or a descriptor fails).
template <typename T>
static bool hp_cudnn_conv_describe(hp_cudnn_conv_plan &p, const hp_conv_nd &s,
                                   cudnnDataType_t dt) {
  const int n = s.nsp + 2;
  int x[HP_MAX_RANK] = {(int)s.N, (int)(s.G * s.Cg)},
      w[HP_MAX_RANK] = {(int)(s.G * s.Mg), (int)s.Cg}, y[HP_MAX_RANK] = {0},
      pad[HP_MAX_RANK], stride[HP_MAX_RANK], dil[HP_MAX_RANK];
  for (int d = 0; d < s.nsp; ++d) {
    x[d + 2] = (int)s.in.v[d];
    w[d + 2] = (int)s.k.v[d];
    pad[d] = (int)s.pad.v[d];
    stride[d] = (int)s.stride.v[d];
    dil[d] = (int)s.dilation.v[d];
  }
  bool ok =
      !cudnnCreateTensorDescriptor(&p.x.h) &&
      !cudnnCreateTensorDescriptor(&p.y.h) &&
      !cudnnCreateFilterDescriptor(&p.w.h) &&
      !cudnnCreateConvolutionDescriptor(&p.conv.h) &&
      hp_cudnn_tensor_nd(p.x.h, dt, n, x) &&
      !cudnnSetFilterNdDescriptor(p.w.h, dt, CUDNN_TENSOR_NCHW, n, w) &&
      !cudnnSetConvolutionNdDescriptor(p.conv.h, s.nsp, pad, stride, dil,
                                       CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT) &&
      !cudnnSetConvolutionGroupCount(p.conv.h, (int)s.G) &&
      !cudnnSetConvolutionMathType(p.conv.h, hp_cudnn_math<T>()) &&
      !cudnnGetConvolutionNdForwardOutputDim(p.conv.h, p.x.h, p.w.h, n, y) &&
      y[0] == s.N && y[1] == s.G * s.Mg;
  for (int d = 0; ok && d < s.nsp; ++d)
    ok = y[d + 2] == s.out.v[d];
  return ok && hp_cudnn_tensor_nd(p.y.h, dt, n, y);
}

/// Makes `p` for `s`: the first algorithm of cuDNN's heuristic
/// (cudnnGetConvolutionForwardAlgorithm_v7) that succeeds, fits the
/// workspace and keeps float32 exact (hp_cudnn_math_ok).
template <typename T>
static void hp_cudnn_conv_make(hp_ctx *ctx, hp_cudnn_conv_plan &p,
                               const hp_conv_nd &s, cudnnDataType_t dt) {
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  if (!hp_cudnn_conv_describe<T>(p, s, dt) ||
      cudnnGetConvolutionForwardAlgorithm_v7(ctx->dnn, p.x.h, p.w.h, p.conv.h,
                                             p.y.h, 8, &found, perf))
    return;
  for (int i = 0; i < found; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS &&
        perf[i].memory <= ctx->workspace_bytes &&
        hp_cudnn_math_ok<T>(perf[i].mathType) &&
        !cudnnSetConvolutionMathType(p.conv.h, perf[i].mathType)) {
      p.algo = perf[i].algo;
      p.ok = true;
      return;
    }
}

/// y = conv(x, w) for a 2-D or 3-D convolution `s` (NC..., groups, no
/// epilogue) by cuDNN's forward convolution with the algorithm of its plan
/// (hp_cudnn_conv_make); float32 accumulation for 16-bit storage. cuDNN
/// pads both ends alike: a convolution whose output cuDNN would size
/// otherwise than `s` (a larger end padding) is declined. Returns 0 when it
/// ran, non-zero when it declined before anything ran (the caller takes
/// im2col and cuBLAS).
template <typename T>
static int hp_conv_cudnn(hp_ctx *ctx, const hp_conv_nd &s, const T *x,
                         const T *w, T *y) {
  const int type = hp_gpu_types<T>::cudnn;
  const int64_t big = 1 << 30;
  int64_t inPlane = 1, outPlane = 1;
  for (int d = 0; d < s.nsp; ++d) {
    inPlane *= s.in.v[d];
    outPlane *= s.out.v[d];
  }
  if (type < 0 || !ctx->dnn || !ctx->plans || s.nsp < 2 || s.nsp > 3 ||
      s.N * s.G * s.Cg * inPlane >= big || s.N * s.G * s.Mg * outPlane >= big)
    return 1;
  std::vector<int64_t> key = {
      HP_PATH_CUDNN_CONV, type, s.N, s.G, s.Cg, s.Mg, s.nsp};
  hp_key_append(key, s.nsp,
                {&s.in, &s.out, &s.k, &s.stride, &s.pad, &s.dilation});
  hp_cudnn_conv_plan *p = ctx->plans->get<hp_cudnn_conv_plan>(
      std::move(key), [&](hp_cudnn_conv_plan &plan) {
        hp_cudnn_conv_make<T>(ctx, plan, s, (cudnnDataType_t)type);
      });
  if (!p->ok)
    return 1;
  const float one = 1.0f, zero = 0.0f;
  return cudnnConvolutionForward(ctx->dnn, &one, p->x.h, x, p->w.h, w,
                                 p->conv.h, p->algo, ctx->workspace,
                                 ctx->workspace_bytes, &zero, p->y.h,
                                 y) != CUDNN_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// GEMM with a bias and activation epilogue (cuBLASLt)
//===----------------------------------------------------------------------===//

/// The cuBLASLt plan of one GEMM with an epilogue: its descriptors (the
/// bias pointer set per call) and the algorithm.
struct hp_lt_plan : hp_gpu_plan {
  hp_lt_desc desc;
  hp_lt_layout a, b, c;
  hp_lt_preference pref;
  cublasLtMatmulAlgo_t algo;
};

/// The largest power of two up to 256 that `p` is aligned to: the heuristic
/// assumes 256-byte aligned matrices unless told, and an arena or weights
/// offset aligned less would make the chosen algorithm fail.
static inline uint32_t hp_lt_alignment(const void *p) {
  uint32_t align = 256;
  while (align > 1 && (uintptr_t)p % align)
    align >>= 1;
  return align;
}

/// cuBLASLt's epilogue for a bias (or none) and an activation (hp_lt_act).
static inline cublasLtEpilogue_t hp_lt_epilogue(bool hasBias, int act) {
  if (act == HP_LT_ACT_RELU)
    return hasBias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  if (act == HP_LT_ACT_GELU_TANH)
    return hasBias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  return hasBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

/// Makes `p` for hp_gemm_lt's call (`align`: A's, B's and C's
/// hp_lt_alignment): its descriptors, and the heuristic's first algorithm.
static void hp_lt_make(hp_ctx *ctx, hp_lt_plan &p, cudaDataType dt, int ta,
                       int tb, int64_t M, int64_t N, int64_t K, int64_t lda,
                       int64_t ldb, int64_t ldc, const uint32_t align[3],
                       bool hasBias, int act) {
  const cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                          opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = hp_lt_epilogue(hasBias, act);
  // cuBLAS's first operand is B (N x K, or K x N stored when transposed),
  // its second A (K x M, or M x K stored when transposed).
  if (cublasLtMatmulDescCreate(&p.desc.h, hp_gemm_compute(dt), CUDA_R_32F) ||
      cublasLtMatmulDescSetAttribute(p.desc.h, CUBLASLT_MATMUL_DESC_TRANSA,
                                     &opB, sizeof opB) ||
      cublasLtMatmulDescSetAttribute(p.desc.h, CUBLASLT_MATMUL_DESC_TRANSB,
                                     &opA, sizeof opA) ||
      cublasLtMatmulDescSetAttribute(p.desc.h, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                     &epilogue, sizeof epilogue) ||
      cublasLtMatrixLayoutCreate(&p.a.h, dt, tb ? K : N, tb ? N : K, ldb) ||
      cublasLtMatrixLayoutCreate(&p.b.h, dt, ta ? M : K, ta ? K : M, lda) ||
      cublasLtMatrixLayoutCreate(&p.c.h, dt, N, M, ldc) ||
      cublasLtMatmulPreferenceCreate(&p.pref.h) ||
      cublasLtMatmulPreferenceSetAttribute(
          p.pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
          &ctx->workspace_bytes, sizeof ctx->workspace_bytes))
    return;
  const cublasLtMatmulPreferenceAttributes_t alignOf[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  // cuBLAS's A is our B, its B our A, and C is D.
  const uint32_t aligned[] = {align[1], align[0], align[2], align[2]};
  for (int i = 0; i < 4; ++i)
    if (cublasLtMatmulPreferenceSetAttribute(p.pref.h, alignOf[i], &aligned[i],
                                             sizeof aligned[i]))
      return;
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(ctx->lt, p.desc.h, p.a.h, p.b.h, p.c.h,
                                     p.c.h, p.pref.h, 1, &result, &found) ||
      found < 1)
    return;
  p.algo = result.algo;
  p.ok = true;
}

/// C = act(alpha op(A) op(B) + bias), bias a row [N] (or null: none) added
/// to every row of C [M, N] and `act` (hp_lt_act) applied by cuBLASLt's
/// epilogue (CUBLASLT_EPILOGUE_BIAS, _RELU(_BIAS), _GELU(_BIAS)) as the
/// product is stored: one kernel instead of hp_bias_rows, a GEMM that reads
/// C back and a pass of the activation. cuBLASLt's GELU is the tanh
/// approximation, and its ReLU is max(x, 0), which makes NaN 0 (PyTorch's
/// addmm with a fused activation has the same). One GEMM (batch 1) in
/// float32, float16 or bfloat16 with hp_gemm_compute's compute type. As
/// cuBLAS, the column-major product C^T = op(B)^T op(A)^T (C^T is N x M, so
/// the bias is a value per row of C^T, which is what the epilogue
/// broadcasts). The plan is per shape, alignment of A, B and C, and
/// epilogue; a bias must be 16-byte aligned (cuBLASLt has no preference for
/// the bias's alignment, and Marian NMT found its epilogue failing on A100
/// below 16 bytes; a bias sliced at an odd offset of a weight takes the
/// cuBLAS path). Returns 0 when it ran, non-zero when cuBLASLt declined (no
/// algorithm, a status other than success, a bias aligned less) before
/// anything ran: the caller then takes the cuBLAS path.
template <typename T>
static int hp_gemm_lt(HP_GEMM_PARAMS(T), const T *bias, int act) {
  const int type = hp_gpu_types<T>::cuda;
  if (type < 0 || !ctx->lt || !ctx->plans || batch != 1 || M == 0 || N == 0 ||
      K == 0 || (uintptr_t)bias % 16)
    return 1;
  const uint32_t align[3] = {hp_lt_alignment(A), hp_lt_alignment(B),
                             hp_lt_alignment(C)};
  const bool hasBias = bias != nullptr;
  hp_lt_plan *p = ctx->plans->get<hp_lt_plan>(
      {HP_PATH_LT, type, ta, tb, M, N, K, lda, ldb, ldc, align[0], align[1],
       align[2], hasBias, act},
      [&](hp_lt_plan &plan) {
        hp_lt_make(ctx, plan, (cudaDataType)type, ta, tb, M, N, K, lda, ldb,
                   ldc, align, hasBias, act);
      });
  if (!p->ok || (hasBias && cublasLtMatmulDescSetAttribute(
                                p->desc.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                &bias, sizeof bias)))
    return 1;
  const float zero = 0.0f;
  return cublasLtMatmul(ctx->lt, p->desc.h, &alpha, B, p->a.h, A, p->b.h, &zero,
                        C, p->c.h, C, p->c.h, &p->algo, ctx->workspace,
                        ctx->workspace_bytes,
                        ctx->stream) != CUBLAS_STATUS_SUCCESS;
}

//===----------------------------------------------------------------------===//
// The context's libraries
//===----------------------------------------------------------------------===//

/// Starts what the GPU kernels call beside cuBLAS: one workspace of the size
/// the cuBLAS API reference recommends for cublasSetWorkspace (32 MiB on
/// Hopper, 4 MiB on earlier GPUs), given to cuBLAS (so that its calls inside
/// a CUDA graph capture allocate nothing), cuBLASLt and cuDNN on the stream,
/// and the plans' cache. After cublasSetStream, which resets cuBLAS's
/// workspace. A library that cannot start is left null, and its error
/// cleared.
static void hp_gpu_libraries_init(hp_ctx *ctx) {
  ctx->plans = new (std::nothrow) hp_gpu_plans();
  int dev = 0, major = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  const size_t bytes = (size_t)(major >= 9 ? 32 : 4) << 20;
  if (cudaMalloc(&ctx->workspace, bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    ctx->workspace = NULL;
    return;
  }
  ctx->workspace_bytes = bytes;
  cublasSetWorkspace(ctx->blas, ctx->workspace, bytes);
  if (cublasLtCreate(&ctx->lt) != CUBLAS_STATUS_SUCCESS)
    ctx->lt = NULL;
  if (cudnnCreate(&ctx->dnn) != CUDNN_STATUS_SUCCESS)
    ctx->dnn = NULL;
  else if (cudnnSetStream(ctx->dnn, ctx->stream) != CUDNN_STATUS_SUCCESS) {
    cudnnDestroy(ctx->dnn);
    ctx->dnn = NULL;
  }
  (void)cudaGetLastError();
}

/// Releases what hp_gpu_libraries_init started: the plans first (their
/// descriptors are the libraries').
static void hp_gpu_libraries_release(hp_ctx *ctx) {
  delete ctx->plans;
  ctx->plans = NULL;
  if (ctx->dnn)
    cudnnDestroy(ctx->dnn);
  if (ctx->lt)
    cublasLtDestroy(ctx->lt);
  cudaFree(ctx->workspace);
  ctx->dnn = NULL;
  ctx->lt = NULL;
  ctx->workspace = NULL;
}
#endif

#endif // HETPAR_GPU_LIBRARIES_H
