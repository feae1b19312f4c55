//===- TrainingLabels.cpp - the labels a training loss adds ---------------===//
#include "hetpar/Plan/TrainingLabels.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace hetpar {

RankedTensorType labelsType(RankedTensorType out, llvm::StringRef loss) {
  if (!out)
    return {};
  if (loss == "cross-entropy")
    return out.getRank() < 2
               ? RankedTensorType()
               : RankedTensorType::get(out.getShape().drop_back(),
                                       IntegerType::get(out.getContext(), 64));
  if (loss == "mse")
    return out;
  return {};
}

void setTrainingLabels(ModuleOp module, llvm::StringRef name,
                       RankedTensorType type) {
  MLIRContext *ctx = module.getContext();
  ctx->getOrLoadDialect<dist::DistDialect>();
  module->setAttr(kTrainingLabelsAttrName,
                  dist::GraphInputAttr::get(ctx, StringAttr::get(ctx, name),
                                            type, /*batch_dim=*/0));
}

std::optional<dist::GraphInputAttr> getTrainingLabels(Operation *op) {
  auto module = llvm::dyn_cast_or_null<ModuleOp>(op);
  if (!module && op)
    module = op->getParentOfType<ModuleOp>();
  Attribute attr =
      module ? module->getAttr(kTrainingLabelsAttrName) : Attribute();
  if (!attr)
    return dist::GraphInputAttr();
  auto labels = llvm::dyn_cast<dist::GraphInputAttr>(attr);
  if (!labels || labels.getBatchDim() != 0)
    return std::nullopt;
  return labels;
}

RankedTensorType trainingLabelsType(Operation *op) {
  std::optional<dist::GraphInputAttr> labels = getTrainingLabels(op);
  return labels && *labels ? labels->getType() : RankedTensorType();
}

} // namespace hetpar
