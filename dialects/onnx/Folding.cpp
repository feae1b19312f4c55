//===- Folding.cpp - folders of the onnx ops -----------------------------===//
//
// Folders evaluate ops whose operands are constants (and Shape/Size of tensors
// with static shapes), so that the shape computations of models exported with
// dynamic axes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) disappear
// once the input shapes are known. Results larger than kMaxFoldElements are not
// folded: folding is for shape arithmetic and masks, not for materializing big
// tensors at compile time.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::onnx;

namespace {

/// A constant operand read into int64 or double values, with its shape.
struct ConstTensor {
  SmallVector<int64_t> shape;
  bool isFloat = false;
  SmallVector<int64_t> ints;
  SmallVector<double> fps;
  int64_t size() const { return isFloat ? fps.size() : ints.size(); }
};

std::optional<ConstTensor> readConst(Attribute attr) {
  auto elements = llvm::dyn_cast_if_present<ElementsAttr>(attr);
  if (!elements)
    return std::nullopt;
  auto type = llvm::cast<ShapedType>(elements.getType());
  auto n = type.hasRank() ? getNumElements(type.getShape()) : std::nullopt;
  if (!n || *n > kMaxFoldElements)
    return std::nullopt;
  ConstTensor c;
  c.shape.assign(type.getShape().begin(), type.getShape().end());
  c.isFloat = llvm::isa<FloatType>(type.getElementType());
  if (c.isFloat) {
    auto v = readFloatElements(elements);
    if (!v)
      return std::nullopt;
    c.fps = std::move(*v);
  } else {
    auto v = readIntElements(elements);
    if (!v)
      return std::nullopt;
    c.ints = std::move(*v);
  }
  return c;
}

/// The static result type of `v` when it is small enough to fold into.
RankedTensorType foldableType(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return {};
  // Checked: a static shape's element count can overflow int64.
  auto n = getNumElements(t.getShape());
  if (!n || *n > kMaxFoldElements)
    return {};
  return t;
}

/// Wraps an integer value into the element type's width (two's complement) so
/// that DenseElementsAttr gets a value of the right bit width.
APInt toAPInt(IntegerType t, int64_t v) {
  return APInt(t.getWidth(), static_cast<uint64_t>(v),
               /*isSigned=*/!t.isUnsigned(),
               /*implicitTrunc=*/true);
}

/// A constant of integer type `t`; null when a value does not fit the type
/// (folding INT32_MIN / -1 in int32 must not wrap silently).
DenseElementsAttr makeInts(RankedTensorType t, ArrayRef<int64_t> values) {
  auto it = llvm::cast<IntegerType>(t.getElementType());
  unsigned w = it.getWidth();
  SmallVector<APInt> ap;
  ap.reserve(values.size());
  for (int64_t v : values) {
    if (w == 1) {
      ap.push_back(APInt(1, v != 0));
      continue;
    }
    if (w < 64) {
      bool fits = it.isUnsigned() ? v >= 0 && v < (int64_t(1) << w)
                                  : v >= -(int64_t(1) << (w - 1)) &&
                                        v < (int64_t(1) << (w - 1));
      if (!fits)
        return {};
    } else if (it.isUnsigned() && v < 0) {
      return {};
    }
    ap.push_back(toAPInt(it, v));
  }
  return DenseElementsAttr::get(t, ap);
}

DenseElementsAttr makeFloats(RankedTensorType t, ArrayRef<double> values) {
  auto ft = llvm::cast<FloatType>(t.getElementType());
  SmallVector<APFloat> ap;
  ap.reserve(values.size());
  for (double v : values) {
    APFloat f(v);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    ap.push_back(f);
  }
  return DenseElementsAttr::get(t, ap);
}

/// Builds a constant of type `t` from int64 or double values (converted to
/// `t`'s element type: float to int truncates toward zero, anything to bool is
/// != 0).
DenseElementsAttr makeConst(RankedTensorType t, const ConstTensor &c) {
  bool toFloat = llvm::isa<FloatType>(t.getElementType());
  if (toFloat) {
    if (c.isFloat)
      return makeFloats(t, c.fps);
    return makeFloats(t, SmallVector<double>(c.ints.begin(), c.ints.end()));
  }
  if (!c.isFloat)
    return makeInts(t, c.ints);
  SmallVector<int64_t> ints;
  bool isBool = t.getElementType().isInteger(1);
  for (double v : c.fps) {
    if (isBool)
      ints.push_back(v != 0.0);
    else if (std::isnan(v) || std::isinf(v))
      return {};
    else
      ints.push_back(static_cast<int64_t>(std::trunc(v)));
  }
  return makeInts(t, ints);
}

/// Row-major strides of `shape` aligned to a result of rank `rank`, with stride
/// 0 on broadcast (extent 1 or missing) dimensions.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> shape,
                                      ArrayRef<int64_t> out) {
  SmallVector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  size_t off = out.size() - shape.size();
  for (int64_t i = shape.size() - 1; i >= 0; --i) {
    strides[i + off] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return strides;
}

/// Linear offsets into each operand for every element of the result
/// (row-major).
SmallVector<SmallVector<int64_t>> broadcastIndices(ArrayRef<ConstTensor> ins,
                                                   ArrayRef<int64_t> out) {
  int64_t n = getNumElements(out).value_or(0);
  SmallVector<SmallVector<int64_t>> idx(ins.size(), SmallVector<int64_t>(n));
  SmallVector<SmallVector<int64_t>> strides;
  for (const ConstTensor &c : ins)
    strides.push_back(broadcastStrides(c.shape, out));
  SmallVector<int64_t> pos(out.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    for (size_t k = 0; k < ins.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < out.size(); ++d)
        off += pos[d] * strides[k][d];
      idx[k][lin] = off;
    }
    for (int64_t d = out.size() - 1; d >= 0; --d) {
      if (++pos[d] < out[d])
        break;
      pos[d] = 0;
    }
  }
  return idx;
}

/// Folds an elementwise op with broadcasting. `intFn`/`fpFn` return
/// std::nullopt to refuse (division by zero). The result uses the op's declared
/// result type.
template <typename IntFn, typename FpFn>
OpFoldResult foldElementwise(Operation *op, ArrayRef<Attribute> operands,
                             IntFn intFn, FpFn fpFn) {
  RankedTensorType rt = foldableType(op->getResult(0));
  if (!rt)
    return {};
  SmallVector<ConstTensor> ins;
  for (Attribute a : operands) {
    auto c = readConst(a);
    if (!c)
      return {};
    ins.push_back(std::move(*c));
  }
  bool fp = ins.front().isFloat;
  for (const ConstTensor &c : ins)
    if (c.isFloat != fp)
      return {};
  auto idx = broadcastIndices(ins, rt.getShape());
  int64_t n = rt.getNumElements();
  ConstTensor out;
  out.isFloat = fp && !rt.getElementType().isInteger(1);
  for (int64_t i = 0; i < n; ++i) {
    if (fp) {
      SmallVector<double> args;
      for (size_t k = 0; k < ins.size(); ++k)
        args.push_back(ins[k].isFloat
                           ? ins[k].fps[idx[k][i]]
                           : static_cast<double>(ins[k].ints[idx[k][i]]));
      auto r = fpFn(args);
      if (!r)
        return {};
      if (out.isFloat)
        out.fps.push_back(*r);
      else
        out.ints.push_back(*r != 0.0);
    } else {
      SmallVector<int64_t> args;
      for (size_t k = 0; k < ins.size(); ++k)
        args.push_back(ins[k].ints[idx[k][i]]);
      auto r = intFn(args);
      if (!r)
        return {};
      out.ints.push_back(*r);
    }
  }
  return makeConst(rt, out);
}

/// Row-major multi-index of linear index `lin` in `shape`.
SmallVector<int64_t> unravel(int64_t lin, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> pos(shape.size());
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    pos[d] = shape[d] ? lin % shape[d] : 0;
    lin = shape[d] ? lin / shape[d] : 0;
  }
  return pos;
}

int64_t ravel(ArrayRef<int64_t> pos, ArrayRef<int64_t> shape) {
  int64_t lin = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    lin = lin * shape[d] + pos[d];
  return lin;
}

/// A new ConstTensor whose element i is element idx[i] of `c`.
ConstTensor take(const ConstTensor &c, ArrayRef<int64_t> idx) {
  ConstTensor out;
  out.isFloat = c.isFloat;
  for (int64_t i : idx) {
    if (c.isFloat)
      out.fps.push_back(c.fps[i]);
    else
      out.ints.push_back(c.ints[i]);
  }
  return out;
}

/// Refolds a constant into another (static) type with the same elements.
OpFoldResult reshapeConst(Attribute data, Value result) {
  RankedTensorType rt = foldableType(result);
  auto c = readConst(data);
  if (!rt || !c || c->size() != rt.getNumElements())
    return {};
  return makeConst(rt, *c);
}

template <typename T> using Opt = std::optional<T>;

/// True when x / y and x % y are defined for int64 (no division by zero, no
/// INT64_MIN / -1, which traps).
bool divisible(int64_t x, int64_t y) {
  return y != 0 && !(x == std::numeric_limits<int64_t>::min() && y == -1);
}

/// `data` with update element i combined into element targets[i], in order
/// (ScatterND, ScatterElements): replaced (`reduction` none) or added,
/// multiplied, maxed or minned. std::nullopt when an integer overflows.
std::optional<ConstTensor> scatter(ConstTensor data, const ConstTensor &updates,
                                   ArrayRef<int64_t> targets,
                                   StringRef reduction) {
  for (auto [i, t] : llvm::enumerate(targets)) {
    if (data.isFloat) {
      double &d = data.fps[t], u = updates.fps[i];
      d = reduction == "add"   ? d + u
          : reduction == "mul" ? d * u
          : reduction == "max" ? std::max(d, u)
          : reduction == "min" ? std::min(d, u)
                               : u;
      continue;
    }
    int64_t &d = data.ints[t], u = updates.ints[i];
    if (reduction == "add"   ? __builtin_add_overflow(d, u, &d)
        : reduction == "mul" ? __builtin_mul_overflow(d, u, &d)
                             : false)
      return std::nullopt;
    if (reduction == "max")
      d = std::max(d, u);
    else if (reduction == "min")
      d = std::min(d, u);
    else if (reduction == "none")
      d = u;
  }
  return data;
}

} // namespace

//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
OpFoldResult NoValueOp::fold(FoldAdaptor) {
  return UnitAttr::get(getContext());
}

OpFoldResult IdentityOp::fold(FoldAdaptor) {
  if (getX().getType() == getType())
    return getX();
  return {};
}

OpFoldResult NegOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, a.getOperands(),
      [](ArrayRef<int64_t> v) -> Opt<int64_t> {
        return llvm::checkedSub<int64_t>(0, v[0]);
      },
      [](ArrayRef<double> v) -> Opt<double> { return -v[0]; });
}

OpFoldResult NotOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, a.getOperands(),
      [](ArrayRef<int64_t> v) -> Opt<int64_t> { return !v[0]; },
      [](ArrayRef<double> v) -> Opt<double> { return v[0] == 0.0; });
}

#define HETPAR_FOLD_BINARY(OP, INT_EXPR, FP_EXPR)                              \
  OpFoldResult OP::fold(FoldAdaptor a) {                                       \
    return foldElementwise(                                                    \
        *this, a.getOperands(),                                                \
        [](ArrayRef<int64_t> v) -> Opt<int64_t> {                              \
          int64_t x = v[0], y = v[1];                                          \
          (void)x;                                                             \
          (void)y;                                                             \
          return INT_EXPR;                                                     \
        },                                                                     \
        [](ArrayRef<double> v) -> Opt<double> {                                \
          double x = v[0], y = v[1];                                           \
          (void)x;                                                             \
          (void)y;                                                             \
          return FP_EXPR;                                                      \
        });                                                                    \
  }
// Integer folds that would overflow int64 (or divide by zero) are refused: the
// op stays and its run-time semantics decide.
HETPAR_FOLD_BINARY(AddOp, llvm::checkedAdd(x, y), x + y)
HETPAR_FOLD_BINARY(SubOp, llvm::checkedSub(x, y), x - y)
HETPAR_FOLD_BINARY(MulOp, llvm::checkedMul(x, y), x *y)
HETPAR_FOLD_BINARY(DivOp,
                   divisible(x, y) ? Opt<int64_t>(x / y) : Opt<int64_t>(),
                   x / y)
HETPAR_FOLD_BINARY(EqualOp, x == y, x == y)
HETPAR_FOLD_BINARY(LessOp, x < y, x < y)
HETPAR_FOLD_BINARY(LessOrEqualOp, x <= y, x <= y)
HETPAR_FOLD_BINARY(GreaterOp, x > y, x > y)
HETPAR_FOLD_BINARY(GreaterOrEqualOp, x >= y, x >= y)
HETPAR_FOLD_BINARY(AndOp, x &&y, x != 0.0 && y != 0.0)
HETPAR_FOLD_BINARY(OrOp, x || y, x != 0.0 || y != 0.0)
#undef HETPAR_FOLD_BINARY

OpFoldResult ModOp::fold(FoldAdaptor a) {
  bool fmod = getFmod() != 0;
  return foldElementwise(
      *this, a.getOperands(),
      [fmod](ArrayRef<int64_t> v) -> Opt<int64_t> {
        if (!divisible(v[0], v[1]))
          return std::nullopt;
        int64_t r = v[0] % v[1];
        // Without fmod, the remainder takes the divisor's sign (Python
        // semantics).
        if (!fmod && r != 0 && ((r < 0) != (v[1] < 0)))
          r += v[1];
        return r;
      },
      [](ArrayRef<double> v) -> Opt<double> { return std::fmod(v[0], v[1]); });
}

OpFoldResult MaxOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, a.getOperands(),
      [](ArrayRef<int64_t> v) -> Opt<int64_t> { return *llvm::max_element(v); },
      [](ArrayRef<double> v) -> Opt<double> { return *llvm::max_element(v); });
}

OpFoldResult MinOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, a.getOperands(),
      [](ArrayRef<int64_t> v) -> Opt<int64_t> { return *llvm::min_element(v); },
      [](ArrayRef<double> v) -> Opt<double> { return *llvm::min_element(v); });
}

OpFoldResult WhereOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  if (!rt)
    return {};
  SmallVector<ConstTensor> ins;
  for (Attribute attr : a.getOperands()) {
    auto c = readConst(attr);
    if (!c)
      return {};
    ins.push_back(std::move(*c));
  }
  auto idx = broadcastIndices(ins, rt.getShape());
  ConstTensor out;
  out.isFloat = ins[1].isFloat;
  for (int64_t i = 0; i < rt.getNumElements(); ++i) {
    const ConstTensor &src = ins[0].ints[idx[0][i]] ? ins[1] : ins[2];
    int64_t j = ins[0].ints[idx[0][i]] ? idx[1][i] : idx[2][i];
    if (out.isFloat)
      out.fps.push_back(src.fps[j]);
    else
      out.ints.push_back(src.ints[j]);
  }
  return makeConst(rt, out);
}

OpFoldResult CastOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType())
    return getInput();
  RankedTensorType rt = foldableType(getResult());
  auto c = readConst(a.getInput());
  if (!rt || !c)
    return {};
  return makeConst(rt, *c);
}

OpFoldResult ShapeOp::fold(FoldAdaptor) {
  auto in = llvm::dyn_cast<RankedTensorType>(getData().getType());
  RankedTensorType rt = foldableType(getResult());
  if (!in || !rt)
    return {};
  auto [start, end] = getDimRange(in.getRank());
  SmallVector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    if (in.isDynamicDim(i))
      return {};
    dims.push_back(in.getDimSize(i));
  }
  return makeInts(rt, dims);
}

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto in = llvm::dyn_cast<RankedTensorType>(getData().getType());
  if (!in || !in.hasStaticShape())
    return {};
  return makeInts(llvm::cast<RankedTensorType>(getType()),
                  {in.getNumElements()});
}

OpFoldResult ReshapeOp::fold(FoldAdaptor a) {
  if (getData().getType() == getType() &&
      llvm::cast<ShapedType>(getType()).hasStaticShape())
    return getData();
  return reshapeConst(a.getData(), getResult());
}

OpFoldResult SqueezeOp::fold(FoldAdaptor a) {
  return reshapeConst(a.getData(), getResult());
}
OpFoldResult UnsqueezeOp::fold(FoldAdaptor a) {
  return reshapeConst(a.getData(), getResult());
}

OpFoldResult TransposeOp::fold(FoldAdaptor a) {
  auto in = llvm::dyn_cast<RankedTensorType>(getData().getType());
  if (!in)
    return {};
  int64_t rank = in.getRank();
  SmallVector<int64_t> perm = getPermutation(rank);
  if (static_cast<int64_t>(perm.size()) != rank)
    return {};
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank)) && in == getType())
    return getData();
  // A constant: output element at position q is input element at p with
  // p[perm[i]] = q[i] (the padding computations of exported F.pad need this).
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getData());
  if (!rt || !data || static_cast<int64_t>(data->shape.size()) != rank)
    return {};
  SmallVector<int64_t> idx;
  SmallVector<int64_t> pos(rank);
  for (int64_t lin = 0; lin < rt.getNumElements(); ++lin) {
    SmallVector<int64_t> q = unravel(lin, rt.getShape());
    for (int64_t i = 0; i < rank; ++i)
      pos[perm[i]] = q[i];
    idx.push_back(ravel(pos, data->shape));
  }
  return makeConst(rt, take(*data, idx));
}

#define HETPAR_FOLD_FLOAT_UNARY(OP, EXPR)                                      \
  OpFoldResult OP::fold(FoldAdaptor a) {                                       \
    return foldElementwise(                                                    \
        *this, a.getOperands(),                                                \
        [](ArrayRef<int64_t>) -> Opt<int64_t> { return std::nullopt; },        \
        [](ArrayRef<double> v) -> Opt<double> {                                \
          double x = v[0];                                                     \
          return EXPR;                                                         \
        });                                                                    \
  }
// Float shape arithmetic of exports (ceil(seq / window) * window, sqrt(d)).
HETPAR_FOLD_FLOAT_UNARY(CeilOp, std::ceil(x))
HETPAR_FOLD_FLOAT_UNARY(FloorOp, std::floor(x))
HETPAR_FOLD_FLOAT_UNARY(SqrtOp, std::sqrt(x))
#undef HETPAR_FOLD_FLOAT_UNARY

OpFoldResult AbsOp::fold(FoldAdaptor a) {
  return foldElementwise(
      *this, a.getOperands(),
      [](ArrayRef<int64_t> v) -> Opt<int64_t> {
        return v[0] == std::numeric_limits<int64_t>::min()
                   ? Opt<int64_t>()
                   : Opt<int64_t>(std::abs(v[0]));
      },
      [](ArrayRef<double> v) -> Opt<double> { return std::fabs(v[0]); });
}

OpFoldResult ConcatOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  if (!rt)
    return {};
  int64_t rank = rt.getRank();
  auto axis = normalizeAxis(getAxis(), rank);
  if (!axis)
    return {};
  ConstTensor out;
  SmallVector<ConstTensor> ins;
  for (Attribute attr : a.getInputs()) {
    auto c = readConst(attr);
    if (!c)
      return {};
    if (c->size() == 0)
      continue; // empty inputs (legacy [0] tensors included) add nothing
    if (static_cast<int64_t>(c->shape.size()) != rank)
      return {};
    ins.push_back(std::move(*c));
  }
  out.isFloat = llvm::isa<FloatType>(rt.getElementType());
  // outer = product of dims before axis; each input contributes blocks of
  // (its extent along axis) * inner elements per outer index.
  int64_t outer = getNumElements(rt.getShape().take_front(*axis)).value_or(0);
  int64_t inner =
      getNumElements(rt.getShape().drop_front(*axis + 1)).value_or(0);
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor &c : ins) {
      int64_t block = c.shape[*axis] * inner;
      for (int64_t j = 0; j < block; ++j) {
        if (out.isFloat)
          out.fps.push_back(c.isFloat ? c.fps[o * block + j]
                                      : c.ints[o * block + j]);
        else
          out.ints.push_back(c.ints[o * block + j]);
      }
    }
  }
  if (out.size() != rt.getNumElements())
    return {};
  return makeConst(rt, out);
}

OpFoldResult SliceOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getData());
  auto starts = getConstantIntValues(getStarts());
  auto ends = getConstantIntValues(getEnds());
  if (!rt || !data || !starts || !ends)
    return {};
  int64_t rank = data->shape.size();
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (getAxes()) {
    auto ax = getConstantIntValues(getAxes());
    if (!ax)
      return {};
    for (int64_t v : *ax) {
      auto n = normalizeAxis(v, rank);
      if (!n)
        return {};
      axes.push_back(*n);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts->size()));
  }
  if (getSteps()) {
    auto st = getConstantIntValues(getSteps());
    if (!st)
      return {};
    steps = *st;
  }
  // Per axis: first index and step in the input.
  SmallVector<int64_t> first(rank, 0), step(rank, 1);
  for (auto [i, ax] : llvm::enumerate(axes)) {
    int64_t dim = data->shape[ax], s = steps[i], b = (*starts)[i];
    if (b < 0)
      b += dim;
    b = s > 0 ? std::clamp<int64_t>(b, 0, dim)
              : std::clamp<int64_t>(b, 0, dim - 1);
    first[ax] = b;
    step[ax] = s;
  }
  SmallVector<int64_t> idx;
  for (int64_t lin = 0; lin < rt.getNumElements(); ++lin) {
    SmallVector<int64_t> pos = unravel(lin, rt.getShape());
    for (int64_t d = 0; d < rank; ++d)
      pos[d] = first[d] + pos[d] * step[d];
    idx.push_back(ravel(pos, data->shape));
  }
  return makeConst(rt, take(*data, idx));
}

OpFoldResult GatherOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getData());
  auto indices = readConst(a.getIndices());
  if (!rt || !data || !indices || data->shape.empty())
    return {};
  auto axis = normalizeAxis(getAxis(), data->shape.size());
  if (!axis)
    return {};
  int64_t dim = data->shape[*axis];
  int64_t outer =
      getNumElements(ArrayRef<int64_t>(data->shape).take_front(*axis))
          .value_or(0);
  int64_t inner =
      getNumElements(ArrayRef<int64_t>(data->shape).drop_front(*axis + 1))
          .value_or(0);
  SmallVector<int64_t> idx;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k : indices->ints) {
      if (k < -dim || k >= dim)
        return {};
      if (k < 0)
        k += dim;
      for (int64_t i = 0; i < inner; ++i)
        idx.push_back((o * dim + k) * inner + i);
    }
  }
  if (static_cast<int64_t>(idx.size()) != rt.getNumElements())
    return {};
  return makeConst(rt, take(*data, idx));
}

OpFoldResult ExpandOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getInput());
  if (!rt || !data)
    return {};
  ConstTensor in = *data;
  auto idx = broadcastIndices({in}, rt.getShape());
  return makeConst(rt, take(in, idx[0]));
}

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  RankedTensorType rt = foldableType(getResult());
  if (!rt)
    return {};
  if (auto v = getValue()) {
    auto c = readConst(*v);
    if (!c || c->size() != 1)
      return {};
    ConstTensor out;
    out.isFloat = c->isFloat;
    if (c->isFloat)
      out.fps.assign(rt.getNumElements(), c->fps[0]);
    else
      out.ints.assign(rt.getNumElements(), c->ints[0]);
    return makeConst(rt, out);
  }
  ConstTensor out;
  out.isFloat = true;
  out.fps.assign(rt.getNumElements(), 0.0);
  return makeConst(rt, out);
}

OpFoldResult RangeOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto start = readConst(a.getStart());
  auto delta = readConst(a.getDelta());
  if (!rt || !start || !delta || start->size() != 1 || delta->size() != 1)
    return {};
  ConstTensor out;
  out.isFloat = start->isFloat;
  for (int64_t i = 0; i < rt.getNumElements(); ++i) {
    if (out.isFloat)
      out.fps.push_back(start->fps[0] + i * delta->fps[0]);
    else
      out.ints.push_back(start->ints[0] + i * delta->ints[0]);
  }
  return makeConst(rt, out);
}

OpFoldResult NonZeroOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getX());
  if (!rt || !data)
    return {};
  // A scalar counts as a one-element vector (ONNX Runtime's NonZero).
  SmallVector<int64_t> shape = data->shape;
  if (shape.empty())
    shape.push_back(1);
  int64_t rank = shape.size();
  SmallVector<SmallVector<int64_t>> rows(rank);
  for (int64_t lin = 0; lin < data->size(); ++lin) {
    bool nonzero = data->isFloat ? data->fps[lin] != 0.0 : data->ints[lin] != 0;
    if (!nonzero)
      continue;
    SmallVector<int64_t> pos = unravel(lin, shape);
    for (int64_t d = 0; d < rank; ++d)
      rows[d].push_back(pos[d]);
  }
  ConstTensor out;
  for (const auto &row : rows)
    out.ints.append(row.begin(), row.end());
  if (out.size() != rt.getNumElements())
    return {};
  return makeConst(rt, out);
}

OpFoldResult ScatterNDOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getData());
  auto indices = readConst(a.getIndices());
  auto updates = readConst(a.getUpdates());
  if (!rt || !data || !indices || !updates || indices->shape.empty() ||
      data->isFloat != updates->isFloat)
    return {};
  int64_t k = indices->shape.back();
  ArrayRef<int64_t> shape = data->shape;
  if (k < 1 || k > static_cast<int64_t>(shape.size()))
    return {};
  int64_t slice = getNumElements(shape.drop_front(k)).value_or(0);
  SmallVector<int64_t> targets;
  for (size_t t = 0; t + k <= indices->ints.size(); t += k) {
    SmallVector<int64_t> pos(shape.size(), 0);
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = indices->ints[t + j], dim = shape[j];
      if (v < -dim || v >= dim)
        return {};
      pos[j] = v < 0 ? v + dim : v;
    }
    int64_t base = ravel(pos, shape);
    for (int64_t e = 0; e < slice; ++e)
      targets.push_back(base + e);
  }
  if (static_cast<int64_t>(targets.size()) != updates->size())
    return {};
  auto out = scatter(*data, *updates, targets, getReduction());
  return out ? OpFoldResult(makeConst(rt, *out)) : OpFoldResult();
}

OpFoldResult ScatterElementsOp::fold(FoldAdaptor a) {
  RankedTensorType rt = foldableType(getResult());
  auto data = readConst(a.getData());
  auto indices = readConst(a.getIndices());
  auto updates = readConst(a.getUpdates());
  if (!rt || !data || !indices || !updates ||
      data->isFloat != updates->isFloat ||
      indices->shape.size() != data->shape.size() ||
      indices->size() != updates->size())
    return {};
  auto axis = normalizeAxis(getAxis(), data->shape.size());
  if (!axis)
    return {};
  int64_t dim = data->shape[*axis];
  SmallVector<int64_t> targets;
  for (int64_t i = 0; i < indices->size(); ++i) {
    SmallVector<int64_t> pos = unravel(i, indices->shape);
    int64_t v = indices->ints[i];
    if (v < -dim || v >= dim)
      return {};
    pos[*axis] = v < 0 ? v + dim : v;
    targets.push_back(ravel(pos, data->shape));
  }
  auto out = scatter(*data, *updates, targets, getReduction());
  return out ? OpFoldResult(makeConst(rt, *out)) : OpFoldResult();
}
