//===- FuseGemmBias.cpp - hetpar-onnx-fuse-gemm-bias ----------------------===//
//
// A MatMul by a constant matrix followed by the Add of a constant row of
// biases becomes one Gemm with that row as C, so that code generation adds
// the biases as the GEMM stores its sums instead of in a pass of its own
// (Passes.td has the rules).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace hetpar {
#define GEN_PASS_DEF_FUSEGEMMBIASPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// The static shape of `v`, a float32 tensor, or none.
std::optional<ArrayRef<int64_t>> float32Shape(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape() || !t.getElementType().isF32())
    return std::nullopt;
  return t.getShape();
}

/// Whether `c` is a constant row of `n` biases: shape [n], or [1, ..., 1, n]
/// of at most `rank` dimensions (so that the Add does not broadcast the
/// product).
bool isBiasRow(Value c, int64_t n, size_t rank) {
  auto shape = float32Shape(c);
  if (!shape || shape->empty() || shape->size() > rank || shape->back() != n ||
      !getConstantElements(c))
    return false;
  return llvm::all_of(shape->drop_back(), [](int64_t d) { return d == 1; });
}

/// The MatMul and the bias row of Add(MatMul(A, W), c) or Add(c, MatMul),
/// when they fuse: W a constant float32 matrix, A of rank 2 or more, the
/// product used only by the Add, c a bias row of W's columns.
std::optional<std::pair<onnx::MatMulOp, Value>> matchBias(onnx::AddOp add) {
  for (unsigned i = 0; i < 2; ++i) {
    auto mm = add->getOperand(i).getDefiningOp<onnx::MatMulOp>();
    Value c = add->getOperand(1 - i);
    if (!mm || !mm->getResult(0).hasOneUse())
      continue;
    auto as = float32Shape(mm->getOperand(0));
    auto ws = float32Shape(mm->getOperand(1));
    auto ys = float32Shape(mm->getResult(0));
    if (!as || !ws || !ys || as->size() < 2 || ws->size() != 2 ||
        !getConstantElements(mm->getOperand(1)) ||
        add->getResult(0).getType() != mm->getResult(0).getType() ||
        !isBiasRow(c, ws->back(), ys->size()))
      continue;
    return std::make_pair(mm, c);
  }
  return std::nullopt;
}

/// Add(MatMul(A, W), c) -> Reshape(Gemm(Reshape(A, [rows, K]), W, c')),
/// c' the biases as [N]; the reshapes only where A has more than 2
/// dimensions.
void fuse(onnx::AddOp add, onnx::MatMulOp mm, Value c) {
  OpBuilder builder(add);
  GradientBuilder g(builder, add->getLoc(), {});
  Value a = mm->getOperand(0), w = mm->getOperand(1);
  ArrayRef<int64_t> as = *float32Shape(a), ys = *float32Shape(mm->getResult(0));
  int64_t rows = 1;
  for (int64_t d : as.drop_back())
    rows *= d;
  const int64_t n = ys.back();
  Value a2 = as.size() == 2 ? a : g.reshape(a, {rows, as.back()});
  Value bias = float32Shape(c)->size() == 1 ? c : g.reshape(c, {n});
  Value y =
      g.make<onnx::GemmOp>(a2, w, bias, 1.0f, 1.0f, int64_t(0), int64_t(0));
  if (ys.size() != 2)
    y = g.reshape(y, ys);
  add->getResult(0).replaceAllUsesWith(y);
  add->erase();
  mm->erase();
}

struct FuseGemmBiasPass
    : public hetpar::impl::FuseGemmBiasPassBase<FuseGemmBiasPass> {
  void runOnOperation() override {
    SmallVector<onnx::AddOp> adds;
    getOperation().walk([&](onnx::AddOp add) { adds.push_back(add); });
    for (onnx::AddOp add : adds)
      if (auto m = matchBias(add))
        fuse(add, m->first, m->second);
  }
};

} // namespace
