//===- GradientBuilder.cpp - backward ops for gradient rules --------------===//
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace hetpar;

Type GradientBuilder::elementType(Value v) {
  return llvm::cast<ShapedType>(v.getType()).getElementType();
}

ArrayRef<int64_t> GradientBuilder::shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

Type GradientBuilder::placeholder(Type elt) {
  return UnrankedTensorType::get(elt);
}

Operation *GradientBuilder::infer(Operation *op) {
  auto iface = llvm::dyn_cast<onnx::InferShapesOpInterface>(op);
  if (!iface)
    return op;
  SmallVector<Type> types;
  if (failed(iface.inferResultTypes(types)) ||
      types.size() != op->getNumResults()) {
    op->erase();
    return nullptr;
  }
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  return op;
}

Value GradientBuilder::add(Value x, Value y) { return make<onnx::AddOp>(x, y); }
Value GradientBuilder::sub(Value x, Value y) { return make<onnx::SubOp>(x, y); }
Value GradientBuilder::mul(Value x, Value y) { return make<onnx::MulOp>(x, y); }
Value GradientBuilder::div(Value x, Value y) { return make<onnx::DivOp>(x, y); }
Value GradientBuilder::neg(Value x) { return make<onnx::NegOp>(x); }

Value GradientBuilder::scalar(double v, Value like) {
  Type elt = elementType(like);
  auto type = RankedTensorType::get({}, elt);
  Attribute a;
  if (auto f = llvm::dyn_cast<FloatType>(elt))
    a = FloatAttr::get(f, v);
  else
    a = IntegerAttr::get(elt, static_cast<int64_t>(v));
  return onnx::ConstantOp::create(b, loc, DenseElementsAttr::get(type, a));
}

Value GradientBuilder::i64s(ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  return onnx::ConstantOp::create(b, loc,
                                  DenseIntElementsAttr::get(type, values));
}

Value GradientBuilder::zeros(Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  Attribute zero = b.getZeroAttr(t.getElementType());
  // Beyond what folding writes into constants, a scalar broadcast at run
  // time: a dense constant is bytes in weights.bin (15 GB for the zero
  // state of an RNN over a batch of 759 million; found by the onnx-mutate
  // fuzzer).
  std::optional<int64_t> n =
      t.hasStaticShape() ? getNumElements(t.getShape()) : std::nullopt;
  if (!n || *n <= onnx::kMaxFoldElements)
    return onnx::ConstantOp::create(b, loc, DenseElementsAttr::get(t, zero));
  auto scalarType = RankedTensorType::get({}, t.getElementType());
  Value scalar = onnx::ConstantOp::create(
      b, loc, DenseElementsAttr::get(scalarType, zero));
  return make<onnx::ExpandOp>(scalar, i64s(t.getShape()));
}

Value GradientBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  return make<onnx::ReshapeOp>(x, i64s(shape));
}

Value GradientBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  return make<onnx::TransposeOp>(x, b.getDenseI64ArrayAttr(perm));
}

Value GradientBuilder::reduceSum(Value x, ArrayRef<int64_t> axes,
                                 bool keepDims) {
  if (axes.empty())
    return x;
  return make<onnx::ReduceSumOp>(x, i64s(axes), int64_t(keepDims ? 1 : 0),
                                 int64_t(0));
}

Value GradientBuilder::sumToShape(Value grad, Type target) {
  ArrayRef<int64_t> from = shapeOf(grad);
  ArrayRef<int64_t> to = llvm::cast<RankedTensorType>(target).getShape();
  if (from == to)
    return grad;
  size_t lead = from.size() - to.size();
  SmallVector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < lead || (to[i - lead] == 1 && from[i] != 1))
      axes.push_back(static_cast<int64_t>(i));
  Value summed = reduceSum(grad, axes, /*keepDims=*/true);
  return reshape(summed, to);
}

Value GradientBuilder::expand(Value x, ArrayRef<int64_t> shape) {
  if (shapeOf(x) == shape)
    return x;
  return make<onnx::ExpandOp>(x, i64s(shape));
}

Value GradientBuilder::cast(Value x, Type elt) {
  if (elementType(x) == elt)
    return x;
  Operation *op = create<onnx::CastOp>(1, elt, x, elt, int64_t(1));
  return op ? op->getResult(0) : Value();
}
