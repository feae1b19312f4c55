//===- EmitIndexing.h - ops that take indices from data --------*- C++ -*-===//
//
// Code generation of the ops that read or write at indices held in a tensor:
// Gather, GatherElements, GatherND, ScatterND, ScatterElements and OneHot.
// Each index from data is checked against its extent on the device
// (docs/reliability.md, "Checked indices") unless the program was compiled
// with --unchecked-indices. Private to lib/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITINDEXING_H
#define HETPAR_LIB_CODEGEN_EMITINDEXING_H

#include "EmitContext.h"

namespace hetpar::codegen {

/// Whether `op` is one of the ops emitIndexingOp generates.
bool isIndexingOp(mlir::Operation *op);

/// Emits `op` (isIndexingOp) through `ctx`; returns the library calls
/// emitted (copies made through ctx.copy count themselves).
int emitIndexingOp(mlir::Operation *op, const LibraryEmitContext &ctx);

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITINDEXING_H
