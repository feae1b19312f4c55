//===- EmitAttention.cpp - onnx.FusedAttention ----------------------------===//
//
// FusedAttention runs as hp_attention_launch (hetpar_device.h) over the
// product of the leading dimensions; the mask's strides along them, along
// the queries and along the keys say how it broadcasts.
//
//===----------------------------------------------------------------------===//

#include "EmitAttention.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;
namespace onnx = hetpar::onnx;

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// Row-major element strides of `shape`.
SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// The strides, along the logical dimensions the op reads, of an operand
/// stored contiguously and read through Transpose(perm) (Q, KT, V), or of
/// the result, Transpose(Y, perm) stored contiguously (`result`).
SmallVector<int64_t>
logicalStrides(Value v, std::optional<ArrayRef<int64_t>> perm, bool result) {
  SmallVector<int64_t> stored = rowMajorStrides(shapeOf(v));
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
  ArrayRef<int64_t> lead = ArrayRef<int64_t>(q).drop_back(2);
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
      layoutLiteral(logicalStrides(a.getQ(), a.getQPerm(), false), lq, d) +
      ", " +
      layoutLiteral(logicalStrides(a.getKT(), a.getKtPerm(), false), d, lk) +
      ", " +
      layoutLiteral(logicalStrides(a.getV(), a.getVPerm(), false), lk, dv) +
      ", " +
      layoutLiteral(logicalStrides(a.getY(), a.getYPerm(), true), lq, dv) +
      ", " + layoutLiteral(maskStrides(mask, rank), 2, 2);
  ctx.line(llvm::formatv(
      "hp_attention_launch<{0}, {1}, {2}>(ctx, hp_attention_shape{{{3}, {4}, "
      "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}}, {14}, {15}, {16}, "
      "{17}, {18}, {19}, {20});",
      T, A, M, batch, lq, lk, d, dv, lead.size(), dimsLiteral(lead), layouts,
      kind, a.getKeep(), a.getDivide(), ctx.ptr(a.getQ()), ctx.ptr(a.getKT()),
      ctx.ptr(a.getV()), opt(a.getScale(), T), opt(mask, M),
      opt(a.getFill(), T), ctx.ptr(a.getY())));
  return 1;
}
