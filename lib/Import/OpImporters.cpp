//===- OpImporters.cpp - opset normalization of ONNX nodes
//------------------===//
//
// Nodes whose meaning or form depends on the opset are rewritten here into the
// onnx dialect's form (the newest opset's semantics):
//   Softmax, LogSoftmax < 13   flattened 2-D view -> Flatten, op(axis=1),
//   Reshape back Split < 13                 `split` attribute -> operand
//   Squeeze, Unsqueeze < 13    `axes` attribute -> operand
//   ReduceSum < 13, other Reduce* < 18   `axes` attribute -> operand
//   Clip < 11                  `min`/`max` attributes -> scalar operands
//   Slice < 10                 `starts`/`ends`/`axes` attributes -> operands
//   Pad < 11                   `pads`/`value` attributes -> operands
//   Reshape < 5                `shape` attribute -> operand
//   Dropout < 12               `ratio` attribute -> operand; `is_test` dropped
//   binary ops < 7             `broadcast`/`axis` -> explicit Unsqueeze of B
//   Gemm < 7                   `broadcast` dropped (unidirectional broadcast
//   covers it) PRelu < 7                  a per-channel 1-D slope -> slope
//   reshaped to (C, 1, ...) Cast                       `to` (a type code, or a
//   type name in opset 1) -> type Concat < 4                 missing `axis` ->
//   1 BatchNormalization < 9     `spatial`, `is_test` dropped Constant value /
//   value_float(s) / value_int(s) -> onnx.Constant
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "hetpar/Support/ShapeUtils.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::import;

namespace {

using Results = FailureOr<SmallVector<Value>>;

Results resultsOf(FailureOr<Operation *> op) {
  if (failed(op))
    return failure();
  return SmallVector<Value>((*op)->getResults());
}

/// Builds `opName` with the node's inputs plus an operand made from an
/// attribute that later opsets turned into an input (`attrName` -> input number
/// `index`).
Results attrToOperand(NodeContext &ctx, StringRef opName, StringRef attrName,
                      unsigned index, ArrayRef<StringRef> alsoDrop = {}) {
  SmallVector<Value> operands = ctx.inputs;
  SmallVector<StringRef> drop(alsoDrop.begin(), alsoDrop.end());
  if (auto values = ctx.intsAttr(attrName)) {
    if (operands.size() > index && operands[index])
      return ctx.error() << "gives '" << attrName
                         << "' both as attribute and as input";
    operands.resize(std::max<size_t>(operands.size(), index + 1));
    operands[index] = ctx.constI64(*values);
    drop.push_back(attrName);
  } else if (ctx.attr(attrName)) {
    return ctx.error() << "attribute '" << attrName
                       << "' must be a list of integers";
  }
  auto attrs = ctx.convertAttributes(drop);
  if (failed(attrs))
    return failure();
  return resultsOf(ctx.buildNative(opName, operands, *attrs, ctx.numOutputs()));
}

/// Importer that moves `attrName` to input `index` before opset `since`.
NodeImportFn movedToInput(StringRef opName, StringRef attrName, unsigned index,
                          int64_t since) {
  std::string op = opName.str(), attr = attrName.str();
  return [=](NodeContext &ctx) -> Results {
    if (ctx.version < since)
      return attrToOperand(ctx, op, attr, index);
    return resultsOf(ctx.buildDefault(op));
  };
}

/// Softmax/LogSoftmax before opset 13: the op normalizes the 2-D view
/// [d0*...*d(axis-1), d(axis)*...*d(n-1)] (default axis 1). Rebuilt as
/// Flatten(axis) -> op(axis = 1) -> Reshape(x, Shape(x)).
NodeImportFn softmaxLike(StringRef opName) {
  std::string op = opName.str();
  return [=](NodeContext &ctx) -> Results {
    if (ctx.version >= 13)
      return resultsOf(ctx.buildDefault(op));
    Value x = ctx.input(0);
    if (!x || ctx.inputs.size() != 1)
      return ctx.error() << "takes exactly one input";
    int64_t axis = ctx.intAttr("axis").value_or(1);
    OpBuilder &b = ctx.builder();
    auto flat = ctx.buildNative(
        "Flatten", {x}, {b.getNamedAttr("axis", b.getI64IntegerAttr(axis))}, 1);
    if (failed(flat))
      return failure();
    auto norm =
        ctx.buildNative(op, {(*flat)->getResult(0)},
                        {b.getNamedAttr("axis", b.getI64IntegerAttr(1))}, 1);
    if (failed(norm))
      return failure();
    auto shape = ctx.buildNative("Shape", {x}, {}, 1);
    if (failed(shape))
      return failure();
    return resultsOf(ctx.buildNative(
        "Reshape", {(*norm)->getResult(0), (*shape)->getResult(0)}, {}, 1));
  };
}

/// Binary ops before opset 7: with broadcast=1 and `axis`, B's dimensions align
/// with A's starting at `axis` instead of at the end; unsqueeze B's trailing
/// dimensions.
NodeImportFn legacyBroadcast(StringRef opName) {
  std::string op = opName.str();
  return [=](NodeContext &ctx) -> Results {
    if (ctx.version >= 7)
      return resultsOf(ctx.buildDefault(op));
    SmallVector<Value> operands = ctx.inputs;
    auto axis = ctx.intAttr("axis");
    if (ctx.intAttr("broadcast").value_or(0) == 1 && axis &&
        operands.size() == 2 && operands[0] && operands[1]) {
      auto ta = llvm::dyn_cast<RankedTensorType>(operands[0].getType());
      auto tb = llvm::dyn_cast<RankedTensorType>(operands[1].getType());
      if (!ta || !tb)
        return ctx.error()
               << "legacy broadcast with 'axis' needs inputs of known rank";
      int64_t a = *axis < 0 ? *axis + ta.getRank() : *axis;
      int64_t trailing = ta.getRank() - a - tb.getRank();
      if (a < 0 || trailing < 0)
        return ctx.error() << "legacy broadcast axis " << *axis
                           << " does not fit B of rank " << tb.getRank()
                           << " into A of rank " << ta.getRank();
      if (trailing > 0) {
        SmallVector<int64_t> axes;
        for (int64_t i = 0; i < trailing; ++i)
          axes.push_back(tb.getRank() + i);
        auto unsq = ctx.buildNative("Unsqueeze",
                                    {operands[1], ctx.constI64(axes)}, {}, 1);
        if (failed(unsq))
          return failure();
        operands[1] = (*unsq)->getResult(0);
      }
    }
    auto attrs = ctx.convertAttributes({"broadcast", "axis"});
    if (failed(attrs))
      return failure();
    return resultsOf(ctx.buildNative(op, operands, *attrs, ctx.numOutputs()));
  };
}

/// PRelu before opset 7 applied a 1-D slope of size C per channel (axis 1);
/// since 7 the slope broadcasts from the back. Reshape such a slope to (C, 1,
/// ..., 1).
Results importPRelu(NodeContext &ctx) {
  Value x = ctx.input(0), slope = ctx.input(1);
  auto tx =
      x ? llvm::dyn_cast<RankedTensorType>(x.getType()) : RankedTensorType();
  auto ts = slope ? llvm::dyn_cast<RankedTensorType>(slope.getType())
                  : RankedTensorType();
  if (ctx.version >= 7 || !tx || !ts || tx.getRank() <= 2 ||
      ts.getRank() != 1 || ts.getDimSize(0) == 1)
    return resultsOf(ctx.buildDefault("PRelu"));
  SmallVector<int64_t> axes;
  for (int64_t i = 1; i < tx.getRank() - 1; ++i)
    axes.push_back(i);
  auto unsq = ctx.buildNative("Unsqueeze", {slope, ctx.constI64(axes)}, {}, 1);
  if (failed(unsq))
    return failure();
  auto attrs = ctx.convertAttributes({});
  if (failed(attrs))
    return failure();
  return resultsOf(
      ctx.buildNative("PRelu", {x, (*unsq)->getResult(0)}, *attrs, 1));
}

Results importClip(NodeContext &ctx) {
  if (ctx.version >= 11)
    return resultsOf(ctx.buildDefault("Clip"));
  Value x = ctx.input(0);
  if (!x)
    return ctx.error() << "needs an input";
  Type elt = llvm::cast<ShapedType>(x.getType()).getElementType();
  SmallVector<Value> operands{x, Value(), Value()};
  if (auto lo = ctx.floatAttr("min"))
    operands[1] = ctx.constScalar(elt, *lo);
  if (auto hi = ctx.floatAttr("max"))
    operands[2] = ctx.constScalar(elt, *hi);
  auto attrs = ctx.convertAttributes({"min", "max"});
  if (failed(attrs))
    return failure();
  return resultsOf(ctx.buildNative("Clip", operands, *attrs, 1));
}

Results importSlice(NodeContext &ctx) {
  if (ctx.version >= 10)
    return resultsOf(ctx.buildDefault("Slice"));
  auto starts = ctx.intsAttr("starts"), ends = ctx.intsAttr("ends");
  if (!starts || !ends)
    return ctx.error()
           << "Slice before opset 10 needs 'starts' and 'ends' attributes";
  SmallVector<Value> operands{ctx.input(0), ctx.constI64(*starts),
                              ctx.constI64(*ends)};
  if (auto axes = ctx.intsAttr("axes"))
    operands.push_back(ctx.constI64(*axes));
  auto attrs = ctx.convertAttributes({"starts", "ends", "axes"});
  if (failed(attrs))
    return failure();
  return resultsOf(ctx.buildNative("Slice", operands, *attrs, 1));
}

Results importPad(NodeContext &ctx) {
  if (ctx.version >= 11)
    return resultsOf(ctx.buildDefault("Pad"));
  Value x = ctx.input(0);
  if (!x)
    return ctx.error() << "needs an input";
  // Opset 1 named the attribute `paddings`, opset 2 `pads`.
  auto pads = ctx.intsAttr("pads");
  if (!pads)
    pads = ctx.intsAttr("paddings");
  if (!pads)
    return ctx.error() << "Pad before opset 11 needs a 'pads' attribute";
  Type elt = llvm::cast<ShapedType>(x.getType()).getElementType();
  SmallVector<Value> operands{
      x, ctx.constI64(*pads),
      ctx.constScalar(elt, ctx.floatAttr("value").value_or(0.0f))};
  auto attrs = ctx.convertAttributes({"pads", "paddings", "value"});
  if (failed(attrs))
    return failure();
  return resultsOf(ctx.buildNative("Pad", operands, *attrs, 1));
}

Results importDropout(NodeContext &ctx) {
  // onnx.Dropout's fourth operand (`step`) is HetPar's, not an ONNX input.
  if (ctx.inputs.size() > 3)
    return ctx.error() << "has " << ctx.inputs.size()
                       << " inputs; Dropout takes at most 3";
  if (ctx.version >= 12)
    return resultsOf(ctx.buildDefault("Dropout"));
  SmallVector<Value> operands{ctx.input(0)};
  if (auto ratio = ctx.floatAttr("ratio")) {
    Value x = ctx.input(0);
    if (!x)
      return ctx.error() << "needs an input";
    operands.push_back(ctx.constScalar(
        llvm::cast<ShapedType>(x.getType()).getElementType(), *ratio));
  }
  auto attrs = ctx.convertAttributes({"ratio", "is_test"});
  if (failed(attrs))
    return failure();
  return resultsOf(
      ctx.buildNative("Dropout", operands, *attrs, ctx.numOutputs()));
}

Results importCast(NodeContext &ctx) {
  const ::onnx::AttributeProto *to = ctx.attr("to");
  if (!to)
    return ctx.error() << "needs the attribute 'to'";
  int32_t code = ::onnx::TensorProto::UNDEFINED;
  if (to->type() == ::onnx::AttributeProto::INT) {
    code = static_cast<int32_t>(to->i());
  } else if (to->type() == ::onnx::AttributeProto::STRING) {
    ::onnx::TensorProto::DataType dt;
    if (::onnx::TensorProto::DataType_Parse(to->s(), &dt))
      code = dt;
  }
  Type elt = getElementType(ctx.context(), code);
  if (!elt)
    return ctx.error() << "casts to " << getONNXTypeName(code)
                       << ", which HetPar does not support";
  auto attrs = ctx.convertAttributes({"to"});
  if (failed(attrs))
    return failure();
  attrs->push_back(ctx.builder().getNamedAttr("to", TypeAttr::get(elt)));
  return resultsOf(
      ctx.buildNative("Cast", ctx.inputs, *attrs, ctx.numOutputs()));
}

Results importConcat(NodeContext &ctx) {
  auto attrs = ctx.convertAttributes({});
  if (failed(attrs))
    return failure();
  if (!ctx.attr("axis")) {
    if (ctx.version >= 4)
      return ctx.error() << "needs the attribute 'axis'";
    attrs->push_back(
        ctx.builder().getNamedAttr("axis", ctx.builder().getI64IntegerAttr(1)));
  }
  return resultsOf(
      ctx.buildNative("Concat", ctx.inputs, *attrs, ctx.numOutputs()));
}

Results importConstant(NodeContext &ctx) {
  if (!ctx.inputs.empty())
    return ctx.error() << "Constant takes no inputs";
  if (ctx.node.attribute_size() != 1)
    return ctx.error() << "Constant needs exactly one value attribute, has "
                       << ctx.node.attribute_size();
  ::onnx::AttributeProto &a = *ctx.node.mutable_attribute(0);
  OpBuilder &b = ctx.builder();
  ElementsAttr value;
  StringRef name = a.name();
  if (name == "value") {
    if (a.type() != ::onnx::AttributeProto::TENSOR)
      return ctx.error() << "attribute 'value' must be a tensor";
    auto t = importTensor(*a.mutable_t(), ctx.source(), ctx.loc,
                          ctx.displayName + ": attribute 'value'");
    if (failed(t))
      return failure();
    value = *t;
  } else if (name == "value_float" || name == "value_floats") {
    SmallVector<float> vals;
    if (name == "value_float")
      vals.push_back(a.f());
    else
      vals.assign(a.floats().begin(), a.floats().end());
    auto type =
        name == "value_float"
            ? RankedTensorType::get({}, b.getF32Type())
            : RankedTensorType::get({(int64_t)vals.size()}, b.getF32Type());
    value = DenseElementsAttr::get(type, ArrayRef<float>(vals));
  } else if (name == "value_int" || name == "value_ints") {
    SmallVector<int64_t> vals;
    if (name == "value_int")
      vals.push_back(a.i());
    else
      vals.assign(a.ints().begin(), a.ints().end());
    auto type =
        name == "value_int"
            ? RankedTensorType::get({}, b.getI64Type())
            : RankedTensorType::get({(int64_t)vals.size()}, b.getI64Type());
    value = DenseElementsAttr::get(type, ArrayRef<int64_t>(vals));
  } else {
    return ctx.error() << "Constant attribute '" << name
                       << "' (string or sparse values) is not supported";
  }
  if (ctx.numOutputs() != 1)
    return ctx.error() << "Constant has exactly one output";
  return SmallVector<Value>{
      hetpar::onnx::ConstantOp::create(b, ctx.loc, value).getResult()};
}

llvm::StringMap<NodeImportFn> buildSpecialImporters() {
  llvm::StringMap<NodeImportFn> m;
  m["Softmax"] = softmaxLike("Softmax");
  m["LogSoftmax"] = softmaxLike("LogSoftmax");
  m["Split"] = movedToInput("Split", "split", 1, 13);
  m["Squeeze"] = movedToInput("Squeeze", "axes", 1, 13);
  m["Unsqueeze"] = movedToInput("Unsqueeze", "axes", 1, 13);
  m["ReduceSum"] = movedToInput("ReduceSum", "axes", 1, 13);
  for (StringRef r :
       {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp"})
    m[r] = movedToInput(r, "axes", 1, 18);
  m["Reshape"] = movedToInput("Reshape", "shape", 1, 5);
  for (StringRef op : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor",
                       "Equal", "Less", "Greater"})
    m[op] = legacyBroadcast(op);
  m["Gemm"] = [](NodeContext &ctx) {
    return resultsOf(ctx.buildDefault("Gemm", {"broadcast"}));
  };
  m["BatchNormalization"] = [](NodeContext &ctx) {
    return resultsOf(
        ctx.buildDefault("BatchNormalization", {"spatial", "is_test"}));
  };
  // Upsample (opsets 7 to 9, deprecated) is Resize with the asymmetric
  // transform (out[i] = in[i / scale]) and, for nearest, rounding down.
  m["Upsample"] = [](NodeContext &ctx) -> FailureOr<SmallVector<Value>> {
    auto attrs = ctx.convertAttributes({"scales"});
    if (failed(attrs))
      return failure();
    Builder &b = ctx.builder();
    attrs->push_back(b.getNamedAttr("coordinate_transformation_mode",
                                    b.getStringAttr("asymmetric")));
    attrs->push_back(b.getNamedAttr("nearest_mode", b.getStringAttr("floor")));
    if (ctx.inputs.size() < 2)
      return ctx.error() << "Upsample before opset 9 (scales as an "
                            "attribute) is not supported";
    return resultsOf(ctx.buildNative(
        "Resize", {ctx.inputs[0], Value(), ctx.inputs[1]}, *attrs, 1));
  };
  // Scatter (opsets 9 and 10, deprecated) is ScatterElements without
  // `reduction`.
  m["Scatter"] = [](NodeContext &ctx) {
    return resultsOf(ctx.buildDefault("ScatterElements"));
  };
  m["Clip"] = importClip;
  m["PRelu"] = importPRelu;
  m["Slice"] = importSlice;
  m["Pad"] = importPad;
  m["Dropout"] = importDropout;
  m["Cast"] = importCast;
  m["Concat"] = importConcat;
  m["Constant"] = importConstant;
  return m;
}

} // namespace

const llvm::StringMap<NodeImportFn> &hetpar::import::getSpecialImporters() {
  static const llvm::StringMap<NodeImportFn> importers =
      buildSpecialImporters();
  return importers;
}
