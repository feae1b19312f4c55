//===- EmitGradients.h - the fused row-wise gradient ops ------*- C++ -*-===//
//
// Code generation of SoftmaxGrad, LogSoftmaxGrad and LayerNormalizationGrad
// (the fused backward ops of docs/training.md, "Gradients"): one launch of the
// hetpar_device.h kernels per op. Private to lib/Codegen: EmitProgram.cpp's
// emitter calls these with the services of EmitContext.h.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITGRADIENTS_H
#define HETPAR_LIB_CODEGEN_EMITGRADIENTS_H

#include "EmitContext.h"

namespace hetpar::codegen {

/// True for the ops emitRowGradient handles.
bool isRowGradient(mlir::Operation *op);

/// Arena scratch bytes of a row-wise gradient op: LayerNormalizationGrad's
/// per-row (mean, inv) pairs, 2 * rows accumulators (4 bytes each, 8 for
/// float64), when dScale or dB is used; 0 otherwise.
int64_t rowGradientScratchBytes(mlir::Operation *op);

/// Emits the launch of one row-wise gradient op (static shapes, as
/// checkCodegenSupport guarantees). Returns the number of library kernel
/// launches emitted (0 for empty tensors).
int emitRowGradient(mlir::Operation *op, const LibraryEmitContext &ctx);

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITGRADIENTS_H
