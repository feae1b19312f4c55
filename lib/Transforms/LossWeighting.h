//===- LossWeighting.h - how a replica's loss joins the batch's -*- C++ -*-===//
//
// Shared by hetpar-dist-reduce-gradients and hetpar-dist-pipeline-schedule:
// the one answer to "what kind of mean is this loss", from which each
// replica's (and microbatch's) weight in the step's loss follows
// (docs/training.md, "Data-parallel training").
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_TRANSFORMS_LOSSWEIGHTING_H
#define HETPAR_LIB_TRANSFORMS_LOSSWEIGHTING_H

#include "hetpar/Dialect/ONNX/Gradient.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hetpar::train {

/// How the losses of parts of a batch combine into the batch's loss.
struct LossWeighting {
  /// Rows: a mean over the samples (weight: the part's rows / the batch's).
  /// Counts: a mean over the labels other than `ignoreIndex` (weight: the
  /// part's counted labels / the batch's). One: a sum (weight 1).
  enum Kind { Rows, Counts, One } kind = Rows;
  /// Counts: the labels and the label that is ignored.
  mlir::Value labels;
  int64_t ignoreIndex = 0;
};

/// The weighting of `loss`, the step's loss in `func`: ReduceMean (Rows),
/// ReduceSum (One), a mean or summed SoftmaxCrossEntropyLoss or
/// NegativeLogLikelihoodLoss (Rows, or Counts with ignore_index), looking
/// through a Mul or Div by a constant. Errors (emitted): any other loss, a
/// class-weighted mean loss.
mlir::FailureOr<LossWeighting> detectLossWeighting(mlir::func::FuncOp func,
                                                   mlir::Value loss);

/// The float32 scalar count of the labels in `labels` other than
/// `ignoreIndex` (the denominator of a mean cross-entropy with
/// ignore_index), built at g's insertion point.
mlir::Value countLabels(GradientBuilder &g, mlir::Value labels,
                        int64_t ignoreIndex);

/// Whether a part of a batch (a replica's rows, a microbatch) with `count`
/// counted labels, of `total` in the batch, contributes its weighted loss
/// and gradients (an i1 scalar): where it counts labels, or where no part
/// does. A part without labels has a NaN mean (0/0, as PyTorch's) but
/// nothing to contribute, so it adds zeros; a batch without labels has a
/// NaN loss on one device and in PyTorch, and keeps it here too (each part's
/// weight is 0/0), so that training stops on it alike.
mlir::Value contributes(GradientBuilder &g, mlir::Value count,
                        mlir::Value total);

} // namespace hetpar::train

#endif // HETPAR_LIB_TRANSFORMS_LOSSWEIGHTING_H
