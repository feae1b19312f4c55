//===- DType.cpp - Element types, shapes and host tensors -----------------===//
#include "hetpar/runtime/Runtime.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace hetpar::rt {

namespace {
struct DTypeEntry {
  DType dtype;
  const char *name;
  size_t size;
};
constexpr DTypeEntry kDTypes[] = {
    {DType::Float32, "float32", 4},   {DType::Float16, "float16", 2},
    {DType::BFloat16, "bfloat16", 2}, {DType::Float64, "float64", 8},
    {DType::Int64, "int64", 8},       {DType::Int32, "int32", 4},
    {DType::Int16, "int16", 2},       {DType::Int8, "int8", 1},
    {DType::UInt8, "uint8", 1},       {DType::UInt16, "uint16", 2},
    {DType::UInt32, "uint32", 4},     {DType::UInt64, "uint64", 8},
    {DType::Bool, "bool", 1},
};

const DTypeEntry &entry(DType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e;
  return kDTypes[0]; // unreachable for valid enumerators
}
} // namespace

std::optional<DType> dtypeFromName(std::string_view name) {
  for (const DTypeEntry &e : kDTypes)
    if (name == e.name)
      return e.dtype;
  return std::nullopt;
}

const char *dtypeName(DType dtype) { return entry(dtype).name; }

size_t dtypeSize(DType dtype) { return entry(dtype).size; }

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::optional<int64_t> shapeElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d == 0)
      zero = true;
  }
  if (zero)
    return 0;
  for (int64_t d : shape) {
    if (n > std::numeric_limits<int64_t>::max() / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

int64_t HostTensor::numElements() const {
  return shapeElements(shape).value_or(0);
}

size_t HostTensor::numBytes() const {
  return static_cast<size_t>(numElements()) * dtypeSize(dtype);
}

static double halfToDouble(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0)
    return sign * std::ldexp(mant, -24);
  if (exp == 31)
    return mant ? std::numeric_limits<double>::quiet_NaN()
                : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(mant + 1024, exp - 25);
}

double elementAsDouble(const HostTensor &t, size_t i) {
  const uint8_t *p = t.data.data() + i * dtypeSize(t.dtype);
  auto load = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t.dtype) {
  case DType::Float32:
    return load(float());
  case DType::Float16:
    return halfToDouble(load(uint16_t()));
  case DType::BFloat16: {
    uint32_t bits = uint32_t(load(uint16_t())) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case DType::Float64:
    return load(double());
  case DType::Int64:
    return double(load(int64_t()));
  case DType::Int32:
    return load(int32_t());
  case DType::Int16:
    return load(int16_t());
  case DType::Int8:
    return load(int8_t());
  case DType::UInt8:
    return load(uint8_t());
  case DType::UInt16:
    return load(uint16_t());
  case DType::UInt32:
    return load(uint32_t());
  case DType::UInt64:
    return double(load(uint64_t()));
  case DType::Bool:
    return load(uint8_t()) ? 1.0 : 0.0;
  }
  return 0;
}

static bool isFloating(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16 ||
         d == DType::Float64;
}

Comparison compareTensors(const HostTensor &got, const HostTensor &ref,
                          double rtol, double atol) {
  Comparison c;
  if (got.shape != ref.shape) {
    c.detail = "shape " + formatShape(got.shape) + ", reference " +
               formatShape(ref.shape);
    return c;
  }
  // bfloat16 against its bits in uint16: compare as bfloat16.
  HostTensor refView = ref;
  if (got.dtype == DType::BFloat16 && ref.dtype == DType::UInt16)
    refView.dtype = DType::BFloat16;
  bool floating = isFloating(got.dtype) || isFloating(refView.dtype);
  size_t n = size_t(got.numElements());
  int64_t nanMismatches = 0;
  for (size_t i = 0; i < n; ++i) {
    double g = elementAsDouble(got, i), r = elementAsDouble(refView, i);
    bool ok;
    if (!floating)
      ok = g == r;
    else if (std::isnan(r) || std::isnan(g)) {
      ok = std::isnan(r) && std::isnan(g);
      nanMismatches += !ok;
    } else if (std::isinf(r) || std::isinf(g))
      ok = g == r;
    else
      ok = std::fabs(g - r) <= atol + rtol * std::fabs(r);
    if (!ok)
      ++c.mismatches;
    if (!std::isnan(g) && !std::isnan(r) && !std::isinf(g) && !std::isinf(r))
      c.maxAbsError = std::max(c.maxAbsError, std::fabs(g - r));
  }
  c.match = c.mismatches == 0;
  // Over the pairs where both are numbers: say so when some are not.
  char buf[192];
  std::snprintf(buf, sizeof buf,
                "max abs error %.3g%s; %lld of %zu elements "
                "outside tolerance",
                c.maxAbsError, nanMismatches ? " where both are numbers" : "",
                static_cast<long long>(c.mismatches), n);
  c.detail = buf;
  if (nanMismatches)
    c.detail += " (" + std::to_string(nanMismatches) +
                " of them NaN against a number or a number against NaN)";
  return c;
}

} // namespace hetpar::rt
