//===- BatchDims.h - hetpar-compile --batch-dim -------------------*- C++
//-*-===//
//
// Where the batch lies in the graph inputs, as the user gives it: each
// --batch-dim NAME=AXIS becomes the argument attribute `dist.batch_dim` of
// the model function, which the batch analysis (hetpar/Plan/Batch.h) seeds
// from.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TOOLS_COMPILE_BATCHDIMS_H
#define HETPAR_TOOLS_COMPILE_BATCHDIMS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace hetpar::tools {

/// Sets `dist.batch_dim` on the arguments of `module`'s function that
/// `specs` name ("NAME=AXIS", AXIS from -rank to rank-1, negative counting
/// from the end). Errors, naming the spec: no '=' or a non-integer AXIS, no
/// input NAME (the message lists the inputs), an input named twice, AXIS
/// outside the input's rank, and, with `training`, an AXIS other than 0
/// (training reads its batches along dimension 0, hetpar-run --data).
llvm::Error applyBatchDims(mlir::ModuleOp module,
                           const std::vector<std::string> &specs,
                           bool training);

/// For a training plan: an error when an input is marked as holding no
/// batch (--batch-dim NAME=none), or when the batch analysis of `module`'s
/// static function finds the batch in a dimension other than 0 of the first
/// input (a sequence-first export): training's data cannot feed either.
/// hetpar-compile calls it for --mode training and for a plan file whose
/// mode is training.
llvm::Error checkTrainingBatchDim(mlir::ModuleOp module);

} // namespace hetpar::tools

#endif // HETPAR_TOOLS_COMPILE_BATCHDIMS_H
