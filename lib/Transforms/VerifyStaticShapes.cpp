//===- VerifyStaticShapes.cpp - hetpar-onnx-verify-static -------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"

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

struct VerifyStaticShapesPass
    : public hetpar::impl::VerifyStaticShapesPassBase<VerifyStaticShapesPass> {
  void runOnOperation() override {
    bool ok = true;
    getOperation().walk([&](func::FuncOp func) {
      for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
        if (!isDynamicTensor(arg.getType()))
          continue;
        auto name = func.getArgAttrOfType<StringAttr>(i, "onnx.name");
        emitError(arg.getLoc()) << "input '" << (name ? name.getValue() : StringRef("?"))
                                << "' has dynamic type " << arg.getType()
                                << "; give its shape with --input-shape";
        ok = false;
      }
    });
    getOperation().walk([&](Operation *op) {
      for (Value r : op->getResults()) {
        if (!isDynamicTensor(r.getType()))
          continue;
        auto diag = op->emitError() << onnx::describeNode(op) << " has a result of dynamic type "
                                    << r.getType();
        if (llvm::isa<onnx::GenericOp>(op))
          diag << ": unsupported op " << onnx::getONNXOpType(op)
               << " (HetPar cannot infer its shapes)";
        ok = false;
        break;
      }
    });
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
