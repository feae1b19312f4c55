//===- ClipBounds.h - what a missing Clip bound means -----------*- C++ -*-===//
//
// ONNX Clip (opset 11 and later): a missing `min` is
// numeric_limits<T>::lowest() and a missing `max` numeric_limits<T>::max(),
// so that -inf and +inf are clamped too (as ONNX Runtime does). The one
// answer of code generation's Clip and of hetpar-onnx-fuse-conv's
// FusedConv bounds.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_ONNX_CLIPBOUNDS_H
#define HETPAR_DIALECT_ONNX_CLIPBOUNDS_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"

#include <limits>

namespace hetpar::onnx {

/// The magnitude of a missing Clip bound for element type `elt`: the largest
/// finite value of a float type (its lowest is the negation), or infinity
/// for other types (an integer Clip without a bound clamps nothing).
inline double clipDefaultBound(mlir::Type elt) {
  if (auto ft = llvm::dyn_cast<mlir::FloatType>(elt))
    return llvm::APFloat::getLargest(ft.getFloatSemantics()).convertToDouble();
  return std::numeric_limits<double>::infinity();
}

} // namespace hetpar::onnx

#endif // HETPAR_DIALECT_ONNX_CLIPBOUNDS_H
