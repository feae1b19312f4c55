//===- FoldTransposes.cpp - hetpar-onnx-fold-transposes
//--------------------===//
//
// Matrix transposes feeding matrix products become Gemm's transA/transB, so
// that code generation passes BLAS a transposition flag instead of copying
// the matrix (Passes.td has the rules).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace hetpar {
#define GEN_PASS_DEF_FOLDTRANSPOSESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// The static shape of `v`, a floating-point tensor, or none.
std::optional<ArrayRef<int64_t>> staticShape(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || !llvm::isa<FloatType>(t.getElementType()))
    return std::nullopt;
  return t.getShape();
}

/// The matrix that `v` transposes: v = Transpose(X) with X of rank 2 (perm
/// [1, 0] or absent). Null otherwise.
Value transposedMatrix(Value v) {
  auto t = v.getDefiningOp<onnx::TransposeOp>();
  if (!t)
    return Value();
  Value x = t->getOperand(0);
  auto shape = staticShape(x);
  if (!shape || shape->size() != 2)
    return Value();
  auto perm = t->getAttrOfType<DenseI64ArrayAttr>("perm");
  if (perm && perm.asArrayRef() != ArrayRef<int64_t>{1, 0})
    return Value();
  return x;
}

/// A Gemm of A and B (no C) with the given flags, built by `g`.
Value gemm(GradientBuilder &g, Value a, Value b, bool ta, bool tb) {
  return g.make<onnx::GemmOp>(a, b, Value(), 1.0f, 1.0f, int64_t(ta),
                              int64_t(tb));
}

/// MatMul(A, Transpose(W)) -> Reshape(Gemm(Reshape(A), W, transB)); or
/// MatMul(Transpose(X), B) -> Gemm(X, B, transA). Null when neither applies.
Value tryFoldMatMul(onnx::MatMulOp op) {
  Value a = op->getOperand(0), b = op->getOperand(1);
  auto as = staticShape(a), bs = staticShape(b),
       ys = staticShape(op->getResult(0));
  if (!as || !bs || !ys || bs->size() != 2 || as->empty())
    return Value();
  OpBuilder builder(op);
  GradientBuilder g(builder, op->getLoc(), {});
  if (Value w = transposedMatrix(b); w && as->size() >= 2) {
    int64_t rows = 1;
    for (int64_t d : as->drop_back())
      rows *= d;
    Value a2 = g.reshape(a, {rows, as->back()});
    Value y = gemm(g, a2, w, false, true);
    return y ? g.reshape(y, *ys) : Value();
  }
  if (Value x = transposedMatrix(a); x && as->size() == 2)
    return gemm(g, x, b, true, false);
  return Value();
}

/// Gemm with a transposed operand: the flag toggles and the operand is the
/// matrix itself.
void foldGemm(onnx::GemmOp op) {
  for (auto [index, flag] :
       {std::pair<unsigned, llvm::StringLiteral>{0, "transA"}, {1, "transB"}}) {
    Value x = transposedMatrix(op->getOperand(index));
    if (!x)
      continue;
    auto current = op->getAttrOfType<IntegerAttr>(flag);
    bool on = current && current.getInt() != 0;
    op->setAttr(flag, Builder(op->getContext()).getI64IntegerAttr(on ? 0 : 1));
    op->setOperand(index, x);
  }
}

/// Erases `v`'s producer and, transitively, its operands' producers that
/// are left without users (a fold built and then not used).
void eraseUnused(Value v) {
  Operation *op = v ? v.getDefiningOp() : nullptr;
  if (!op || !op->use_empty())
    return;
  SmallVector<Value> operands(op->getOperands());
  op->erase();
  for (Value operand : operands)
    eraseUnused(operand);
}

struct FoldTransposesPass
    : public hetpar::impl::FoldTransposesPassBase<FoldTransposesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<onnx::MatMulOp, onnx::GemmOp>(op))
        products.push_back(op);
    });
    llvm::SetVector<Operation *> maybeDead;
    for (Operation *op : products) {
      for (Value operand : op->getOperands())
        if (auto t = operand.getDefiningOp<onnx::TransposeOp>())
          maybeDead.insert(t);
      if (auto gemmOp = dyn_cast<onnx::GemmOp>(op)) {
        foldGemm(gemmOp);
        continue;
      }
      Value folded = tryFoldMatMul(cast<onnx::MatMulOp>(op));
      if (!folded || folded.getType() != op->getResult(0).getType()) {
        eraseUnused(folded);
        continue;
      }
      op->getResult(0).replaceAllUsesWith(folded);
      op->erase();
    }
    for (Operation *t : maybeDead)
      if (t->use_empty())
        t->erase();
  }
};

} // namespace
