//===- Window.h - the window of a convolution or pooling op -----*- C++ -*-===//
//
// ONNX's window attributes (kernel_shape, strides, dilations, pads,
// auto_pad, ceil_mode) of Conv, FusedConv, MaxPool, AveragePool and their
// gradients: the one reading of shape inference (the result's extents and
// the attributes' checks) and code generation (the padding each kernel
// applies), so that the two cannot disagree about a SAME padding.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_ONNX_WINDOW_H
#define HETPAR_DIALECT_ONNX_WINDOW_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace hetpar::onnx {

/// One op's window over `spatial` axes. Lists hold one entry per spatial
/// axis (`pads`: the begins, then the ends, ONNX's order); kernel extents
/// may be dynamic (ShapedType::kDynamic) only when read from W's shape.
struct Window {
  int64_t spatial = 0;
  llvm::StringRef autoPad = "NOTSET";
  llvm::SmallVector<int64_t> kernel, strides, dilations, pads;
  bool ceilMode = false;
  /// The kernel comes from W's shape, where an extent may be dynamic; an
  /// attribute's entry equal to the dynamic marker is just negative (a
  /// MaxPool with kernel_shape [INT64_MIN, 2] passed as dynamic and
  /// overflowed in code generation; found by the onnx-mutate fuzzer).
  bool kernelFromShape = false;

  /// `op`'s attributes by their ONNX names (the gradients carry their
  /// forward op's), with `kernel` given (kernel_shape or W's spatial
  /// extents). Missing strides and dilations are 1 and missing pads 0 on
  /// `spatial` axes; given lists are kept as they are for check().
  static Window read(mlir::Operation *op, llvm::ArrayRef<int64_t> kernel,
                     int64_t spatial, bool kernelFromShape = false);

  /// Errors at `op`: a list without one entry per axis (pads: two); a
  /// kernel extent, stride or dilation not positive; a negative pad; an
  /// entry of 2^31 or more, or a window of more than 2^31 positions (so
  /// that no window arithmetic overflows int64); an unknown auto_pad; pads
  /// other than 0 beside an auto_pad.
  mlir::LogicalResult check(mlir::Operation *op) const;

  /// The output extent of axis `i` over an input extent `in` (ONNX's
  /// Conv/Pool rules, ceil_mode included); dynamic when `in` or the kernel
  /// is; -1 when the window does not fit the padded input. After check().
  int64_t outputExtent(size_t i, int64_t in) const;

  /// The padding before and after axis `i` for input extent `in` and
  /// output extent `out`: the pads, or SAME's total split (the odd one at
  /// the end for SAME_UPPER, at the beginning for SAME_LOWER), or 0 for
  /// VALID. After check(), on static extents.
  int64_t padBegin(size_t i, int64_t in, int64_t out) const;
  int64_t padEnd(size_t i, int64_t in, int64_t out) const;

private:
  bool same() const {
    return autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  }
  int64_t sameTotal(size_t i, int64_t in, int64_t out) const;
};

} // namespace hetpar::onnx

#endif // HETPAR_DIALECT_ONNX_WINDOW_H
