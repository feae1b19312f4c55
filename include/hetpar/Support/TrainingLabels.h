//===- TrainingLabels.h - the labels a training loss adds -------*- C++ -*-===//
//
// hetpar-compile's --loss (cross-entropy or mse, on --loss-output) adds a
// labels input to every training step (hetpar-train-attach-loss), which the
// last pipeline stage takes. Its type follows from the loss and the output
// it reads (labelsType, the one answer of the pass and the planner); the
// planner reads it from the module attribute `hetpar.training_labels`, so
// that the simulator counts the labels with the inputs a device holds.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SUPPORT_TRAININGLABELS_H
#define HETPAR_SUPPORT_TRAININGLABELS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace hetpar {

/// The module attribute holding the labels' type (a TypeAttr of a ranked
/// tensor, the batch on axis 0, as the planned graph's batch); absent when
/// the loss adds none (--loss output, or inference).
inline constexpr llvm::StringLiteral kTrainingLabelsAttrName =
    "hetpar.training_labels";

/// The labels of `loss` on an output of type `out`: cross-entropy's class
/// ids, int64 of `out` without its last (class) dimension, as PyTorch's
/// cross_entropy over logits [..., C]; mse's targets, `out`'s type. Null for
/// another loss ("output": the model's own scalar) and for a cross-entropy
/// output of rank below 2 (hetpar-train-attach-loss reports it).
mlir::RankedTensorType labelsType(mlir::RankedTensorType out,
                                  llvm::StringRef loss);

/// Writes `type` onto `module`.
void setTrainingLabels(mlir::ModuleOp module, mlir::RankedTensorType type);

/// The labels' type of the module that is or holds `op`: null when the
/// attribute is absent; std::nullopt when it is not a TypeAttr of a ranked
/// tensor of rank at least 1.
std::optional<mlir::RankedTensorType> getTrainingLabels(mlir::Operation *op);

} // namespace hetpar

#endif // HETPAR_SUPPORT_TRAININGLABELS_H
