//===- LossWeighting.cpp - how a replica's loss joins the batch's ---------===//
#include "LossWeighting.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace hetpar;
using train::LossWeighting;

/// A mean loss over `labels` with `ignore`: weighted by counts when some
/// label may be ignored, else by rows.
namespace {
template <typename LossOp>
FailureOr<LossWeighting> weightingOfLoss(LossOp op, Value labels,
                                         Value classWeights) {
  LossWeighting how;
  StringRef reduction = op.getReduction();
  if (reduction == "sum") {
    how.kind = LossWeighting::One;
    return how;
  }
  if (classWeights)
    return op->emitError("a class-weighted mean loss under data parallelism "
                         "is not supported yet (its denominator is the sum "
                         "of the weights of every replica's labels)"),
           failure();
  if (auto ignore = op.getIgnoreIndex()) {
    how.kind = LossWeighting::Counts;
    how.labels = labels;
    how.ignoreIndex = *ignore;
  }
  return how;
}
} // namespace

FailureOr<LossWeighting> train::detectLossWeighting(func::FuncOp func,
                                                    Value loss) {
  Operation *def = loss.getDefiningOp();
  // A constant scale of the loss (a negation too: -mean(log p)) does not
  // change how replicas combine.
  while (def && llvm::isa<onnx::MulOp, onnx::DivOp, onnx::NegOp>(def)) {
    if (llvm::isa<onnx::NegOp>(def)) {
      def = def->getOperand(0).getDefiningOp();
      continue;
    }
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    if (matchPattern(rhs, m_Constant()))
      def = lhs.getDefiningOp();
    else if (llvm::isa<onnx::MulOp>(def) && matchPattern(lhs, m_Constant()))
      def = rhs.getDefiningOp();
    else
      break;
  }
  if (auto ce = llvm::dyn_cast_or_null<onnx::SoftmaxCrossEntropyLossOp>(def))
    return weightingOfLoss(ce, ce.getLabels(), ce.getWeights());
  if (auto nll = llvm::dyn_cast_or_null<onnx::NegativeLogLikelihoodLossOp>(def))
    return weightingOfLoss(nll, nll.getTarget(), nll.getWeight());
  if (llvm::isa_and_nonnull<onnx::ReduceMeanOp>(def))
    return LossWeighting{LossWeighting::Rows, {}, 0};
  if (llvm::isa_and_nonnull<onnx::ReduceSumOp>(def))
    return LossWeighting{LossWeighting::One, {}, 0};
  auto diag =
      func.emitError()
      << "data parallelism and microbatches split the batch, so the loss "
         "must be a "
         "mean or a sum over the samples (ReduceMean, ReduceSum, or "
         "a mean or summed cross-entropy, through constant scales and "
         "negation); here it is computed by ";
  if (def)
    diag << "'" << def->getName() << "'";
  else
    diag << "an input";
  diag << " (use --loss cross-entropy or mse)";
  return failure();
}

Value train::countLabels(GradientBuilder &g, Value labels,
                         int64_t ignoreIndex) {
  OpBuilder &b = g.builder();
  Type elt = GradientBuilder::elementType(labels);
  Value ignore = onnx::ConstantOp::create(
      b, labels.getLoc(),
      DenseElementsAttr::get(RankedTensorType::get({}, elt),
                             llvm::APInt(elt.getIntOrFloatBitWidth(),
                                         ignoreIndex,
                                         /*isSigned=*/true)));
  Value same = g.make<onnx::EqualOp>(labels, ignore);
  Value kept = g.make<onnx::NotOp>(same);
  Value ones = g.cast(kept, b.getF32Type());
  SmallVector<int64_t> axes;
  for (int64_t i = 0;
       i < static_cast<int64_t>(GradientBuilder::shapeOf(labels).size()); ++i)
    axes.push_back(i);
  return g.reduceSum(ones, axes, /*keepDims=*/false);
}

Value train::contributes(GradientBuilder &g, Value count, Value total) {
  Value some = g.make<onnx::GreaterOp>(count, g.scalar(0.0, count));
  Value none = g.make<onnx::EqualOp>(total, g.scalar(0.0, total));
  return g.make<onnx::OrOp>(some, none);
}
