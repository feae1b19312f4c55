//===- ONNXOps.cpp - onnx dialect operations
//-------------------------------===//
//
// Custom assembly and the generated op definitions. Shape rules live in
// ShapeInference.cpp, folders in Folding.cpp, FLOP counts in FlopCount.cpp.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace hetpar::onnx;

#include "hetpar/Dialect/ONNX/ONNXInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// ConstantOp: `onnx.Constant {attrs} dense<...> : tensor<...>`; the result type
// is the type of the value.
//===----------------------------------------------------------------------===//

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  ElementsAttr value;
  if (parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseAttribute(value, "value", result.attributes))
    return failure();
  result.addTypes(value.getType());
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p.printOptionalAttrDict((*this)->getAttrs(), /*elidedAttrs=*/{"value"});
  p << ' ';
  p.printAttribute(getValue());
}

//===----------------------------------------------------------------------===//
// Attribute helpers shared by shape rules and folders
//===----------------------------------------------------------------------===//

SmallVector<int64_t> TransposeOp::getPermutation(int64_t rank) {
  if (auto perm = getPerm())
    return SmallVector<int64_t>(perm->begin(), perm->end());
  SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  return reversed;
}

std::pair<int64_t, int64_t> ShapeOp::getDimRange(int64_t rank) {
  auto clampIdx = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  return {clampIdx(getStart()), getEnd() ? clampIdx(*getEnd()) : rank};
}

//===----------------------------------------------------------------------===//
// Names for messages
//===----------------------------------------------------------------------===//

std::string hetpar::onnx::getONNXOpType(Operation *op) {
  if (auto generic = llvm::dyn_cast<GenericOp>(op))
    return generic.getOpType().str();
  StringRef name = op->getName().getStringRef();
  name.consume_front("onnx.");
  return name.str();
}

std::string hetpar::onnx::getNodeName(Location loc) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = getNodeName(inner); !n.empty())
        return n;
  return "";
}

std::string hetpar::onnx::describeNode(Operation *op) {
  std::string name = getNodeName(op->getLoc());
  if (name.empty())
    return "op " + getONNXOpType(op);
  return "node '" + name + "' (" + getONNXOpType(op) + ")";
}

#define GET_OP_CLASSES
#include "hetpar/Dialect/ONNX/ONNXOps.cpp.inc"
