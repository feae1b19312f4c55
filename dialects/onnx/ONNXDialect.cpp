//===- ONNXDialect.cpp - the onnx dialect ---------------------------------===//

#include "hetpar/Dialect/ONNX/ONNXDialect.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace hetpar::onnx;

#include "hetpar/Dialect/ONNX/ONNXDialect.cpp.inc"

void ONNXDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "hetpar/Dialect/ONNX/ONNXOps.cpp.inc"
      >();
  attachShardingRules(getContext());
  attachGradientRules(getContext());
}

Operation *ONNXDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  if (llvm::isa<NoneType>(type))
    return NoValueOp::create(builder, loc, builder.getNoneType());
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
