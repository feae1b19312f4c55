//===- hetpar_device.h - single-source device library for generated code ===//
//
// Included by every generated device_<i>.cu. The same file compiles with nvcc
// (CUDA backend: kernels launch on a stream, GEMM goes to cuBLAS) and with the
// host C++ compiler (CPU backend: kernels are loops, parallel with OpenMP where
// the work is large enough, GEMM goes to OpenBLAS). Generated code only uses
// the macros and templates below, so backend differences live here.
//
// Tensors are dense row-major. Element counts, strides and offsets are in
// elements (int64), never bytes. float16 and bfloat16 are stored as 16-bit
// values and computed in float32 (accumulation in float32 too).
//
// hetpar_device.h is copied into every output folder (OUT/include) so that a
// generated source rebuilds without the HetPar source tree:
//   c++ -std=c++14 -O2 -fopenmp -fPIC -shared -x c++ -IOUT/include device_0.cu
//       -lopenblas
//   nvcc -std=c++17 -O2 -shared -Xcompiler -fPIC -IOUT/include device_0.cu
//       -lcublas -lcublasLt -lcudnn
// The host (CPU) build needs only C++14, and must stay so: C++17's <cmath>
// would add 0.17 s to the build of every program.
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_H
#define HETPAR_DEVICE_H

#include "hetpar/device/hetpar_packed.h"
#include "hetpar/runtime/ProgramABI.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#if defined(__CUDACC__)
#define HP_CUDA 1
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <mma.h>
#include <type_traits>
#define HP_HD __host__ __device__ __forceinline__
#define HP_DEV __device__ __forceinline__
#else
#define HP_CUDA 0
#include <cblas.h>
#include <limits>
#include <type_traits>
#ifdef _OPENMP
// OpenMP's own declaration (not omp.h, which Clang's packages may lack).
extern "C" int omp_get_max_threads(void);
#endif
#define HP_HD inline
#define HP_DEV inline
#endif

#define HP_MAX_RANK 8

//===----------------------------------------------------------------------===//
// 16-bit floating-point storage types
//===----------------------------------------------------------------------===//

HP_HD uint32_t hp_float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
HP_HD float hp_bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/// IEEE 754 binary16 from float, round to nearest even (overflow gives inf).
HP_HD uint16_t hp_f2h(float f) {
  uint32_t x = hp_float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) // inf or nan
    return sign | (absx > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (absx >= 0x477ff000u) // rounds to >= 65520: overflow
    return sign | 0x7c00u;
  if (absx < 0x38800000u) { // subnormal half (or zero)
    float a = hp_bits_float(absx);
    // Scale so that the subnormal's units are integers, round to even.
    float scaled = a * 16777216.0f; // 2^24
    uint32_t m = (uint32_t)scaled;
    float rem = scaled - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1u)))
      ++m;
    return sign | m;
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h; // may carry into the exponent, which is correct rounding
  return sign | h;
}

/// float from IEEE 754 binary16 (exact).
HP_HD float hp_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float f = (float)mant * 5.9604644775390625e-08f; // 2^-24
    return sign ? -f : f;
  }
  if (exp == 31)
    return hp_bits_float(sign | 0x7f800000u | (mant << 13));
  return hp_bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/// bfloat16 from float, round to nearest even; NaN stays NaN.
HP_HD uint16_t hp_f2bf(float f) {
  uint32_t x = hp_float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}
HP_HD float hp_bf2f(uint16_t b) { return hp_bits_float((uint32_t)b << 16); }

struct hp_half {
  uint16_t bits;
  hp_half() = default;
  HP_HD hp_half(float f) : bits(hp_f2h(f)) {}
  HP_HD operator float() const { return hp_h2f(bits); }
};
struct hp_bf16 {
  uint16_t bits;
  hp_bf16() = default;
  HP_HD hp_bf16(float f) : bits(hp_f2bf(f)) {}
  HP_HD operator float() const { return hp_bf2f(bits); }
};

//===----------------------------------------------------------------------===//
// Scalar functions used by generated kernels (float and double overloads)
//===----------------------------------------------------------------------===//

#define HP_MATH1(name, ffn, dfn)                                               \
  HP_HD float name(float x) { return ffn(x); }                                 \
  HP_HD double name(double x) { return dfn(x); }
HP_MATH1(hp_log, logf, log)
HP_MATH1(hp_sqrt, sqrtf, sqrt)
HP_MATH1(hp_sin, sinf, sin)
HP_MATH1(hp_cos, cosf, cos)
HP_MATH1(hp_tan, tanf, tan)
HP_MATH1(hp_asin, asinf, asin)
HP_MATH1(hp_acos, acosf, acos)
HP_MATH1(hp_atan, atanf, atan)
HP_MATH1(hp_sinh, sinhf, sinh)
HP_MATH1(hp_cosh, coshf, cosh)
HP_MATH1(hp_asinh, asinhf, asinh)
HP_MATH1(hp_acosh, acoshf, acosh)
HP_MATH1(hp_atanh, atanhf, atanh)
HP_MATH1(hp_floor, floorf, floor)
HP_MATH1(hp_ceil, ceilf, ceil)
HP_MATH1(hp_rint, rintf, rint) // round half to even in the default mode
HP_MATH1(hp_fabs, fabsf, fabs)
HP_MATH1(hp_log1p, log1pf, log1p)
#undef HP_MATH1
/// tanh. On the CPU, float: a rational approximation, odd degree 13 over
/// even degree 6, on x clamped to +-7.9053111 (where float tanh is +-1), and
/// x itself below 4e-4; no branches, so loops over it vectorize. Maximum
/// error 3.4e-7 (5.7 ulp) against double tanh over [-12, 12], checked on 2.4
/// million points. The coefficients are Eigen's (generic_fast_tanh_float in
/// Eigen/src/Core/MathFunctionsImpl.h, also TensorFlow's). glibc's tanhf,
/// through expm1f, was a third of GPT-2 tiny's time. On the GPU: tanhf.
HP_HD float hp_tanh(float x) {
#ifdef __CUDA_ARCH__
  return tanhf(x);
#else
  const float clamp = 7.90531110763549805f;
  float c = x < -clamp ? -clamp : (x > clamp ? clamp : x);
  float x2 = c * c;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * c;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return fabsf(x) < 4e-4f ? x : p / q;
#endif
}
HP_HD double hp_tanh(double x) { return tanh(x); }
/// x * 2^n for an integer n in [-151, 128], as two products by normal
/// powers of two built from their exponent bits (one factor alone could
/// not reach 2^128 or the subnormals).
HP_HD float hp_ldexp(float x, int32_t n) {
  int32_t a = n >> 1, b = n - a;
  uint32_t ua = (uint32_t)(a + 127) << 23, ub = (uint32_t)(b + 127) << 23;
  float fa, fb;
  memcpy(&fa, &ua, sizeof fa);
  memcpy(&fb, &ub, sizeof fb);
  return x * fa * fb;
}
/// exp. On the CPU, float: x = n ln2 + r with |r| <= ln2/2 (ln2 split in a
/// high and a low part, Cody and Waite), e^r by a degree-7 polynomial
/// (Cephes expf's minimax coefficients, S. Moshier; also Eigen's pexp), times
/// 2^n by exponent bits. Subnormal results are kept; above ln(FLT_MAX) the
/// result is +inf, and NaN stays NaN. No branches and no library call, so
/// loops over it vectorize (glibc's expf is a call per element). Maximum
/// error 0.99 ulp against double exp, on 6.3 million points of [-103.9,
/// 88.72] (DeviceKernelsTest's Math tests check 1 ulp). On the GPU: expf.
HP_HD float hp_exp(float x) {
#ifdef __CUDA_ARCH__
  return expf(x);
#else
  const float hi = 88.7228394f, lo = -104.0f; // ln(FLT_MAX), below 2^-150
  float c = x < hi ? x : hi;                  // also NaN -> hi
  c = c > lo ? c : lo;
  // Round c / ln2 to the nearest integer: adding 1.5 * 2^23 drops the
  // fraction (|c / ln2| < 2^22).
  const float shifter = 12582912.0f;
  float n = (c * 1.44269504088896341f + shifter) - shifter;
  float r = c - n * 0.693359375f; // ln2's high part: exact in 8 bits
  r = r - n * -2.12194440e-4f;    // and its low part
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  float y = hp_ldexp(p, (int32_t)n);
  y = x > hi ? HUGE_VALF : y;
  return x != x ? x : y;
#endif
}
HP_HD double hp_exp(double x) { return exp(x); }
/// erf. On the CPU, float: x * P(x^2) / Q(x^2) on x clamped to [-4, 4]
/// (where float erf is +-1), odd degree 13 over even degree 8 (Eigen's
/// generic_fast_erf_float, also XLA's ErfImpl32); branch-free, so loops
/// over it vectorize (GELU calls it per element). Maximum error 4.5e-7
/// against double erf, on 2.4 million points of [-12, 12] (checked by
/// DeviceKernelsTest's Math tests). On the GPU: erff.
HP_HD float hp_erf(float x) {
#ifdef __CUDA_ARCH__
  return erff(x);
#else
  float c = x < 4.0f ? x : 4.0f;
  c = c > -4.0f ? c : -4.0f;
  float x2 = c * c;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * c;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  float y = p / q;
  return x != x ? x : y;
#endif
}
HP_HD double hp_erf(double x) { return erf(x); }
template <typename T> HP_HD T hp_square(T x) { return x * x; }
template <typename T> HP_HD T hp_cube(T x) { return x * x * x; }
HP_HD float hp_pow(float a, float b) { return powf(a, b); }
HP_HD double hp_pow(double a, double b) { return pow(a, b); }
HP_HD float hp_fmod(float a, float b) { return fmodf(a, b); }
HP_HD double hp_fmod(double a, double b) { return fmod(a, b); }
HP_HD bool hp_isnan(float x) { return x != x; }
HP_HD bool hp_isnan(double x) { return x != x; }
template <typename T> HP_HD bool hp_isnan(T) { return false; }
template <typename T> HP_HD T hp_abs(T x) { return x < T(0) ? T(0) - x : x; }
HP_HD float hp_abs(float x) { return fabsf(x); }
HP_HD double hp_abs(double x) { return fabs(x); }
/// Integer power by squaring (ONNX Pow on integers; negative exponents give 0
/// except for bases 1 and -1). A power past the type's range wraps, as
/// NumPy's does: the products are taken modulo 2^64 in unsigned arithmetic
/// (a signed product that overflows is undefined in C++), and their low bits
/// are the type's.
template <typename T> HP_HD T hp_ipow(T base, int64_t e) {
  if (e < 0)
    return base == T(1) ? T(1)
                        : (base == T(-1) ? ((e & 1) ? T(-1) : T(1)) : T(0));
  unsigned long long r = 1, b = static_cast<unsigned long long>(base);
  while (e) {
    if (e & 1)
      r = static_cast<unsigned long long>(static_cast<T>(r * b));
    b = static_cast<unsigned long long>(static_cast<T>(b * b));
    e >>= 1;
  }
  return static_cast<T>(r);
}
/// Whether integer division a / b or a % b is undefined in C++: b is 0, or
/// a signed type's lowest value is divided by -1 (its quotient does not
/// fit; x86 raises SIGFPE for both).
template <typename T> HP_HD bool hp_idiv_undefined(T a, T b) {
  // The lowest value, 1 << (bits - 1) in two's complement (numeric_limits is
  // host-only in CUDA without --expt-relaxed-constexpr).
  using U = typename std::make_unsigned<T>::type;
  const T lowest = (T)(U(1) << (sizeof(T) * 8 - 1));
  return b == T(0) || (std::is_signed<T>::value && b == T(-1) && a == lowest);
}
/// ONNX Div on integers: truncated toward zero, as C. ONNX leaves division
/// by zero undefined; HetPar gives 0, as NumPy does, and the lowest value
/// divided by -1 wraps to itself (NumPy's result), so that no value that
/// arrives at run time kills the process.
template <typename T> HP_HD T hp_idiv(T a, T b) {
  if (hp_idiv_undefined(a, b))
    return b == T(0) ? T(0) : a;
  return T(a / b);
}
/// ONNX Mod with fmod=1 on integers: C's remainder, 0 for a divisor of 0
/// (and for the lowest value by -1, whose remainder is 0).
template <typename T> HP_HD T hp_ifmod(T a, T b) {
  return hp_idiv_undefined(a, b) ? T(0) : T(a % b);
}
/// ONNX Mod with fmod=0 on integers: the result has the sign of the divisor.
template <typename T> HP_HD T hp_imod(T a, T b) {
  if (hp_idiv_undefined(a, b))
    return T(0);
  T r = a % b;
  if (r != T(0) && ((r < T(0)) != (b < T(0))))
    r += b;
  return r;
}
/// ONNX Mod with fmod=0 on floats (Python semantics).
template <typename T> HP_HD T hp_pymod(T a, T b) {
  T r = hp_fmod(a, b);
  if (r != T(0) && ((r < T(0)) != (b < T(0))))
    r += b;
  return r;
}
template <typename T> HP_HD T hp_max(T a, T b) {
  return (hp_isnan(a) || a > b) ? a : b;
}
template <typename T> HP_HD T hp_min(T a, T b) {
  return (hp_isnan(a) || a < b) ? a : b;
}
/// ONNX Sign; NaN stays NaN (ONNX's reference and ONNX Runtime).
template <typename T> HP_HD T hp_sign(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x));
}
/// Float to integer conversion as ONNX Runtime does it (truncation; NaN and
/// out-of-range values are undefined in ONNX, here they give 0 / saturate).
template <typename To, typename From> HP_HD To hp_cast(From x) { return (To)x; }

//===----------------------------------------------------------------------===//
// Backend context and kernel launch
//===----------------------------------------------------------------------===//

/// The first index from data that a kernel found outside its range during a
/// run (docs/reliability.md, "Indices"). `node` is 0 while none was found,
/// else the 1-based position of the node in the program's HP_CHECKED_NODES;
/// the first report wins (compare-and-swap on `node`), its other fields are
/// written by that reporter only. Device memory; hetpar_run clears it before
/// the program and reads it once after, so a step pays no host sync per
/// kernel.
struct hp_index_error {
  unsigned long long node;
  long long value;   ///< the index (or label) as read
  long long lo, hi;  ///< the valid range [lo, hi)
  long long element; ///< its position in the index tensor (row-major)
};

/// Reports index `value` at `element` of checked node `node` (1-based) as
/// outside [lo, hi). `e` null: the program was compiled without the
/// reports (--unchecked-indices); the caller's kernel still never reads or
/// writes outside its buffers.
HP_HD void hp_index_fault(hp_index_error *e, int node, long long value,
                          long long lo, long long hi, long long element) {
  if (!e)
    return;
#if HP_CUDA && defined(__CUDA_ARCH__)
  if (atomicCAS(&e->node, 0ULL, (unsigned long long)node) != 0ULL)
    return;
#else
  unsigned long long none = 0;
  if (!__atomic_compare_exchange_n(&e->node, &none, (unsigned long long)node,
                                   false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return;
#endif
  e->value = value;
  e->lo = lo;
  e->hi = hi;
  e->element = element;
}

/// Index `v` into an axis of `extent` (negative indices count from the end,
/// as ONNX's): its position in [0, extent), or -1 when v lies outside
/// [-extent, extent), which is then reported as element `at` of checked node
/// `node` (hp_index_fault; `e` null: not reported).
HP_HD int64_t hp_checked_index(long long v, int64_t extent, hp_index_error *e,
                               int node, long long at) {
  const long long c = v < 0 ? v + extent : v;
  if (c >= 0 && c < extent)
    return c;
  hp_index_fault(e, node, v, -extent, extent, at);
  return -1;
}

/// What hetpar_run does on the GPU with a CUDA graph of the whole run
/// (hp_graph_next): run the program's launches one by one, capture them into
/// a graph and launch that, or launch the graph captured before.
enum hp_graph_action { HP_GRAPH_EAGER, HP_GRAPH_CAPTURE, HP_GRAPH_REPLAY };

/// The buffers a run's graph was captured on (a graph's launches hold the
/// arena, weights, input and output pointers of its capture) and how far the
/// graph has got for them.
struct hp_graph_state {
  /// Never capture: HETPAR_CUDA_GRAPHS=0, or a capture that failed.
  int disabled;
  /// For `key`: 0 no run yet, 1 one eager run (the warm-up that loads the
  /// kernels and sizes cuBLAS's workspace), 2 captured.
  int runs;
  int n;
  const void **key;
};

/// The action for a run on the n buffers `ptrs`, and the state after it: the
/// first run on new buffers is eager (and records them), the second captures,
/// every later one replays; disabled, always eager. Out of host memory for
/// the key, graphs are disabled. A caller whose capture fails sets
/// `disabled` and runs eagerly.
static inline hp_graph_action hp_graph_next(hp_graph_state *s,
                                            const void *const *ptrs, int n) {
  if (s->disabled)
    return HP_GRAPH_EAGER;
  if (s->key && s->n == n &&
      memcmp(s->key, ptrs, sizeof(void *) * (size_t)n) == 0) {
    if (s->runs >= 2)
      return HP_GRAPH_REPLAY;
    s->runs = 2;
    return HP_GRAPH_CAPTURE;
  }
  if (!s->key || s->n != n) {
    free(s->key);
    s->key = (const void **)malloc(sizeof(void *) * (size_t)(n > 0 ? n : 1));
    if (!s->key) {
      s->disabled = 1;
      return HP_GRAPH_EAGER;
    }
  }
  memcpy(s->key, ptrs, sizeof(void *) * (size_t)n);
  s->n = n;
  s->runs = 1;
  return HP_GRAPH_EAGER;
}

struct hp_gpu_plans; // hetpar_gpu_libraries.h

struct hp_ctx {
  char error[512];
  /// The collective or exchange running now, for error messages ("all_reduce
  /// before node '/2/Gemm' on devices [0,1,2,3]"); set by the generated code.
  const char *what;
  /// Device memory for the run's first out-of-range index (hp_index_fault).
  hp_index_error *index_error;
  /// The measured timeline (hetpar_trace): when set, each HP_TRACE(ctx, i)
  /// of a run writes the wall-clock time of trace point i, in microseconds
  /// since the epoch, into trace[i] (HP_TRACE_POINTS + 1 entries).
  double *trace;
#if HP_CUDA
  cudaStream_t stream;
  cublasHandle_t blas;
  /// cuBLASLt for GEMMs with an epilogue (hp_gemm_lt) and cuDNN for
  /// convolutions and pooling (hp_conv_cudnn, hp_pool_cudnn), both on
  /// the stream; null where a library cannot start (its callers then take
  /// the other paths). hp_gpu_libraries_init (hetpar_gpu_libraries.h).
  cublasLtHandle_t lt;
  cudnnHandle_t dnn;
  /// The workspace of cuBLAS, cuBLASLt and cuDNN (workspace_bytes; shared,
  /// as they run in the stream's order), or null.
  void *workspace;
  size_t workspace_bytes;
  /// The cuBLASLt and cuDNN plans made so far, one per distinct call (null
  /// when it could not be allocated: the libraries' paths then decline).
  hp_gpu_plans *plans;
  /// One event per trace point and one at the run's start (created by
  /// hetpar_trace), and the host's wall clock when that one was recorded.
  cudaEvent_t *trace_events;
  double trace_start_us;
  /// The whole run as one CUDA graph (hetpar_run, hp_run_graph).
  hp_graph_state graph;
  cudaGraphExec_t graph_exec;
#endif
};

/// Wall-clock time in microseconds since the epoch (CLOCK_REALTIME, so that
/// the processes of one job share a time line).
static inline double hp_wall_us() {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/// Trace point i of the generated code: the start of span i, or the end of
/// the last span for i == HP_TRACE_POINTS (hetpar_trace). Costs one branch
/// when tracing is off. On CUDA an event on the stream, converted to wall
/// time once the run has finished.
#if HP_CUDA
#define HP_TRACE(ctx, i)                                                       \
  do {                                                                         \
    if ((ctx)->trace_events)                                                   \
      cudaEventRecord((ctx)->trace_events[i], (ctx)->stream);                  \
  } while (0)
#else
#define HP_TRACE(ctx, i)                                                       \
  do {                                                                         \
    if ((ctx)->trace)                                                          \
      (ctx)->trace[i] = hp_wall_us();                                          \
  } while (0)
#endif

struct hp_dims {
  int64_t v[HP_MAX_RANK];
};

#if HP_CUDA
/// Kernels are grid-stride loops; `hp_n` is the iteration count.
#define HP_KERNEL(name, ...) __global__ void name(int64_t hp_n, __VA_ARGS__)
#define HP_FOR(i)                                                              \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < hp_n;   \
       i += (int64_t)blockDim.x * gridDim.x)
#define HP_FOR_W(i, work) HP_FOR(i)
#define HP_FOR_SIMD(i) HP_FOR(i)
#define HP_SIMD_REDUCE(op, v)
#define HP_SIMD
static inline unsigned hp_blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b > 65535 * 8 ? 65535 * 8 : b);
}
/// Launches kernel k over n iterations on the context's stream (nothing for
/// n == 0). A function, not a macro, so template arguments may hold commas.
template <typename... P, typename... A>
static void hp_launch(hp_ctx *ctx, void (*k)(int64_t, P...), int64_t n,
                      A... args) {
  if (n > 0)
    k<<<hp_blocks(n), 256, 0, ctx->stream>>>(n, args...);
}
#else
#define HP_KERNEL(name, ...) static void name(int64_t hp_n, __VA_ARGS__)
// Parallel only when the loop has enough work to pay for waking threads
// (16384 element-operations; a measurement on the 2-core dev machine put
// the break-even near 10^4).
// clang-format would split the _Pragma strings, which _Pragma refuses.
// clang-format off
#define HP_FOR(i)                                                              \
  _Pragma("omp parallel for schedule(static) if (hp_n >= 16384)")              \
      for (int64_t i = 0; i < hp_n; ++i)
#define HP_FOR_W(i, work)                                                      \
  const int64_t hp_work = (work);                                              \
  _Pragma("omp parallel for schedule(static) if (hp_n * hp_work >= 16384)")    \
      for (int64_t i = 0; i < hp_n; ++i)
// HP_FOR whose body has no inner loop or call that stops vectorization (the
// fused elementwise kernels): each thread's share runs as SIMD lanes, at any
// optimization level (GCC's -O2 vectorizes only loops without a remainder).
// The if clause names `parallel`: unnamed, OpenMP 5 applies it to the simd
// construct too, and small loops would run scalar.
#define HP_FOR_SIMD(i)                                                         \
  _Pragma("omp parallel for simd schedule(static) if (parallel : hp_n >= 16384)") \
      for (int64_t i = 0; i < hp_n; ++i)
// A loop over the rows of `width` elements each that the kernel's hp_n
// elements form (the generated broadcast elementwise kernels), parallel
// under the same 16384-element rule as HP_FOR.
#define HP_FOR_ROWS(row, width)                                                \
  _Pragma("omp parallel for schedule(static) if (hp_n >= 16384)")              \
      for (int64_t row = 0; row < hp_n / (width); ++row)
// clang-format on
#define HP_PRAGMA(x) _Pragma(#x)
/// Vectorizes the next loop, a reduction into v with op (+ or max): the
/// lanes' partial results are combined at the end, so the order of the
/// additions differs from a scalar loop.
#define HP_SIMD_REDUCE(op, v) HP_PRAGMA(omp simd reduction(op : v))
/// Vectorizes the next loop, whose iterations are independent.
#define HP_SIMD _Pragma("omp simd")
/// Runs kernel k over n iterations (nothing for n == 0).
template <typename... P, typename... A>
static void hp_launch(hp_ctx *, void (*k)(int64_t, P...), int64_t n,
                      A... args) {
  if (n > 0)
    k(n, args...);
}
#endif

//===----------------------------------------------------------------------===//
// Library kernels (layout, gather, reductions, normalization, pooling)
//===----------------------------------------------------------------------===//

/// out[outOffset + sum c_d*outStrides_d] = in[inOffset + sum (c_d % inMods_d) *
/// inStrides_d] over the index space `dims` (rank <= 8). Covers Transpose,
/// Slice (negative strides), Expand/broadcast (stride 0), Tile (mods), Concat
/// and Split (offsets into the bigger tensor) and plain copies.
template <typename T>
HP_KERNEL(hp_strided_copy, int rank, hp_dims dims, hp_dims inStrides,
          hp_dims inMods, int64_t inOffset, const T *in, hp_dims outStrides,
          int64_t outOffset, T *out) {
  HP_FOR(i) {
    int64_t rem = i, src = inOffset, dst = outOffset;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rem % dims.v[d];
      rem /= dims.v[d];
      src += (c % inMods.v[d]) * inStrides.v[d];
      dst += c * outStrides.v[d];
    }
    out[dst] = in[src];
  }
}

/// The most elements one iteration of hp_strided_copy_rows copies: narrow
/// rows are grouped up to it (at most 32 rows, so that one set of
/// coordinate divisions serves many rows), wide rows are cut into pieces of
/// it (so that one long merged row still spreads over the threads).
#define HP_COPY_PIECE 4096

/// hp_strided_copy by rows of the innermost dimension (the CPU backend's
/// version). Iteration i copies the columns [k0, k1) of the rows [first,
/// first + chunkRows): chunks of narrow rows, or one piece of `piece`
/// columns of a wide row. The first row's coordinates take divisions, the
/// others an odometer step, and a modulo only where a mod is smaller than
/// its dimension (Tile); a unit-stride row is a vector loop.
template <typename T>
HP_KERNEL(hp_strided_copy_rows, int rank, hp_dims dims, hp_dims inStrides,
          hp_dims inMods, int64_t inOffset, const T *in, hp_dims outStrides,
          int64_t outOffset, T *out, int64_t rows, int64_t chunkRows,
          int64_t piece) {
  const int last = rank - 1;
  const int64_t width = dims.v[last];
  const int64_t pieces = (width + piece - 1) / piece;
  const int64_t is = inStrides.v[last], os = outStrides.v[last];
  const int64_t mod = inMods.v[last];
  HP_FOR_W(it, chunkRows * piece) {
    const int64_t first = (it / pieces) * chunkRows;
    const int64_t k0 = (it % pieces) * piece;
    const int64_t k1 = k0 + piece < width ? k0 + piece : width;
    const int64_t end = first + chunkRows < rows ? first + chunkRows : rows;
    int64_t c[HP_MAX_RANK] = {0}, rem = first;
    for (int d = last - 1; d >= 0; --d) {
      c[d] = rem % dims.v[d];
      rem /= dims.v[d];
    }
    for (int64_t row = first; row < end; ++row) {
      int64_t src = inOffset, dst = outOffset;
      for (int d = 0; d < last; ++d) {
        const int64_t m = inMods.v[d];
        src += (c[d] < m ? c[d] : c[d] % m) * inStrides.v[d];
        dst += c[d] * outStrides.v[d];
      }
      if (mod >= width && is == 1 && os == 1) {
        const T *__restrict__ from = in + src;
        T *__restrict__ to = out + dst;
        HP_SIMD
        for (int64_t k = k0; k < k1; ++k)
          to[k] = from[k];
      } else if (is == 0 && os == 1) { // a broadcast value (a bias)
        const T v = in[src];
        T *__restrict__ to = out + dst;
        HP_SIMD
        for (int64_t k = k0; k < k1; ++k)
          to[k] = v;
      } else if (mod >= width) {
        for (int64_t k = k0; k < k1; ++k)
          out[dst + k * os] = in[src + k * is];
      } else {
        for (int64_t k = k0; k < k1; ++k)
          out[dst + k * os] = in[src + (k % mod) * is];
      }
      for (int d = last - 1; d >= 0; --d) {
        if (++c[d] < dims.v[d])
          break;
        c[d] = 0;
      }
    }
  }
}

/// Merges neighbouring dimensions of a strided copy that are contiguous in
/// both the source and the destination and not tiled (e.g. [2, 4, 16, 8]
/// with source strides [1024, 256, 16, 1] becomes [8, 16, 8]), dropping
/// dimensions of extent 1, so the kernels walk fewer, longer rows. Returns
/// the new rank; a rank-0 copy stays rank 0.
static int hp_coalesce_copy(int rank, hp_dims &dims, hp_dims &inStrides,
                            hp_dims &inMods, hp_dims &outStrides) {
  int r = 0;
  for (int d = 0; d < rank; ++d) {
    if (dims.v[d] == 1 && rank > 1)
      continue; // no coordinate but 0: neither stride matters
    bool whole = inMods.v[d] >= dims.v[d];
    if (r > 0 && whole && inMods.v[r - 1] >= dims.v[r - 1] &&
        inStrides.v[r - 1] == inStrides.v[d] * dims.v[d] &&
        outStrides.v[r - 1] == outStrides.v[d] * dims.v[d]) {
      dims.v[r - 1] *= dims.v[d];
      inMods.v[r - 1] = dims.v[r - 1];
      inStrides.v[r - 1] = inStrides.v[d];
      outStrides.v[r - 1] = outStrides.v[d];
      continue;
    }
    dims.v[r] = dims.v[d];
    inStrides.v[r] = inStrides.v[d];
    inMods.v[r] = inMods.v[d];
    outStrides.v[r] = outStrides.v[d];
    ++r;
  }
  if (r == 0 && rank > 0) { // every extent was 1: one element
    dims.v[0] = inMods.v[0] = 1;
    r = 1;
  }
  return r;
}

/// Launches a strided copy of n elements after hp_coalesce_copy: one thread
/// per element on the GPU, one iteration per HP_COPY_PIECE elements or 32
/// rows on the CPU.
template <typename T>
static void hp_copy_launch(hp_ctx *ctx, int64_t n, int rank, hp_dims dims,
                           hp_dims inStrides, hp_dims inMods, int64_t inOffset,
                           const T *in, hp_dims outStrides, int64_t outOffset,
                           T *out) {
  if (n == 0)
    return;
  rank = hp_coalesce_copy(rank, dims, inStrides, inMods, outStrides);
#if HP_CUDA
  hp_launch(ctx, hp_strided_copy<T>, n, rank, dims, inStrides, inMods, inOffset,
            in, outStrides, outOffset, out);
#else
  if (rank == 0) { // a scalar
    hp_launch(ctx, hp_strided_copy<T>, n, rank, dims, inStrides, inMods,
              inOffset, in, outStrides, outOffset, out);
    return;
  }
  const int64_t width = dims.v[rank - 1], rows = n / width;
  int64_t chunkRows = HP_COPY_PIECE / width;
  chunkRows = chunkRows < 1 ? 1 : (chunkRows > 32 ? 32 : chunkRows);
  const int64_t piece = width < HP_COPY_PIECE ? width : HP_COPY_PIECE;
  hp_launch(ctx, hp_strided_copy_rows<T>,
            (rows + chunkRows - 1) / chunkRows * ((width + piece - 1) / piece),
            rank, dims, inStrides, inMods, inOffset, in, outStrides, outOffset,
            out, rows, chunkRows, piece);
#endif
}

/// Fills n elements with a value.
template <typename T> HP_KERNEL(hp_fill, T value, T *out) {
  HP_FOR(i) { out[i] = value; }
}

/// Element conversion (graph inputs and outputs under --dtype).
template <typename To, typename From>
HP_KERNEL(hp_convert, const From *in, To *out) {
  HP_FOR(i) { out[i] = (To)(float)in[i]; }
}

/// Gather along one axis: data viewed as [outer, axisDim, inner], indices
/// [nIdx] (negative values count from the end), out [outer, nIdx, inner].
/// An index outside [-axisDim, axisDim) (an error in ONNX) is reported as
/// checked node `node` (hp_index_fault) and gives 0.
template <typename T, typename I>
HP_KERNEL(hp_gather, int64_t axisDim, int64_t nIdx, int64_t inner,
          const T *data, const I *idx, T *out, hp_index_error *err, int node) {
  HP_FOR(i) {
    int64_t in_ = i % inner, t = i / inner;
    int64_t j = t % nIdx, o = t / nIdx;
    const int64_t k =
        hp_checked_index((long long)idx[j], axisDim, err, node, j);
    out[i] = k >= 0 ? data[(o * axisDim + k) * inner + in_] : T(0);
  }
}

#if !HP_CUDA
/// The CPU's Gather (hp_gather's contract) for rows of inner >= 16
/// elements: one iteration per (outer, index) pair copies a whole row, so
/// the index is read and checked once per row, not once per element.
template <typename T, typename I>
HP_KERNEL(hp_gather_rows, int64_t axisDim, int64_t nIdx, int64_t inner,
          const T *data, const I *idx, T *out, hp_index_error *err, int node) {
  HP_FOR_W(t, inner) {
    const int64_t j = t % nIdx, o = t / nIdx;
    const int64_t k =
        hp_checked_index((long long)idx[j], axisDim, err, node, j);
    T *dst = out + t * inner;
    if (k >= 0) {
      memcpy(dst, data + (o * axisDim + k) * inner, sizeof(T) * inner);
    } else {
      for (int64_t in_ = 0; in_ < inner; ++in_)
        dst[in_] = T(0);
    }
  }
}
#endif

/// Launches hp_gather over n output elements: one per element on the GPU,
/// a row per iteration on the CPU where rows are long enough.
template <typename T, typename I>
static void hp_gather_launch(hp_ctx *ctx, int64_t n, int64_t axisDim,
                             int64_t nIdx, int64_t inner, const T *data,
                             const I *idx, T *out, hp_index_error *err,
                             int node) {
#if !HP_CUDA
  if (inner >= 16) {
    hp_launch(ctx, hp_gather_rows<T, I>, n / inner, axisDim, nIdx, inner, data,
              idx, out, err, node);
    return;
  }
#endif
  hp_launch(ctx, hp_gather<T, I>, n, axisDim, nIdx, inner, data, idx, out, err,
            node);
}

/// Gradient of Gather (scatter-add): dX viewed as [outer, axisDim, inner] is
/// zero-filled by the caller; one iteration per (outer, inner) column adds
/// dY[o, j, in] into dX[o, idx[j], in] for every j in order, so repeated
/// indices accumulate without atomics and the sum order is the same on every
/// backend. Indices outside [-axisDim, axisDim) are skipped and reported as
/// checked node `node`.
template <typename T, typename I>
HP_KERNEL(hp_gather_grad, int64_t axisDim, int64_t nIdx, int64_t inner,
          const T *dy, const I *idx, T *dx, hp_index_error *err, int node) {
  HP_FOR_W(c, nIdx) {
    int64_t in_ = c % inner, o = c / inner;
    for (int64_t j = 0; j < nIdx; ++j) {
      const int64_t k =
          hp_checked_index((long long)idx[j], axisDim, err, node, j);
      if (k >= 0)
        dx[(o * axisDim + k) * inner + in_] =
            (T)((float)dx[(o * axisDim + k) * inner + in_] +
                (float)dy[(o * nIdx + j) * inner + in_]);
    }
  }
}

/// Index tuple `t` (k entries at idx[t * k]) of the axes with extents `dims`
/// and strides `strides` (elements): the offset it names, or -1 when an entry
/// lies outside [-extent, extent), which `report` reports as checked node
/// `node`.
HP_HD int64_t hp_tuple_offset(int k, const hp_dims &dims,
                              const hp_dims &strides, const int64_t *idx,
                              int64_t t, bool report, hp_index_error *err,
                              int node) {
  int64_t off = 0;
  for (int j = 0; j < k; ++j) {
    const int64_t c = hp_checked_index(idx[t * k + j], dims.v[j],
                                       report ? err : NULL, node, t * k + j);
    if (c < 0)
      return -1;
    off += c * strides.v[j];
  }
  return off;
}

/// Combines update `u` into `d` as a scatter's `reduction`: 0 none (replace),
/// 1 add, 2 mul, 3 max, 4 min, computed in the accumulation type A.
template <typename T, typename A>
HP_HD void hp_scatter_combine(T &d, T u, int reduction) {
  A a = (A)d, b = (A)u;
  d = reduction == 0   ? u
      : reduction == 1 ? (T)(a + b)
      : reduction == 2 ? (T)(a * b)
      : reduction == 3 ? (a < b ? u : d)
                       : (b < a ? u : d);
}

/// GatherND: data viewed as [groups, ...] with `groupStride` elements per
/// batch group (batch_dims), indices as [groups * tuples, k]; out is
/// [groups * tuples, slice]. The tuple's k entries index the axes with
/// extents `dims` and strides `strides`; a tuple with an entry out of range
/// gives zeros and is reported as checked node `node`.
template <typename T>
HP_KERNEL(hp_gather_nd, int k, hp_dims dims, hp_dims strides, int64_t tuples,
          int64_t slice, int64_t groupStride, const T *data, const int64_t *idx,
          T *out, hp_index_error *err, int node) {
  HP_FOR(i) {
    int64_t s = i % slice, t = i / slice;
    int64_t off = hp_tuple_offset(k, dims, strides, idx, t, s == 0, err, node);
    out[i] = off < 0 ? T(0) : data[(t / tuples) * groupStride + off + s];
  }
}

/// ScatterND into `out` (a copy of data): for each of `tuples` index tuples
/// in order, the slice of `slice` elements at the tuple's offset combines
/// with the tuple's updates (hp_scatter_combine). One iteration per slice
/// element runs the tuples in order, so repeated tuples apply in the
/// indices' order on every backend, without atomics. A tuple out of range is
/// skipped and reported as checked node `node`.
template <typename T, typename A>
HP_KERNEL(hp_scatter_nd, int k, hp_dims dims, hp_dims strides, int64_t tuples,
          int reduction, const int64_t *idx, const T *upd, T *out,
          hp_index_error *err, int node) {
  HP_FOR_W(s, tuples) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off =
          hp_tuple_offset(k, dims, strides, idx, t, s == 0, err, node);
      if (off >= 0)
        hp_scatter_combine<T, A>(out[off + s], upd[t * hp_n + s], reduction);
    }
  }
}

/// ScatterElements into `out` (a copy of data): updates and indices have
/// extents `udims`; the update at position p goes to p with p[axis] replaced
/// by its index (hp_scatter_combine). One iteration per position of the
/// updates without `axis` runs along the axis in order, so repeated indices
/// apply in order on every backend. An index outside [-axisDim, axisDim) is
/// skipped and reported as checked node `node`.
template <typename T, typename A, typename I>
HP_KERNEL(hp_scatter_elements, int rank, int axis, hp_dims udims,
          hp_dims dataStrides, int64_t axisDim, int reduction, const I *idx,
          const T *upd, T *out, hp_index_error *err, int node) {
  HP_FOR_W(c, udims.v[axis]) {
    int64_t rem = c, base = 0, ubase = 0, us = 1, axisStride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (d == axis) {
        axisStride = us;
      } else {
        int64_t coord = rem % udims.v[d];
        rem /= udims.v[d];
        base += coord * dataStrides.v[d];
        ubase += coord * us;
      }
      us *= udims.v[d];
    }
    for (int64_t a = 0; a < udims.v[axis]; ++a) {
      const int64_t u = ubase + a * axisStride;
      const int64_t j =
          hp_checked_index((long long)idx[u], axisDim, err, node, u);
      if (j >= 0)
        hp_scatter_combine<T, A>(out[base + j * dataStrides.v[axis]], upd[u],
                                 reduction);
    }
  }
}

/// The per-axis geometry of a Resize: extents, row-major input strides, the
/// scale of the coordinate transform, tf_crop_and_resize's region, and
/// whether the axis is resized at all (an axis that is not maps each output
/// coordinate to itself).
struct hp_resize_axes {
  int64_t in[HP_MAX_RANK], out[HP_MAX_RANK], stride[HP_MAX_RANK];
  int64_t active[HP_MAX_RANK];
  double scale[HP_MAX_RANK], roiStart[HP_MAX_RANK], roiEnd[HP_MAX_RANK];
};

/// The input coordinate of output coordinate `o` on one axis, by ONNX
/// Resize's coordinate_transformation_mode (onnx/reference/ops/op_resize.py):
/// 0 half_pixel, 1 half_pixel_symmetric, 2 pytorch_half_pixel,
/// 3 align_corners, 4 asymmetric, 5 tf_crop_and_resize, 6 tf_half_pixel_for_nn
/// (opset 11). `outF` is the output
/// extent before flooring (scale times the input extent).
HP_HD double hp_resize_coord(int transform, int64_t o, int64_t in, int64_t out,
                             double scale, double r0, double r1) {
  double outF = scale * (double)in;
  switch (transform) {
  case 1: {
    double offset = in / 2.0 * (1.0 - (double)out / outF);
    return offset + (o + 0.5) / scale - 0.5;
  }
  case 2:
    return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  case 3:
    return outF == 1.0 ? 0.0 : o * (double)(in - 1) / (outF - 1.0);
  case 4:
    return o / scale;
  case 5:
    return (outF == 1.0 ? (r1 - r0) * (in - 1) / 2.0
                        : o * (r1 - r0) * (in - 1) / (outF - 1.0)) +
           r0 * (in - 1);
  case 6:
    return (o + 0.5) / scale;
  default:
    return (o + 0.5) / scale - 0.5;
  }
}

/// The input indices and weights of coordinate `c` on an axis of extent
/// `in`: mode 0 nearest (one tap; `nearest` 0 round_prefer_floor,
/// 1 round_prefer_ceil, 2 floor, 3 ceil), 1 linear (two), 2 cubic (four,
/// Keys' kernel with coefficient `a`; `exclude` drops the taps outside the
/// input and renormalizes). Indices are clamped to the input (edge values).
HP_HD void hp_resize_taps(int mode, int nearest, double a, int exclude,
                          double c, int64_t in, int64_t *idx, double *w) {
  double f = floor(c), r = c - f;
  int64_t x0 = (int64_t)f;
  if (mode == 0) {
    bool up = nearest == 0   ? r > 0.5
              : nearest == 1 ? r >= 0.5
              : nearest == 2 ? false
                             : r > 0.0;
    idx[0] = x0 + (up ? 1 : 0);
    w[0] = 1.0;
  } else if (mode == 1) {
    idx[0] = x0;
    idx[1] = x0 + 1;
    w[0] = 1.0 - r;
    w[1] = r;
  } else {
    double s = 1.0 - r;
    w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
    double sum = 0.0;
    for (int t = 0; t < 4; ++t) {
      idx[t] = x0 - 1 + t;
      if (exclude && (idx[t] < 0 || idx[t] >= in))
        w[t] = 0.0;
      sum += w[t];
    }
    if (exclude && sum != 0.0)
      for (int t = 0; t < 4; ++t)
        w[t] /= sum;
  }
  int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
  for (int t = 0; t < taps; ++t)
    idx[t] = idx[t] < 0 ? 0 : idx[t] >= in ? in - 1 : idx[t];
}

/// Resize (ONNX): each output element sums the taps of its resized axes
/// (hp_resize_taps of hp_resize_coord) over the input, in double; under
/// tf_crop_and_resize (transform 5) a coordinate outside the input gives
/// `extrapolation`. `scales` and `roi`, when not null, are the op's float32
/// inputs read at run time: axis d takes entry listPos[d] of `scales`, and
/// entries listPos[d] and listPos[d] + listLen of `roi`.
template <typename T>
HP_KERNEL(hp_resize, int rank, hp_resize_axes ax, int mode, int transform,
          int nearest, double cubicA, int exclude, double extrapolation,
          const float *scales, const float *roi, hp_dims listPos,
          int64_t listLen, const T *x, T *y) {
  const int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
  HP_FOR(i) {
    int64_t rem = i, base = 0, idx[HP_MAX_RANK][4];
    double w[HP_MAX_RANK][4];
    int act[HP_MAX_RANK], n = 0;
    bool outside = false;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t o = rem % ax.out[d];
      rem /= ax.out[d];
      if (!ax.active[d]) {
        base += o * ax.stride[d];
        continue;
      }
      // Scales and roi that are graph inputs: read here, per their entry.
      double scale = scales ? (double)scales[listPos.v[d]] : ax.scale[d];
      double r0 = roi ? (double)roi[listPos.v[d]] : ax.roiStart[d];
      double r1 = roi ? (double)roi[listPos.v[d] + listLen] : ax.roiEnd[d];
      double c =
          hp_resize_coord(transform, o, ax.in[d], ax.out[d], scale, r0, r1);
      if (transform == 5 && (c < 0.0 || c > (double)(ax.in[d] - 1)))
        outside = true;
      act[n] = d;
      hp_resize_taps(mode, nearest, cubicA, exclude, c, ax.in[d], idx[n], w[n]);
      ++n;
    }
    if (outside) {
      y[i] = (T)extrapolation;
      continue;
    }
    int64_t combos = 1;
    for (int k = 0; k < n; ++k)
      combos *= taps;
    double acc = 0.0;
    for (int64_t m = 0; m < combos; ++m) {
      int64_t r = m, off = base;
      double wt = 1.0;
      for (int k = 0; k < n; ++k) {
        int t = (int)(r % taps);
        r /= taps;
        wt *= w[k][t];
        off += idx[k][t] * ax.stride[act[k]];
      }
      if (wt != 0.0)
        acc += wt * (double)x[off];
    }
    y[i] = (T)acc;
  }
}

/// One AdamW step per element, as torch.optim.AdamW (decoupled weight decay,
/// bias correction): `lr`, `step` (the step number after this update, >= 1)
/// and `scale` (gradient clipping / loss scaling) are device scalars computed
/// by the program. Outputs may alias the inputs (in-place update). A
/// non-finite scale skips the step (outputs = inputs).
HP_KERNEL(hp_adamw, const float *p, const float *g, const float *m,
          const float *v, float *po, float *mo, float *vo, const float *lr,
          const int64_t *step, const float *scale, float b1, float b2,
          float eps, float wd) {
  // The step's scalars once, not per element (two powf per element were a
  // sixth of a GPT-2 small step on the CPU): the same operations in the same
  // order, so the same bits.
  const float s = *scale, rate = *lr;
  const float t = (float)*step;
  const float bc1 = 1.0f - powf(b1, t), sbc2 = sqrtf(1.0f - powf(b2, t));
  const bool skip = !(s - s == 0.0f); // inf or NaN
  HP_FOR(i) {
    if (skip) { // in place: nothing to do
      if (po != p || mo != m || vo != v) {
        po[i] = p[i];
        mo[i] = m[i];
        vo[i] = v[i];
      }
      continue;
    }
    float gi = g[i] * s;
    float pi = p[i] * (1.0f - rate * wd);
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    float denom = sqrtf(vi) / sbc2 + eps;
    po[i] = pi - rate / bc1 * mi / denom;
    mo[i] = mi;
    vo[i] = vi;
  }
}

/// One SGD step per element, as torch.optim.SGD with dampening 0: with
/// momentum (buf != NULL) buf' = momentum * buf + g (buf' = g on step 1), and
/// Nesterov's g + momentum * buf'. Outputs may alias inputs; a non-finite
/// scale skips the step.
HP_KERNEL(hp_sgd, const float *p, const float *g, const float *buf, float *po,
          float *bufo, const float *lr, const int64_t *step, const float *scale,
          float momentum, int nesterov, float wd) {
  HP_FOR(i) {
    float s = *scale;
    if (!(s - s == 0.0f)) { // skipped (in place: nothing to do)
      if (po != p)
        po[i] = p[i];
      if (buf && bufo != buf)
        bufo[i] = buf[i];
      continue;
    }
    float d = g[i] * s + wd * p[i];
    if (buf) {
      float b = *step <= 1 ? d : momentum * buf[i] + d;
      bufo[i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    po[i] = p[i] - *lr * d;
  }
}

/// OneHot over the result seen as [outer, depth, inner] (the new axis in the
/// middle): out[o][d][i] = values[1] where the index at [o][i] (truncated
/// toward zero, plus depth when negative) is d, else values[0]. An index
/// outside [-depth, depth) gives values[0] everywhere, as ONNX specifies.
template <typename T, typename I>
HP_KERNEL(hp_one_hot, int64_t depth, int64_t inner, const I *idx,
          const T *values, T *out) {
  HP_FOR(i) {
    int64_t in = i % inner, d = (i / inner) % depth, o = i / inner / depth;
    double raw = (double)idx[o * inner + in];
    int64_t k = -1;
    if (raw > -(double)depth - 1 && raw < (double)depth) {
      k = (int64_t)raw;
      if (k < 0)
        k += depth;
    }
    out[i] = k == d ? values[1] : values[0];
  }
}

/// GatherElements: out has the indices' shape `dims`; along `axis` the index
/// comes from idx, elsewhere the coordinate itself. An index outside
/// [-axisDim, axisDim) gives 0 and is reported as checked node `node`.
template <typename T, typename I>
HP_KERNEL(hp_gather_elements, int rank, int axis, hp_dims dims,
          hp_dims dataStrides, int64_t axisDim, const T *data, const I *idx,
          T *out, hp_index_error *err, int node) {
  HP_FOR(i) {
    int64_t rem = i, off = 0;
    bool inRange = true;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rem % dims.v[d];
      rem /= dims.v[d];
      if (d == axis) {
        c = hp_checked_index((long long)idx[i], axisDim, err, node, i);
        inRange = c >= 0;
      }
      off += c * dataStrides.v[d];
    }
    out[i] = inRange ? data[off] : T(0);
  }
}

enum {
  HP_RED_SUM,
  HP_RED_MEAN,
  HP_RED_MAX,
  HP_RED_MIN,
  HP_RED_PROD,
  HP_RED_L1,
  HP_RED_L2,
  HP_RED_SUMSQ,
  HP_RED_LOGSUMEXP
};

template <typename Acc> HP_HD Acc hp_lowest() {
#if HP_CUDA
  return (Acc)-INFINITY;
#else
  return std::numeric_limits<Acc>::has_infinity
             ? -std::numeric_limits<Acc>::infinity()
             : std::numeric_limits<Acc>::lowest();
#endif
}
template <typename Acc> HP_HD Acc hp_highest() {
#if HP_CUDA
  return (Acc)INFINITY;
#else
  return std::numeric_limits<Acc>::has_infinity
             ? std::numeric_limits<Acc>::infinity()
             : std::numeric_limits<Acc>::max();
#endif
}
#if HP_CUDA
template <> HP_HD int64_t hp_lowest<int64_t>() { return INT64_MIN; }
template <> HP_HD int64_t hp_highest<int64_t>() { return INT64_MAX; }
template <> HP_HD uint64_t hp_lowest<uint64_t>() { return 0; }
template <> HP_HD uint64_t hp_highest<uint64_t>() { return UINT64_MAX; }
#endif

/// The identity of a Max (MAX) or Min reduction of T values accumulated in
/// Acc, which is what ONNX defines the reduction of an empty set as: -inf or
/// +inf for floating types, else T's lowest or highest value (INT32_MIN for
/// int32, not the int64 accumulator's INT64_MIN, which an int32 result
/// would truncate to 0).
template <typename T, typename Acc, bool MAX> HP_HD Acc hp_max_min_identity() {
  if (std::is_same<T, bool>::value)
    return Acc(!MAX);
  if (!std::is_integral<T>::value)
    return MAX ? hp_lowest<Acc>() : hp_highest<Acc>();
  const int bits = (int)sizeof(T) * 8;
  if (!std::is_signed<T>::value) // 0 and all ones, in T's width
    return MAX ? Acc(0) : (Acc)(T) ~(uint64_t)0;
  const Acc highest = (Acc)(((uint64_t)1 << (bits - 1)) - 1);
  return MAX ? -highest - Acc(1) : highest;
}

/// Reduction: one output element per iteration. The output's coordinates
/// (kept dims, `keptDims`) map to input offsets with `keptStrides`; the
/// reduced coordinates (`redDims`) with `redStrides`. An empty reduction gives
/// the operation's identity (0, 1, -inf or +inf), as ONNX specifies.
template <typename T, typename Acc, int OP>
HP_KERNEL(hp_reduce, int keptRank, hp_dims keptDims, hp_dims keptStrides,
          int redRank, hp_dims redDims, hp_dims redStrides, int64_t redCount,
          const T *in, T *out) {
  // A contiguous run summed (RMSNorm's mean of squares, a row sum) is a
  // vector loop with partial sums per lane.
  const bool contiguousSum =
      (OP == HP_RED_SUM || OP == HP_RED_MEAN || OP == HP_RED_SUMSQ ||
       OP == HP_RED_L1 || OP == HP_RED_L2) &&
      redRank == 1 && redStrides.v[0] == 1;
  HP_FOR_W(o, redCount) {
    int64_t rem = o, base = 0;
    for (int d = keptRank - 1; d >= 0; --d) {
      base += (rem % keptDims.v[d]) * keptStrides.v[d];
      rem /= keptDims.v[d];
    }
    Acc acc = OP == HP_RED_PROD  ? Acc(1)
              : OP == HP_RED_MAX ? hp_max_min_identity<T, Acc, true>()
              : OP == HP_RED_MIN ? hp_max_min_identity<T, Acc, false>()
                                 : Acc(0);
    Acc shift = Acc(0);
    // LogSumExp sums exp(x - shift) in double: an integer accumulator would
    // truncate each term (and an unsigned one wrap x - shift below the
    // maximum).
    double lse = 0;
    if (contiguousSum) {
      const T *p = in + base;
      HP_SIMD_REDUCE(+, acc)
      for (int64_t r = 0; r < redCount; ++r) {
        Acc x = (Acc)p[r];
        acc += OP == HP_RED_L1                         ? hp_abs(x)
               : OP == HP_RED_SUMSQ || OP == HP_RED_L2 ? x * x
                                                       : x;
      }
    } else {
      if (OP == HP_RED_LOGSUMEXP) {
        shift = hp_lowest<Acc>();
        for (int64_t r = 0; r < redCount; ++r) {
          int64_t rr = r, off = base;
          for (int d = redRank - 1; d >= 0; --d) {
            off += (rr % redDims.v[d]) * redStrides.v[d];
            rr /= redDims.v[d];
          }
          shift = hp_max(shift, (Acc)in[off]);
        }
        if (!(shift > hp_lowest<Acc>() && shift < hp_highest<Acc>()))
          shift = Acc(0);
      }
      for (int64_t r = 0; r < redCount; ++r) {
        int64_t rr = r, off = base;
        for (int d = redRank - 1; d >= 0; --d) {
          off += (rr % redDims.v[d]) * redStrides.v[d];
          rr /= redDims.v[d];
        }
        Acc x = (Acc)in[off];
        switch (OP) {
        case HP_RED_SUM:
        case HP_RED_MEAN:
          acc += x;
          break;
        case HP_RED_MAX:
          acc = hp_max(acc, x);
          break;
        case HP_RED_MIN:
          acc = hp_min(acc, x);
          break;
        case HP_RED_PROD:
          acc *= x;
          break;
        case HP_RED_L1:
          acc += hp_abs(x);
          break;
        case HP_RED_L2:
        case HP_RED_SUMSQ:
          acc += x * x;
          break;
        case HP_RED_LOGSUMEXP:
          lse += hp_exp((double)x - (double)shift);
          break;
        }
      }
    }
    if (OP == HP_RED_MEAN && redCount > 0)
      acc = acc / (Acc)redCount;
    if (OP == HP_RED_L2)
      acc = (Acc)hp_sqrt((double)acc);
    if (OP == HP_RED_LOGSUMEXP)
      acc = (Acc)(hp_log(lse) + (double)shift);
    out[o] = (T)acc;
  }
}

/// ArgMax (MAX=true) / ArgMin over the middle axis of [outer, len, inner];
/// ties give the first index, or the last with selectLast.
template <typename T, bool MAX>
HP_KERNEL(hp_arg_reduce, int64_t len, int64_t inner, int selectLast,
          const T *in, int64_t *out) {
  HP_FOR_W(r, len) {
    int64_t o = r / inner, j = r % inner;
    const T *p = in + o * len * inner + j;
    int64_t best = 0;
    for (int64_t k = 1; k < len; ++k) {
      bool better = MAX ? (p[k * inner] > p[best * inner])
                        : (p[k * inner] < p[best * inner]);
      bool equal = p[k * inner] == p[best * inner];
      if (better || (selectLast && equal))
        best = k;
    }
    out[r] = best;
  }
}

#if HP_CUDA
/// hp_arg_reduce with one warp per output, for rows of at least 32 elements
/// on the GPU: iteration i is lane i % 32 of output i / 32. Its result is
/// the sequential loop's: that loop never moves off a NaN at position 0
/// and never moves onto a NaN, so the result is 0 when the first element is
/// NaN, else the best of the other elements in the order (value, then the
/// first index, or the last with selectLast). Each lane takes its elements'
/// best under that order, the lanes combine their indices with shuffles (the
/// order is total, so every lane ends with the same index), and the values
/// are read from `in` again rather than shuffled (16-bit types included).
template <typename T, bool MAX>
HP_KERNEL(hp_arg_reduce_warp, int64_t len, int64_t inner, int selectLast,
          const T *in, int64_t *out) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const T *p = in + (r / inner) * len * inner + r % inner;
    // Whether index b beats index a (-1: none; NaNs never enter).
    auto beats = [&](int64_t b, int64_t a) {
      if (b < 0 || a < 0)
        return a < 0 && b >= 0;
      const T vb = p[b * inner], va = p[a * inner];
      if (MAX ? vb > va : vb < va)
        return true;
      return vb == va && (selectLast ? b > a : b < a);
    };
    int64_t best = -1;
    for (int64_t k = lane; k < len; k += 32) {
      const T v = p[k * inner];
      if (v == v && beats(k, best))
        best = k;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const int64_t other = __shfl_xor_sync(0xffffffffu, best, o);
      if (beats(other, best))
        best = other;
    }
    if (lane == 0) {
      const T first = p[0];
      out[r] = first == first ? best : 0;
    }
  }
}
#endif

/// ArgMax or ArgMin (MAX) of `rows` outputs over rows of `len` (hp_arg_reduce's
/// arguments): on the GPU a warp per output for rows of at least 32.
template <typename T, bool MAX>
static void hp_arg_reduce_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                 int64_t inner, int selectLast, const T *in,
                                 int64_t *out) {
#if HP_CUDA
  if (len >= 32) {
    hp_launch(ctx, hp_arg_reduce_warp<T, MAX>, rows * 32, len, inner,
              selectLast, in, out);
    return;
  }
#endif
  hp_launch(ctx, hp_arg_reduce<T, MAX>, rows, len, inner, selectLast, in, out);
}

/// Softmax or LogSoftmax over the middle axis of [outer, len, inner], with the
/// maximum subtracted first.
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax, int64_t len, int64_t inner, const T *in, T *out) {
  HP_FOR_W(r, len) {
    int64_t base = (r / inner) * len * inner + r % inner;
    Acc m = hp_lowest<Acc>();
    for (int64_t k = 0; k < len; ++k)
      m = hp_max(m, (Acc)in[base + k * inner]);
    Acc s = 0;
    for (int64_t k = 0; k < len; ++k)
      s += hp_exp((Acc)in[base + k * inner] - m);
    Acc ls = hp_log(s);
    for (int64_t k = 0; k < len; ++k) {
      Acc x = (Acc)in[base + k * inner] - m;
      out[base + k * inner] = (T)(LOG ? x - ls : hp_exp(x) / s);
    }
  }
}

/// The prologue of a LayerNormalization without one: it reads its X. The
/// generated code passes a functor of its own (a struct with `static const
/// bool any = true` and `HP_HD float operator()(int64_t i, int64_t k) const`,
/// the element at flat index i, k = i % len) for the elementwise group that
/// computes X, typically a residual Add (docs/codegen.md, "LayerNorm
/// prologues").
struct hp_pro_none {
  static const bool any = false;
  HP_HD float operator()(int64_t, int64_t) const { return 0.0f; }
};

/// LayerNormalization over the last `len` elements of each of hp_n rows:
/// y = (x - mean) / sqrt(var + eps) * scale + bias. scale and bias repeat
/// every scaleLen / biasLen elements (broadcast); bias may be null. Mean and
/// InvStdDev per row are written when their pointers are not null. With a
/// prologue (Pro::any), each row of x is first computed as pro's values and
/// stored (x is then writable; ONNX Runtime's SkipLayerNormalization does the
/// same for a residual Add): the row is still in cache when the statistics
/// read it.
template <typename T, typename S, typename Acc, typename Pro>
HP_KERNEL(hp_layer_norm, int64_t len, float eps, Pro pro, const T *x,
          const S *scale, int64_t scaleLen, const S *bias, int64_t biasLen,
          T *y, S *meanOut, S *invStdOut) {
  // scale and bias as long as the row (the usual case): no modulo per
  // element, and every loop vectorizes.
  const bool whole = scaleLen == len && (!bias || biasLen == len);
  HP_FOR_W(r, len) {
    if (Pro::any) {
      T *w = (T *)x + r * len;
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        w[k] = (T)pro(r * len + k, k);
    }
    const T *p = x + r * len;
    T *q = y + r * len;
    Acc mean = 0;
    HP_SIMD_REDUCE(+, mean)
    for (int64_t k = 0; k < len; ++k)
      mean += (Acc)p[k];
    mean /= (Acc)len;
    Acc var = 0;
    HP_SIMD_REDUCE(+, var)
    for (int64_t k = 0; k < len; ++k) {
      Acc d = (Acc)p[k] - mean;
      var += d * d;
    }
    var /= (Acc)len;
    Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    if (whole && bias) {
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        q[k] = (T)(((Acc)p[k] - mean) * inv * (Acc)scale[k] + (Acc)bias[k]);
    } else if (whole) {
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        q[k] = (T)(((Acc)p[k] - mean) * inv * (Acc)scale[k]);
    } else {
      for (int64_t k = 0; k < len; ++k) {
        Acc v = ((Acc)p[k] - mean) * inv * (Acc)scale[k % scaleLen];
        if (bias)
          v += (Acc)bias[k % biasLen];
        q[k] = (T)v;
      }
    }
    if (meanOut)
      meanOut[r] = (S)mean;
    if (invStdOut)
      invStdOut[r] = (S)inv;
  }
}

/// hp_softmax over contiguous rows (inner == 1) on the CPU: the maximum, the
/// sum of exponentials and the outputs as vector loops (hp_exp is
/// branch-free there). A NaN in a row makes the sum, and so every output of
/// the row, NaN, as in hp_softmax.
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_rows, int64_t len, const T *in, T *out) {
  HP_FOR_W(r, len) {
    const T *x = in + r * len;
    T *y = out + r * len;
    Acc m = hp_lowest<Acc>();
    HP_SIMD_REDUCE(max, m)
    for (int64_t k = 0; k < len; ++k)
      m = (Acc)x[k] > m ? (Acc)x[k] : m;
    Acc s = 0;
    HP_SIMD_REDUCE(+, s)
    for (int64_t k = 0; k < len; ++k)
      s += hp_exp((Acc)x[k] - m);
    if (LOG) {
      // (x - m) - log s, as hp_softmax: x - m is exact near the maximum,
      // where x - (m + log s) would round to m's last place.
      Acc ls = hp_log(s);
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        y[k] = (T)(((Acc)x[k] - m) - ls);
    } else {
      Acc inv = Acc(1) / s;
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        y[k] = (T)(hp_exp((Acc)x[k] - m) * inv);
    }
  }
}

#if HP_CUDA
/// Sum / maximum over the 32 lanes of a warp (every lane gets the result).
template <typename Acc> __device__ __forceinline__ Acc hp_warp_sum(Acc v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename Acc> __device__ __forceinline__ Acc hp_warp_max(Acc v) {
  for (int o = 16; o > 0; o >>= 1)
    v = hp_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename Acc> __device__ __forceinline__ Acc hp_warp_min(Acc v) {
  for (int o = 16; o > 0; o >>= 1)
    v = hp_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Whether hp_reduce_launch gives each output a warp on the GPU, for
/// reductions of at least 32 elements: floating sums (Sum, Mean, SumSquare,
/// L1, L2), and Max and Min of any type (exact in any order; NaN wins as in
/// the sequential hp_max/hp_min, and of a +0 and a -0 either may come out,
/// as in NumPy). Products and LogSumExp keep a thread per output (their
/// rounding stays the sequential one's).
template <typename Acc, int OP> static bool hp_reduce_by_warp(int64_t count) {
  const bool sum = OP == HP_RED_SUM || OP == HP_RED_MEAN ||
                   OP == HP_RED_SUMSQ || OP == HP_RED_L1 || OP == HP_RED_L2;
  return count >= 32 && ((sum && std::is_floating_point<Acc>::value) ||
                         OP == HP_RED_MAX || OP == HP_RED_MIN);
}

/// hp_reduce (same parameters) with one warp per output, for the sums of
/// hp_reduce_by_warp: iteration i is lane i % 32 of output i / 32, and lane
/// l adds the reduced elements l, l + 32, ... before hp_warp_sum combines
/// the lanes. A thread per output left the GPU mostly idle on reductions of
/// few long rows (Llama's RMSNorm: 32 x 16 rows of 64 at batch 32).
template <typename T, typename Acc, int OP>
HP_KERNEL(hp_reduce_warp, int keptRank, hp_dims keptDims, hp_dims keptStrides,
          int redRank, hp_dims redDims, hp_dims redStrides, int64_t redCount,
          const T *in, T *out) {
  HP_FOR(i) {
    const int64_t o = i >> 5;
    const int lane = (int)(i & 31);
    int64_t rem = o, base = 0;
    for (int d = keptRank - 1; d >= 0; --d) {
      base += (rem % keptDims.v[d]) * keptStrides.v[d];
      rem /= keptDims.v[d];
    }
    Acc acc = OP == HP_RED_MAX   ? hp_max_min_identity<T, Acc, true>()
              : OP == HP_RED_MIN ? hp_max_min_identity<T, Acc, false>()
                                 : Acc(0);
    for (int64_t r = lane; r < redCount; r += 32) {
      int64_t rr = r, off = base;
      for (int d = redRank - 1; d >= 0; --d) {
        off += (rr % redDims.v[d]) * redStrides.v[d];
        rr /= redDims.v[d];
      }
      const Acc x = (Acc)in[off];
      if (OP == HP_RED_MAX)
        acc = hp_max(acc, x);
      else if (OP == HP_RED_MIN)
        acc = hp_min(acc, x);
      else
        acc += OP == HP_RED_L1                         ? hp_abs(x)
               : OP == HP_RED_SUMSQ || OP == HP_RED_L2 ? x * x
                                                       : x;
    }
    acc = OP == HP_RED_MAX   ? hp_warp_max(acc)
          : OP == HP_RED_MIN ? hp_warp_min(acc)
                             : hp_warp_sum(acc);
    if (lane == 0) {
      if (OP == HP_RED_MEAN)
        acc = acc / (Acc)redCount;
      if (OP == HP_RED_L2)
        acc = (Acc)hp_sqrt((double)acc);
      out[o] = (T)acc;
    }
  }
}

/// hp_softmax with one warp per row: iteration i is lane i % 32 of row
/// i / 32 (the grid-stride step is a multiple of 32, so a warp's lanes
/// always share a row and every shuffle has all 32 lanes).
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_warp, int64_t len, int64_t inner, const T *in, T *out) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc m = hp_lowest<Acc>();
    for (int64_t k = lane; k < len; k += 32)
      m = hp_max(m, (Acc)in[base + k * inner]);
    m = hp_warp_max(m);
    Acc s = 0;
    for (int64_t k = lane; k < len; k += 32)
      s += hp_exp((Acc)in[base + k * inner] - m);
    s = hp_warp_sum(s);
    const Acc ls = hp_log(s);
    for (int64_t k = lane; k < len; k += 32) {
      Acc x = (Acc)in[base + k * inner] - m;
      out[base + k * inner] = (T)(LOG ? x - ls : hp_exp(x) / s);
    }
  }
}

/// hp_layer_norm with one warp per row (see hp_softmax_warp); a lane
/// computes and stores the prologue's elements it then reads.
template <typename T, typename S, typename Acc, typename Pro>
HP_KERNEL(hp_layer_norm_warp, int64_t len, float eps, Pro pro, const T *x,
          const S *scale, int64_t scaleLen, const S *bias, int64_t biasLen,
          T *y, S *meanOut, S *invStdOut) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const T *p = x + r * len;
    if (Pro::any)
      for (int64_t k = lane; k < len; k += 32)
        ((T *)p)[k] = (T)pro(r * len + k, k);
    Acc mean = 0;
    for (int64_t k = lane; k < len; k += 32)
      mean += (Acc)p[k];
    mean = hp_warp_sum(mean) / (Acc)len;
    Acc var = 0;
    for (int64_t k = lane; k < len; k += 32) {
      Acc d = (Acc)p[k] - mean;
      var += d * d;
    }
    var = hp_warp_sum(var) / (Acc)len;
    const Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    for (int64_t k = lane; k < len; k += 32) {
      Acc v = ((Acc)p[k] - mean) * inv * (Acc)scale[k % scaleLen];
      if (bias)
        v += (Acc)bias[k % biasLen];
      y[r * len + k] = (T)v;
    }
    if (lane == 0 && meanOut)
      meanOut[r] = (S)mean;
    if (lane == 0 && invStdOut)
      invStdOut[r] = (S)inv;
  }
}
#endif

/// Launches hp_reduce over n outputs, on the GPU as hp_reduce_warp where
/// hp_reduce_by_warp says so.
template <typename T, typename Acc, int OP>
static void hp_reduce_launch(hp_ctx *ctx, int64_t n, int keptRank,
                             hp_dims keptDims, hp_dims keptStrides, int redRank,
                             hp_dims redDims, hp_dims redStrides,
                             int64_t redCount, const T *in, T *out) {
#if HP_CUDA
  if (hp_reduce_by_warp<Acc, OP>(redCount)) {
    hp_launch(ctx, hp_reduce_warp<T, Acc, OP>, n * 32, keptRank, keptDims,
              keptStrides, redRank, redDims, redStrides, redCount, in, out);
    return;
  }
#endif
  hp_launch(ctx, hp_reduce<T, Acc, OP>, n, keptRank, keptDims, keptStrides,
            redRank, redDims, redStrides, redCount, in, out);
}

/// Softmax / LogSoftmax of `rows` rows: a warp per row on the GPU, a thread
/// per row on the CPU.
template <typename T, typename Acc, bool LOG>
static void hp_softmax_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                              int64_t inner, const T *in, T *out) {
#if HP_CUDA
  hp_launch(ctx, hp_softmax_warp<T, Acc, LOG>, rows * 32, len, inner, in, out);
#else
  if (inner == 1)
    hp_launch(ctx, hp_softmax_rows<T, Acc, LOG>, rows, len, in, out);
  else
    hp_launch(ctx, hp_softmax<T, Acc, LOG>, rows, len, inner, in, out);
#endif
}

/// LayerNormalization of `rows` rows: a warp per row on the GPU, a thread
/// per row on the CPU; `pro` computes x first (hp_pro_none: x is read).
template <typename T, typename S, typename Acc, typename Pro = hp_pro_none>
static void hp_layer_norm_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                 float eps, const T *x, const S *scale,
                                 int64_t scaleLen, const S *bias,
                                 int64_t biasLen, T *y, S *meanOut,
                                 S *invStdOut, Pro pro = Pro()) {
#if HP_CUDA
  hp_launch(ctx, hp_layer_norm_warp<T, S, Acc, Pro>, rows * 32, len, eps, pro,
            x, scale, scaleLen, bias, biasLen, y, meanOut, invStdOut);
#else
  hp_launch(ctx, hp_layer_norm<T, S, Acc, Pro>, rows, len, eps, pro, x, scale,
            scaleLen, bias, biasLen, y, meanOut, invStdOut);
#endif
}

//===----------------------------------------------------------------------===//
// Gradients of the row-wise normalizations: SoftmaxGrad, LogSoftmaxGrad and
// LayerNormalizationGrad (include/hetpar/Dialect/ONNX/ONNXOps.td has their
// formulas and sources). Rows as in the forward kernels above; sums in Acc,
// one rounding to T on the store.
//===----------------------------------------------------------------------===//

/// SoftmaxGrad (LOG false): dX = Y * (dY - sum(dY * Y)); LogSoftmaxGrad (LOG
/// true): dX = dY - exp(Y) * sum(dY); the sums along the middle axis of
/// [outer, len, inner], one row per iteration.
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_grad, int64_t len, int64_t inner, const T *dY, const T *Y,
          T *dX) {
  HP_FOR_W(r, 2 * len) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc s = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = base + k * inner;
      s += LOG ? (Acc)dY[i] : (Acc)dY[i] * (Acc)Y[i];
    }
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = base + k * inner;
      const Acc dy = (Acc)dY[i], y = (Acc)Y[i];
      dX[i] = (T)(LOG ? dy - hp_exp(y) * s : y * (dy - s));
    }
  }
}

/// The row statistics of LayerNormalization, computed as hp_layer_norm does
/// (two passes): mean and inv = 1 / sqrt(var + eps) of the len elements at p.
template <typename T, typename Acc>
HP_HD void hp_row_stats(const T *p, int64_t len, float eps, Acc &mean,
                        Acc &inv) {
  mean = 0;
  for (int64_t k = 0; k < len; ++k)
    mean += (Acc)p[k];
  mean /= (Acc)len;
  Acc var = 0;
  for (int64_t k = 0; k < len; ++k) {
    Acc d = (Acc)p[k] - mean;
    var += d * d;
  }
  var /= (Acc)len;
  inv = Acc(1) / hp_sqrt(var + (Acc)eps);
}

/// LayerNormalizationGrad, dX of each of hp_n rows of len elements: with the
/// row's mean and inv recomputed, xhat = (x - mean) * inv, g = dY * scale,
///   dX = inv * (g - sum(g) / len - xhat * sum(g * xhat) / len).
/// dX may be null (not used); stats, when not null, gets (mean, inv) per row
/// for hp_layer_norm_grad_cols.
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_layer_norm_grad_rows, int64_t len, float eps, const T *dY,
          const T *x, const S *scale, T *dX, Acc *stats) {
  HP_FOR_W(r, 6 * len) {
    const T *p = x + r * len;
    const T *g = dY + r * len;
    Acc mean, inv;
    hp_row_stats<T, Acc>(p, len, eps, mean, inv);
    if (dX) {
      Acc sg = 0, sgx = 0;
      for (int64_t k = 0; k < len; ++k) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        sg += gk;
        sgx += gk * (((Acc)p[k] - mean) * inv);
      }
      const Acc a = sg / (Acc)len, b = sgx / (Acc)len;
      for (int64_t k = 0; k < len; ++k) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        const Acc xh = ((Acc)p[k] - mean) * inv;
        dX[r * len + k] = (T)(inv * (gk - a - xh * b));
      }
    }
    if (stats) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = inv;
    }
  }
}

/// LayerNormalizationGrad, dScale = sum over rows of dY * xhat and dB = sum
/// over rows of dY, from the (mean, inv) pairs hp_layer_norm_grad_rows wrote:
/// one iteration per block of COLS columns (rows in order: deterministic, no
/// atomics). dScale or dBias may be null (not used).
template <typename T, typename S, typename Acc, int COLS>
HP_KERNEL(hp_layer_norm_grad_cols, int64_t rows, int64_t len, const T *dY,
          const T *x, const Acc *stats, S *dScale, S *dBias) {
  HP_FOR_W(blk, rows * COLS) {
    const int64_t c0 = blk * COLS;
    const int n = (int)(len - c0 < COLS ? len - c0 : COLS);
    Acc ds[COLS], db[COLS];
    for (int j = 0; j < COLS; ++j)
      ds[j] = db[j] = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const Acc mean = stats[2 * r], inv = stats[2 * r + 1];
      const int64_t o = r * len + c0;
      for (int j = 0; j < n; ++j) {
        const Acc dy = (Acc)dY[o + j];
        ds[j] += dy * (((Acc)x[o + j] - mean) * inv);
        db[j] += dy;
      }
    }
    for (int j = 0; j < n; ++j) {
      if (dScale)
        dScale[c0 + j] = (S)ds[j];
      if (dBias)
        dBias[c0 + j] = (S)db[j];
    }
  }
}

#if HP_CUDA
/// hp_softmax_grad with one warp per row (see hp_softmax_warp).
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_grad_warp, int64_t len, int64_t inner, const T *dY,
          const T *Y, T *dX) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc s = 0;
    for (int64_t k = lane; k < len; k += 32) {
      const int64_t e = base + k * inner;
      s += LOG ? (Acc)dY[e] : (Acc)dY[e] * (Acc)Y[e];
    }
    s = hp_warp_sum(s);
    for (int64_t k = lane; k < len; k += 32) {
      const int64_t e = base + k * inner;
      const Acc dy = (Acc)dY[e], y = (Acc)Y[e];
      dX[e] = (T)(LOG ? dy - hp_exp(y) * s : y * (dy - s));
    }
  }
}

/// hp_layer_norm_grad_rows with one warp per row (see hp_softmax_warp); the
/// statistics as hp_layer_norm_warp computes them.
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_layer_norm_grad_rows_warp, int64_t len, float eps, const T *dY,
          const T *x, const S *scale, T *dX, Acc *stats) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const T *p = x + r * len;
    const T *g = dY + r * len;
    Acc mean = 0;
    for (int64_t k = lane; k < len; k += 32)
      mean += (Acc)p[k];
    mean = hp_warp_sum(mean) / (Acc)len;
    Acc var = 0;
    for (int64_t k = lane; k < len; k += 32) {
      Acc d = (Acc)p[k] - mean;
      var += d * d;
    }
    var = hp_warp_sum(var) / (Acc)len;
    const Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    if (dX) {
      Acc sg = 0, sgx = 0;
      for (int64_t k = lane; k < len; k += 32) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        sg += gk;
        sgx += gk * (((Acc)p[k] - mean) * inv);
      }
      const Acc a = hp_warp_sum(sg) / (Acc)len;
      const Acc b = hp_warp_sum(sgx) / (Acc)len;
      for (int64_t k = lane; k < len; k += 32) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        const Acc xh = ((Acc)p[k] - mean) * inv;
        dX[r * len + k] = (T)(inv * (gk - a - xh * b));
      }
    }
    if (lane == 0 && stats) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = inv;
    }
  }
}
#endif

/// SoftmaxGrad / LogSoftmaxGrad of `rows` rows: a warp per row on the GPU, a
/// thread per row on the CPU.
template <typename T, typename Acc, bool LOG>
static void hp_softmax_grad_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                   int64_t inner, const T *dY, const T *Y,
                                   T *dX) {
#if HP_CUDA
  hp_launch(ctx, hp_softmax_grad_warp<T, Acc, LOG>, rows * 32, len, inner, dY,
            Y, dX);
#else
  hp_launch(ctx, hp_softmax_grad<T, Acc, LOG>, rows, len, inner, dY, Y, dX);
#endif
}

/// LayerNormalizationGrad of `rows` rows of `len` elements: the rows (dX and,
/// when dScale or dBias is wanted, the statistics into `stats`, 2 * rows
/// Acc), then the columns (dScale, dBias). A warp per row and a thread per
/// column on the GPU; a thread per row and per 16 columns on the CPU. Null
/// result pointers are results not computed.
template <typename T, typename S, typename Acc>
static void hp_layer_norm_grad_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                      float eps, const T *dY, const T *x,
                                      const S *scale, T *dX, S *dScale,
                                      S *dBias, Acc *stats) {
  const bool cols = dScale || dBias;
  if (len > 0 && (dX || cols)) {
#if HP_CUDA
    hp_launch(ctx, hp_layer_norm_grad_rows_warp<T, S, Acc>, rows * 32, len, eps,
              dY, x, scale, dX, cols ? stats : (Acc *)0);
#else
    hp_launch(ctx, hp_layer_norm_grad_rows<T, S, Acc>, rows, len, eps, dY, x,
              scale, dX, cols ? stats : (Acc *)0);
#endif
  }
  if (!cols)
    return;
#if HP_CUDA
  hp_launch(ctx, hp_layer_norm_grad_cols<T, S, Acc, 1>, len, rows, len, dY, x,
            (const Acc *)stats, dScale, dBias);
#else
  hp_launch(ctx, hp_layer_norm_grad_cols<T, S, Acc, 16>, (len + 15) / 16, rows,
            len, dY, x, (const Acc *)stats, dScale, dBias);
#endif
}

//===----------------------------------------------------------------------===//
// Losses: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their
// gradients, over x [N, C, D] (D = d1 * ... * dk: the class axis is strided by
// D) and labels [N, D]. A target position r = n * D + j reads x[n, :, j].
//===----------------------------------------------------------------------===//

/// The class a label reads. ONNX leaves a label outside [0, C) that is not
/// ignore_index undefined: hp_loss_rows reports it (hp_index_fault), and
/// clamping it to the nearest class keeps every read in bounds meanwhile.
HP_HD int64_t hp_loss_class(int64_t t, int64_t C) {
  return t < 0 ? 0 : (t >= C ? C - 1 : t);
}

/// One target position per iteration. SOFTMAX: x holds scores; the row's
/// log-softmax (maximum subtracted) is computed, and written to logProb when
/// that is not null; otherwise x holds log-probabilities. The position's loss
/// is -w * logp[label] with w = weight[label] (1 without weights), and 0 with
/// w = 0 when the label is ignore_index (hasIgnore). It goes to lossOut when
/// that is not null (reduction "none"), else loss and w go to rowLoss and
/// rowWeight for hp_loss_reduce. A label outside [0, C) that is not
/// ignore_index is reported as checked node `node`.
template <typename T, typename L, typename Acc, bool SOFTMAX>
HP_KERNEL(hp_loss_rows, int64_t C, int64_t D, int hasIgnore,
          int64_t ignoreIndex, const T *x, const L *labels, const T *weight,
          T *logProb, T *lossOut, Acc *rowLoss, Acc *rowWeight,
          hp_index_error *err, int node) {
  HP_FOR_W(r, SOFTMAX ? 3 * C : 1) {
    const int64_t base = (r / D) * C * D + r % D;
    const int64_t t = (int64_t)labels[r];
    const bool ignored = hasIgnore && t == ignoreIndex;
    if (!ignored && (t < 0 || t >= C))
      hp_index_fault(err, node, t, 0, C, r);
    const int64_t tc = hp_loss_class(t, C);
    Acc lp;
    if (SOFTMAX) {
      Acc m = hp_lowest<Acc>();
      for (int64_t k = 0; k < C; ++k)
        m = hp_max(m, (Acc)x[base + k * D]);
      Acc s = 0;
      for (int64_t k = 0; k < C; ++k)
        s += hp_exp((Acc)x[base + k * D] - m);
      const Acc ls = hp_log(s);
      if (logProb)
        for (int64_t k = 0; k < C; ++k)
          logProb[base + k * D] = (T)((Acc)x[base + k * D] - m - ls);
      lp = (Acc)x[base + tc * D] - m - ls;
    } else {
      lp = (Acc)x[base + tc * D];
    }
    const Acc w = ignored ? Acc(0) : (weight ? (Acc)weight[tc] : Acc(1));
    const Acc loss = ignored ? Acc(0) : -lp * w;
    if (lossOut) {
      lossOut[r] = (T)loss;
    } else {
      rowLoss[r] = loss;
      rowWeight[r] = w;
    }
  }
}

/// The "sum" (mean = 0) or "mean" of n per-position losses: the sum of the
/// losses divided by the sum of their weights (0/0 = NaN when every position
/// is ignored, as in PyTorch). One iteration: a sequential sum in double, the
/// same on every backend and run.
template <typename T, typename Acc>
HP_KERNEL(hp_loss_reduce, int64_t n, int mean, const Acc *rowLoss,
          const Acc *rowWeight, T *out) {
  HP_FOR(i) {
    double s = 0, w = 0;
    for (int64_t r = 0; r < n; ++r) {
      s += (double)rowLoss[r];
      w += (double)rowWeight[r];
    }
    out[0] = (T)(Acc)(mean ? s / w : s);
  }
}

/// The sum of the weights of the n positions not ignored (the "mean"
/// divisor of the gradients), into out[0]. One iteration.
template <typename T, typename L, typename Acc>
HP_KERNEL(hp_loss_weight_sum, int64_t n, int64_t C, int hasIgnore,
          int64_t ignoreIndex, const L *labels, const T *weight, Acc *out) {
  HP_FOR(i) {
    double w = 0;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t t = (int64_t)labels[r];
      if (hasIgnore && t == ignoreIndex)
        continue;
      w += weight ? (double)(Acc)weight[hp_loss_class(t, C)] : 1.0;
    }
    out[0] = (Acc)w;
  }
}

/// Gradient with respect to x [N, C, D], one element per iteration, with
/// g = dY[r] (dyPerRow, reduction "none") or dY[0], times w = weight[label],
/// divided by norm[0] when norm is not null ("mean"). SOFTMAX
/// (SoftmaxCrossEntropyLossGrad): g * (exp(logProb) - onehot(label));
/// otherwise (NegativeLogLikelihoodLossGrad): -g at the label, 0 elsewhere.
/// Positions whose label is ignore_index get 0.
template <typename T, typename L, typename Acc, bool SOFTMAX>
HP_KERNEL(hp_loss_grad, int64_t C, int64_t D, int hasIgnore,
          int64_t ignoreIndex, int dyPerRow, const T *dY, const T *logProb,
          const L *labels, const T *weight, const Acc *norm, T *dX) {
  HP_FOR(i) {
    const int64_t j = i % D, c = (i / D) % C, r = (i / (C * D)) * D + j;
    const int64_t t = (int64_t)labels[r];
    Acc v = 0;
    if (!(hasIgnore && t == ignoreIndex)) {
      const int64_t tc = hp_loss_class(t, C);
      Acc g = (Acc)dY[dyPerRow ? r : 0] * (weight ? (Acc)weight[tc] : Acc(1));
      if (norm)
        g = g / norm[0];
      const Acc onehot = c == tc ? Acc(1) : Acc(0);
      if (SOFTMAX)
        v = g * (hp_exp((Acc)logProb[i]) - onehot);
      else
        v = -g * onehot;
    }
    dX[i] = (T)v;
  }
}

/// InstanceNormalization: rows are (n, c) pairs of `len` spatial elements.
template <typename T, typename Acc>
HP_KERNEL(hp_instance_norm, int64_t channels, int64_t len, float eps,
          const T *x, const T *scale, const T *bias, T *y) {
  HP_FOR_W(r, len) {
    int64_t c = r % channels;
    const T *p = x + r * len;
    Acc mean = 0, var = 0;
    for (int64_t k = 0; k < len; ++k)
      mean += (Acc)p[k];
    mean /= (Acc)len;
    for (int64_t k = 0; k < len; ++k) {
      Acc d = (Acc)p[k] - mean;
      var += d * d;
    }
    var /= (Acc)len;
    Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    for (int64_t k = 0; k < len; ++k)
      y[r * len + k] =
          (T)(((Acc)p[k] - mean) * inv * (Acc)scale[c] + (Acc)bias[c]);
  }
}

/// BatchNormalization in training mode (ONNX opset 15) over x viewed as
/// [N, C, S] (S: the product of the spatial extents), one iteration per
/// channel c: the batch mean and the population variance (divided by N*S, as
/// ONNX's ReduceVar) of its N*S elements, then
///   y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c],
///   runMean[c] = inMean[c] * momentum + mean * (1 - momentum),
///   runVar[c]  = inVar[c] * momentum + var * (1 - momentum).
/// runMean / runVar may be null (no running statistics asked for); they may
/// alias inMean / inVar (each iteration reads its channel before writing it).
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_batch_norm_train, int64_t N, int64_t C, int64_t Sp, float eps,
          float momentum, const T *x, const S *scale, const S *bias,
          const S *inMean, const S *inVar, T *y, S *runMean, S *runVar) {
  HP_FOR_W(c, N * Sp) {
    const int64_t count = N * Sp;
    Acc mean = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < Sp; ++k)
        mean += (Acc)x[(n * C + c) * Sp + k];
    mean /= (Acc)count;
    Acc var = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < Sp; ++k) {
        Acc d = (Acc)x[(n * C + c) * Sp + k] - mean;
        var += d * d;
      }
    var /= (Acc)count;
    const Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    const Acc a = inv * (Acc)scale[c], b = (Acc)bias[c];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < Sp; ++k) {
        const int64_t i = (n * C + c) * Sp + k;
        y[i] = (T)(((Acc)x[i] - mean) * a + b);
      }
    const Acc m = (Acc)momentum;
    if (runMean)
      runMean[c] = (S)((Acc)inMean[c] * m + mean * (Acc(1) - m));
    if (runVar)
      runVar[c] = (S)((Acc)inVar[c] * m + var * (Acc(1) - m));
  }
}

#if HP_CUDA
/// hp_batch_norm_train with one warp per channel (see hp_softmax_warp).
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_batch_norm_train_warp, int64_t N, int64_t C, int64_t Sp, float eps,
          float momentum, const T *x, const S *scale, const S *bias,
          const S *inMean, const S *inVar, T *y, S *runMean, S *runVar) {
  HP_FOR(i) {
    const int64_t c = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t count = N * Sp;
    Acc mean = 0;
    for (int64_t j = lane; j < count; j += 32)
      mean += (Acc)x[((j / Sp) * C + c) * Sp + j % Sp];
    mean = hp_warp_sum(mean) / (Acc)count;
    Acc var = 0;
    for (int64_t j = lane; j < count; j += 32) {
      Acc d = (Acc)x[((j / Sp) * C + c) * Sp + j % Sp] - mean;
      var += d * d;
    }
    var = hp_warp_sum(var) / (Acc)count;
    const Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    const Acc a = inv * (Acc)scale[c], b = (Acc)bias[c];
    for (int64_t j = lane; j < count; j += 32) {
      const int64_t k = ((j / Sp) * C + c) * Sp + j % Sp;
      y[k] = (T)(((Acc)x[k] - mean) * a + b);
    }
    const Acc m = (Acc)momentum;
    if (lane == 0 && runMean)
      runMean[c] = (S)((Acc)inMean[c] * m + mean * (Acc(1) - m));
    if (lane == 0 && runVar)
      runVar[c] = (S)((Acc)inVar[c] * m + var * (Acc(1) - m));
  }
}
#endif

/// Training-mode BatchNormalization of C channels: a warp per channel on the
/// GPU, a thread per channel on the CPU.
template <typename T, typename S, typename Acc>
static void
hp_batch_norm_train_launch(hp_ctx *ctx, int64_t N, int64_t C, int64_t Sp,
                           float eps, float momentum, const T *x,
                           const S *scale, const S *bias, const S *inMean,
                           const S *inVar, T *y, S *runMean, S *runVar) {
#if HP_CUDA
  hp_launch(ctx, hp_batch_norm_train_warp<T, S, Acc>, C * 32, N, C, Sp, eps,
            momentum, x, scale, bias, inMean, inVar, y, runMean, runVar);
#else
  hp_launch(ctx, hp_batch_norm_train<T, S, Acc>, C, N, C, Sp, eps, momentum, x,
            scale, bias, inMean, inVar, y, runMean, runVar);
#endif
}

//===----------------------------------------------------------------------===//
// Random numbers: Philox4x32-10 and Dropout
//===----------------------------------------------------------------------===//

/// Four 32-bit words of a counter-based generator's output.
struct hp_u32x4 {
  uint32_t v[4];
};

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
/// easy as 1, 2, 3", SC 2011; Random123's philox4x32 with 10 rounds, the
/// generator of cuRAND's curand_Philox4x32_10 and PyTorch's CUDA dropout):
/// the 4 words for a 128-bit counter `ctr` and a 64-bit key (k0, k1). A pure
/// function of its arguments, compiled from this one definition for the CPU
/// and the GPU, so both backends draw the same numbers. Known answers
/// (Random123's tests/kat_vectors): counter 0, key 0 gives 6627e8d5 e169c58d
/// bc57ac4c 9b00dbd8.
HP_HD hp_u32x4 hp_philox4x32_10(hp_u32x4 ctr, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round) { // the Weyl key schedule, before rounds 2..10
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = (uint64_t)0xD2511F53u * ctr.v[0];
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr.v[2];
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    hp_u32x4 next = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    ctr = next;
  }
  return ctr;
}

/// The random words of Dropout: element i of a tensor takes word i % 4 of
/// hp_philox4x32_10(counter {g, g >> 32, step, step >> 32}, key {seed,
/// seed >> 32}) with g = i / 4, so the mask depends on the seed, the training
/// step and the element index only.
HP_HD hp_u32x4 hp_dropout_words(uint64_t seed, uint64_t step, uint64_t g) {
  hp_u32x4 ctr = {{(uint32_t)g, (uint32_t)(g >> 32), (uint32_t)step,
                   (uint32_t)(step >> 32)}};
  return hp_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/// The drop threshold of a ratio: an element is dropped when its word is
/// below ratio * 2^32 (exact in float, truncated), so it is dropped with
/// probability floor(ratio * 2^32) / 2^32; ratio <= 0 drops nothing and
/// ratio >= 1 everything.
HP_HD uint64_t hp_dropout_threshold(float ratio) {
  if (!(ratio > 0.0f))
    return 0;
  if (ratio >= 1.0f)
    return (uint64_t)1 << 32;
  return (uint64_t)(ratio * 4294967296.0f);
}

/// Dropout of n elements in training mode, one iteration per group of 4
/// elements (one Philox call): kept elements are y = x / (1 - ratio), dropped
/// ones 0, and mask (when not null) is true where kept. `step` (int64 device
/// scalar; null for 0) is the training step, `ratio` a device scalar (null
/// for ONNX's default 0.5) and `training` a device bool (null for true;
/// false makes y = x and the mask all true). The division is in Acc (float,
/// or double for double data), rounded once. The n elements are elements
/// [offset, offset + n) of a larger tensor (a data-parallel replica's rows;
/// 0 otherwise): element i takes the word of element offset + i, and the
/// iterations are the groups of 4 that cover them, from group offset / 4.
template <typename T, typename R, typename Acc>
HP_KERNEL(hp_dropout, int64_t n, int64_t offset, uint64_t seed,
          const int64_t *step, const R *ratio, const bool *training, const T *x,
          T *y, bool *mask) {
  HP_FOR(t) {
    const int64_t g = offset / 4 + (int64_t)t;
    const bool on = training ? *training : true;
    const float r = on ? (ratio ? (float)*ratio : 0.5f) : 0.0f;
    const uint64_t threshold = hp_dropout_threshold(r);
    const Acc keep = (Acc)(1.0f - r);
    const hp_u32x4 w =
        hp_dropout_words(seed, step ? (uint64_t)*step : 0, (uint64_t)g);
    for (int k = 0; k < 4; ++k) {
      const int64_t i = 4 * g + k - offset;
      if (i < 0)
        continue;
      if (i >= n)
        break;
      const bool kept = (uint64_t)w.v[k] >= threshold;
      y[i] = !on ? x[i] : (kept ? (T)((Acc)x[i] / keep) : (T)Acc(0));
      if (mask)
        mask[i] = kept;
    }
  }
}

/// CumSum along the middle axis of [outer, len, inner].
template <typename T, typename Acc>
HP_KERNEL(hp_cumsum, int64_t len, int64_t inner, int exclusive, int reverse,
          const T *in, T *out) {
  HP_FOR_W(r, len) {
    int64_t base = (r / inner) * len * inner + r % inner;
    Acc acc = 0;
    for (int64_t s = 0; s < len; ++s) {
      int64_t k = reverse ? len - 1 - s : s;
      Acc x = (Acc)in[base + k * inner];
      if (exclusive) {
        out[base + k * inner] = (T)acc;
        acc += x;
      } else {
        acc += x;
        out[base + k * inner] = (T)acc;
      }
    }
  }
}

#if HP_CUDA
/// hp_cumsum with one warp per row, for rows of at least 32 elements on the
/// GPU: iteration i is lane i % 32 of row i / 32; the warp takes the row 32
/// elements at a time (in the scan's order, from the end with `reverse`),
/// scans them with shuffles (Hillis-Steele) and adds the running total of
/// the chunks before. A thread per row ran the whole row alone (a position
/// ids CumSum over 2048 tokens: 2048 dependent additions). The sums are
/// grouped otherwise than the sequential loop's, so floating results may
/// differ from it in the last bits.
template <typename T, typename Acc>
HP_KERNEL(hp_cumsum_warp, int64_t len, int64_t inner, int exclusive,
          int reverse, const T *in, T *out) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc carry = 0;
    for (int64_t c = 0; c < len; c += 32) {
      const int64_t s = c + lane, k = reverse ? len - 1 - s : s;
      const Acc x = s < len ? (Acc)in[base + k * inner] : Acc(0);
      Acc scan = x;
      for (int o = 1; o < 32; o <<= 1) {
        const Acc up = __shfl_up_sync(0xffffffffu, scan, o);
        if (lane >= o)
          scan += up;
      }
      Acc before = __shfl_up_sync(0xffffffffu, scan, 1);
      if (lane == 0)
        before = 0;
      if (s < len)
        out[base + k * inner] = (T)(carry + (exclusive ? before : scan));
      carry += __shfl_sync(0xffffffffu, scan, 31);
    }
  }
}
#endif

/// CumSum along the middle axis of [outer, len, inner]: hp_cumsum, or on the
/// GPU hp_cumsum_warp for rows of at least 32 elements.
template <typename T, typename Acc>
static void hp_cumsum_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                             int64_t inner, int exclusive, int reverse,
                             const T *in, T *out) {
#if HP_CUDA
  if (len >= 32) {
    hp_launch(ctx, hp_cumsum_warp<T, Acc>, rows * 32, len, inner, exclusive,
              reverse, in, out);
    return;
  }
#endif
  hp_launch(ctx, hp_cumsum<T, Acc>, rows, len, inner, exclusive, reverse, in,
            out);
}

/// A pooling window's running result: the first maximum and its flat input
/// offset (a later element replaces it only when greater), or the sum and
/// the count of the positions that count for the average.
template <typename Acc, bool MAX> struct hp_pool_state {
  Acc acc = MAX ? hp_lowest<Acc>() : Acc(0);
  int64_t count = 0, best = -1;
  HP_HD void add(Acc v, int64_t at) {
    if (MAX) {
      if (best < 0 || v > acc) {
        acc = v;
        best = at;
      }
    } else {
      acc += v;
    }
    ++count;
  }
  template <typename T>
  HP_HD void store(T *out, int64_t *indices, int64_t o) const {
    if (MAX) {
      out[o] = (T)acc;
      if (indices)
        indices[o] = best;
    } else {
      out[o] = (T)(count ? acc / (Acc)count : Acc(0));
    }
  }
};

/// The window positions kd in [*first, *end) of [0, k) whose coordinates
/// start + kd * dil (dil > 0) lie in [lo, hi); an empty range (first ==
/// end) when none does. The pooling kernels visit these alone, so that a
/// window much larger than its input (a SAME-padded kernel of up to 2^31
/// positions, which shape inference allows) costs what the input holds, not
/// what the window spans: visited one by one, 40000 x 40000 positions per
/// output of an 8 x 8 input ran for hours.
HP_HD void hp_window_span(int64_t start, int64_t dil, int64_t k, int64_t lo,
                          int64_t hi, int64_t *first, int64_t *end) {
  const int64_t a = lo - start, b = hi - 1 - start;
  const int64_t f = a <= 0 ? 0 : (a + dil - 1) / dil;
  int64_t e = b < 0 ? 0 : b / dil + 1;
  e = e < k ? e : k;
  *first = f < e ? f : e;
  *end = e;
}

/// Adds to `st` the positions of output window `o` that lie inside the
/// input (`in`: one plane; `base` + the flat offset in it is what a maximum
/// records), in row-major kernel order, the order that decides which of
/// equal maxima is the first; only hp_window_span's ranges are visited.
template <typename T, typename Acc, bool MAX>
HP_HD void hp_pool_window(int nsp, const hp_dims &inSp, const hp_dims &kernel,
                          const hp_dims &stride, const hp_dims &padBegin,
                          const hp_dims &dilation, const int64_t *o,
                          const T *in, int64_t base,
                          hp_pool_state<Acc, MAX> &st) {
  int64_t start[HP_MAX_RANK], first[HP_MAX_RANK], end[HP_MAX_RANK],
      kc[HP_MAX_RANK];
  for (int d = 0; d < nsp; ++d) {
    start[d] = o[d] * stride.v[d] - padBegin.v[d];
    hp_window_span(start[d], dilation.v[d], kernel.v[d], 0, inSp.v[d],
                   &first[d], &end[d]);
    if (first[d] == end[d])
      return;
    kc[d] = first[d];
  }
  for (;;) {
    int64_t flat = 0;
    for (int d = 0; d < nsp; ++d)
      flat = flat * inSp.v[d] + start[d] + kc[d] * dilation.v[d];
    st.add((Acc)in[flat], base + flat);
    int d = nsp - 1;
    for (; d >= 0 && ++kc[d] == end[d]; --d)
      kc[d] = first[d];
    if (d < 0)
      return;
  }
}

/// The number of positions of output window `o` inside the input, or with
/// `padded` inside the padded extent [-padBegin, in + padEnd): a box, so a
/// product over the dims. What an average divides by.
HP_HD int64_t hp_window_count(int nsp, const hp_dims &inSp,
                              const hp_dims &kernel, const hp_dims &stride,
                              const hp_dims &padBegin, const hp_dims &padEnd,
                              const hp_dims &dilation, const int64_t *o,
                              bool padded) {
  int64_t count = 1;
  for (int d = 0; d < nsp; ++d) {
    int64_t first, end;
    hp_window_span(o[d] * stride.v[d] - padBegin.v[d], dilation.v[d],
                   kernel.v[d], padded ? -padBegin.v[d] : 0,
                   padded ? inSp.v[d] + padEnd.v[d] : inSp.v[d], &first, &end);
    count *= end - first;
  }
  return count;
}

/// Pooling over `nsp` spatial dims of [N*C, spatial...]: MAX=true takes the
/// maximum (and its flat index when indices is not null), else the average.
/// Windows start at out*stride - padBegin and step by dilation; positions
/// outside [0, in) are skipped (max, average without count_include_pad) or
/// counted when inside the padded extent [-padBegin, in + padEnd)
/// (count_include_pad=1).
template <typename T, typename Acc, bool MAX>
HP_KERNEL(hp_pool, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
          int countIncludePad, int64_t kernelCount, int64_t inPlane,
          int64_t outPlane, const T *in, T *out, int64_t *indices) {
  HP_FOR_W(i, kernelCount) {
    int64_t plane = i / outPlane, rem = i % outPlane, o[HP_MAX_RANK];
    for (int d = nsp - 1; d >= 0; --d) {
      o[d] = rem % outSp.v[d];
      rem /= outSp.v[d];
    }
    hp_pool_state<Acc, MAX> st;
    hp_pool_window<T, Acc, MAX>(nsp, inSp, kernel, stride, padBegin, dilation,
                                o, in + plane * inPlane, plane * inPlane, st);
    if (!MAX && countIncludePad)
      st.count = hp_window_count(nsp, inSp, kernel, stride, padBegin, padEnd,
                                 dilation, o, true);
    st.store(out, indices, i);
  }
}

/// The widest input span (elements) hp_max_pool_columns folds on the stack.
#define HP_POOL_FOLD_MAX 2048

/// Max pooling of the output columns [lo, hi) of one output row, whose
/// windows lie inside the input along the row, as vector loops, separably:
/// first the window rows are folded into one row (a unit-stride pass per
/// window row), then the window columns of the folded row (a strided pass
/// per window column): kH + kW passes instead of kH x kW strided ones. `plane`
/// is the input plane; window row 0 starts at input row h0. Returns false,
/// writing nothing, when every window row is outside the input, when the
/// span is wider than HP_POOL_FOLD_MAX, or when the rows hold a NaN: the
/// caller's loop, in hp_pool's order (the first position seeding the
/// maximum, only a greater value replacing it), then gives the NaN rule
/// exactly. Without NaNs the maximum does not depend on the order, and the
/// loops stay plain maxima (a NaN test per step in them made ResNet-18/8's
/// pooling at batch 32 slower than kH x kW passes).
template <typename T, typename Acc>
static bool hp_max_pool_columns(const T *plane, int64_t inH, int64_t inW,
                                int64_t h0, int64_t kH, int64_t kW, int64_t sW,
                                int64_t dH, int64_t dW, int64_t pW, int64_t lo,
                                int64_t hi, T *out) {
  // The input columns [c0, c0 + n) that the windows of [lo, hi) read.
  const int64_t c0 = lo * sW - pW;
  const int64_t n = (hi - 1) * sW - pW + (kW - 1) * dW + 1 - c0;
  if (n > HP_POOL_FOLD_MAX)
    return false;
  T fold[HP_POOL_FOLD_MAX];
  bool seeded = false;
  int nan = 0;
  for (int64_t kh = 0; kh < kH; ++kh) {
    const int64_t ih = h0 + kh * dH;
    if (ih < 0 || ih >= inH)
      continue;
    const T *src = plane + ih * inW + c0;
    if (!seeded) {
      HP_SIMD
      for (int64_t i = 0; i < n; ++i) {
        const Acc v = (Acc)src[i];
        fold[i] = src[i];
        nan |= v != v;
      }
      seeded = true;
      continue;
    }
    HP_SIMD
    for (int64_t i = 0; i < n; ++i) {
      const Acc v = (Acc)src[i], a = (Acc)fold[i];
      fold[i] = (T)(v > a ? v : a);
      nan |= v != v;
    }
  }
  if (!seeded || nan)
    return false;
  HP_SIMD
  for (int64_t ow = lo; ow < hi; ++ow)
    out[ow] = fold[(ow - lo) * sW];
  for (int64_t kw = 1; kw < kW; ++kw) {
    const T *col = fold + kw * dW;
    HP_SIMD
    for (int64_t ow = lo; ow < hi; ++ow) {
      const Acc v = (Acc)col[(ow - lo) * sW], a = (Acc)out[ow];
      out[ow] = (T)(v > a ? v : a);
    }
  }
  return true;
}

/// hp_pool over two spatial dims on the CPU: one iteration per output row
/// (plane, oh), window positions by compares, no division per element (the
/// generic kernel's four per window element were a quarter of ResNet-18/8's
/// time); max pooling without indices takes the columns whose windows lie
/// inside the row as separable vector loops (hp_max_pool_columns: ResNet-18/8's
/// 3 x 3 stride-2 pooling took 9% of its batch-32 run one output at a time).
/// The window is visited in hp_pool's order, so results and indices are the
/// same.
template <typename T, typename Acc, bool MAX>
HP_KERNEL(hp_pool2d_rows, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
          int countIncludePad, const T *in, T *out, int64_t *indices) {
  const int64_t inH = inSp.v[0], inW = inSp.v[1], outH = outSp.v[0],
                outW = outSp.v[1], kH = kernel.v[0], kW = kernel.v[1];
  // The columns whose windows lie inside the input along the row:
  // w0 = ow * sW - pW >= 0 and w0 + (kW - 1) * dW < inW.
  const int64_t sW = stride.v[1], pW = padBegin.v[1];
  const int64_t lastStart = inW - 1 - (kW - 1) * dilation.v[1] + pW;
  const int64_t colsLo = (pW + sW - 1) / sW;
  int64_t colsHi = lastStart < 0 ? 0 : lastStart / sW + 1;
  colsHi = colsHi < outW ? colsHi : outW;
  colsHi = colsHi > colsLo ? colsHi : colsLo;
  HP_FOR_W(row, outW * kH * kW) {
    const int64_t plane = row / outH, oh = row % outH;
    const int64_t planeOff = plane * inH * inW;
    const int64_t h0 = oh * stride.v[0] - padBegin.v[0];
    const bool rowsInside =
        h0 >= 0 && h0 + (kH - 1) * dilation.v[0] < inH && kH > 0 && kW > 0;
    const bool vectorized =
        MAX && !indices && colsHi > colsLo && kW > 0 &&
        hp_max_pool_columns<T, Acc>(in + planeOff, inH, inW, h0, kH, kW, sW,
                                    dilation.v[0], dilation.v[1], pW, colsLo,
                                    colsHi, out + row * outW);
    for (int64_t ow = 0; ow < outW; ++ow) {
      if (vectorized && ow == colsLo)
        ow = colsHi;
      if (ow >= outW)
        break;
      const int64_t w0 = ow * stride.v[1] - padBegin.v[1];
      const int64_t o = row * outW + ow;
      if (MAX && !indices && rowsInside && w0 >= 0 &&
          w0 + (kW - 1) * dilation.v[1] < inW) {
        // The whole window inside: no bounds tests. The first element
        // seeds the maximum and only a greater one replaces it, as below.
        const T *p = in + planeOff + h0 * inW + w0;
        Acc acc = (Acc)p[0];
        for (int64_t kh = 0; kh < kH; ++kh, p += dilation.v[0] * inW)
          for (int64_t kw = 0; kw < kW; ++kw) {
            const Acc v = (Acc)p[kw * dilation.v[1]];
            acc = v > acc ? v : acc;
          }
        out[o] = (T)acc;
        continue;
      }
      // The window's rows and columns inside the input (hp_window_span),
      // in hp_pool's order.
      hp_pool_state<Acc, MAX> st;
      int64_t h1, h2, w1, w2;
      hp_window_span(h0, dilation.v[0], kH, 0, inH, &h1, &h2);
      hp_window_span(w0, dilation.v[1], kW, 0, inW, &w1, &w2);
      for (int64_t kh = h1; kh < h2; ++kh) {
        const int64_t ih = h0 + kh * dilation.v[0];
        for (int64_t kw = w1; kw < w2; ++kw) {
          const int64_t at = planeOff + ih * inW + w0 + kw * dilation.v[1];
          st.add((Acc)in[at], at);
        }
      }
      if (!MAX && countIncludePad) {
        const int64_t oc[2] = {oh, ow};
        st.count = hp_window_count(2, inSp, kernel, stride, padBegin, padEnd,
                                   dilation, oc, true);
      }
      st.store(out, indices, o);
    }
  }
}

/// im2col for one image of a grouped convolution: cols[(c*kernelCount + k),
/// p] = x[c, p*stride - pad + k*dilation] (0 outside), c over `channels`
/// channels, p over the output positions.
template <typename T>
HP_KERNEL(hp_im2col, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          T *cols) {
  HP_FOR(i) {
    int64_t p = i % outPlane, row = i / outPlane;
    int64_t k = row % kernelCount, c = row / kernelCount;
    int64_t flat = 0, mul = 1;
    bool inside = true;
    int64_t pr = p, kr = k;
    for (int d = nsp - 1; d >= 0; --d) {
      int64_t oc = pr % outSp.v[d];
      pr /= outSp.v[d];
      int64_t kc = kr % kernel.v[d];
      kr /= kernel.v[d];
      int64_t ic = oc * stride.v[d] - padBegin.v[d] + kc * dilation.v[d];
      if (ic < 0 || ic >= inSp.v[d])
        inside = false;
      flat += ic * mul;
      mul *= inSp.v[d];
    }
    cols[i] = inside ? x[c * inPlane + flat] : T(0);
  }
}

/// im2col of one image on the CPU: one iteration per (channel, kernel
/// position), which walks the output's rows with a counter and fills each
/// row of outSp[last] columns: the kernel coordinates and the row's padded
/// extent are computed once per iteration, and a row costs no division
/// (divisions per row were most of ResNet-18/8's time), and no branch per
/// element; at stride 1 a row is a memcpy.
template <typename T>
HP_KERNEL(hp_im2col_rows, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          T *cols) {
  const int last = nsp - 1;
  const int64_t width = outSp.v[last];
  const int64_t rows = outPlane / width;
  HP_FOR_W(rk, outPlane) {
    int64_t k = rk % kernelCount, c = rk / kernelCount;
    // Kernel coordinates, innermost last.
    int64_t kc[HP_MAX_RANK], kr = k;
    for (int d = last; d >= 0; --d) {
      kc[d] = kr % kernel.v[d];
      kr /= kernel.v[d];
    }
    // The columns [lo, hi) of a row that read inside the input (start +
    // ow * step in [0, n)); the padding on either side is zero.
    int64_t start = kc[last] * dilation.v[last] - padBegin.v[last];
    int64_t step = stride.v[last], n = inSp.v[last];
    int64_t lo = start >= 0 ? 0 : (step - 1 - start) / step;
    int64_t hi = start >= n ? 0 : (n - start + step - 1) / step;
    lo = lo < width ? lo : width;
    hi = hi < width ? hi : width;
    hi = hi > lo ? hi : lo;
    const T *plane = x + c * inPlane;
    T *dst = cols + rk * outPlane;
    int64_t oc[HP_MAX_RANK] = {0}; // the row's outer output coordinates
    for (int64_t row = 0; row < rows; ++row, dst += width) {
      int64_t base = 0, mul = n;
      bool inside = true;
      for (int d = last - 1; d >= 0; --d) {
        int64_t ic =
            oc[d] * stride.v[d] - padBegin.v[d] + kc[d] * dilation.v[d];
        inside = inside && ic >= 0 && ic < inSp.v[d];
        base += ic * mul;
        mul *= inSp.v[d];
      }
      int64_t rowLo = inside ? lo : width, rowHi = inside ? hi : width;
      const T *src = plane + base; // read at start + ow * step >= 0
      for (int64_t ow = 0; ow < rowLo; ++ow)
        dst[ow] = T(0);
      if (step == 1 && rowHi > rowLo)
        memcpy(dst + rowLo, src + start + rowLo, (rowHi - rowLo) * sizeof(T));
      else
        for (int64_t ow = rowLo; ow < rowHi; ++ow)
          dst[ow] = src[start + ow * step];
      for (int64_t ow = rowHi; ow < width; ++ow)
        dst[ow] = T(0);
      for (int d = last - 1; d >= 0; --d) {
        if (++oc[d] < outSp.v[d])
          break;
        oc[d] = 0;
      }
    }
  }
}

/// Writes the output columns [a, b) of one im2col row to dst[0, b - a):
/// column ow reads src[start + ow * step] where ow is in [lo, hi) (the
/// columns whose input lies inside the row), and is zero elsewhere. Stride 1
/// and 2 (the usual convolutions) are loops the compiler vectorizes.
template <typename T>
static inline void
hp_im2col_span(T *__restrict__ dst, const T *__restrict__ src, int64_t a,
               int64_t b, int64_t lo, int64_t hi, int64_t start, int64_t step) {
  lo = lo < a ? a : lo > b ? b : lo;
  hi = hi < lo ? lo : hi > b ? b : hi;
  dst -= a;
  for (int64_t ow = a; ow < lo; ++ow)
    dst[ow] = T(0);
  const T *from = src + start;
  if (step == 1) {
    HP_SIMD
    for (int64_t ow = lo; ow < hi; ++ow)
      dst[ow] = from[ow];
  } else if (step == 2) {
    HP_SIMD
    for (int64_t ow = lo; ow < hi; ++ow)
      dst[ow] = from[2 * ow];
  } else {
    for (int64_t ow = lo; ow < hi; ++ow)
      dst[ow] = from[ow * step];
  }
  for (int64_t ow = hi; ow < b; ++ow)
    dst[ow] = T(0);
}

/// im2col of one image with two spatial dims on the CPU: one iteration per
/// (channel, kh, kw) row block; the valid columns of the block's rows once,
/// each output row a bounds test and hp_im2col_span. The rank-generic
/// hp_im2col_rows spent most of its time on per-row index arithmetic and a
/// scalar strided copy (ResNet-18/8's stride-2 stem was 40% of its run).
template <typename T>
HP_KERNEL(hp_im2col2d_rows, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          T *cols) {
  const int64_t inH = inSp.v[0], inW = inSp.v[1];
  const int64_t outH = outSp.v[0], width = outSp.v[1];
  const int64_t kW = kernel.v[1], step = stride.v[1];
  HP_FOR_W(rk, outPlane) {
    const int64_t k = rk % kernelCount, c = rk / kernelCount;
    const int64_t kh = k / kW, kw = k % kW;
    // The columns [lo, hi) that read inside the input row.
    const int64_t start = kw * dilation.v[1] - padBegin.v[1];
    int64_t lo = start >= 0 ? 0 : (step - 1 - start) / step;
    int64_t hi = start >= inW ? 0 : (inW - start + step - 1) / step;
    lo = lo < width ? lo : width;
    hi = hi < width ? hi : width;
    const T *plane = x + c * inPlane;
    T *dst = cols + rk * outPlane;
    for (int64_t oh = 0; oh < outH; ++oh, dst += width) {
      const int64_t ih = oh * stride.v[0] - padBegin.v[0] + kh * dilation.v[0];
      if (ih < 0 || ih >= inH)
        hp_im2col_span(dst, plane, 0, width, width, width, 0, step);
      else
        hp_im2col_span(dst, plane + ih * inW, 0, width, lo, hi, start, step);
    }
  }
}

/// im2col of one image: one thread per element on the GPU, one iteration
/// per row of output columns on the CPU.
template <typename T>
static void hp_im2col_launch(hp_ctx *ctx, int nsp, hp_dims inSp, hp_dims outSp,
                             hp_dims kernel, hp_dims stride, hp_dims padBegin,
                             hp_dims dilation, int64_t channels,
                             int64_t kernelCount, int64_t inPlane,
                             int64_t outPlane, const T *x, T *cols) {
#if HP_CUDA
  hp_launch(ctx, hp_im2col<T>, channels * kernelCount * outPlane, nsp, inSp,
            outSp, kernel, stride, padBegin, dilation, kernelCount, inPlane,
            outPlane, x, cols);
#else
  if (nsp == 2)
    hp_launch(ctx, hp_im2col2d_rows<T>, channels * kernelCount, inSp, outSp,
              kernel, stride, padBegin, dilation, kernelCount, inPlane,
              outPlane, x, cols);
  else
    hp_launch(ctx, hp_im2col_rows<T>, channels * kernelCount, nsp, inSp, outSp,
              kernel, stride, padBegin, dilation, kernelCount, inPlane,
              outPlane, x, cols);
#endif
}

//===----------------------------------------------------------------------===//
// Gradients of the windowed ops (ConvGrad, MaxPoolGrad, AveragePoolGrad).
// Each is a gather: one iteration per input element sums, in a fixed order,
// what the windows holding it contribute, so there are no atomics and the CPU
// and the GPU add in the same order.
//===----------------------------------------------------------------------===//

/// The output window `o` (per spatial dim) whose kernel position `k` lands on
/// input coordinates `ic`: false when there is none (the distance is not a
/// multiple of the stride, or the window is outside the output). `flat` gets
/// the window's offset inside the output plane.
HP_HD bool hp_window_of(int nsp, const hp_dims &outSp, const hp_dims &kernel,
                        const hp_dims &stride, const hp_dims &padBegin,
                        const hp_dims &dilation, const int64_t *ic, int64_t k,
                        int64_t *o, int64_t *flat) {
  int64_t f = 0, mul = 1;
  for (int d = nsp - 1; d >= 0; --d) {
    int64_t kd = k % kernel.v[d];
    k /= kernel.v[d];
    int64_t num = ic[d] + padBegin.v[d] - kd * dilation.v[d];
    if (num < 0 || num % stride.v[d] != 0)
      return false;
    int64_t od = num / stride.v[d];
    if (od >= outSp.v[d])
      return false;
    o[d] = od;
    f += od * mul;
    mul *= outSp.v[d];
  }
  *flat = f;
  return true;
}

/// The kernel positions that may land input coordinates `ic` in an output
/// window, in row-major kernel order (hp_window_of's k): per dim those of
/// hp_window_span's range where ic + padBegin - kd * dilation lies in
/// [0, (out - 1) * stride]. The gradients of pooling and im2col try these
/// alone (hp_window_of still checks the stride), so a kernel far larger
/// than the input costs what the output holds, not what the window spans.
struct hp_windows_over {
  int nsp;
  int64_t first[HP_MAX_RANK], end[HP_MAX_RANK], kd[HP_MAX_RANK];
  bool more = true;
  HP_HD hp_windows_over(int nsp, const hp_dims &outSp, const hp_dims &kernel,
                        const hp_dims &stride, const hp_dims &padBegin,
                        const hp_dims &dilation, const int64_t *ic)
      : nsp(nsp) {
    for (int d = 0; d < nsp; ++d) {
      const int64_t at = ic[d] + padBegin.v[d];
      hp_window_span(0, dilation.v[d], kernel.v[d],
                     at - (outSp.v[d] - 1) * stride.v[d], at + 1, &first[d],
                     &end[d]);
      more = more && first[d] < end[d];
      kd[d] = first[d];
    }
  }
  /// The current position as one flat index over the kernel.
  HP_HD int64_t k(const hp_dims &kernel) const {
    int64_t flat = 0;
    for (int d = 0; d < nsp; ++d)
      flat = flat * kernel.v[d] + kd[d];
    return flat;
  }
  HP_HD void next() {
    int d = nsp - 1;
    for (; d >= 0 && ++kd[d] == end[d]; --d)
      kd[d] = first[d];
    more = d >= 0;
  }
};

/// Coordinates of flat offset `flat` in a plane of extents `sp`.
HP_HD void hp_unflatten(int nsp, const hp_dims &sp, int64_t flat, int64_t *c) {
  for (int d = nsp - 1; d >= 0; --d) {
    c[d] = flat % sp.v[d];
    flat /= sp.v[d];
  }
}

/// col2im of one image of a grouped convolution (the inverse gather of
/// hp_im2col): x[c, i] = sum over kernel positions k, in order, of
/// cols[(c*kernelCount + k), p] for the output position p whose window puts
/// k on i. One iteration per element of x (channels * inPlane).
template <typename T, typename Acc>
HP_KERNEL(hp_col2im, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *cols,
          T *x) {
  HP_FOR_W(i, kernelCount) {
    int64_t c = i / inPlane, ic[HP_MAX_RANK], o[HP_MAX_RANK], p;
    hp_unflatten(nsp, inSp, i % inPlane, ic);
    Acc acc = Acc(0);
    for (hp_windows_over w(nsp, outSp, kernel, stride, padBegin, dilation, ic);
         w.more; w.next()) {
      const int64_t k = w.k(kernel);
      if (hp_window_of(nsp, outSp, kernel, stride, padBegin, dilation, ic, k, o,
                       &p))
        acc += (Acc)cols[(c * kernelCount + k) * outPlane + p];
    }
    x[i] = (T)acc;
  }
}

/// The flat offset in its plane of the first maximum of output window `o`
/// (hp_pool_state's rule, over positions in row-major kernel order, as
/// hp_pool visits them), or -1 when the window holds no element.
template <typename T, typename Acc>
HP_HD int64_t hp_window_argmax(int nsp, const hp_dims &inSp,
                               const hp_dims &kernel, const hp_dims &stride,
                               const hp_dims &padBegin, const hp_dims &dilation,
                               const int64_t *o, const T *in) {
  hp_pool_state<Acc, true> st;
  hp_pool_window<T, Acc, true>(nsp, inSp, kernel, stride, padBegin, dilation, o,
                               in, 0, st);
  return st.best;
}

/// MaxPool's gradient: dx[i] = sum of dy over the windows whose first maximum
/// is element i (the maxima recomputed from x). One iteration per element of
/// x, viewed as [N*C, spatial...].
template <typename T, typename Acc>
HP_KERNEL(hp_maxpool_grad, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          const T *dy, T *dx) {
  HP_FOR_W(i, kernelCount * kernelCount) {
    int64_t plane = i / inPlane, self = i % inPlane;
    int64_t ic[HP_MAX_RANK], o[HP_MAX_RANK], p;
    hp_unflatten(nsp, inSp, self, ic);
    Acc acc = Acc(0);
    for (hp_windows_over w(nsp, outSp, kernel, stride, padBegin, dilation, ic);
         w.more; w.next())
      if (hp_window_of(nsp, outSp, kernel, stride, padBegin, dilation, ic,
                       w.k(kernel), o, &p) &&
          hp_window_argmax<T, Acc>(nsp, inSp, kernel, stride, padBegin,
                                   dilation, o, x + plane * inPlane) == self)
        acc += (Acc)dy[plane * outPlane + p];
    dx[i] = (T)acc;
  }
}

/// AveragePool's gradient: dx[i] = sum over the windows holding element i of
/// dy / count, count being what hp_pool divides by: the window's positions
/// inside x, or inside the padded extent [-padBegin, in + padEnd) with
/// countIncludePad (a box, so a product over the dims).
template <typename T, typename Acc>
HP_KERNEL(hp_avgpool_grad, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
          int countIncludePad, int64_t kernelCount, int64_t inPlane,
          int64_t outPlane, const T *dy, T *dx) {
  HP_FOR_W(i, kernelCount * nsp) {
    int64_t plane = i / inPlane, ic[HP_MAX_RANK], o[HP_MAX_RANK], p;
    hp_unflatten(nsp, inSp, i % inPlane, ic);
    Acc acc = Acc(0);
    for (hp_windows_over w(nsp, outSp, kernel, stride, padBegin, dilation, ic);
         w.more; w.next()) {
      if (!hp_window_of(nsp, outSp, kernel, stride, padBegin, dilation, ic,
                        w.k(kernel), o, &p))
        continue;
      const int64_t count =
          hp_window_count(nsp, inSp, kernel, stride, padBegin, padEnd, dilation,
                          o, countIncludePad != 0);
      acc += (Acc)dy[plane * outPlane + p] / (Acc)count;
    }
    dx[i] = (T)acc;
  }
}

/// Pad: constant (mode 0), reflect (1), edge (2) or wrap (3).
template <typename T>
HP_KERNEL(hp_pad, int rank, int mode, hp_dims outDims, hp_dims inDims,
          hp_dims padBegin, const T *in, const T *value, T *out) {
  HP_FOR(i) {
    int64_t rem = i, off = 0, mul = 1;
    bool inside = true;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rem % outDims.v[d] - padBegin.v[d];
      rem /= outDims.v[d];
      int64_t n = inDims.v[d];
      if (c < 0 || c >= n) {
        if (mode == 0 || n == 0) {
          inside = false;
        } else if (mode == 1) {
          int64_t period = 2 * (n - 1);
          if (period == 0) {
            c = 0;
          } else {
            c = c % period;
            if (c < 0)
              c += period;
            if (c >= n)
              c = period - c;
          }
        } else if (mode == 2) {
          c = c < 0 ? 0 : n - 1;
        } else {
          c = ((c % n) + n) % n;
        }
      }
      off += c * mul;
      mul *= n;
    }
    out[i] = inside ? in[off] : (value ? *value : T(0));
  }
}

/// Trilu on [batch, rows, cols]: keeps j - i >= k (upper) or j - i <= k; k
/// is `kConst`, or *kPtr when kPtr is not null (a graph input).
template <typename T, typename K>
HP_KERNEL(hp_trilu, int64_t rows, int64_t cols, int64_t kConst, const K *kPtr,
          int upper, const T *in, T *out) {
  HP_FOR(i) {
    int64_t k = kPtr ? (int64_t)*kPtr : kConst;
    int64_t j = i % cols, r = (i / cols) % rows;
    bool keep = upper ? (j - r >= k) : (j - r <= k);
    out[i] = keep ? in[i] : T(0);
  }
}

/// A float scalar of Gemm (alpha, beta) as the accumulator type: through
/// int64 for integer accumulators, so that a negative one is the modular
/// negation for unsigned ones (a negative float converted to uint64 is
/// undefined: 0 on the GPU).
template <typename Acc> HP_HD Acc hp_acc_scalar(float v) {
  return std::is_integral<Acc>::value ? (Acc)(int64_t)v : (Acc)v;
}

/// Plain GEMM for element types without a BLAS routine (integers; float16
/// and bfloat16 on the CPU): row-major C = alpha*op(A)*op(B) + beta*C per
/// batch, accumulated in Acc.
template <typename T, typename Acc>
HP_KERNEL(hp_gemm_loop, int ta, int tb, int64_t M, int64_t N, int64_t K,
          float alpha, const T *A, int64_t lda, int64_t sA, const T *B,
          int64_t ldb, int64_t sB, float beta, T *C, int64_t ldc, int64_t sC) {
  HP_FOR_W(i, K) {
    int64_t n = i % N, m = (i / N) % M, b = i / (M * N);
    const T *a = A + b * sA;
    const T *bb = B + b * sB;
    Acc acc = 0;
    for (int64_t k = 0; k < K; ++k)
      acc += (Acc)(ta ? a[k * lda + m] : a[m * lda + k]) *
             (Acc)(tb ? bb[n * ldb + k] : bb[k * ldb + n]);
    T *c = C + b * sC + m * ldc + n;
    Acc prior = beta != 0.0f ? (Acc)(*c) : Acc(0);
    *c =
        (T)(hp_acc_scalar<Acc>(alpha) * acc + hp_acc_scalar<Acc>(beta) * prior);
  }
}

/// The activations cuBLASLt's epilogues apply (hp_gemm_lt): a GEMM
/// epilogue that is exactly one of them names it (`lt_act`), and where
/// cuBLASLt takes the GEMM it applies it.
enum hp_lt_act {
  HP_LT_ACT_NONE = 0,
  HP_LT_ACT_RELU = 1,
  HP_LT_ACT_GELU_TANH = 2
};

/// The epilogue of a GEMM without one (hp_gemm_b, hp_gemm_panels): the
/// generated code passes a functor of its own (a struct with
/// `HP_HD float operator()(float) const` and `static const int lt_act`, an
/// hp_lt_act) for an elementwise chain that reads the product alone
/// (docs/codegen.md, "GEMM epilogues").
struct hp_epi_none {
  static const int lt_act = HP_LT_ACT_NONE;
  HP_HD float operator()(float v) const { return v; }
};

// The parameters and arguments of hp_gemm and its implementations.
#define HP_GEMM_PARAMS(T)                                                      \
  hp_ctx *ctx, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,   \
      const T *A, int64_t lda, int64_t sA, const T *B, int64_t ldb,            \
      int64_t sB, float beta, T *C, int64_t ldc, int64_t sC, int64_t batch
#define HP_GEMM_ARGS                                                           \
  ctx, ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch

/// The GEMM loop kernel over every output element.
template <typename T, typename Acc>
static int hp_gemm_naive(HP_GEMM_PARAMS(T)) {
  if (M == 0 || N == 0 || batch == 0)
    return 0;
  hp_launch(ctx, hp_gemm_loop<T, Acc>, batch * M * N, ta, tb, M, N, K, alpha, A,
            lda, sA, B, ldb, sB, beta, C, ldc, sC);
  return 0;
}

/// Row-major batched GEMM: C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b]
/// for b < batch, with element strides sA, sB, sC between batches (0 repeats
/// one matrix). cuBLAS on the GPU and OpenBLAS on the CPU (the
/// specializations below), the loop kernel for other element types. Returns
/// 0, or non-zero with ctx->error set.
template <typename T, typename Acc> static int hp_gemm(HP_GEMM_PARAMS(T)) {
  return hp_gemm_naive<T, Acc>(HP_GEMM_ARGS);
}

#if HP_CUDA
static int hp_cublas_status(hp_ctx *ctx, cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return 0;
  snprintf(ctx->error, sizeof ctx->error, "%s failed: cuBLAS status %d", what,
           (int)s);
  return 1;
}
/// The cuBLAS compute type of a GEMM on `type`: float32 accumulation, and
/// for float32 inputs TF32 products on tensor cores when the program was
/// generated with --allow-tf32 (HP_ALLOW_TF32).
static cublasComputeType_t hp_gemm_compute(cudaDataType type) {
#ifdef HP_ALLOW_TF32
  if (type == CUDA_R_32F)
    return CUBLAS_COMPUTE_32F_FAST_TF32;
#endif
  (void)type;
  return CUBLAS_COMPUTE_32F;
}
/// cuBLAS computes column-major C^T = op(B)^T op(A)^T, which is the
/// row-major product, with hp_gemm_compute's compute type.
template <typename T>
static int hp_gemm_ex(cudaDataType type, HP_GEMM_PARAMS(T)) {
  if (M == 0 || N == 0 || batch == 0)
    return 0;
  if (K == 0) // cuBLAS leaves C unscaled for K == 0 in some versions
    return hp_gemm_naive<T, float>(HP_GEMM_ARGS);
  return hp_cublas_status(
      ctx,
      cublasGemmStridedBatchedEx(
          ctx->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
          ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, B,
          type, (int)ldb, sB, A, type, (int)lda, sA, &beta, C, type, (int)ldc,
          sC, (int)batch, hp_gemm_compute(type), CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx");
}
template <> int hp_gemm<float, float>(HP_GEMM_PARAMS(float)) {
  return hp_gemm_ex(CUDA_R_32F, HP_GEMM_ARGS);
}
template <> int hp_gemm<hp_half, float>(HP_GEMM_PARAMS(hp_half)) {
  return hp_gemm_ex(CUDA_R_16F, HP_GEMM_ARGS);
}
template <> int hp_gemm<hp_bf16, float>(HP_GEMM_PARAMS(hp_bf16)) {
  return hp_gemm_ex(CUDA_R_16BF, HP_GEMM_ARGS);
}
template <> int hp_gemm<double, double>(HP_GEMM_PARAMS(double)) {
  if (M == 0 || N == 0 || batch == 0)
    return 0;
  double a = alpha, b = beta;
  return hp_cublas_status(
      ctx,
      cublasDgemmStridedBatched(ctx->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M,
                                (int)K, &a, B, (int)ldb, sB, A, (int)lda, sA,
                                &b, C, (int)ldc, sC, (int)batch),
      "cublasDgemmStridedBatched");
}
#else
/// OpenBLAS, one call per batch (row-major), through `gemm(b)` for batch b.
/// A batch of small GEMMs (attention's per-head products: 64 x 64 x 16 at
/// batch 32 x 4 heads) runs one GEMM per thread: OpenBLAS runs each of them
/// on one thread (its small-matrix kernel) while the other threads spin, a
/// third of ViT tiny's time at batch 32. Up to 10^6 multiply-adds per GEMM
/// counts as small: OpenBLAS's own bound for its single-threaded
/// small-matrix kernel (100^3, sgemm_small_kernel_permit for SkylakeX and
/// Cooper Lake); with 2^18, Llama tiny's LM head at batch 32 (32 products of
/// 16 x 512 x 64) ran one after another on one thread, and the model took
/// 8% longer. Any other GEMM is called outside a parallel region: inside
/// one, even a region of one thread, OpenBLAS's OpenMP build runs
/// single-threaded (GPT-2 small took 3.5x as long).
template <typename F>
static void hp_blas_batch(int64_t M, int64_t N, int64_t K, int64_t batch,
                          F gemm) {
  if (batch > 1 && M * N * K <= 1000000) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < batch; ++b)
      gemm(b);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      gemm(b);
  }
}
template <> int hp_gemm<float, float>(HP_GEMM_PARAMS(float)) {
  (void)ctx;
  if (M == 0 || N == 0)
    return 0;
  hp_blas_batch(M, N, K, batch, [&](int64_t b) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A + b * sA, (blasint)lda, B + b * sB,
                (blasint)ldb, beta, C + b * sC, (blasint)ldc);
  });
  return 0;
}
template <> int hp_gemm<double, double>(HP_GEMM_PARAMS(double)) {
  (void)ctx;
  if (M == 0 || N == 0)
    return 0;
  hp_blas_batch(M, N, K, batch, [&](int64_t b) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A + b * sA, (blasint)lda, B + b * sB,
                (blasint)ldb, beta, C + b * sC, (blasint)ldc);
  });
  return 0;
}
/// 16-bit floats on the CPU: widen each batch's matrices to float, run
/// OpenBLAS's sgemm (float32 accumulation, like cuBLAS with
/// CUBLAS_COMPUTE_32F) and round the result back.
template <typename T> static int hp_gemm_widened(HP_GEMM_PARAMS(T)) {
  if (M == 0 || N == 0)
    return 0;
  int64_t rowsA = ta ? K : M, rowsB = tb ? N : K;
  float *a = (float *)malloc(sizeof(float) * (size_t)(rowsA * lda + 1));
  float *bm = (float *)malloc(sizeof(float) * (size_t)(rowsB * ldb + 1));
  float *c = (float *)malloc(sizeof(float) * (size_t)(M * ldc + 1));
  if (!a || !bm || !c) {
    free(a);
    free(bm);
    free(c);
    snprintf(ctx->error, sizeof ctx->error, "out of memory in a GEMM");
    return 1;
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rowsA * lda; ++i)
      a[i] = (float)A[b * sA + i];
    for (int64_t i = 0; i < rowsB * ldb; ++i)
      bm[i] = (float)B[b * sB + i];
    if (beta != 0.0f)
      for (int64_t i = 0; i < M * ldc; ++i)
        c[i] = (float)C[b * sC + i];
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, a, (blasint)lda, bm, (blasint)ldb, beta, c,
                (blasint)ldc);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        C[b * sC + m * ldc + n] = (T)c[m * ldc + n];
  }
  free(a);
  free(bm);
  free(c);
  return 0;
}
template <> int hp_gemm<hp_half, float>(HP_GEMM_PARAMS(hp_half)) {
  return hp_gemm_widened(HP_GEMM_ARGS);
}
template <> int hp_gemm<hp_bf16, float>(HP_GEMM_PARAMS(hp_bf16)) {
  return hp_gemm_widened(HP_GEMM_ARGS);
}
#endif

/// A convolution as cuDNN's N-d API describes it (PyTorch describes every
/// convolution so): N images, G groups of Cg input and Mg output channels,
/// `nsp` spatial dimensions (up to HP_MAX_RANK - 2) of extents `in` and
/// `out`, kernel `k`, `stride`, `pad` before each dimension and `dilation`.
/// cuDNN pads both ends by `pad` (it has no other padding); im2col
/// (hp_conv_im2col) reads only the beginning's. The two agree wherever the
/// output extents do, which hp_conv_cudnn checks.
struct hp_conv_nd {
  int64_t N, G, Cg, Mg;
  int nsp;
  hp_dims in, out, k, stride, pad, dilation;
};

/// `s` as an hp_conv_nd (2 spatial dimensions; the begin padding).
static inline hp_conv_nd hp_conv_nd_of(const hp_conv2d_shape &s) {
  return hp_conv_nd{s.N,
                    s.G,
                    s.Cg,
                    s.Mg,
                    2,
                    hp_dims{{s.H, s.W}},
                    hp_dims{{s.OH, s.OW}},
                    hp_dims{{s.kH, s.kW}},
                    hp_dims{{s.sH, s.sW}},
                    hp_dims{{s.pH, s.pW}},
                    hp_dims{{s.dH, s.dW}}};
}

// The cuBLASLt and cuDNN paths of the GPU kernels, with their plans
// (hetpar_gpu_libraries.h).
#include "hetpar/device/hetpar_gpu_libraries.h"

/// Pooling of n outputs (hp_pool's arguments): two spatial dims on the CPU
/// by rows, two or three on the GPU by cuDNN where it takes them
/// (hp_pool_cudnn; without indices), everything else one thread per output.
template <typename T, typename Acc, bool MAX>
static void hp_pool_launch(hp_ctx *ctx, int64_t n, int nsp, hp_dims inSp,
                           hp_dims outSp, hp_dims kernel, hp_dims stride,
                           hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
                           int countIncludePad, int64_t kernelCount,
                           int64_t inPlane, int64_t outPlane, const T *in,
                           T *out, int64_t *indices) {
#if HP_CUDA
  if (!indices && outPlane > 0 &&
      hp_try_library([&] {
        return hp_pool_cudnn<T, MAX>(ctx, nsp, n / outPlane, inSp, outSp,
                                     kernel, stride, padBegin, padEnd, dilation,
                                     countIncludePad, in, out);
      }) == 0)
    return;
#else
  if (nsp == 2 && outSp.v[1] > 0) {
    hp_launch(ctx, hp_pool2d_rows<T, Acc, MAX>, n / outSp.v[1], inSp, outSp,
              kernel, stride, padBegin, padEnd, dilation, countIncludePad, in,
              out, indices);
    return;
  }
#endif
  hp_launch(ctx, hp_pool<T, Acc, MAX>, n, nsp, inSp, outSp, kernel, stride,
            padBegin, padEnd, dilation, countIncludePad, kernelCount, inPlane,
            outPlane, in, out, indices);
}

//===----------------------------------------------------------------------===//
// Fused attention (onnx.FusedAttention): Y = Softmax(mask(scale(Q KT))) V
// without the score matrix, by the online softmax of FlashAttention-2 (Dao
// 2023): per block of keys, the running row maximum m and sum l rescale the
// output accumulated so far.
//===----------------------------------------------------------------------===//

/// Where one operand's matrices lie: element strides along each leading
/// dimension (0 where it broadcasts), along the matrix's rows and along its
/// columns.
struct hp_attention_layout {
  hp_dims batch;
  int64_t row, col;
};

/// The geometry of a FusedAttention over `batch` independent products (the
/// `rank` leading dimensions, of extents `extents`, flattened): Q [Lq, D],
/// KT [D, Lk], V [Lk, Dv] and Y [Lq, Dv] per batch, each read or written
/// through its layout (q, k, v, y), and the mask's [Lq, Lk] through m.
struct hp_attention_shape {
  int64_t batch, Lq, Lk, D, Dv;
  int rank;
  hp_dims extents;
  hp_attention_layout q, k, v, y, m;
  int mask;   // 0: none, 1: additive, 2: select (with fill)
  int keep;   // select: 1 keeps the score where the mask is true
  int divide; // 1: S / scale, 0: S * scale
  // 1: the mask is a constant causal mask (code generation checked it):
  // for query i the keys j > i + causalOffset are masked to a score whose
  // exponential is 0, and every query keeps key 0, so those keys are not
  // computed at all (about half the work when Lq == Lk). 0: every key is.
  int causal;
  int64_t causalOffset;
};

/// The keys [0, limit) that a query up to `lastQuery` attends to: all of
/// them, or those up to the causal diagonal.
HP_HD int64_t hp_attention_key_limit(const hp_attention_shape &s,
                                     int64_t lastQuery) {
  if (!s.causal)
    return s.Lk;
  const int64_t limit = lastQuery + s.causalOffset + 1;
  return limit < s.Lk ? limit : s.Lk;
}

/// The element offset of batch b's matrix in an operand of layout `l`
/// (row-major over s.extents).
HP_HD int64_t hp_attention_offset(const hp_attention_shape &s,
                                  const hp_attention_layout &l, int64_t b) {
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    off += (b % s.extents.v[d]) * l.batch.v[d];
    b /= s.extents.v[d];
  }
  return off;
}

/// One score after the scale and the mask (`m` the mask at the score's
/// offset; unused without a mask).
template <typename Acc, typename T, typename M>
HP_HD Acc hp_attention_score(const hp_attention_shape &s, Acc x, Acc scale,
                             const M *m, const T *fill) {
  x = s.divide ? x / scale : x * scale;
  if (s.mask == 1)
    x += (Acc) * (const T *)(const void *)m;
  else if (s.mask == 2 && (bool)*m != (bool)s.keep)
    x = (Acc)*fill;
  return x;
}

/// One output element per iteration (batch, query, column): two passes over
/// the keys, recomputing each score (2 * Lk * D multiply-adds per element).
/// The path of 16-bit types on the CPU and of head dimensions whose tiles do
/// not fit the GPU's shared memory.
template <typename T, typename Acc, typename M>
HP_KERNEL(hp_attention_naive, hp_attention_shape s, const T *q, const T *kT,
          const T *v, const T *scale, const M *mask, const T *fill, T *y) {
  HP_FOR_W(e, s.Lk * (s.D + 1)) {
    const int64_t c = e % s.Dv, i = e / s.Dv % s.Lq, b = e / (s.Dv * s.Lq);
    const T *qi = q + hp_attention_offset(s, s.q, b) + i * s.q.row;
    const T *kb = kT + hp_attention_offset(s, s.k, b);
    const T *vc = v + hp_attention_offset(s, s.v, b) + c * s.v.col;
    const M *mi =
        mask ? mask + hp_attention_offset(s, s.m, b) + i * s.m.row : mask;
    const Acc sc = scale ? (Acc)*scale : Acc(1);
    Acc mx = hp_lowest<Acc>(), l = 0, acc = 0;
    const int64_t keys = hp_attention_key_limit(s, i);
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t j = 0; j < keys; ++j) {
        Acc x = 0;
        for (int64_t d = 0; d < s.D; ++d)
          x += (Acc)qi[d * s.q.col] * (Acc)kb[d * s.k.row + j * s.k.col];
        x = hp_attention_score<Acc>(s, x, sc, mi ? mi + j * s.m.col : mi, fill);
        if (pass == 0) {
          mx = x > mx ? x : mx;
        } else {
          Acc p = hp_exp(x - mx);
          l += p;
          acc += p * (Acc)vc[j * s.v.row];
        }
      }
    y[hp_attention_offset(s, s.y, b) + i * s.y.row + c * s.y.col] =
        (T)(acc / l);
  }
}

#if HP_CUDA
/// One block of `br` threads per `br` queries of one batch (blockIdx.y
/// strides over batches), one query per thread. Each tile of `bc` keys is
/// staged in shared memory with the block's queries, their scores and their
/// output rows, all in Acc: (br * (D + Dv + bc) + bc * (D + Dv)) elements.
template <typename T, typename Acc, typename M>
__global__ void hp_attention_tiles(hp_attention_shape s, int br, int bc,
                                   const T *q, const T *kT, const T *v,
                                   const T *scale, const M *mask, const T *fill,
                                   T *y) {
  extern __shared__ unsigned char hp_attention_smem[];
  Acc *Qs = (Acc *)hp_attention_smem, *Os = Qs + br * s.D;
  Acc *Ss = Os + br * s.Dv, *Ks = Ss + br * bc, *Vs = Ks + bc * s.D;
  const int r = threadIdx.x;
  const int64_t i = blockIdx.x * (int64_t)br + r;
  const Acc sc = scale ? (Acc)*scale : Acc(1);
  for (int64_t b = blockIdx.y; b < s.batch; b += gridDim.y) {
    const bool live = i < s.Lq;
    const M *mi = mask && live
                      ? mask + hp_attention_offset(s, s.m, b) + i * s.m.row
                      : (const M *)0;
    const T *qi = q + hp_attention_offset(s, s.q, b) + i * s.q.row;
    const T *kb = kT + hp_attention_offset(s, s.k, b);
    const T *vb = v + hp_attention_offset(s, s.v, b);
    for (int64_t d = 0; d < s.D; ++d)
      Qs[r * s.D + d] = live ? (Acc)qi[d * s.q.col] : Acc(0);
    for (int64_t d = 0; d < s.Dv; ++d)
      Os[r * s.Dv + d] = 0;
    Acc m = hp_lowest<Acc>(), l = 0;
    // The block's keys: up to its last query's diagonal when causal (one
    // bound for the whole block, which loads every tile together).
    const int64_t last = blockIdx.x * (int64_t)br + br - 1;
    const int64_t keys =
        hp_attention_key_limit(s, last < s.Lq - 1 ? last : s.Lq - 1);
    for (int64_t j0 = 0; j0 < keys; j0 += bc) {
      const int cols = (int)(keys - j0 < bc ? keys - j0 : bc);
      __syncthreads(); // the previous tile is consumed
      for (int64_t e = r; e < (int64_t)cols * s.D; e += br) {
        int64_t c = e % cols, d = e / cols; // coalesced along the keys
        Ks[c * s.D + d] = (Acc)kb[d * s.k.row + (j0 + c) * s.k.col];
      }
      for (int64_t e = r; e < (int64_t)cols * s.Dv; e += br) {
        int64_t c = e / s.Dv, d = e % s.Dv;
        Vs[e] = (Acc)vb[(j0 + c) * s.v.row + d * s.v.col];
      }
      __syncthreads();
      if (!live)
        continue;
      Acc mx = m;
      for (int c = 0; c < cols; ++c) {
        Acc x = 0;
        for (int64_t d = 0; d < s.D; ++d)
          x += Qs[r * s.D + d] * Ks[c * s.D + d];
        x = hp_attention_score<Acc>(s, x, sc, mi ? mi + (j0 + c) * s.m.col : mi,
                                    fill);
        Ss[r * bc + c] = x;
        mx = x > mx ? x : mx;
      }
      // All scores so far -inf: nothing to add yet (exp(-inf - -inf) is NaN).
      const Acc alpha = mx == hp_lowest<Acc>() ? Acc(1) : hp_exp(m - mx);
      for (int64_t d = 0; d < s.Dv; ++d)
        Os[r * s.Dv + d] *= alpha;
      l *= alpha;
      for (int c = 0; c < cols; ++c) {
        Acc p = mx == hp_lowest<Acc>() ? Acc(0) : hp_exp(Ss[r * bc + c] - mx);
        l += p;
        for (int64_t d = 0; d < s.Dv; ++d)
          Os[r * s.Dv + d] += p * Vs[c * s.Dv + d];
      }
      m = mx;
    }
    if (live)
      for (int64_t d = 0; d < s.Dv; ++d)
        y[hp_attention_offset(s, s.y, b) + i * s.y.row + d * s.y.col] =
            (T)(Os[r * s.Dv + d] / l);
    __syncthreads(); // Qs and Os are rewritten for the next batch
  }
}
#else
/// The CPU path of float and double: tasks of HP_ATTENTION_ROWS queries of
/// one batch; per block of HP_ATTENTION_KEYS keys, S = Q KT by a
/// one-thread GEMM into a stack tile, the scale, mask and online softmax on
/// its rows, then Y += P V by a second GEMM straight into Y's rows (Y is the
/// accumulator: T is Acc here), divided by the row sums at the end. 32 x 256
/// scores are 32 KiB of float, the tile size of hp_conv2d_tiled. Q, KT and
/// V are GEMM operands in place: their rows or their columns are contiguous
/// (FusedAttention's constraints), the other stride is BLAS's leading
/// dimension, with the transpose flag when the columns are not contiguous.
/// Y's rows are contiguous.
#define HP_ATTENTION_ROWS 32
#define HP_ATTENTION_KEYS 256
template <typename T, typename Acc, typename M>
static void hp_attention_blocked(hp_ctx *ctx, hp_attention_shape s, const T *q,
                                 const T *kT, const T *v, const T *scale,
                                 const M *mask, const T *fill, T *y) {
  const int64_t blocks = (s.Lq + HP_ATTENTION_ROWS - 1) / HP_ATTENTION_ROWS;
  const int64_t tasks = s.batch * blocks;
  const Acc sc = scale ? (Acc)*scale : Acc(1);
  const bool parallel = tasks > 1 && s.Lq * s.Lk * (s.D + s.Dv) >= 16384;
  // Causal tasks differ in work (a later block of queries attends to more
  // keys): they are handed out round-robin, the others in contiguous runs.
  int64_t chunk = 1;
#ifdef _OPENMP
  if (!s.causal)
    chunk = (tasks + omp_get_max_threads() - 1) / omp_get_max_threads();
#endif
#pragma omp parallel for schedule(static, chunk) if (parallel)
  for (int64_t task = 0; task < tasks; ++task) {
    alignas(64) T S[HP_ATTENTION_ROWS * HP_ATTENTION_KEYS];
    Acc m[HP_ATTENTION_ROWS], l[HP_ATTENTION_ROWS];
    const int64_t b = task / blocks, i0 = task % blocks * HP_ATTENTION_ROWS;
    const int64_t rows =
        s.Lq - i0 < HP_ATTENTION_ROWS ? s.Lq - i0 : HP_ATTENTION_ROWS;
    const T *Q = q + hp_attention_offset(s, s.q, b) + i0 * s.q.row;
    const T *K = kT + hp_attention_offset(s, s.k, b);
    const T *V = v + hp_attention_offset(s, s.v, b);
    T *Y = y + hp_attention_offset(s, s.y, b) + i0 * s.y.row;
    const M *mb = mask ? mask + hp_attention_offset(s, s.m, b) : mask;
    for (int64_t r = 0; r < rows; ++r) {
      m[r] = hp_lowest<Acc>();
      l[r] = 0;
    }
    const int64_t keys = hp_attention_key_limit(s, i0 + rows - 1);
    for (int64_t j0 = 0; j0 < keys; j0 += HP_ATTENTION_KEYS) {
      const int64_t cols =
          keys - j0 < HP_ATTENTION_KEYS ? keys - j0 : HP_ATTENTION_KEYS;
      hp_gemm<T, Acc>(ctx, s.q.col != 1, s.k.col != 1, rows, cols, s.D, 1.0f, Q,
                      s.q.col != 1 ? s.q.col : s.q.row, 0, K + j0 * s.k.col,
                      s.k.col != 1 ? s.k.col : s.k.row, 0, 0.0f, S, cols, 0, 1);
      for (int64_t r = 0; r < rows; ++r) {
        T *x = S + r * cols;
        const M *mr = mb ? mb + (i0 + r) * s.m.row + j0 * s.m.col : mb;
        Acc mx = m[r];
        for (int64_t c = 0; c < cols; ++c) {
          const Acc xc = hp_attention_score<Acc>(
              s, (Acc)x[c], sc, mr ? mr + c * s.m.col : mr, fill);
          x[c] = (T)xc;
          mx = xc > mx ? xc : mx;
        }
        // Every score so far -inf: p = 0 (exp(-inf - -inf) would be NaN).
        const bool none = mx == hp_lowest<Acc>();
        const Acc alpha = none ? Acc(1) : hp_exp(m[r] - mx);
        Acc sum = 0;
        if (none) {
          for (int64_t c = 0; c < cols; ++c)
            x[c] = T(0);
        } else {
          HP_SIMD_REDUCE(+, sum)
          for (int64_t c = 0; c < cols; ++c) {
            const Acc p = hp_exp((Acc)x[c] - mx);
            x[c] = (T)p;
            sum += p;
          }
        }
        l[r] = l[r] * alpha + sum;
        m[r] = mx;
        T *yr = Y + r * s.y.row;
        if (j0 == 0)
          memset(yr, 0, sizeof(T) * (size_t)s.Dv);
        else if (alpha != Acc(1))
          for (int64_t d = 0; d < s.Dv; ++d)
            yr[d] = (T)((Acc)yr[d] * alpha);
      }
      hp_gemm<T, Acc>(ctx, 0, s.v.col != 1, rows, s.Dv, cols, 1.0f, S, cols, 0,
                      V + j0 * s.v.row, s.v.col != 1 ? s.v.col : s.v.row, 0,
                      1.0f, Y, s.y.row, 0, 1);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const Acc inv = Acc(1) / l[r];
      for (int64_t d = 0; d < s.Dv; ++d)
        Y[r * s.y.row + d] = (T)((Acc)Y[r * s.y.row + d] * inv);
    }
  }
}
#endif

#if HP_CUDA
/// 16-bit element types of the tensor-core attention (sm_80 and later):
/// HetPar's storage structs and the CUDA types WMMA reads (the same bits).
template <typename T> struct hp_wmma_type { static const bool ok = false; };
template <> struct hp_wmma_type<hp_bf16> {
  static const bool ok = true;
  typedef __nv_bfloat16 type;
};
template <> struct hp_wmma_type<hp_half> {
  static const bool ok = true;
  typedef __half type;
};

/// Tensor-core FusedAttention for 16-bit Q, K, V (FlashAttention-2's
/// algorithm with WMMA 16x16x16 products, float accumulation): a block of
/// four warps takes 64 queries of one batch, each warp 16 of them. Per tile of
/// 64 keys the block stages K and V in shared memory; each warp computes its
/// 16 x 64 scores S = Q KT on tensor cores, applies the scale and the mask and
/// the online softmax in float (two lanes per query row), writes P in the
/// input type and accumulates O += P V on tensor cores into its float rows
/// of O in shared memory, which the running maximum rescales. Keys past Lk
/// in the last tile and queries past Lq are zero rows whose scores are -inf
/// or whose outputs are not written. D and Dv are multiples of 16 (checked
/// by hp_attention_mma_fits). Shared memory: hp_attention_mma_smem_bytes.
#define HP_ATTN_MMA_BR 64
#define HP_ATTN_MMA_BC 64
template <typename T, typename M>
__global__ void __launch_bounds__(128)
    hp_attention_mma(hp_attention_shape s, const T *q, const T *kT, const T *v,
                     const T *scale, const M *mask, const T *fill, T *y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  typedef typename hp_wmma_type<T>::type W;
  const int BR = HP_ATTN_MMA_BR, BC = HP_ATTN_MMA_BC;
  const int D = (int)s.D, DV = (int)s.Dv;
  // Leading dimensions padded against bank conflicts; WMMA wants multiples
  // of 8 elements (16-bit) and of 4 (float), and 32-byte aligned tiles.
  const int ldq = D + 8, ldv = DV + 8, lds = BC + 4, ldp = BC + 8, ldo = DV + 4;
  extern __shared__ __align__(128) unsigned char hp_attention_mma_smem[];
  uint16_t *Qs = (uint16_t *)hp_attention_mma_smem;
  uint16_t *Ks = Qs + BR * ldq, *Vs = Ks + BC * ldq;
  float *Ss = (float *)(Vs + BC * ldv);
  uint16_t *Ps = (uint16_t *)(Ss + BR * lds);
  float *Os = (float *)(Ps + BR * ldp);
  float *rowM = Os + BR * ldo, *rowL = rowM + BR;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t i0 = blockIdx.x * (int64_t)BR;
  const float sc = scale ? (float)*scale : 1.0f;
  for (int64_t b = blockIdx.y; b < s.batch; b += gridDim.y) {
    const uint16_t *qb = (const uint16_t *)(q + hp_attention_offset(s, s.q, b));
    const uint16_t *kb =
        (const uint16_t *)(kT + hp_attention_offset(s, s.k, b));
    const uint16_t *vb = (const uint16_t *)(v + hp_attention_offset(s, s.v, b));
    const M *mb = mask ? mask + hp_attention_offset(s, s.m, b) : mask;
    for (int e = tid; e < BR * D; e += blockDim.x) {
      const int r = s.q.col == 1 ? e / D : e % BR;
      const int d = s.q.col == 1 ? e % D : e / BR;
      const int64_t i = i0 + r;
      Qs[r * ldq + d] = i < s.Lq ? qb[i * s.q.row + d * s.q.col] : 0;
    }
    for (int e = tid; e < BR * ldo; e += blockDim.x)
      Os[e] = 0.0f;
    if (tid < BR) {
      rowM[tid] = -INFINITY;
      rowL[tid] = 0.0f;
    }
    const int64_t last = i0 + BR - 1 < s.Lq - 1 ? i0 + BR - 1 : s.Lq - 1;
    const int64_t keys = hp_attention_key_limit(s, last);
    for (int64_t j0 = 0; j0 < keys; j0 += BC) {
      const int cols = (int)(keys - j0 < BC ? keys - j0 : BC);
      __syncthreads(); // the previous tile is consumed; Q and O are set
      for (int e = tid; e < BC * D; e += blockDim.x) {
        const int c = s.k.row == 1 ? e / D : e % BC;
        const int d = s.k.row == 1 ? e % D : e / BC;
        Ks[c * ldq + d] = c < cols ? kb[d * s.k.row + (j0 + c) * s.k.col] : 0;
      }
      for (int e = tid; e < BC * DV; e += blockDim.x) {
        const int c = s.v.col == 1 ? e / DV : e % BC;
        const int d = s.v.col == 1 ? e % DV : e / BC;
        Vs[c * ldv + d] = c < cols ? vb[(j0 + c) * s.v.row + d * s.v.col] : 0;
      }
      __syncthreads();
      // S (this warp's 16 rows) = Q KT.
      const W *Qw = (const W *)(Qs + warp * 16 * ldq);
      for (int n = 0; n < BC / 16; ++n) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < D / 16; ++k) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::col_major> fb;
          wmma::load_matrix_sync(fa, Qw + k * 16, ldq);
          wmma::load_matrix_sync(fb, (const W *)(Ks + n * 16 * ldq) + k * 16,
                                 ldq);
          wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Ss + warp * 16 * lds + n * 16, acc, lds,
                                wmma::mem_row_major);
      }
      __syncwarp();
      // The online softmax of each row, two lanes per row, 32 keys each.
      const int r = warp * 16 + lane / 2, half = lane & 1;
      const int64_t i = i0 + r;
      const M *mi = mb && i < s.Lq ? mb + i * s.m.row : (const M *)0;
      const float mOld = rowM[r];
      float mx = mOld;
      for (int c = half * 32; c < half * 32 + 32; ++c) {
        float x = -INFINITY;
        if (c < cols && i < s.Lq)
          x = hp_attention_score<float>(
              s, Ss[r * lds + c], sc, mi ? mi + (j0 + c) * s.m.col : mi, fill);
        Ss[r * lds + c] = x;
        mx = x > mx ? x : mx;
      }
      const float other = __shfl_xor_sync(0xffffffffu, mx, 1);
      mx = other > mx ? other : mx;
      // All scores so far -inf: nothing to add (exp(-inf - -inf) is NaN).
      const float alpha = mx == -INFINITY ? 1.0f : __expf(mOld - mx);
      float sum = 0.0f;
      for (int c = half * 32; c < half * 32 + 32; ++c) {
        const float p = mx == -INFINITY ? 0.0f : __expf(Ss[r * lds + c] - mx);
        const T pt = (T)p;
        sum += (float)pt; // the rounded weights that P V multiplies
        Ps[r * ldp + c] = pt.bits;
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      for (int d = half; d < DV; d += 2)
        Os[r * ldo + d] *= alpha;
      if (!half) {
        rowM[r] = mx;
        rowL[r] = rowL[r] * alpha + sum;
      }
      __syncwarp();
      // O (this warp's 16 rows) += P V.
      for (int n = 0; n < DV / 16; ++n) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        float *Ow = Os + warp * 16 * ldo + n * 16;
        wmma::load_matrix_sync(acc, Ow, ldo, wmma::mem_row_major);
        for (int k = 0; k < BC / 16; ++k) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> fb;
          wmma::load_matrix_sync(fa, (const W *)(Ps + warp * 16 * ldp) + k * 16,
                                 ldp);
          wmma::load_matrix_sync(fb, (const W *)(Vs + k * 16 * ldv) + n * 16,
                                 ldv);
          wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Ow, acc, ldo, wmma::mem_row_major);
      }
      __syncwarp();
    }
    __syncwarp();
    T *yb = y + hp_attention_offset(s, s.y, b);
    for (int e = lane; e < 16 * DV; e += 32) {
      const int r = warp * 16 + e / DV, d = e % DV;
      if (i0 + r < s.Lq)
        yb[(i0 + r) * s.y.row + d * s.y.col] = (T)(Os[r * ldo + d] / rowL[r]);
    }
    __syncthreads(); // Q and O are rewritten for the next batch
  }
#endif
}

/// Shared memory of hp_attention_mma (bytes): Q, K and V tiles, the float
/// scores, P, the float output rows and two floats per row.
static int64_t hp_attention_mma_smem_bytes(const hp_attention_shape &s) {
  const int64_t BR = HP_ATTN_MMA_BR, BC = HP_ATTN_MMA_BC;
  return 2 * (BR * (s.D + 8) + BC * (s.D + 8) + BC * (s.Dv + 8) +
              BR * (BC + 8)) +
         4 * (BR * (BC + 4) + BR * (s.Dv + 4) + 2 * BR);
}

/// Whether hp_attention_mma can take this attention: HETPAR_ATTENTION=mma
/// (opt-in until the kernel has been checked on a GPU: it compiles with nvcc
/// in CI, scripts/gpu-check.sh runs it against PyTorch), head dimensions that
/// are multiples of 16, and a device of compute capability 8.0 or later with
/// the shared memory for it.
static bool hp_attention_mma_fits(const hp_attention_shape &s) {
  static int major = -1, optin = 0, chosen = 0;
  if (major < 0) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                           dev);
    const char *e = getenv("HETPAR_ATTENTION");
    chosen = e && strcmp(e, "mma") == 0;
  }
  return chosen && major >= 8 && s.D > 0 && s.Dv > 0 && s.D % 16 == 0 &&
         s.Dv % 16 == 0 && hp_attention_mma_smem_bytes(s) <= optin;
}

/// Launches hp_attention_mma where it applies (16-bit T with float
/// accumulation, hp_attention_mma_fits); false where it does not. Other
/// types never instantiate the kernel.
template <typename T, typename Acc, typename M,
          bool Wmma = hp_wmma_type<T>::ok && sizeof(Acc) == 4>
struct hp_attention_mma_try {
  static bool run(hp_ctx *, const hp_attention_shape &, const T *, const T *,
                  const T *, const T *, const M *, const T *, T *) {
    return false;
  }
};
template <typename T, typename Acc, typename M>
struct hp_attention_mma_try<T, Acc, M, true> {
  static bool run(hp_ctx *ctx, const hp_attention_shape &s, const T *q,
                  const T *kT, const T *v, const T *scale, const M *mask,
                  const T *fill, T *y) {
    if (!hp_attention_mma_fits(s))
      return false;
    static int64_t allowed = 48 * 1024; // the default dynamic shared memory
    const int64_t bytes = hp_attention_mma_smem_bytes(s);
    if (bytes > allowed) {
      cudaFuncSetAttribute(hp_attention_mma<T, M>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)bytes);
      allowed = bytes;
    }
    dim3 grid((unsigned)((s.Lq + HP_ATTN_MMA_BR - 1) / HP_ATTN_MMA_BR),
              (unsigned)(s.batch < 65535 ? s.batch : 65535));
    hp_attention_mma<T, M><<<grid, 128, (size_t)bytes, ctx->stream>>>(
        s, q, kT, v, scale, mask, fill, y);
    return true;
  }
};
#endif

/// Shared memory of hp_attention_tiles for br queries and bc keys (bytes).
template <typename Acc>
static int64_t hp_attention_smem_bytes(const hp_attention_shape &s, int br,
                                       int bc) {
  return (int64_t)sizeof(Acc) * (br * (s.D + s.Dv + bc) + bc * (s.D + s.Dv));
}

/// FusedAttention. On the GPU: hp_attention_mma for 16-bit types where it
/// applies and HETPAR_ATTENTION=mma chose it (hp_attention_mma_try), else
/// hp_attention_tiles with 64 queries and 32 keys per block, halved until the
/// tiles fit 48 KiB of shared memory (the default limit per block), else
/// hp_attention_naive. On the CPU: hp_attention_blocked for float and double,
/// hp_attention_naive for 16-bit types. `scale`, `mask` and `fill` may be null
/// (absent). Lk == 0 gives zeros, as the unfused product of an empty Softmax
/// with V does.
template <typename T, typename Acc, typename M>
static void hp_attention_launch(hp_ctx *ctx, hp_attention_shape s, const T *q,
                                const T *kT, const T *v, const T *scale,
                                const M *mask, const T *fill, T *y) {
  if (s.batch == 0 || s.Lq == 0 || s.Dv == 0)
    return;
  if (s.Lk == 0) { // nothing to attend to: the products' empty sums
    size_t bytes = sizeof(T) * (size_t)(s.batch * s.Lq * s.Dv);
#if HP_CUDA
    cudaMemsetAsync(y, 0, bytes, ctx->stream);
#else
    memset((void *)y, 0, bytes);
#endif
    return;
  }
#if HP_CUDA
  if (hp_attention_mma_try<T, Acc, M>::run(ctx, s, q, kT, v, scale, mask, fill,
                                           y))
    return;
  int br = 64, bc = 32;
  while (br > 1 && hp_attention_smem_bytes<Acc>(s, br, bc) > 48 * 1024) {
    br /= 2;
    bc = bc > 1 ? bc / 2 : 1;
  }
  if (hp_attention_smem_bytes<Acc>(s, br, bc) > 48 * 1024) {
    hp_launch(ctx, hp_attention_naive<T, Acc, M>, s.batch * s.Lq * s.Dv, s, q,
              kT, v, scale, mask, fill, y);
    return;
  }
  dim3 grid((unsigned)((s.Lq + br - 1) / br),
            (unsigned)(s.batch < 65535 ? s.batch : 65535));
  hp_attention_tiles<T, Acc, M>
      <<<grid, br, (size_t)hp_attention_smem_bytes<Acc>(s, br, bc),
         ctx->stream>>>(s, br, bc, q, kT, v, scale, mask, fill, y);
#else
  if (std::is_same<T, float>::value || std::is_same<T, double>::value)
    hp_attention_blocked<T, Acc, M>(ctx, s, q, kT, v, scale, mask, fill, y);
  else
    hp_launch(ctx, hp_attention_naive<T, Acc, M>, s.batch * s.Lq * s.Dv, s, q,
              kT, v, scale, mask, fill, y);
#endif
}

//===----------------------------------------------------------------------===//
// Two-dimensional convolution: direct where im2col plus GEMM loses
// (depthwise), im2col plus GEMM otherwise.
//===----------------------------------------------------------------------===//

// hp_conv2d_shape, and which convolutions get packed weights:
// hetpar_packed.h (shared with the code generator).

/// What a convolution does to each output element after its sum (the
/// epilogue of onnx.Conv and onnx.FusedConv, as ONNX Runtime's FusedConv):
/// y = act(sum + bias[m] + z[i]) for output channel m and element i of y.
/// `bias` ([M], one per output channel) and `z` (shaped as y: a residual
/// input) are optional (null); `act` is HP_ACT_NONE, HP_ACT_RELU (v < 0 ? 0
/// : v, NaN stays NaN as in the unfused Relu) or HP_ACT_CLIP (to [lo, hi],
/// as the unfused Clip's hp_max/hp_min). The sum, the bias and z add in that
/// order, as the unfused Conv (bias broadcast, then the products added) and
/// Add did, so float32 results are bitwise those of the unfused graph.
enum { HP_ACT_NONE = 0, HP_ACT_RELU = 1, HP_ACT_CLIP = 2 };
template <typename T> struct hp_conv_epilogue {
  const T *bias;
  const T *z;
  int act;
  float lo, hi;
};

/// Element i (output channel m) of a convolution's result from its sum v.
template <typename T, typename Acc>
HP_HD T hp_conv_finish(const hp_conv_epilogue<T> &e, Acc v, int64_t m,
                       int64_t i) {
  if (e.bias)
    v = (Acc)e.bias[m] + v;
  if (e.z)
    v = v + (Acc)e.z[i];
  if (e.act == HP_ACT_RELU)
    v = v < Acc(0) ? Acc(0) : v;
  else if (e.act == HP_ACT_CLIP)
    v = hp_min<Acc>(hp_max<Acc>(v, (Acc)e.lo), (Acc)e.hi);
  return (T)v;
}

/// Whether the epilogue changes anything (else a convolution just stores
/// its sums).
template <typename T>
HP_HD bool hp_conv_epilogue_any(const hp_conv_epilogue<T> &e) {
  return e.bias || e.z || e.act != HP_ACT_NONE;
}

/// The epilogue over y [N, M, P] (P elements per output channel), in place:
/// after the GEMMs of the whole-image path and of N-D convolutions.
template <typename T, typename Acc>
HP_KERNEL(hp_conv_epilogue_rows, hp_conv_epilogue<T> e, int64_t M, int64_t P,
          T *y) {
  HP_FOR(i) { y[i] = hp_conv_finish<T, Acc>(e, (Acc)y[i], i / P % M, i); }
}

/// Output channels and output columns of one iteration of
/// hp_conv2d_direct_rows: 8 x 64 accumulators (2 KiB of float) stay in L1.
#define HP_CONV_MB 8
#define HP_CONV_OWT 64

/// Direct 2-D convolution on the CPU. One iteration computes HP_CONV_MB
/// output channels of one group over up to HP_CONV_OWT columns of one output
/// row: for each input channel, kernel row and kernel column, every channel's
/// weight times a run of the input row (a vector loop; stride 1 and 2 read
/// with constant steps). No im2col matrix is written, and the group loop is
/// the task index, so depthwise and grouped convolutions copy nothing. The
/// epilogue finishes each output.
template <typename T, typename Acc>
HP_KERNEL(hp_conv2d_direct_rows, hp_conv2d_shape s, hp_conv_epilogue<T> epi,
          const T *x, const T *w, T *y) {
  const int64_t mBlocks = (s.Mg + HP_CONV_MB - 1) / HP_CONV_MB;
  const int64_t tiles = (s.OW + HP_CONV_OWT - 1) / HP_CONV_OWT;
  HP_FOR_W(task, HP_CONV_MB * HP_CONV_OWT * s.Cg * s.kH * s.kW) {
    int64_t r = task;
    const int64_t tile = r % tiles;
    r /= tiles;
    const int64_t oh = r % s.OH;
    r /= s.OH;
    const int64_t m0 = (r % mBlocks) * HP_CONV_MB;
    const int64_t ng = r / mBlocks; // n * G + g
    const int64_t g = ng % s.G;
    const int64_t mCount = s.Mg - m0 < HP_CONV_MB ? s.Mg - m0 : HP_CONV_MB;
    const int64_t ow0 = tile * HP_CONV_OWT;
    const int64_t cols = s.OW - ow0 < HP_CONV_OWT ? s.OW - ow0 : HP_CONV_OWT;
    Acc acc[HP_CONV_MB][HP_CONV_OWT];
    const int64_t yOff = ((ng * s.Mg + m0) * s.OH + oh) * s.OW + ow0;
    for (int64_t m = 0; m < mCount; ++m)
      for (int64_t ow = 0; ow < cols; ++ow)
        acc[m][ow] = Acc(0);
    for (int64_t c = 0; c < s.Cg; ++c) {
      const T *xPlane = x + (ng * s.Cg + c) * s.H * s.W;
      const T *wc = w + ((g * s.Mg + m0) * s.Cg + c) * s.kH * s.kW;
      for (int64_t kh = 0; kh < s.kH; ++kh) {
        const int64_t ih = oh * s.sH - s.pH + kh * s.dH;
        if (ih < 0 || ih >= s.H)
          continue;
        const T *xRow = xPlane + ih * s.W;
        for (int64_t kw = 0; kw < s.kW; ++kw) {
          // Column ow reads xRow[start + ow * sW]; [lo, hi) stay inside.
          const int64_t start = ow0 * s.sW - s.pW + kw * s.dW;
          int64_t lo = start >= 0 ? 0 : (s.sW - 1 - start) / s.sW;
          int64_t hi = start >= s.W ? 0 : (s.W - start + s.sW - 1) / s.sW;
          hi = hi < cols ? hi : cols;
          if (lo >= hi)
            continue;
          const T *in = xRow + start;
          for (int64_t m = 0; m < mCount; ++m) {
            const Acc wv = (Acc)wc[(m * s.Cg * s.kH + kh) * s.kW + kw];
            Acc *a = acc[m];
            if (s.sW == 1) {
              HP_SIMD
              for (int64_t ow = lo; ow < hi; ++ow)
                a[ow] += wv * (Acc)in[ow];
            } else if (s.sW == 2) {
              HP_SIMD
              for (int64_t ow = lo; ow < hi; ++ow)
                a[ow] += wv * (Acc)in[2 * ow];
            } else {
              for (int64_t ow = lo; ow < hi; ++ow)
                a[ow] += wv * (Acc)in[ow * s.sW];
            }
          }
        }
      }
    }
    for (int64_t m = 0; m < mCount; ++m) {
      const int64_t channel = g * s.Mg + m0 + m, row = yOff + m * s.OH * s.OW;
      for (int64_t ow = 0; ow < cols; ++ow)
        y[row + ow] =
            hp_conv_finish<T, Acc>(epi, acc[m][ow], channel, row + ow);
    }
  }
}

/// Direct 2-D convolution on the GPU: one thread per output element sums
/// over its group's input channels and the kernel window (depthwise
/// convolutions, where im2col plus a GEMM per group is G launches of a
/// one-row GEMM).
template <typename T, typename Acc>
HP_KERNEL(hp_conv2d_direct, hp_conv2d_shape s, hp_conv_epilogue<T> epi,
          const T *x, const T *w, T *y) {
  HP_FOR(i) {
    int64_t r = i;
    const int64_t ow = r % s.OW;
    r /= s.OW;
    const int64_t oh = r % s.OH;
    r /= s.OH;
    const int64_t m = r % (s.G * s.Mg), n = r / (s.G * s.Mg);
    const int64_t g = m / s.Mg;
    Acc acc = Acc(0);
    for (int64_t c = 0; c < s.Cg; ++c) {
      const T *xPlane = x + ((n * s.G + g) * s.Cg + c) * s.H * s.W;
      const T *wc = w + (m * s.Cg + c) * s.kH * s.kW;
      for (int64_t kh = 0; kh < s.kH; ++kh) {
        const int64_t ih = oh * s.sH - s.pH + kh * s.dH;
        if (ih < 0 || ih >= s.H)
          continue;
        for (int64_t kw = 0; kw < s.kW; ++kw) {
          const int64_t iw = ow * s.sW - s.pW + kw * s.dW;
          if (iw >= 0 && iw < s.W)
            acc += (Acc)wc[kh * s.kW + kw] * (Acc)xPlane[ih * s.W + iw];
        }
      }
    }
    y[i] = hp_conv_finish<T, Acc>(epi, acc, m, i);
  }
}

/// Whether the direct kernel beats im2col plus GEMM: depthwise convolutions
/// (one input channel per group), on both backends. There im2col plus GEMM
/// is one GEMM with a single input row per channel and image: MobileNetV3-
/// small at 2 x 3 x 64 x 64 on one core ran 16.4 ms that way and 9.2 ms
/// direct. Where a group has more channels the GEMM wins on the CPU: every
/// other rule tried (up to 8, 16 or 32 output channels, rows of at least 16
/// or 32 columns) made ResNet-18/8 1.5 to 10 times slower, and ResNeXt-50's
/// 4-channel groups gained nothing measurable (bench notes in
/// docs/performance.md).
static inline bool hp_conv2d_direct_pays(const hp_conv2d_shape &s) {
  return s.G > 1 && s.Cg == 1;
}

/// Whether a 2-D convolution reads its input as the GEMM's right-hand
/// matrix, without im2col: 1 x 1 kernel, stride 1, no padding.
static inline bool hp_conv2d_pointwise(const hp_conv2d_shape &s) {
  return s.kH == 1 && s.kW == 1 && s.sH == 1 && s.sW == 1 && s.pH == 0 &&
         s.pW == 0 && s.OH == s.H && s.OW == s.W;
}

#if !HP_CUDA
/// One thread's im2col tile in hp_conv2d_tiled: 16384 elements (64 KiB of
/// float) on the thread's stack, the size of ONNX Runtime's per-thread
/// convolution buffer (MLAS_CONV_WORKING_BUFFER_SIZE_PER_THREAD in MLAS).
#define HP_CONV_TILE_ELEMS 16384
/// One thread's output tile ([Mg, width]) in hp_conv2d_tiled, for tiles
/// that span images: 32768 elements (128 KiB of float), on the stack.
#define HP_CONV_OUT_ELEMS 32768
/// The most im2col rows (input channel, kernel row, kernel column) in one
/// tile, so that a tile has at least 64 columns: a longer sum over rows takes
/// several tiles, the GEMM accumulating (beta 1).
#define HP_CONV_TILE_K 256

/// How hp_conv2d_tiled covers a group's output columns: the N * OH * OW
/// columns of all images (image-major) in `tiles` tiles of `width` columns
/// (the last one shorter), each taking im2col rows in blocks of up to `kb`.
struct hp_conv2d_tiling {
  int64_t kb, width, tiles;
};

/// The tiling of hp_conv2d_tiled for `threads` threads: tiles as wide as
/// both buffers allow, and at least as many tasks (groups x tiles) as
/// threads where there are enough columns. A width below 16 (more than 2048
/// output channels per group) is not worth a tile: `tiles` is 0, and the
/// caller runs the whole-image path.
static inline hp_conv2d_tiling hp_conv2d_tiles(const hp_conv2d_shape &s,
                                               int64_t threads) {
  hp_conv2d_tiling t;
  const int64_t K = s.Cg * s.kH * s.kW, total = s.N * s.OH * s.OW;
  t.kb = K < HP_CONV_TILE_K ? K : HP_CONV_TILE_K;
  int64_t maxCols = HP_CONV_TILE_ELEMS / t.kb;
  if (HP_CONV_OUT_ELEMS / s.Mg < maxCols)
    maxCols = HP_CONV_OUT_ELEMS / s.Mg;
  if (maxCols < 16) {
    t.width = t.tiles = 0;
    return t;
  }
  int64_t tiles = (total + maxCols - 1) / maxCols;
  const int64_t perGroup = (threads + s.G - 1) / s.G;
  if (tiles < perGroup)
    tiles = perGroup < total ? perGroup : total;
  t.width = (total + tiles - 1) / tiles;
  t.tiles = (total + t.width - 1) / t.width;
  return t;
}

/// One im2col row of a stride-1 convolution whose output rows are as wide
/// as its input rows ("same" padding): the output columns [j0, j1) read the
/// input plane at one offset, so the row is one contiguous copy; then the
/// columns outside [lo, hi) of each output row, and the output rows whose
/// input row is padding, are zeroed. Three quarters of ResNet's 3 x 3
/// convolutions are of this kind, and their rows of 8 to 32 columns made a
/// loop per output row slower than the GEMM.
template <typename T>
static void hp_im2col_shifted(const hp_conv2d_shape &s, const T *plane,
                              int64_t kh, int64_t start, int64_t lo, int64_t hi,
                              int64_t j0, int64_t j1, T *dst) {
  const int64_t rowShift = kh * s.dH - s.pH; // ih = oh + rowShift
  const int64_t offset = rowShift * s.W + start;
  // [a, b): the columns whose input row exists; inside it, the copy stays
  // within the plane (what it reads outside [lo, hi) is zeroed below).
  int64_t a = -rowShift * s.OW, b = (s.H - rowShift) * s.OW;
  a = a < j0 ? j0 : a > j1 ? j1 : a;
  b = b < a ? a : b > j1 ? j1 : b;
  int64_t ca = -offset > a ? -offset : a;
  int64_t cb = s.H * s.W - offset < b ? s.H * s.W - offset : b;
  dst -= j0;
  for (int64_t j = j0; j < a; ++j)
    dst[j] = T(0);
  if (ca < cb)
    memcpy(dst + ca, plane + offset + ca, sizeof(T) * (size_t)(cb - ca));
  for (int64_t j = b; j < j1; ++j)
    dst[j] = T(0);
  if (lo <= 0 && hi >= s.OW)
    return;
  for (int64_t row = a / s.OW * s.OW; row < b; row += s.OW) {
    for (int64_t j = row > a ? row : a; j < row + lo && j < b; ++j)
      dst[j] = T(0);
    for (int64_t j = row + (hi > 0 ? hi : 0) > a ? row + (hi > 0 ? hi : 0) : a;
         j < row + s.OW && j < b; ++j)
      dst[j] = T(0);
  }
}

/// im2col of the rows [k0, k0 + kb) and the output columns [j0, j1) (flat
/// indices into the output plane) of one image and group `xg` into `dst`
/// (kb rows, `ld` apart).
template <typename T>
static void hp_im2col2d_segment(const hp_conv2d_shape &s, const T *xg,
                                int64_t k0, int64_t kb, int64_t j0, int64_t j1,
                                T *dst, int64_t ld) {
  const int64_t kc = s.kH * s.kW;
  // (c, kh, kw) of row k0 + r, advanced as an odometer (a division per row
  // cost more than copying the short rows of small images).
  int64_t c = k0 / kc, kh = k0 % kc / s.kW, kw = k0 % s.kW;
  const int64_t oh0 = j0 / s.OW;
  for (int64_t r = 0; r < kb; ++r, ++kw, dst += ld) {
    if (kw == s.kW) {
      kw = 0;
      if (++kh == s.kH) {
        kh = 0;
        ++c;
      }
    }
    // The columns [lo, hi) of an output row that read inside the input row.
    const int64_t start = kw * s.dW - s.pW;
    const int64_t lo = start >= 0  ? 0
                       : s.sW == 1 ? -start
                                   : (s.sW - 1 - start) / s.sW;
    const int64_t hi = start >= s.W ? 0
                       : s.sW == 1  ? s.W - start
                                    : (s.W - start + s.sW - 1) / s.sW;
    const T *plane = xg + c * s.H * s.W;
    if (s.sH == 1 && s.sW == 1 && s.OW == s.W) {
      hp_im2col_shifted(s, plane, kh, start, lo, hi, j0, j1, dst);
      continue;
    }
    T *out = dst;
    for (int64_t oh = oh0; oh * s.OW < j1; ++oh) {
      const int64_t a = j0 > oh * s.OW ? j0 - oh * s.OW : 0;
      const int64_t b = j1 - oh * s.OW < s.OW ? j1 - oh * s.OW : s.OW;
      const int64_t ih = oh * s.sH - s.pH + kh * s.dH;
      if (ih < 0 || ih >= s.H)
        hp_im2col_span(out, plane, a, b, b, b, 0, s.sW);
      else
        hp_im2col_span(out, plane + ih * s.W, a, b, lo, hi, start, s.sW);
      out += b - a;
    }
  }
}

/// The largest kernel positions x output plane for which
/// hp_im2col2d_gather tabulates where each output reads (16 KiB of indices
/// on the stack).
#define HP_CONV_GATHER_MAX 4096

/// hp_im2col2d_tile for small output planes (late layers: 2 x 2 to 8 x 8):
/// the input offset each (kernel position, output) reads, or -1 for
/// padding, is tabulated once; then every row of every image is one gather.
/// Row segments of 4 to 16 columns made the per-segment bounds arithmetic
/// cost more than the GEMM.
template <typename T>
static void hp_im2col2d_gather(const hp_conv2d_shape &s, const T *x, int64_t g,
                               int64_t k0, int64_t kb, int64_t c0, int64_t c1,
                               T *tile) {
  const int64_t outPlane = s.OH * s.OW, kc = s.kH * s.kW;
  int32_t at[HP_CONV_GATHER_MAX];
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const int64_t ih = oh * s.sH - s.pH + k / s.kW * s.dH;
        const int64_t iw = ow * s.sW - s.pW + k % s.kW * s.dW;
        at[(k * s.OH + oh) * s.OW + ow] =
            ih >= 0 && ih < s.H && iw >= 0 && iw < s.W
                ? (int32_t)(ih * s.W + iw)
                : -1;
      }
  for (int64_t r = 0; r < kb; ++r) {
    const int64_t c = (k0 + r) / kc, k = (k0 + r) % kc;
    T *row = tile + r * (c1 - c0);
    for (int64_t n = c0 / outPlane; n * outPlane < c1; ++n) {
      const int64_t a = c0 > n * outPlane ? c0 : n * outPlane;
      const int64_t b = c1 < (n + 1) * outPlane ? c1 : (n + 1) * outPlane;
      const T *plane = x + ((n * s.G + g) * s.Cg + c) * s.H * s.W;
      const int32_t *from = at + k * outPlane + (a - n * outPlane);
      T *dst = row + (a - c0);
      HP_SIMD
      for (int64_t j = 0; j < b - a; ++j)
        dst[j] = from[j] >= 0 ? plane[from[j]] : T(0);
    }
  }
}

/// im2col of the rows [k0, k0 + kb) of group g and the columns [c0, c1) of
/// all images (image-major) into `tile` ([kb, c1 - c0], row-major).
template <typename T>
static void hp_im2col2d_tile(const hp_conv2d_shape &s, const T *x, int64_t g,
                             int64_t k0, int64_t kb, int64_t c0, int64_t c1,
                             T *tile) {
  const int64_t outPlane = s.OH * s.OW;
  if (outPlane <= 64 && outPlane * s.kH * s.kW <= HP_CONV_GATHER_MAX &&
      s.H * s.W <= INT32_MAX) {
    hp_im2col2d_gather(s, x, g, k0, kb, c0, c1, tile);
    return;
  }
  for (int64_t n = c0 / outPlane; n * outPlane < c1; ++n) {
    const int64_t a = c0 > n * outPlane ? c0 : n * outPlane;
    const int64_t b = c1 < (n + 1) * outPlane ? c1 : (n + 1) * outPlane;
    hp_im2col2d_segment(s, x + (n * s.G + g) * s.Cg * s.H * s.W, k0, kb,
                        a - n * outPlane, b - n * outPlane, tile + (a - c0),
                        c1 - c0);
  }
}

/// Stores the output tile `out` ([Mg, c1 - c0] sums) of group g and the
/// columns [c0, c1) of all images into y through the epilogue.
template <typename T, typename Acc>
static void hp_conv2d_scatter(const hp_conv2d_shape &s, int64_t g, int64_t c0,
                              int64_t c1, const hp_conv_epilogue<T> &epi,
                              const T *out, T *y) {
  const int64_t outPlane = s.OH * s.OW;
  for (int64_t n = c0 / outPlane; n * outPlane < c1; ++n) {
    const int64_t a = c0 > n * outPlane ? c0 : n * outPlane;
    const int64_t b = c1 < (n + 1) * outPlane ? c1 : (n + 1) * outPlane;
    for (int64_t m = 0; m < s.Mg; ++m) {
      const int64_t at =
          ((n * s.G + g) * s.Mg + m) * outPlane + (a - n * outPlane);
      const T *src = out + m * (c1 - c0) + (a - c0);
      if (hp_conv_epilogue_any(epi)) {
        HP_SIMD
        for (int64_t i = 0; i < b - a; ++i)
          y[at + i] =
              hp_conv_finish<T, Acc>(epi, (Acc)src[i], g * s.Mg + m, at + i);
      } else {
        memcpy(y + at, src, sizeof(T) * (size_t)(b - a));
      }
    }
  }
}

/// How a direct 2-D convolution kernel (hp_conv2d_blocked,
/// hp_conv2d_channels) splits its work into tasks that each read a
/// zero-padded copy of their input rows: tasks of `images` whole images, or
/// of `rows` output rows of one image (`images` 1, `chunks` per image), each
/// reading `Hp` padded input rows of `Wp` values per input channel. Reading
/// the copy, made once per task, replaced a zero-padded copy of each row
/// made just before its vector loads read it (ResNet-18/8's stem: 880 ->
/// 570 us at batch 32; the loads waited for the stores to retire).
struct hp_conv2d_pad_tiling {
  int64_t images, rows, chunks, Hp, Wp;
};

/// The tiling for `threads` threads, `outer` tasks per tile (groups times
/// channel blocks) and padded rows of `Wp` values (the kernel's reach along
/// a row): tasks as large as HP_CCONV_PAD holds, but at least four per
/// thread where the batch allows, without cutting an image into chunks of
/// fewer than `fewest` output rows. The caller guarantees that the input
/// rows of one output row fit (Cg x ((kH - 1) x dH + 1) x Wp values).
static inline hp_conv2d_pad_tiling
hp_conv2d_pad_tiles(const hp_conv2d_shape &s, int64_t threads, int64_t outer,
                    int64_t Wp, int64_t fewest) {
  hp_conv2d_pad_tiling t;
  t.Wp = Wp;
  const int64_t spanH = (s.kH - 1) * s.dH + 1;
  const int64_t fullHp = (s.OH - 1) * s.sH + spanH;
  const int64_t want = 4 * threads;
  const int64_t image = s.Cg * fullHp * Wp; // one image's padded planes
  // Rows per chunk: as many as the buffer holds, fewer for more tasks.
  int64_t rows = (HP_CCONV_PAD / (s.Cg * Wp) - spanH) / s.sH + 1;
  const int64_t split = (want + outer * s.N - 1) / (outer * s.N);
  if (split > 1) {
    int64_t r = (s.OH + split - 1) / split;
    r = r < fewest ? fewest : r;
    rows = r < rows ? r : rows;
  }
  if (image <= HP_CCONV_PAD && rows >= s.OH) {
    // Whole images: as many as fit, but no fewer tasks than wanted.
    int64_t n = HP_CCONV_PAD / image;
    const int64_t most = outer * s.N / want; // images per task
    if (most < n)
      n = most > 1 ? most : 1;
    t.images = n > s.N ? s.N : n;
    t.rows = s.OH, t.chunks = 1, t.Hp = fullHp;
    return t;
  }
  t.images = 1;
  t.rows = rows < 1 ? 1 : rows > s.OH ? s.OH : rows;
  t.chunks = (s.OH + t.rows - 1) / t.rows;
  t.Hp = (t.rows - 1) * s.sH + spanH;
  return t;
}

/// One tile of a hp_conv2d_pad_tiling: images [n0, n1), output rows
/// [oh0, oh1).
struct hp_conv2d_tile {
  int64_t n0, n1, oh0, oh1;
};

/// Tile `tile` of `t` (image tiles outer, chunks of rows inner).
static inline hp_conv2d_tile hp_conv2d_tile_at(const hp_conv2d_shape &s,
                                               const hp_conv2d_pad_tiling &t,
                                               int64_t tile) {
  hp_conv2d_tile r;
  r.n0 = tile / t.chunks * t.images;
  r.n1 = r.n0 + t.images < s.N ? r.n0 + t.images : s.N;
  r.oh0 = tile % t.chunks * t.rows;
  r.oh1 = r.oh0 + t.rows < s.OH ? r.oh0 + t.rows : s.OH;
  return r;
}

/// Copies input rows [ih0, ih0 + t.Hp) (ih0 may be negative: padding) of
/// images [n0, n1) of group g into `xp` as [image][channel][t.Hp][t.Wp],
/// input column iw at iw + pW, the pad columns and rows zero: one memset of
/// the whole tile, then a short loop per row (rows of 2 to 70 values, where
/// a memcpy and two memsets per row took a sixth of ResNet-18/8's run).
static void hp_conv2d_pad_rows(const hp_conv2d_shape &s,
                               const hp_conv2d_pad_tiling &t, const float *x,
                               int64_t n0, int64_t n1, int64_t g, int64_t ih0,
                               float *xp) {
  const int64_t left = s.pW < t.Wp ? s.pW : t.Wp;
  const int64_t copy = t.Wp - left < s.W ? t.Wp - left : s.W;
  const int64_t r0 = ih0 < 0 ? -ih0 : 0; // the first row that exists
  const int64_t r1 = s.H - ih0 < t.Hp ? s.H - ih0 : t.Hp;
  memset(xp, 0, sizeof(float) * (size_t)((n1 - n0) * s.Cg * t.Hp * t.Wp));
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t c = 0; c < s.Cg; ++c, xp += t.Hp * t.Wp) {
      const float *plane = x + ((n * s.G + g) * s.Cg + c) * s.H * s.W;
      for (int64_t r = r0; r < r1; ++r) {
        const float *src = plane + (ih0 + r) * s.W;
        float *dst = xp + r * t.Wp + left;
        HP_SIMD
        for (int64_t j = 0; j < copy; ++j)
          dst[j] = src[j];
      }
    }
}

/// Output channels and output columns of one block of hp_conv2d_blocked:
/// 8 x 16 float accumulators, eight AVX-512 registers (sixteen with AVX2).
#define HP_BCONV_M 8
#define HP_BCONV_W 16
/// The longest sum (Cg x kH x kW) whose weights hp_conv2d_blocked repacks
/// on the stack for a block of channels (8 x 1024 floats: 32 KiB).
#define HP_BCONV_K 1024

/// 16 floats as one vector (GCC and Clang vector extensions): the compilers
/// keep arrays of them in registers, where a float[8][16] under `omp simd`
/// was stored and reloaded on every multiply-add.
typedef float hp_v16f __attribute__((vector_size(64)));

/// Loads the input columns j * SW (j < 16, SW 1 or 2) of `row` into v. (An
/// output parameter: returning a 64-byte vector changes the ABI without
/// AVX-512.)
template <int SW>
static inline void hp_load_strided(const float *row, hp_v16f &v) {
  static_assert(SW == 1 || SW == 2, "strides 1 and 2 only");
  if (SW == 1) {
    memcpy(&v, row, sizeof v);
  } else {
    hp_v16f lo, hi;
    memcpy(&lo, row, sizeof lo);
    memcpy(&hi, row + 16, sizeof hi);
#if defined(__clang__)
    v = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                22, 24, 26, 28, 30);
#else
    typedef int hp_v16i __attribute__((vector_size(64)));
    const hp_v16i even = {0,  2,  4,  6,  8,  10, 12, 14,
                          16, 18, 20, 22, 24, 26, 28, 30};
    v = __builtin_shuffle(lo, hi, even);
#endif
  }
}

/// The epilogue's activation (hp_conv_finish's last step) on `count`
/// contiguous values, in place: one vector loop.
static inline void hp_conv_activate_run(const hp_conv_epilogue<float> &e,
                                        float *v, int64_t count) {
  if (e.act == HP_ACT_RELU) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      v[j] = v[j] < 0.0f ? 0.0f : v[j];
  } else if (e.act == HP_ACT_CLIP) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      v[j] = hp_min<float>(hp_max<float>(v[j], e.lo), e.hi);
  }
}

/// hp_conv_finish over `count` sums `v` of output channel m, into y
/// (contiguous; z: the residual's elements there, or null, which may be y
/// itself): one vector loop for the sums and one for the activation, in
/// hp_conv_finish's order.
static inline void hp_conv_finish_run(const hp_conv_epilogue<float> &e,
                                      const float *v, int64_t count, int64_t m,
                                      float *y, const float *z) {
  const float b = e.bias ? e.bias[m] : 0.0f;
  if (e.bias && z) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      y[j] = (b + v[j]) + z[j];
  } else if (e.bias) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      y[j] = b + v[j];
  } else if (z) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      y[j] = v[j] + z[j];
  } else {
    memcpy(y, v, sizeof(float) * (size_t)count);
  }
  hp_conv_activate_run(e, y, count);
}

/// The padded row width hp_conv2d_blocked reads: its blocks cover the
/// output columns up to a multiple of 16 (the columns past OW are computed
/// and not stored), each reading its kernel's width and 16 x NV columns at
/// its stride from ow0 x sW (a stride-2 load reads 32 per vector).
static inline int64_t hp_conv2d_blocked_row(const hp_conv2d_shape &s) {
  return (s.OW + HP_BCONV_W - 1) / HP_BCONV_W * HP_BCONV_W * s.sW +
         (s.kW - 1) * s.dW;
}

/// Vectors of 16 columns per block of hp_conv2d_blocked where a row has
/// room for them: 2 with AVX-512 (8 x 2 accumulators and the inputs fit its
/// 32 vector registers, and each weight broadcast and each row copy serves
/// twice the columns: ResNet-18/8's 7 x 7 stride-2 stem, 32 columns per
/// row), 1 otherwise (AVX2 has 16 registers of half the width).
#if defined(__AVX512F__)
#define HP_BCONV_NV 2
#else
#define HP_BCONV_NV 1
#endif

/// One block of hp_conv2d_blocked: output channels [m0, m0 + mCount) of
/// group g, output row oh, columns [ow0, ow0 + cols) of image n (cols <=
/// 16 x NV), for stride SW along the row. `xp` holds the image's padded
/// input planes (`Hp` rows of `Wp`, hp_conv2d_pad_rows) from row `r0`, the
/// output row's first. Each (input channel, kernel row, kernel column) loads
/// NV vectors of 16 input columns and adds them times each channel's
/// weight, from `wt` ([K][HP_BCONV_M], zero past mCount).
template <int SW, int NV>
static void
hp_conv2d_block(const hp_conv2d_shape &s, const hp_conv_epilogue<float> &epi,
                const float *xp, int64_t Hp, int64_t Wp, int64_t r0,
                const float *wt, float *y, int64_t n, int64_t g, int64_t m0,
                int64_t mCount, int64_t oh, int64_t ow0, int64_t cols) {
  hp_v16f acc[HP_BCONV_M][NV];
#pragma GCC unroll 8
  for (int m = 0; m < HP_BCONV_M; ++m)
    for (int v = 0; v < NV; ++v)
      acc[m][v] = hp_v16f{};
  const float *wk = wt;
  for (int64_t c = 0; c < s.Cg; ++c)
    for (int64_t kh = 0; kh < s.kH; ++kh, wk += s.kW * HP_BCONV_M) {
      const float *window = xp + (c * Hp + r0 + kh * s.dH) * Wp + ow0 * SW;
      for (int64_t kw = 0; kw < s.kW; ++kw) {
        hp_v16f in[NV];
        for (int v = 0; v < NV; ++v)
          hp_load_strided<SW>(window + kw * s.dW + v * HP_BCONV_W * SW, in[v]);
        const float *wv = wk + kw * HP_BCONV_M;
#pragma GCC unroll 8
        for (int m = 0; m < HP_BCONV_M; ++m) {
          const float w = wv[m];
          for (int v = 0; v < NV; ++v)
            acc[m][v] += w * in[v];
        }
      }
    }
  // The sums through memory, then one vector loop per channel: extracting
  // each lane from its register took a third of the stem's time.
  alignas(64) float out[HP_BCONV_M][HP_BCONV_W * NV];
  memcpy(out, acc, sizeof out);
  int64_t at = ((n * s.G + g) * s.Mg + m0) * s.OH * s.OW + oh * s.OW + ow0;
  for (int64_t m = 0; m < mCount; ++m, at += s.OH * s.OW)
    hp_conv_finish_run(epi, out[m], cols, g * s.Mg + m0 + m, y + at,
                       epi.z ? epi.z + at : nullptr);
}

/// The blocks of one output row of hp_conv2d_blocked: 16 x HP_BCONV_NV
/// columns at a time where the row has them, then 16.
template <int SW>
static void hp_conv2d_block_row(const hp_conv2d_shape &s,
                                const hp_conv_epilogue<float> &epi,
                                const float *xp, int64_t Hp, int64_t Wp,
                                int64_t r0, const float *wt, float *y,
                                int64_t n, int64_t g, int64_t m0,
                                int64_t mCount, int64_t oh) {
  int64_t ow0 = 0;
  const int64_t wide = HP_BCONV_W * HP_BCONV_NV;
  if (HP_BCONV_NV > 1)
    for (; ow0 + wide <= s.OW; ow0 += wide)
      hp_conv2d_block<SW, HP_BCONV_NV>(s, epi, xp, Hp, Wp, r0, wt, y, n, g, m0,
                                       mCount, oh, ow0, wide);
  for (; ow0 < s.OW; ow0 += HP_BCONV_W) {
    const int64_t cols = s.OW - ow0 < HP_BCONV_W ? s.OW - ow0 : HP_BCONV_W;
    hp_conv2d_block<SW, 1>(s, epi, xp, Hp, Wp, r0, wt, y, n, g, m0, mCount, oh,
                           ow0, cols);
  }
}

/// Direct 2-D convolution of float on the CPU with register-blocked
/// accumulators, vectorized along output rows: one task per group, block
/// of HP_BCONV_M output channels and tile of images or output rows
/// (hp_conv2d_pad_tiles), 16 or 32 columns at a time, strides 1 and 2
/// along the row (others take the tiles). No im2col: it wins where a group
/// has few output channels, so that the GEMM after im2col has few rows and
/// the im2col writes about as much as the GEMM computes (ResNet's 7 x 7 stem
/// with 8 output channels spent two thirds of its time in im2col). Each
/// task repacks its channels' weights as [K][HP_BCONV_M] and copies its
/// input rows, zero-padded, on its stack.
static void hp_conv2d_blocked(hp_conv2d_shape s, hp_conv_epilogue<float> epi,
                              const float *x, const float *w, float *y) {
  const int64_t K = s.Cg * s.kH * s.kW;
  const int64_t mBlocks = (s.Mg + HP_BCONV_M - 1) / HP_BCONV_M;
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  const hp_conv2d_pad_tiling t = hp_conv2d_pad_tiles(
      s, threads, s.G * mBlocks, hp_conv2d_blocked_row(s), 1);
  const int64_t tiles = (s.N + t.images - 1) / t.images * t.chunks;
  const int64_t imageStride = s.Cg * t.Hp * t.Wp;
#pragma omp parallel
  {
    float wt[HP_BCONV_K * HP_BCONV_M];
    alignas(64) float xp[HP_CCONV_PAD];
    int64_t packed = -1, padded = -1; // what wt and xp hold
#pragma omp for schedule(static)
    for (int64_t task = 0; task < s.G * mBlocks * tiles; ++task) {
      // Channel blocks outermost: a thread's tasks share one block's weights.
      const int64_t tile = task % tiles, gb = task / tiles;
      const int64_t g = gb / mBlocks, m0 = gb % mBlocks * HP_BCONV_M;
      const int64_t mCount = s.Mg - m0 < HP_BCONV_M ? s.Mg - m0 : HP_BCONV_M;
      if (packed != gb) {
        for (int64_t k = 0; k < K; ++k)
          for (int64_t m = 0; m < HP_BCONV_M; ++m)
            wt[k * HP_BCONV_M + m] =
                m < mCount ? w[(g * s.Mg + m0 + m) * K + k] : 0.0f;
        packed = gb;
      }
      const hp_conv2d_tile at = hp_conv2d_tile_at(s, t, tile);
      const int64_t n0 = at.n0, n1 = at.n1, oh0 = at.oh0, oh1 = at.oh1;
      if (padded != g * tiles + tile) {
        hp_conv2d_pad_rows(s, t, x, n0, n1, g, oh0 * s.sH - s.pH, xp);
        padded = g * tiles + tile;
      }
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          const float *img = xp + (n - n0) * imageStride;
          const int64_t r0 = (oh - oh0) * s.sH;
          if (s.sW == 1)
            hp_conv2d_block_row<1>(s, epi, img, t.Hp, t.Wp, r0, wt, y, n, g, m0,
                                   mCount, oh);
          else
            hp_conv2d_block_row<2>(s, epi, img, t.Hp, t.Wp, r0, wt, y, n, g, m0,
                                   mCount, oh);
        }
    }
  }
}

/// Whether hp_conv2d_blocked runs a float convolution: at most
/// HP_BCONV_M output channels per group (a GEMM of so few rows after im2col
/// ran at half its speed: ResNet-18/8's stem, 1.9 -> 1.1 ms at batch 32),
/// rows of at least HP_BCONV_W outputs, stride 1 or 2 along the row, and
/// buffers that fit: the weights, and the padded input rows of one output
/// row. Not for depthwise groups (hp_conv2d_direct_pays), where one output
/// channel would leave seven accumulators idle.
static inline bool hp_conv2d_blocked_pays(const hp_conv2d_shape &s) {
  return s.Mg <= HP_BCONV_M && !hp_conv2d_direct_pays(s) &&
         s.OW >= HP_BCONV_W && (s.sW == 1 || s.sW == 2) &&
         s.Cg * s.kH * s.kW <= HP_BCONV_K &&
         s.Cg * ((s.kH - 1) * s.dH + 1) * hp_conv2d_blocked_row(s) <=
             HP_CCONV_PAD;
}

/// The steps of hp_bcast_block per cache line it prefetches: 4, 16 bytes a
/// step. A block of hp_gemm_panels (K steps) then fetches K / 4 lines of the
/// next panel (K x 64 floats, 4 K lines): the first 16 blocks of a panel's
/// task fetch all of it.
#define HP_PREFETCH_STEPS 4

/// P x 16 x NVM sums of products with one operand broadcast (the
/// micro-kernel of hp_conv2d_channels and hp_gemm_panels): for each of P
/// outputs and 16 x NVM columns of `w`,
///   out[p][j] = sum over (a, b, c) < ext of
///               x[base[p] + a step[0] + b step[1] + c step[2]] w[i][j],
/// i counting the (a, b, c) in order, `wStep` values apart in w. Per step,
/// NVM vector loads of w and one broadcast per output: a convolution's
/// (input channel, kernel row, kernel column) over its positions, or a
/// GEMM's k over its rows (ext {1, 1, K}).
///
/// `next` (may be null): memory the caller reads soon, fetched into L2
/// meanwhile, one cache line per HP_PREFETCH_STEPS steps (hp_gemm_panels:
/// its next panel).
template <int P, int NVM>
__attribute__((noinline)) static void
hp_bcast_block(const float *x, const int64_t *base, const int64_t ext[3],
               const int64_t step[3], const float *w, int64_t wStep,
               float (*out)[16 * NVM], const char *next = nullptr) {
  // Local accumulators, stored once at the end: a vector of float may alias
  // the float inputs, so accumulating into `out` would keep them in memory.
  // Every loop over P or NVM is unrolled, so that they stay in registers.
  hp_v16f acc[P][NVM];
#pragma GCC unroll 24
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < NVM; ++v)
      acc[p][v] = hp_v16f{};
  const float *wk = w;
  for (int64_t a = 0; a < ext[0]; ++a)
    for (int64_t b = 0; b < ext[1]; ++b)
    // Two steps per iteration: the next step's loads issue beside this
    // one's FMAs. On an Intel Sapphire Rapids core, GPT-2 small's GEMMs
    // went from 62-68% to 68-74% of the FMA peak, its LM head from 38.5 to
    // 35.7 ms (bench/codegen/gemm-panels.sh, 2 threads).
#pragma GCC unroll 2
      for (int64_t c = 0; c < ext[2]; ++c, wk += wStep) {
        const float *xk = x + a * step[0] + b * step[1] + c * step[2];
        if (next) // 2: prefetcht1, into L2
          __builtin_prefetch(next + c * (64 / HP_PREFETCH_STEPS), 0, 2);
        hp_v16f wv[NVM];
#pragma GCC unroll 4
        for (int v = 0; v < NVM; ++v)
          memcpy(&wv[v], wk + 16 * v, sizeof wv[v]);
#pragma GCC unroll 24
        for (int p = 0; p < P; ++p) {
          const float in = xk[base[p]];
#pragma GCC unroll 4
          for (int v = 0; v < NVM; ++v)
            acc[p][v] += in * wv[v];
        }
      }
#pragma GCC unroll 24
  for (int p = 0; p < P; ++p)
    memcpy(out[p], acc[p], sizeof acc[p]);
}

/// hp_conv_finish over the sums of one output position in channels
/// [m0, m0 + count) (`v`, contiguous), the position's element of channel m0
/// being element `at` of the output and of z, `stride` elements per channel:
/// one vector loop per part of the epilogue, in hp_conv_finish's order.
static inline void hp_cconv_finish(const hp_conv_epilogue<float> &e, float *v,
                                   int64_t count, int64_t m0, int64_t at,
                                   int64_t stride) {
  if (e.bias) {
    const float *b = e.bias + m0;
    HP_SIMD
    for (int64_t m = 0; m < count; ++m)
      v[m] = b[m] + v[m];
  }
  if (e.z)
    for (int64_t m = 0; m < count; ++m)
      v[m] = v[m] + e.z[at + m * stride];
  hp_conv_activate_run(e, v, count);
}

/// Direct 2-D convolution of float on the CPU, vectorized over output
/// channels (16 per vector) with the weights packed at compile time as
/// [G][Cg x kH x kW][Mp] (hp_conv2d_packed_channels, zero past Mg): each block
/// holds P output positions times NVM vectors of channels, and each input
/// value is broadcast once per block. For convolutions with many output
/// channels and small planes (ResNet's later stages, 2 x 2 to 8 x 8
/// outputs), where the tiles' GEMMs of few columns reach half of ONNX
/// Runtime's speed and the row-vectorized hp_conv2d_blocked would leave
/// most of a vector idle. One task per group, channel block and tile
/// (hp_conv2d_pad_tiles): it copies the input rows it reads into zero-padded
/// planes on its stack (no bounds tests in the loop), and its positions run
/// on across the images of the tile, so that 2 x 2 planes fill a block.
template <int P, int NVM>
static void hp_conv2d_channels(hp_conv2d_shape s, hp_conv_epilogue<float> epi,
                               const float *x, const float *wp, float *y,
                               hp_conv2d_pad_tiling t) {
  const int64_t K = s.Cg * s.kH * s.kW, Mp = hp_conv2d_packed_channels(s.Mg);
  const int64_t mBlock = 16 * NVM, mBlocks = (s.Mg + mBlock - 1) / mBlock;
  const int64_t imageTiles = (s.N + t.images - 1) / t.images;
  const int64_t tiles = imageTiles * t.chunks, outPlane = s.OH * s.OW;
  const int64_t plane = t.Hp * t.Wp, imageStride = s.Cg * plane;
  // The sums over (input channel, kernel row, kernel column) in xp.
  const int64_t ext[3] = {s.Cg, s.kH, s.kW};
  const int64_t step[3] = {plane, s.dH * t.Wp, s.dW};
#pragma omp parallel
  {
    alignas(64) float xp[HP_CCONV_PAD];
    int64_t padded = -1; // the (group, tile) whose input xp holds
#pragma omp for schedule(static)
    for (int64_t task = 0; task < s.G * tiles * mBlocks; ++task) {
      // Channel blocks innermost: a thread's consecutive tasks share a tile.
      const int64_t mb = task % mBlocks, tile = task / mBlocks % tiles;
      const int64_t g = task / (mBlocks * tiles);
      const hp_conv2d_tile at = hp_conv2d_tile_at(s, t, tile);
      const int64_t n0 = at.n0, n1 = at.n1, oh0 = at.oh0, oh1 = at.oh1;
      if (padded != g * tiles + tile) {
        hp_conv2d_pad_rows(s, t, x, n0, n1, g, oh0 * s.sH - s.pH, xp);
        padded = g * tiles + tile;
      }
      const int64_t m0 = mb * mBlock;
      const int64_t mCount = s.Mg - m0 < mBlock ? s.Mg - m0 : mBlock;
      const float *wg = wp + g * K * Mp + m0;
      // Positions: (image, row, column) of the tile, flattened.
      const int64_t perImage = (oh1 - oh0) * s.OW;
      const int64_t count = (n1 - n0) * perImage;
      for (int64_t q = 0; q < count; q += P) {
        const int64_t live = count - q < P ? count - q : P;
        int64_t base[P], at[P];
        for (int p = 0; p < P; ++p) {
          // Past the tile's end, the last position again (not stored).
          const int64_t k = q + (p < live ? p : live - 1);
          const int64_t i = k / perImage, r = k % perImage;
          const int64_t oh = r / s.OW, ow = r % s.OW;
          base[p] = i * imageStride + oh * s.sH * t.Wp + ow * s.sW;
          at[p] =
              ((n0 + i) * s.G + g) * s.Mg * outPlane + (oh0 + oh) * s.OW + ow;
        }
        alignas(64) float out[P][16 * NVM];
        hp_bcast_block<P, NVM>(xp, base, ext, step, wg, Mp, out);
        for (int64_t p = 0; p < live; ++p)
          hp_cconv_finish(epi, out[p], mCount, g * s.Mg + m0,
                          at[p] + m0 * outPlane, outPlane);
        for (int64_t m = 0; m < mCount; ++m)
          for (int64_t p = 0; p < live; ++p)
            y[at[p] + (m0 + m) * outPlane] = out[p][m];
      }
    }
  }
}

/// hp_conv2d_channels with the accumulators that fit the group's channels:
/// 24 positions of one vector (16 channels), 12 of two, or 6 of four.
static void hp_conv2d_channels_launch(const hp_conv2d_shape &s,
                                      const hp_conv_epilogue<float> &epi,
                                      const float *x, const float *wp, float *y,
                                      int64_t threads) {
  const int64_t nvm = hp_conv2d_channel_vectors(s.Mg);
  // Each position reads (kW - 1) x dW + 1 columns from its first.
  const hp_conv2d_pad_tiling t = hp_conv2d_pad_tiles(
      s, threads, s.G * ((s.Mg + 16 * nvm - 1) / (16 * nvm)),
      (s.OW - 1) * s.sW + (s.kW - 1) * s.dW + 1, (24 + s.OW - 1) / s.OW);
  if (nvm == 1)
    hp_conv2d_channels<24, 1>(s, epi, x, wp, y, t);
  else if (nvm == 2)
    hp_conv2d_channels<12, 2>(s, epi, x, wp, y, t);
  else
    hp_conv2d_channels<6, 4>(s, epi, x, wp, y, t);
}

/// The rows of one block of hp_gemm_panels (6 x 64 accumulators: 24 of
/// AVX-512's 32 vector registers).
#define HP_GEMM_ROWS 6

/// One block of hp_gemm_panels: the sums of HP_GEMM_ROWS rows of A (at
/// `base`) with the first `cols` columns of a panel, as few vectors of 16
/// as cover them (a panel's last columns past N are zeros that need no
/// products: K and V projections of 32 columns took twice their work).
/// Writes them to out as HP_GEMM_ROWS rows and returns the row's length.
static int64_t hp_gemm_block(const float *A, const int64_t *base,
                             const int64_t ext[3], const int64_t step[3],
                             const float *bp, int64_t cols, float *out,
                             const char *next) {
  const int64_t vectors = (cols + 15) / 16;
  switch (vectors) {
  case 1:
    hp_bcast_block<HP_GEMM_ROWS, 1>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[16]>(out), next);
    break;
  case 2:
    hp_bcast_block<HP_GEMM_ROWS, 2>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[32]>(out), next);
    break;
  case 3:
    hp_bcast_block<HP_GEMM_ROWS, 3>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[48]>(out), next);
    break;
  default:
    hp_bcast_block<HP_GEMM_ROWS, 4>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[64]>(out), next);
    return HP_GEMM_PANEL;
  }
  return 16 * vectors;
}

/// C[M, N] = alpha A[M, K] B + beta C (row-major, lda and ldc values per
/// row; beta 0: C is not read), or with `bias` (a row [N]) alpha A B + beta
/// bias in every row, on the CPU, B packed at compile time as
/// panels of 64 columns (hetpar_packed.h, hp_gemm_packs_b): for each block of
/// 6 rows, K steps of four vector loads of the panel's row k and six
/// broadcasts of A's. No packing at run time: OpenBLAS repacks B on every
/// call, which took 12% of GPT-2 small at 1 x 128 (ONNX Runtime's MLAS packs
/// its weights once, at load, as this does at compile time). Tasks of one
/// panel and a run of row blocks, in the order of the runs, at least four per
/// thread where the shape allows.
template <typename Epi = hp_epi_none>
static void hp_gemm_panels(int64_t M, int64_t N, int64_t K, float alpha,
                           const float *A, int64_t lda, const float *Bp,
                           float beta, const float *bias, float *C, int64_t ldc,
                           Epi epi = Epi()) {
  const bool plain = std::is_same<Epi, hp_epi_none>::value;
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  const int64_t panels = (N + HP_GEMM_PANEL - 1) / HP_GEMM_PANEL;
  const int64_t blocks = (M + HP_GEMM_ROWS - 1) / HP_GEMM_ROWS;
  // Row runs per panel: about 4 tasks per thread, their count a multiple of
  // the threads where the rows allow, so that static scheduling gives every
  // thread the same work (3 panels of 4 runs on 2 threads, not 9 tasks
  // split 5:4).
  int64_t runs = (4 * threads + panels - 1) / panels;
  while (panels * runs % threads != 0 && runs < blocks)
    ++runs;
  runs = runs > blocks ? blocks : runs;
  const int64_t run = (blocks + runs - 1) / runs; // blocks per task
  const int64_t ext[3] = {1, 1, K}, step[3] = {0, 0, 1};
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < panels * runs; ++task) {
    // Run-major: a thread's contiguous share of the tasks holds every
    // panel alike, so a narrower last panel does not load one thread alone.
    const int64_t panel = task % panels, b0 = task / panels * run;
    const int64_t n0 = panel * HP_GEMM_PANEL;
    const int64_t cols = N - n0 < HP_GEMM_PANEL ? N - n0 : HP_GEMM_PANEL;
    const float *bp = Bp + panel * K * HP_GEMM_PANEL;
    for (int64_t b = b0; b < b0 + run && b < blocks; ++b) {
      const int64_t m0 = b * HP_GEMM_ROWS;
      const int64_t live = M - m0 < HP_GEMM_ROWS ? M - m0 : HP_GEMM_ROWS;
      int64_t base[HP_GEMM_ROWS];
      for (int p = 0; p < HP_GEMM_ROWS; ++p) // past M: the last row again
        base[p] = (m0 + (p < live ? p : live - 1)) * lda;
      alignas(64) float out[HP_GEMM_ROWS * HP_GEMM_PANEL];
      // The task's next panel, from DRAM while this one computes: its
      // first block would wait for it otherwise (GPT-2 small's tied LM head
      // at 1 x 128, 154 MB of panels: 40-41 -> 35-36 ms on 2 threads of an
      // Intel Sapphire Rapids, bench/codegen/gemm-panels.sh).
      const char *next = nullptr;
      if (panel + 1 < panels)
        next = reinterpret_cast<const char *>(bp + K * HP_GEMM_PANEL) +
               (b - b0) * K * (64 / HP_PREFETCH_STEPS);
      const int64_t width =
          hp_gemm_block(A, base, ext, step, bp, cols, out, next);
      for (int64_t p = 0; p < live; ++p) {
        float *c = C + (m0 + p) * ldc + n0;
        const float *v = out + p * width;
        if (bias && beta != 0.0f) {
          const float *r = bias + n0;
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j] + beta * r[j]);
        } else if (bias) {
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j]);
        } else if (beta != 0.0f) {
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j] + beta * c[j]);
        } else if (alpha != 1.0f || !plain) {
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j]);
        } else {
          memcpy(c, v, sizeof(float) * (size_t)cols);
        }
      }
    }
  }
}

/// A 2-D convolution on the CPU as independent tasks, one per group and
/// column tile (hp_conv2d_tiles; a tile may span images): each thread
/// writes the tile's im2col rows into its own stack buffer and runs a
/// one-thread GEMM, into y where the tile lies in one image, else into its
/// output buffer, added to y afterwards. ONNX Runtime's MLAS segments its
/// convolutions the same way. The whole-image path instead alternates a
/// parallel im2col with a threaded GEMM per image: small images left the
/// threads waiting (ResNet-18/8 at batch 32 spent a third of its time in
/// OpenMP barriers), and its GEMMs of 4 to 16 columns (late layers) ran at a
/// third of the speed of tiles of 64. float and double (a GEMM that cannot
/// fail).
template <typename T, typename Acc>
static void hp_conv2d_tiled(hp_ctx *ctx, hp_conv2d_shape s,
                            hp_conv_epilogue<T> epi, const T *x, const T *w,
                            T *y, hp_conv2d_tiling t) {
  const int64_t K = s.Cg * s.kH * s.kW, outPlane = s.OH * s.OW;
  const int64_t total = s.N * outPlane, inPlane = s.H * s.W;
  const bool pointwise = hp_conv2d_pointwise(s);
#pragma omp parallel
  {
    alignas(64) T tile[HP_CONV_TILE_ELEMS];
    alignas(64) T out[HP_CONV_OUT_ELEMS];
#pragma omp for schedule(static)
    for (int64_t task = 0; task < s.G * t.tiles; ++task) {
      const int64_t g = task / t.tiles, c0 = task % t.tiles * t.width;
      const int64_t c1 = c0 + t.width < total ? c0 + t.width : total;
      const int64_t n = c0 / outPlane, j0 = c0 - n * outPlane;
      const bool single = (c1 - 1) / outPlane == n; // one image
      T *C = single ? y + (n * s.G + g) * s.Mg * outPlane + j0 : out;
      for (int64_t k0 = 0; k0 < K; k0 += t.kb) {
        const int64_t kb = K - k0 < t.kb ? K - k0 : t.kb;
        const T *B = tile;
        int64_t ldb = c1 - c0;
        if (single && pointwise) {
          B = x + ((n * s.G + g) * s.Cg + k0) * inPlane + j0;
          ldb = inPlane;
        } else {
          hp_im2col2d_tile(s, x, g, k0, kb, c0, c1, tile);
        }
        hp_gemm<T, Acc>(
            ctx, 0, 0, s.Mg, c1 - c0, kb, 1.0f, w + g * s.Mg * K + k0, K, 0, B,
            ldb, 0, k0 > 0 ? 1.0f : 0.0f, C, single ? outPlane : c1 - c0, 0, 1);
      }
      if (!single)
        hp_conv2d_scatter<T, Acc>(s, g, c0, c1, epi, out, y);
      else if (hp_conv_epilogue_any(epi))
        // The tile's sums are still in cache: finish them in place.
        for (int64_t m = 0; m < s.Mg; ++m) {
          const int64_t at = ((n * s.G + g) * s.Mg + m) * outPlane + j0;
          HP_SIMD
          for (int64_t i = 0; i < c1 - c0; ++i)
            y[at + i] = hp_conv_finish<T, Acc>(epi, (Acc)y[at + i],
                                               g * s.Mg + m, at + i);
        }
    }
  }
}
#endif

/// y = epi(y) over the N x M planes of `outPlane` outputs, where `epi` does
/// anything (after a library convolution or GEMMs).
template <typename T, typename Acc>
static void hp_conv_epilogue_pass(hp_ctx *ctx, hp_conv_epilogue<T> epi,
                                  int64_t N, int64_t M, int64_t outPlane,
                                  T *y) {
  if (hp_conv_epilogue_any(epi))
    hp_launch(ctx, hp_conv_epilogue_rows<T, Acc>, N * M * outPlane, epi, M,
              outPlane, y);
}

/// A convolution `s` (NC..., groups) finished by `epi`, per image and group
/// as im2col into `cols` ([Cg * prod(k), prod(out)]; unused when
/// `pointwise`: the GEMM reads x as it is) and one GEMM, then one pass of the
/// epilogue. Returns 0, or non-zero with ctx->error set (a GEMM failure).
template <typename T, typename Acc>
static int hp_conv_im2col(hp_ctx *ctx, const hp_conv_nd &s, bool pointwise,
                          hp_conv_epilogue<T> epi, const T *x, const T *w, T *y,
                          T *cols) {
  int64_t inPlane = 1, outPlane = 1, kc = 1;
  for (int d = 0; d < s.nsp; ++d) {
    inPlane *= s.in.v[d];
    outPlane *= s.out.v[d];
    kc *= s.k.v[d];
  }
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t g = 0; g < s.G; ++g) {
      const T *xg = x + (n * s.G + g) * s.Cg * inPlane;
      if (!pointwise)
        hp_im2col_launch<T>(ctx, s.nsp, s.in, s.out, s.k, s.stride, s.pad,
                            s.dilation, s.Cg, kc, inPlane, outPlane, xg, cols);
      if (hp_gemm<T, Acc>(ctx, 0, 0, s.Mg, outPlane, s.Cg * kc, 1.0f,
                          w + g * s.Mg * s.Cg * kc, s.Cg * kc, 0,
                          pointwise ? xg : cols, outPlane, 0, 0.0f,
                          y + (n * s.G + g) * s.Mg * outPlane, outPlane, 0, 1))
        return 1;
    }
  hp_conv_epilogue_pass<T, Acc>(ctx, epi, s.N, s.G * s.Mg, outPlane, y);
  return 0;
}

/// A 2-D convolution finished by `epi` (bias, residual, activation): the
/// direct kernel where hp_conv2d_direct_pays; on the GPU cuDNN where it
/// takes the convolution (hp_conv_cudnn), then one pass of the epilogue;
/// on the CPU the register-blocked
/// kernel, the channel-vectorized one (given `wPacked`, the weights packed
/// as hp_conv2d_channels_runs describes; null: not packed) or the tiles
/// where they pay (each finishes its outputs while they are in registers or
/// cache); else per image and group im2col into `cols` ([Cg*kH*kW, OH*OW])
/// and one GEMM, then one pass of the epilogue. Returns 0, or non-zero with
/// ctx->error set (a GEMM failure).
template <typename T, typename Acc>
static int hp_conv2d_launch(hp_ctx *ctx, hp_conv2d_shape s,
                            hp_conv_epilogue<T> epi, const T *x, const T *w,
                            const T *wPacked, T *y, T *cols) {
  if (hp_conv2d_direct_pays(s)) {
#if HP_CUDA
    hp_launch(ctx, hp_conv2d_direct<T, Acc>, s.N * s.G * s.Mg * s.OH * s.OW, s,
              epi, x, w, y);
#else
    hp_launch(ctx, hp_conv2d_direct_rows<T, Acc>,
              s.N * s.G * ((s.Mg + HP_CONV_MB - 1) / HP_CONV_MB) * s.OH *
                  ((s.OW + HP_CONV_OWT - 1) / HP_CONV_OWT),
              s, epi, x, w, y);
#endif
    return 0;
  }
#if HP_CUDA
  if (hp_try_library([&] {
        return hp_conv_cudnn<T>(ctx, hp_conv_nd_of(s), x, w, y);
      }) == 0) {
    hp_conv_epilogue_pass<T, Acc>(ctx, epi, s.N, s.G * s.Mg, s.OH * s.OW, y);
    return 0;
  }
#else
  // Tiles for float and double (a GEMM that cannot fail), where a tile has
  // room for 16 columns.
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  if (std::is_same<T, float>::value && hp_conv2d_blocked_pays(s)) {
    hp_conv2d_blocked(s, *(const hp_conv_epilogue<float> *)&epi,
                      (const float *)x, (const float *)w, (float *)y);
    return 0;
  }
  if (std::is_same<T, float>::value && wPacked && hp_conv2d_channels_runs(s)) {
    hp_conv2d_channels_launch(s, *(const hp_conv_epilogue<float> *)&epi,
                              (const float *)x, (const float *)wPacked,
                              (float *)y, threads);
    return 0;
  }
  const hp_conv2d_tiling tiling = hp_conv2d_tiles(s, threads);
  if ((std::is_same<T, float>::value || std::is_same<T, double>::value) &&
      tiling.tiles > 0) {
    hp_conv2d_tiled<T, Acc>(ctx, s, epi, x, w, y, tiling);
    return 0;
  }
#endif
  return hp_conv_im2col<T, Acc>(ctx, hp_conv_nd_of(s), hp_conv2d_pointwise(s),
                                epi, x, w, y, cols);
}

/// A convolution of any number of spatial dimensions (`nsp`; hp_conv2d_launch
/// takes 1-D and 2-D ones) finished by `epi`: on the GPU cuDNN where it
/// takes it (hp_conv_cudnn: 3-D), then one pass of the epilogue; else
/// hp_conv_im2col. Returns 0, or non-zero with ctx->error set.
template <typename T, typename Acc>
static int hp_conv_nd_launch(hp_ctx *ctx, const hp_conv_nd &s, bool pointwise,
                             hp_conv_epilogue<T> epi, const T *x, const T *w,
                             T *y, T *cols) {
#if HP_CUDA
  if (hp_try_library([&] { return hp_conv_cudnn<T>(ctx, s, x, w, y); }) == 0) {
    int64_t outPlane = 1;
    for (int d = 0; d < s.nsp; ++d)
      outPlane *= s.out.v[d];
    hp_conv_epilogue_pass<T, Acc>(ctx, epi, s.N, s.G * s.Mg, outPlane, y);
    return 0;
  }
#endif
  return hp_conv_im2col<T, Acc>(ctx, s, pointwise, epi, x, w, y, cols);
}

/// C = epi(C) over every element of the batch's M x N matrices (ldc values
/// apart, sC between matrices): a GEMM epilogue (Epi, a functor on float,
/// hp_epi_none for none) where the GEMM could not apply it as it stored
/// its sums (not hp_gemm_panels: OpenBLAS, cuBLAS, cuBLASLt).
template <typename T, typename Epi>
HP_KERNEL(hp_gemm_epilogue_rows, int64_t N, int64_t ldc, Epi epi, T *C) {
#if HP_CUDA
  HP_FOR(i) {
    T *c = C + i / N * ldc + i % N;
    *c = (T)epi((float)*c);
  }
#else
  // Rows of N as SIMD lanes (the activation's exp or erf vectorized), as
  // the fused elementwise kernels run.
  HP_FOR_ROWS(row, N) {
    T *c = C + row * ldc;
    HP_SIMD
    for (int64_t j = 0; j < N; ++j)
      c[j] = (T)epi((float)c[j]);
  }
#endif
}
template <typename T>
static void hp_gemm_epilogue(hp_ctx *, int64_t, int64_t, int64_t, int64_t,
                             int64_t, T *, hp_epi_none) {}
template <typename T, typename Epi>
static void hp_gemm_epilogue(hp_ctx *ctx, int64_t M, int64_t N, int64_t ldc,
                             int64_t sC, int64_t batch, T *C, Epi epi) {
  for (int64_t b = 0; b < batch; ++b)
    hp_launch(ctx, hp_gemm_epilogue_rows<T, Epi>, M * N, N, ldc, epi,
              C + b * sC);
}

/// C's rows, each the row `bias` [N] (ldc values apart): Gemm's broadcast C
/// before hp_gemm adds beta C to the product.
template <typename T>
HP_KERNEL(hp_bias_rows, int64_t N, int64_t ldc, const T *bias, T *C) {
  HP_FOR(i) { C[i / N * ldc + i % N] = bias[i % N]; }
}

/// hp_gemm given `Bp`, B packed as hp_gemm_packs_b describes (null: not
/// packed), and optionally `bias`, a row [N]: with it C's prior content is
/// that row in every row (C = alpha op(A) op(B) + beta bias, Gemm with a C of
/// [N]) and is not read. On the CPU, a float GEMM with no transposed A whose
/// batches share B and lie row after row in A and C (one GEMM of batch x M
/// rows) runs hp_gemm_panels on Bp, adding the biases as it stores its sums.
/// On the GPU, a bias with beta 1, and an epilogue that is one activation
/// cuBLASLt has (Epi::lt_act: ReLU, tanh GELU), are cuBLASLt's epilogue
/// (hp_gemm_lt) where cuBLASLt takes the GEMM. Everything else fills C with the
/// rows and runs hp_gemm on B. Then `epi` finishes every element of C (C =
/// epi(product + bias)): as hp_gemm_panels stores its sums, else in one
/// pass after the GEMM (hp_gemm_epilogue). Returns 0, or non-zero with
/// ctx->error set.
template <typename T, typename Acc, typename Epi = hp_epi_none>
static int hp_gemm_b(HP_GEMM_PARAMS(T), const T *Bp, const T *bias,
                     Epi epi = Epi()) {
#if !HP_CUDA
  const bool stacked = batch == 1 || (sB == 0 && lda == K && sA == M * K &&
                                      ldc == N && sC == M * N);
  if (std::is_same<T, float>::value && Bp && !ta && stacked &&
      hp_gemm_packs_b(batch * M, N, K)) {
    hp_gemm_panels(batch * M, N, K, alpha, (const float *)A, lda,
                   (const float *)Bp, beta, (const float *)bias, (float *)C,
                   ldc, epi);
    return 0;
  }
#else
  // cuBLASLt for a bias row, an activation it has (Epi::lt_act), or both;
  // another epilogue then runs as its own pass.
  const int act = Epi::lt_act;
  const bool lt = bias ? beta == 1.0f : beta == 0.0f && act != HP_LT_ACT_NONE;
  if (lt && hp_try_library(
                [&] { return hp_gemm_lt<T>(HP_GEMM_ARGS, bias, act); }) == 0) {
    if (act == HP_LT_ACT_NONE)
      hp_gemm_epilogue(ctx, M, N, ldc, sC, batch, C, epi);
    return 0;
  }
#endif
  if (bias)
    for (int64_t b = 0; b < batch; ++b)
      hp_launch(ctx, hp_bias_rows<T>, M * N, N, ldc, bias, C + b * sC);
  const int rc = hp_gemm<T, Acc>(HP_GEMM_ARGS);
  if (rc == 0)
    hp_gemm_epilogue(ctx, M, N, ldc, sC, batch, C, epi);
  return rc;
}

//===----------------------------------------------------------------------===//
// The ABI functions (ProgramABI.h) shared by every generated program. The
// program defines hp_program_run, HP_ARENA_BYTES, HP_WEIGHTS_BYTES,
// HP_NUM_INPUTS, HP_NUM_OUTPUTS, HP_INPUT_BYTES and HP_OUTPUT_BYTES (byte
// counts, each followed by a comma) and HP_CHECKED_NODES (string literals
// naming the nodes whose kernels check indices, in their order, each followed
// by a comma; empty when none) before including this part with
// HETPAR_DEFINE_ABI (a second include of this file).
//===----------------------------------------------------------------------===//
//===----------------------------------------------------------------------===//
// Collectives over explicit device groups, for multi-device programs (the
// local form of the dist dialect). Compiled only with HETPAR_MULTI_DEVICE, so
// one-device programs need no MPI. Both backends run them with MPI (one
// process per device; the rank in MPI_COMM_WORLD is the device's place in the
// mesh, hp_rank_of); on the GPU they run on NCCL where every rank has a GPU
// of its own (hp_collectives_init), else the buffers are staged through host
// memory (hp_staged), which also works with every rank on one GPU. Groups are
// ordered device lists, as in the dist ops;
// counts are elements. Every function returns 0, or non-zero with
// ctx->error set.
//===----------------------------------------------------------------------===//
#if defined(HETPAR_MULTI_DEVICE)
#include <dlfcn.h>
// The C API only: Open MPI's and MPICH's C++ bindings would add about 0.9 s
// of parsing to every device program's build.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

// C headers for the watchdog's thread and clock: <thread>, <mutex> and
// <chrono> would add about 0.4 s to every device program's build.
#include <algorithm>
#include <atomic>
#include <type_traits>

enum { HP_SUM, HP_MAX, HP_MIN, HP_PROD };

template <typename T> static MPI_Datatype hp_mpi_type();
template <> MPI_Datatype hp_mpi_type<float>() { return MPI_FLOAT; }
template <> MPI_Datatype hp_mpi_type<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype hp_mpi_type<int64_t>() { return MPI_INT64_T; }
template <> MPI_Datatype hp_mpi_type<int32_t>() { return MPI_INT32_T; }
template <> MPI_Datatype hp_mpi_type<int8_t>() { return MPI_INT8_T; }
template <> MPI_Datatype hp_mpi_type<uint8_t>() { return MPI_UINT8_T; }
template <> MPI_Datatype hp_mpi_type<bool>() { return MPI_C_BOOL; }
// 16-bit floats move as raw bits; reductions on them are not offered (the
// dist verifier's types are the storage types: reduce in float32).
template <> MPI_Datatype hp_mpi_type<hp_half>() { return MPI_UINT16_T; }
template <> MPI_Datatype hp_mpi_type<hp_bf16>() { return MPI_UINT16_T; }

static MPI_Op hp_mpi_op(int op) {
  return op == HP_SUM   ? MPI_SUM
         : op == HP_MAX ? MPI_MAX
         : op == HP_MIN ? MPI_MIN
                        : MPI_PROD;
}

/// The process rank of device `id`: its place in the program's mesh
/// (HETPAR_MESH_DEVICES, the device ids in rank order, which the code
/// generator defines from dist.mesh), or the id itself without one.
#ifdef HETPAR_MESH_DEVICES
static const int64_t hp_mesh_devices[] = {HETPAR_MESH_DEVICES};
static int hp_rank_of(int64_t id) {
  for (size_t r = 0; r < sizeof hp_mesh_devices / sizeof *hp_mesh_devices; ++r)
    if (hp_mesh_devices[r] == id)
      return (int)r;
  return -1;
}
#else
static int hp_rank_of(int64_t id) { return (int)id; }
#endif

static int hp_mpi_status(hp_ctx *ctx, int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return 0;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  snprintf(ctx->error, sizeof ctx->error, "%s failed: %.*s", what, len, text);
  return 1;
}

/// The communicator of an ordered device group, created on first use by the
/// group's members only (MPI_Comm_create_group) and kept for the process's
/// life. Rank i of it is devices[i].
struct hp_group_cache {
  int64_t devices[64];
  int n;
  MPI_Comm comm;
  void *nccl; // its NCCL communicator, made on first NCCL use (GPU)
};
static hp_group_cache hp_groups[64];
static int hp_group_count = 0;

/// The device id of MPI rank `rank` (hp_rank_of inverted).
static int64_t hp_device_of(int rank) {
#ifdef HETPAR_MESH_DEVICES
  if (rank >= 0 &&
      (size_t)rank < sizeof hp_mesh_devices / sizeof *hp_mesh_devices)
    return hp_mesh_devices[rank];
#endif
  return rank;
}

/// Seconds a collective or exchange may take before the process gives up:
/// HETPAR_COLLECTIVE_TIMEOUT, 300 by default.
static double hp_timeout_s() {
  static double t = -1;
  if (t < 0) {
    const char *v = getenv("HETPAR_COLLECTIVE_TIMEOUT");
    t = v ? atof(v) : 300;
    if (!(t > 0))
      t = 300;
  }
  return t;
}

/// The watchdog: every collective and exchange (communicator creation
/// included) runs between hp_watch and hp_unwatch. A thread started on first
/// use checks the deadline; past it, it prints which device and which
/// collective (ctx->what, set by the generated code before each call) did not
/// finish and ends the process, and with it the job (mpirun stops the other
/// processes), so a dead, stuck or mismatched peer never hangs the others.
struct hp_watchdog_state {
  std::atomic<int64_t> deadline_ns{0}; // 0: nothing running
  std::atomic<const char *> what{nullptr}, call{nullptr};
  std::atomic<int> rank{-1};
  std::atomic<double> seconds{0}; // the limit of the call being watched
};
static hp_watchdog_state hp_watchdog;
static pthread_once_t hp_watchdog_started = PTHREAD_ONCE_INIT;
static int64_t hp_now_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static void *hp_watchdog_loop(void *) {
  const struct timespec period = {0, 50 * 1000 * 1000}; // 50 ms
  for (;;) {
    nanosleep(&period, nullptr);
    int64_t d = hp_watchdog.deadline_ns.load();
    if (d == 0 || hp_now_ns() < d)
      continue;
    int rank = hp_watchdog.rank.load();
    if (rank < 0)
      if (const char *v = getenv("OMPI_COMM_WORLD_RANK"))
        rank = atoi(v);
    const char *what = hp_watchdog.what.load();
    fprintf(stderr,
            "hetpar: error: device %lld (rank %d): %s (%s) did not finish "
            "within %g s (HETPAR_COLLECTIVE_TIMEOUT): a peer died, hangs, "
            "or runs another collective; ending every process\n",
            (long long)hp_device_of(rank), rank, what ? what : "a collective",
            hp_watchdog.call.load(), hp_watchdog.seconds.load());
    fflush(stderr);
    _exit(3);
  }
  return nullptr;
}
static void hp_watchdog_start() {
  pthread_t thread;
  if (pthread_create(&thread, nullptr, hp_watchdog_loop, nullptr) == 0)
    pthread_detach(thread);
}
/// Watches `call` for `factor` x the timeout.
static void hp_watch(hp_ctx *ctx, const char *call, double factor = 1) {
  pthread_once(&hp_watchdog_started, hp_watchdog_start);
  hp_watchdog.what = ctx->what;
  hp_watchdog.call = call;
  hp_watchdog.seconds = factor * hp_timeout_s();
  hp_watchdog.deadline_ns =
      hp_now_ns() + (int64_t)(hp_watchdog.seconds.load() * 1e9);
}
static void hp_unwatch() { hp_watchdog.deadline_ns = 0; }

/// Waits for `n` requests, yielding the core meanwhile (ranks may share
/// cores).
static int hp_wait(hp_ctx *ctx, MPI_Request *reqs, int n, const char *call) {
  for (;;) {
    int done = 0;
    int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
      return hp_mpi_status(ctx, rc, call);
    if (done)
      return 0;
    sched_yield();
  }
}

/// Starts MPI on first use (collectives and exchanges call it).
static int hp_mpi_start(hp_ctx *ctx) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return 0;
  int provided = 0, rank = 0;
  if (hp_mpi_status(ctx,
                    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided),
                    "MPI_Init_thread"))
    return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hp_watchdog.rank = rank;
  return 0;
}

static int hp_group_comm(hp_ctx *ctx, const int64_t *devices, int n,
                         MPI_Comm *out) {
  if (hp_mpi_start(ctx))
    return 1;
  for (int g = 0; g < hp_group_count; ++g)
    if (hp_groups[g].n == n &&
        !memcmp(hp_groups[g].devices, devices, sizeof(int64_t) * n)) {
      *out = hp_groups[g].comm;
      return 0;
    }
  if (n > 64 || hp_group_count == 64) {
    snprintf(ctx->error, sizeof ctx->error,
             "more than 64 device groups or devices per group");
    return 1;
  }
  int ranks[64];
  for (int i = 0; i < n; ++i)
    ranks[i] = hp_rank_of(devices[i]);
  MPI_Group world, group;
  MPI_Comm comm;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  if (hp_mpi_status(ctx, MPI_Group_incl(world, n, ranks, &group),
                    "MPI_Group_incl") ||
      hp_mpi_status(ctx, MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm),
                    "MPI_Comm_create_group"))
    return 1;
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  hp_group_cache &c = hp_groups[hp_group_count++];
  memcpy(c.devices, devices, sizeof(int64_t) * n);
  c.n = n;
  c.comm = comm;
  *out = comm;
  return 0;
}

/// The debug mode (HETPAR_CHECK_COLLECTIVES=1): before each collective, the
/// group's members exchange its signature (kind, element count, element
/// size, reduction, root) and every member fails, naming the first member
/// that disagrees, instead of running mismatched calls.
static int hp_check_signature(hp_ctx *ctx, MPI_Comm comm, int64_t kind,
                              int64_t count, int64_t size, int64_t op,
                              int64_t root, const int64_t *counts = nullptr) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *v = getenv("HETPAR_CHECK_COLLECTIVES");
    enabled = v && *v && strcmp(v, "0") != 0;
  }
  if (!enabled)
    return 0;
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  // Uneven collectives: every member passes the same per-member counts;
  // they take part as an FNV-1a hash.
  uint64_t hash = 1469598103934665603ull;
  for (int i = 0; counts && i < n; ++i) {
    hash ^= (uint64_t)counts[i];
    hash *= 1099511628211ull;
  }
  int64_t mine[6] = {kind, count, size, op, root, (int64_t)hash}, all[64 * 6];
  MPI_Request req;
  if (hp_mpi_status(
          ctx,
          MPI_Iallgather(mine, 6, MPI_INT64_T, all, 6, MPI_INT64_T, comm, &req),
          "MPI_Iallgather") ||
      hp_wait(ctx, &req, 1, "signature check"))
    return 1;
  static const char *kinds[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "broadcast"};
  for (int i = 0; i < n; ++i)
    if (memcmp(all + 6 * i, mine, sizeof mine) != 0) {
      MPI_Group g, world;
      int worldRank = 0;
      MPI_Comm_group(comm, &g);
      MPI_Comm_group(MPI_COMM_WORLD, &world);
      MPI_Group_translate_ranks(g, 1, &i, world, &worldRank);
      MPI_Group_free(&g);
      MPI_Group_free(&world);
      const int64_t *o = all + 6 * i;
      int myRank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
      snprintf(ctx->error, sizeof ctx->error,
               "device %lld: %s: %s of %lld elements of %lld bytes (op %lld, "
               "root %lld) here, but device %lld runs %s of %lld elements of "
               "%lld bytes (op %lld, root %lld)%s",
               (long long)hp_device_of(myRank),
               ctx->what ? ctx->what : "a collective", kinds[kind],
               (long long)count, (long long)size, (long long)op,
               (long long)root, (long long)hp_device_of(worldRank),
               o[0] >= 0 && o[0] < 5 ? kinds[o[0]] : "?", (long long)o[1],
               (long long)o[2], (long long)o[3], (long long)o[4],
               memcmp(o, mine, 5 * sizeof(int64_t)) == 0
                   ? " with other per-member counts"
                   : "");
      return 1;
    }
  return 0;
}

/// Element-wise reduction of `count` elements over the group; in == out is
/// allowed.
template <typename T>
static int hp_all_reduce_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                        int n, const T *in, T *out,
                                        int64_t count, int op) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm) ||
      hp_check_signature(ctx, comm, 0, count, sizeof(T), op, -1))
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                                      (int)count, hp_mpi_type<T>(),
                                      hp_mpi_op(op), comm, &req),
                       "MPI_Iallreduce") ||
         hp_wait(ctx, &req, 1, "MPI_Iallreduce");
}

/// Concatenation of the members' blocks in group order; member i sends
/// counts[i] elements.
template <typename T>
static int hp_all_gather_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                        int n, const T *in, T *out,
                                        const int64_t *counts) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  int me = 0, c[64], d[64], at = 0;
  MPI_Comm_rank(comm, &me);
  for (int i = 0; i < n; ++i) {
    c[i] = (int)counts[i];
    d[i] = at;
    at += c[i];
  }
  if (hp_check_signature(ctx, comm, 1, at, sizeof(T), -1, -1, counts))
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Iallgatherv(in, c[me], hp_mpi_type<T>(), out, c, d,
                                       hp_mpi_type<T>(), comm, &req),
                       "MPI_Iallgatherv") ||
         hp_wait(ctx, &req, 1, "MPI_Iallgatherv");
}

/// Reduction over the group of sum(counts) elements; member i keeps block i
/// (counts[i] elements).
template <typename T>
static int hp_reduce_scatter_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                            int n, const T *in, T *out,
                                            const int64_t *counts, int op) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  int c[64], total = 0;
  for (int i = 0; i < n; ++i)
    total += c[i] = (int)counts[i];
  if (hp_check_signature(ctx, comm, 2, total, sizeof(T), op, -1, counts))
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Ireduce_scatter(in, out, c, hp_mpi_type<T>(),
                                           hp_mpi_op(op), comm, &req),
                       "MPI_Ireduce_scatter") ||
         hp_wait(ctx, &req, 1, "MPI_Ireduce_scatter");
}

/// Member i sends sendCounts[j] elements (consecutive blocks of `in`) to
/// member j and receives recvCounts[j] from it (consecutive blocks of
/// `out`).
template <typename T>
static int hp_all_to_all_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                        int n, const T *in,
                                        const int64_t *sendCounts, T *out,
                                        const int64_t *recvCounts) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm) ||
      hp_check_signature(ctx, comm, 3, 0, sizeof(T), -1, -1))
    return 1;
  int sc[64], sd[64], rc[64], rd[64], sa = 0, ra = 0;
  for (int i = 0; i < n; ++i) {
    sc[i] = (int)sendCounts[i];
    sd[i] = sa;
    sa += sc[i];
    rc[i] = (int)recvCounts[i];
    rd[i] = ra;
    ra += rc[i];
  }
  return hp_mpi_status(ctx,
                       MPI_Ialltoallv(in, sc, sd, hp_mpi_type<T>(), out, rc, rd,
                                      hp_mpi_type<T>(), comm, &req),
                       "MPI_Ialltoallv") ||
         hp_wait(ctx, &req, 1, "MPI_Ialltoallv");
}

/// Every member gets the root's `count` elements (root is a device id).
template <typename T>
static int hp_broadcast_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                       int n, T *buf, int64_t count,
                                       int64_t root) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm) ||
      hp_check_signature(ctx, comm, 4, count, sizeof(T), -1, root))
    return 1;
  int r = 0;
  while (r < n && devices[r] != root)
    ++r;
  return hp_mpi_status(
             ctx, MPI_Ibcast(buf, (int)count, hp_mpi_type<T>(), r, comm, &req),
             "MPI_Ibcast") ||
         hp_wait(ctx, &req, 1, "MPI_Ibcast");
}

/// The host collectives under the watchdog (hp_watch).
template <typename T>
static int hp_all_reduce_host(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, int64_t count, int op) {
  hp_watch(ctx, "MPI_Iallreduce");
  int rc = hp_all_reduce_host_unwatched(ctx, devices, n, in, out, count, op);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_all_gather_host(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, const int64_t *counts) {
  hp_watch(ctx, "MPI_Iallgatherv");
  int rc = hp_all_gather_host_unwatched(ctx, devices, n, in, out, counts);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_reduce_scatter_host(hp_ctx *ctx, const int64_t *devices, int n,
                                  const T *in, T *out, const int64_t *counts,
                                  int op) {
  hp_watch(ctx, "MPI_Ireduce_scatter");
  int rc =
      hp_reduce_scatter_host_unwatched(ctx, devices, n, in, out, counts, op);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_all_to_all_host(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, const int64_t *sendCounts, T *out,
                              const int64_t *recvCounts) {
  hp_watch(ctx, "MPI_Ialltoallv");
  int rc = hp_all_to_all_host_unwatched(ctx, devices, n, in, sendCounts, out,
                                        recvCounts);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_broadcast_host(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                             int64_t count, int64_t root) {
  hp_watch(ctx, "MPI_Ibcast");
  int rc = hp_broadcast_host_unwatched(ctx, devices, n, buf, count, root);
  hp_unwatch();
  return rc;
}

/// The collectives on the program's buffers. On the CPU they are the MPI calls
/// above. On the GPU they run on NCCL when hp_collectives_init chose it;
/// otherwise every rank stages its buffers through host memory (device ->
/// host, MPI, host -> device): slower than NCCL, but it works with every rank
/// on one GPU, which NCCL refuses (scripts/gpu-check.sh runs multi-device
/// plans that way).
#if HP_CUDA
/// A host buffer of at least `bytes` (slot 0: inputs, 1: outputs), kept for
/// the process's life.
static void *hp_host_scratch(int slot, size_t bytes) {
  static void *buf[2];
  static size_t size[2];
  if (size[slot] < bytes) {
    free(buf[slot]);
    buf[slot] = malloc(bytes);
    size[slot] = buf[slot] ? bytes : 0;
  }
  return buf[slot];
}
static int hp_copy(hp_ctx *ctx, void *dst, const void *src, size_t bytes,
                   cudaMemcpyKind kind) {
  cudaError_t e = cudaSuccess;
  if (bytes)
    e = cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "staging a collective: %s",
             cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
/// Runs `body(hostIn, hostOut)` on host copies of `in` (inCount elements)
/// and copies the host result into `out` (outCount elements).
template <typename T, typename F>
static int hp_staged(hp_ctx *ctx, const T *in, int64_t inCount, T *out,
                     int64_t outCount, F body) {
  T *hin = (T *)hp_host_scratch(0, sizeof(T) * (size_t)inCount + 1);
  T *hout = (T *)hp_host_scratch(1, sizeof(T) * (size_t)outCount + 1);
  if (!hin || !hout) {
    snprintf(ctx->error, sizeof ctx->error,
             "out of host memory staging a "
             "collective");
    return 1;
  }
  if (hp_copy(ctx, hin, in, sizeof(T) * inCount, cudaMemcpyDeviceToHost) ||
      body(hin, hout) ||
      hp_copy(ctx, out, hout, sizeof(T) * outCount, cudaMemcpyHostToDevice))
    return 1;
  return 0;
}
static int hp_group_position(hp_ctx *ctx, const int64_t *devices, int n,
                             int *me) {
  MPI_Comm comm;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  MPI_Comm_rank(comm, me);
  return 0;
}
static int64_t hp_sum(const int64_t *v, int n) {
  int64_t s = 0;
  for (int i = 0; i < n; ++i)
    s += v[i];
  return s;
}
/// NCCL, loaded at run time (dlopen of libnccl.so.2, as IREE's CUDA driver
/// does): programs build and load without it. The few entry points used,
/// with the ABI of nccl.h (enum values, ncclUniqueId of 128 bytes by value).
struct hp_nccl_id {
  char internal[128];
};
struct hp_nccl_api {
  int (*getUniqueId)(hp_nccl_id *);
  int (*commInitRank)(void **, int, hp_nccl_id, int);
  int (*allReduce)(const void *, void *, size_t, int, int, void *,
                   cudaStream_t);
  int (*broadcast)(const void *, void *, size_t, int, int, void *,
                   cudaStream_t);
  int (*reduce)(const void *, void *, size_t, int, int, int, void *,
                cudaStream_t);
  int (*send)(const void *, size_t, int, int, void *, cudaStream_t);
  int (*recv)(void *, size_t, int, int, void *, cudaStream_t);
  int (*groupStart)(void);
  int (*groupEnd)(void);
  const char *(*getErrorString)(int);
};
static hp_nccl_api hp_nccl;
/// Which path the GPU collectives take, the same on every rank: 1 NCCL (one
/// GPU per rank on each node, NCCL found), 0 host-staged MPI.
static int hp_use_nccl = 0;
static bool hp_nccl_load() {
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return false;
  bool ok = true;
  auto get = [&](auto &fn, const char *name) {
    fn = (std::remove_reference_t<decltype(fn)>)dlsym(h, name);
    ok &= fn != nullptr;
  };
  get(hp_nccl.getUniqueId, "ncclGetUniqueId");
  get(hp_nccl.commInitRank, "ncclCommInitRank");
  get(hp_nccl.allReduce, "ncclAllReduce");
  get(hp_nccl.broadcast, "ncclBroadcast");
  get(hp_nccl.reduce, "ncclReduce");
  get(hp_nccl.send, "ncclSend");
  get(hp_nccl.recv, "ncclRecv");
  get(hp_nccl.groupStart, "ncclGroupStart");
  get(hp_nccl.groupEnd, "ncclGroupEnd");
  get(hp_nccl.getErrorString, "ncclGetErrorString");
  return ok;
}
/// Chooses the path once, at program creation, on every rank together:
/// HETPAR_COLLECTIVES=mpi or nccl forces one; otherwise NCCL when it loads
/// and this node has a GPU per local rank (NCCL refuses two ranks on one GPU).
static int hp_collectives_init(char *err, size_t errlen) {
  hp_ctx tmp = {};
  if (hp_mpi_start(&tmp)) {
    snprintf(err, errlen, "%s", tmp.error);
    return 1;
  }
  const char *forced = getenv("HETPAR_COLLECTIVES");
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  int local = 1;
  if (const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = atoi(v);
  else if (const char *v = getenv("SLURM_NTASKS_PER_NODE"))
    local = atoi(v);
  bool loaded = hp_nccl_load();
  int want =
      forced ? strcmp(forced, "nccl") == 0 : (loaded && local <= gpus ? 1 : 0);
  if (want && !loaded) {
    snprintf(err, errlen,
             "HETPAR_COLLECTIVES=nccl but libnccl.so.2 does not "
             "load");
    return 1;
  }
  MPI_Allreduce(&want, &hp_use_nccl, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return 0;
}
static int hp_nccl_status(hp_ctx *ctx, int rc, const char *what) {
  if (rc == 0)
    return 0;
  snprintf(ctx->error, sizeof ctx->error, "%s failed: %s", what,
           hp_nccl.getErrorString ? hp_nccl.getErrorString(rc) : "NCCL error");
  return 1;
}
template <typename T> static int hp_nccl_type();
template <> int hp_nccl_type<int8_t>() { return 0; }
template <> int hp_nccl_type<uint8_t>() { return 1; }
template <> int hp_nccl_type<bool>() { return 1; }
template <> int hp_nccl_type<int32_t>() { return 2; }
template <> int hp_nccl_type<int64_t>() { return 4; }
template <> int hp_nccl_type<hp_half>() { return 6; }
template <> int hp_nccl_type<float>() { return 7; }
template <> int hp_nccl_type<double>() { return 8; }
template <> int hp_nccl_type<hp_bf16>() { return 9; }
static int hp_nccl_op(int op) { // ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3
  return op == HP_SUM ? 0 : op == HP_PROD ? 1 : op == HP_MAX ? 2 : 3;
}
/// The NCCL communicator of a group (made by its members on first use: the
/// first member's ncclUniqueId travels by MPI_Bcast) and this rank in it.
static int hp_group_nccl(hp_ctx *ctx, const int64_t *devices, int n, void **out,
                         int *me) {
  MPI_Comm comm;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  MPI_Comm_rank(comm, me);
  hp_group_cache *c = nullptr;
  for (int g = 0; g < hp_group_count; ++g)
    if (hp_groups[g].comm == comm)
      c = &hp_groups[g];
  if (!c->nccl) {
    hp_nccl_id id;
    if (*me == 0 &&
        hp_nccl_status(ctx, hp_nccl.getUniqueId(&id), "ncclGetUniqueId"))
      return 1;
    if (hp_mpi_status(ctx, MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm),
                      "MPI_Bcast of the NCCL id") ||
        hp_nccl_status(ctx, hp_nccl.commInitRank(&c->nccl, n, id, *me),
                       "ncclCommInitRank"))
      return 1;
  }
  *out = c->nccl;
  return 0;
}
/// Ends an NCCL call: waits for the stream under the watchdog (a stuck peer
/// shows up here).
static int hp_nccl_finish(hp_ctx *ctx, int rc, const char *what) {
  if (hp_nccl_status(ctx, rc, what))
    return 1;
  hp_watch(ctx, what);
  cudaError_t e = cudaStreamSynchronize(ctx->stream);
  hp_unwatch();
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "%s: %s", what,
             cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
template <typename T>
static int hp_nccl_all_reduce(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, int64_t count, int op) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  return hp_nccl_finish(ctx,
                        hp_nccl.allReduce(in, out, (size_t)count,
                                          hp_nccl_type<T>(), hp_nccl_op(op),
                                          comm, ctx->stream),
                        "ncclAllReduce");
}
/// Uneven all-gather: grouped send/recv of each member's block (NCCL's
/// AllGather wants equal counts).
template <typename T>
static int hp_nccl_all_gather(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, const int64_t *counts) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int64_t at[65] = {0};
  for (int i = 0; i < n; ++i)
    at[i + 1] = at[i] + counts[i];
  cudaMemcpyAsync(out + at[me], in, sizeof(T) * (size_t)counts[me],
                  cudaMemcpyDeviceToDevice, ctx->stream);
  int rc = hp_nccl.groupStart();
  for (int p = 0; p < n && rc == 0; ++p) {
    if (p == me)
      continue;
    rc = hp_nccl.send(in, (size_t)counts[me], hp_nccl_type<T>(), p, comm,
                      ctx->stream);
    if (rc == 0)
      rc = hp_nccl.recv(out + at[p], (size_t)counts[p], hp_nccl_type<T>(), p,
                        comm, ctx->stream);
  }
  int end = hp_nccl.groupEnd();
  return hp_nccl_finish(ctx, rc ? rc : end, "all_gather (ncclSend/ncclRecv)");
}
/// Uneven reduce-scatter: one ncclReduce per block to its owner, grouped.
template <typename T>
static int hp_nccl_reduce_scatter(hp_ctx *ctx, const int64_t *devices, int n,
                                  const T *in, T *out, const int64_t *counts,
                                  int op) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int rc = hp_nccl.groupStart();
  int64_t at = 0;
  for (int i = 0; i < n && rc == 0; at += counts[i], ++i)
    rc = hp_nccl.reduce(in + at, out, (size_t)counts[i], hp_nccl_type<T>(),
                        hp_nccl_op(op), i, comm, ctx->stream);
  int end = hp_nccl.groupEnd();
  return hp_nccl_finish(ctx, rc ? rc : end, "reduce_scatter (ncclReduce)");
}
template <typename T>
static int hp_nccl_all_to_all(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, const int64_t *sendCounts, T *out,
                              const int64_t *recvCounts) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int rc = hp_nccl.groupStart();
  int64_t sa = 0, ra = 0;
  for (int p = 0; p < n && rc == 0; ++p) {
    rc = hp_nccl.send(in + sa, (size_t)sendCounts[p], hp_nccl_type<T>(), p,
                      comm, ctx->stream);
    if (rc == 0)
      rc = hp_nccl.recv(out + ra, (size_t)recvCounts[p], hp_nccl_type<T>(), p,
                        comm, ctx->stream);
    sa += sendCounts[p];
    ra += recvCounts[p];
  }
  int end = hp_nccl.groupEnd();
  return hp_nccl_finish(ctx, rc ? rc : end, "all_to_all (ncclSend/ncclRecv)");
}
template <typename T>
static int hp_nccl_broadcast(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                             int64_t count, int64_t root) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int r = 0;
  while (r < n && devices[r] != root)
    ++r;
  return hp_nccl_finish(ctx,
                        hp_nccl.broadcast(buf, buf, (size_t)count,
                                          hp_nccl_type<T>(), r, comm,
                                          ctx->stream),
                        "ncclBroadcast");
}

template <typename T>
static int hp_all_reduce(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, int64_t count, int op) {
  if (hp_use_nccl)
    return hp_nccl_all_reduce(ctx, devices, n, in, out, count, op);
  return hp_staged(ctx, in, count, out, count, [&](T *hi, T *ho) {
    return hp_all_reduce_host(ctx, devices, n, hi, ho, count, op);
  });
}
template <typename T>
static int hp_all_gather(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, const int64_t *counts) {
  if (hp_use_nccl)
    return hp_nccl_all_gather(ctx, devices, n, in, out, counts);
  int me = 0;
  if (hp_group_position(ctx, devices, n, &me))
    return 1;
  return hp_staged(ctx, in, counts[me], out, hp_sum(counts, n),
                   [&](T *hi, T *ho) {
                     return hp_all_gather_host(ctx, devices, n, hi, ho, counts);
                   });
}
template <typename T>
static int hp_reduce_scatter(hp_ctx *ctx, const int64_t *devices, int n,
                             const T *in, T *out, const int64_t *counts,
                             int op) {
  if (hp_use_nccl)
    return hp_nccl_reduce_scatter(ctx, devices, n, in, out, counts, op);
  int me = 0;
  if (hp_group_position(ctx, devices, n, &me))
    return 1;
  return hp_staged(
      ctx, in, hp_sum(counts, n), out, counts[me], [&](T *hi, T *ho) {
        return hp_reduce_scatter_host(ctx, devices, n, hi, ho, counts, op);
      });
}
template <typename T>
static int hp_all_to_all(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, const int64_t *sendCounts, T *out,
                         const int64_t *recvCounts) {
  if (hp_use_nccl)
    return hp_nccl_all_to_all(ctx, devices, n, in, sendCounts, out, recvCounts);
  return hp_staged(ctx, in, hp_sum(sendCounts, n), out, hp_sum(recvCounts, n),
                   [&](T *hi, T *ho) {
                     return hp_all_to_all_host(ctx, devices, n, hi, sendCounts,
                                               ho, recvCounts);
                   });
}
template <typename T>
static int hp_broadcast(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                        int64_t count, int64_t root) {
  if (hp_use_nccl)
    return hp_nccl_broadcast(ctx, devices, n, buf, count, root);
  return hp_staged(ctx, buf, count, buf, count, [&](T *hi, T *ho) {
    memcpy(ho, hi, sizeof(T) * (size_t)count);
    return hp_broadcast_host(ctx, devices, n, ho, count, root);
  });
}
#else
template <typename T>
static int hp_all_reduce(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, int64_t count, int op) {
  return hp_all_reduce_host(ctx, devices, n, in, out, count, op);
}
template <typename T>
static int hp_all_gather(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, const int64_t *counts) {
  return hp_all_gather_host(ctx, devices, n, in, out, counts);
}
template <typename T>
static int hp_reduce_scatter(hp_ctx *ctx, const int64_t *devices, int n,
                             const T *in, T *out, const int64_t *counts,
                             int op) {
  return hp_reduce_scatter_host(ctx, devices, n, in, out, counts, op);
}
template <typename T>
static int hp_all_to_all(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, const int64_t *sendCounts, T *out,
                         const int64_t *recvCounts) {
  return hp_all_to_all_host(ctx, devices, n, in, sendCounts, out, recvCounts);
}
template <typename T>
static int hp_broadcast(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                        int64_t count, int64_t root) {
  return hp_broadcast_host(ctx, devices, n, buf, count, root);
}
#endif

/// dist.all_to_all on a tensor viewed as [outer, extent, inner] around each
/// of its two dimensions: the operand is cut along its split dimension
/// (inOuter x inExtent x inInner elements; device j's piece has
/// splitSizes[j] of the inExtent indices) and the pieces received are
/// concatenated along the result's concat dimension (outOuter x outExtent x
/// outInner; device j's piece has concatSizes[j] indices). A piece that is
/// not contiguous (an outer extent above 1) is packed into `sendBuf`
/// (inOuter x inExtent x inInner elements) or received into `recvBuf`
/// (outOuter x outExtent x outInner) and unpacked: the buffers are unused
/// (and may be null) otherwise. Groups hold at most 64 devices
/// (hp_group_comm's limit).
template <typename T>
static int hp_all_to_all_along(hp_ctx *ctx, const int64_t *devices, int n,
                               const T *in, int64_t inOuter, int64_t inExtent,
                               int64_t inInner, const int64_t *splitSizes,
                               T *out, int64_t outOuter, int64_t outExtent,
                               int64_t outInner, const int64_t *concatSizes,
                               T *sendBuf, T *recvBuf) {
  if (n < 1 || n > 64) {
    snprintf(ctx->error, sizeof ctx->error,
             "all_to_all over %d devices (1 to 64)", n);
    return 1;
  }
  int64_t sendCounts[64], recvCounts[64], sendAt = 0, recvAt = 0;
  const bool pack = inOuter > 1, unpack = outOuter > 1;
  for (int j = 0; j < n; ++j) {
    sendCounts[j] = inOuter * splitSizes[j] * inInner;
    recvCounts[j] = outOuter * concatSizes[j] * outInner;
    // Piece j: [inOuter, splitSizes[j], inInner] out of the operand.
    hp_dims dims = {{inOuter, splitSizes[j], inInner}};
    hp_dims from = {{inExtent * inInner, inInner, 1}};
    hp_dims to = {{splitSizes[j] * inInner, inInner, 1}};
    hp_dims mods = {{inOuter, splitSizes[j], inInner}};
    if (pack)
      hp_copy_launch(ctx, sendCounts[j], 3, dims, from, mods, sendAt * inInner,
                     in, to, inOuter * sendAt * inInner, sendBuf);
    sendAt += splitSizes[j];
  }
  if (hp_all_to_all(ctx, devices, n, pack ? sendBuf : in, sendCounts,
                    unpack ? recvBuf : out, recvCounts))
    return 1;
  for (int j = 0; j < n && unpack; ++j) {
    // Piece j lands at [:, recvAt : recvAt + concatSizes[j], :].
    hp_dims dims = {{outOuter, concatSizes[j], outInner}};
    hp_dims from = {{concatSizes[j] * outInner, outInner, 1}};
    hp_dims to = {{outExtent * outInner, outInner, 1}};
    hp_copy_launch(ctx, recvCounts[j], 3, dims, from, dims,
                   outOuter * recvAt * outInner, (const T *)recvBuf, to,
                   recvAt * outInner, out);
    recvAt += concatSizes[j];
  }
  return 0;
}

/// Point-to-point exchanges of one step, posted together and completed by
/// hp_exchange_end (the MPI counterpart of ncclGroupStart/End: no ordering
/// between the two sides can deadlock).
/// A step holds any number of messages (the output device of a 64-way
/// data-parallel plan receives one per replica and output).
struct hp_exchange {
  std::vector<MPI_Request> requests;
  int n = 0; // messages posted
#if HP_CUDA
  // Host copies of each message; a receive's device buffer and size; with
  // NCCL the messages themselves (device buffer, bytes, peer, direction).
  std::vector<void *> host;
  std::vector<void *> device;
  std::vector<size_t> bytes;
  std::vector<int64_t> peer;
  std::vector<char> isSend;
#endif
};
/// Room for the step's next message.
static void hp_exchange_grow(hp_exchange *x) {
  size_t m = (size_t)x->n + 1;
  x->requests.resize(m, MPI_REQUEST_NULL);
#if HP_CUDA
  x->host.resize(m, nullptr);
  x->device.resize(m, nullptr);
  x->bytes.resize(m, 0);
  x->peer.resize(m, 0);
  x->isSend.resize(m, 0);
#endif
}
/// The host side of a message: on the GPU a host copy (a send's filled now).
static void *hp_exchange_buffer(hp_ctx *ctx, hp_exchange *x, const void *buf,
                                size_t bytes, bool send) {
#if HP_CUDA
  void *h = malloc(bytes + 1);
  x->host[x->n] = h;
  x->device[x->n] = send ? NULL : (void *)buf;
  x->bytes[x->n] = bytes;
  if (!h) {
    snprintf(ctx->error, sizeof ctx->error,
             "out of host memory staging a "
             "transfer");
    return NULL;
  }
  if (send && hp_copy(ctx, h, buf, bytes, cudaMemcpyDeviceToHost))
    return NULL;
  return h;
#else
  (void)ctx;
  (void)x;
  (void)bytes;
  (void)send;
  return (void *)buf;
#endif
}
#if HP_CUDA
/// With NCCL a message is only recorded; hp_exchange_end posts the step.
static int hp_exchange_nccl_add(hp_exchange *x, const void *buf, size_t bytes,
                                int64_t peer, bool send) {
  x->device[x->n] = (void *)buf;
  x->host[x->n] = nullptr;
  x->bytes[x->n] = bytes;
  x->peer[x->n] = peer;
  x->isSend[x->n] = send;
  x->requests[x->n++] = MPI_REQUEST_NULL;
  return 0;
}
#endif
template <typename T>
static int hp_exchange_send(hp_ctx *ctx, hp_exchange *x, const T *buf,
                            int64_t count, int64_t peer, int64_t tag) {
  hp_exchange_grow(x);
#if HP_CUDA
  if (hp_use_nccl)
    return hp_exchange_nccl_add(x, buf, sizeof(T) * (size_t)count, peer, true);
#endif
  if (hp_mpi_start(ctx))
    return 1;
  void *h = hp_exchange_buffer(ctx, x, buf, sizeof(T) * (size_t)count, true);
  if (!h)
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Isend(h, (int)count, hp_mpi_type<T>(),
                                 hp_rank_of(peer), (int)tag, MPI_COMM_WORLD,
                                 &x->requests[x->n++]),
                       "MPI_Isend");
}
template <typename T>
static int hp_exchange_recv(hp_ctx *ctx, hp_exchange *x, T *buf, int64_t count,
                            int64_t peer, int64_t tag) {
  hp_exchange_grow(x);
#if HP_CUDA
  if (hp_use_nccl)
    return hp_exchange_nccl_add(x, buf, sizeof(T) * (size_t)count, peer, false);
#endif
  if (hp_mpi_start(ctx))
    return 1;
  void *h = hp_exchange_buffer(ctx, x, buf, sizeof(T) * (size_t)count, false);
  if (!h)
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Irecv(h, (int)count, hp_mpi_type<T>(),
                                 hp_rank_of(peer), (int)tag, MPI_COMM_WORLD,
                                 &x->requests[x->n++]),
                       "MPI_Irecv");
}
#if HP_CUDA
/// The NCCL step: a communicator per pair of devices (made in the order of
/// the pairs, so that no two devices wait on each other's first pair), then
/// every send and receive of the step between ncclGroupStart and
/// ncclGroupEnd (matched per pair in program order, as
/// hetpar-dist-verify-exchanges checks).
static int hp_exchange_end_nccl(hp_ctx *ctx, hp_exchange *x) {
  int myRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
  int64_t self = hp_device_of(myRank);
  std::vector<int64_t> peers;
  for (int i = 0; i < x->n; ++i)
    if (std::find(peers.begin(), peers.end(), x->peer[i]) == peers.end())
      peers.push_back(x->peer[i]);
  std::sort(peers.begin(), peers.end(), [&](int64_t a, int64_t b) {
    int64_t la = std::min(a, self), lb = std::min(b, self);
    return la != lb ? la < lb : std::max(a, self) < std::max(b, self);
  });
  int np = (int)peers.size();
  std::vector<void *> comms((size_t)np, nullptr);
  for (int j = 0; j < np; ++j) {
    int64_t pair[2] = {std::min(peers[j], self), std::max(peers[j], self)};
    int me;
    if (hp_group_nccl(ctx, pair, 2, &comms[j], &me))
      return 1;
  }
  int rc = hp_nccl.groupStart();
  for (int i = 0; i < x->n && rc == 0; ++i) {
    int j = 0;
    while (peers[j] != x->peer[i])
      ++j;
    int rank = x->peer[i] < self ? 0 : 1;
    rc = x->isSend[i] ? hp_nccl.send(x->device[i], x->bytes[i], 1, rank,
                                     comms[j], ctx->stream)
                      : hp_nccl.recv(x->device[i], x->bytes[i], 1, rank,
                                     comms[j], ctx->stream);
  }
  int end = hp_nccl.groupEnd();
  x->n = 0;
  return hp_nccl_finish(ctx, rc ? rc : end, "exchange (ncclSend/ncclRecv)");
}
#endif
static int hp_exchange_end(hp_ctx *ctx, hp_exchange *x) {
#if HP_CUDA
  if (hp_use_nccl)
    return hp_exchange_end_nccl(ctx, x);
#endif
  hp_watch(ctx, "MPI_Isend/MPI_Irecv");
  int failed = hp_wait(ctx, x->requests.data(), x->n, "MPI_Isend/MPI_Irecv");
  hp_unwatch();
#if HP_CUDA
  for (int i = 0; i < x->n; ++i) {
    if (!failed && x->device[i])
      failed = hp_copy(ctx, x->device[i], x->host[i], x->bytes[i],
                       cudaMemcpyHostToDevice);
    free(x->host[i]);
  }
#endif
  x->n = 0;
  return failed;
}

/// hetpar_agree (ProgramABI.h): at the end of a training step or an
/// inference request, every device of a multi-device program learns, with
/// one MPI_Iallreduce of an int over every process, whether any of them
/// finished a run of it with an index out of range (`failed`: this one did;
/// hetpar_run returned 3). If one did, every device fails the step or
/// request together: that one with its own error, the reporting device
/// naming it. So no device reports the loss, writes a checkpoint or writes
/// the outputs of a step or request that another device refused (a label out
/// of range on one data-parallel replica still joins the loss's all-reduce
/// with a clamped index; a bad index in stage 0 still sends its activations
/// on), and no device waits for a peer that has stopped. Once per step or
/// request, not per run: an inference pipeline runs every microbatch as a
/// run, and agreeing after each would make it wait for every stage. Returns
/// 0 when no device failed or this one is the first that did (the lowest
/// rank: it reports its own error, once, where every device of a
/// tensor-parallel group finds the same index), 2 when another did (its
/// message names that one), 1 on an MPI error. Under the watchdog for twice the
/// timeout: a device may wait here while its peers finish their step, and a
/// peer stuck in one of the step's collectives reports that collective first.
static int hp_agree(hp_ctx *ctx, int failed) {
  if (hp_mpi_start(ctx))
    return 1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int mine = failed ? rank : INT_MAX, first = INT_MAX;
  ctx->what = "all_reduce on every device (the end of the step: whether any "
              "device found an index out of range)";
  MPI_Request req;
  hp_watch(ctx, "MPI_Iallreduce", 2);
  int rc = hp_mpi_status(ctx,
                         MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN,
                                        MPI_COMM_WORLD, &req),
                         "MPI_Iallreduce") ||
           hp_wait(ctx, &req, 1, "MPI_Iallreduce");
  hp_unwatch();
  if (rc || first == INT_MAX || first == rank)
    return rc;
  snprintf(ctx->error, sizeof ctx->error,
           "device %lld (rank %d) found an index out of range (its error "
           "names the node and the value); every device discards the step",
           (long long)hp_device_of(first), first);
  return 2;
}
#endif // HETPAR_MULTI_DEVICE

#endif // HETPAR_DEVICE_H

#if defined(HETPAR_DEFINE_ABI) && !defined(HETPAR_DEVICE_ABI_DEFINED)
#define HETPAR_DEVICE_ABI_DEFINED
// The generated code's trace points and their spans (HP_TRACE); a program
// without them (inference) defines neither macro.
#ifndef HP_TRACE_POINTS
#define HP_TRACE_POINTS 0
#define HP_TRACE_SPANS
#endif
static int hp_program_run(hp_ctx *ctx, char *arena, char *weights,
                          const void *const *inputs, void *const *outputs);

extern "C" {
int hetpar_abi_version(void) { return HETPAR_ABI_VERSION; }
const char *hetpar_backend(void) { return HP_CUDA ? "cuda" : "cpu"; }
uint64_t hetpar_arena_bytes(void) { return HP_ARENA_BYTES; }
uint64_t hetpar_weights_bytes(void) { return HP_WEIGHTS_BYTES; }
int hetpar_num_inputs(void) { return HP_NUM_INPUTS; }
int hetpar_num_outputs(void) { return HP_NUM_OUTPUTS; }
uint64_t hetpar_input_bytes(int i) {
  static const uint64_t bytes[] = {HP_INPUT_BYTES 0};
  return i >= 0 && i < HP_NUM_INPUTS ? bytes[i] : 0;
}
uint64_t hetpar_output_bytes(int i) {
  static const uint64_t bytes[] = {HP_OUTPUT_BYTES 0};
  return i >= 0 && i < HP_NUM_OUTPUTS ? bytes[i] : 0;
}

#if HP_CUDA
/// Destroys the trace events of hetpar_trace.
static void hp_trace_release(hp_ctx *ctx) {
  if (!ctx->trace_events)
    return;
  for (int i = 0; i < HP_TRACE_POINTS + 2; ++i)
    cudaEventDestroy(ctx->trace_events[i]);
  free(ctx->trace_events);
  ctx->trace_events = NULL;
}

/// Drops the run's CUDA graph, if one was captured.
static void hp_graph_release(hp_ctx *ctx) {
  if (ctx->graph_exec)
    cudaGraphExecDestroy(ctx->graph_exec);
  ctx->graph_exec = NULL;
}
#endif

#if !HP_CUDA && defined(__x86_64__) && defined(__GNUC__)
/// The first instruction-set extension the CPU program was built for (the
/// -march of hetpar-compile --cpu-arch, "native" by default) that this CPU
/// lacks, or NULL. Without the check, a program built on a newer machine
/// dies of SIGILL in its first vector loop. The function itself is built
/// for the x86-64 baseline and never inlined into code built for more.
/// Clang before 18 knows neither "f16c" nor "avx512fp16" as feature names.
#if defined(__clang__) && __clang_major__ < 18
#define HP_ISA_NEW_NAMES 0
#else
#define HP_ISA_NEW_NAMES 1
#endif
__attribute__((target("arch=x86-64"), noinline)) static const char *
hp_cpu_missing() {
  __builtin_cpu_init();
// The extension `name` when the program uses it and this CPU lacks it.
#define HP_ISA(feature, name)                                                  \
  if (!__builtin_cpu_supports(feature))                                        \
  return name
#ifdef __SSE4_2__
  HP_ISA("sse4.2", "SSE4.2");
#endif
#ifdef __AVX__
  HP_ISA("avx", "AVX");
#endif
#ifdef __AVX2__
  HP_ISA("avx2", "AVX2");
#endif
#ifdef __FMA__
  HP_ISA("fma", "FMA");
#endif
#ifdef __BMI__
  HP_ISA("bmi", "BMI1");
#endif
#ifdef __BMI2__
  HP_ISA("bmi2", "BMI2");
#endif
#if defined(__F16C__) && HP_ISA_NEW_NAMES
  HP_ISA("f16c", "F16C");
#endif
#ifdef __AVX512F__
  HP_ISA("avx512f", "AVX-512F");
#endif
#ifdef __AVX512CD__
  HP_ISA("avx512cd", "AVX-512CD");
#endif
#ifdef __AVX512DQ__
  HP_ISA("avx512dq", "AVX-512DQ");
#endif
#ifdef __AVX512BW__
  HP_ISA("avx512bw", "AVX-512BW");
#endif
#ifdef __AVX512VL__
  HP_ISA("avx512vl", "AVX-512VL");
#endif
#ifdef __AVX512IFMA__
  HP_ISA("avx512ifma", "AVX-512IFMA");
#endif
#ifdef __AVX512VBMI__
  HP_ISA("avx512vbmi", "AVX-512VBMI");
#endif
#ifdef __AVX512VBMI2__
  HP_ISA("avx512vbmi2", "AVX-512VBMI2");
#endif
#ifdef __AVX512VNNI__
  HP_ISA("avx512vnni", "AVX-512VNNI");
#endif
#ifdef __AVX512BITALG__
  HP_ISA("avx512bitalg", "AVX-512BITALG");
#endif
#ifdef __AVX512VPOPCNTDQ__
  HP_ISA("avx512vpopcntdq", "AVX-512VPOPCNTDQ");
#endif
#ifdef __AVX512BF16__
  HP_ISA("avx512bf16", "AVX-512-BF16");
#endif
#if defined(__AVX512FP16__) && HP_ISA_NEW_NAMES
  HP_ISA("avx512fp16", "AVX-512-FP16");
#endif
#undef HP_ISA
  return NULL;
}
#endif

void *hetpar_create(char *err, size_t errlen) {
#if !HP_CUDA && defined(__x86_64__) && defined(__GNUC__)
  if (const char *isa = hp_cpu_missing()) {
    snprintf(err, errlen,
             "this CPU lacks %s, which the program was built for "
             "(hetpar-compile --cpu-arch, default native: the compiling "
             "machine's); recompile on this machine, or with "
             "--cpu-arch=x86-64 for any x86-64 CPU",
             isa);
    return NULL;
  }
#endif
  hp_ctx *ctx = (hp_ctx *)calloc(1, sizeof(hp_ctx));
  if (!ctx) {
    snprintf(err, errlen, "out of host memory");
    return NULL;
  }
#if HP_CUDA
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, errlen, "no CUDA device: %s",
             e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    free(ctx);
    return NULL;
  }
#if defined(HETPAR_MULTI_DEVICE)
  // One process per device: the launcher's local rank picks this node's GPU
  // (all ranks share it when the node has one GPU).
  for (const char *var :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *v = getenv(var)) {
      if ((e = cudaSetDevice(atoi(v) % count)) != cudaSuccess) {
        snprintf(err, errlen, "cudaSetDevice: %s", cudaGetErrorString(e));
        free(ctx);
        return NULL;
      }
      break;
    }
  // The collectives' path (NCCL or host-staged MPI), the same on every rank.
  if (hp_collectives_init(err, errlen)) {
    free(ctx);
    return NULL;
  }
#endif
  // Non-blocking: the legacy default stream's work (another thread's
  // cudaMemcpy) neither waits for this stream nor breaks a graph capture on
  // it; every copy here runs on this stream (hp_copy).
  if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) !=
      cudaSuccess) {
    snprintf(err, errlen, "cudaStreamCreateWithFlags: %s",
             cudaGetErrorString(e));
    free(ctx);
    return NULL;
  }
  if (cublasCreate(&ctx->blas) != CUBLAS_STATUS_SUCCESS) {
    snprintf(err, errlen, "cublasCreate failed");
    cudaStreamDestroy(ctx->stream);
    free(ctx);
    return NULL;
  }
  cublasSetStream(ctx->blas, ctx->stream);
  hp_gpu_libraries_init(ctx);
  // Runs as CUDA graphs (hp_run_graph) unless HETPAR_CUDA_GRAPHS=0, and
  // never on one device of several: the collectives run MPI on the host, and
  // the host-staged ones synchronize the stream.
#if defined(HETPAR_MULTI_DEVICE)
  ctx->graph.disabled = 1;
#else
  const char *graphs = getenv("HETPAR_CUDA_GRAPHS");
  ctx->graph.disabled = graphs && strcmp(graphs, "0") == 0;
#endif
  if ((e = cudaMalloc((void **)&ctx->index_error, sizeof(hp_index_error))) !=
      cudaSuccess) {
    snprintf(err, errlen, "cudaMalloc: %s", cudaGetErrorString(e));
    hp_gpu_libraries_release(ctx);
    cublasDestroy(ctx->blas);
    cudaStreamDestroy(ctx->stream);
    free(ctx);
    return NULL;
  }
#else
  ctx->index_error = (hp_index_error *)calloc(1, sizeof(hp_index_error));
  if (!ctx->index_error) {
    snprintf(err, errlen, "out of host memory");
    free(ctx);
    return NULL;
  }
#endif
  return ctx;
}

void hetpar_destroy(void *p) {
  hp_ctx *ctx = (hp_ctx *)p;
  if (!ctx)
    return;
#if defined(HETPAR_MULTI_DEVICE)
  // The collectives initialized MPI on first use; end it with the program.
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Finalize();
#endif
#if HP_CUDA
  hp_trace_release(ctx);
  hp_graph_release(ctx);
  free(ctx->graph.key);
  hp_gpu_libraries_release(ctx);
  cudaFree(ctx->index_error);
  cublasDestroy(ctx->blas);
  cudaStreamDestroy(ctx->stream);
#else
  free(ctx->index_error);
#endif
  free(ctx);
}

void *hetpar_alloc(void *p, uint64_t bytes) {
  hp_ctx *ctx = (hp_ctx *)p;
  size_t n = bytes ? (size_t)bytes : 1;
#if HP_CUDA
  void *ptr = NULL;
  cudaError_t e = cudaMalloc(&ptr, n);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "cudaMalloc(%llu): %s",
             (unsigned long long)bytes, cudaGetErrorString(e));
    return NULL;
  }
  return ptr;
#else
  void *ptr = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!ptr)
    snprintf(ctx->error, sizeof ctx->error,
             "out of memory allocating %llu bytes", (unsigned long long)bytes);
  return ptr;
#endif
}

void hetpar_free(void *, void *ptr) {
#if HP_CUDA
  cudaFree(ptr);
#else
  free(ptr);
#endif
}

/// A synchronous copy in either direction (on the context's stream, which
/// then synchronizes; memcpy on the CPU).
static int hp_copy(void *p, void *dst, const void *src, uint64_t bytes,
                   int toDevice) {
#if HP_CUDA
  hp_ctx *ctx = (hp_ctx *)p;
  cudaError_t e = cudaMemcpyAsync(
      dst, src, bytes,
      toDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "%s: %s",
             toDevice ? "upload" : "download", cudaGetErrorString(e));
    return 1;
  }
#else
  (void)p;
  (void)toDevice;
  if (bytes)
    memcpy(dst, src, bytes);
#endif
  return 0;
}

int hetpar_upload(void *p, void *dst, const void *src, uint64_t bytes) {
  return hp_copy(p, dst, src, bytes, 1);
}

int hetpar_download(void *p, void *dst, const void *src, uint64_t bytes) {
  return hp_copy(p, dst, src, bytes, 0);
}

/// The message of the run's first out-of-range index, if any: "node 'x'
/// (Gather): index 7 at position 2 is outside [-3, 3)". Returns 1 then.
static int hp_report_index_error(hp_ctx *ctx, const hp_index_error &e) {
  static const char *const nodes[] = {HP_CHECKED_NODES ""};
  const int count = (int)(sizeof nodes / sizeof nodes[0]) - 1;
  if (e.node == 0)
    return 0;
  const char *what = e.node <= (unsigned long long)count ? nodes[e.node - 1]
                                                         : "an unnamed node";
#if defined(HETPAR_MULTI_DEVICE)
  // One device of several: which one, and that the position is in its own
  // part of the tensor (its rows of the batch, its shard).
  int rank = hp_watchdog.rank.load();
  snprintf(ctx->error, sizeof ctx->error,
           "device %lld (rank %d): %s: index %lld at position %lld of this "
           "device's part of the tensor is outside [%lld, %lld)",
           (long long)hp_device_of(rank), rank, what, e.value, e.element, e.lo,
           e.hi);
#else
  snprintf(ctx->error, sizeof ctx->error,
           "%s: index %lld at position %lld is outside [%lld, %lld)", what,
           e.value, e.element, e.lo, e.hi);
#endif
  return 1;
}

#if HP_CUDA
/// Captures hp_program_run's launches on the stream into ctx->graph_exec.
/// Returns 0, or non-zero when something in the run cannot be captured or
/// the graph not instantiated (nothing has run then, and the stream has left
/// capture mode).
static int hp_graph_capture(hp_ctx *ctx, char *arena, char *weights,
                            const void *const *inputs, void *const *outputs) {
  if (cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal) !=
      cudaSuccess)
    return 1;
  int rc = hp_program_run(ctx, arena, weights, inputs, outputs);
  cudaGraph_t graph = NULL;
  if (cudaStreamEndCapture(ctx->stream, &graph) != cudaSuccess || !graph)
    rc = 1;
  if (rc == 0 &&
      cudaGraphInstantiate(&ctx->graph_exec, graph, 0) != cudaSuccess) {
    ctx->graph_exec = NULL;
    rc = 1;
  }
  if (graph)
    cudaGraphDestroy(graph);
  return rc;
}

/// Runs the program on the stream, as one CUDA graph where it can
/// (docs/codegen.md, "CUDA graphs"): the first run on a set of buffers is
/// eager, the second captures its launches into a graph, and later runs on
/// the same buffers launch the graph, one launch instead of one per kernel
/// and cuBLAS call. Runs are eager while tracing (the trace events are
/// recorded between launches) and once a capture has failed (the capture is
/// dropped, the error cleared, and the run done eagerly; so is every later
/// one). Returns hp_program_run's status.
static int hp_run_graph(hp_ctx *ctx, char *arena, char *weights,
                        const void *const *inputs, void *const *outputs) {
  const void *ptrs[HP_NUM_INPUTS + HP_NUM_OUTPUTS + 2];
  int n = 0;
  ptrs[n++] = arena;
  ptrs[n++] = weights;
  for (int i = 0; i < HP_NUM_INPUTS; ++i)
    ptrs[n++] = inputs[i];
  for (int i = 0; i < HP_NUM_OUTPUTS; ++i)
    ptrs[n++] = outputs[i];
  hp_graph_action action = HP_GRAPH_EAGER;
  if (!ctx->trace_events) {
    action = hp_graph_next(&ctx->graph, ptrs, n);
    if (action == HP_GRAPH_EAGER)
      hp_graph_release(ctx); // captured on other buffers, or disabled
  }
  if (action == HP_GRAPH_CAPTURE &&
      hp_graph_capture(ctx, arena, weights, inputs, outputs) != 0) {
    (void)cudaGetLastError(); // the failed capture's error
    ctx->error[0] = 0;
    ctx->graph.disabled = 1;
    action = HP_GRAPH_EAGER;
  }
  if (action == HP_GRAPH_EAGER)
    return hp_program_run(ctx, arena, weights, inputs, outputs);
  cudaError_t e = cudaGraphLaunch(ctx->graph_exec, ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "cudaGraphLaunch: %s",
             cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
#endif

int hetpar_run(void *p, void *arena, void *weights, const void *const *inputs,
               void *const *outputs) {
  hp_ctx *ctx = (hp_ctx *)p;
  ctx->error[0] = 0;
  hp_index_error found;
#if HP_CUDA
  cudaError_t e = cudaMemsetAsync(ctx->index_error, 0, sizeof *ctx->index_error,
                                  ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "CUDA error: %s",
             cudaGetErrorString(e));
    return 1;
  }
  if (ctx->trace_events) {
    ctx->trace_start_us = hp_wall_us();
    cudaEventRecord(ctx->trace_events[HP_TRACE_POINTS + 1], ctx->stream);
  }
#else
  memset(ctx->index_error, 0, sizeof *ctx->index_error);
#if defined(HETPAR_MULTI_DEVICE)
  // Every device of a multi-device run joins MPI, also one whose program has
  // no collective of its own: the other ranks' MPI_Init waits for all of
  // the job's processes. At the first run, not at creation: a program that
  // is created and never run (a check of its folder) starts no MPI.
  if (hp_mpi_start(ctx))
    return 1;
#endif
#endif
#if HP_CUDA
  int rc = hp_run_graph(ctx, (char *)arena, (char *)weights, inputs, outputs);
#else
  int rc = hp_program_run(ctx, (char *)arena, (char *)weights, inputs, outputs);
#endif
  if (rc)
    return rc;
#if HP_CUDA
  e = cudaStreamSynchronize(ctx->stream);
  if (e == cudaSuccess)
    e = cudaGetLastError();
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(&found, ctx->index_error, sizeof found,
                        cudaMemcpyDeviceToHost, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "CUDA error: %s",
             cudaGetErrorString(e));
    return 1;
  }
#else
  found = *ctx->index_error;
#endif
#if HP_CUDA
  // The run has finished (cudaStreamSynchronize above): each trace point's
  // event, as wall time from the run's start event.
  if (ctx->trace_events && ctx->trace)
    for (int i = 0; i <= HP_TRACE_POINTS; ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, ctx->trace_events[HP_TRACE_POINTS + 1],
                           ctx->trace_events[i]);
      ctx->trace[i] = ctx->trace_start_us + 1e3 * (double)ms;
    }
#endif
  // 3: the program ran to its end (its exchanges and collectives done), but
  // its results are not to be trusted.
  return hp_report_index_error(ctx, found) ? 3 : 0;
}

// A program generated with --unchecked-indices (HP_UNCHECKED_INDICES, the
// same for every device of one compile) never finishes a run with an index
// out of range, so its devices have nothing to agree on: without
// hetpar_agree the runtime skips the step's all-reduce (Program::agree).
#if defined(HETPAR_MULTI_DEVICE) && !defined(HP_UNCHECKED_INDICES)
int hetpar_agree(void *p, int failed) { return hp_agree((hp_ctx *)p, failed); }
#endif

const char *hetpar_error(void *p) { return ((hp_ctx *)p)->error; }

// The measured timeline (ProgramABI.h, "Trace").
int hetpar_trace_points(void) { return HP_TRACE_POINTS; }

const char *hetpar_trace_span(int i) {
  static const char *const spans[] = {HP_TRACE_SPANS ""};
  return i >= 0 && i < HP_TRACE_POINTS ? spans[i] : NULL;
}

int hetpar_trace(void *p, double *times_us) {
  hp_ctx *ctx = (hp_ctx *)p;
#if HP_CUDA
  if (times_us && !ctx->trace_events && HP_TRACE_POINTS > 0) {
    const int n = HP_TRACE_POINTS + 2;
    cudaEvent_t *events = (cudaEvent_t *)calloc(n, sizeof(cudaEvent_t));
    if (!events) {
      snprintf(ctx->error, sizeof ctx->error, "out of host memory");
      return 1;
    }
    for (int i = 0; i < n; ++i) {
      cudaError_t e = cudaEventCreate(&events[i]);
      if (e != cudaSuccess) {
        for (int j = 0; j < i; ++j)
          cudaEventDestroy(events[j]);
        free(events);
        snprintf(ctx->error, sizeof ctx->error, "cudaEventCreate: %s",
                 cudaGetErrorString(e));
        return 1;
      }
    }
    ctx->trace_events = events;
  }
  if (!times_us)
    hp_trace_release(ctx);
#endif
  ctx->trace = times_us;
  return 0;
}
}
#endif // HETPAR_DEFINE_ABI
