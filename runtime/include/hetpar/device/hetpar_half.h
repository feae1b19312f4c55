//===- hetpar_half.h - 16-bit float storage types ---------------*- C++ -*-===//
//
// 16-bit floating-point storage types (hp_half, hp_bf16).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_HALF_H
#define HETPAR_DEVICE_HALF_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

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

#endif // HETPAR_DEVICE_HALF_H
