//===- PartitionHooks.cpp - ShardingRuleOpInterface's partition hooks -----===//
//
// The ops that add a term once to a sum over a split reduction (Gemm, Conv)
// and the ops that state shapes the partition must restate per device
// (Reshape, Expand, Split, Resize, a grouped Conv).
//
//===----------------------------------------------------------------------===//

#include "PartitionHooks.h"

#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::onnx;

namespace {

/// A 1-D int64 constant of `values`.
Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
}

SmallVector<int64_t> shapeOf(Value v) {
  return SmallVector<int64_t>(
      llvm::cast<RankedTensorType>(v.getType()).getShape());
}

} // namespace

std::optional<unsigned> hooks::addedOperand(GemmOp op) {
  if (op->getNumOperands() == 3)
    return 2u;
  return std::nullopt;
}

std::optional<unsigned> hooks::addedOperand(ConvOp op) {
  if (op->getNumOperands() == 3)
    return 2u;
  return std::nullopt;
}

/// beta x C (C itself when beta is 1).
Value hooks::addedTerm(GemmOp op, OpBuilder &b, Value c) {
  double beta = op.getBeta();
  if (beta == 1.0)
    return c;
  auto ct = llvm::cast<RankedTensorType>(c.getType());
  Value scale = ConstantOp::create(
      b, op.getLoc(),
      DenseElementsAttr::get(RankedTensorType::get({}, ct.getElementType()),
                             b.getFloatAttr(ct.getElementType(), beta)));
  return MulOp::create(b, op.getLoc(), ct, c, scale);
}

/// The bias [M] as [1, M, 1, ...] (the result's rank).
Value hooks::addedTerm(ConvOp op, OpBuilder &b, Value c) {
  int64_t rank =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  SmallVector<int64_t> shape(rank, 1);
  shape[1] = llvm::cast<RankedTensorType>(c.getType()).getDimSize(0);
  auto type = RankedTensorType::get(
      shape, llvm::cast<RankedTensorType>(c.getType()).getElementType());
  return ReshapeOp::create(b, op.getLoc(), type, c,
                           i64Constant(b, op.getLoc(), shape));
}

void hooks::adaptToLocalShapes(ReshapeOp op, OpBuilder &b) {
  op->setOperand(1, i64Constant(b, op.getLoc(), shapeOf(op.getResult())));
}

void hooks::adaptToLocalShapes(ExpandOp op, OpBuilder &b) {
  op->setOperand(1, i64Constant(b, op.getLoc(), shapeOf(op.getResult())));
}

/// Explicit split sizes: each result's local extent along the axis.
void hooks::adaptToLocalShapes(SplitOp op, OpBuilder &b) {
  if (op->getNumOperands() < 2 ||
      !llvm::isa<RankedTensorType>(op->getOperand(1).getType()))
    return;
  int64_t rank =
      llvm::cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  std::optional<int64_t> axis = normalizeAxis(op.getAxis(), rank);
  if (!axis)
    return;
  SmallVector<int64_t> split;
  for (Value r : op->getResults())
    split.push_back(shapeOf(r)[*axis]);
  op->setOperand(1, i64Constant(b, op.getLoc(), split));
}

/// A Resize to `sizes`: the local extents of the axes it lists.
void hooks::adaptToLocalShapes(ResizeOp op, OpBuilder &b) {
  if (!op.getSizes() ||
      !llvm::cast<ShapedType>(op.getSizes().getType()).getNumElements())
    return;
  SmallVector<int64_t> sizes, shape = shapeOf(op.getResult());
  if (auto axes = op.getAxes())
    for (int64_t a : *axes)
      sizes.push_back(shape[a < 0 ? a + shape.size() : a]);
  else
    sizes = shape;
  op.getSizesMutable().assign(i64Constant(b, op.getLoc(), sizes));
}

/// A grouped Conv with some of the groups: C = group x W[1] locally too.
void hooks::adaptToLocalShapes(ConvOp op, OpBuilder &) {
  if (op.getGroup() == 1)
    return;
  int64_t c = shapeOf(op->getOperand(0))[1];
  int64_t perGroup = shapeOf(op->getOperand(1))[1];
  if (perGroup > 0 && c % perGroup == 0)
    op.setGroup(c / perGroup);
}
