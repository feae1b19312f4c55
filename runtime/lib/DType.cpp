//===- DType.cpp - Element types, shapes and host tensors -----------------===//
#include "hetpar/runtime/Runtime.h"

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

} // namespace hetpar::rt
