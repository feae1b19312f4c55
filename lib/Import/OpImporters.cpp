//===- OpImporters.cpp - opset normalization of ONNX nodes ----------------===//
//
// Nodes whose meaning or form depends on the opset are rewritten here into the
// onnx dialect's form (the newest opset's semantics):
//
// clang-format off
//   Softmax, LogSoftmax < 13  flattened 2-D view -> Flatten, op(axis=1),
//                             Reshape back
//   Split < 13                `split` attribute -> operand
//   Squeeze, Unsqueeze < 13   `axes` attribute -> operand
//   ReduceSum < 13, other Reduce* < 18  `axes` attribute -> operand
//   Clip < 11                 `min`/`max` attributes -> scalar operands
//   Slice < 10                `starts`/`ends`/`axes` attributes -> operands
//   Pad < 11                  `pads`/`value` attributes -> operands
//   Reshape < 5               `shape` attribute -> operand
//   Dropout < 12              `ratio` attribute -> operand; `is_test` dropped
//   binary ops < 7            `broadcast`/`axis` -> explicit Unsqueeze of B
//   Gemm < 7                  `broadcast` dropped (unidirectional broadcast
//                             covers it)
//   PRelu < 7                 a per-channel 1-D slope -> slope reshaped to
//                             (C, 1, ...)
//   Cast                      `to` (a type code, or a type name in opset 1)
//                             -> type
//   Concat < 4                missing `axis` -> 1
//   BatchNormalization < 9    `spatial`, `is_test` dropped
//   Constant                  value / value_float(s) / value_int(s) ->
//                             onnx.Constant
//   GroupNormalization        Reshape, InstanceNormalization, Reshape (and
//                             a per-channel Mul and Add from opset 21)
// clang-format on
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "hetpar/Support/ShapeUtils.h"

#include "llvm/Support/MathExtras.h"

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

/// The attributes of GroupNormalization (ONNX's operator definition:
/// `num_groups` required, `epsilon`, and from opset 21 `stash_type`), checked
/// here: ONNX's library (1.12) has no schema for the op. Fails with an error
/// at the node for a missing, unknown or mistyped attribute.
LogicalResult checkGroupNormAttributes(NodeContext &ctx) {
  for (const ::onnx::AttributeProto &a : ctx.node.attribute()) {
    StringRef name = a.name();
    bool isInt = a.type() == ::onnx::AttributeProto::INT;
    if (name == "num_groups" || (name == "stash_type" && ctx.version >= 21)) {
      if (!isInt)
        return ctx.error() << "attribute '" << name << "' must be an integer";
    } else if (name == "epsilon") {
      if (a.type() != ::onnx::AttributeProto::FLOAT)
        return ctx.error() << "attribute 'epsilon' must be a float";
    } else {
      return ctx.error() << "unknown attribute '" << printable(name)
                         << "' (ONNX's definition of GroupNormalization-"
                         << (ctx.version >= 21 ? 21 : 18) << ")";
    }
  }
  if (!ctx.intAttr("num_groups"))
    return ctx.error() << "required attribute 'num_groups' is missing (ONNX's "
                          "definition of GroupNormalization)";
  // stash_type 1: the statistics in float32, as every normalization of the
  // CPU and GPU backends computes them.
  if (int64_t stash = ctx.intAttr("stash_type").value_or(1); stash != 1)
    return ctx.error() << "stash_type " << stash
                       << " is not supported (only 1, float32 statistics)";
  return success();
}

/// GroupNormalization's operands, checked (ONNX's definition: X [N, C, ...]
/// of a float type T, scale and bias of type T and shape [G] before opset 21,
/// [C] since; num_groups G in [1, C], dividing C). Fails with an error at the
/// node otherwise; X must have a known rank and a static C (the importer
/// reshapes by it).
LogicalResult checkGroupNormOperands(NodeContext &ctx, RankedTensorType tx,
                                     int64_t groups, Value scale, Value bias) {
  if (!tx || tx.getRank() < 2 || ShapedType::isDynamic(tx.getDimSize(1)) ||
      !llvm::isa<FloatType>(tx.getElementType()))
    return ctx.error() << "X must be a float tensor of known rank at least 2 "
                          "([N, C, D1, ...]) with a static C, got "
                       << ctx.input(0).getType();
  int64_t channels = tx.getDimSize(1);
  if (groups <= 0 || groups > channels || channels % groups != 0)
    return ctx.error() << "num_groups " << groups
                       << " must be in [1, C] and divide the " << channels
                       << " channels of X";
  bool perChannel = ctx.version >= 21;
  int64_t extent = perChannel ? channels : groups;
  for (auto [name, v] : {std::pair{"scale", scale}, std::pair{"bias", bias}}) {
    auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 1 || t.getElementType() != tx.getElementType() ||
        (!ShapedType::isDynamic(t.getDimSize(0)) && t.getDimSize(0) != extent))
      return ctx.error() << name << " must have X's element type and shape ["
                         << extent << "] (one "
                         << (perChannel ? "per channel" : "per group")
                         << " at opset " << ctx.version << "), got "
                         << v.getType();
  }
  return success();
}

/// GroupNormalization (opset 18; opset 21 made scale and bias per channel,
/// [C], instead of per group, [G]): X [N, C, D1, ...] normalized over each
/// group of C / G channels and all of D1, ..., then scaled and shifted.
/// Rewritten as Reshape(X, [0, G, (C / G) * D1 * ...]) ->
/// InstanceNormalization over the groups -> Reshape back to X's shape, where
/// InstanceNormalization takes opset 18's per-group scale and bias; opset
/// 21's per-channel ones are a Mul and an Add after it (as PyTorch's
/// exporter writes GroupNorm before opset 18). An X without elements is its
/// own result. Errors at the node: inputs other than X, scale and bias; the
/// attributes (checkGroupNormAttributes) and operands
/// (checkGroupNormOperands).
Results importGroupNormalization(NodeContext &ctx) {
  Value x = ctx.input(0), scale = ctx.input(1), bias = ctx.input(2);
  if (ctx.inputs.size() != 3 || !x || !scale || !bias)
    return ctx.error() << "takes exactly three inputs: X, scale and bias";
  if (failed(checkGroupNormAttributes(ctx)))
    return failure();
  auto tx = llvm::dyn_cast<RankedTensorType>(x.getType());
  int64_t groups = *ctx.intAttr("num_groups");
  if (failed(checkGroupNormOperands(ctx, tx, groups, scale, bias)))
    return failure();
  if (llvm::is_contained(tx.getShape(), 0))
    return SmallVector<Value>{x};
  // Each group's extent, when static (an N of 0 leaves no -1 to infer);
  // counted with overflow checks (spatial extents of 2^63 - 1 overflowed;
  // found by the onnx-mutate fuzzer).
  int64_t inner = tx.getDimSize(1) / groups;
  bool dynamicInner = false;
  for (int64_t d : tx.getShape().drop_front(2)) {
    if (ShapedType::isDynamic(d))
      dynamicInner = true;
    else if (llvm::MulOverflow(inner, d, inner))
      return ctx.error() << "X of type " << x.getType()
                         << " has more elements per group than int64 counts";
  }
  OpBuilder &b = ctx.builder();
  Type elt = tx.getElementType();
  auto build = [&](StringRef op, ArrayRef<Value> operands,
                   ArrayRef<NamedAttribute> attrs = {}) -> FailureOr<Value> {
    auto built = ctx.buildNative(op, operands, attrs, 1);
    if (failed(built))
      return failure();
    return (*built)->getResult(0);
  };
  bool perChannel = ctx.version >= 21;
  FailureOr<Value> groupScale = scale, groupBias = bias;
  if (perChannel) {
    Value shape = ctx.constI64({groups});
    groupScale = build("Expand", {ctx.constScalar(elt, 1.0), shape});
    groupBias = build("Expand", {ctx.constScalar(elt, 0.0), shape});
  }
  Value groupedShape =
      ctx.constI64({0, groups, dynamicInner ? int64_t(-1) : inner});
  FailureOr<Value> grouped = build("Reshape", {x, groupedShape});
  if (failed(groupScale) || failed(groupBias) || failed(grouped))
    return failure();
  float epsilon = ctx.floatAttr("epsilon").value_or(1e-5f);
  FailureOr<Value> normalized =
      build("InstanceNormalization", {*grouped, *groupScale, *groupBias},
            {b.getNamedAttr("epsilon", b.getF32FloatAttr(epsilon))});
  if (failed(normalized))
    return failure();
  // Back to X's shape: a constant where X's shape is static, so that the
  // result stays static for the nodes after it.
  FailureOr<Value> shapeOfX =
      tx.hasStaticShape() ? FailureOr<Value>(ctx.constI64(tx.getShape()))
                          : build("Shape", {x});
  if (failed(shapeOfX))
    return failure();
  FailureOr<Value> y = build("Reshape", {*normalized, *shapeOfX});
  if (failed(y))
    return failure();
  // Y has X's shape, whatever of it Reshape could infer.
  if (auto refined = refineType(y->getType(), tx); succeeded(refined))
    y->setType(*refined);
  if (!perChannel)
    return SmallVector<Value>{*y};
  // Per-channel scale and bias as [C, 1, ..., 1] against [N, C, D1, ...].
  SmallVector<int64_t> axes;
  for (int64_t i = 1; i < tx.getRank() - 1; ++i)
    axes.push_back(i);
  FailureOr<Value> s = scale, c = bias;
  if (!axes.empty()) {
    s = build("Unsqueeze", {scale, ctx.constI64(axes)});
    c = build("Unsqueeze", {bias, ctx.constI64(axes)});
  }
  if (failed(s) || failed(c))
    return failure();
  FailureOr<Value> scaled = build("Mul", {*y, *s});
  if (failed(scaled))
    return failure();
  FailureOr<Value> out = build("Add", {*scaled, *c});
  if (failed(out))
    return failure();
  return SmallVector<Value>{*out};
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
  m["GroupNormalization"] = importGroupNormalization;
  return m;
}

} // namespace

const llvm::StringMap<NodeImportFn> &hetpar::import::getSpecialImporters() {
  static const llvm::StringMap<NodeImportFn> importers =
      buildSpecialImporters();
  return importers;
}
