//===- Views.h - ops whose result shares its operand's buffer ---*- C++ -*-===//
//
// The one answer to "is this op a view?", used by the code generator (a view
// emits no code and aliases its operand's storage), the cost model (no
// kernel, no bytes), the simulator (no buffer or gradient buffer of its own)
// and hetpar-dist-verify-exchanges (a view does not end an exchange step).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_ONNX_VIEWS_H
#define HETPAR_DIALECT_ONNX_VIEWS_H

#include "mlir/IR/Operation.h"

namespace hetpar::onnx {

/// Whether `op` is a Dropout that drops at random: training_mode true (or
/// not a constant) and a ratio that is not a constant 0 (PyTorch exports
/// F.dropout(x, 0.0) so: the identity). False for any other op.
bool isRandomDropout(mlir::Operation *op);

/// Whether `op`'s result 0 is its operand 0's data under another shape:
/// Reshape, Flatten, Squeeze, Unsqueeze, Identity, and a Dropout that does
/// not drop at random (isRandomDropout). A view moves no data; generated
/// code gives its result its operand's buffer.
bool isView(mlir::Operation *op);

/// `v` through views: the value whose buffer `v` shares (`v` itself when it
/// is not a view's result).
mlir::Value viewRoot(mlir::Value v);

} // namespace hetpar::onnx

#endif // HETPAR_DIALECT_ONNX_VIEWS_H
