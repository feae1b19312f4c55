//===- EraseIdentity.cpp - hetpar-onnx-erase-identity
//-----------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Dialect/ONNX/Views.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

namespace hetpar {
#define GEN_PASS_DEF_ERASEIDENTITYPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
struct EraseIdentityPass
    : public hetpar::impl::EraseIdentityPassBase<EraseIdentityPass> {
  void runOnOperation() override {
    SmallVector<Operation *> dead;
    getOperation().walk([&](Operation *op) {
      if (auto id = llvm::dyn_cast<onnx::IdentityOp>(op)) {
        if (id.getX().getType() == id.getType()) {
          id.getY().replaceAllUsesWith(id.getX());
          dead.push_back(op);
        }
        return;
      }
      auto dropout = llvm::dyn_cast<onnx::DropoutOp>(op);
      if (!dropout || onnx::isRandomDropout(dropout) ||
          dropout.getData().getType() != dropout.getOutput().getType())
        return;
      if (Value mask = dropout.getMask(); mask && !mask.use_empty()) {
        // The mask of a Dropout that drops nothing is all true.
        OpBuilder b(op);
        auto boolScalar = RankedTensorType::get({}, b.getI1Type());
        auto value = DenseElementsAttr::get(boolScalar, true);
        Value shape = onnx::ShapeOp::create(
            b, op->getLoc(),
            RankedTensorType::get(
                {llvm::cast<ShapedType>(dropout.getData().getType()).hasRank()
                     ? llvm::cast<ShapedType>(dropout.getData().getType())
                           .getRank()
                     : ShapedType::kDynamic},
                b.getI64Type()),
            dropout.getData(), IntegerAttr(), b.getI64IntegerAttr(0));
        Value ones = onnx::ConstantOfShapeOp::create(
            b, op->getLoc(), mask.getType(), shape,
            llvm::cast<ElementsAttr>(value));
        mask.replaceAllUsesWith(ones);
      }
      dropout.getOutput().replaceAllUsesWith(dropout.getData());
      dead.push_back(op);
    });
    for (Operation *op : dead)
      op->erase();
  }
};
} // namespace
