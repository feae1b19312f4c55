//===- VerifyStaticShapes.cpp - hetpar-onnx-verify-static
//-------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace hetpar {
#define GEN_PASS_DEF_VERIFYSTATICSHAPESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
bool isDynamicTensor(Type t) {
  auto st = llvm::dyn_cast<ShapedType>(t);
  return st && !st.hasStaticShape();
}

/// The function argument whose *values* (not just its shape) flow into `op`'s
/// operands, if any: the reason a shape cannot be known at compile time.
BlockArgument findDataDependence(Operation *op) {
  SmallVector<Value> work(op->getOperands());
  llvm::SmallPtrSet<Value, 16> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v))
      return arg;
    Operation *def = v.getDefiningOp();
    // Shape and Size read only the static shape of their operand.
    if (!def || llvm::isa<onnx::ShapeOp, onnx::SizeOp>(def))
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return {};
}

struct VerifyStaticShapesPass
    : public hetpar::impl::VerifyStaticShapesPassBase<VerifyStaticShapesPass> {
  void runOnOperation() override {
    bool ok = true;
    getOperation().walk([&](func::FuncOp func) {
      for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
        if (!isDynamicTensor(arg.getType()))
          continue;
        auto name = func.getArgAttrOfType<StringAttr>(i, "onnx.name");
        emitError(arg.getLoc())
            << "input '" << (name ? name.getValue() : StringRef("?"))
            << "' has dynamic type " << arg.getType()
            << "; give its shape with --input-shape";
        ok = false;
      }
    });
    if (!ok)
      return signalPassFailure();
    // Report only where dynamism starts: an op with a dynamic result whose
    // operands are all static. Ops downstream of it inherit the problem.
    getOperation().walk([&](Operation *op) {
      if (llvm::none_of(op->getResultTypes(), isDynamicTensor) ||
          llvm::any_of(op->getOperandTypes(), isDynamicTensor))
        return;
      Type dynamic = *llvm::find_if(op->getResultTypes(), isDynamicTensor);
      auto diag = op->emitError()
                  << onnx::describeNode(op) << " has a result of dynamic type "
                  << dynamic;
      if (llvm::isa<onnx::GenericOp>(op)) {
        diag << ": unsupported op " << onnx::getONNXOpType(op)
             << " (HetPar cannot infer its shapes)";
      } else if (BlockArgument arg = findDataDependence(op)) {
        auto func = llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
        StringAttr name = func ? func.getArgAttrOfType<StringAttr>(
                                     arg.getArgNumber(), "onnx.name")
                               : nullptr;
        diag << ": the shape depends on the values of input '"
             << (name ? name.getValue() : StringRef("?"))
             << "', which HetPar does not support (shapes must follow from the "
                "input "
                "shapes)";
      }
      ok = false;
    });
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
