//===- hetpar_math.h - scalar functions of kernels --------------*- C++ -*-===//
//
// The scalar functions of the generated kernels (float and double
// overloads).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_MATH_H
#define HETPAR_DEVICE_MATH_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

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

#endif // HETPAR_DEVICE_MATH_H
