//===- OptimizerState.cpp - the optimizer's state per parameter -----------===//
#include "hetpar/Support/OptimizerState.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace hetpar {

std::optional<int64_t> optimizerStateSlots(llvm::StringRef optimizer,
                                           double momentum) {
  if (optimizer == "adamw")
    return 2;
  if (optimizer == "sgd")
    return momentum > 0 ? 1 : 0;
  if (optimizer == "none")
    return 0;
  return std::nullopt;
}

void setOptimizerStateSlots(ModuleOp module, int64_t slots) {
  module->setAttr(
      kOptimizerStateSlotsAttrName,
      IntegerAttr::get(IntegerType::get(module.getContext(), 64), slots));
}

std::optional<int64_t> getOptimizerStateSlots(Operation *op) {
  auto module = llvm::dyn_cast_or_null<ModuleOp>(op);
  if (!module && op)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return kMaxOptimizerStateSlots;
  Attribute attr = module->getAttr(kOptimizerStateSlotsAttrName);
  if (!attr)
    return kMaxOptimizerStateSlots;
  auto slots = llvm::dyn_cast<IntegerAttr>(attr);
  if (!slots || !slots.getType().isInteger(64) || slots.getInt() < 0 ||
      slots.getInt() > kMaxOptimizerStateSlots)
    return std::nullopt;
  return slots.getInt();
}

} // namespace hetpar
