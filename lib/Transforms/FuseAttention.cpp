//===- FuseAttention.cpp - hetpar-onnx-fuse-attention
//----------------------===//
//
// The exported attention pattern MatMul(Softmax(mask(scale(MatMul(Q, KT)))),
// V) becomes one onnx.FusedAttention, whose kernels never materialize the
// score matrix (Passes.td has the rules). A series of match helpers, each
// peeling one optional step off the chain from the Softmax back to the
// scores' MatMul.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hetpar {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// What the chain between the scores' MatMul and the Softmax holds.
struct AttentionMatch {
  Value q, kt, v, scale, mask, fill;
  bool divide = false, keep = true;
  /// The matched ops, from the product with V back to the scores' MatMul.
  SmallVector<Operation *> chain;
};

/// A head transpose folded into FusedAttention: the op reads `stored`
/// through `perm` (or writes its result through it) instead of a copy.
struct FoldedTranspose {
  Value stored;
  SmallVector<int64_t> perm;
  Operation *transpose = nullptr;
};

/// The static shape of `v`, or none.
std::optional<ArrayRef<int64_t>> staticShape(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return std::nullopt;
  return t.getShape();
}

bool isScalar(Value v) {
  auto s = staticShape(v);
  auto n = s ? getNumElements(*s) : std::nullopt;
  return n && *n == 1;
}

/// The op producing `x` when it is of type OpTy and `x` is its only use (the
/// op then dies with the fusion).
template <typename OpTy> OpTy soleProducer(Value x) {
  auto op = x.getDefiningOp<OpTy>();
  return op && x.hasOneUse() ? op : OpTy();
}

/// Where(c, S, fill) (keep) or Where(c, fill, S): the select mask.
Value matchSelectMask(Value x, AttentionMatch &m) {
  auto where = soleProducer<onnx::WhereOp>(x);
  if (!where)
    return x;
  Value c = where->getOperand(0), a = where->getOperand(1),
        b = where->getOperand(2);
  if (isScalar(b) && a.getType() == x.getType()) {
    m.keep = true;
    m.fill = b;
  } else if (isScalar(a) && b.getType() == x.getType()) {
    m.keep = false;
    m.fill = a;
    a = b;
  } else {
    return x;
  }
  m.mask = c;
  m.chain.push_back(where);
  return a;
}

/// Add(S, mask) or Add(mask, S), the mask no larger than the scores: the
/// additive mask.
Value matchAddMask(Value x, AttentionMatch &m) {
  auto add = soleProducer<onnx::AddOp>(x);
  if (!add)
    return x;
  for (unsigned i : {0u, 1u}) {
    Value s = add->getOperand(i), mask = add->getOperand(1 - i);
    if (s.getType() != x.getType() || !s.getDefiningOp())
      continue;
    if (!isa<onnx::MatMulOp, onnx::MulOp, onnx::DivOp>(s.getDefiningOp()))
      continue;
    m.mask = mask;
    m.chain.push_back(add);
    return s;
  }
  return x;
}

/// Mul(S, scale), Mul(scale, S) or Div(S, scale), scale a scalar.
Value matchScale(Value x, AttentionMatch &m) {
  Operation *op = soleProducer<onnx::MulOp>(x);
  if (!op)
    op = soleProducer<onnx::DivOp>(x);
  if (!op)
    return x;
  bool div = isa<onnx::DivOp>(op);
  for (unsigned i = 0, n = div ? 1 : 2; i < n; ++i) {
    Value s = op->getOperand(i), scale = op->getOperand(1 - i);
    if (s.getType() != x.getType() || !isScalar(scale) ||
        !s.getDefiningOp<onnx::MatMulOp>())
      continue;
    m.scale = scale;
    m.divide = div;
    m.chain.push_back(op);
    return s;
  }
  return x;
}

/// Q, KT and V of rank r >= 2 with the scores' leading dimensions (no
/// broadcasting inside either product).
bool sameBatch(const AttentionMatch &m, ArrayRef<int64_t> scores) {
  for (Value v : {m.q, m.kt, m.v}) {
    auto s = staticShape(v);
    if (!s || s->size() != scores.size() ||
        s->drop_back(2) != scores.drop_back(2))
      return false;
  }
  return true;
}

/// The whole pattern ending in `softmax`, or none.
std::optional<AttentionMatch> matchAttention(onnx::SoftmaxOp softmax) {
  Value p = softmax->getResult(0);
  auto scores = staticShape(p);
  if (!scores || scores->size() < 2 || !p.hasOneUse())
    return std::nullopt;
  int64_t axis = softmax.getAxis();
  if (axis != -1 && axis != static_cast<int64_t>(scores->size()) - 1)
    return std::nullopt;
  auto pv = dyn_cast<onnx::MatMulOp>(*p.getUsers().begin());
  if (!pv || pv->getOperand(0) != p)
    return std::nullopt;
  AttentionMatch m;
  m.v = pv->getOperand(1);
  m.chain = {pv, softmax};
  Value x = softmax->getOperand(0);
  x = matchSelectMask(x, m);
  if (!m.mask)
    x = matchAddMask(x, m);
  x = matchScale(x, m);
  auto qk = soleProducer<onnx::MatMulOp>(x);
  if (!qk)
    return std::nullopt;
  m.q = qk->getOperand(0);
  m.kt = qk->getOperand(1);
  m.chain.push_back(qk);
  if (!sameBatch(m, *scores) || !staticShape(pv->getResult(0)))
    return std::nullopt;
  return m;
}

/// `x` = Transpose(stored) used only by the product the fusion removes, with
/// a perm that keeps a matrix dimension contiguous: read `stored` instead.
FoldedTranspose foldInput(Value x) {
  auto t = soleProducer<onnx::TransposeOp>(x);
  auto shape = staticShape(x);
  if (!t || !shape)
    return {x, {}, nullptr};
  SmallVector<int64_t> perm = t.getPermutation(shape->size());
  if (!onnx::FusedAttentionOp::keepsMatrixContiguous(perm, /*result=*/false))
    return {x, {}, nullptr};
  return {t->getOperand(0), perm, t};
}

/// The product's result `y` used only by a Transpose that keeps Y's last
/// dimension last: write the Transpose's result instead.
FoldedTranspose foldOutput(Value y) {
  auto shape = staticShape(y);
  if (!y.hasOneUse() || !shape)
    return {y, {}, nullptr};
  auto t = dyn_cast<onnx::TransposeOp>(*y.getUsers().begin());
  if (!t)
    return {y, {}, nullptr};
  SmallVector<int64_t> perm = t.getPermutation(shape->size());
  if (!onnx::FusedAttentionOp::keepsMatrixContiguous(perm, /*result=*/true))
    return {y, {}, nullptr};
  return {t->getResult(0), perm, t};
}

/// A grouped-query repeat folded into FusedAttention (`kv_repeat`): the op
/// reads `stored`, the K or V heads before their repeat, and `repeat` query
/// heads share each.
struct FoldedRepeat {
  Value stored;
  int64_t repeat = 1;
  /// The Reshape, Expand and Unsqueeze that die with the fusion.
  SmallVector<Operation *> ops;
};

/// `x` = Reshape(Expand(Unsqueeze(kv))) with each used only by the next and
/// static shapes: kv [..., a, ...] with a 1 inserted after axis `axis`,
/// expanded to g along it, and the two merged into a * g at `axis` of x
/// (Hugging Face's repeat_kv: head h of x is head floor(h / g) of kv). Else
/// `x` itself with a repeat of 1.
FoldedRepeat foldRepeat(Value x, int64_t axis) {
  FoldedRepeat none{x, 1, {}};
  auto reshape = soleProducer<onnx::ReshapeOp>(x);
  auto expand = reshape ? soleProducer<onnx::ExpandOp>(reshape->getOperand(0))
                        : onnx::ExpandOp();
  auto unsqueeze = expand
                       ? soleProducer<onnx::UnsqueezeOp>(expand->getOperand(0))
                       : onnx::UnsqueezeOp();
  if (!unsqueeze)
    return none;
  Value kv = unsqueeze->getOperand(0);
  auto xs = staticShape(x), ks = staticShape(kv);
  auto us = staticShape(unsqueeze->getResult(0));
  auto es = staticShape(expand->getResult(0));
  if (!xs || !ks || !us || !es || ks->size() != xs->size() || axis < 0 ||
      axis >= static_cast<int64_t>(xs->size()))
    return none;
  SmallVector<int64_t> unsqueezed(ks->begin(), ks->end());
  unsqueezed.insert(unsqueezed.begin() + axis + 1, 1);
  int64_t g = (*es)[axis + 1];
  SmallVector<int64_t> expanded(unsqueezed), merged(ks->begin(), ks->end());
  expanded[axis + 1] = g;
  merged[axis] *= g;
  if (g < 2 || *us != ArrayRef(unsqueezed) || *es != ArrayRef(expanded) ||
      *xs != ArrayRef(merged))
    return none;
  return {kv, g, {reshape, expand, unsqueeze}};
}

/// The repeats of KT and V when both fold with one factor, read through
/// their perms (the head axis r - 3 of what the op reads is stored at
/// perm[r - 3]); else none.
std::optional<std::pair<FoldedRepeat, FoldedRepeat>>
foldRepeats(const FoldedTranspose &kt, const FoldedTranspose &v) {
  auto shape = staticShape(kt.stored);
  // A rank of at most 8 (the device library's HP_MAX_RANK): code generation
  // splits the head axis in two.
  if (!shape || shape->size() < 3 || shape->size() > 8)
    return std::nullopt;
  int64_t head = static_cast<int64_t>(shape->size()) - 3;
  auto storedAxis = [&](const FoldedTranspose &f) {
    return f.transpose ? f.perm[head] : head;
  };
  FoldedRepeat k = foldRepeat(kt.stored, storedAxis(kt)),
               w = foldRepeat(v.stored, storedAxis(v));
  if (k.repeat < 2 || k.repeat != w.repeat)
    return std::nullopt;
  return std::make_pair(k, w);
}

/// The perm attribute of a folded transpose, or null.
DenseI64ArrayAttr permAttr(OpBuilder &b, const FoldedTranspose &f) {
  return f.transpose ? b.getDenseI64ArrayAttr(f.perm) : DenseI64ArrayAttr();
}

/// Replaces the matched chain, and the head transposes around it, with one
/// FusedAttention.
void fuse(const AttentionMatch &m) {
  Operation *pv = m.chain.front();
  FoldedTranspose q = foldInput(m.q), kt = foldInput(m.kt), v = foldInput(m.v),
                  y = foldOutput(pv->getResult(0));
  auto repeats = foldRepeats(kt, v);
  Value ktIn = repeats ? repeats->first.stored : kt.stored;
  Value vIn = repeats ? repeats->second.stored : v.stored;
  OpBuilder b(y.transpose ? y.transpose : pv);
  auto fused = onnx::FusedAttentionOp::create(
      b, pv->getLoc(), y.stored.getType(), q.stored, ktIn, vIn, m.scale, m.mask,
      m.fill, b.getI64IntegerAttr(m.divide ? 1 : 0),
      b.getI64IntegerAttr(m.keep ? 1 : 0), permAttr(b, q), permAttr(b, kt),
      permAttr(b, v), permAttr(b, y),
      b.getI64IntegerAttr(repeats ? repeats->first.repeat : 1));
  y.stored.replaceAllUsesWith(fused->getResult(0));
  if (y.transpose)
    y.transpose->erase();
  for (Operation *op : m.chain)
    op->erase();
  for (const FoldedTranspose *f : {&q, &kt, &v})
    if (f->transpose && f->transpose->use_empty())
      f->transpose->erase();
  if (repeats)
    for (const FoldedRepeat *r : {&repeats->first, &repeats->second})
      for (Operation *op : r->ops)
        if (op->use_empty())
          op->erase();
}

struct FuseAttentionPass
    : public hetpar::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<onnx::SoftmaxOp> softmaxes;
    getOperation().walk([&](onnx::SoftmaxOp op) { softmaxes.push_back(op); });
    for (onnx::SoftmaxOp op : softmaxes)
      if (auto m = matchAttention(op))
        fuse(*m);
  }
};

} // namespace
