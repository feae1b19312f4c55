//===- EmitAttention.cpp - onnx.FusedAttention ----------------------------===//
//
// FusedAttention runs as hp_attention_launch (hetpar_device.h) over the
// product of the leading dimensions; the mask's strides along them, along
// the queries and along the keys say how it broadcasts.
//
//===----------------------------------------------------------------------===//

#include "EmitAttention.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <functional>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;
namespace onnx = hetpar::onnx;

namespace {

/// The strides, along the logical dimensions the op reads, of an operand
/// stored contiguously and read through Transpose(perm) (Q, KT, V), or of
/// the result, Transpose(Y, perm) stored contiguously (`result`).
SmallVector<int64_t>
logicalStrides(Value v, std::optional<ArrayRef<int64_t>> perm, bool result) {
  SmallVector<int64_t> stored = stridesOf(shapeOf(v));
  return onnx::FusedAttentionOp::permuted(stored, perm, result);
}

/// The mask's element strides along each dimension of the scores
/// [..., Lq, Lk] it broadcasts to (ONNX aligns shapes at the right): 0 where
/// the mask has no such dimension or extent 1.
SmallVector<int64_t> maskStrides(Value mask, size_t rank) {
  SmallVector<int64_t> strides(rank, 0);
  if (!mask)
    return strides;
  ArrayRef<int64_t> m = shapeOf(mask);
  int64_t stride = 1;
  for (size_t k = 0; k < m.size(); ++k) {
    size_t md = m.size() - 1 - k, d = rank - 1 - k;
    if (m[md] != 1)
      strides[d] = stride;
    stride *= m[md];
  }
  return strides;
}

/// "hp_dims{{a, b}}" (an hp_dims initializer; "{{0}}" when empty).
std::string dimsLiteral(ArrayRef<int64_t> v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "hp_dims{{" + (s.empty() ? std::string("0") : s) + "}}";
}

/// An hp_attention_layout initializer from logical strides, for matrices
/// of `rows` x `cols`. A matrix dimension of extent 1 has no meaningful
/// stride (a D of 1 gives KT strides 1 and 1): it is set so that the layout
/// reads as row-major with a leading dimension of at least `cols`, or as
/// column-major when the columns are not contiguous, as BLAS requires.
std::string layoutLiteral(ArrayRef<int64_t> strides, int64_t rows,
                          int64_t cols) {
  size_t r = strides.size();
  int64_t row = strides[r - 2], col = strides[r - 1];
  if (cols == 1)
    col = 1;
  if (rows == 1)
    row = col == 1 ? std::max<int64_t>(cols, 1) : 1;
  return llvm::formatv("hp_attention_layout{{{0}, {1}, {2}}",
                       dimsLiteral(strides.drop_back(2)), row, col)
      .str();
}

/// A float constant's values as doubles (f32 and f64 only).
std::optional<std::vector<double>> floatValues(Value v) {
  ElementsAttr attr = getConstantElements(v);
  Type elt = llvm::cast<ShapedType>(v.getType()).getElementType();
  if (!attr || !(elt.isF32() || elt.isF64()))
    return std::nullopt;
  auto bytes = getElementsBytes(attr);
  if (failed(bytes))
    return std::nullopt;
  std::vector<double> out;
  size_t width = elt.isF32() ? 4 : 8;
  for (size_t k = 0; k + width <= bytes->size(); k += width) {
    if (width == 4) {
      float f;
      std::memcpy(&f, bytes->data() + k, 4);
      out.push_back(f);
    } else {
      double d;
      std::memcpy(&d, bytes->data() + k, 8);
      out.push_back(d);
    }
  }
  return out;
}

/// A masked score at or below this has an exponential of exactly 0 next to
/// any finite score of a row (float's and double's exp underflow far above
/// it); -inf and the exporters' finfo.min (-3.4e38) are below.
constexpr double kMaskedScore = -1e30;

/// The offset of a constant causal mask: for every query i, key j is masked
/// (a score whose exponential is 0: kMaskedScore or below) exactly when
/// j > i + (Lk - Lq), and Lk >= Lq, so every query keeps key 0. None for any
/// other mask, a mask computed at run time, or a 16-bit one.
std::optional<int64_t> causalOffset(onnx::FusedAttentionOp a, int64_t lq,
                                    int64_t lk) {
  Value mask = a.getMask();
  if (!mask || lk < lq)
    return std::nullopt;
  ArrayRef<int64_t> m = shapeOf(mask);
  if (m.size() < 2 || m[m.size() - 2] != lq || m.back() != lk)
    return std::nullopt;
  // Whether element k of the mask masks its score.
  std::function<bool(int64_t)> masked;
  std::vector<char> bools;
  std::optional<std::vector<double>> adds;
  if (a.getFill()) {
    auto fill = floatValues(a.getFill());
    ElementsAttr attr = getConstantElements(mask);
    auto bytes = attr ? getElementsBytes(attr) : FailureOr<std::vector<char>>();
    if (!fill || fill->size() != 1 || !((*fill)[0] <= kMaskedScore) ||
        failed(bytes))
      return std::nullopt;
    bools = std::move(*bytes);
    // `keep` is captured by value: it ends with this block, `masked` is
    // called after it.
    bool keep = a.getKeep() != 0;
    masked = [&bools, keep](int64_t k) { return (bools[k] != 0) != keep; };
  } else {
    adds = floatValues(mask);
    if (!adds)
      return std::nullopt;
    masked = [&](int64_t k) { return (*adds)[k] <= kMaskedScore; };
  }
  int64_t offset = lk - lq, planes = 1;
  for (int64_t d : m.drop_back(2))
    planes *= d;
  for (int64_t p = 0, k = 0; p < planes; ++p)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lk; ++j, ++k)
        if (masked(k) != (j > i + offset))
          return std::nullopt;
  return offset;
}

/// Under `kv_repeat` g > 1, splits the head axis (`head`, the leading
/// dimension r - 3) of logical strides in two, (H / g, g), so that the
/// kernels' row-major walk over the leading dimensions reaches KT's and V's
/// head floor(h / g) for Q's head h: stride s becomes (g s, s) for Q, Y and
/// the mask, which have every head, and (s, 0) for KT and V (`shared`),
/// whose g query heads read one.
SmallVector<int64_t> splitHeadStrides(ArrayRef<int64_t> strides, size_t head,
                                      int64_t g, bool shared) {
  SmallVector<int64_t> out(strides.begin(), strides.end());
  if (g == 1)
    return out;
  int64_t s = strides[head];
  out[head] = shared ? s : g * s;
  out.insert(out.begin() + head + 1, shared ? 0 : s);
  return out;
}

} // namespace

int hetpar::codegen::emitFusedAttention(Operation *op,
                                        const LibraryEmitContext &ctx) {
  auto a = llvm::cast<onnx::FusedAttentionOp>(op);
  SmallVector<int64_t> q =
      onnx::FusedAttentionOp::permuted(shapeOf(a.getQ()), a.getQPerm());
  SmallVector<int64_t> kt =
      onnx::FusedAttentionOp::permuted(shapeOf(a.getKT()), a.getKtPerm());
  SmallVector<int64_t> v =
      onnx::FusedAttentionOp::permuted(shapeOf(a.getV()), a.getVPerm());
  size_t rank = q.size();
  // The leading dimensions the kernels walk: Q's, with the head axis split
  // in two under kv_repeat (splitHeadStrides).
  const int64_t g = a.getKvRepeat();
  const size_t head = rank - 3;
  SmallVector<int64_t> lead(ArrayRef<int64_t>(q).drop_back(2));
  if (g > 1) {
    lead[head] /= g;
    lead.insert(lead.begin() + head + 1, g);
  }
  auto strides = [&](SmallVector<int64_t> logical, bool shared) {
    return splitHeadStrides(logical, head, g, shared);
  };
  int64_t batch = 1;
  for (int64_t d : lead)
    batch *= d;
  Value mask = a.getMask();
  int kind = !mask ? 0 : a.getFill() ? 2 : 1;
  Type elt = llvm::cast<RankedTensorType>(a.getQ().getType()).getElementType();
  std::string T = ctx.storageType(elt), A = ctx.accType(elt);
  std::string M = kind == 2 ? "bool" : T;
  auto opt = [&](Value x, const std::string &type) {
    return x ? ctx.ptr(x) : "(const " + type + " *)0";
  };
  int64_t lq = q[rank - 2], lk = kt[rank - 1], d = q.back(), dv = v.back();
  std::string layouts =
      layoutLiteral(
          strides(logicalStrides(a.getQ(), a.getQPerm(), false), false), lq,
          d) +
      ", " +
      layoutLiteral(
          strides(logicalStrides(a.getKT(), a.getKtPerm(), false), true), d,
          lk) +
      ", " +
      layoutLiteral(
          strides(logicalStrides(a.getV(), a.getVPerm(), false), true), lk,
          dv) +
      ", " +
      layoutLiteral(
          strides(logicalStrides(a.getY(), a.getYPerm(), true), false), lq,
          dv) +
      ", " + layoutLiteral(strides(maskStrides(mask, rank), false), 2, 2);
  std::optional<int64_t> causal = causalOffset(a, lq, lk);
  ctx.line(llvm::formatv(
      "hp_attention_launch<{0}, {1}, {2}>(ctx, hp_attention_shape{{{3}, {4}, "
      "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}}, {16}, "
      "{17}, {18}, {19}, {20}, {21}, {22});",
      T, A, M, batch, lq, lk, d, dv, lead.size(), dimsLiteral(lead), layouts,
      kind, a.getKeep(), a.getDivide(), causal ? 1 : 0, causal.value_or(0),
      ctx.ptr(a.getQ()), ctx.ptr(a.getKT()), ctx.ptr(a.getV()),
      opt(a.getScale(), T), opt(mask, M), opt(a.getFill(), T),
      ctx.ptr(a.getY())));
  return 1;
}
