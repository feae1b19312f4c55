//===- EmitGradients.h - the fused row-wise gradient ops ------*- C++ -*-===//
//
// Code generation of SoftmaxGrad, LogSoftmaxGrad and LayerNormalizationGrad
// (the fused backward ops of docs/training.md, "Gradients"): one launch of the
// hetpar_device.h kernels per op. Private to lib/Codegen: EmitProgram.cpp's
// emitter calls these with the few services below.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITGRADIENTS_H
#define HETPAR_LIB_CODEGEN_EMITGRADIENTS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <string>

namespace hetpar::codegen {

/// What the gradient emitters need from the program emitter (owning
/// std::functions: the context outlives the lambdas that build it).
struct GradientEmitContext {
  /// C expression of the pointer to a value's first element.
  std::function<std::string(mlir::Value)> ptr;
  /// C storage type of an element type under the float mode ("hp_bf16").
  std::function<std::string(mlir::Type)> storageType;
  /// C accumulator type of an element type ("float", "double").
  std::function<std::string(mlir::Type)> accType;
  /// C expression of the op's scratch bytes (char *) in the arena.
  std::function<std::string(mlir::Operation *)> scratch;
  /// Appends one statement to the host function.
  std::function<void(const llvm::Twine &)> line;
};

/// True for the ops emitRowGradient handles.
bool isRowGradient(mlir::Operation *op);

/// Arena scratch bytes of a row-wise gradient op: LayerNormalizationGrad's
/// per-row (mean, inv) pairs, 2 * rows accumulators (4 bytes each, 8 for
/// float64), when dScale or dB is used; 0 otherwise.
int64_t rowGradientScratchBytes(mlir::Operation *op);

/// Emits the launch of one row-wise gradient op (static shapes, as
/// checkCodegenSupport guarantees). Returns the number of library kernel
/// launches emitted (0 for empty tensors).
int emitRowGradient(mlir::Operation *op, const GradientEmitContext &ctx);

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITGRADIENTS_H
