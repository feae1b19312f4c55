//===- BlockOps.cpp - blocks of local tensors: slice and join -------------===//
//
// BlockOps.h describes them.
//
//===----------------------------------------------------------------------===//
#include "BlockOps.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

using namespace mlir;
using namespace hetpar;

Value blocks::i64Constant(OpBuilder &b, Location loc,
                          ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  return onnx::ConstantOp::create(b, loc,
                                  DenseIntElementsAttr::get(type, values));
}

Value blocks::reshapeTo(OpBuilder &b, Location loc, Value x,
                        ArrayRef<int64_t> shape) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  return onnx::ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), x,
      i64Constant(b, loc, shape));
}

SmallVector<int64_t> blocks::chunked(ArrayRef<int64_t> shape, int dim,
                                     int64_t outer) {
  SmallVector<int64_t> out(shape.begin(), shape.begin() + dim);
  out.push_back(outer);
  out.push_back(shape[dim] / outer);
  out.append(shape.begin() + dim + 1, shape.end());
  return out;
}

Value blocks::sliceBlock(OpBuilder &b, Location loc, Value x, int dim,
                         int64_t outer, int64_t start, int64_t size) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (start == 0 && outer * size == t.getDimSize(dim))
    return x;
  // A constant is sliced now: each device's program holds its shard only.
  if (ElementsAttr attr = getConstantElements(x)) {
    auto sliced = sliceElements(attr, dim, outer, start, size);
    if (succeeded(sliced))
      return onnx::ConstantOp::create(b, x.getLoc(), *sliced);
  }
  Value in =
      outer > 1 ? reshapeTo(b, loc, x, chunked(t.getShape(), dim, outer)) : x;
  int at = outer > 1 ? dim + 1 : dim;
  auto inType = llvm::cast<RankedTensorType>(in.getType());
  SmallVector<int64_t> shape(inType.getShape());
  shape[at] = size;
  // One statement each: the order of the constants must not depend on the
  // compiler's order of evaluating arguments.
  Value begin = i64Constant(b, loc, {start});
  Value end = i64Constant(b, loc, {start + size});
  Value axes = i64Constant(b, loc, {at});
  Value out = onnx::SliceOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), in, begin, end,
      axes, Value());
  SmallVector<int64_t> merged(t.getShape());
  merged[dim] = outer * size;
  return reshapeTo(b, loc, out, merged);
}

Value blocks::concatBlocks(OpBuilder &b, Location loc, ArrayRef<Value> pieces,
                           int dim, int64_t outer) {
  if (pieces.size() == 1)
    return pieces.front();
  SmallVector<Value> in;
  int64_t total = 0;
  for (Value p : pieces) {
    auto t = llvm::cast<RankedTensorType>(p.getType());
    total += t.getDimSize(dim);
    in.push_back(outer > 1
                     ? reshapeTo(b, loc, p, chunked(t.getShape(), dim, outer))
                     : p);
  }
  auto t0 = llvm::cast<RankedTensorType>(in.front().getType());
  int at = outer > 1 ? dim + 1 : dim;
  SmallVector<int64_t> shape(t0.getShape());
  shape[at] = total / outer;
  Value out = onnx::ConcatOp::create(
      b, loc, RankedTensorType::get(shape, t0.getElementType()), in, at);
  SmallVector<int64_t> merged(
      llvm::cast<RankedTensorType>(pieces.front().getType()).getShape());
  merged[dim] = total;
  return reshapeTo(b, loc, out, merged);
}
