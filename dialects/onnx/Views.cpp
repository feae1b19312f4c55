//===- Views.cpp - ops whose result shares its operand's buffer -----------===//

#include "hetpar/Dialect/ONNX/Views.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

using namespace mlir;

namespace hetpar::onnx {

bool isRandomDropout(Operation *op) {
  auto d = dyn_cast<DropoutOp>(op);
  if (!d || !d.getTrainingMode())
    return false;
  auto training = getConstantIntValues(d.getTrainingMode());
  if (training && llvm::none_of(*training, [](int64_t v) { return v; }))
    return false;
  ElementsAttr ratio =
      d.getRatio() ? getConstantElements(d.getRatio()) : ElementsAttr();
  auto values = ratio ? readFloatElements(ratio) : std::nullopt;
  return !(values && !values->empty() && (*values)[0] == 0.0);
}

bool isView(Operation *op) {
  if (isa<ReshapeOp, FlattenOp, SqueezeOp, UnsqueezeOp, IdentityOp>(op))
    return true;
  return isa<DropoutOp>(op) && !isRandomDropout(op);
}

Value viewRoot(Value v) {
  while (auto r = dyn_cast<OpResult>(v)) {
    if (!isView(r.getOwner()))
      break;
    v = r.getOwner()->getOperand(0);
  }
  return v;
}

} // namespace hetpar::onnx
