//===- TrainingLabels.cpp - the labels a training loss adds ---------------===//
#include "hetpar/Support/TrainingLabels.h"

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

void setTrainingLabels(ModuleOp module, RankedTensorType type) {
  module->setAttr(kTrainingLabelsAttrName, TypeAttr::get(type));
}

std::optional<RankedTensorType> getTrainingLabels(Operation *op) {
  auto module = llvm::dyn_cast_or_null<ModuleOp>(op);
  if (!module && op)
    module = op->getParentOfType<ModuleOp>();
  Attribute attr =
      module ? module->getAttr(kTrainingLabelsAttrName) : Attribute();
  if (!attr)
    return RankedTensorType();
  auto typeAttr = llvm::dyn_cast<TypeAttr>(attr);
  auto type = typeAttr ? llvm::dyn_cast<RankedTensorType>(typeAttr.getValue())
                       : nullptr;
  if (!type || type.getRank() < 1)
    return std::nullopt;
  return type;
}

} // namespace hetpar
