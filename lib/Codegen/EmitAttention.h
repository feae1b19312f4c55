//===- EmitAttention.h - onnx.FusedAttention ------------------*- C++ -*-===//
//
// Code generation of FusedAttention (hetpar-onnx-fuse-attention's op): one
// hp_attention_launch per op. Private to lib/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITATTENTION_H
#define HETPAR_LIB_CODEGEN_EMITATTENTION_H

#include "EmitContext.h"

namespace hetpar::codegen {

/// Emits the launch of one FusedAttention with static shapes (as
/// checkCodegenSupport guarantees). Returns the number of library kernel
/// launches emitted.
int emitFusedAttention(mlir::Operation *op, const LibraryEmitContext &ctx);

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITATTENTION_H
