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

  /// Refines the result types of an op the dialect does not model: an If from
  /// the types its branches yield, anything else with the dialect's generic
  /// typing (ONNX's schema inference, when the importer library installed it).
  /// Types it cannot tell, or that contradict the op's, stay.
  void refineGeneric(onnx::GenericOp op) {
    SmallVector<Type> types;
    std::string reason;
    if (op.isIf()) {
      if (failed(op.inferIfResultTypes(types, reason)))
        return;
    } else {
      auto *dialect = llvm::cast<onnx::ONNXDialect>(op->getDialect());
      const auto &infer = dialect->getGenericTypeInference();
      if (!infer)
        return;
      infer(op, types);
    }
    for (auto [result, inferred] : llvm::zip(op->getResults(), types)) {
      if (!inferred)
        continue;
      auto refined = refineType(result.getType(), inferred);
      if (succeeded(refined))
        result.setType(*refined);
    }
  }

  /// Infers and folds the ops of `block` in order. An op's regions (If and Loop
  /// bodies) are swept before the op itself, so that an If sees what its
  /// branches yield; an If whose condition became a constant is replaced by its
  /// taken branch.
  LogicalResult sweep(Block &block, OperationFolder &folder,
                      IRRewriter &rewriter) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    for (Operation *op : ops) {
      for (Region &region : op->getRegions())
        for (Block &inner : region)
          if (failed(sweep(inner, folder, rewriter)))
            return failure();
      if (auto generic = llvm::dyn_cast<onnx::GenericOp>(op)) {
        refineGeneric(generic);
        if (fold) {
          rewriter.setInsertionPoint(op);
          if (succeeded(
                  generic.inlineConstantIf(rewriter, /*allowRefinement=*/true)))
            continue;
        }
      } else if (auto iface =
                     llvm::dyn_cast<onnx::InferShapesOpInterface>(op)) {
        SmallVector<Type> types;
        if (failed(iface.inferResultTypes(types)))
          return failure();
        for (auto [result, inferred] : llvm::zip(op->getResults(), types)) {
          auto refined = refineType(result.getType(), inferred);
          if (failed(refined))
            return op->emitOpError()
                   << "result type " << result.getType()
                   << " contradicts the type its shape rule gives, "
                   << inferred;
          result.setType(*refined);
        }
      }
      // An initializer stays the op it is, and so do the ops that read it:
      // a training step lifts it by its name (onnx.initializer), and folding
      // would make an unnamed constant of it, which nothing would train.
      if (op->hasAttr(onnx::kInitializerAttrName) ||
          llvm::any_of(op->getOperands(), [](Value v) {
            Operation *def = v.getDefiningOp();
            return def && def->hasAttr(onnx::kInitializerAttrName);
          }))
        continue;
      if (fold && op->getDialect() &&
          op->getDialect()->getNamespace() ==
              onnx::ONNXDialect::getDialectNamespace())
        (void)folder.tryToFold(op);
    }
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    // Producers come before users in every block, so one sweep sees each op
    // after its operands have their final types (and constants, when folded).
    OperationFolder folder(&getContext());
    IRRewriter rewriter(&getContext());
    for (Block &block : func.getBody())
      if (failed(sweep(block, folder, rewriter)))
        return signalPassFailure();
    // Ops whose results were all folded away.
    (void)runRegionDCE(rewriter, func.getBody());
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};
} // namespace
