//===- TrainingLabels.h - the labels a training loss adds -------*- C++ -*-===//
//
// hetpar-compile's --loss (cross-entropy or mse, on --loss-output) adds a
// labels input to every training step (hetpar-train-attach-loss), which the
// last pipeline stage takes. Its type follows from the loss and the output
// it reads (labelsType, the one answer of the pass and the planner).
// hetpar-compile writes it onto the planned module as the module attribute
// `hetpar.training_labels`, a `#dist.graph_input` (name, a whole step's
// type, batch on axis 0): the simulator counts the labels with the inputs a
// device holds, and the partition of a training plan lists them with the
// graph inputs (`dist.graph_inputs`), which the runtime checks on every
// device.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_TRAININGLABELS_H
#define HETPAR_PLAN_TRAININGLABELS_H

#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace hetpar {

/// The module attribute holding the labels (a #dist.graph_input whose
/// batch_dim is 0, as the planned graph's batch); absent when the loss adds
/// none (--loss output, or inference).
inline constexpr llvm::StringLiteral kTrainingLabelsAttrName =
    "hetpar.training_labels";

/// The labels of `loss` on an output of type `out`: cross-entropy's class
/// ids, int64 of `out` without its last (class) dimension, as PyTorch's
/// cross_entropy over logits [..., C]; mse's targets, `out`'s type. Null for
/// another loss ("output": the model's own scalar) and for a cross-entropy
/// output of rank below 2 (hetpar-train-attach-loss reports it).
mlir::RankedTensorType labelsType(mlir::RankedTensorType out,
                                  llvm::StringRef loss);

/// Writes the labels input `name` of `type` (a whole step's, batch on axis
/// 0) onto `module`.
void setTrainingLabels(mlir::ModuleOp module, llvm::StringRef name,
                       mlir::RankedTensorType type);

/// The labels of the module that is or holds `op`: a null attribute when it
/// has none; std::nullopt when the attribute is not a #dist.graph_input
/// with the batch on axis 0.
std::optional<dist::GraphInputAttr> getTrainingLabels(mlir::Operation *op);

/// The labels' type (null when the module has none or they are malformed).
mlir::RankedTensorType trainingLabelsType(mlir::Operation *op);

} // namespace hetpar

#endif // HETPAR_PLAN_TRAININGLABELS_H
