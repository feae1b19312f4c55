//===- Window.cpp - the window of a convolution or pooling op -------------===//
//
// Window.h describes it.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/Window.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace hetpar::onnx;

Window Window::read(Operation *op, ArrayRef<int64_t> kernel, int64_t spatial,
                    bool kernelFromShape) {
  Window w;
  w.spatial = spatial;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.kernelFromShape = kernelFromShape;
  // The op's own attributes only: a ceil_mode beside a Conv, which has
  // none, changes nothing.
  auto inherent = [&](StringRef name) {
    return op->getInherentAttr(name).value_or(Attribute());
  };
  if (auto a = llvm::dyn_cast_or_null<StringAttr>(inherent("auto_pad")))
    w.autoPad = a.getValue();
  if (auto a = llvm::dyn_cast_or_null<IntegerAttr>(inherent("ceil_mode")))
    w.ceilMode = a.getInt() != 0;
  auto list = [&](StringRef name, SmallVector<int64_t> &v, int64_t n,
                  int64_t dflt) {
    if (auto a = llvm::dyn_cast_or_null<DenseI64ArrayAttr>(inherent(name)))
      v.assign(a.asArrayRef().begin(), a.asArrayRef().end());
    if (v.empty())
      v.assign(n, dflt);
  };
  list("strides", w.strides, spatial, 1);
  list("dilations", w.dilations, spatial, 1);
  list("pads", w.pads, 2 * spatial, 0);
  return w;
}

LogicalResult Window::check(Operation *op) const {
  auto count = [&](ArrayRef<int64_t> v, StringRef name,
                   int64_t n) -> LogicalResult {
    if (static_cast<int64_t>(v.size()) != n)
      return op->emitOpError() << "'" << name << "' must have " << n
                               << " entries, got " << v.size();
    return success();
  };
  if (failed(count(strides, "strides", spatial)) ||
      failed(count(dilations, "dilations", spatial)) ||
      failed(count(pads, "pads", 2 * spatial)) ||
      failed(count(kernel, "kernel_shape", spatial)))
    return failure();
  for (int64_t i = 0; i < spatial; ++i) {
    bool dynamicKernel = kernelFromShape && ShapedType::isDynamic(kernel[i]);
    if (strides[i] <= 0 || dilations[i] <= 0 ||
        (!dynamicKernel && kernel[i] <= 0))
      return op->emitOpError()
             << "kernel_shape, strides and dilations must be positive";
  }
  if (llvm::any_of(pads, [](int64_t p) { return p < 0; }))
    return op->emitOpError() << "pads must be non-negative";
  // Bounded so that the window arithmetic (dilation * kernel + pads) cannot
  // overflow int64.
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  for (ArrayRef<int64_t> list :
       {ArrayRef<int64_t>(strides), ArrayRef<int64_t>(dilations),
        ArrayRef<int64_t>(pads), ArrayRef<int64_t>(kernel)})
    for (int64_t v : list)
      if (!ShapedType::isDynamic(v) && v > kLimit)
        return op->emitOpError() << "kernel_shape, strides, dilations and pads "
                                    "must be below 2^31, got "
                                 << v;
  // So is the window's number of positions, which the kernels loop over (a
  // MaxPool's kernel [740562107, 178730228, 773090813] overflowed int64 in
  // code generation; found by the onnx-mutate fuzzer). Each factor is below
  // 2^31, so no product here overflows.
  int64_t positions = 1;
  for (int64_t k : kernel)
    if (!ShapedType::isDynamic(k) && (positions *= k) > kLimit)
      return op->emitOpError() << "kernel_shape ["
                               << llvm::make_range(kernel.begin(), kernel.end())
                               << "] has more than 2^31 window positions";
  if (autoPad != "NOTSET" && !same() && autoPad != "VALID")
    return op->emitOpError() << "unknown auto_pad \"" << autoPad << "\"";
  if (autoPad != "NOTSET" && llvm::any_of(pads, [](int64_t p) { return p; }))
    return op->emitOpError()
           << "pads cannot be given with auto_pad " << autoPad;
  return success();
}

int64_t Window::outputExtent(size_t i, int64_t in) const {
  if (ShapedType::isDynamic(in) || ShapedType::isDynamic(kernel[i]))
    return ShapedType::kDynamic;
  int64_t s = strides[i], effK = dilations[i] * (kernel[i] - 1) + 1;
  if (same())
    return (in + s - 1) / s;
  if (autoPad == "VALID")
    return in < effK ? 0 : (in - effK) / s + 1;
  int64_t padded = in + pads[i] + pads[i + spatial] - effK;
  if (padded < 0)
    return -1;
  int64_t out = ceilMode ? (padded + s - 1) / s + 1 : padded / s + 1;
  // With ceil_mode, a last window that starts inside the end padding is
  // dropped.
  if (ceilMode && (out - 1) * s >= in + pads[i])
    --out;
  return out;
}

int64_t Window::sameTotal(size_t i, int64_t in, int64_t out) const {
  return std::max<int64_t>(0, (out - 1) * strides[i] +
                                  (kernel[i] - 1) * dilations[i] + 1 - in);
}

int64_t Window::padBegin(size_t i, int64_t in, int64_t out) const {
  if (same()) {
    int64_t total = sameTotal(i, in, out);
    return autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
  }
  return autoPad == "NOTSET" ? pads[i] : 0;
}

int64_t Window::padEnd(size_t i, int64_t in, int64_t out) const {
  if (same())
    return sameTotal(i, in, out) - padBegin(i, in, out);
  return autoPad == "NOTSET" ? pads[i + spatial] : 0;
}
