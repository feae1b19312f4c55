//===- GradientRules.cpp - reverse-mode rules of the onnx ops -------------===//
//
// One `gradient` overload per op: given dY (one per result, null where the
// loss does not depend on it), append dX (one per operand, null where no
// gradient is needed). Attached as GradientOpInterface external models, so an
// op of another dialect joins training by implementing the interface itself.
//
// Formulas: the standard vector-Jacobian products (as in PyTorch's
// tools/autograd/derivatives.yaml and ONNX Runtime's gradient builders).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::onnx;

using Grads = SmallVectorImpl<Value>;

namespace {
int64_t rankOf(Value v) { return GradientBuilder::shapeOf(v).size(); }

int64_t normAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// The int64 values of a constant operand, or failure.
FailureOr<SmallVector<int64_t>> constInts(Value v) {
  DenseIntElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return failure();
  SmallVector<int64_t> out;
  for (const APInt &i : attr.getValues<APInt>())
    out.push_back(i.getSExtValue());
  return out;
}

/// dX for an operand when it needs one, else null.
Value when(GradientBuilder &g, unsigned i, llvm::function_ref<Value()> fn) {
  return g.needsGradient(i) ? fn() : Value();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult gradient(AddOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(
      when(g, 0, [&] { return g.sumToShape(dY[0], op.getA().getType()); }));
  dX.push_back(
      when(g, 1, [&] { return g.sumToShape(dY[0], op.getB().getType()); }));
  return success();
}

LogicalResult gradient(SubOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(
      when(g, 0, [&] { return g.sumToShape(dY[0], op.getA().getType()); }));
  dX.push_back(when(
      g, 1, [&] { return g.sumToShape(g.neg(dY[0]), op.getB().getType()); }));
  return success();
}

LogicalResult gradient(MulOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value a = op.getA(), b = op.getB();
  dX.push_back(
      when(g, 0, [&] { return g.sumToShape(g.mul(dY[0], b), a.getType()); }));
  dX.push_back(
      when(g, 1, [&] { return g.sumToShape(g.mul(dY[0], a), b.getType()); }));
  return success();
}

LogicalResult gradient(DivOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value a = op.getA(), b = op.getB(), y = op.getResult();
  dX.push_back(
      when(g, 0, [&] { return g.sumToShape(g.div(dY[0], b), a.getType()); }));
  // d(a/b)/db = -a/b^2 = -y/b.
  dX.push_back(when(g, 1, [&] {
    return g.sumToShape(g.neg(g.div(g.mul(dY[0], y), b)), b.getType());
  }));
  return success();
}

LogicalResult gradient(NegOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.neg(dY[0]));
  return success();
}

LogicalResult gradient(ExpOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.mul(dY[0], op.getResult()));
  return success();
}

LogicalResult gradient(LogOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.div(dY[0], op.getOperand()));
  return success();
}

LogicalResult gradient(SqrtOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value y = op.getResult();
  dX.push_back(g.div(g.mul(dY[0], g.scalar(0.5, y)), y));
  return success();
}

LogicalResult gradient(ReciprocalOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value y = op.getResult();
  dX.push_back(g.neg(g.mul(dY[0], g.mul(y, y))));
  return success();
}

LogicalResult gradient(TanhOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value y = op.getResult();
  Value one = g.scalar(1.0, y);
  dX.push_back(g.mul(dY[0], g.sub(one, g.mul(y, y))));
  return success();
}

LogicalResult gradient(SigmoidOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value y = op.getResult();
  dX.push_back(g.mul(dY[0], g.mul(y, g.sub(g.scalar(1.0, y), y))));
  return success();
}

/// Where(x > 0, dY, dY * negSlope).
Value reluLike(GradientBuilder &g, Value x, Value dy, double negSlope) {
  Operation *gt =
      g.create<GreaterOp>(1, g.builder().getI1Type(), x, g.scalar(0.0, x));
  if (!gt)
    return {};
  Value other =
      negSlope == 0.0 ? g.scalar(0.0, dy) : g.mul(dy, g.scalar(negSlope, dy));
  return g.make<WhereOp>(gt->getResult(0), dy, other);
}

LogicalResult gradient(ReluOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(reluLike(g, op.getOperand(), dY[0], 0.0));
  return success();
}

LogicalResult gradient(LeakyReluOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(reluLike(g, op.getOperand(), dY[0], op.getAlpha()));
  return success();
}

LogicalResult gradient(ErfOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // d erf(x)/dx = 2/sqrt(pi) * exp(-x^2).
  Value x = op.getOperand();
  Value e = g.make<ExpOp>(g.neg(g.mul(x, x)));
  dX.push_back(g.mul(dY[0], g.mul(e, g.scalar(2.0 / std::sqrt(M_PI), x))));
  return success();
}

LogicalResult gradient(GeluOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value x = op.getOperand();
  auto c = [&](double v) { return g.scalar(v, x); };
  Value d;
  if (op.getApproximate() == "tanh") {
    // y = 0.5 x (1 + t), t = tanh(k (x + a x^3)), k = sqrt(2 / pi),
    // a = 0.044715 (ONNX's Gelu-20):
    // dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 a x^2),
    // on x clipped to [-10, 10]: beyond, t is +-1 in float32 (tanh of 43.6)
    // and dy/dx is 0 or 1 within 1e-30, while x^2 overflows float16 from
    // |x| = 256 (inf times 1 - t^2 = 0 was NaN).
    const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value xc = g.make<ClipOp>(x, c(-10.0), c(10.0));
    Value x2 = g.mul(xc, xc);
    Value t =
        g.make<TanhOp>(g.mul(c(k), g.add(xc, g.mul(c(a), g.mul(x2, xc)))));
    Value slope = g.mul(c(k), g.add(c(1.0), g.mul(c(3 * a), x2)));
    Value sech2 = g.sub(c(1.0), g.mul(t, t));
    d = g.add(g.mul(c(0.5), g.add(c(1.0), t)),
              g.mul(g.mul(c(0.5), xc), g.mul(sech2, slope)));
  } else {
    // y = x Phi(x): dy/dx = Phi(x) + x phi(x), with the normal distribution's
    // Phi(x) = 0.5 (1 + erf(x / sqrt(2))), phi(x) = exp(-x^2 / 2) / sqrt(2 pi).
    Value cdf =
        g.mul(c(0.5), g.add(c(1.0), g.make<ErfOp>(g.mul(x, c(M_SQRT1_2)))));
    Value pdf = g.mul(g.make<ExpOp>(g.mul(g.mul(x, x), c(-0.5))),
                      c(1.0 / std::sqrt(2.0 * M_PI)));
    d = g.add(cdf, g.mul(x, pdf));
  }
  dX.push_back(g.mul(dY[0], d));
  return success();
}

LogicalResult gradient(MishOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // y = x tanh(softplus(x)): dy/dx = t + x (1 - t^2) sigmoid(x), with
  // t = tanh(softplus(x)), since softplus' = sigmoid.
  Value x = op.getOperand();
  Value t = g.make<TanhOp>(g.make<SoftplusOp>(x));
  Value sech2 = g.sub(g.scalar(1.0, x), g.mul(t, t));
  Value d = g.add(t, g.mul(g.mul(x, g.make<SigmoidOp>(x)), sech2));
  dX.push_back(g.mul(dY[0], d));
  return success();
}

LogicalResult gradient(SinOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.mul(dY[0], g.make<CosOp>(op.getOperand())));
  return success();
}

LogicalResult gradient(CosOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.neg(g.mul(dY[0], g.make<SinOp>(op.getOperand()))));
  return success();
}

LogicalResult gradient(AbsOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.mul(dY[0], g.make<SignOp>(op.getOperand())));
  return success();
}

LogicalResult gradient(PowOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value x = op.getX(), e = op.getY(), y = op.getResult();
  // d x^e / dx = e * x^(e-1).
  dX.push_back(when(g, 0, [&] {
    Value ex = g.cast(e, GradientBuilder::elementType(x));
    Value em1 = g.sub(ex, g.scalar(1.0, x));
    Value d = g.mul(ex, g.make<PowOp>(x, em1));
    return g.sumToShape(g.mul(dY[0], d), x.getType());
  }));
  // d x^e / de = x^e * ln(x).
  dX.push_back(when(g, 1, [&] {
    Value d = g.mul(y, g.make<LogOp>(x));
    return g.sumToShape(g.mul(dY[0], d), e.getType());
  }));
  return success();
}

LogicalResult gradient(WhereOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value c = op.getCondition(), zero = g.scalar(0.0, dY[0]);
  dX.push_back(Value());
  dX.push_back(when(g, 1, [&] {
    return g.sumToShape(g.make<WhereOp>(c, dY[0], zero), op.getX().getType());
  }));
  dX.push_back(when(g, 2, [&] {
    return g.sumToShape(g.make<WhereOp>(c, zero, dY[0]), op.getY().getType());
  }));
  return success();
}

LogicalResult gradient(CastOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.cast(dY[0], GradientBuilder::elementType(op.getInput())));
  return success();
}

LogicalResult gradient(IdentityOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(dY[0]);
  return success();
}

/// Dropout: the identity at inference; in training mode
/// dX = dY * mask / (1 - ratio) with the op's saved mask (hetpar-train-dropout
/// gives every training Dropout its mask result).
LogicalResult gradient(DropoutOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value dy = dY[0];
  std::optional<SmallVector<int64_t>> training;
  if (Value t = op.getTrainingMode())
    training = getConstantIntValues(t);
  if (op.getTrainingMode() && !training)
    return op.emitError("gradient of Dropout needs a constant training_mode");
  bool on = training && llvm::any_of(*training, [](int64_t v) { return v; });
  Value dx = dy;
  if (on) {
    Value mask = op.getMask();
    if (!mask)
      return op.emitError("gradient of Dropout in training mode needs its mask "
                          "result (run hetpar-train-dropout first)");
    Type elt = GradientBuilder::elementType(dy);
    Value ratio = op.getRatio() ? g.cast(op.getRatio(), elt)
                                : g.scalar(0.5, dy); // ONNX's default
    Value keep = g.sub(g.scalar(1.0, ratio), ratio);
    dx = g.div(g.mul(dy, g.cast(mask, elt)), keep);
  }
  dX.push_back(dx);
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    dX.push_back(Value());
  return success();
}

/// A bool tensor from a comparison op of x and y (broadcasting).
template <typename CmpOp> Value compare(GradientBuilder &g, Value x, Value y) {
  Operation *op = g.create<CmpOp>(1, g.builder().getI1Type(), x, y);
  return op ? op->getResult(0) : Value();
}

LogicalResult gradient(ClipOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // The gradient passes where min <= x <= max (torch.clamp's rule).
  Value x = op.getInput(), pass;
  if (Value lo = op.getMin())
    pass = compare<GreaterOrEqualOp>(g, x, lo);
  if (Value hi = op.getMax()) {
    Value le = compare<LessOrEqualOp>(g, x, hi);
    pass = pass ? compare<AndOp>(g, pass, le) : le;
  }
  Value zero = g.scalar(0.0, dY[0]);
  dX.push_back(pass ? g.make<WhereOp>(pass, dY[0], zero) : dY[0]);
  // A bound gets the gradient where it clipped x.
  auto bound = [&](unsigned i, Value b, bool isMin) -> Value {
    if (!g.needsGradient(i))
      return Value();
    Value clipped =
        isMin ? compare<LessOp>(g, x, b) : compare<GreaterOp>(g, x, b);
    return g.sumToShape(g.make<WhereOp>(clipped, dY[0], zero), b.getType());
  };
  unsigned i = 1;
  if (Value lo = op.getMin())
    dX.push_back(bound(i++, lo, true));
  if (Value hi = op.getMax())
    dX.push_back(bound(i++, hi, false));
  return success();
}

/// Max / Min: the gradient goes to the operands equal to the result.
LogicalResult extremumGradient(Operation *op, GradientBuilder &g,
                               ArrayRef<Value> dY, Grads &dX) {
  Value y = op->getResult(0), zero = g.scalar(0.0, dY[0]);
  for (auto [i, x] : llvm::enumerate(op->getOperands()))
    dX.push_back(when(g, i, [&] {
      Value hit = compare<EqualOp>(g, x, y);
      return g.sumToShape(g.make<WhereOp>(hit, dY[0], zero), x.getType());
    }));
  return success();
}
LogicalResult gradient(MaxOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return extremumGradient(op, g, dY, dX);
}
LogicalResult gradient(MinOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return extremumGradient(op, g, dY, dX);
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

/// Ops whose result is the operand with another shape (Reshape, Flatten,
/// Squeeze, Unsqueeze): the gradient takes the operand's shape back. Only
/// operand 0 carries data.
LogicalResult reshapeBack(Operation *op, GradientBuilder &g, ArrayRef<Value> dY,
                          Grads &dX) {
  Value x = op->getOperand(0);
  dX.push_back(g.reshape(dY[0], GradientBuilder::shapeOf(x)));
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    dX.push_back(Value());
  return success();
}
LogicalResult gradient(ReshapeOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return reshapeBack(op, g, dY, dX);
}
LogicalResult gradient(FlattenOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return reshapeBack(op, g, dY, dX);
}
LogicalResult gradient(SqueezeOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return reshapeBack(op, g, dY, dX);
}
LogicalResult gradient(UnsqueezeOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return reshapeBack(op, g, dY, dX);
}

LogicalResult gradient(TransposeOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  SmallVector<int64_t> perm = op.getPermutation(rankOf(op.getData()));
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  dX.push_back(g.transpose(dY[0], inverse));
  return success();
}

LogicalResult gradient(ExpandOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  dX.push_back(g.sumToShape(dY[0], op.getInput().getType()));
  dX.push_back(Value());
  return success();
}

LogicalResult gradient(ConcatOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  int64_t axis = normAxis(op.getAxis(), rankOf(op.getResult()));
  SmallVector<int64_t> sizes;
  for (Value in : op.getInputs())
    sizes.push_back(GradientBuilder::shapeOf(in)[axis]);
  Operation *split =
      g.create<SplitOp>(sizes.size(), GradientBuilder::elementType(dY[0]),
                        dY[0], g.i64s(sizes), axis, IntegerAttr());
  if (!split)
    return failure();
  for (unsigned i = 0; i < sizes.size(); ++i)
    dX.push_back(g.needsGradient(i) ? split->getResult(i) : Value());
  return success();
}

LogicalResult gradient(SplitOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  SmallVector<Value> parts;
  for (auto [r, d] : llvm::zip(op->getResults(), dY))
    parts.push_back(d ? d : g.zeros(r.getType()));
  int64_t axis = normAxis(op.getAxis(), rankOf(op.getInput()));
  Operation *concat = g.create<ConcatOp>(
      1, GradientBuilder::elementType(parts.front()), ValueRange(parts), axis);
  if (!concat)
    return failure();
  dX.push_back(concat->getResult(0));
  if (op.getSplit())
    dX.push_back(Value());
  return success();
}

/// The indices ONNX's Slice takes along one axis of extent n.
SmallVector<int64_t> sliceIndices(int64_t start, int64_t end, int64_t step,
                                  int64_t n) {
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) {
    return std::max(lo, std::min(v, hi));
  };
  if (start < 0)
    start += n;
  if (end < 0)
    end += n;
  start = step > 0 ? clamp(start, 0, n) : clamp(start, 0, n - 1);
  end = step > 0 ? clamp(end, 0, n) : clamp(end, -1, n - 1);
  SmallVector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step)
    out.push_back(i);
  return out;
}

LogicalResult gradient(SliceOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // Axis by axis, dY is scattered back to the data's extent (GatherGrad
  // with the sliced indices; zeros elsewhere).
  ArrayRef<int64_t> in = GradientBuilder::shapeOf(op.getData());
  int64_t rank = in.size();
  auto starts = constInts(op.getStarts()), ends = constInts(op.getEnds());
  auto none = FailureOr<SmallVector<int64_t>>(SmallVector<int64_t>());
  auto axes = op.getAxes() ? constInts(op.getAxes()) : none;
  auto steps = op.getSteps() ? constInts(op.getSteps()) : none;
  if (failed(starts) || failed(ends) || failed(axes) || failed(steps))
    return op.emitError("gradient of Slice needs constant starts, ends, axes "
                        "and steps");
  Value d = dY[0];
  SmallVector<int64_t> shape(GradientBuilder::shapeOf(d));
  for (size_t k = 0; k < starts->size(); ++k) {
    int64_t axis = normAxis(axes->empty() ? k : (*axes)[k], rank);
    int64_t step = steps->empty() ? 1 : (*steps)[k];
    SmallVector<int64_t> idx =
        sliceIndices((*starts)[k], (*ends)[k], step, in[axis]);
    if (static_cast<int64_t>(idx.size()) == in[axis] && step == 1)
      continue; // the whole axis
    shape[axis] = in[axis];
    d = g.make<GatherGradOp>(d, g.i64s(idx), ArrayRef<int64_t>(shape), axis);
  }
  dX.push_back(d);
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    dX.push_back(Value());
  return success();
}

LogicalResult gradient(PadOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // Constant padding by p is undone by padding by -p (negative pads crop).
  auto pads = constInts(op.getPads());
  if (op.getMode() != "constant" || failed(pads) || op.getAxes())
    return op.emitError("gradient of Pad needs mode \"constant\", constant "
                        "pads and no axes");
  SmallVector<int64_t> neg;
  for (int64_t p : *pads)
    neg.push_back(-p);
  Value d = g.make<PadOp>(dY[0], g.i64s(neg), Value(), Value(),
                          g.builder().getStringAttr("constant"));
  dX.push_back(d);
  dX.push_back(Value());
  // The constant value gets the gradient of every padded position:
  // sum(dY) - sum(dX).
  if (Value v = op.getConstantValue())
    dX.push_back(when(g, 2, [&] {
      auto all = [&](Value t) {
        return g.make<ReduceSumOp>(t, Value(), int64_t(0), int64_t(0));
      };
      return g.reshape(g.sub(all(dY[0]), all(d)), GradientBuilder::shapeOf(v));
    }));
  return success();
}

LogicalResult gradient(TileOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // dY viewed as [r0, s0, r1, s1, ...] summed over the repeat axes.
  ArrayRef<int64_t> in = GradientBuilder::shapeOf(op.getInput());
  SmallVector<int64_t> split, axes;
  ArrayRef<int64_t> out = GradientBuilder::shapeOf(dY[0]);
  for (size_t d = 0; d < in.size(); ++d) {
    split.push_back(in[d] ? out[d] / in[d] : 0);
    split.push_back(in[d]);
    axes.push_back(2 * d);
  }
  Value r = g.reshape(dY[0], split);
  dX.push_back(g.reshape(g.reduceSum(r, axes, /*keepDims=*/false), in));
  dX.push_back(Value());
  return success();
}

LogicalResult gradient(CumSumOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // The adjoint of a running sum runs the other way.
  dX.push_back(g.make<CumSumOp>(dY[0], op.getAxis(), op.getExclusive(),
                                int64_t(op.getReverse() ? 0 : 1)));
  dX.push_back(Value());
  return success();
}

LogicalResult gradient(GatherOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  ArrayRef<int64_t> shape = GradientBuilder::shapeOf(op.getData());
  dX.push_back(
      g.make<GatherGradOp>(dY[0], op.getIndices(), shape, op.getAxis()));
  dX.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Swaps the last two axes.
Value swapLast(GradientBuilder &g, Value x) {
  int64_t r = rankOf(x);
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 2], perm[r - 1]);
  return g.transpose(x, perm);
}

LogicalResult gradient(MatMulOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value a = op.getA(), b = op.getB();
  ArrayRef<int64_t> as = GradientBuilder::shapeOf(a),
                    bs = GradientBuilder::shapeOf(b);
  // A matrix B (a weight) times a batch of matrices A [..., M, K]: as one
  // [rows, K] x [K, N] product with rows = every leading axis times M (the
  // reshapes are views), so that dB = A^T dY is one Gemm over all rows, not
  // a product per batch entry summed afterwards (which held the batch's
  // [K, N] products at once: 4 x 154 MB for GPT-2 small's LM head at batch
  // 4), and neither gradient transposes an operand into a copy (Gemm's
  // transA/transB).
  if (bs.size() == 2 && as.size() >= 2) {
    int64_t rows = 1;
    for (int64_t d : as.drop_back())
      rows *= d;
    Value a2 = g.reshape(a, {rows, as.back()});
    Value dy = g.reshape(dY[0], {rows, bs[1]});
    auto gemm = [&](Value x, Value y, bool tx, bool ty) {
      return g.make<GemmOp>(x, y, Value(), 1.0f, 1.0f, int64_t(tx ? 1 : 0),
                            int64_t(ty ? 1 : 0));
    };
    dX.push_back(
        when(g, 0, [&] { return g.reshape(gemm(dy, b, false, true), as); }));
    dX.push_back(when(g, 1, [&] { return gemm(a2, dy, true, false); }));
    return success();
  }
  // 1-D operands become matrices: [k] -> [1, k] for A, [k] -> [k, 1] for B.
  Value a2 = as.size() == 1 ? g.reshape(a, {1, as[0]}) : a;
  Value b2 = bs.size() == 1 ? g.reshape(b, {bs[0], 1}) : b;
  SmallVector<int64_t> ys(GradientBuilder::shapeOf(dY[0]));
  if (as.size() == 1)
    ys.insert(ys.end() - (bs.size() == 1 ? 0 : 1), 1);
  if (bs.size() == 1)
    ys.push_back(1);
  Value dy = g.reshape(dY[0], ys);
  dX.push_back(when(g, 0, [&] {
    Value d = g.make<MatMulOp>(dy, swapLast(g, b2));
    return g.reshape(g.sumToShape(d, a2.getType()), as);
  }));
  dX.push_back(when(g, 1, [&] {
    Value d = g.make<MatMulOp>(swapLast(g, a2), dy);
    return g.reshape(g.sumToShape(d, b2.getType()), bs);
  }));
  return success();
}

LogicalResult gradient(EinsumOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // d/dX_i of einsum("t0,t1,...->out") is einsum("out,others->t_i") when
  // every letter of t_i appears in the output or another term.
  std::string eq;
  for (char c : op.getEquation())
    if (c != ' ')
      eq.push_back(c);
  size_t arrow = eq.find("->");
  if (arrow == std::string::npos || eq.find("...") != std::string::npos)
    return op.emitError("gradient of Einsum needs an explicit output and no "
                        "'...'");
  SmallVector<StringRef> terms;
  StringRef(eq).take_front(arrow).split(terms, ',');
  std::string out = eq.substr(arrow + 2);
  for (auto [i, term] : llvm::enumerate(terms)) {
    if (!g.needsGradient(i)) {
      dX.push_back(Value());
      continue;
    }
    std::string others = out, all = out;
    SmallVector<Value> operands{dY[0]};
    for (auto [j, t] : llvm::enumerate(terms))
      if (j != i) {
        others += "," + t.str();
        all += t.str();
        operands.push_back(op.getInputs()[j]);
      }
    for (char c : term)
      if (all.find(c) == std::string::npos || llvm::count(term, c) > 1)
        return op.emitError("gradient of Einsum: letter '")
               << c << "' of operand " << i
               << " is summed within it or repeated";
    Operation *d = g.create<EinsumOp>(
        1, GradientBuilder::elementType(dY[0]), ValueRange(operands),
        g.builder().getStringAttr(others + "->" + term.str()));
    if (!d)
      return failure();
    dX.push_back(d->getResult(0));
  }
  return success();
}

LogicalResult gradient(GemmOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Value a = op.getA(), b = op.getB(), dy = dY[0];
  bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
  float alpha = op.getAlpha();
  auto gemm = [&](Value x, Value y, bool tx, bool ty) {
    return g.make<GemmOp>(x, y, Value(), alpha, 1.0f, int64_t(tx ? 1 : 0),
                          int64_t(ty ? 1 : 0));
  };
  // op(A) = A' [M,K], op(B) = B' [K,N]: dA' = alpha dY B'^T, dB' = alpha A'^T
  // dY.
  dX.push_back(when(g, 0, [&] {
    return ta ? gemm(b, dy, tb, true) : gemm(dy, b, false, !tb);
  }));
  dX.push_back(when(g, 1, [&] {
    return tb ? gemm(dy, a, true, ta) : gemm(a, dy, !ta, false);
  }));
  if (Value c = op.getC()) {
    dX.push_back(when(g, 2, [&] {
      Value d = g.sumToShape(dy, c.getType());
      double beta = op.getBeta();
      return beta == 1.0 ? d : g.mul(d, g.scalar(beta, d));
    }));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

/// The reduced axes of a Reduce op (all when absent), normalized.
FailureOr<SmallVector<int64_t>> reducedAxes(Operation *op, Value data,
                                            Value axesOperand) {
  int64_t rank = rankOf(data);
  SmallVector<int64_t> axes;
  if (axesOperand) {
    auto c = constInts(axesOperand);
    if (failed(c))
      return op->emitError("gradient of a reduction needs constant axes");
    for (int64_t a : *c)
      axes.push_back(normAxis(a, rank));
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  return axes;
}

/// dY of a reduction broadcast back to the data's shape.
Value unreduce(GradientBuilder &g, Value dy, Value data,
               ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(GradientBuilder::shapeOf(data));
  for (int64_t a : axes)
    kept[a] = 1;
  return g.expand(g.reshape(dy, kept), GradientBuilder::shapeOf(data));
}

template <typename ReduceOp>
LogicalResult reduceGradient(ReduceOp op, GradientBuilder &g,
                             ArrayRef<Value> dY, Grads &dX, bool mean) {
  if (op.getNoopWithEmptyAxes() && !op.getAxes()) {
    dX.push_back(dY[0]);
    return success();
  }
  auto axes = reducedAxes(op, op.getData(), op.getAxes());
  if (failed(axes))
    return failure();
  Value d = unreduce(g, dY[0], op.getData(), *axes);
  if (mean) {
    int64_t n = 1;
    for (int64_t a : *axes)
      n *= GradientBuilder::shapeOf(op.getData())[a];
    d = g.div(d, g.scalar(static_cast<double>(n), d));
  }
  dX.push_back(d);
  if (op.getAxes())
    dX.push_back(Value());
  return success();
}

LogicalResult gradient(ReduceSumOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return reduceGradient(op, g, dY, dX, /*mean=*/false);
}
LogicalResult gradient(ReduceMeanOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  return reduceGradient(op, g, dY, dX, /*mean=*/true);
}

LogicalResult gradient(ReduceMaxOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // The gradient goes to the maxima (the references have no ties).
  auto axes = reducedAxes(op, op.getData(), op.getAxes());
  if (failed(axes))
    return failure();
  Value y = unreduce(g, op.getResult(), op.getData(), *axes);
  Value d = unreduce(g, dY[0], op.getData(), *axes);
  Value hit = compare<EqualOp>(g, op.getData(), y);
  dX.push_back(g.make<WhereOp>(hit, d, g.scalar(0.0, d)));
  if (op.getAxes())
    dX.push_back(Value());
  return success();
}

LogicalResult gradient(SoftmaxOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // dX = Y * (dY - sum(dY * Y, axis)): the fused SoftmaxGrad.
  Value d = g.make<SoftmaxGradOp>(dY[0], op.getResult(), op.getAxisAttr());
  if (!d)
    return failure();
  dX.push_back(d);
  return success();
}

LogicalResult gradient(LogSoftmaxOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  // dX = dY - exp(Y) * sum(dY, axis): the fused LogSoftmaxGrad.
  Value d = g.make<LogSoftmaxGradOp>(dY[0], op.getResult(), op.getAxisAttr());
  if (!d)
    return failure();
  dX.push_back(d);
  return success();
}

/// The fused LayerNormalizationGrad (statistics recomputed from X; its
/// description has the formulas). Scale is expanded to the normalized shape
/// for it, and dScale and dB are summed back to the shapes of Scale and B
/// where those broadcast.
LogicalResult gradient(LayerNormalizationOp op, GradientBuilder &g,
                       ArrayRef<Value> dY, Grads &dX) {
  if (llvm::any_of(dY.drop_front(), [](Value v) { return bool(v); }))
    return op.emitError("gradient through LayerNormalization's Mean and "
                        "InvStdDev results is not supported");
  Value x = op.getX(), scale = op.getScale();
  int64_t axis = normAxis(op.getAxis(), rankOf(x));
  ArrayRef<int64_t> normalized = GradientBuilder::shapeOf(x).drop_front(axis);
  Operation *grad = g.create<LayerNormalizationGradOp>(
      3, GradientBuilder::elementType(x), dY[0], x, g.expand(scale, normalized),
      op.getAxisAttr(), op.getEpsilonAttr());
  if (!grad)
    return failure();
  dX.push_back(when(g, 0, [&] { return grad->getResult(0); }));
  dX.push_back(when(
      g, 1, [&] { return g.sumToShape(grad->getResult(1), scale.getType()); }));
  if (Value bias = op.getB())
    dX.push_back(when(g, 2, [&] {
      return g.sumToShape(grad->getResult(2), bias.getType());
    }));
  return success();
}

/// The gradient of a normalization per channel (axis 1) of X [N, C, ...]:
/// y = scale * xhat + B, xhat = (x - mean) * inv, inv = 1/sqrt(var + eps),
/// where mean and var are X's statistics over `statAxes` (M elements each),
/// recomputed from X. With sums over `statAxes`:
///   dX = scale * inv * (dY - sum(dY) / M - xhat * sum(dY * xhat) / M),
/// and dscale = sum(dY * xhat), dB = sum(dY) over every axis but 1 ([C]).
/// Pushes dX, dscale and dB (null where not needed).
LogicalResult channelNormGradient(GradientBuilder &g, Value x, Value scale,
                                  double epsilon, Value dy,
                                  ArrayRef<int64_t> statAxes, Grads &dX) {
  ArrayRef<int64_t> xs = GradientBuilder::shapeOf(x);
  int64_t rank = rankOf(x), c = xs[1], m = 1;
  SmallVector<int64_t> bshape(rank, 1);
  bshape[1] = c;
  for (int64_t a : statAxes)
    m *= xs[a];
  auto mean = [&](Value v) {
    return g.make<ReduceMeanOp>(v, g.i64s(statAxes), int64_t(1), int64_t(0));
  };
  Value xc = g.sub(x, mean(x));
  Value var = mean(g.mul(xc, xc));
  Value inv =
      g.make<ReciprocalOp>(g.make<SqrtOp>(g.add(var, g.scalar(epsilon, var))));
  Value xhat = g.mul(xc, inv);
  Value sumDy = g.reduceSum(dy, statAxes, /*keepDims=*/true);
  Value sumDyXhat = g.reduceSum(g.mul(dy, xhat), statAxes, /*keepDims=*/true);
  // Per channel: the sums over the batch too, where the statistics are not.
  auto perChannel = [&](Value sum) {
    if (!llvm::is_contained(statAxes, 0))
      sum = g.reduceSum(sum, {0}, /*keepDims=*/true);
    return g.reshape(sum, {c});
  };
  dX.push_back(when(g, 0, [&] {
    Value mv = g.scalar(static_cast<double>(m), sumDy);
    Value dyCentered = g.sub(dy, g.div(sumDy, mv));
    Value centered = g.sub(dyCentered, g.mul(xhat, g.div(sumDyXhat, mv)));
    return g.mul(g.mul(g.reshape(scale, bshape), inv), centered);
  }));
  dX.push_back(when(g, 1, [&] { return perChannel(sumDyXhat); }));
  dX.push_back(when(g, 2, [&] { return perChannel(sumDy); }));
  return success();
}

/// Training-mode BatchNormalization: the statistics of each channel over
/// the batch and the spatial axes (axes 0, 2, ...). input_mean and input_var
/// do not reach Y.
LogicalResult batchNormTrainingGradient(BatchNormalizationOp op,
                                        GradientBuilder &g, Value dy,
                                        Grads &dX) {
  SmallVector<int64_t> axes{0};
  for (int64_t i = 2; i < rankOf(op.getX()); ++i)
    axes.push_back(i);
  if (failed(channelNormGradient(g, op.getX(), op.getScale(), op.getEpsilon(),
                                 dy, axes, dX)))
    return failure();
  dX.push_back(Value());
  dX.push_back(Value());
  return success();
}

/// InstanceNormalization: the statistics of each instance and channel over
/// the spatial axes (2, ...); GroupNormalization imports as one over groups.
LogicalResult gradient(InstanceNormalizationOp op, GradientBuilder &g,
                       ArrayRef<Value> dY, Grads &dX) {
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < rankOf(op.getInput()); ++i)
    axes.push_back(i);
  return channelNormGradient(g, op.getInput(), op.getScale(), op.getEpsilon(),
                             dY[0], axes, dX);
}

LogicalResult gradient(BatchNormalizationOp op, GradientBuilder &g,
                       ArrayRef<Value> dY, Grads &dX) {
  if (llvm::any_of(dY.drop_front(), [](Value v) { return bool(v); }))
    return op.emitError("gradient through BatchNormalization's running "
                        "statistics is not supported");
  if (op.getTrainingMode() != 0)
    return batchNormTrainingGradient(op, g, dY[0], dX);
  // y = scale * (x - mean) * inv + B, inv = 1/sqrt(var + eps), per channel
  // (axis 1); the statistics are operands like the others.
  Value x = op.getX(), scale = op.getScale(), mean = op.getInputMean(),
        var = op.getInputVar(), dy = dY[0];
  int64_t rank = rankOf(x), c = GradientBuilder::shapeOf(x)[1];
  SmallVector<int64_t> bshape(rank, 1), axes{0};
  bshape[1] = c;
  for (int64_t i = 2; i < rank; ++i)
    axes.push_back(i);
  Value inv = g.make<ReciprocalOp>(
      g.make<SqrtOp>(g.add(var, g.scalar(op.getEpsilon(), var))));
  Value scaleInv = g.mul(scale, inv); // [C]
  Value xc = g.sub(x, g.reshape(mean, bshape));
  Value sumDy = (g.needsGradient(2) || g.needsGradient(3))
                    ? g.reduceSum(dy, axes, /*keepDims=*/false)
                    : Value();
  dX.push_back(
      when(g, 0, [&] { return g.mul(dy, g.reshape(scaleInv, bshape)); }));
  dX.push_back(when(g, 1, [&] {
    return g.mul(g.reduceSum(g.mul(dy, xc), axes, false), inv);
  }));
  dX.push_back(when(g, 2, [&] { return sumDy; }));
  dX.push_back(when(g, 3, [&] { return g.neg(g.mul(sumDy, scaleInv)); }));
  // d inv / d var = -inv^3 / 2.
  dX.push_back(when(g, 4, [&] {
    Value s = g.reduceSum(g.mul(dy, xc), axes, false);
    Value inv3 = g.mul(inv, g.mul(inv, inv));
    Value sScaled = g.mul(s, scale);
    return g.mul(sScaled, g.mul(inv3, g.scalar(-0.5, inv3)));
  }));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult gradient(ConvOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  Operation *grad = g.create<ConvGradOp>(
      3, GradientBuilder::elementType(dY[0]), dY[0], op.getX(), op.getW(),
      op.getAutoPadAttr(), op.getDilationsAttr(), op.getGroupAttr(),
      op.getKernelShapeAttr(), op.getPadsAttr(), op.getStridesAttr());
  if (!grad)
    return failure();
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    dX.push_back(g.needsGradient(i) ? grad->getResult(i) : Value());
  return success();
}

LogicalResult gradient(MaxPoolOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  if (dY.size() > 1 && dY[1])
    return op.emitError("gradient through MaxPool's Indices result is not "
                        "supported");
  if (!dY[0]) {
    dX.push_back(Value());
    return success();
  }
  dX.push_back(g.make<MaxPoolGradOp>(
      dY[0], op.getX(), op.getAutoPadAttr(), op.getCeilModeAttr(),
      op.getDilationsAttr(), op.getKernelShapeAttr(), op.getPadsAttr(),
      op.getStridesAttr()));
  return success();
}

LogicalResult gradient(AveragePoolOp op, GradientBuilder &g, ArrayRef<Value> dY,
                       Grads &dX) {
  ArrayRef<int64_t> xs = GradientBuilder::shapeOf(op.getX());
  dX.push_back(g.make<AveragePoolGradOp>(
      dY[0], g.builder().getDenseI64ArrayAttr(xs), op.getAutoPadAttr(),
      op.getCeilModeAttr(), op.getDilationsAttr(), op.getKernelShapeAttr(),
      op.getPadsAttr(), op.getStridesAttr(), op.getCountIncludePadAttr()));
  return success();
}

LogicalResult gradient(GlobalAveragePoolOp op, GradientBuilder &g,
                       ArrayRef<Value> dY, Grads &dX) {
  ArrayRef<int64_t> xs = GradientBuilder::shapeOf(op.getOperand());
  int64_t n = 1;
  for (int64_t d : xs.drop_front(2))
    n *= d;
  Value d = g.expand(dY[0], xs);
  dX.push_back(g.div(d, g.scalar(static_cast<double>(n), d)));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult gradient(SoftmaxCrossEntropyLossOp op, GradientBuilder &g,
                       ArrayRef<Value> dY, Grads &dX) {
  if (dY.size() > 1 && dY[1])
    return op.emitError("gradient through SoftmaxCrossEntropyLoss's log_prob "
                        "result is not supported");
  Value logProb = op.getLogProb();
  if (!logProb) // recomputed: log_softmax over the class axis
    logProb = g.make<LogSoftmaxOp>(op.getScores(), int64_t(1));
  Operation *grad = g.create<SoftmaxCrossEntropyLossGradOp>(
      1, GradientBuilder::elementType(op.getScores()), dY[0], logProb,
      op.getLabels(), op.getWeights(), op.getIgnoreIndexAttr(),
      op.getReductionAttr());
  if (!grad)
    return failure();
  dX.push_back(grad->getResult(0));
  dX.push_back(Value());
  if (op.getWeights())
    dX.push_back(Value());
  return success();
}

LogicalResult gradient(NegativeLogLikelihoodLossOp op, GradientBuilder &g,
                       ArrayRef<Value> dY, Grads &dX) {
  Operation *grad = g.create<NegativeLogLikelihoodLossGradOp>(
      1, GradientBuilder::elementType(op.getInput()), dY[0], op.getInput(),
      op.getTarget(), op.getWeight(), op.getIgnoreIndexAttr(),
      op.getReductionAttr());
  if (!grad)
    return failure();
  dX.push_back(grad->getResult(0));
  dX.push_back(Value());
  if (op.getWeight())
    dX.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

template <typename OpT>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<OpT>, OpT> {
  LogicalResult buildGradients(Operation *op, GradientBuilder &builder,
                               ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) const {
    return gradient(llvm::cast<OpT>(op), builder, resultGrads, operandGrads);
  }
};

template <typename... Ops> void attach(MLIRContext *ctx) {
  (Ops::template attachInterface<GradientModel<Ops>>(*ctx), ...);
}
} // namespace

void hetpar::onnx::attachGradientRules(MLIRContext *ctx) {
  attach<AddOp, SubOp, MulOp, DivOp, NegOp, ExpOp, LogOp, SqrtOp, ReciprocalOp,
         TanhOp, SigmoidOp, ReluOp, LeakyReluOp, ErfOp, GeluOp, MishOp, SinOp,
         CosOp, AbsOp, PowOp, WhereOp, CastOp, IdentityOp, DropoutOp, ClipOp,
         MaxOp, MinOp>(ctx);
  attach<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, TransposeOp, ExpandOp,
         ConcatOp, SplitOp, SliceOp, GatherOp, PadOp, TileOp, CumSumOp>(ctx);
  attach<MatMulOp, GemmOp, EinsumOp>(ctx);
  attach<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, SoftmaxOp, LogSoftmaxOp,
         LayerNormalizationOp, BatchNormalizationOp, InstanceNormalizationOp,
         GlobalAveragePoolOp>(ctx);
  attach<ConvOp, MaxPoolOp, AveragePoolOp>(ctx);
  attach<SoftmaxCrossEntropyLossOp, NegativeLogLikelihoodLossOp>(ctx);
}
