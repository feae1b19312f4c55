//===- ShapeInference.cpp - shape rules of the onnx ops ------------------===//
//
// One `inferResultTypes` per op. A rule reads operand types, attributes and the
// values of constant operands; unknown extents stay dynamic. It emits an error
// at the op and fails when the op breaks the constraints its ODS description
// lists; the same rule is the op's verifier (verifyInferredResultTypes).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Dialect/ONNX/Window.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/FormatVariadic.h"

#include <climits>
#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::onnx;

namespace {

using Shape = SmallVector<int64_t>;
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Static-or-dynamic shape of a value; std::nullopt when its rank is unknown.
std::optional<Shape> shapeOf(Value v) {
  if (auto t = llvm::dyn_cast<RankedTensorType>(v.getType()))
    return Shape(t.getShape());
  return std::nullopt;
}

Type elementTypeOf(Value v) {
  return llvm::cast<ShapedType>(v.getType()).getElementType();
}

/// A ranked tensor type when the shape is known, else an unranked one.
Type tensorOf(const std::optional<Shape> &shape, Type elt) {
  if (shape)
    return RankedTensorType::get(*shape, elt);
  return UnrankedTensorType::get(elt);
}

/// Shape of `n` unknown extents.
Shape dynamicShape(int64_t n) { return Shape(n, kDyn); }

/// Multidirectional broadcast of all `values`; emits an error on a mismatch.
FailureOr<std::optional<Shape>> broadcastAll(Operation *op, ValueRange values) {
  Shape acc;
  for (Value v : values) {
    auto s = shapeOf(v);
    if (!s)
      return std::optional<Shape>();
    auto b = broadcastShapes(acc, *s);
    if (!b)
      return op->emitOpError()
             << "operand shapes " << formatShape(acc) << " and "
             << formatShape(*s) << " do not broadcast";
    acc = *b;
  }
  return std::optional<Shape>(acc);
}

LogicalResult sameShape(Value in, Type elt, SmallVectorImpl<Type> &r) {
  r.push_back(tensorOf(shapeOf(in), elt));
  return success();
}

/// Normalizes `axis` for `rank` or emits "axis A is out of range for rank R".
FailureOr<int64_t> checkAxis(Operation *op, int64_t axis, int64_t rank,
                             StringRef what = "axis") {
  auto n = normalizeAxis(axis, rank);
  if (!n)
    return op->emitOpError()
           << what << " " << axis << " is out of range for rank " << rank;
  return *n;
}

/// Index tuples of `k` entries (the last axis of `indices`), entry j indexing
/// axis `first` + j of `data` (k = 1: every index indexes axis `first`): a
/// constant entry outside [-extent, extent) is an error here; one from data
/// is checked when the program runs (docs/reliability.md).
LogicalResult checkIndexTuples(Operation *op, Value indices, const Shape &data,
                               int64_t first, int64_t k) {
  auto values = getConstantIntValues(indices);
  if (!values)
    return success();
  for (auto [n, v] : llvm::enumerate(*values)) {
    int64_t axis = first + static_cast<int64_t>(n) % k, dim = data[axis];
    if (!isDynamic(dim) && (v < -dim || v >= dim))
      return op->emitOpError() << "index " << v << " is out of range for axis "
                               << axis << " of extent " << dim;
  }
  return success();
}

/// Normalizes a list of axes (distinct, in range).
FailureOr<SmallVector<int64_t>> checkAxes(Operation *op, ArrayRef<int64_t> axes,
                                          int64_t rank) {
  SmallVector<int64_t> out;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t a : axes) {
    auto n = checkAxis(op, a, rank);
    if (failed(n))
      return failure();
    if (!seen.insert(*n).second)
      return op->emitOpError() << "axis " << a << " is repeated";
    out.push_back(*n);
  }
  return out;
}

/// Merges two extents known to describe the same dimension.
int64_t mergeDim(int64_t a, int64_t b) { return isDynamic(a) ? b : a; }

bool dimsConflict(int64_t a, int64_t b) {
  return !isDynamic(a) && !isDynamic(b) && a != b;
}

/// Checks that `v` (when ranked) holds at most one element (a scalar operand).
LogicalResult checkScalar(Operation *op, Value v, StringRef name) {
  if (!v)
    return success();
  auto s = shapeOf(v);
  if (!s)
    return success();
  auto n = getNumElements(*s);
  if (s->size() > 1 || (n && *n != 1))
    return op->emitOpError() << "'" << name << "' must be a scalar, got shape "
                             << formatShape(*s);
  return success();
}

/// Checks a 1-D operand (shape, axes, repeats, ...).
LogicalResult check1D(Operation *op, Value v, StringRef name) {
  auto s = shapeOf(v);
  if (s && s->size() != 1)
    return op->emitOpError()
           << "'" << name << "' must be 1-D, got shape " << formatShape(*s);
  return success();
}

/// Length of a 1-D operand when static.
std::optional<int64_t> staticLength(Value v) {
  auto s = shapeOf(v);
  if (!s || s->size() != 1 || isDynamic((*s)[0]))
    return std::nullopt;
  return (*s)[0];
}

/// The highest rank HetPar handles: 64, NumPy 2's NPY_MAXDIMS (the most
/// dimensions an `.npy` input or reference can have).
constexpr int64_t kMaxRank = 64;

/// Checks a 1-D operand whose length becomes a result's rank (Reshape's and
/// Expand's shape, ConstantOfShape's input): at most kMaxRank entries.
LogicalResult checkShapeOperand(Operation *op, Value v, StringRef name) {
  if (failed(check1D(op, v, name)))
    return failure();
  if (auto len = staticLength(v); len && *len > kMaxRank)
    return op->emitOpError()
           << "'" << name << "' has " << *len
           << " entries, a result of more than the " << kMaxRank
           << " dimensions HetPar supports (NumPy 2's NPY_MAXDIMS)";
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// The verifier shared by every op with a shape rule.
//===----------------------------------------------------------------------===//

LogicalResult hetpar::onnx::verifyInferredResultTypes(Operation *op) {
  auto iface = llvm::cast<InferShapesOpInterface>(op);
  SmallVector<Type> inferred;
  if (failed(iface.inferResultTypes(inferred)))
    return failure();
  if (inferred.size() != op->getNumResults())
    return op->emitOpError()
           << "has " << op->getNumResults()
           << " results but its shape rule gives " << inferred.size();
  for (Type t : inferred)
    if (auto st = llvm::dyn_cast_if_present<RankedTensorType>(t))
      if (llvm::none_of(st.getShape(), isDynamic) &&
          !getNumElements(st.getShape()))
        return op->emitOpError()
               << "result shape " << formatShape(st.getShape())
               << " has more elements than fit in 64 bits";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(op->getResultTypes(), inferred))) {
    auto [declared, expected] = pair;
    auto d = llvm::dyn_cast<ShapedType>(declared);
    auto e = llvm::dyn_cast<ShapedType>(expected);
    if (!d || !e) {
      if (declared != expected)
        return op->emitOpError() << "result #" << i << " has type " << declared
                                 << " but its shape rule gives " << expected;
      continue;
    }
    if (d.getElementType() != e.getElementType() ||
        failed(verifyCompatibleShape(d, e)))
      return op->emitOpError() << "result #" << i << " has type " << declared
                               << " but its shape rule gives " << expected;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Constants and the generic op
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  r.push_back(getValue().getType());
  return success();
}

LogicalResult GenericOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (getRegionNames().size() != getNumRegions())
    return emitOpError() << "has " << getNumRegions() << " regions but "
                         << getRegionNames().size() << " region names";
  llvm::append_range(r, getResultTypes());
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define HETPAR_SAME_AS_X(OP)                                                   \
  LogicalResult OP::inferResultTypes(SmallVectorImpl<Type> &r) {               \
    r.push_back(getX().getType());                                             \
    return success();                                                          \
  }
HETPAR_SAME_AS_X(SqrtOp)
HETPAR_SAME_AS_X(ReciprocalOp)
HETPAR_SAME_AS_X(NegOp)
HETPAR_SAME_AS_X(AbsOp)
HETPAR_SAME_AS_X(ExpOp)
HETPAR_SAME_AS_X(LogOp)
HETPAR_SAME_AS_X(ErfOp)
HETPAR_SAME_AS_X(TanhOp)
HETPAR_SAME_AS_X(SigmoidOp)
HETPAR_SAME_AS_X(ReluOp)
HETPAR_SAME_AS_X(SinOp)
HETPAR_SAME_AS_X(CosOp)
HETPAR_SAME_AS_X(TanOp)
HETPAR_SAME_AS_X(AsinOp)
HETPAR_SAME_AS_X(AcosOp)
HETPAR_SAME_AS_X(AtanOp)
HETPAR_SAME_AS_X(SinhOp)
HETPAR_SAME_AS_X(CoshOp)
HETPAR_SAME_AS_X(AsinhOp)
HETPAR_SAME_AS_X(AcoshOp)
HETPAR_SAME_AS_X(AtanhOp)
HETPAR_SAME_AS_X(FloorOp)
HETPAR_SAME_AS_X(CeilOp)
HETPAR_SAME_AS_X(RoundOp)
HETPAR_SAME_AS_X(SignOp)
HETPAR_SAME_AS_X(SoftplusOp)
HETPAR_SAME_AS_X(SoftsignOp)
HETPAR_SAME_AS_X(HardSwishOp)
HETPAR_SAME_AS_X(MishOp)
HETPAR_SAME_AS_X(NotOp)
HETPAR_SAME_AS_X(IdentityOp)
HETPAR_SAME_AS_X(LeakyReluOp)
HETPAR_SAME_AS_X(EluOp)
HETPAR_SAME_AS_X(CeluOp)
HETPAR_SAME_AS_X(SeluOp)
HETPAR_SAME_AS_X(HardSigmoidOp)
HETPAR_SAME_AS_X(ThresholdedReluOp)
#undef HETPAR_SAME_AS_X

LogicalResult GeluOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "approximate must be \"none\" or \"tanh\", got \""
                         << getApproximate() << "\"";
  r.push_back(getX().getType());
  return success();
}

LogicalResult IsNaNOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return sameShape(getX(), IntegerType::get(getContext(), 1), r);
}

LogicalResult IsInfOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return sameShape(getX(), IntegerType::get(getContext(), 1), r);
}

LogicalResult ClipOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  for (auto [v, name] :
       {std::pair<Value, StringRef>{getMin(), "min"}, {getMax(), "max"}}) {
    if (failed(checkScalar(*this, v, name)))
      return failure();
    if (v && elementTypeOf(v) != elementTypeOf(getInput()))
      return emitOpError() << "'" << name
                           << "' must have the input's element type";
  }
  r.push_back(getInput().getType());
  return success();
}

LogicalResult CastOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (!getToAttr())
    return emitOpError() << "requires attribute 'to'";
  Type to = getTo();
  if (!to.isIntOrFloat() || llvm::isa<IndexType>(to))
    return emitOpError() << "cannot cast to " << to;
  return sameShape(getInput(), to, r);
}

LogicalResult CastLikeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return sameShape(getInput(), elementTypeOf(getTargetType()), r);
}

LogicalResult DropoutOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkScalar(*this, getRatio(), "ratio")) ||
      failed(checkScalar(*this, getTrainingMode(), "training_mode")) ||
      failed(checkScalar(*this, getStep(), "step")))
    return failure();
  if (auto offset = getElementOffsetAttr(); offset && offset.getInt() < 0)
    return emitOpError() << "element_offset " << offset.getInt()
                         << " is negative";
  r.push_back(getData().getType());
  if (getMask())
    r.push_back(
        tensorOf(shapeOf(getData()), IntegerType::get(getContext(), 1)));
  return success();
}

static LogicalResult inferBroadcast(Operation *op, ValueRange operands,
                                    Type elt, SmallVectorImpl<Type> &r) {
  auto shape = broadcastAll(op, operands);
  if (failed(shape))
    return failure();
  r.push_back(tensorOf(*shape, elt));
  return success();
}

#define HETPAR_BROADCAST(OP, RESULT_ELT)                                       \
  LogicalResult OP::inferResultTypes(SmallVectorImpl<Type> &r) {               \
    return inferBroadcast(*this, getOperation()->getOperands(), RESULT_ELT,    \
                          r);                                                  \
  }
HETPAR_BROADCAST(AddOp, elementTypeOf(getA()))
HETPAR_BROADCAST(SubOp, elementTypeOf(getA()))
HETPAR_BROADCAST(MulOp, elementTypeOf(getA()))
HETPAR_BROADCAST(DivOp, elementTypeOf(getA()))
HETPAR_BROADCAST(PowOp, elementTypeOf(getX()))
HETPAR_BROADCAST(AndOp, elementTypeOf(getA()))
HETPAR_BROADCAST(OrOp, elementTypeOf(getA()))
HETPAR_BROADCAST(XorOp, elementTypeOf(getA()))
HETPAR_BROADCAST(EqualOp, IntegerType::get(getContext(), 1))
HETPAR_BROADCAST(LessOp, IntegerType::get(getContext(), 1))
HETPAR_BROADCAST(LessOrEqualOp, IntegerType::get(getContext(), 1))
HETPAR_BROADCAST(GreaterOp, IntegerType::get(getContext(), 1))
HETPAR_BROADCAST(GreaterOrEqualOp, IntegerType::get(getContext(), 1))
#undef HETPAR_BROADCAST

LogicalResult WhereOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (elementTypeOf(getX()) != elementTypeOf(getY()))
    return emitOpError() << "X and Y have different element types ("
                         << elementTypeOf(getX()) << " and "
                         << elementTypeOf(getY()) << ")";
  return inferBroadcast(*this, getOperation()->getOperands(),
                        elementTypeOf(getX()), r);
}

LogicalResult ModOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (getFmod() != 0 && getFmod() != 1)
    return emitOpError() << "fmod must be 0 or 1, got " << getFmod();
  if (getFmod() == 0 && llvm::isa<FloatType>(elementTypeOf(getA())))
    return emitOpError() << "fmod must be 1 for floating-point operands";
  return inferBroadcast(*this, getOperation()->getOperands(),
                        elementTypeOf(getA()), r);
}

LogicalResult PReluOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto x = shapeOf(getX()), s = shapeOf(getSlope());
  if (x && s && !isUnidirectionalBroadcastable(*s, *x))
    return emitOpError() << "slope of shape " << formatShape(*s)
                         << " does not broadcast to X of shape "
                         << formatShape(*x);
  r.push_back(getX().getType());
  return success();
}

static LogicalResult inferVariadic(Operation *op, SmallVectorImpl<Type> &r) {
  if (op->getNumOperands() == 0)
    return op->emitOpError() << "needs at least one input";
  return inferBroadcast(op, op->getOperands(), elementTypeOf(op->getOperand(0)),
                        r);
}
LogicalResult MaxOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferVariadic(*this, r);
}
LogicalResult MinOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferVariadic(*this, r);
}
LogicalResult SumOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferVariadic(*this, r);
}
LogicalResult MeanOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferVariadic(*this, r);
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getA());
  auto a = shapeOf(getA()), b = shapeOf(getB());
  if ((a && a->empty()) || (b && b->empty()))
    return emitOpError() << "operands must have rank >= 1";
  if (!a || !b) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  Shape sa = *a, sb = *b;
  bool vecA = sa.size() == 1, vecB = sb.size() == 1;
  if (vecA)
    sa.insert(sa.begin(), 1);
  if (vecB)
    sb.push_back(1);
  int64_t ka = sa.back(), kb = sb[sb.size() - 2];
  if (dimsConflict(ka, kb))
    return emitOpError() << "cannot multiply " << formatShape(*a) << " by "
                         << formatShape(*b) << ": contracted dimensions " << ka
                         << " and " << kb << " differ";
  auto batch = broadcastShapes(ArrayRef<int64_t>(sa).drop_back(2),
                               ArrayRef<int64_t>(sb).drop_back(2));
  if (!batch)
    return emitOpError() << "batch dimensions of " << formatShape(*a) << " and "
                         << formatShape(*b) << " do not broadcast";
  Shape out = *batch;
  if (!vecA)
    out.push_back(sa[sa.size() - 2]);
  if (!vecB)
    out.push_back(sb.back());
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult GemmOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getA());
  if ((getTransA() != 0 && getTransA() != 1) ||
      (getTransB() != 0 && getTransB() != 1))
    return emitOpError() << "transA and transB must be 0 or 1";
  auto a = shapeOf(getA()), b = shapeOf(getB());
  if ((a && a->size() != 2) || (b && b->size() != 2))
    return emitOpError() << "A and B must have rank 2";
  int64_t m = a ? (*a)[getTransA() ? 1 : 0] : kDyn;
  int64_t ka = a ? (*a)[getTransA() ? 0 : 1] : kDyn;
  int64_t kb = b ? (*b)[getTransB() ? 1 : 0] : kDyn;
  int64_t n = b ? (*b)[getTransB() ? 0 : 1] : kDyn;
  if (dimsConflict(ka, kb))
    return emitOpError() << "cannot multiply " << formatShape(*a)
                         << (getTransA() ? " (transposed)" : "") << " by "
                         << formatShape(*b)
                         << (getTransB() ? " (transposed)" : "")
                         << ": contracted dimensions " << ka << " and " << kb
                         << " differ";
  if (Value c = getC()) {
    auto sc = shapeOf(c);
    if (sc && !isUnidirectionalBroadcastable(*sc, {m, n}))
      return emitOpError() << "C of shape " << formatShape(*sc)
                           << " does not broadcast to " << formatShape({m, n});
  }
  r.push_back(RankedTensorType::get({m, n}, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {
/// The result shape [N, channelsOut, spatial extents...] of window `w` over
/// an input of shape `x`, after its checks.
FailureOr<Shape> windowShape(Operation *op, const Window &w,
                             ArrayRef<int64_t> x, int64_t channelsOut) {
  if (failed(w.check(op)))
    return failure();
  Shape out{x[0], channelsOut};
  for (int64_t i = 0; i < w.spatial; ++i) {
    int64_t o = w.outputExtent(i, x[i + 2]);
    if (!isDynamic(o) && o < 0)
      return op->emitOpError()
             << "window of extent " << w.kernel[i]
             << " does not fit spatial axis " << i << " of extent " << x[i + 2]
             << " with its padding";
    out.push_back(o);
  }
  return out;
}
} // namespace

/// Conv's checks of X, W, group and the window attributes (shared with
/// ConvGrad); the result shape, or std::nullopt when X's rank is unknown.
template <typename ConvLike>
static FailureOr<std::optional<Shape>> convShape(ConvLike op) {
  auto x = shapeOf(op.getX()), wt = shapeOf(op.getW());
  if ((x && x->size() < 3) || (wt && wt->size() < 3))
    return op.emitOpError() << "X and W must have rank >= 3";
  if (x && wt && x->size() != wt->size())
    return op.emitOpError() << "X (rank " << x->size() << ") and W (rank "
                            << wt->size() << ") must have the same rank";
  int64_t group = op.getGroup();
  if (group <= 0)
    return op.emitOpError() << "group must be positive, got " << group;
  if (x && wt) {
    int64_t c = (*x)[1], cw = (*wt)[1], m = (*wt)[0];
    if (!isDynamic(c) && !isDynamic(cw) && c != cw * group)
      return op.emitOpError() << "X has " << c << " channels but W expects "
                              << cw << " per group times group " << group;
    if (!isDynamic(m) && m % group != 0)
      return op.emitOpError()
             << "W's " << m << " output channels are not divisible by group "
             << group;
  }
  if (!x)
    return std::optional<Shape>();
  int64_t spatial = x->size() - 2;
  // A kernel_shape W's shape contradicts: code generation reads W's (ONNX
  // Runtime refuses it too: "kernel_shape is not compatible with W shape").
  if (auto k = op.getKernelShape(); k && wt) {
    ArrayRef<int64_t> spatialW = ArrayRef<int64_t>(*wt).drop_front(2);
    bool same = true; // (a count that differs is Window::check's error)
    for (size_t i = 0; same && i < k->size() && i < spatialW.size(); ++i)
      same = isDynamic(spatialW[i]) || (*k)[i] == spatialW[i];
    if (!same)
      return op.emitOpError()
             << "kernel_shape [" << llvm::make_range(k->begin(), k->end())
             << "] does not match W's spatial extents [" << spatialW << "]";
  }
  SmallVector<int64_t> kernel;
  if (auto k = op.getKernelShape())
    kernel.assign(k->begin(), k->end());
  else if (wt)
    kernel.assign(wt->begin() + 2, wt->end());
  else
    kernel.assign(spatial, kDyn);
  Window w = Window::read(op, kernel, spatial, !op.getKernelShape());
  auto out = windowShape(op, w, *x, wt ? (*wt)[0] : kDyn);
  if (failed(out))
    return failure();
  return std::optional<Shape>(*out);
}

/// Conv's and FusedConv's result shape (convShape) after the check of the
/// bias B against W's output channels.
template <typename ConvLike>
static FailureOr<std::optional<Shape>> convWithBiasShape(ConvLike op) {
  auto y = convShape(op);
  if (failed(y))
    return failure();
  if (Value b = op.getB()) {
    auto sb = shapeOf(b), wt = shapeOf(op.getW());
    if (sb && (sb->size() != 1 || (wt && dimsConflict((*sb)[0], (*wt)[0]))))
      return op.emitOpError() << "B must have shape (M)";
  }
  return y;
}

LogicalResult ConvOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto y = convWithBiasShape(*this);
  if (failed(y))
    return failure();
  r.push_back(tensorOf(*y, elementTypeOf(getX())));
  return success();
}

LogicalResult FusedConvOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getX());
  auto y = convWithBiasShape(*this);
  if (failed(y))
    return failure();
  if (Value z = getZ()) {
    auto sz = shapeOf(z);
    if (elementTypeOf(z) != elt)
      return emitOpError() << "Z must have X's element type " << elt;
    if (sz && *y &&
        (sz->size() != (*y)->size() ||
         llvm::any_of(llvm::zip(*sz, **y), [](auto p) {
           return dimsConflict(std::get<0>(p), std::get<1>(p));
         })))
      return emitOpError() << "Z must have the result's shape";
  }
  StringRef act = getActivation();
  auto params = getActivationParams();
  if (act != "none" && act != "Relu" && act != "Clip")
    return emitOpError() << "activation must be none, Relu or Clip, got '"
                         << act << "'";
  if (act == "Clip" &&
      (!params || params->size() != 2 || std::isnan((*params)[0]) ||
       std::isnan((*params)[1]) || (*params)[0] > (*params)[1]))
    return emitOpError() << "Clip needs activation_params [lower, upper] "
                            "with lower <= upper";
  if (act != "Clip" && params)
    return emitOpError() << "activation_params are for Clip only";
  r.push_back(tensorOf(*y, elt));
  return success();
}

/// MaxPool's and AveragePool's checks of the attributes and their result
/// shape on an input of shape `x` (shared with their gradients).
template <typename PoolOp>
static FailureOr<Shape> poolShape(PoolOp op, ArrayRef<int64_t> x) {
  if (x.size() < 3)
    return op.emitOpError() << "X must have rank >= 3";
  if (op.getCeilMode() != 0 && op.getCeilMode() != 1)
    return op.emitOpError() << "ceil_mode must be 0 or 1";
  Window w =
      Window::read(op, op.getKernelShape(), static_cast<int64_t>(x.size()) - 2);
  return windowShape(op, w, x, x[1]);
}

template <typename PoolOp>
static LogicalResult inferPool(PoolOp op, SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(op.getX());
  if (!op.getKernelShapeAttr())
    return op.emitOpError() << "requires attribute 'kernel_shape'";
  auto x = shapeOf(op.getX());
  if (x && x->size() < 3)
    return op.emitOpError() << "X must have rank >= 3";
  if (op.getCeilMode() != 0 && op.getCeilMode() != 1)
    return op.emitOpError() << "ceil_mode must be 0 or 1";
  if (!x) {
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      r.push_back(
          UnrankedTensorType::get(i == 0 ? elt : op->getResult(i).getType()));
    return success();
  }
  auto out = poolShape(op, *x);
  if (failed(out))
    return failure();
  r.push_back(RankedTensorType::get(*out, elt));
  if (op->getNumResults() > 1)
    r.push_back(
        RankedTensorType::get(*out, IntegerType::get(op.getContext(), 64)));
  return success();
}

LogicalResult MaxPoolOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferPool(*this, r);
}
LogicalResult AveragePoolOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferPool(*this, r);
}

static LogicalResult inferGlobalPool(Operation *op, Value x,
                                     SmallVectorImpl<Type> &r) {
  auto s = shapeOf(x);
  if (s && s->size() < 3)
    return op->emitOpError() << "X must have rank >= 3";
  std::optional<Shape> out;
  if (s) {
    out = *s;
    for (size_t i = 2; i < out->size(); ++i)
      (*out)[i] = 1;
    // An empty window has no mean or maximum (ONNX Runtime refuses it too).
    bool emptyWindow = llvm::any_of(ArrayRef<int64_t>(*s).drop_front(2),
                                    [](int64_t e) { return e == 0; });
    if (emptyWindow && (*s)[0] != 0 && (*s)[1] != 0)
      return op->emitOpError() << "pools over the empty spatial extent of "
                               << x.getType() << ": no element to pool";
  }
  r.push_back(tensorOf(out, elementTypeOf(x)));
  return success();
}
LogicalResult GlobalAveragePoolOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferGlobalPool(*this, getX(), r);
}
LogicalResult GlobalMaxPoolOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferGlobalPool(*this, getX(), r);
}

//===----------------------------------------------------------------------===//
// Normalization and softmax
//===----------------------------------------------------------------------===//

LogicalResult BatchNormalizationOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto x = shapeOf(getX());
  if (x && x->size() < 2)
    return emitOpError() << "X must have rank >= 2";
  int64_t c = x ? (*x)[1] : kDyn;
  for (Value v : {getScale(), getB(), getInputMean(), getInputVar()}) {
    auto s = shapeOf(v);
    if (s && (s->size() != 1 || dimsConflict((*s)[0], c)))
      return emitOpError()
             << "scale, B, input_mean and input_var must have shape ("
             << (isDynamic(c) ? std::string("C") : std::to_string(c))
             << "), got " << formatShape(*s);
    // C from the per-channel operands when X's channel axis is dynamic: the
    // running statistics then keep their static type (a training program
    // stores them into globals of that type).
    if (s && isDynamic(c))
      c = (*s)[0];
  }
  if (getRunningStats().size() != 0 && getRunningStats().size() != 2)
    return emitOpError() << "has 1 or 3 results, not " << getNumResults();
  if (!getRunningStats().empty() && getTrainingMode() == 0)
    return emitOpError() << "returns running statistics only in training "
                            "mode (training_mode 1)";
  r.push_back(getX().getType());
  for (size_t i = 0; i < getRunningStats().size(); ++i)
    r.push_back(RankedTensorType::get({c}, elementTypeOf(getX())));
  return success();
}

LogicalResult
InstanceNormalizationOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto x = shapeOf(getInput());
  if (x && x->size() < 3)
    return emitOpError() << "input must have rank >= 3";
  int64_t c = x ? (*x)[1] : kDyn;
  for (Value v : {getScale(), getB()}) {
    auto s = shapeOf(v);
    if (s && (s->size() != 1 || dimsConflict((*s)[0], c)))
      return emitOpError() << "scale and B must have shape (C)";
  }
  r.push_back(getInput().getType());
  return success();
}

LogicalResult LayerNormalizationOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto x = shapeOf(getX());
  if (getStatistics().size() > 2)
    return emitOpError() << "has at most 3 results";
  Type statElt = getStashType() == 1 ? Type(Float32Type::get(getContext()))
                                     : elementTypeOf(getX());
  r.push_back(getX().getType());
  if (!x) {
    for (size_t i = 0; i < getStatistics().size(); ++i)
      r.push_back(UnrankedTensorType::get(statElt));
    return success();
  }
  auto axis = checkAxis(*this, getAxis(), x->size());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = ArrayRef<int64_t>(*x).drop_front(*axis);
  for (auto [v, name] :
       {std::pair<Value, StringRef>{getScale(), "Scale"}, {getB(), "B"}}) {
    if (!v)
      continue;
    auto s = shapeOf(v);
    if (s && !isUnidirectionalBroadcastable(*s, normalized))
      return emitOpError() << name << " of shape " << formatShape(*s)
                           << " does not broadcast to the normalized shape "
                           << formatShape(normalized);
  }
  Shape stat = *x;
  for (size_t i = *axis; i < stat.size(); ++i)
    stat[i] = 1;
  for (size_t i = 0; i < getStatistics().size(); ++i)
    r.push_back(RankedTensorType::get(stat, statElt));
  return success();
}

template <typename SoftmaxLike>
static LogicalResult inferSoftmax(SoftmaxLike op, SmallVectorImpl<Type> &r) {
  if (auto x = shapeOf(op.getInput()))
    if (failed(checkAxis(op, op.getAxis(), x->size())))
      return failure();
  r.push_back(op.getInput().getType());
  return success();
}
LogicalResult SoftmaxOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferSoftmax(*this, r);
}
LogicalResult LogSoftmaxOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferSoftmax(*this, r);
}

bool FusedAttentionOp::keepsMatrixContiguous(ArrayRef<int64_t> perm,
                                             bool result) {
  // Where the stored last dimension lands among the logical ones; a result
  // keeps Y's rows contiguous.
  if (perm.empty())
    return false;
  int64_t last = static_cast<int64_t>(perm.size()) - 1;
  if (result)
    return perm[last] == last;
  return llvm::find(perm, last) - perm.begin() >= last - 1;
}

SmallVector<int64_t>
FusedAttentionOp::permuted(ArrayRef<int64_t> stored,
                           std::optional<ArrayRef<int64_t>> perm,
                           bool inverse) {
  SmallVector<int64_t> out(stored.begin(), stored.end());
  if (!perm)
    return out;
  for (size_t i = 0; i < perm->size(); ++i) {
    if (inverse)
      out[(*perm)[i]] = stored[i];
    else
      out[i] = stored[(*perm)[i]];
  }
  return out;
}

/// FusedAttention's operand types and attributes (its "Constraints:").
static LogicalResult checkAttentionOperands(FusedAttentionOp op) {
  Type elt = elementTypeOf(op.getQ());
  for (Value v : {op.getKT(), op.getV(), op.getScale(), op.getFill()})
    if (v && elementTypeOf(v) != elt)
      return op.emitOpError() << "Q, KT, V, scale and fill must have one "
                                 "element type";
  // One element of any rank: the exporters' Mul and Where broadcast a
  // [1, 1, 1, 1] constant as they do a scalar.
  for (auto [v, name] : {std::pair<Value, StringRef>{op.getScale(), "scale"},
                         {op.getFill(), "fill"}}) {
    auto shape = v ? shapeOf(v) : std::nullopt;
    auto n = shape ? getNumElements(*shape) : std::nullopt;
    if (n && *n != 1)
      return op.emitOpError() << "'" << name << "' must hold one element, got "
                              << formatShape(*shape);
  }
  Value mask = op.getMask();
  bool select = mask && elementTypeOf(mask).isInteger(1);
  if (mask && !select && elementTypeOf(mask) != elt)
    return op.emitOpError() << "'mask' must be i1 or of Q's element type";
  if (select != bool(op.getFill()))
    return op.emitOpError() << "'fill' is present exactly when 'mask' is i1";
  if (op.getDivide() > 1 || op.getDivide() < 0 || op.getKeep() > 1 ||
      op.getKeep() < 0)
    return op.emitOpError() << "'divide' and 'keep' must be 0 or 1";
  if (op.getKvRepeat() < 1)
    return op.emitOpError()
           << "'kv_repeat' must be at least 1, got " << op.getKvRepeat();
  return success();
}

/// Q's leading dimension d as KT's or V's (`kv`) extent must be, under
/// `kv_repeat` g: the head dimension r - 3 has g times fewer (dynamic stays
/// dynamic).
static int64_t kvLeadingDim(int64_t q, size_t d, size_t rank, int64_t g) {
  if (g == 1 || d + 3 != rank || q == kDyn)
    return q;
  return q % g == 0 ? q / g : -2; // -2: no extent fits (dimsConflict)
}

/// A FusedAttention perm of rank `rank`: a permutation under which the
/// stored last dimension is one of the matrix's two dimensions (so that its
/// rows or its columns are contiguous); for the result (`inverse`), Y's last
/// dimension stays last (its rows are contiguous).
static LogicalResult checkAttentionPerm(FusedAttentionOp op, StringRef name,
                                        std::optional<ArrayRef<int64_t>> perm,
                                        size_t rank, bool inverse) {
  if (!perm)
    return success();
  SmallVector<bool> seen(rank, false);
  bool valid = perm->size() == rank;
  for (int64_t p : *perm) {
    valid = valid && p >= 0 && p < static_cast<int64_t>(rank) && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    return op.emitOpError()
           << "'" << name << "' is not a permutation of [0, " << rank << ")";
  if (!FusedAttentionOp::keepsMatrixContiguous(*perm, inverse))
    return op.emitOpError() << "'" << name
                            << (inverse ? "' moves Y's last dimension"
                                        : "' leaves neither matrix dimension "
                                          "contiguous");
  return success();
}

LogicalResult FusedAttentionOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkAttentionOperands(*this)))
    return failure();
  Type elt = elementTypeOf(getQ());
  auto qs = shapeOf(getQ()), kts = shapeOf(getKT()), vs = shapeOf(getV());
  if (!qs || !kts || !vs) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  size_t rank = qs->size();
  if (rank < 2 || kts->size() != rank || vs->size() != rank)
    return emitOpError() << "Q, KT and V must have one rank of at least 2, got "
                         << formatShape(*qs) << ", " << formatShape(*kts)
                         << " and " << formatShape(*vs);
  if (failed(checkAttentionPerm(*this, "q_perm", getQPerm(), rank, false)) ||
      failed(checkAttentionPerm(*this, "kt_perm", getKtPerm(), rank, false)) ||
      failed(checkAttentionPerm(*this, "v_perm", getVPerm(), rank, false)) ||
      failed(checkAttentionPerm(*this, "y_perm", getYPerm(), rank, true)))
    return failure();
  Shape q = permuted(*qs, getQPerm()), kt = permuted(*kts, getKtPerm()),
        v = permuted(*vs, getVPerm());
  Shape out(q.begin(), q.end());
  const int64_t g = getKvRepeat();
  if (g > 1 && rank < 3)
    return emitOpError() << "'kv_repeat' " << g
                         << " needs a head dimension: rank 3 or more, got "
                         << rank;
  for (size_t d = 0; d + 2 < rank; ++d) {
    int64_t kv = kvLeadingDim(q[d], d, rank, g);
    if (dimsConflict(kv, kt[d]) || dimsConflict(kv, v[d]))
      return emitOpError() << "batch dimensions of Q " << formatShape(q)
                           << ", KT " << formatShape(kt) << " and V "
                           << formatShape(v) << " differ"
                           << (g > 1 ? " (with 'kv_repeat' " +
                                           std::to_string(g) + ")"
                                     : std::string());
    out[d] =
        g > 1 && d + 3 == rank ? q[d] : mergeDim(mergeDim(q[d], kt[d]), v[d]);
  }
  int64_t lq = q[rank - 2], lk = kt[rank - 1];
  if (dimsConflict(q.back(), kt[rank - 2]) || dimsConflict(lk, v[rank - 2]))
    return emitOpError() << "cannot multiply Q " << formatShape(q) << " by KT "
                         << formatShape(kt) << " and V " << formatShape(v);
  out.back() = v.back();
  if (Value mask = getMask()) {
    Shape scores(out.begin(), out.end());
    scores.back() = lk;
    scores[rank - 2] = lq;
    auto m = shapeOf(mask);
    auto b = m ? broadcastShapes(scores, *m) : std::nullopt;
    if (m && (!b || *b != scores))
      return emitOpError() << "mask " << formatShape(*m)
                           << " does not broadcast to the scores "
                           << formatShape(scores);
  }
  r.push_back(RankedTensorType::get(permuted(out, getYPerm()), elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses and their gradients
//===----------------------------------------------------------------------===//

/// The checks the losses and their gradients share: `x` [N, C, d1, ..., dk]
/// of rank >= 2, `labels` [N, d1, ..., dk], `weight` (may be null) 1-D of
/// extent C with x's element type, and `reduction`. Returns the shape of the
/// labels (the loss without reduction) where known.
static FailureOr<std::optional<Shape>>
checkLoss(Operation *op, Value x, StringRef xName, Value labels,
          StringRef labelsName, Value weight, StringRef weightName,
          StringRef reduction) {
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return op->emitOpError()
           << "reduction must be \"none\", \"sum\" or \"mean\", got \""
           << reduction << "\"";
  auto xs = shapeOf(x);
  if (xs && xs->size() < 2)
    return op->emitOpError()
           << xName << " must have rank >= 2, got shape " << formatShape(*xs);
  int64_t c = xs ? (*xs)[1] : kDyn;
  if (weight) {
    if (elementTypeOf(weight) != elementTypeOf(x))
      return op->emitOpError()
             << weightName << " must have the element type of " << xName << " ("
             << elementTypeOf(x) << "), got " << elementTypeOf(weight);
    auto ws = shapeOf(weight);
    if (ws && (ws->size() != 1 || dimsConflict((*ws)[0], c)))
      return op->emitOpError()
             << weightName << " must have shape ("
             << (isDynamic(c) ? std::string("C") : std::to_string(c))
             << "), got " << formatShape(*ws);
  }
  auto ls = shapeOf(labels);
  if (!xs)
    return ls;
  Shape expected{(*xs)[0]};
  expected.append(xs->begin() + 2, xs->end());
  if (!ls)
    return std::optional<Shape>(expected);
  if (ls->size() != expected.size() ||
      llvm::any_of(llvm::zip(*ls, expected), [](auto p) {
        return dimsConflict(std::get<0>(p), std::get<1>(p));
      }))
    return op->emitOpError()
           << labelsName << " must have shape " << formatShape(expected) << " ("
           << xName << " without axis 1), got " << formatShape(*ls);
  for (auto [e, l] : llvm::zip(expected, *ls))
    e = mergeDim(e, l);
  return std::optional<Shape>(expected);
}

/// The loss result: the labels' shape without reduction, else a scalar.
static Type lossType(const std::optional<Shape> &labels, Type elt,
                     StringRef reduction) {
  if (reduction == "none")
    return tensorOf(labels, elt);
  return RankedTensorType::get({}, elt);
}

LogicalResult
SoftmaxCrossEntropyLossOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto labels = checkLoss(*this, getScores(), "scores", getLabels(), "labels",
                          getWeights(), "weights", getReduction());
  if (failed(labels))
    return failure();
  r.push_back(lossType(*labels, elementTypeOf(getScores()), getReduction()));
  if (getLogProb())
    r.push_back(getScores().getType());
  return success();
}

LogicalResult
NegativeLogLikelihoodLossOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto target = checkLoss(*this, getInput(), "input", getTarget(), "target",
                          getWeight(), "weight", getReduction());
  if (failed(target))
    return failure();
  r.push_back(lossType(*target, elementTypeOf(getInput()), getReduction()));
  return success();
}

/// dY of a loss gradient: the loss's element type, and the labels' shape
/// without reduction, else one element.
static LogicalResult checkLossGradient(Operation *op, Value dY, Value x,
                                       const std::optional<Shape> &labels,
                                       StringRef reduction) {
  if (elementTypeOf(dY) != elementTypeOf(x))
    return op->emitOpError()
           << "dY must have the element type " << elementTypeOf(x) << ", got "
           << elementTypeOf(dY);
  if (reduction != "none")
    return checkScalar(op, dY, "dY");
  auto ds = shapeOf(dY);
  if (ds && labels &&
      (ds->size() != labels->size() ||
       llvm::any_of(llvm::zip(*ds, *labels), [](auto p) {
         return dimsConflict(std::get<0>(p), std::get<1>(p));
       })))
    return op->emitOpError()
           << "dY must have shape " << formatShape(*labels)
           << " (the loss without reduction), got " << formatShape(*ds);
  return success();
}

LogicalResult
SoftmaxCrossEntropyLossGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto labels = checkLoss(*this, getLogProb(), "log_prob", getLabel(), "label",
                          getWeight(), "weight", getReduction());
  if (failed(labels) || failed(checkLossGradient(*this, getDY(), getLogProb(),
                                                 *labels, getReduction())))
    return failure();
  r.push_back(getLogProb().getType());
  return success();
}

LogicalResult
NegativeLogLikelihoodLossGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto target = checkLoss(*this, getInput(), "input", getTarget(), "target",
                          getWeight(), "weight", getReduction());
  if (failed(target) || failed(checkLossGradient(*this, getDY(), getInput(),
                                                 *target, getReduction())))
    return failure();
  r.push_back(getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

template <typename ReduceOp>
static LogicalResult inferReduce(ReduceOp op, SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(op.getData());
  bool keep = op.getKeepdims() != 0;
  if ((op.getKeepdims() != 0 && op.getKeepdims() != 1) ||
      (op.getNoopWithEmptyAxes() != 0 && op.getNoopWithEmptyAxes() != 1))
    return op.emitOpError()
           << "keepdims and noop_with_empty_axes must be 0 or 1";
  if (op.getAxes() && failed(check1D(op, op.getAxes(), "axes")))
    return failure();
  auto x = shapeOf(op.getData());
  std::optional<SmallVector<int64_t>> axes;
  if (op.getAxes())
    axes = getConstantIntValues(op.getAxes());
  else
    axes = SmallVector<int64_t>();
  bool emptyAxes = axes && axes->empty();
  if (emptyAxes && op.getNoopWithEmptyAxes()) {
    r.push_back(op.getData().getType());
    return success();
  }
  if (!x) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t rank = x->size();
  if (!axes) {
    // Unknown axes: the rank is known only with keepdims.
    r.push_back(keep ? Type(RankedTensorType::get(dynamicShape(rank), elt))
                     : Type(UnrankedTensorType::get(elt)));
    return success();
  }
  SmallVector<int64_t> reduced;
  if (emptyAxes) {
    for (int64_t i = 0; i < rank; ++i)
      reduced.push_back(i);
  } else {
    auto n = checkAxes(op, *axes, rank);
    if (failed(n))
      return failure();
    reduced = *n;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    bool isReduced = llvm::is_contained(reduced, i);
    if (!isReduced)
      out.push_back((*x)[i]);
    else if (keep)
      out.push_back(1);
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

#define HETPAR_REDUCE(OP)                                                      \
  LogicalResult OP::inferResultTypes(SmallVectorImpl<Type> &r) {               \
    return inferReduce(*this, r);                                              \
  }
HETPAR_REDUCE(ReduceMeanOp)
HETPAR_REDUCE(ReduceSumOp)
HETPAR_REDUCE(ReduceMaxOp)
HETPAR_REDUCE(ReduceMinOp)
HETPAR_REDUCE(ReduceProdOp)
HETPAR_REDUCE(ReduceL1Op)
HETPAR_REDUCE(ReduceL2Op)
HETPAR_REDUCE(ReduceSumSquareOp)
HETPAR_REDUCE(ReduceLogSumExpOp)
#undef HETPAR_REDUCE

template <typename ArgOp>
static LogicalResult inferArg(ArgOp op, SmallVectorImpl<Type> &r) {
  Type i64 = IntegerType::get(op.getContext(), 64);
  if ((op.getKeepdims() != 0 && op.getKeepdims() != 1) ||
      (op.getSelectLastIndex() != 0 && op.getSelectLastIndex() != 1))
    return op.emitOpError() << "keepdims and select_last_index must be 0 or 1";
  auto x = shapeOf(op.getData());
  if (!x) {
    r.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto axis = checkAxis(op, op.getAxis(), x->size());
  if (failed(axis))
    return failure();
  Shape out = *x;
  if (op.getKeepdims())
    out[*axis] = 1;
  else
    out.erase(out.begin() + *axis);
  // An output element over an empty axis has no index to give (ONNX Runtime
  // refuses it too).
  if ((*x)[*axis] == 0 && llvm::none_of(out, [](int64_t e) { return e == 0; }))
    return op.emitOpError()
           << "reduces axis " << *axis << " of " << op.getData().getType()
           << ", which is empty: no index to return";
  r.push_back(RankedTensorType::get(out, i64));
  return success();
}
LogicalResult ArgMaxOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferArg(*this, r);
}
LogicalResult ArgMinOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferArg(*this, r);
}

LogicalResult CumSumOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkScalar(*this, getAxis(), "axis")))
    return failure();
  auto x = shapeOf(getX());
  if (auto a = getConstantIntValues(getAxis()); a && x && a->size() == 1)
    if (failed(checkAxis(*this, (*a)[0], x->size())))
      return failure();
  r.push_back(getX().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and layout
//===----------------------------------------------------------------------===//

LogicalResult ShapeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto x = shapeOf(getData());
  if (!x) {
    r.push_back(RankedTensorType::get({kDyn}, i64));
    return success();
  }
  auto [start, end] = getDimRange(x->size());
  r.push_back(RankedTensorType::get({std::max<int64_t>(0, end - start)}, i64));
  return success();
}

LogicalResult SizeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  r.push_back(RankedTensorType::get({}, IntegerType::get(getContext(), 64)));
  return success();
}

LogicalResult ReshapeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  if (getAllowzero() != 0 && getAllowzero() != 1)
    return emitOpError() << "allowzero must be 0 or 1";
  if (failed(checkShapeOperand(*this, getShape(), "shape")))
    return failure();
  auto target = getConstantIntValues(getShape());
  if (!target) {
    auto len = staticLength(getShape());
    r.push_back(len ? Type(RankedTensorType::get(dynamicShape(*len), elt))
                    : Type(UnrankedTensorType::get(elt)));
    return success();
  }
  auto x = shapeOf(getData());
  int inferIdx = -1;
  bool hasZero = false;
  Shape out;
  for (auto [i, v] : llvm::enumerate(*target)) {
    if (v < -1)
      return emitOpError() << "shape entry " << v << " at index " << i
                           << " is invalid (must be >= -1)";
    if (v == -1) {
      if (inferIdx >= 0)
        return emitOpError()
               << "shape " << formatShape(*target) << " has more than one -1";
      inferIdx = i;
      out.push_back(kDyn);
      continue;
    }
    if (v == 0 && !getAllowzero()) {
      if (!x) {
        out.push_back(kDyn);
        continue;
      }
      if (i >= x->size())
        return emitOpError() << "shape entry 0 at index " << i
                             << " copies a dimension the input of rank "
                             << x->size() << " does not have";
      out.push_back((*x)[i]);
      continue;
    }
    hasZero |= v == 0;
    out.push_back(v);
  }
  if (getAllowzero() && hasZero && inferIdx >= 0)
    return emitOpError()
           << "with allowzero, shape cannot contain both 0 and -1";
  std::optional<int64_t> inCount = x ? getNumElements(*x) : std::nullopt;
  if (inferIdx >= 0) {
    Shape known = out;
    known.erase(known.begin() + inferIdx);
    auto rest = getNumElements(known);
    if (inCount && rest) {
      if (*rest == 0 || *inCount % *rest != 0)
        return emitOpError()
               << "cannot reshape " << formatShape(*x) << " (" << *inCount
               << " elements) to " << formatShape(*target);
      out[inferIdx] = *inCount / *rest;
    }
  } else if (auto outCount = getNumElements(out);
             inCount && outCount && *inCount != *outCount) {
    return emitOpError() << "cannot reshape " << formatShape(*x) << " ("
                         << *inCount << " elements) to " << formatShape(out)
                         << " (" << *outCount << " elements)";
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult FlattenOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getInput());
  auto x = shapeOf(getInput());
  if (!x) {
    r.push_back(RankedTensorType::get({kDyn, kDyn}, elt));
    return success();
  }
  int64_t rank = x->size(), axis = getAxis();
  if (axis < -rank || axis > rank)
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << rank;
  if (axis < 0)
    axis += rank;
  auto outer = getNumElements(ArrayRef<int64_t>(*x).take_front(axis));
  auto inner = getNumElements(ArrayRef<int64_t>(*x).drop_front(axis));
  if ((!outer || !inner) && llvm::none_of(*x, isDynamic))
    return emitOpError() << "flattening " << formatShape(*x)
                         << " overflows int64";
  r.push_back(RankedTensorType::get(
      {outer ? *outer : kDyn, inner ? *inner : kDyn}, elt));
  return success();
}

LogicalResult TransposeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  auto x = shapeOf(getData());
  if (!x) {
    if (auto p = getPerm())
      r.push_back(RankedTensorType::get(dynamicShape(p->size()), elt));
    else
      r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t rank = x->size();
  SmallVector<int64_t> perm = getPermutation(rank);
  SmallVector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOpError() << "perm has " << perm.size() << " entries for rank "
                         << rank;
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOpError() << "perm is not a permutation of [0, " << rank
                           << ")";
    seen[p] = true;
    out.push_back((*x)[p]);
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult SqueezeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  if (getAxes() && failed(check1D(*this, getAxes(), "axes")))
    return failure();
  auto x = shapeOf(getData());
  if (!x) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t rank = x->size();
  // No axes, or an empty list of them (as ONNX's inference and ONNX Runtime
  // read it): every dimension of extent 1 goes.
  auto axes = getAxes() ? getConstantIntValues(getAxes()) : std::nullopt;
  std::optional<int64_t> axesLength =
      getAxes() ? staticLength(getAxes()) : std::optional<int64_t>(0);
  if (axesLength == 0) {
    if (llvm::any_of(*x, isDynamic)) {
      r.push_back(UnrankedTensorType::get(elt));
      return success();
    }
    Shape out;
    for (int64_t d : *x)
      if (d != 1)
        out.push_back(d);
    r.push_back(RankedTensorType::get(out, elt));
    return success();
  }
  if (!axes) {
    std::optional<int64_t> len = axesLength;
    if (len && *len > rank)
      return emitOpError() << "'axes' has " << *len
                           << " entries but the input has rank " << rank;
    r.push_back(
        len ? Type(RankedTensorType::get(dynamicShape(rank - *len), elt))
            : Type(UnrankedTensorType::get(elt)));
    return success();
  }
  auto norm = checkAxes(*this, *axes, rank);
  if (failed(norm))
    return failure();
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(*norm, i)) {
      out.push_back((*x)[i]);
      continue;
    }
    if (!isDynamic((*x)[i]) && (*x)[i] != 1)
      return emitOpError() << "cannot squeeze axis " << i << " of extent "
                           << (*x)[i] << " in shape " << formatShape(*x);
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult UnsqueezeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  if (failed(check1D(*this, getAxes(), "axes")))
    return failure();
  auto x = shapeOf(getData());
  auto axes = getConstantIntValues(getAxes());
  auto len = staticLength(getAxes());
  // Compared without the sum, which a length near 2^63 overflowed (axes of
  // type [2^63 - 1]; found by the onnx-mutate fuzzer).
  if (x && len && *len > kMaxRank - int64_t(x->size()))
    return emitOpError() << "'axes' has " << *len << " entries, a result of "
                         << "more than the " << kMaxRank
                         << " dimensions HetPar supports (NumPy 2's "
                            "NPY_MAXDIMS)";
  if (!x || !axes) {
    r.push_back(x && len ? Type(RankedTensorType::get(
                               dynamicShape(x->size() + *len), elt))
                         : Type(UnrankedTensorType::get(elt)));
    return success();
  }
  int64_t outRank = x->size() + axes->size();
  auto norm = checkAxes(*this, *axes, outRank);
  if (failed(norm))
    return failure();
  Shape out;
  auto it = x->begin();
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(llvm::is_contained(*norm, i) ? 1 : *it++);
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult ConcatOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  if (!getAxisAttr())
    return emitOpError() << "requires attribute 'axis'";
  Type elt = elementTypeOf(getInputs()[0]);
  // The rank is that of the inputs other than legacy empty 1-D [0] tensors,
  // which contribute nothing (PyTorch's torch.cat and ONNX Runtime accept
  // them).
  auto isLegacyEmpty = [](const std::optional<Shape> &s) {
    return s && s->size() == 1 && (*s)[0] == 0;
  };
  std::optional<Shape> out;
  bool anyUnranked = false;
  SmallVector<Shape> shapes;
  for (Value v : getInputs()) {
    auto s = shapeOf(v);
    if (!s) {
      anyUnranked = true;
      continue;
    }
    shapes.push_back(*s);
  }
  SmallVector<Shape> real;
  for (const Shape &s : shapes)
    if (!isLegacyEmpty(s))
      real.push_back(s);
  if (real.empty() && !shapes.empty() && !anyUnranked)
    real.push_back(shapes.front());
  if (real.empty()) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t rank = real.front().size();
  auto axis = checkAxis(*this, getAxis(), rank);
  if (failed(axis))
    return failure();
  out = real.front();
  (*out)[*axis] = 0;
  for (const Shape &s : real) {
    if (static_cast<int64_t>(s.size()) != rank)
      return emitOpError() << "inputs have different ranks ("
                           << formatShape(real.front()) << " and "
                           << formatShape(s) << ")";
    for (int64_t i = 0; i < rank; ++i) {
      if (i == *axis) {
        if (isDynamic((*out)[i]) || isDynamic(s[i])) {
          (*out)[i] = kDyn;
        } else if (auto sum = llvm::checkedAdd((*out)[i], s[i])) {
          (*out)[i] = *sum;
        } else {
          return emitOpError() << "the concatenated extent overflows int64";
        }
        continue;
      }
      if (dimsConflict((*out)[i], s[i]))
        return emitOpError()
               << "inputs of shapes " << formatShape(real.front()) << " and "
               << formatShape(s) << " differ outside axis " << *axis;
      (*out)[i] = mergeDim((*out)[i], s[i]);
    }
  }
  if (anyUnranked)
    (*out)[*axis] = kDyn;
  r.push_back(RankedTensorType::get(*out, elt));
  return success();
}

LogicalResult SplitOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getInput());
  int64_t n = getNumResults();
  if (n == 0)
    return emitOpError() << "needs at least one result";
  if (getNumOutputs() && *getNumOutputs() != n)
    return emitOpError() << "num_outputs is " << *getNumOutputs()
                         << " but the op has " << n << " results";
  if (getSplit() && failed(check1D(*this, getSplit(), "split")))
    return failure();
  auto x = shapeOf(getInput());
  if (!x) {
    for (int64_t i = 0; i < n; ++i)
      r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto axis = checkAxis(*this, getAxis(), x->size());
  if (failed(axis))
    return failure();
  int64_t dim = (*x)[*axis];
  SmallVector<int64_t> sizes(n, kDyn);
  if (Value split = getSplit()) {
    if (auto len = staticLength(split); len && *len != n)
      return emitOpError() << "split has " << *len << " entries for " << n
                           << " results";
    if (auto s = getConstantIntValues(split)) {
      int64_t sum = 0;
      for (int64_t v : *s) {
        if (v < 0)
          return emitOpError() << "split sizes must be non-negative";
        auto next = llvm::checkedAdd(sum, v);
        if (!next)
          return emitOpError() << "split sizes overflow int64";
        sum = *next;
      }
      if (!isDynamic(dim) && sum != dim)
        return emitOpError() << "split sizes sum to " << sum << " but axis "
                             << *axis << " has extent " << dim;
      sizes.assign(s->begin(), s->end());
    }
  } else if (!isDynamic(dim)) {
    if (getNumOutputs()) {
      int64_t chunk = (dim + n - 1) / n;
      int64_t last = dim - chunk * (n - 1);
      if (last < 0)
        return emitOpError() << "cannot split extent " << dim << " into " << n
                             << " parts of " << chunk;
      sizes.assign(n, chunk);
      sizes.back() = last;
    } else {
      if (dim % n != 0)
        return emitOpError() << "extent " << dim << " of axis " << *axis
                             << " does not split into " << n << " equal parts";
      sizes.assign(n, dim / n);
    }
  }
  for (int64_t s : sizes) {
    Shape out = *x;
    out[*axis] = s;
    r.push_back(RankedTensorType::get(out, elt));
  }
  return success();
}

/// ONNX Slice extent of one axis (opset 13 clamping rules).
static int64_t sliceExtent(int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  // ceil(distance / |step|) in 128 bits: a step of INT64_MAX must not overflow.
  auto count = [](__int128 distance, __int128 stride) {
    return static_cast<int64_t>((distance + stride - 1) / stride);
  };
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return end <= start ? 0 : count(end - start, step);
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return start <= end ? 0
                      : count(static_cast<__int128>(start) - end,
                              -static_cast<__int128>(step));
}

LogicalResult SliceOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  SmallVector<Value> parts{getStarts(), getEnds()};
  if (getAxes())
    parts.push_back(getAxes());
  if (getSteps())
    parts.push_back(getSteps());
  std::optional<int64_t> len;
  for (Value v : parts) {
    if (failed(check1D(*this, v, "starts/ends/axes/steps")))
      return failure();
    if (elementTypeOf(v) != elementTypeOf(getStarts()))
      return emitOpError()
             << "starts, ends, axes and steps must have one element type";
    if (auto l = staticLength(v)) {
      if (len && *len != *l)
        return emitOpError()
               << "starts, ends, axes and steps must have one length";
      len = l;
    }
  }
  auto x = shapeOf(getData());
  if (!x) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t rank = x->size();
  auto starts = getConstantIntValues(getStarts());
  auto ends = getConstantIntValues(getEnds());
  std::optional<SmallVector<int64_t>> axes, steps;
  if (getAxes())
    axes = getConstantIntValues(getAxes());
  else if (len)
    axes = llvm::to_vector(llvm::seq<int64_t>(0, *len));
  if (getSteps())
    steps = getConstantIntValues(getSteps());
  else if (len)
    steps = SmallVector<int64_t>(*len, 1);
  if (!axes) {
    r.push_back(RankedTensorType::get(dynamicShape(rank), elt));
    return success();
  }
  auto norm = checkAxes(*this, *axes, rank);
  if (failed(norm))
    return failure();
  if (steps && llvm::is_contained(*steps, 0))
    return emitOpError() << "steps cannot be 0";
  Shape out = *x;
  for (auto [i, a] : llvm::enumerate(*norm)) {
    if (!starts || !ends || !steps || isDynamic((*x)[a])) {
      out[a] = kDyn;
      continue;
    }
    out[a] = sliceExtent((*x)[a], (*starts)[i], (*ends)[i], (*steps)[i]);
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult GatherOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  auto x = shapeOf(getData()), idx = shapeOf(getIndices());
  if (x && x->empty())
    return emitOpError() << "data must have rank >= 1";
  if (!x || !idx) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto axis = checkAxis(*this, getAxis(), x->size());
  if (failed(axis))
    return failure();
  if (failed(checkIndexTuples(*this, getIndices(), *x, *axis, 1)))
    return failure();
  Shape out(x->begin(), x->begin() + *axis);
  out.append(idx->begin(), idx->end());
  out.append(x->begin() + *axis + 1, x->end());
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult GatherElementsOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  auto x = shapeOf(getData()), idx = shapeOf(getIndices());
  if (x && idx && x->size() != idx->size())
    return emitOpError() << "data and indices must have the same rank";
  if (!x) {
    r.push_back(tensorOf(idx, elt));
    return success();
  }
  auto axis = checkAxis(*this, getAxis(), x->size());
  if (failed(axis))
    return failure();
  if (failed(checkIndexTuples(*this, getIndices(), *x, *axis, 1)))
    return failure();
  r.push_back(tensorOf(idx, elt));
  return success();
}

LogicalResult ExpandOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getInput());
  if (failed(checkShapeOperand(*this, getShape(), "shape")))
    return failure();
  auto x = shapeOf(getInput());
  auto target = getConstantIntValues(getShape());
  if (!x || !target) {
    auto len = staticLength(getShape());
    if (x && len)
      r.push_back(RankedTensorType::get(
          dynamicShape(std::max<int64_t>(x->size(), *len)), elt));
    else
      r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  for (int64_t v : *target)
    if (v < 0)
      return emitOpError() << "shape " << formatShape(*target)
                           << " has a negative entry";
  auto out = broadcastShapes(*x, *target);
  if (!out)
    return emitOpError() << "cannot expand " << formatShape(*x) << " to "
                         << formatShape(*target);
  r.push_back(RankedTensorType::get(*out, elt));
  return success();
}

LogicalResult TileOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getInput());
  if (failed(check1D(*this, getRepeats(), "repeats")))
    return failure();
  auto x = shapeOf(getInput());
  if (!x) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  if (auto len = staticLength(getRepeats()); len && *len != (int64_t)x->size())
    return emitOpError() << "repeats has " << *len << " entries for rank "
                         << x->size();
  Shape out = *x;
  auto reps = getConstantIntValues(getRepeats());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!reps || isDynamic(out[i])) {
      out[i] = kDyn;
      continue;
    }
    if ((*reps)[i] < 0)
      return emitOpError() << "repeats must be non-negative";
    auto product = llvm::checkedMul(out[i], (*reps)[i]);
    if (!product)
      return emitOpError() << "tiling axis " << i << " overflows int64";
    out[i] = *product;
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult PadOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return emitOpError() << "unknown mode \"" << mode << "\"";
  if (failed(check1D(*this, getPads(), "pads")) ||
      failed(checkScalar(*this, getConstantValue(), "constant_value")))
    return failure();
  auto x = shapeOf(getData());
  if (!x) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  int64_t rank = x->size();
  SmallVector<int64_t> axes;
  if (getAxes()) {
    auto a = getConstantIntValues(getAxes());
    if (!a) {
      r.push_back(RankedTensorType::get(dynamicShape(rank), elt));
      return success();
    }
    auto n = checkAxes(*this, *a, rank);
    if (failed(n))
      return failure();
    axes = *n;
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  auto pads = getConstantIntValues(getPads());
  if (pads && pads->size() != 2 * axes.size())
    return emitOpError() << "pads has " << pads->size() << " entries for "
                         << axes.size() << " padded axes";
  Shape out = *x;
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (!pads || isDynamic(out[a])) {
      out[a] = kDyn;
      continue;
    }
    auto padded = llvm::checkedAdd(out[a], (*pads)[i]);
    if (padded)
      padded = llvm::checkedAdd(*padded, (*pads)[i + axes.size()]);
    if (!padded)
      return emitOpError() << "padding axis " << a << " overflows int64";
    out[a] = *padded;
    if (out[a] < 0)
      return emitOpError() << "pads crop axis " << a << " below zero";
  }
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult ConstantOfShapeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = Float32Type::get(getContext());
  if (auto v = getValue()) {
    auto t = llvm::cast<ShapedType>(v->getType());
    if (t.getNumElements() != 1)
      return emitOpError() << "value must have exactly one element";
    elt = t.getElementType();
  }
  if (failed(checkShapeOperand(*this, getInput(), "input")))
    return failure();
  if (auto shape = getConstantIntValues(getInput())) {
    for (int64_t d : *shape)
      if (d < 0)
        return emitOpError()
               << "shape " << formatShape(*shape) << " has a negative entry";
    r.push_back(RankedTensorType::get(*shape, elt));
    return success();
  }
  auto len = staticLength(getInput());
  r.push_back(len ? Type(RankedTensorType::get(dynamicShape(*len), elt))
                  : Type(UnrankedTensorType::get(elt)));
  return success();
}

/// Number of elements of Range(start, limit, delta): max(ceil((limit - start) /
/// delta), 0), exactly for integers (in 128-bit arithmetic), or failure when it
/// is not a finite count that fits int64.
static FailureOr<int64_t> rangeCount(Operation *op, ElementsAttr start,
                                     ElementsAttr limit, ElementsAttr delta) {
  if (llvm::isa<IntegerType>(
          llvm::cast<ShapedType>(start.getType()).getElementType())) {
    auto s = readIntElements(start), l = readIntElements(limit),
         d = readIntElements(delta);
    if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1)
      return failure();
    __int128 diff = static_cast<__int128>((*l)[0]) - (*s)[0], step = (*d)[0];
    if (step == 0)
      return op->emitOpError() << "delta cannot be 0";
    if (step < 0) {
      diff = -diff;
      step = -step;
    }
    __int128 count = diff <= 0 ? 0 : (diff + step - 1) / step;
    if (count > std::numeric_limits<int64_t>::max())
      return op->emitOpError() << "Range has more elements than fit in 64 bits";
    return static_cast<int64_t>(count);
  }
  auto s = readFloatElements(start), l = readFloatElements(limit),
       d = readFloatElements(delta);
  if (!s || !l || !d || s->size() != 1 || l->size() != 1 || d->size() != 1)
    return failure();
  if (!std::isfinite((*s)[0]) || !std::isfinite((*l)[0]) ||
      !std::isfinite((*d)[0]))
    return op->emitOpError() << "start, limit and delta must be finite";
  if ((*d)[0] == 0)
    return op->emitOpError() << "delta cannot be 0";
  double count = std::ceil(((*l)[0] - (*s)[0]) / (*d)[0]);
  if (!(count < 9.2e18))
    return op->emitOpError() << "Range has more elements than fit in 64 bits";
  return static_cast<int64_t>(std::max(0.0, count));
}

LogicalResult RangeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getStart());
  for (auto [v, name] : {std::pair<Value, StringRef>{getStart(), "start"},
                         {getLimit(), "limit"},
                         {getDelta(), "delta"}})
    if (failed(checkScalar(*this, v, name)))
      return failure();
  int64_t n = kDyn;
  ElementsAttr start = getConstantElements(getStart()),
               limit = getConstantElements(getLimit()),
               delta = getConstantElements(getDelta());
  if (auto d = readFloatElements(delta); d && d->size() == 1 && (*d)[0] == 0)
    return emitOpError() << "delta cannot be 0";
  if (start && limit && delta) {
    auto count = rangeCount(*this, start, limit, delta);
    if (failed(count))
      return failure();
    n = *count;
  }
  r.push_back(RankedTensorType::get({n}, elt));
  return success();
}

LogicalResult OneHotOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getValues());
  if (failed(checkScalar(*this, getDepth(), "depth")))
    return failure();
  if (auto v = shapeOf(getValues()); v) {
    auto n = getNumElements(*v);
    if (v->size() != 1 || (n && *n != 2))
      return emitOpError() << "'values' must hold 2 elements ([off, on]), got "
                              "shape "
                           << formatShape(*v);
  }
  int64_t depth = kDyn;
  if (auto d = readFloatElements(getConstantElements(getDepth()));
      d && d->size() == 1) {
    double truncated = std::trunc((*d)[0]);
    if (!(truncated >= 1) || truncated > static_cast<double>(INT32_MAX))
      return emitOpError() << "depth must be a positive number of classes "
                              "(at most 2^31 - 1), got "
                           << (*d)[0];
    depth = static_cast<int64_t>(truncated);
  }
  auto idx = shapeOf(getIndices());
  if (!idx) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  auto axis = checkAxis(*this, getAxis(), idx->size() + 1);
  if (failed(axis))
    return failure();
  Shape out(idx->begin(), idx->end());
  out.insert(out.begin() + *axis, depth);
  r.push_back(RankedTensorType::get(out, elt));
  return success();
}

LogicalResult TriluOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto x = shapeOf(getInput());
  if (x && x->size() < 2)
    return emitOpError() << "input must have rank >= 2";
  if (getUpper() != 0 && getUpper() != 1)
    return emitOpError() << "upper must be 0 or 1";
  if (failed(checkScalar(*this, getK(), "k")))
    return failure();
  r.push_back(getInput().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// NonZero and Einsum
//===----------------------------------------------------------------------===//

LogicalResult NonZeroOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto x = shapeOf(getX());
  // ONNX Runtime treats a scalar as a one-element vector: one index row.
  int64_t rank = x ? std::max<int64_t>(1, x->size()) : kDyn;
  int64_t count = kDyn;
  // A constant input: the count is known (and the op folds).
  if (ElementsAttr c = getConstantElements(getX())) {
    if (auto values = readFloatElements(c))
      count = llvm::count_if(*values, [](double v) { return v != 0.0; });
  }
  r.push_back(RankedTensorType::get({rank, count}, i64));
  return success();
}

namespace {
/// A parsed einsum term: its letters and where "..." stands (-1: nowhere).
struct EinsumTerm {
  std::string letters;
  int ellipsisAt = -1;
};

FailureOr<EinsumTerm> parseEinsumTerm(Operation *op, StringRef text) {
  EinsumTerm t;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i).starts_with("...")) {
      if (t.ellipsisAt >= 0)
        return op->emitOpError() << "term '" << text << "' has two '...'";
      t.ellipsisAt = t.letters.size();
      i += 3;
      continue;
    }
    char c = text[i++];
    if (!llvm::isAlpha(c))
      return op->emitOpError()
             << "equation term '" << text << "' has the character '" << c
             << "' (terms are letters and '...')";
    t.letters += c;
  }
  return t;
}
} // namespace

LogicalResult EinsumOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  Type elt = elementTypeOf(getInputs()[0]);
  std::string eq;
  for (char c : getEquation())
    if (c != ' ')
      eq += c;
  auto [lhs, rhs] = StringRef(eq).split("->");
  bool explicitOutput = StringRef(eq).contains("->");
  SmallVector<StringRef> termTexts;
  lhs.split(termTexts, ',');
  if (termTexts.size() != getInputs().size())
    return emitOpError() << "equation '" << getEquation() << "' has "
                         << termTexts.size() << " input terms for "
                         << getInputs().size() << " inputs";
  llvm::StringMap<int64_t> extent; // letter -> extent
  std::map<char, int> occurrences;
  Shape ellipsis;
  bool anyUnranked = false;
  for (auto [text, input] : llvm::zip(termTexts, getInputs())) {
    auto term = parseEinsumTerm(*this, text);
    if (failed(term))
      return failure();
    for (char c : term->letters)
      ++occurrences[c];
    auto x = shapeOf(input);
    if (!x) {
      anyUnranked = true;
      continue;
    }
    int64_t named = term->letters.size();
    int64_t extra = static_cast<int64_t>(x->size()) - named;
    if (extra < 0 || (term->ellipsisAt < 0 && extra != 0))
      return emitOpError() << "term '" << text
                           << "' does not fit an input of rank " << x->size();
    int64_t pos = 0;
    for (int64_t i = 0; i < named; ++i) {
      if (i == term->ellipsisAt) {
        auto b =
            broadcastShapes(ellipsis, ArrayRef<int64_t>(*x).slice(pos, extra));
        if (!b)
          return emitOpError()
                 << "the '...' axes of the inputs do not broadcast";
        ellipsis = *b;
        pos += extra;
      }
      std::string key(1, term->letters[i]);
      int64_t d = (*x)[pos++];
      auto [it, inserted] = extent.try_emplace(key, d);
      if (!inserted) {
        if (dimsConflict(it->second, d))
          return emitOpError() << "axis '" << key << "' has extents "
                               << it->second << " and " << d;
        it->second = mergeDim(it->second, d);
      }
    }
    if (term->ellipsisAt == named) {
      auto b =
          broadcastShapes(ellipsis, ArrayRef<int64_t>(*x).slice(pos, extra));
      if (!b)
        return emitOpError() << "the '...' axes of the inputs do not broadcast";
      ellipsis = *b;
    }
  }
  EinsumTerm out;
  if (explicitOutput) {
    auto parsed = parseEinsumTerm(*this, rhs);
    if (failed(parsed))
      return failure();
    out = *parsed;
    std::set<char> seen;
    for (char c : out.letters) {
      if (!occurrences.count(c))
        return emitOpError()
               << "output axis '" << c << "' is not an input axis";
      if (!seen.insert(c).second)
        return emitOpError() << "output axis '" << c << "' appears twice";
    }
  } else {
    out.ellipsisAt = 0;
    for (auto [c, n] : occurrences)
      if (n == 1)
        out.letters += c;
  }
  if (anyUnranked) {
    r.push_back(UnrankedTensorType::get(elt));
    return success();
  }
  Shape result;
  for (size_t i = 0; i <= out.letters.size(); ++i) {
    if (static_cast<int>(i) == out.ellipsisAt)
      result.append(ellipsis.begin(), ellipsis.end());
    if (i < out.letters.size())
      result.push_back(extent.lookup(std::string(1, out.letters[i])));
  }
  r.push_back(RankedTensorType::get(result, elt));
  return success();
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

LogicalResult GatherGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  ArrayRef<int64_t> shape = getShape();
  if (shape.empty())
    return emitOpError() << "shape must have rank >= 1";
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }))
    return emitOpError() << "shape " << formatShape(shape)
                         << " has a negative extent";
  auto axis = checkAxis(*this, getAxis(), shape.size());
  if (failed(axis))
    return failure();
  auto dy = shapeOf(getDY()), idx = shapeOf(getIndices());
  if (dy && idx) {
    Shape expected(shape.begin(), shape.begin() + *axis);
    expected.append(idx->begin(), idx->end());
    expected.append(shape.begin() + *axis + 1, shape.end());
    if (failed(verifyCompatibleShape(*dy, expected)))
      return emitOpError() << "dY has shape " << formatShape(*dy)
                           << " but gathering indices " << formatShape(*idx)
                           << " from " << formatShape(shape) << " gives "
                           << formatShape(expected);
  }
  r.push_back(RankedTensorType::get(shape, elementTypeOf(getDY())));
  return success();
}

/// dY of a windowed op's gradient must have the forward result's shape.
static LogicalResult checkResultGradient(Operation *op, Value dY,
                                         const std::optional<Shape> &y) {
  auto dy = shapeOf(dY);
  if (dy && y && failed(verifyCompatibleShape(*dy, *y)))
    return op->emitOpError()
           << "dY has shape " << formatShape(*dy)
           << " but the forward result has shape " << formatShape(*y);
  return success();
}

/// dY and the other float operands of a gradient share one element type.
static LogicalResult checkSameElementType(Operation *op, ValueRange values) {
  Type elt = elementTypeOf(values.front());
  for (Value v : values.drop_front())
    if (elementTypeOf(v) != elt)
      return op->emitOpError() << "operands must have one element type, got "
                               << elt << " and " << elementTypeOf(v);
  return success();
}

LogicalResult ConvGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkSameElementType(*this, {getDY(), getX(), getW()})))
    return failure();
  auto y = convShape(*this);
  if (failed(y) || failed(checkResultGradient(*this, getDY(), *y)))
    return failure();
  Type elt = elementTypeOf(getDY());
  auto wt = shapeOf(getW());
  r.push_back(tensorOf(shapeOf(getX()), elt));
  r.push_back(tensorOf(wt, elt));
  r.push_back(RankedTensorType::get({wt ? (*wt)[0] : kDyn}, elt));
  return success();
}

LogicalResult MaxPoolGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkSameElementType(*this, {getDY(), getX()})))
    return failure();
  auto x = shapeOf(getX());
  if (x) {
    auto y = poolShape(*this, *x);
    if (failed(y) || failed(checkResultGradient(*this, getDY(), Shape(*y))))
      return failure();
  }
  r.push_back(getX().getType());
  return success();
}

LogicalResult AveragePoolGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  ArrayRef<int64_t> x = getShape();
  if (llvm::any_of(x, [](int64_t d) { return d < 0; }))
    return emitOpError() << "shape " << formatShape(x)
                         << " has a negative extent";
  if (getCountIncludePad() != 0 && getCountIncludePad() != 1)
    return emitOpError() << "count_include_pad must be 0 or 1";
  auto y = poolShape(*this, x);
  if (failed(y) || failed(checkResultGradient(*this, getDY(), Shape(*y))))
    return failure();
  r.push_back(RankedTensorType::get(x, elementTypeOf(getDY())));
  return success();
}

/// The gradients of the row-wise normalizations: `dY` has the shape of the
/// forward's tensor `x` (Y for the softmaxes, X for LayerNormalization) and
/// its element type; `axis` is in range for x's rank. Returns the
/// normalized axis, or std::nullopt when x's rank is unknown.
static FailureOr<std::optional<int64_t>> checkRowGradient(Operation *op,
                                                          Value dY, Value x,
                                                          StringRef xName,
                                                          int64_t axis) {
  if (failed(checkSameElementType(op, {dY, x})))
    return failure();
  auto dy = shapeOf(dY), xs = shapeOf(x);
  if (dy && xs && failed(verifyCompatibleShape(*dy, *xs)))
    return op->emitOpError() << "dY has shape " << formatShape(*dy) << " but "
                             << xName << " has shape " << formatShape(*xs);
  if (!xs)
    return std::optional<int64_t>();
  auto a = checkAxis(op, axis, xs->size());
  if (failed(a))
    return failure();
  return std::optional<int64_t>(*a);
}

template <typename SoftmaxLikeGrad>
static LogicalResult inferSoftmaxGrad(SoftmaxLikeGrad op,
                                      SmallVectorImpl<Type> &r) {
  if (failed(checkRowGradient(op, op.getDY(), op.getY(), "Y", op.getAxis())))
    return failure();
  r.push_back(op.getY().getType());
  return success();
}
LogicalResult SoftmaxGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferSoftmaxGrad(*this, r);
}
LogicalResult LogSoftmaxGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  return inferSoftmaxGrad(*this, r);
}

LogicalResult
LayerNormalizationGradOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  auto axis = checkRowGradient(*this, getDY(), getX(), "X", getAxis());
  if (failed(axis) || failed(checkSameElementType(*this, {getX(), getScale()})))
    return failure();
  auto x = shapeOf(getX()), scale = shapeOf(getScale());
  if (x && scale) {
    ArrayRef<int64_t> normalized = ArrayRef<int64_t>(*x).drop_front(**axis);
    if (failed(verifyCompatibleShape(*scale, normalized)))
      return emitOpError() << "Scale has shape " << formatShape(*scale)
                           << " but the normalized shape (X's axes from "
                           << **axis << ") is " << formatShape(normalized);
  }
  r.push_back(getX().getType());
  r.append(2, getScale().getType());
  return success();
}

/// The operands of an optimizer update: the updated tensors share one type;
/// lr and grad_scale are float32 scalars, step an int64 scalar.
static LogicalResult checkOptimizerOperands(Operation *op, ValueRange tensors,
                                            Value lr, Value step,
                                            Value gradScale) {
  Type t = tensors.front().getType();
  for (Value v : tensors.drop_front())
    if (v.getType() != t)
      return op->emitOpError() << "updates tensors of one type; got " << t
                               << " and " << v.getType();
  auto scalarOf = [](Value v, Type elt) {
    auto s = llvm::dyn_cast<RankedTensorType>(v.getType());
    return s && s.getRank() == 0 && s.getElementType() == elt;
  };
  Builder b(op->getContext());
  if (!scalarOf(lr, b.getF32Type()) || !scalarOf(gradScale, b.getF32Type()))
    return op->emitOpError() << "lr and grad_scale must be float32 scalars";
  if (!scalarOf(step, b.getI64Type()))
    return op->emitOpError() << "step must be an int64 scalar";
  return success();
}

LogicalResult AdamWOptimizerOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkOptimizerOperands(
          *this, {getParam(), getGrad(), getExpAvg(), getExpAvgSq()}, getLr(),
          getStep(), getGradScale())))
    return failure();
  double b1 = getBeta1(), b2 = getBeta2();
  if (!(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
    return emitOpError() << "beta1 and beta2 must be in [0, 1)";
  r.append(3, getParam().getType());
  return success();
}

LogicalResult SGDOptimizerOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  SmallVector<Value> tensors{getParam(), getGrad()};
  if (getMomentumBuffer())
    tensors.push_back(getMomentumBuffer());
  if (failed(checkOptimizerOperands(*this, tensors, getLr(), getStep(),
                                    getGradScale())))
    return failure();
  double m = getMomentum();
  if (bool(getMomentumBuffer()) != (m != 0))
    return emitOpError() << "has a momentum buffer exactly when momentum is "
                            "not 0";
  if (getNesterov() && m <= 0)
    return emitOpError() << "nesterov needs momentum > 0";
  r.append(getMomentumBuffer() ? 2 : 1, getParam().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// GatherND, ScatterND, ScatterElements
//===----------------------------------------------------------------------===//

namespace {

/// A `reduction` attribute of the scatter ops: none, add, mul, max or min.
LogicalResult checkReduction(Operation *op, StringRef reduction) {
  if (llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return success();
  return op->emitOpError() << "reduction '" << reduction
                           << "' is not none, add, mul, max or min";
}

/// Two extents that must agree where both are known.
bool mismatch(int64_t a, int64_t b) {
  return !isDynamic(a) && !isDynamic(b) && a != b;
}

/// Two shapes that differ in rank or in an extent both know.
bool shapesDisagree(const Shape &a, const Shape &b) {
  return a.size() != b.size() || llvm::any_of(llvm::zip(a, b), [](auto p) {
           return mismatch(std::get<0>(p), std::get<1>(p));
         });
}

/// The checks every scatter shares: its `reduction`, and updates of the
/// data's element type.
LogicalResult checkScatter(Operation *op, StringRef reduction, Value data,
                           Value updates) {
  if (failed(checkReduction(op, reduction)))
    return failure();
  if (elementTypeOf(data) != elementTypeOf(updates))
    return op->emitOpError() << "updates must have the data's element type";
  return success();
}

} // namespace

LogicalResult GatherNDOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getData());
  auto x = shapeOf(getData()), idx = shapeOf(getIndices());
  // ONNX: indices of rank q >= 1, its last dimension the tuple's length.
  if (idx && idx->empty())
    return emitOpError() << "indices must have rank 1 or more (index tuples "
                            "along its last dimension), got a scalar";
  if (!x || !idx || isDynamic(idx->back())) {
    r.push_back(tensorOf(std::nullopt, elt));
    return success();
  }
  int64_t b = getBatchDims(), k = idx->back();
  int64_t rx = x->size(), ri = idx->size();
  if (b < 0 || b >= std::min(rx, ri))
    return emitOpError() << "batch_dims " << b << " must lie in [0, "
                         << std::min(rx, ri) - 1 << "]";
  if (k < 1 || k > rx - b)
    return emitOpError() << "index tuples of " << k
                         << " entries for data of rank " << rx
                         << " and batch_dims " << b << " (from 1 to " << rx - b
                         << ")";
  for (int64_t i = 0; i < b; ++i)
    if (mismatch((*x)[i], (*idx)[i]))
      return emitOpError() << "batch axis " << i << " has extent " << (*x)[i]
                           << " in data but " << (*idx)[i] << " in indices";
  if (failed(checkIndexTuples(*this, getIndices(), *x, b, k)))
    return failure();
  Shape out(idx->begin(), idx->end() - 1);
  out.append(x->begin() + b + k, x->end());
  r.push_back(tensorOf(out, elt));
  return success();
}

LogicalResult ScatterNDOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkScatter(*this, getReduction(), getData(), getUpdates())))
    return failure();
  auto x = shapeOf(getData()), idx = shapeOf(getIndices()),
       upd = shapeOf(getUpdates());
  // ONNX: indices of rank q >= 1 (a scalar reached code generation, which
  // read its last extent; found by a review).
  if (idx && idx->empty())
    return emitOpError() << "indices must have rank 1 or more (index tuples "
                            "along its last dimension), got a scalar";
  if (x && idx && !isDynamic(idx->back())) {
    int64_t k = idx->back(), rx = x->size();
    if (k < 1 || k > rx)
      return emitOpError() << "index tuples of " << k
                           << " entries for data of rank " << rx
                           << " (from 1 to " << rx << ")";
    Shape want(idx->begin(), idx->end() - 1);
    want.append(x->begin() + k, x->end());
    if (upd && shapesDisagree(*upd, want))
      return emitOpError() << "updates have shape " << formatShape(*upd)
                           << ", not " << formatShape(want);
    if (failed(checkIndexTuples(*this, getIndices(), *x, 0, k)))
      return failure();
  }
  r.push_back(getData().getType());
  return success();
}

LogicalResult ScatterElementsOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  if (failed(checkScatter(*this, getReduction(), getData(), getUpdates())))
    return failure();
  auto x = shapeOf(getData()), idx = shapeOf(getIndices()),
       upd = shapeOf(getUpdates());
  if (idx && upd && shapesDisagree(*idx, *upd))
    return emitOpError() << "indices " << formatShape(*idx) << " and updates "
                         << formatShape(*upd) << " must have one shape";
  if (x && idx) {
    if (x->size() != idx->size() || x->empty())
      return emitOpError() << "data and indices must have the same rank >= 1";
    auto axis = checkAxis(*this, getAxis(), x->size());
    if (failed(axis))
      return failure();
    for (auto [d, e] : llvm::zip(*x, *idx))
      if (!isDynamic(d) && !isDynamic(e) && e > d)
        return emitOpError() << "indices " << formatShape(*idx)
                             << " are larger than data " << formatShape(*x);
    if (failed(checkIndexTuples(*this, getIndices(), *x, *axis, 1)))
      return failure();
  }
  r.push_back(getData().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

LogicalResult ResizeOp::getAxes(SmallVectorImpl<int64_t> &extents,
                                SmallVectorImpl<double> &scales,
                                std::string &reason) {
  auto x = shapeOf(getX());
  if (!x || llvm::any_of(*x, isDynamic)) {
    reason = "X has no static shape";
    return failure();
  }
  int64_t rank = x->size();
  SmallVector<int64_t> axes;
  if (auto given = getAxes())
    for (int64_t a : *given) {
      auto n = normalizeAxis(a, rank);
      if (!n) {
        reason = "axis " + std::to_string(a) + " is out of range";
        return failure();
      }
      axes.push_back(*n);
    }
  else
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  extents.assign(x->begin(), x->end());
  scales.assign(rank, 1.0);
  std::optional<SmallVector<double>> scaleValues;
  if (getScales() &&
      llvm::cast<ShapedType>(getScales().getType()).getNumElements() != 0) {
    ElementsAttr c = getConstantElements(getScales());
    auto v = c ? readFloatElements(c) : std::nullopt;
    if (!v) {
      reason = "scales are not constants";
      return failure();
    }
    scaleValues = SmallVector<double>(v->begin(), v->end());
  }
  std::optional<SmallVector<int64_t>> sizeValues;
  auto sizesType =
      getSizes() ? llvm::dyn_cast<ShapedType>(getSizes().getType()) : nullptr;
  if (scaleValues && sizesType &&
      (!sizesType.hasStaticShape() || sizesType.getNumElements() != 0)) {
    reason = "both scales and sizes are given (ONNX takes one of them)";
    return failure();
  }
  if (!scaleValues && getSizes()) {
    sizeValues = getConstantIntValues(getSizes());
    if (!sizeValues) {
      reason = "sizes are not constants";
      return failure();
    }
  }
  if (!scaleValues && !sizeValues) {
    reason = "neither scales nor sizes is given";
    return failure();
  }
  size_t n = scaleValues ? scaleValues->size() : sizeValues->size();
  if (n != axes.size()) {
    reason = std::to_string(n) + " scales or sizes for " +
             std::to_string(axes.size()) + " axes";
    return failure();
  }
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (scaleValues) {
      double s = (*scaleValues)[i];
      if (!(s > 0)) {
        reason = "scale " + std::to_string(s) + " is not positive";
        return failure();
      }
      scales[a] = s;
      // Checked before the conversion: an extent past int64 came out as
      // INT64_MIN, which reads as a dynamic extent (found by a review
      // helper); 2^62 leaves room for the arithmetic of any extent.
      double e = std::floor(static_cast<double>((*x)[a]) * s);
      if (!(e < 0x1p62)) {
        reason = llvm::formatv("scale {0:e} makes axis {1}'s extent {2:e}, "
                               "past 2^62",
                               s, a, e)
                     .str();
        return failure();
      }
      extents[a] = static_cast<int64_t>(e);
    } else {
      int64_t e = (*sizeValues)[i];
      if (e < 1) {
        reason = "size " + std::to_string(e) + " is not positive";
        return failure();
      }
      extents[a] = e;
      scales[a] = static_cast<double>(e) / static_cast<double>((*x)[a]);
    }
  }
  return success();
}

LogicalResult ResizeOp::inferResultTypes(SmallVectorImpl<Type> &r) {
  Type elt = elementTypeOf(getX());
  if (!llvm::is_contained({"nearest", "linear", "cubic"}, getMode()))
    return emitOpError() << "mode '" << getMode()
                         << "' is not nearest, linear or cubic";
  SmallVector<int64_t> extents;
  SmallVector<double> scales;
  std::string reason;
  if (failed(getAxes(extents, scales, reason))) {
    // Constant scales or sizes that break the constraints are an error.
    if (reason != "X has no static shape" &&
        !StringRef(reason).ends_with("are not constants"))
      return emitOpError() << reason;
    // Unknown until X is static and the scales or sizes are constants; X's
    // rank stays.
    auto x = shapeOf(getX());
    r.push_back(tensorOf(
        x ? std::optional<Shape>(dynamicShape(x->size())) : std::nullopt, elt));
    return success();
  }
  r.push_back(RankedTensorType::get(extents, elt));
  return success();
}
