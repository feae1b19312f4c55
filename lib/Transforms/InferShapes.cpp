//===- InferShapes.cpp - hetpar-onnx-infer-shapes
//---------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/FoldUtils.h"
#include "mlir/Transforms/RegionUtils.h"

namespace hetpar {
#define GEN_PASS_DEF_INFERSHAPESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
struct InferShapesPass
    : public hetpar::impl::InferShapesPassBase<InferShapesPass> {
  using Base::Base;

  /// Refines the result types of an op the dialect does not model with the
  /// dialect's generic typing (ONNX's schema inference, when the importer
  /// library installed it). Types it cannot tell, or that contradict the op's,
  /// stay.
  void refineGeneric(onnx::GenericOp op) {
    auto *dialect = llvm::cast<onnx::ONNXDialect>(op->getDialect());
    const auto &infer = dialect->getGenericTypeInference();
    if (!infer)
      return;
    SmallVector<Type> types;
    infer(op, types);
    for (auto [result, inferred] : llvm::zip(op->getResults(), types)) {
      if (!inferred)
        continue;
      auto refined = refineType(result.getType(), inferred);
      if (succeeded(refined))
        result.setType(*refined);
    }
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    // Producers come before users in every block, so one pre-order sweep sees
    // each op after its operands have their final types (and constants, when
    // folded).
    SmallVector<Operation *> ops;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op != func.getOperation())
        ops.push_back(op);
    });
    OperationFolder folder(&getContext());
    for (Operation *op : ops) {
      if (auto generic = llvm::dyn_cast<onnx::GenericOp>(op)) {
        refineGeneric(generic);
      } else if (auto iface =
                     llvm::dyn_cast<onnx::InferShapesOpInterface>(op)) {
        SmallVector<Type> types;
        if (failed(iface.inferResultTypes(types)))
          return signalPassFailure();
        for (auto [result, inferred] : llvm::zip(op->getResults(), types)) {
          auto refined = refineType(result.getType(), inferred);
          if (failed(refined)) {
            op->emitOpError()
                << "result type " << result.getType()
                << " contradicts the type its shape rule gives, " << inferred;
            return signalPassFailure();
          }
          result.setType(*refined);
        }
      }
      if (fold && op->getDialect() &&
          op->getDialect()->getNamespace() ==
              onnx::ONNXDialect::getDialectNamespace())
        (void)folder.tryToFold(op);
    }
    // Ops whose results were all folded away.
    IRRewriter rewriter(&getContext());
    (void)runRegionDCE(rewriter, func.getBody());
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};
} // namespace
