//===- PartitionHooks.h - Sharding rules' partition hooks ---*- C++ -*-===//
//
// What hetpar-dist-partition asks an op besides its sharding rule: the operand
// it adds once to a sum and the term that operand contributes, and how a
// copy of the op with local (per-device) types restates its shapes. The
// sharding rules' external models (ShardingRules.cpp) forward to these
// overloads: the templates are the defaults, the overloads the ops that
// differ. Private to dialects/onnx.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_DIALECTS_ONNX_PARTITIONHOOKS_H
#define HETPAR_DIALECTS_ONNX_PARTITIONHOOKS_H

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace hetpar::onnx::hooks {

/// ShardingRuleOpInterface::getAddedOperand.
template <typename Op> std::optional<unsigned> addedOperand(Op) {
  return std::nullopt;
}
std::optional<unsigned> addedOperand(GemmOp op);
std::optional<unsigned> addedOperand(ConvOp op);

/// ShardingRuleOpInterface::buildAddedTerm.
template <typename Op>
mlir::Value addedTerm(Op, mlir::OpBuilder &, mlir::Value c) {
  return c;
}
mlir::Value addedTerm(GemmOp op, mlir::OpBuilder &b, mlir::Value c);
mlir::Value addedTerm(ConvOp op, mlir::OpBuilder &b, mlir::Value c);

/// ShardingRuleOpInterface::adaptToLocalShapes.
template <typename Op> void adaptToLocalShapes(Op, mlir::OpBuilder &) {}
void adaptToLocalShapes(ReshapeOp op, mlir::OpBuilder &b);
void adaptToLocalShapes(ExpandOp op, mlir::OpBuilder &b);
void adaptToLocalShapes(SplitOp op, mlir::OpBuilder &b);
void adaptToLocalShapes(ResizeOp op, mlir::OpBuilder &b);
void adaptToLocalShapes(ConvOp op, mlir::OpBuilder &b);

} // namespace hetpar::onnx::hooks

#endif // HETPAR_DIALECTS_ONNX_PARTITIONHOOKS_H
