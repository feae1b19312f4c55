//===- TrainStepControl.cpp - schedule, clipping, loss scale, accumulation ===//
#include "TrainStepControl.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Training.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace hetpar;

namespace {
Value boolOp(GradientBuilder &g, Operation *op) {
  return op ? op->getResult(0) : Value();
}

template <typename OpT> Value compare(GradientBuilder &g, Value x, Value y) {
  return boolOp(g, g.create<OpT>(1, g.builder().getI1Type(), x, y));
}

Value minOf(GradientBuilder &g, Value x, Value y) {
  return g.create<onnx::MinOp>(1, g.elementType(x), ValueRange{x, y})
      ->getResult(0);
}

Value maxOf(GradientBuilder &g, Value x, Value y) {
  return g.create<onnx::MaxOp>(1, g.elementType(x), ValueRange{x, y})
      ->getResult(0);
}

/// NaN: the optimizer ops' signal to skip the step.
Value skip(GradientBuilder &g, Value like) {
  return g.scalar(std::numeric_limits<double>::quiet_NaN(), like);
}

Value where(GradientBuilder &g, Value c, Value x, Value y) {
  return g.make<onnx::WhereOp>(c, x, y);
}
} // namespace

Value train::equals(GradientBuilder &g, Value x, int64_t v) {
  return compare<onnx::EqualOp>(g, x, g.scalar(static_cast<double>(v), x));
}

Value train::microbatchMaskCounter(GradientBuilder &g, Value step,
                                   int64_t microbatches, Value microbatch) {
  Value m = g.scalar(static_cast<double>(microbatches), step);
  Value first = g.mul(step, m);
  return g.add(first, microbatch);
}

Value train::learningRate(GradientBuilder &g, const Schedule &sc,
                          Value stepsBefore) {
  Value s = g.cast(stepsBefore, g.builder().getF32Type());
  Value base = g.scalar(sc.lr, s);
  if (sc.kind == "constant")
    return base;
  double w = static_cast<double>(sc.warmupSteps),
         t = static_cast<double>(sc.totalSteps);
  // One op per statement: the IR's order must not depend on the compiler's
  // order of evaluating arguments (clang and gcc differ).
  Value warmupSteps = g.scalar(w, s);
  Value sinceWarmup = g.sub(s, warmupSteps);
  Value decaySteps = g.scalar(t - w, s);
  Value prog = g.div(sinceWarmup, decaySteps);
  Value zero = g.scalar(0.0, s);
  prog = maxOf(g, prog, zero);
  Value one = g.scalar(1.0, s);
  prog = minOf(g, prog, one);
  Value pi = g.scalar(M_PI, s);
  Value c = g.make<onnx::CosOp>(g.mul(prog, pi));
  Value minLr = g.scalar(sc.minLr, s);
  Value halfRange = g.scalar(0.5 * (sc.lr - sc.minLr), s);
  Value onePlusCos = g.add(g.scalar(1.0, s), c);
  Value cosine = g.add(minLr, g.mul(halfRange, onePlusCos));
  if (sc.warmupSteps == 0)
    return cosine;
  Value warmupFraction = g.div(s, g.scalar(w, s));
  Value warm = g.mul(base, warmupFraction);
  Value inWarmup = compare<onnx::LessOp>(g, s, g.scalar(w, s));
  return where(g, inWarmup, warm, cosine);
}

Value train::gradScale(GradientBuilder &g, ArrayRef<Value> grads,
                       const GradScaleInputs &in, Value &finite) {
  Type f32 = g.builder().getF32Type();
  // 1 / (lossScale * microbatches): from the summed, scaled gradients to the
  // mean gradient of the step (null: 1).
  Value unscale;
  if (in.microbatches > 1)
    unscale = g.cast(
        g.scalar(1.0 / static_cast<double>(in.microbatches), grads.front()),
        f32);
  if (in.lossScale)
    unscale = unscale ? g.div(unscale, in.lossScale)
                      : g.div(g.scalar(1.0, in.lossScale), in.lossScale);
  auto unscaled = [&](Value v) { return unscale ? g.mul(v, unscale) : v; };
  Value scale = unscale ? unscale : g.cast(g.scalar(1.0, grads.front()), f32);
  Value total;
  if (in.clipGradNorm > 0 || in.lossScale) {
    for (auto [i, d] : llvm::enumerate(grads)) {
      Value sq = g.cast(
          g.make<onnx::ReduceSumSquareOp>(d, Value(), int64_t(0), int64_t(0)),
          f32);
      if (i < in.normWeights.size() && in.normWeights[i] != 1.0)
        sq = g.mul(sq, g.scalar(in.normWeights[i], sq));
      total = total ? g.add(total, sq) : sq;
    }
    // A pipeline stage without parameters adds nothing.
    if (!total)
      total = g.cast(g.scalar(0.0, in.lossScale ? in.lossScale : unscale), f32);
    if (!in.normGroup.empty())
      total = dist::AllReduceOp::create(
          g.builder(),
          NameLoc::get(g.builder().getStringAttr("the step's gradient norm"),
                       total.getLoc()),
          total.getType(), total,
          FlatSymbolRefAttr::get(g.builder().getContext(), "mesh"),
          g.builder().getDenseI64ArrayAttr(in.normGroup),
          dist::ReductionKindAttr::get(g.builder().getContext(),
                                       dist::ReductionKind::Sum));
  }
  if (in.clipGradNorm > 0) {
    Value norm = unscaled(g.make<onnx::SqrtOp>(total));
    // One op per statement: the IR must not depend on the C++ compiler's
    // argument evaluation order.
    Value maxNorm = g.scalar(in.clipGradNorm, norm);
    Value coef = g.div(maxNorm, g.add(norm, g.scalar(1e-6, norm)));
    scale = unscaled(minOf(g, coef, unscale ? g.scalar(1.0, coef) : scale));
  }
  finite = Value();
  if (in.lossScale) {
    Operation *isNaN =
        g.create<onnx::IsNaNOp>(1, g.builder().getI1Type(), total);
    Operation *isInf = g.create<onnx::IsInfOp>(1, g.builder().getI1Type(),
                                               total, int64_t(1), int64_t(1));
    Value nan = boolOp(g, isNaN);
    Value inf = boolOp(g, isInf);
    finite = g.make<onnx::NotOp>(compare<onnx::OrOp>(g, nan, inf));
    scale = where(g, finite, scale, skip(g, scale));
  }
  if (in.apply)
    scale = where(g, in.apply, scale, skip(g, scale));
  return scale;
}

std::pair<Value, Value> train::nextLossScale(GradientBuilder &g, Value scale,
                                             Value goodSteps, Value finite,
                                             Value apply) {
  Value grown = g.add(goodSteps, g.scalar(1.0, goodSteps));
  Value full = equals(g, grown, kLossScaleGrowthInterval);
  Value zero = g.scalar(0.0, goodSteps);
  Value okScale = where(g, full, g.mul(scale, g.scalar(2.0, scale)), scale);
  Value okGood = where(g, full, zero, grown);
  Value nextScale =
      where(g, finite, okScale, g.mul(scale, g.scalar(0.5, scale)));
  Value nextGood = where(g, finite, okGood, zero);
  if (apply) {
    nextScale = where(g, apply, nextScale, scale);
    nextGood = where(g, apply, nextGood, goodSteps);
  }
  return {nextScale, nextGood};
}
