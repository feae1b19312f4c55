//===- FlopCount.cpp - FLOP counts of the onnx ops -----------------------===//
//
// Conventions (see FlopCountOpInterface): multiply-add = 2 FLOP; one FLOP per
// output element of an elementwise op, transcendental or not; data movement =
// 0. The multi-pass normalizations count their passes over the data:
//   Softmax/LogSoftmax: max, subtract, exp, sum, divide          = 5 per
//   element LayerNormalization: mean (1), variance (3), normalize (2),
//                       scale and bias (2)                        = 8 per
//                       element
//   BatchNormalization in inference: a fused scale and shift      = 2 per
//   element; in training: like LayerNormalization (batch statistics)  = 8
//   per element InstanceNormalization: like LayerNormalization         = 8
//   per element
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::onnx;

namespace {
/// Element count of a static tensor; std::nullopt when a dimension is dynamic
/// or the count overflows int64.
std::optional<int64_t> numel(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return std::nullopt;
  return getNumElements(t.getShape());
}

/// n * factor, or std::nullopt on overflow or when n is unknown.
std::optional<int64_t> scaled(std::optional<int64_t> n, int64_t factor) {
  if (!n)
    return std::nullopt;
  return llvm::checkedMul(*n, factor);
}

/// a + b with unknown or overflowing sums giving std::nullopt.
std::optional<int64_t> plus(std::optional<int64_t> a,
                            std::optional<int64_t> b) {
  if (!a || !b)
    return std::nullopt;
  return llvm::checkedAdd(*a, *b);
}
} // namespace

#define HETPAR_FLOPS(OP, EXPR)                                                 \
  std::optional<int64_t> OP::getFlopCount() { return EXPR; }

// Data movement, constants, shape ops.
#define HETPAR_ZERO(OP) HETPAR_FLOPS(OP, int64_t(0))
HETPAR_ZERO(ConstantOp)
HETPAR_ZERO(IdentityOp)
HETPAR_ZERO(CastOp)
HETPAR_ZERO(CastLikeOp)
HETPAR_ZERO(ReshapeOp)
HETPAR_ZERO(FlattenOp)
HETPAR_ZERO(TransposeOp)
HETPAR_ZERO(SqueezeOp)
HETPAR_ZERO(UnsqueezeOp)
HETPAR_ZERO(ConcatOp)
HETPAR_ZERO(SplitOp)
HETPAR_ZERO(SliceOp)
HETPAR_ZERO(GatherOp)
HETPAR_ZERO(GatherElementsOp)
HETPAR_ZERO(GatherNDOp)
HETPAR_ZERO(ScatterNDOp)
HETPAR_ZERO(ScatterElementsOp)
HETPAR_ZERO(ExpandOp)
HETPAR_ZERO(TileOp)
HETPAR_ZERO(PadOp)
HETPAR_ZERO(ShapeOp)
HETPAR_ZERO(SizeOp)
HETPAR_ZERO(ConstantOfShapeOp)
HETPAR_ZERO(TriluOp)
HETPAR_ZERO(OneHotOp)
HETPAR_ZERO(NonZeroOp)
#undef HETPAR_ZERO

std::optional<int64_t> GenericOp::getFlopCount() { return std::nullopt; }

// One FLOP per output element.
#define HETPAR_PER_OUTPUT(OP)                                                  \
  HETPAR_FLOPS(OP, numel(getOperation()->getResult(0)))
HETPAR_PER_OUTPUT(SqrtOp)
HETPAR_PER_OUTPUT(ReciprocalOp)
HETPAR_PER_OUTPUT(NegOp)
HETPAR_PER_OUTPUT(AbsOp)
HETPAR_PER_OUTPUT(ExpOp)
HETPAR_PER_OUTPUT(LogOp)
HETPAR_PER_OUTPUT(ErfOp)
HETPAR_PER_OUTPUT(TanhOp)
HETPAR_PER_OUTPUT(SigmoidOp)
HETPAR_PER_OUTPUT(ReluOp)
HETPAR_PER_OUTPUT(SinOp)
HETPAR_PER_OUTPUT(CosOp)
HETPAR_PER_OUTPUT(TanOp)
HETPAR_PER_OUTPUT(AsinOp)
HETPAR_PER_OUTPUT(AcosOp)
HETPAR_PER_OUTPUT(AtanOp)
HETPAR_PER_OUTPUT(SinhOp)
HETPAR_PER_OUTPUT(CoshOp)
HETPAR_PER_OUTPUT(AsinhOp)
HETPAR_PER_OUTPUT(AcoshOp)
HETPAR_PER_OUTPUT(AtanhOp)
HETPAR_PER_OUTPUT(FloorOp)
HETPAR_PER_OUTPUT(CeilOp)
HETPAR_PER_OUTPUT(RoundOp)
HETPAR_PER_OUTPUT(SignOp)
HETPAR_PER_OUTPUT(SoftplusOp)
HETPAR_PER_OUTPUT(SoftsignOp)
HETPAR_PER_OUTPUT(HardSwishOp)
HETPAR_PER_OUTPUT(MishOp)
HETPAR_PER_OUTPUT(NotOp)
HETPAR_PER_OUTPUT(LeakyReluOp)
HETPAR_PER_OUTPUT(EluOp)
HETPAR_PER_OUTPUT(CeluOp)
HETPAR_PER_OUTPUT(SeluOp)
HETPAR_PER_OUTPUT(HardSigmoidOp)
HETPAR_PER_OUTPUT(ThresholdedReluOp)
HETPAR_PER_OUTPUT(GeluOp)
HETPAR_PER_OUTPUT(IsNaNOp)
HETPAR_PER_OUTPUT(IsInfOp)
HETPAR_PER_OUTPUT(ClipOp)
HETPAR_PER_OUTPUT(AddOp)
HETPAR_PER_OUTPUT(SubOp)
HETPAR_PER_OUTPUT(MulOp)
HETPAR_PER_OUTPUT(DivOp)
HETPAR_PER_OUTPUT(PowOp)
HETPAR_PER_OUTPUT(ModOp)
HETPAR_PER_OUTPUT(PReluOp)
HETPAR_PER_OUTPUT(EqualOp)
HETPAR_PER_OUTPUT(LessOp)
HETPAR_PER_OUTPUT(LessOrEqualOp)
HETPAR_PER_OUTPUT(GreaterOp)
HETPAR_PER_OUTPUT(GreaterOrEqualOp)
HETPAR_PER_OUTPUT(AndOp)
HETPAR_PER_OUTPUT(OrOp)
HETPAR_PER_OUTPUT(XorOp)
HETPAR_PER_OUTPUT(WhereOp)
HETPAR_PER_OUTPUT(CumSumOp)
HETPAR_PER_OUTPUT(RangeOp)
#undef HETPAR_PER_OUTPUT

// Dropout: nothing at inference; a compare and a scale per element in training.
std::optional<int64_t> DropoutOp::getFlopCount() {
  if (!getTrainingMode())
    return 0;
  return scaled(numel(getOutput()), 2);
}

// N inputs combine with N-1 operations per output element (Mean adds a
// division).
#define HETPAR_VARIADIC(OP, EXTRA)                                             \
  HETPAR_FLOPS(OP,                                                             \
               scaled(numel(getResult()),                                      \
                      static_cast<int64_t>(getNumOperands()) - 1 + (EXTRA)))
HETPAR_VARIADIC(MaxOp, 0)
HETPAR_VARIADIC(MinOp, 0)
HETPAR_VARIADIC(SumOp, 0)
HETPAR_VARIADIC(MeanOp, 1)
#undef HETPAR_VARIADIC

// Reductions and arg-reductions: one operation per input element.
#define HETPAR_PER_INPUT(OP, IN) HETPAR_FLOPS(OP, numel(IN))
HETPAR_PER_INPUT(ReduceMeanOp, getData())
HETPAR_PER_INPUT(ReduceSumOp, getData())
HETPAR_PER_INPUT(ReduceMaxOp, getData())
HETPAR_PER_INPUT(ReduceMinOp, getData())
HETPAR_PER_INPUT(ReduceProdOp, getData())
HETPAR_PER_INPUT(ReduceL1Op, getData())
HETPAR_PER_INPUT(ReduceL2Op, getData())
HETPAR_PER_INPUT(ReduceSumSquareOp, getData())
HETPAR_PER_INPUT(ReduceLogSumExpOp, getData())
HETPAR_PER_INPUT(ArgMaxOp, getData())
HETPAR_PER_INPUT(ArgMinOp, getData())
HETPAR_PER_INPUT(GlobalAveragePoolOp, getX())
HETPAR_PER_INPUT(GlobalMaxPoolOp, getX())
#undef HETPAR_PER_INPUT

HETPAR_FLOPS(SoftmaxOp, scaled(numel(getInput()), 5))
HETPAR_FLOPS(LogSoftmaxOp, scaled(numel(getInput()), 5))
// FusedAttention: the two products (2 * Lq * Lk * (D + Dv) per batch, as the
// unfused MatMuls count), and per score the scale, the mask and the
// softmax's 5: 7 per score.
std::optional<int64_t> FusedAttentionOp::getFlopCount() {
  auto q = llvm::dyn_cast<RankedTensorType>(getQ().getType());
  auto y = llvm::dyn_cast<RankedTensorType>(getY().getType());
  auto kt = llvm::dyn_cast<RankedTensorType>(getKT().getType());
  if (!q || !y || !kt || !q.hasStaticShape() || !y.hasStaticShape() ||
      !kt.hasStaticShape())
    return std::nullopt;
  auto scores = getNumElements(q.getShape().drop_back());
  if (scores)
    scores = llvm::checkedMul(*scores, kt.getShape().back());
  int64_t perScore = 2 * (q.getShape().back() + y.getShape().back()) + 7;
  return scaled(scores, perScore);
}
HETPAR_FLOPS(LayerNormalizationOp, scaled(numel(getX()), 8))
HETPAR_FLOPS(InstanceNormalizationOp, scaled(numel(getInput()), 8))
HETPAR_FLOPS(BatchNormalizationOp,
             scaled(numel(getX()), getTrainingMode() != 0 ? 8 : 2))
// The losses: the log-softmax of the scores (5 per element, as LogSoftmax),
// then per target position the weight's product and the sum (2); the mean's
// division is once. The gradients: SoftmaxCrossEntropyLossGrad exp, subtract
// and scale per element (3); NegativeLogLikelihoodLossGrad scales one element
// per target position (2) and writes zeros elsewhere (data movement).
HETPAR_FLOPS(SoftmaxCrossEntropyLossOp,
             plus(scaled(numel(getScores()), 5), scaled(numel(getLabels()), 2)))
HETPAR_FLOPS(NegativeLogLikelihoodLossOp, scaled(numel(getTarget()), 2))
HETPAR_FLOPS(SoftmaxCrossEntropyLossGradOp, scaled(numel(getLogProb()), 3))
HETPAR_FLOPS(NegativeLogLikelihoodLossGradOp, scaled(numel(getTarget()), 2))

std::optional<int64_t> MatMulOp::getFlopCount() {
  auto a = llvm::dyn_cast<RankedTensorType>(getA().getType());
  if (!a || !a.hasStaticShape())
    return std::nullopt;
  // Every output element is a dot product of length K.
  return scaled(scaled(numel(getY()), 2), a.getShape().back());
}

std::optional<int64_t> GemmOp::getFlopCount() {
  auto a = llvm::dyn_cast<RankedTensorType>(getA().getType());
  if (!a || !a.hasStaticShape())
    return std::nullopt;
  int64_t k = a.getDimSize(getTransA() ? 0 : 1);
  return plus(scaled(scaled(numel(getY()), 2), k),
              getC() ? numel(getY()) : std::optional<int64_t>(0));
}

/// Conv's and FusedConv's products and bias: each output element takes
/// (C/group) * prod(kernel) multiply-adds, plus one add for the bias.
template <typename ConvLike>
static std::optional<int64_t> convFlops(ConvLike op) {
  auto w = llvm::dyn_cast<RankedTensorType>(op.getW().getType());
  auto wn = numel(op.getW());
  if (!w || !wn || w.getDimSize(0) == 0)
    return std::nullopt;
  int64_t perOutput = *wn / w.getDimSize(0);
  return plus(scaled(scaled(numel(op.getY()), 2), perOutput),
              op.getB() ? numel(op.getY()) : std::optional<int64_t>(0));
}

std::optional<int64_t> ConvOp::getFlopCount() { return convFlops(*this); }

// FusedConv: Conv's, plus one per output for the residual add and one for
// the activation, as the unfused Add and Relu/Clip count.
std::optional<int64_t> FusedConvOp::getFlopCount() {
  int64_t extra = (getZ() ? 1 : 0) + (getActivation() != "none" ? 1 : 0);
  return plus(convFlops(*this), scaled(numel(getY()), extra));
}

template <typename PoolOp> static std::optional<int64_t> poolFlops(PoolOp op) {
  auto window = getNumElements(op.getKernelShape());
  if (!window)
    return std::nullopt;
  return scaled(numel(op.getY()), *window);
}

std::optional<int64_t> MaxPoolOp::getFlopCount() { return poolFlops(*this); }
std::optional<int64_t> AveragePoolOp::getFlopCount() {
  return poolFlops(*this);
}

// Einsum: every combination of all axes (kept and summed) is one multiply-add
// (two or more inputs) or one add (one input).
std::optional<int64_t> EinsumOp::getFlopCount() {
  llvm::StringMap<int64_t> extent;
  auto [lhs, rhs] = getEquation().split("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  int64_t broadcastExtent = 1;
  for (auto [term, input] : llvm::zip(terms, getInputs())) {
    auto t = llvm::dyn_cast<RankedTensorType>(input.getType());
    if (!t || !t.hasStaticShape())
      return std::nullopt;
    std::string letters;
    for (char c : term)
      if (llvm::isAlpha(c))
        letters += c;
    int64_t extra = t.getRank() - static_cast<int64_t>(letters.size());
    int64_t pos = 0;
    size_t dots = term.find("...");
    size_t lettersBefore = 0;
    if (dots != StringRef::npos)
      for (char c : term.take_front(dots))
        lettersBefore += llvm::isAlpha(c);
    for (size_t i = 0; i < letters.size(); ++i) {
      if (dots != StringRef::npos && i == lettersBefore)
        pos += extra;
      extent[std::string(1, letters[i])] = t.getDimSize(pos++);
    }
    if (dots != StringRef::npos && extra > 0) {
      auto n = getNumElements(t.getShape().slice(lettersBefore, extra));
      broadcastExtent = std::max(broadcastExtent, n.value_or(1));
    }
  }
  std::optional<int64_t> total = broadcastExtent;
  for (const auto &e : extent)
    total = scaled(total, e.second);
  return scaled(total, getInputs().size() >= 2 ? 2 : 1);
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

// One add per element of dY scattered.
HETPAR_FLOPS(GatherGradOp, numel(getDY()))
// The row-wise gradients, per element: SoftmaxGrad dY * Y, its sum, the
// subtraction and the product (4); LogSoftmaxGrad the sum of dY, exp(Y), the
// product and the subtraction (4); LayerNormalizationGrad the recomputed
// statistics and xhat (mean 1, variance 3, xhat 2), g = dY * Scale (1), the
// sums of g and g * xhat (3), dX (4), dScale (2) and dB (1) = 18.
HETPAR_FLOPS(SoftmaxGradOp, scaled(numel(getY()), 4))
HETPAR_FLOPS(LogSoftmaxGradOp, scaled(numel(getY()), 4))
HETPAR_FLOPS(LayerNormalizationGradOp, scaled(numel(getX()), 18))
// ConvGrad: dX and dW each cost the forward Conv's multiply-adds (the two
// GEMMs of the backward pass), dB one add per element of dY.
std::optional<int64_t> ConvGradOp::getFlopCount() {
  auto w = llvm::dyn_cast<RankedTensorType>(getW().getType());
  auto wn = numel(getW());
  if (!w || !wn || w.getDimSize(0) == 0)
    return std::nullopt;
  int64_t perOutput = *wn / w.getDimSize(0);
  auto gemm = scaled(scaled(numel(getDY()), 2), perOutput);
  return plus(scaled(gemm, 2), numel(getDY()));
}
// The pooling gradients: MaxPoolGrad recomputes each window's maximum (the
// forward's cost); AveragePoolGrad divides and adds once per window element.
std::optional<int64_t> MaxPoolGradOp::getFlopCount() {
  auto window = getNumElements(getKernelShape());
  if (!window)
    return std::nullopt;
  return scaled(numel(getDY()), *window);
}
std::optional<int64_t> AveragePoolGradOp::getFlopCount() {
  auto window = getNumElements(getKernelShape());
  if (!window)
    return std::nullopt;
  return scaled(numel(getDY()), 2 * *window);
}
// Per element: weight decay 2, moments 6, bias-corrected update 6 (a sqrt and
// a divide counted once each), as the elementwise convention counts them.
HETPAR_FLOPS(AdamWOptimizerOp, scaled(numel(getParam()), 14))
// Per element: decay and scale 3, momentum 2, update 2.
HETPAR_FLOPS(SGDOptimizerOp, scaled(numel(getParam()), 7))

/// Resize: nearest copies (0); linear and cubic take 2 and 4 taps per resized
/// axis, a multiply and an add each, per output element (hp_resize).
std::optional<int64_t> ResizeOp::getFlopCount() {
  if (getMode() == "nearest")
    return 0;
  SmallVector<int64_t> extents;
  SmallVector<double> scales;
  std::string reason;
  if (failed(getAxes(extents, scales, reason)))
    return std::nullopt;
  auto in = llvm::cast<RankedTensorType>(getX().getType()).getShape();
  int64_t taps = getMode() == "linear" ? 2 : 4, perOutput = 2;
  for (size_t d = 0; d < extents.size(); ++d)
    if (extents[d] != in[d] || scales[d] != 1.0)
      perOutput *= taps;
  return scaled(numel(getY()), perOutput);
}
