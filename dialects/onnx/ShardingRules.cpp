//===- ShardingRules.cpp - sharding rules of the onnx ops -----------------===//
//
// ShardingRuleOpInterface for the onnx ops, attached as external models when
// the dialect loads. The rules follow the ops' semantics (onnx.ai/onnx/
// operators) and Shardy's rules for the matching StableHLO ops:
//  - elementwise ops (with numpy broadcasting), Cast, Clip, Where, Expand:
//    one parallel factor per result dimension;
//  - MatMul: batch dims, m and n parallel, k reduction; Gemm likewise with its
//    transposes; Conv: batch, groups and the output channels of a group
//    parallel, the input channels of a group a reduction, spatial axes whole
//    (windows cross a split);
//  - reductions: the reduced axes are a reduction for the sums, means, max,
//    min, L1 and sum of squares, whole for the others (L2, log-sum-exp, prod);
//    Softmax, LayerNormalization, ArgMax, CumSum, Trilu: the axes they work
//    along are whole; likewise SoftmaxGrad and LogSoftmaxGrad, and
//    LayerNormalizationGrad, whose outer axes are a reduction for dScale and
//    dB (split rows of dX, partial sums of dScale and dB);
//  - the losses (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss) and
//    their gradients: the class axis whole, the batch and spatial axes
//    parallel, a reduction (forward "sum") or whole ("mean");
//  - layout ops: Transpose permutes factors, Reshape/Flatten/Squeeze/Unsqueeze
//    factor both shapes into their common sub-factors (as Shardy and GSPMD
//    do: [L, N, E] -> [L, N*H, E/H] gives N as the outer part of N*H and H
//    as the outer part of E), Concat/Split/Slice/
//    Pad/Tile keep the axes they change whole, Gather keeps the gathered axis
//    whole.
//
//===----------------------------------------------------------------------===//

#include "PartitionHooks.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <numeric>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::onnx;

//===----------------------------------------------------------------------===//
// ShardingRule
//===----------------------------------------------------------------------===//

std::optional<FactorPlacement>
ShardingRule::placement(const DimFactors &dims, int f,
                        llvm::ArrayRef<ShardingFactor> factors) {
  for (auto [d, list] : llvm::enumerate(dims)) {
    auto it = llvm::find(list, f);
    if (it == list.end())
      continue;
    int64_t granule = 1, outer = 1;
    for (auto inner = std::next(it); inner != list.end(); ++inner)
      granule *= factors[*inner].size;
    for (auto o = list.begin(); o != it; ++o)
      outer *= factors[*o].size;
    return FactorPlacement{static_cast<int>(d), granule, outer};
  }
  return std::nullopt;
}

std::string ShardingRule::str() const {
  auto name = [](int f) {
    return f < 18 ? std::string(1, static_cast<char>('i' + f))
                  : "f" + std::to_string(f);
  };
  auto values = [&](const std::vector<DimFactors> &vs) {
    std::string s = "(";
    for (auto [v, dims] : llvm::enumerate(vs)) {
      s += v ? ", [" : "[";
      for (auto [d, list] : llvm::enumerate(dims)) {
        if (d)
          s += ", ";
        if (list.empty())
          s += "_";
        else if (list.size() == 1)
          s += name(list[0]);
        else {
          s += "(";
          for (auto [k, f] : llvm::enumerate(list))
            s += (k ? " " : "") + name(f);
          s += ")";
        }
      }
      s += "]";
    }
    return s + ")";
  };
  std::string s = values(operands) + " -> " + values(results) + " {";
  for (auto [f, factor] : llvm::enumerate(factors)) {
    s += (f ? ", " : "") + name(f) + "=" + std::to_string(factor.size);
    if (factor.kind == FactorKind::Reduction)
      s += reduction == dist::ReductionKind::Sum
               ? std::string(" reduction")
               : " reduction(" + dist::stringifyReductionKind(reduction).str() +
                     ")";
    else if (factor.kind == FactorKind::Whole)
      s += " whole";
  }
  return s + "}";
}

ShardingRule hetpar::makeElementwiseRule(
    llvm::ArrayRef<int64_t> resultShape,
    llvm::ArrayRef<llvm::ArrayRef<int64_t>> operandShapes,
    unsigned numResults) {
  ShardingRule rule;
  DimFactors result;
  for (int64_t size : resultShape) {
    result.emplace_back();
    if (size != 1)
      result.back().push_back(rule.addFactor(size, FactorKind::Parallel));
  }
  int64_t rank = resultShape.size();
  for (llvm::ArrayRef<int64_t> shape : operandShapes) {
    DimFactors dims;
    int64_t offset = rank - static_cast<int64_t>(shape.size());
    for (auto [d, size] : llvm::enumerate(shape)) {
      dims.emplace_back();
      int64_t rd = offset + static_cast<int64_t>(d);
      if (rd >= 0 && size == resultShape[rd])
        dims.back() = result[rd];
    }
    rule.operands.push_back(std::move(dims));
  }
  rule.results.assign(numResults, result);
  return rule;
}

namespace {
/// A walk over the dimensions of a shape that skips those of size 1 and
/// hands out the rest in sub-factors, outermost first: `left` is the part of
/// dimension `dim` not yet given to a factor.
struct DimCursor {
  llvm::ArrayRef<int64_t> shape;
  size_t dim = 0;
  int64_t left = 1;

  explicit DimCursor(llvm::ArrayRef<int64_t> shape) : shape(shape) {
    skipUnits();
  }
  bool done() const { return dim >= shape.size(); }
  void skipUnits() {
    while (dim < shape.size() && shape[dim] == 1)
      ++dim;
    left = done() ? 1 : shape[dim];
  }
  /// Gives the outermost `size` of what is left (size divides left).
  void take(int64_t size) {
    left /= size;
    if (left == 1) {
      ++dim;
      skipUnits();
    }
  }
};

/// Appends to `side` one Whole factor `f` over the dimensions from the
/// cursor's to where the product reaches `product`, and moves past them.
/// Returns false when the shape ends first.
bool takeRun(DimCursor &c, int64_t product, int f, DimFactors &side) {
  int64_t have = 1;
  while (have < product && !c.done()) {
    side[c.dim].push_back(f);
    have *= c.left;
    ++c.dim;
    c.skipUnits();
  }
  return have == product;
}
} // namespace

ShardingRule hetpar::makeReshapeRule(llvm::ArrayRef<int64_t> from,
                                     llvm::ArrayRef<int64_t> to,
                                     unsigned numOperands) {
  ShardingRule rule;
  DimFactors in(from.size()), out(to.size());
  DimCursor a(from), b(to);
  while (!a.done() && !b.done()) {
    if (int64_t g = std::gcd(a.left, b.left); g > 1) {
      // Both remaining dimensions start with the same g: in row-major order
      // their outermost g-way split is the same split of the elements.
      int f = rule.addFactor(g, FactorKind::Parallel);
      in[a.dim].push_back(f);
      out[b.dim].push_back(f);
      a.take(g);
      b.take(g);
      continue;
    }
    // Coprime parts ((2, 3) -> (3, 2)): the dimensions up to where the two
    // products meet again are one factor that must not be split.
    int64_t pa = a.left, pb = b.left;
    size_t ia = a.dim + 1, ib = b.dim + 1;
    while (pa != pb) {
      if (pa < pb && ia < from.size())
        pa *= from[ia++];
      else if (pb < pa && ib < to.size())
        pb *= to[ib++];
      else
        break;
    }
    int f = rule.addFactor(pa, FactorKind::Whole);
    if (!takeRun(a, pa, f, in) || !takeRun(b, pa, f, out))
      break;
  }
  rule.operands.push_back(std::move(in));
  for (unsigned k = 1; k < numOperands; ++k)
    rule.operands.emplace_back(); // the shape operand: read whole
  rule.results.push_back(std::move(out));
  return rule;
}

//===----------------------------------------------------------------------===//
// Rules of the onnx ops
//===----------------------------------------------------------------------===//

namespace {

/// The static shape of `v`, or failure.
FailureOr<SmallVector<int64_t>> staticShape(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return failure();
  return SmallVector<int64_t>(t.getShape());
}

/// Shapes of all operands and results, or failure when one is not static.
/// Absent optional operands (onnx.NoValue) count as rank-0 shapes.
LogicalResult allShapes(Operation *op,
                        SmallVectorImpl<SmallVector<int64_t>> &in,
                        SmallVectorImpl<SmallVector<int64_t>> &out) {
  for (Value v : op->getOperands()) {
    if (llvm::isa<NoneType>(v.getType())) {
      in.emplace_back();
      continue;
    }
    auto s = staticShape(v);
    if (failed(s))
      return failure();
    in.push_back(*s);
  }
  for (Value v : op->getResults()) {
    auto s = staticShape(v);
    if (failed(s))
      return failure();
    out.push_back(*s);
  }
  return success();
}

/// One factor per dimension of `shape` (none for size 1), of `kind` except for
/// the dimensions in `special`, which get `specialKind`.
DimFactors factorsFor(ShardingRule &rule, llvm::ArrayRef<int64_t> shape,
                      llvm::ArrayRef<int64_t> special = {},
                      FactorKind specialKind = FactorKind::Whole) {
  DimFactors dims(shape.size());
  for (auto [d, size] : llvm::enumerate(shape))
    if (size != 1)
      dims[d].push_back(rule.addFactor(
          size, llvm::is_contained(special, static_cast<int64_t>(d))
                    ? specialKind
                    : FactorKind::Parallel));
  return dims;
}

/// Dimensions whose size differs between two shapes of one rank.
SmallVector<int64_t> changedDims(llvm::ArrayRef<int64_t> a,
                                 llvm::ArrayRef<int64_t> b) {
  SmallVector<int64_t> out;
  for (size_t d = 0; d < a.size(); ++d)
    if (d >= b.size() || a[d] != b[d])
      out.push_back(d);
  return out;
}

using Shapes = SmallVector<SmallVector<int64_t>>;

/// The way every rule below starts: Derived::build gets the op and the static
/// shapes of its operands and results (the search runs on the static module;
/// a shape that is not static, or an op without results, has no rule). The
/// partition's hooks go to PartitionHooks.h's overloads for Op.
template <typename Derived, typename Op>
struct StaticRule : public ShardingRuleOpInterface::ExternalModel<Derived, Op> {
  FailureOr<ShardingRule> getShardingRule(Operation *op) const {
    Shapes in, out;
    if (failed(allShapes(op, in, out)) || out.empty())
      return failure();
    return static_cast<const Derived *>(this)->build(llvm::cast<Op>(op), in,
                                                     out);
  }
  std::optional<unsigned> getAddedOperand(Operation *op) const {
    return hooks::addedOperand(llvm::cast<Op>(op));
  }
  Value buildAddedTerm(Operation *op, OpBuilder &b, Value c) const {
    return hooks::addedTerm(llvm::cast<Op>(op), b, c);
  }
  void adaptToLocalShapes(Operation *op, OpBuilder &b) const {
    hooks::adaptToLocalShapes(llvm::cast<Op>(op), b);
  }
};

/// Ops whose operands all broadcast to the result (and extra results of the
/// same shape).
template <typename Op>
struct ElementwiseRule : public StaticRule<ElementwiseRule<Op>, Op> {
  FailureOr<ShardingRule> build(Op op, Shapes &in, Shapes &out) const {
    SmallVector<llvm::ArrayRef<int64_t>> shapes(in.begin(), in.end());
    ShardingRule rule = makeElementwiseRule(out[0], shapes, out.size());
    if constexpr (std::is_same_v<Op, ExpandOp>)
      rule.operands[1] = DimFactors(in[1].size()); // the shape: read whole
    for (size_t r = 1; r < out.size(); ++r)
      if (out[r] != out[0])
        rule.results[r] = DimFactors(out[r].size());
    return rule;
  }
};

/// How partial results of `Op` split along a reduction factor combine.
template <typename Op> constexpr dist::ReductionKind partialReduction() {
  if constexpr (std::is_same_v<Op, ReduceMaxOp> ||
                std::is_same_v<Op, GlobalMaxPoolOp>)
    return dist::ReductionKind::Max;
  else if constexpr (std::is_same_v<Op, ReduceMinOp>)
    return dist::ReductionKind::Min;
  else if constexpr (std::is_same_v<Op, ReduceProdOp>)
    return dist::ReductionKind::Prod;
  else
    return dist::ReductionKind::Sum;
}

/// Ops whose every factor is one dimension of operand 0 and of result 0, with
/// the dimensions listed by `whole` (given the op and the shapes) kept whole
/// or turned into a reduction; other operands are read whole unless they have
/// operand 0's shape.
template <typename Op, typename Fn>
FailureOr<ShardingRule> axisRule(Op op, const Shapes &in, const Shapes &out,
                                 Fn whole) {
  if (in.empty())
    return failure();
  ShardingRule rule;
  rule.reduction = partialReduction<Op>();
  FactorKind kind = FactorKind::Whole;
  SmallVector<int64_t> special = whole(op, in, out, kind);
  DimFactors dims = factorsFor(rule, in[0], special, kind);
  rule.operands.push_back(dims);
  // Other operands of the same rank (Concat's inputs) share the factors of
  // the dimensions where they agree; the rest are read whole.
  for (size_t k = 1; k < in.size(); ++k) {
    DimFactors other(in[k].size());
    if (in[k].size() == in[0].size())
      for (size_t d = 0; d < in[k].size(); ++d)
        if (in[k][d] == in[0][d] &&
            !llvm::is_contained(special, static_cast<int64_t>(d)))
          other[d] = dims[d];
    rule.operands.push_back(std::move(other));
  }
  for (auto &shape : out) {
    if (shape == in[0]) {
      rule.results.push_back(dims);
      continue;
    }
    // A result with reduced or dropped dimensions keeps the factors of the
    // dimensions that survive, in order.
    DimFactors r(shape.size());
    size_t d = 0;
    for (size_t k = 0; k < in[0].size() && d < shape.size(); ++k) {
      bool dropped = llvm::is_contained(special, static_cast<int64_t>(k));
      if (dropped && shape.size() < in[0].size())
        continue;
      if (!dropped && in[0][k] == shape[d])
        r[d] = dims[k];
      ++d;
    }
    rule.results.push_back(std::move(r));
  }
  return rule;
}

#define HETPAR_AXIS_RULE(NAME, ...)                                            \
  template <typename Op> struct NAME : public StaticRule<NAME<Op>, Op> {       \
    FailureOr<ShardingRule> build(Op op, Shapes &in, Shapes &out) const {      \
      return axisRule<Op>(op, in, out,                                         \
                          [](Op o, auto &in, auto &out,                        \
                             FactorKind &kind) -> SmallVector<int64_t> {       \
                            (void)o;                                           \
                            (void)in;                                          \
                            (void)out;                                         \
                            (void)kind;                                        \
                            __VA_ARGS__                                        \
                          });                                                  \
    }                                                                          \
  };

/// Softmax, LogSoftmax, ArgMax/Min, CumSum: the axis is whole.
HETPAR_AXIS_RULE(SingleAxisRule, {
  int64_t rank = in[0].size();
  int64_t axis;
  if constexpr (std::is_same_v<Op, CumSumOp>) {
    auto v = getConstantIntValues(o.getAxis());
    if (!v || v->size() != 1)
      return changedDims(in[0], {}); // unknown: everything whole
    axis = (*v)[0];
  } else {
    axis = o.getAxis();
  }
  return {normalizeAxis(axis, rank).value_or(0)};
})

/// LayerNormalization: axis .. rank - 1 are whole.
HETPAR_AXIS_RULE(TrailingAxesRule, {
  int64_t rank = in[0].size();
  SmallVector<int64_t> dims;
  for (int64_t d = normalizeAxis(o.getAxis(), rank).value_or(0); d < rank; ++d)
    dims.push_back(d);
  return dims;
})

/// Ops that change the extent of some axes (Slice, Pad, Tile, Trilu's
/// matrices): those axes are whole, the others parallel.
HETPAR_AXIS_RULE(ChangedAxesRule, {
  if constexpr (std::is_same_v<Op, TriluOp>) {
    int64_t rank = in[0].size();
    return {rank - 2, rank - 1};
  } else {
    return changedDims(in[0], out[0]);
  }
})

/// Resize: the resized axes are whole (an output index reads input indices
/// around its mapped coordinate); an axis that keeps its extent under a
/// constant scale of 1 (the batch and channels of an image resize) is
/// parallel. With scales from data every listed axis is whole.
HETPAR_AXIS_RULE(ResizeRule, {
  SmallVector<int64_t> extents, whole;
  SmallVector<double> scales;
  std::string reason;
  if (failed(o.getAxes(extents, scales, reason)))
    return changedDims(in[0], {}); // unknown: everything whole
  for (int64_t d = 0; d < static_cast<int64_t>(in[0].size()); ++d)
    if (extents[d] != in[0][d] || scales[d] != 1.0 ||
        o.getCoordinateTransformationMode() == "tf_crop_and_resize")
      whole.push_back(d);
  return whole;
})

/// Pooling with windows (spatial axes whole) and global max pooling (spatial
/// axes reduced: partial maxima, then an all-reduce). Global average pooling
/// keeps them whole: local means divide by the local count.
HETPAR_AXIS_RULE(PoolRule, {
  SmallVector<int64_t> spatial;
  for (int64_t d = 2; d < static_cast<int64_t>(in[0].size()); ++d)
    spatial.push_back(d);
  if constexpr (std::is_same_v<Op, GlobalMaxPoolOp>)
    kind = FactorKind::Reduction;
  return spatial;
})

/// InstanceNormalization: statistics per (n, c) over the spatial axes.
HETPAR_AXIS_RULE(InstanceNormRule, {
  SmallVector<int64_t> spatial;
  for (int64_t d = 2; d < static_cast<int64_t>(in[0].size()); ++d)
    spatial.push_back(d);
  return spatial;
})

/// Reduce*: the reduced axes are a reduction factor (a partial result per
/// device, combined by an all-reduce) for decomposable reductions, whole for
/// the others.
HETPAR_AXIS_RULE(ReduceRule, {
  SmallVector<int64_t> reduced;
  int64_t rank = in[0].size();
  std::optional<SmallVector<int64_t>> axes =
      o.getAxes() ? getConstantIntValues(o.getAxes()) : SmallVector<int64_t>();
  if (!axes)
    return changedDims(in[0], {}); // unknown axes: all whole
  if (axes->empty())
    for (int64_t d = 0; d < rank; ++d)
      reduced.push_back(d);
  for (int64_t a : *axes)
    reduced.push_back(normalizeAxis(a, rank).value_or(0));
  // Partial results that combine elementwise (partialReduction); a mean's,
  // an L2 norm's and a log-sum-exp's do not.
  if constexpr (std::is_same_v<Op, ReduceSumOp> ||
                std::is_same_v<Op, ReduceMaxOp> ||
                std::is_same_v<Op, ReduceMinOp> ||
                std::is_same_v<Op, ReduceProdOp> ||
                std::is_same_v<Op, ReduceL1Op> ||
                std::is_same_v<Op, ReduceSumSquareOp>)
    kind = FactorKind::Reduction;
  return reduced;
})

/// Concat (and Split into unequal parts): the axis is whole.
HETPAR_AXIS_RULE(ConcatAxisRule, {
  return {normalizeAxis(o.getAxis(), in[0].size()).value_or(0)};
})

/// Split into k equal parts: the axis is k chunks (a whole factor) of a
/// factor shared with the results' axis, so each part splits alike (the fused
/// QKV projection of GPT-2 split into queries, keys and values).
struct SplitRule : public StaticRule<SplitRule, SplitOp> {
  FailureOr<ShardingRule> build(SplitOp op, Shapes &in, Shapes &out) const {
    int64_t rank = in[0].size();
    int64_t axis = normalizeAxis(op.getAxis(), rank).value_or(0);
    bool equal = llvm::all_of(out, [&](auto &s) { return s == out[0]; });
    if (!equal)
      return ConcatAxisRule<SplitOp>().getShardingRule(op);
    ShardingRule rule;
    DimFactors x = factorsFor(rule, out[0]);
    DimFactors y = x;
    if (out.size() > 1)
      x[axis].insert(x[axis].begin(),
                     rule.addFactor(out.size(), FactorKind::Whole));
    rule.operands.push_back(x);
    for (size_t k = 1; k < in.size(); ++k)
      rule.operands.emplace_back(in[k].size()); // the split sizes
    rule.results.assign(out.size(), y);
    return rule;
  }
};

struct MatMulRule : public StaticRule<MatMulRule, MatMulOp> {
  FailureOr<ShardingRule> build(MatMulOp op, Shapes &in, Shapes &out) const {
    ShardingRule rule;
    auto a = in[0], b = in[1], y = out[0];
    bool vecA = a.size() == 1, vecB = b.size() == 1;
    // Batch dimensions of the result (all but the matrix ones).
    size_t batchRank = y.size() - (vecA ? 0 : 1) - (vecB ? 0 : 1);
    DimFactors ry(y.size()), ra(a.size()), rb(b.size());
    for (size_t d = 0; d < batchRank; ++d)
      if (y[d] != 1)
        ry[d].push_back(rule.addFactor(y[d], FactorKind::Parallel));
    auto mapBatch = [&](llvm::ArrayRef<int64_t> s, DimFactors &r, size_t mat) {
      int64_t offset = static_cast<int64_t>(batchRank) -
                       static_cast<int64_t>(s.size() - mat);
      for (size_t d = 0; d + mat < s.size(); ++d)
        if (s[d] == y[offset + d])
          r[d] = ry[offset + d];
    };
    mapBatch(a, ra, vecA ? 1 : 2);
    mapBatch(b, rb, vecB ? 1 : 2);
    int64_t k = a.back();
    int kf = k != 1 ? rule.addFactor(k, FactorKind::Reduction) : -1;
    if (!vecA) {
      int64_t m = a[a.size() - 2];
      if (m != 1) {
        int mf = rule.addFactor(m, FactorKind::Parallel);
        ra[a.size() - 2].push_back(mf);
        ry[batchRank].push_back(mf);
      }
    }
    if (!vecB) {
      int64_t n = b.back();
      if (n != 1) {
        int nf = rule.addFactor(n, FactorKind::Parallel);
        rb.back().push_back(nf);
        ry.back().push_back(nf);
      }
    }
    if (kf >= 0) {
      ra.back().push_back(kf);
      rb[vecB ? 0 : b.size() - 2].push_back(kf);
    }
    rule.operands = {ra, rb};
    rule.results = {ry};
    return rule;
  }
};

struct GemmRule : public StaticRule<GemmRule, GemmOp> {
  FailureOr<ShardingRule> build(GemmOp gemm, Shapes &in, Shapes &out) const {
    ShardingRule rule;
    int64_t m = out[0][0], n = out[0][1];
    int64_t k = gemm.getTransA() ? in[0][0] : in[0][1];
    int mf = m != 1 ? rule.addFactor(m, FactorKind::Parallel) : -1;
    int nf = n != 1 ? rule.addFactor(n, FactorKind::Parallel) : -1;
    int kf = k != 1 ? rule.addFactor(k, FactorKind::Reduction) : -1;
    auto dims = [](int x, int y) {
      DimFactors d(2);
      if (x >= 0)
        d[0].push_back(x);
      if (y >= 0)
        d[1].push_back(y);
      return d;
    };
    rule.operands.push_back(gemm.getTransA() ? dims(kf, mf) : dims(mf, kf));
    rule.operands.push_back(gemm.getTransB() ? dims(nf, kf) : dims(kf, nf));
    DimFactors y = dims(mf, nf);
    if (in.size() > 2) {
      // C broadcasts to [m, n].
      ShardingRule c = makeElementwiseRule(out[0], {in[2]});
      DimFactors cd(in[2].size());
      int64_t offset = 2 - static_cast<int64_t>(in[2].size());
      for (size_t d = 0; d < in[2].size(); ++d)
        if (!c.operands[0][d].empty())
          cd[d] = y[offset + d];
      rule.operands.push_back(cd);
    }
    rule.results = {y};
    return rule;
  }
};

struct ConvRule : public StaticRule<ConvRule, ConvOp> {
  FailureOr<ShardingRule> build(ConvOp conv, Shapes &in, Shapes &out) const {
    ShardingRule rule;
    auto x = in[0], w = in[1], y = out[0];
    DimFactors rx(x.size()), rw(w.size()), ry(y.size());
    auto add = [&](int64_t size, FactorKind kind) {
      return size != 1 ? rule.addFactor(size, kind) : -1;
    };
    // Channels in groups (ONNX Conv: C = group * W[1], M = group * (M /
    // group)): the group g is the outer part of the input channels, of the
    // output channels and of the weight's and bias's first axis, and
    // parallel: a device with some of the groups runs a grouped (for
    // depthwise, a depthwise) convolution of its own. Inside a group, the
    // output channels m are parallel and the input channels c a reduction.
    int64_t groups = conv.getGroup();
    if (groups < 1 || x[1] % groups || y[1] % groups || w[1] * groups != x[1])
      return failure();
    int nf = add(y[0], FactorKind::Parallel);
    int gf = add(groups, FactorKind::Parallel);
    int mf = add(y[1] / groups, FactorKind::Parallel);
    int cf = add(w[1], FactorKind::Reduction);
    auto put = [](DimFactors &d, size_t i, int f) {
      if (f >= 0)
        d[i].push_back(f);
    };
    put(rx, 0, nf);
    put(ry, 0, nf);
    put(rx, 1, gf);
    put(ry, 1, gf);
    put(rw, 0, gf);
    put(ry, 1, mf);
    put(rw, 0, mf);
    put(rx, 1, cf);
    put(rw, 1, cf);
    for (size_t d = 2; d < x.size(); ++d) {
      put(rx, d, add(x[d], FactorKind::Whole));
      put(rw, d, add(w[d], FactorKind::Whole));
      put(ry, d, add(y[d], FactorKind::Whole));
    }
    rule.operands = {rx, rw};
    if (in.size() > 2) {
      DimFactors rb(1);
      put(rb, 0, gf);
      put(rb, 0, mf);
      rule.operands.push_back(rb);
    }
    rule.results = {ry};
    return rule;
  }
};

/// BatchNormalization (inference): per-channel statistics; every axis
/// parallel, the channel axis shared with the four vectors.
struct BatchNormRule : public StaticRule<BatchNormRule, BatchNormalizationOp> {
  FailureOr<ShardingRule> build(BatchNormalizationOp bn, Shapes &in,
                                Shapes &out) const {
    if (in[0].size() < 2)
      return failure();
    ShardingRule rule;
    // Training mode computes batch statistics: every axis but the channel
    // is then a reduction the op does itself, so keep them whole.
    SmallVector<int64_t> special;
    if (bn.getTrainingMode())
      for (int64_t d = 0; d < static_cast<int64_t>(in[0].size()); ++d)
        if (d != 1)
          special.push_back(d);
    DimFactors x = factorsFor(rule, in[0], special);
    rule.operands.push_back(x);
    for (size_t k = 1; k < in.size(); ++k)
      rule.operands.push_back(DimFactors{x[1]});
    rule.results.push_back(x);
    for (size_t r = 1; r < out.size(); ++r)
      rule.results.push_back(DimFactors{x[1]});
    return rule;
  }
};

/// The losses and their gradients, over x [N, C, d1, ..., dk] (scores,
/// input or log_prob), labels [N, d1, ..., dk] and an optional weight [C]: the
/// class axis is whole (a log-softmax row, a gather along it); N and d1..dk
/// are parallel when every target position gives its own result ("none", and
/// the gradients of "sum", whose dY is one value read whole), a reduction for
/// the forward "sum" without log_prob (partial sums, then an all-reduce), and
/// whole for "mean" (its divisor, the sum of the weights, is global).
template <typename Op> struct LossRule : public StaticRule<LossRule<Op>, Op> {
  FailureOr<ShardingRule> build(Op op, Shapes &in, Shapes &out) const {
    constexpr bool isGrad = std::is_same_v<Op, SoftmaxCrossEntropyLossGradOp> ||
                            std::is_same_v<Op, NegativeLogLikelihoodLossGradOp>;
    // Operands: [dY,] x, labels[, weight].
    const size_t xi = isGrad ? 1 : 0;
    if (in.size() < xi + 2 || in[xi].size() < 2)
      return failure();
    StringRef reduction = op.getReduction();
    FactorKind kind = FactorKind::Parallel;
    if (reduction == "mean")
      kind = FactorKind::Whole;
    else if (reduction == "sum" && !isGrad)
      kind = out.size() > 1 ? FactorKind::Whole : FactorKind::Reduction;
    ShardingRule rule;
    const SmallVector<int64_t> &x = in[xi];
    SmallVector<int64_t> others;
    for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d)
      if (d != 1)
        others.push_back(d);
    DimFactors xd(x.size());
    for (auto [d, size] : llvm::enumerate(x))
      if (size != 1)
        xd[d].push_back(
            rule.addFactor(size, d == 1 ? FactorKind::Whole : kind));
    DimFactors labels;
    for (int64_t d : others)
      labels.push_back(xd[d]);
    DimFactors weight{xd[1]};
    bool perPosition = reduction == "none";
    if (isGrad) {
      rule.operands.push_back(perPosition ? labels : DimFactors(in[0].size()));
      rule.operands.push_back(xd);
      rule.operands.push_back(labels);
      if (in.size() > 3)
        rule.operands.push_back(weight);
      rule.results.push_back(xd);
      return rule;
    }
    rule.operands.push_back(xd);
    rule.operands.push_back(labels);
    if (in.size() > 2)
      rule.operands.push_back(weight);
    rule.results.push_back(perPosition ? labels : DimFactors(out[0].size()));
    for (size_t r = 1; r < out.size(); ++r)
      rule.results.push_back(xd);
    return rule;
  }
};

/// LayerNormalizationGrad (dY, X, Scale) -> (dX, dScale, dB): the normalized
/// axes (axis .. rank - 1) are whole, as in the forward op; the outer axes
/// are reductions: splitting them splits dY, X and dX by rows and leaves
/// partial sums of dScale and dB (which lack them) to add up. Scale and the
/// normalized-shape results take the normalized axes' factors.
struct LayerNormGradRule
    : public StaticRule<LayerNormGradRule, LayerNormalizationGradOp> {
  FailureOr<ShardingRule> build(LayerNormalizationGradOp op, Shapes &in,
                                Shapes &out) const {
    if (in.size() != 3 || out.size() != 3)
      return failure();
    int64_t rank = in[1].size();
    auto axis = normalizeAxis(op.getAxis(), rank);
    if (!axis)
      return failure();
    SmallVector<int64_t> outer;
    for (int64_t d = 0; d < *axis; ++d)
      outer.push_back(d);
    ShardingRule rule;
    DimFactors x = factorsFor(rule, in[1], outer, FactorKind::Reduction);
    // The normalized axes are whole.
    for (int64_t d = *axis; d < rank; ++d)
      for (int f : x[d])
        rule.factors[f].kind = FactorKind::Whole;
    DimFactors normalized(x.begin() + *axis, x.end());
    rule.operands = {x, x, normalized};
    rule.results = {x, normalized, normalized};
    return rule;
  }
};

struct TransposeRule : public StaticRule<TransposeRule, TransposeOp> {
  FailureOr<ShardingRule> build(TransposeOp t, Shapes &in, Shapes &out) const {
    ShardingRule rule;
    DimFactors x = factorsFor(rule, in[0]);
    int64_t rank = in[0].size();
    SmallVector<int64_t> perm;
    if (auto p = t.getPerm())
      perm.assign(p->begin(), p->end());
    else
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    DimFactors y(rank);
    for (int64_t d = 0; d < rank; ++d)
      y[d] = x[perm[d]];
    rule.operands = {x};
    rule.results = {y};
    return rule;
  }
};

template <typename Op>
struct ReshapeLikeRule : public StaticRule<ReshapeLikeRule<Op>, Op> {
  FailureOr<ShardingRule> build(Op op, Shapes &in, Shapes &out) const {
    return makeReshapeRule(in[0], out[0], op->getNumOperands());
  }
};

/// Gather: result = data[:axis] + indices + data[axis + 1:]; the gathered
/// axis is whole, the others and the indices' dimensions parallel.
struct GatherRule : public StaticRule<GatherRule, GatherOp> {
  FailureOr<ShardingRule> build(GatherOp g, Shapes &in, Shapes &out) const {
    int64_t rank = in[0].size();
    int64_t axis = normalizeAxis(g.getAxis(), rank).value_or(0);
    ShardingRule rule;
    DimFactors data = factorsFor(rule, in[0], {axis});
    DimFactors indices = factorsFor(rule, in[1]);
    DimFactors y;
    for (int64_t d = 0; d < axis; ++d)
      y.push_back(data[d]);
    for (auto &f : indices)
      y.push_back(f);
    for (int64_t d = axis + 1; d < rank; ++d)
      y.push_back(data[d]);
    rule.operands = {data, indices};
    rule.results = {y};
    return rule;
  }
};

/// GatherElements: data, indices and result share every axis but `axis`.
struct GatherElementsRule
    : public StaticRule<GatherElementsRule, GatherElementsOp> {
  FailureOr<ShardingRule> build(GatherElementsOp g, Shapes &in,
                                Shapes &out) const {
    int64_t rank = in[0].size();
    int64_t axis = normalizeAxis(g.getAxis(), rank).value_or(0);
    ShardingRule rule;
    DimFactors idx = factorsFor(rule, in[1], {axis});
    DimFactors data(rank);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && in[0][d] == in[1][d])
        data[d] = idx[d];
    if (in[0][axis] != 1)
      data[axis].push_back(rule.addFactor(in[0][axis], FactorKind::Whole));
    rule.operands = {data, idx};
    rule.results = {idx};
    return rule;
  }
};

/// OneHot: the result has the indices' axes and a new one of `depth` at
/// `axis`, which stays whole (a device computes every class of its
/// indices); depth and values are read whole.
struct OneHotRule : public StaticRule<OneHotRule, OneHotOp> {
  FailureOr<ShardingRule> build(OneHotOp op, Shapes &in, Shapes &out) const {
    int64_t rank = out[0].size();
    int64_t axis = normalizeAxis(op.getAxis(), rank).value_or(rank - 1);
    ShardingRule rule;
    DimFactors y(rank);
    for (int64_t d = 0; d < rank; ++d)
      if (out[0][d] != 1)
        y[d].push_back(rule.addFactor(
            out[0][d], d == axis ? FactorKind::Whole : FactorKind::Parallel));
    DimFactors idx;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        idx.push_back(y[d]);
    DimFactors values(in[2].size());
    for (auto [d, size] : llvm::enumerate(in[2]))
      if (size != 1)
        values[d].push_back(rule.addFactor(size, FactorKind::Whole));
    rule.operands = {idx, DimFactors(in[1].size()), values};
    rule.results = {y};
    return rule;
  }
};

template <typename... Ops> void attachElementwise(MLIRContext *ctx) {
  (Ops::template attachInterface<ElementwiseRule<Ops>>(*ctx), ...);
}
template <template <typename> class Model, typename... Ops>
void attachAll(MLIRContext *ctx) {
  (Ops::template attachInterface<Model<Ops>>(*ctx), ...);
}

} // namespace

void hetpar::onnx::attachShardingRules(MLIRContext *ctx) {
  attachElementwise<
      SqrtOp, ReciprocalOp, NegOp, AbsOp, ExpOp, LogOp, ErfOp, TanhOp,
      SigmoidOp, ReluOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp,
      CoshOp, AsinhOp, AcoshOp, AtanhOp, FloorOp, CeilOp, RoundOp, SignOp,
      SoftplusOp, SoftsignOp, HardSwishOp, MishOp, NotOp, IdentityOp,
      LeakyReluOp, EluOp, CeluOp, SeluOp, HardSigmoidOp, ThresholdedReluOp,
      GeluOp, IsNaNOp, IsInfOp, ClipOp, CastOp, CastLikeOp, DropoutOp, AddOp,
      SubOp, MulOp, DivOp, EqualOp, LessOp, LessOrEqualOp, GreaterOp,
      GreaterOrEqualOp, AndOp, OrOp, XorOp, PowOp, ModOp, PReluOp, WhereOp,
      MaxOp, MinOp, SumOp, MeanOp, ExpandOp>(ctx);
  MatMulOp::attachInterface<MatMulRule>(*ctx);
  GemmOp::attachInterface<GemmRule>(*ctx);
  ConvOp::attachInterface<ConvRule>(*ctx);
  BatchNormalizationOp::attachInterface<BatchNormRule>(*ctx);
  TransposeOp::attachInterface<TransposeRule>(*ctx);
  GatherOp::attachInterface<GatherRule>(*ctx);
  GatherElementsOp::attachInterface<GatherElementsRule>(*ctx);
  OneHotOp::attachInterface<OneHotRule>(*ctx);
  attachAll<ReshapeLikeRule, ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp>(ctx);
  attachAll<SingleAxisRule, SoftmaxOp, LogSoftmaxOp, ArgMaxOp, ArgMinOp,
            CumSumOp, SoftmaxGradOp, LogSoftmaxGradOp>(ctx);
  LayerNormalizationOp::attachInterface<TrailingAxesRule<LayerNormalizationOp>>(
      *ctx);
  LayerNormalizationGradOp::attachInterface<LayerNormGradRule>(*ctx);
  attachAll<ChangedAxesRule, SliceOp, PadOp, TileOp, TriluOp>(ctx);
  ResizeOp::attachInterface<ResizeRule<ResizeOp>>(*ctx);
  attachAll<PoolRule, MaxPoolOp, AveragePoolOp, GlobalAveragePoolOp,
            GlobalMaxPoolOp>(ctx);
  InstanceNormalizationOp::attachInterface<
      InstanceNormRule<InstanceNormalizationOp>>(*ctx);
  attachAll<ReduceRule, ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp,
            ReduceProdOp, ReduceL1Op, ReduceL2Op, ReduceSumSquareOp,
            ReduceLogSumExpOp>(ctx);
  attachAll<LossRule, SoftmaxCrossEntropyLossOp, NegativeLogLikelihoodLossOp,
            SoftmaxCrossEntropyLossGradOp, NegativeLogLikelihoodLossGradOp>(
      ctx);
  ConcatOp::attachInterface<ConcatAxisRule<ConcatOp>>(*ctx);
  SplitOp::attachInterface<SplitRule>(*ctx);
  // dist.transfer keeps its value's global shape: the identity, so that the
  // batch analysis and every other reader of rules follow a value through
  // the global form's transfers as through an elementwise op. (The dist
  // dialect cannot implement an interface of this library, which uses it;
  // it is a dependent dialect of this one, loaded first.)
  dist::TransferOp::attachInterface<ElementwiseRule<dist::TransferOp>>(*ctx);
}
