//===- ONNXImporter.cpp - ONNX model to onnx dialect
//------------------------===//
//
// Reads the model (streamed from the file, so weights are held once), checks
// the graph (names, cycles, producers), sorts the nodes topologically and
// builds one func.func whose body holds onnx ops. Each node is built through
// NodeContext: op-specific importers normalize older opsets; everything else
// maps attribute by attribute onto the op of the same name, or onto
// onnx.Generic.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "hetpar/Support/Diagnostics.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>

#include <cmath>
#include <fcntl.h>
#include <limits>
#include <optional>
#include <queue>
#include <unistd.h>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::import;

namespace hetpar::import {

/// `s` with control characters, backslashes and bytes outside printable ASCII
/// escaped as \xNN, for names from the model that end up in messages.
std::string printable(StringRef s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    out += llvm::formatv("\\x{0:x-2}", static_cast<unsigned>(c)).str();
  }
  return out;
}

/// The newest default-domain opset that Debian's ONNX library (1.12) knows: its
/// schemas' typing is authoritative up to here, and only a hint beyond.
constexpr int64_t kONNXLibraryMaxOpset = 17;

/// The opset that introduced a default-domain operator the dialect models
/// but the ONNX library has no schema for, being newer than its opsets
/// (ONNX's docs/Changelog.md: Mish-18, GroupNormalization-18, Gelu-20); none
/// for the others. Such a node is checked against the dialect's definition of
/// the op alone (GroupNormalization, which the importer rewrites, by
/// OpImporters.cpp).
static std::optional<int64_t> opsetIntroducingNewerOp(StringRef opType) {
  return llvm::StringSwitch<std::optional<int64_t>>(opType)
      .Case("Mish", 18)
      .Case("GroupNormalization", 18)
      .Case("Gelu", 20)
      .Default(std::nullopt);
}

//===----------------------------------------------------------------------===//
// Native op structure, read from each op's ODS traits at compile time, so that
// a node with the wrong number of inputs or outputs is reported instead of
// building an op whose accessors would read past its operands.
//===----------------------------------------------------------------------===//

namespace {
struct NativeOpInfo {
  unsigned minOperands = 0, maxOperands = ~0u;
  unsigned numSegments =
      0; // AttrSizedOperandSegments: one segment per ONNX input
  unsigned minResults = 0, maxResults = ~0u;
};

template <typename OpTy, typename = void> struct SegmentCount {
  static constexpr unsigned value = 0;
};
template <typename OpTy>
struct SegmentCount<
    OpTy, std::void_t<decltype(std::declval<typename OpTy::Properties>()
                                   .operandSegmentSizes)>> {
  static constexpr unsigned value =
      std::tuple_size<decltype(std::declval<typename OpTy::Properties>()
                                   .operandSegmentSizes)>::value;
};

template <typename OpTy, unsigned... Ns>
void readCounts(NativeOpInfo &info, std::integer_sequence<unsigned, Ns...>) {
  if (OpTy::template hasTrait<OpTrait::ZeroOperands>())
    info.minOperands = info.maxOperands = 0;
  if (OpTy::template hasTrait<OpTrait::OneOperand>())
    info.minOperands = info.maxOperands = 1;
  (
      [&] {
        if constexpr (Ns >= 2)
          if (OpTy::template hasTrait<OpTrait::NOperands<Ns>::template Impl>())
            info.minOperands = info.maxOperands = Ns;
        if constexpr (Ns >= 1)
          if (OpTy::template hasTrait<
                  OpTrait::AtLeastNOperands<Ns>::template Impl>())
            info.minOperands = Ns;
        if constexpr (Ns >= 2)
          if (OpTy::template hasTrait<OpTrait::NResults<Ns>::template Impl>())
            info.minResults = info.maxResults = Ns;
        if constexpr (Ns >= 1)
          if (OpTy::template hasTrait<
                  OpTrait::AtLeastNResults<Ns>::template Impl>())
            info.minResults = Ns;
      }(),
      ...);
  if (OpTy::template hasTrait<OpTrait::OneResult>())
    info.minResults = info.maxResults = 1;
  if (OpTy::template hasTrait<OpTrait::ZeroResults>())
    info.minResults = info.maxResults = 0;
  info.numSegments = SegmentCount<OpTy>::value;
  if (info.numSegments)
    info.maxOperands = info.numSegments;
}

template <typename... OpTys> llvm::StringMap<NativeOpInfo> buildNativeOps() {
  llvm::StringMap<NativeOpInfo> map;
  (
      [&] {
        NativeOpInfo info;
        readCounts<OpTys>(info, std::make_integer_sequence<unsigned, 8>());
        map[OpTys::getOperationName().drop_front(strlen("onnx."))] = info;
      }(),
      ...);
  // Dialect-internal ops and ONNX Runtime's training ops (which passes
  // produce) are not ONNX operators of the default domain.
  for (StringRef internal :
       {"Generic", "NoValue", "Yield", "Constant",
        "SoftmaxCrossEntropyLossGrad", "NegativeLogLikelihoodLossGrad",
        "SoftmaxGrad", "LogSoftmaxGrad", "LayerNormalizationGrad"})
    map.erase(internal);
  return map;
}

const llvm::StringMap<NativeOpInfo> &getNativeOps() {
  static const llvm::StringMap<NativeOpInfo> ops = buildNativeOps<
#define GET_OP_LIST
#include "hetpar/Dialect/ONNX/ONNXOps.cpp.inc"
      >();
  return ops;
}
} // namespace

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type fromTypeProto(const ::onnx::TypeProto &type, MLIRContext *ctx,
                   std::string *why) {
  if (!type.has_tensor_type()) {
    if (why)
      *why = type.has_sequence_type()        ? "a sequence type"
             : type.has_map_type()           ? "a map type"
             : type.has_optional_type()      ? "an optional type"
             : type.has_sparse_tensor_type() ? "a sparse tensor type"
                                             : "no type";
    return {};
  }
  const auto &tt = type.tensor_type();
  Type elt = getElementType(ctx, tt.elem_type());
  if (!elt) {
    if (why)
      *why = "element type " + getONNXTypeName(tt.elem_type());
    return {};
  }
  if (!tt.has_shape())
    return UnrankedTensorType::get(elt);
  SmallVector<int64_t> shape;
  for (const auto &d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        if (d.dim_value() == -1) {
          shape.push_back(ShapedType::kDynamic);
          continue;
        }
        if (why)
          *why = "a negative dimension " + std::to_string(d.dim_value()) +
                 " (not a valid ONNX shape)";
        return {};
      }
      shape.push_back(d.dim_value());
    } else {
      shape.push_back(ShapedType::kDynamic);
    }
  }
  return RankedTensorType::get(shape, elt);
}

void toTypeProto(Type type, ::onnx::TypeProto &out) {
  auto st = llvm::dyn_cast<ShapedType>(type);
  if (!st)
    return;
  auto *tt = out.mutable_tensor_type();
  tt->set_elem_type(getONNXElementType(st.getElementType()));
  if (!st.hasRank())
    return;
  auto *shape = tt->mutable_shape();
  for (int64_t d : st.getShape()) {
    auto *dim = shape->add_dim();
    if (!ShapedType::isDynamic(d))
      dim->set_dim_value(d);
  }
}

//===----------------------------------------------------------------------===//
// Model and graph importers
//===----------------------------------------------------------------------===//

class ModelImporter {
public:
  ModelImporter(StringRef path, MLIRContext *ctx,
                const ONNXImportOptions &options)
      : path(path.str()), ctx(ctx), options(options) {
    SmallString<256> dir(path);
    llvm::sys::path::remove_filename(dir);
    if (dir.empty())
      dir = ".";
    source.context = ctx;
    source.modelDir = std::string(dir);
    source.loadExternalData = options.loadExternalData;
    source.inlineLimitBytes = options.inlineLimitBytes;
    source.externalFilesRead = options.externalFilesRead;
  }

  OwningOpRef<ModuleOp> run();

  Location fileLoc() { return FileLineColLoc::get(ctx, path, 0, 0); }
  Location nodeLoc(StringRef name) {
    return NameLoc::get(StringAttr::get(ctx, printable(name)), fileLoc());
  }
  /// Opset version of `domain` in the model, or std::nullopt when undeclared.
  std::optional<int64_t> opsetVersion(StringRef domain) const {
    auto it = opsets.find(domain == "ai.onnx" ? "" : domain);
    if (it == opsets.end())
      return std::nullopt;
    return it->second;
  }

  std::string path;
  /// The model's bytes when imported from memory (importONNXModelFromBuffer);
  /// then `path` only names it.
  std::optional<StringRef> buffer;
  MLIRContext *ctx;
  const ONNXImportOptions &options;
  TensorSource source;
  std::map<std::string, int64_t, std::less<>> opsets;
  /// Model-local functions by "domain::name"; calls to them are inlined.
  llvm::StringMap<const ::onnx::FunctionProto *> functions;
  /// How deep the current inlining of local functions goes.
  int inlineDepth = 0;
  /// Nodes created by inlining so far (functions that call functions twice
  /// grow exponentially with depth).
  int64_t inlinedNodes = 0;

  const ::onnx::FunctionProto *findFunction(StringRef domain,
                                            StringRef name) const {
    auto it = functions.find((domain + "::" + name).str());
    return it == functions.end() ? nullptr : it->second;
  }

private:
  LogicalResult load(::onnx::ModelProto &model);
  LogicalResult parseBytes(::onnx::ModelProto &model, StringRef bytes);
  LogicalResult parseText(::onnx::ModelProto &model, StringRef text);
};

class GraphImporter {
public:
  GraphImporter(ModelImporter &model, GraphImporter *parent)
      : model(model), parent(parent), builder(model.ctx) {}

  ModelImporter &model;
  GraphImporter *parent;
  OpBuilder builder;
  llvm::StringMap<Value> values;
  llvm::StringMap<const ::onnx::TypeProto *> valueInfo;
  /// In the body of an inlined local function: the function's name, its own
  /// opset imports, and its formal inputs the call leaves out (absent).
  std::string functionName;
  std::map<std::string, int64_t, std::less<>> functionOpsets;
  llvm::StringSet<> absentInputs;

  /// Opset version of `domain` for this graph's nodes.
  std::optional<int64_t> opsetVersion(StringRef domain) const {
    if (functionName.empty())
      return model.opsetVersion(domain);
    auto it = functionOpsets.find(domain == "ai.onnx" ? "" : domain);
    if (it == functionOpsets.end())
      return std::nullopt;
    return it->second;
  }

  Value lookup(StringRef name) const {
    for (const GraphImporter *g = this; g; g = g->parent) {
      auto it = g->values.find(name);
      if (it != g->values.end())
        return it->second;
    }
    return {};
  }

  /// Imports the initializers and nodes of `graph` at the builder's insertion
  /// point. The graph inputs must already be in `values`.
  LogicalResult importBody(::onnx::GraphProto &graph);

  /// Imports a subgraph (If/Loop/Scan body) into `region`, ending with
  /// onnx.Yield.
  LogicalResult importSubgraph(::onnx::GraphProto &graph, Region &region,
                               Location loc);

private:
  FailureOr<std::vector<int>> sortNodes(::onnx::GraphProto &graph);
  LogicalResult importNode(::onnx::NodeProto &node, int index);
  LogicalResult typeIfFromBranches(Operation *op, NodeContext &ctx);
  LogicalResult inlineFunction(const ::onnx::FunctionProto &fn,
                               ::onnx::NodeProto &call,
                               const std::string &callName, Location loc);
  FailureOr<SmallVector<Value>>
  importGeneric(NodeContext &ctx, StringRef domain, int64_t version);
  LogicalResult defineOutputs(NodeContext &ctx, ArrayRef<Value> results);
};

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(GraphImporter &graph, ::onnx::NodeProto &node,
                         int64_t version, Location loc,
                         SmallVector<Value> inputs, std::string displayName)
    : node(node), version(version), loc(loc), inputs(std::move(inputs)),
      displayName(std::move(displayName)), graph(graph) {}

OpBuilder &NodeContext::builder() { return graph.builder; }
MLIRContext *NodeContext::context() { return graph.model.ctx; }
const TensorSource &NodeContext::source() { return graph.model.source; }

unsigned NodeContext::numOutputs() const {
  unsigned n = node.output_size();
  while (n > 0 && node.output(n - 1).empty())
    --n;
  return n;
}

const ::onnx::AttributeProto *NodeContext::attr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

std::optional<int64_t> NodeContext::intAttr(StringRef name) const {
  if (const auto *a = attr(name); a && a->type() == ::onnx::AttributeProto::INT)
    return a->i();
  return std::nullopt;
}

std::optional<float> NodeContext::floatAttr(StringRef name) const {
  if (const auto *a = attr(name);
      a && a->type() == ::onnx::AttributeProto::FLOAT)
    return a->f();
  return std::nullopt;
}

std::optional<SmallVector<int64_t>>
NodeContext::intsAttr(StringRef name) const {
  if (const auto *a = attr(name);
      a && a->type() == ::onnx::AttributeProto::INTS)
    return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  return std::nullopt;
}

InFlightDiagnostic NodeContext::error() {
  return emitError(loc) << displayName << ": ";
}

Value NodeContext::constI64(ArrayRef<int64_t> values, bool scalar) {
  auto type = scalar
                  ? RankedTensorType::get({}, builder().getI64Type())
                  : RankedTensorType::get({static_cast<int64_t>(values.size())},
                                          builder().getI64Type());
  auto attr = DenseElementsAttr::get(type, values);
  return hetpar::onnx::ConstantOp::create(builder(), loc, attr);
}

Value NodeContext::constScalar(Type elt, double value) {
  auto type = RankedTensorType::get({}, elt);
  Attribute attr;
  if (auto ft = llvm::dyn_cast<FloatType>(elt)) {
    APFloat f(value);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    attr = DenseElementsAttr::get(type, f);
  } else {
    // Toward zero, saturated to the type's range (a float attribute of 1e30
    // on an integer op; found by fuzzing), NaN as 0.
    auto it = llvm::cast<IntegerType>(elt);
    llvm::APSInt i(it.getWidth(), /*isUnsigned=*/it.isUnsigned());
    bool exact = false;
    if (!std::isnan(value))
      (void)APFloat(value).convertToInteger(i, APFloat::rmTowardZero, &exact);
    attr = DenseElementsAttr::get(type, APInt(i));
  }
  return hetpar::onnx::ConstantOp::create(builder(), loc,
                                          llvm::cast<ElementsAttr>(attr));
}

FailureOr<Attribute> NodeContext::convertAttribute(::onnx::AttributeProto &a) {
  using AP = ::onnx::AttributeProto;
  Builder &b = builder();
  switch (a.type()) {
  case AP::INT:
    return Attribute(b.getI64IntegerAttr(a.i()));
  case AP::FLOAT:
    return Attribute(b.getF32FloatAttr(a.f()));
  case AP::STRING:
    return Attribute(b.getStringAttr(a.s()));
  case AP::INTS:
    return Attribute(b.getDenseI64ArrayAttr(
        SmallVector<int64_t>(a.ints().begin(), a.ints().end())));
  case AP::FLOATS:
    return Attribute(b.getDenseF32ArrayAttr(
        SmallVector<float>(a.floats().begin(), a.floats().end())));
  case AP::STRINGS: {
    SmallVector<Attribute> strs;
    for (const auto &s : a.strings())
      strs.push_back(b.getStringAttr(s));
    return Attribute(b.getArrayAttr(strs));
  }
  case AP::TENSOR: {
    auto t =
        importTensor(*a.mutable_t(), source(), loc,
                     displayName + ": attribute '" + printable(a.name()) + "'");
    if (failed(t))
      return failure();
    return Attribute(*t);
  }
  case AP::TYPE_PROTO: {
    if (Type t = fromTypeProto(a.tp(), context()))
      return Attribute(TypeAttr::get(t));
    break;
  }
  default:
    break;
  }
  // Kinds no native op takes (sparse tensors, tensor and graph lists, ...):
  // keep the attribute losslessly as its serialized proto.
  return Attribute(b.getStringAttr(a.SerializeAsString()));
}

FailureOr<SmallVector<NamedAttribute>>
NodeContext::convertAttributes(ArrayRef<StringRef> drop) {
  SmallVector<NamedAttribute> out;
  for (auto &a : *node.mutable_attribute()) {
    if (llvm::is_contained(drop, a.name()) || a.name() == "consumed_inputs")
      continue;
    auto attr = convertAttribute(a);
    if (failed(attr))
      return failure();
    out.emplace_back(builder().getStringAttr(a.name()), *attr);
  }
  return out;
}

FailureOr<Operation *> NodeContext::buildNative(StringRef opName,
                                                ArrayRef<Value> operands,
                                                ArrayRef<NamedAttribute> attrs,
                                                unsigned numResults) {
  const auto &ops = getNativeOps();
  auto it = ops.find(opName);
  if (it == ops.end())
    return error() << "internal: no native op " << opName;
  const NativeOpInfo &info = it->second;

  SmallVector<Value> present;
  OperationState state(loc, ("onnx." + opName).str());
  if (info.numSegments) {
    if (operands.size() > info.numSegments)
      return error() << "has " << operands.size() << " inputs; " << opName
                     << " takes at most " << info.numSegments;
    SmallVector<int32_t> segments(info.numSegments, 0);
    for (auto [i, v] : llvm::enumerate(operands)) {
      if (v) {
        segments[i] = 1;
        present.push_back(v);
      } else if (i < info.minOperands) {
        return error() << "input " << i << " is required";
      }
    }
    if (operands.size() < info.minOperands)
      return error() << "has " << operands.size() << " inputs; " << opName
                     << " needs at least " << info.minOperands;
    state.addAttribute("operandSegmentSizes",
                       builder().getDenseI32ArrayAttr(segments));
  } else {
    size_t n = operands.size();
    while (n > 0 && !operands[n - 1])
      --n;
    for (size_t i = 0; i < n; ++i) {
      if (!operands[i])
        return error() << "input " << i << " is omitted, but " << opName
                       << " needs it when a later input is given";
      present.push_back(operands[i]);
    }
    if (present.size() < info.minOperands ||
        present.size() > info.maxOperands) {
      auto diag = error() << "has " << present.size() << " inputs; " << opName
                          << " takes ";
      if (info.minOperands == info.maxOperands)
        diag << info.minOperands;
      else if (info.maxOperands == ~0u)
        diag << "at least " << info.minOperands;
      else
        diag << info.minOperands << " to " << info.maxOperands;
      return diag;
    }
  }
  for (Value v : present)
    if (!llvm::isa<TensorType>(v.getType()))
      return error() << "an input is not a tensor";
  if (numResults < info.minResults || numResults > info.maxResults) {
    auto diag = error() << "has " << numResults << " outputs; " << opName
                        << " has ";
    if (info.minResults == info.maxResults)
      diag << info.minResults;
    else if (info.maxResults == ~0u)
      diag << "at least " << info.minResults;
    else
      diag << info.minResults << " to " << info.maxResults;
    return diag;
  }
  state.addOperands(present);
  // Placeholder result types; the op's shape rule sets the real ones below.
  state.addTypes(SmallVector<Type>(
      numResults, UnrankedTensorType::get(builder().getF32Type())));
  state.addAttributes(attrs);
  Operation *op = builder().create(state);

  // Attributes the op does not declare, or of the wrong kind, are input errors
  // (property conversion would otherwise drop them silently).
  ArrayRef<StringAttr> known =
      op->getName().getRegisteredInfo()->getAttributeNames();
  for (const NamedAttribute &a : attrs) {
    if (!llvm::is_contained(known, a.getName())) {
      op->erase();
      return error() << "unknown attribute '"
                     << printable(a.getName().getValue()) << "' for " << opName
                     << " (opset " << version << ")";
    }
    std::optional<Attribute> stored = op->getInherentAttr(a.getName());
    if (!stored || !*stored) {
      op->erase();
      return error() << "attribute '" << printable(a.getName().getValue())
                     << "' has the wrong kind: " << a.getValue();
    }
  }
  // The op's shape rule and verifier report in op terms; re-emit their first
  // error in node terms ("node 'x' (MatMul): cannot multiply 2x3 by 4x5: ...").
  std::string firstError;
  LogicalResult ok = success();
  {
    ScopedDiagnosticHandler capture(context(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
        firstError = DiagnosticPrinter::message(diag);
      return success();
    });
    SmallVector<Type> types;
    ok = llvm::cast<hetpar::onnx::InferShapesOpInterface>(op).inferResultTypes(
        types);
    if (succeeded(ok)) {
      for (auto [r, t] : llvm::zip(op->getResults(), types))
        r.setType(t);
      ok = mlir::verify(op, /*verifyRecursively=*/false);
    }
  }
  if (failed(ok)) {
    op->erase();
    return error() << firstError;
  }
  return op;
}

FailureOr<Operation *> NodeContext::buildDefault(StringRef opName,
                                                 ArrayRef<StringRef> drop) {
  auto attrs = convertAttributes(drop);
  if (failed(attrs))
    return failure();
  return buildNative(opName, inputs, *attrs, numOutputs());
}

//===----------------------------------------------------------------------===//
// Graph import
//===----------------------------------------------------------------------===//

/// Names a subgraph uses from enclosing scopes (recursively).
static void collectFreeNames(const ::onnx::GraphProto &g,
                             llvm::StringSet<> &out) {
  llvm::StringSet<> defined;
  for (const auto &i : g.input())
    defined.insert(i.name());
  for (const auto &i : g.initializer())
    defined.insert(i.name());
  for (const auto &n : g.node())
    for (const auto &o : n.output())
      defined.insert(o);
  auto use = [&](StringRef name) {
    if (!name.empty() && !defined.contains(name))
      out.insert(name);
  };
  for (const auto &n : g.node()) {
    for (const auto &i : n.input())
      use(i);
    for (const auto &a : n.attribute()) {
      llvm::StringSet<> inner;
      if (a.has_g())
        collectFreeNames(a.g(), inner);
      for (const auto &sg : a.graphs())
        collectFreeNames(sg, inner);
      for (const auto &e : inner)
        use(e.getKey());
    }
  }
  for (const auto &o : g.output())
    use(o.name());
}

/// The name used for a node in locations and messages ("#3" for an unnamed
/// one).
static std::string nodeName(const ::onnx::NodeProto &n, int index) {
  return n.name().empty() ? "#" + std::to_string(index) : n.name();
}

static std::string describeNode(const ::onnx::NodeProto &n, int index) {
  return "node '" + printable(nodeName(n, index)) + "' (" +
         printable(n.op_type()) + ")";
}

FailureOr<std::vector<int>>
GraphImporter::sortNodes(::onnx::GraphProto &graph) {
  int n = graph.node_size();
  llvm::StringMap<int> producer;
  llvm::StringSet<> graphNames;
  for (const auto &i : graph.input())
    graphNames.insert(i.name());
  for (const auto &i : graph.initializer())
    graphNames.insert(i.name());
  for (int i = 0; i < n; ++i) {
    const auto &node = graph.node(i);
    for (const auto &o : node.output()) {
      if (o.empty())
        continue;
      auto [it, inserted] = producer.try_emplace(o, i);
      if (!inserted)
        return emitError(model.nodeLoc(nodeName(node, i)))
               << describeNode(node, i) << ": value '" << o
               << "' is also produced by "
               << describeNode(graph.node(it->second), it->second)
               << "; every value must have one producer";
      if (graphNames.contains(o) || (parent && parent->lookup(o)))
        return emitError(model.nodeLoc(nodeName(node, i)))
               << describeNode(node, i) << ": output '" << o
               << "' redefines a graph input or initializer";
    }
  }
  // Dependencies, including names that subgraphs use from this scope.
  std::vector<SmallVector<int>> users(n);
  std::vector<int> pending(n, 0);
  for (int i = 0; i < n; ++i) {
    const auto &node = graph.node(i);
    llvm::StringSet<> needs;
    for (const auto &in : node.input())
      if (!in.empty())
        needs.insert(in);
    for (const auto &a : node.attribute()) {
      if (a.has_g())
        collectFreeNames(a.g(), needs);
      for (const auto &sg : a.graphs())
        collectFreeNames(sg, needs);
    }
    for (const auto &e : needs) {
      StringRef name = e.getKey();
      auto it = producer.find(name);
      if (it != producer.end()) {
        if (it->second == i)
          return emitError(model.nodeLoc(nodeName(node, i)))
                 << describeNode(node, i) << ": input '" << printable(name)
                 << "' is its own output (the graph has a cycle)";
        users[it->second].push_back(i);
        ++pending[i];
        continue;
      }
      if (graphNames.contains(name) || (parent && parent->lookup(name)))
        continue;
      return emitError(model.nodeLoc(nodeName(node, i)))
             << describeNode(node, i) << ": input '" << printable(name)
             << "' is not produced by any node, graph input or initializer";
    }
  }
  // Kahn's algorithm, taking ready nodes in their original order (stable).
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int u : users[i])
      if (--pending[u] == 0)
        ready.push(u);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0)
        return emitError(model.nodeLoc(nodeName(graph.node(i), i)))
               << describeNode(graph.node(i), i)
               << ": the graph has a cycle through this node";
  }
  return order;
}

LogicalResult GraphImporter::importBody(::onnx::GraphProto &graph) {
  for (const auto &vi : graph.value_info())
    valueInfo[vi.name()] = &vi.type();
  for (const auto &vi : graph.output())
    if (vi.has_type())
      valueInfo[vi.name()] = &vi.type();

  llvm::StringSet<> initNames;
  for (auto &init : *graph.mutable_initializer()) {
    if (init.name().empty())
      return emitError(model.fileLoc()) << "an initializer has no name";
    if (!initNames.insert(init.name()).second)
      return emitError(model.nodeLoc(init.name()))
             << "initializer '" << printable(init.name())
             << "' is defined twice";
    Location loc = model.nodeLoc(init.name());
    auto attr = importTensor(init, model.source, loc,
                             "initializer '" + printable(init.name()) + "'");
    if (failed(attr))
      return failure();
    auto constant = hetpar::onnx::ConstantOp::create(builder, loc, *attr);
    if (model.options.markInitializers)
      constant->setAttr(hetpar::onnx::kInitializerAttrName,
                        builder.getStringAttr(init.name()));
    values[init.name()] = constant;
  }

  auto order = sortNodes(graph);
  if (failed(order))
    return failure();
  for (int i : *order)
    if (failed(importNode(*graph.mutable_node(i), i)))
      return failure();
  return success();
}

LogicalResult GraphImporter::importNode(::onnx::NodeProto &node, int index) {
  std::string display = describeNode(node, index);
  Location loc = model.nodeLoc(nodeName(node, index));
  StringRef domain = node.domain();
  auto version = opsetVersion(domain);
  if (!version)
    return emitError(loc) << display << ": domain '" << domain
                          << "' is not declared in the "
                          << (functionName.empty()
                                  ? std::string("model's")
                                  : "local function '" +
                                        printable(functionName) + "'")
                          << " opset_import";
  SmallVector<Value> inputs;
  for (const auto &in : node.input()) {
    if (in.empty() || absentInputs.contains(in)) {
      inputs.push_back({});
      continue;
    }
    Value v = lookup(in);
    if (!v)
      return emitError(loc)
             << display << ": input '" << printable(in) << "' is not defined"
             << (functionName.empty()
                     ? std::string()
                     : " (nodes of local function '" + printable(functionName) +
                           "' must be in topological order)");
    inputs.push_back(v);
  }
  // Local functions; a standard operator of the default domain is never
  // replaced by a function of the same name.
  bool standardOp = (domain.empty() || domain == "ai.onnx") &&
                    (getNativeOps().count(node.op_type()) ||
                     getSpecialImporters().count(node.op_type()));
  if (const ::onnx::FunctionProto *fn =
          standardOp ? nullptr : model.findFunction(domain, node.op_type()))
    return inlineFunction(*fn, node, nodeName(node, index), loc);
  NodeContext ctx(*this, node, *version, loc, std::move(inputs), display);

  bool defaultDomain = domain.empty() || domain == "ai.onnx";
  // A standard operator must exist at the model's opset (an Einsum in an
  // opset-1 model has no schema, so ONNX's checks of its attributes never
  // ran and its equation was missing; ONNX Runtime refuses such a node too).
  const ::onnx::OpSchema *schema =
      standardOp ? ::onnx::OpSchemaRegistry::Schema(
                       node.op_type(), static_cast<int>(*version), "")
                 : nullptr;
  std::optional<int64_t> introduced = opsetIntroducingNewerOp(node.op_type());
  if (standardOp && !schema && !(introduced && *version >= *introduced))
    return emitError(loc) << display << ": operator '"
                          << printable(node.op_type())
                          << "' is not defined at opset " << *version
                          << " of the default domain (the model's "
                             "opset_import)";
  // Its required attributes are there: the ops' shape rules read them (an
  // Einsum of opset 15 without its equation was read as a null attribute;
  // found by the onnx fuzzer). Beyond libonnx's opsets the schema is the
  // newest it knows; no required attribute of ONNX has become optional since.
  if (schema)
    for (const auto &[name, attr] : schema->attributes())
      if (attr.required && llvm::none_of(node.attribute(), [&](const auto &a) {
            return a.name() == name;
          }))
        return emitError(loc) << display << ": required attribute '" << name
                              << "' is missing (ONNX's definition of "
                              << printable(node.op_type()) << ")";
  FailureOr<SmallVector<Value>> results = failure();
  if (defaultDomain) {
    const auto &special = getSpecialImporters();
    if (auto it = special.find(node.op_type()); it != special.end()) {
      results = it->second(ctx);
    } else if (getNativeOps().count(node.op_type())) {
      auto op = ctx.buildDefault(node.op_type());
      if (succeeded(op))
        results = SmallVector<Value>((*op)->getResults());
    } else {
      results = importGeneric(ctx, domain, *version);
    }
  } else {
    results = importGeneric(ctx, domain, *version);
  }
  if (failed(results))
    return failure();
  return defineOutputs(ctx, *results);
}

/// A call of a model-local function is replaced by the function's body: its
/// inputs and outputs are bound to the call's, attribute references
/// (`ref_attr_name`) take the call's attributes, and inner nodes are named
/// "call/inner". The body sees only its own values (functions are isolated).
LogicalResult GraphImporter::inlineFunction(const ::onnx::FunctionProto &fn,
                                            ::onnx::NodeProto &call,
                                            const std::string &callName,
                                            Location loc) {
  constexpr int kMaxDepth = 32;
  if (model.inlineDepth >= kMaxDepth)
    return emitError(loc) << "node '" << printable(callName)
                          << "': local function '" << printable(fn.name())
                          << "' nests calls deeper than " << kMaxDepth
                          << " (is it recursive?)";
  auto where = [&]() {
    return emitError(loc) << "node '" << printable(callName)
                          << "': local function '" << printable(fn.name())
                          << "' ";
  };
  if (call.input_size() > fn.input_size())
    return where() << "takes " << fn.input_size() << " inputs, the call passes "
                   << call.input_size();
  if (call.output_size() > fn.output_size())
    return where() << "has " << fn.output_size() << " outputs, the call names "
                   << call.output_size();
  GraphImporter body(model, nullptr);
  body.functionName = fn.name();
  for (const auto &o : fn.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx")
      if (o.version() > 22)
        return where() << "imports opset " << o.version()
                       << " of the default domain; HetPar supports 1 to 22";
    body.functionOpsets[o.domain() == "ai.onnx" ? "" : o.domain()] =
        o.version();
  }
  if (fn.opset_import_size() == 0)
    body.functionOpsets = model.opsets;
  body.builder.setInsertionPoint(builder.getInsertionBlock(),
                                 builder.getInsertionPoint());
  llvm::StringSet<> declaredAttrs;
  for (const auto &a : fn.attribute())
    declaredAttrs.insert(a);
  for (auto [i, name] : llvm::enumerate(fn.input())) {
    if (static_cast<int>(i) >= call.input_size() || call.input(i).empty()) {
      body.absentInputs.insert(name);
      continue;
    }
    Value v = lookup(call.input(i));
    if (!v)
      return emitError(loc) << "node '" << printable(callName) << "': input '"
                            << printable(call.input(i)) << "' is not defined";
    body.values[name] = v;
  }
  ++model.inlineDepth;
  int k = 0;
  // A bound on the whole expansion, not only its depth: a function that calls
  // another twice, 30 levels deep, would make 2^30 nodes.
  constexpr int64_t kMaxInlinedNodes = 1 << 20;
  for (const ::onnx::NodeProto &inner : fn.node()) {
    if (++model.inlinedNodes > kMaxInlinedNodes) {
      --model.inlineDepth;
      return emitError(loc)
             << "node '" << printable(callName)
             << "': inlining local functions would create more than "
             << kMaxInlinedNodes << " nodes";
    }
    ::onnx::NodeProto node = inner;
    node.set_name(
        callName + "/" +
        (inner.name().empty() ? "#" + std::to_string(k) : inner.name()));
    auto *attrs = node.mutable_attribute();
    for (int a = attrs->size() - 1; a >= 0; --a) {
      ::onnx::AttributeProto &attr = (*attrs)[a];
      if (attr.ref_attr_name().empty())
        continue;
      if (!declaredAttrs.contains(attr.ref_attr_name())) {
        --model.inlineDepth;
        return where() << "refers to attribute '"
                       << printable(attr.ref_attr_name())
                       << "', which it does not declare";
      }
      const ::onnx::AttributeProto *given = nullptr;
      for (const auto &c : call.attribute())
        if (c.name() == attr.ref_attr_name())
          given = &c;
      if (!given) { // not given at the call: the inner op's default applies
        attrs->DeleteSubrange(a, 1);
        continue;
      }
      std::string name = attr.name();
      attr = *given;
      attr.set_name(name);
    }
    if (failed(body.importNode(node, k++))) {
      --model.inlineDepth;
      return failure();
    }
  }
  --model.inlineDepth;
  for (auto [i, name] : llvm::enumerate(fn.output())) {
    if (static_cast<int>(i) >= call.output_size() || call.output(i).empty())
      continue;
    Value v = body.lookup(name);
    if (!v)
      return emitError(loc)
             << "node '" << printable(callName) << "': local function '"
             << printable(fn.name()) << "' does not produce its output '"
             << printable(name) << "'";
    values[call.output(i)] = v;
  }
  return success();
}

LogicalResult GraphImporter::defineOutputs(NodeContext &ctx,
                                           ArrayRef<Value> results) {
  for (auto [i, name] : llvm::enumerate(ctx.node.output())) {
    if (name.empty())
      continue;
    if (i >= results.size() || !results[i])
      return ctx.error() << "output " << i << " ('" << printable(name)
                         << "') is not produced";
    Value v = results[i];
    if (values.count(name) || absentInputs.contains(name))
      return ctx.error()
             << "output '" << printable(name)
             << "' redefines a value (every value has one producer)";
    if (auto it = valueInfo.find(name); it != valueInfo.end()) {
      if (Type declared = fromTypeProto(*it->second, model.ctx)) {
        auto refined = refineType(v.getType(), declared);
        if (failed(refined))
          return ctx.error()
                 << "output '" << printable(name) << "' has type "
                 << v.getType()
                 << " by the op's shape rule, but the model declares "
                 << declared;
        // Only ops of this graph are refined in place; values forwarded from
        // elsewhere (an Identity folded away) keep their type.
        if (*refined != v.getType() && v.getDefiningOp() &&
            v.getDefiningOp()->getBlock() == builder.getInsertionBlock())
          v.setType(*refined);
      }
    }
    values[name] = v;
  }
  return success();
}

FailureOr<SmallVector<Value>> GraphImporter::importGeneric(NodeContext &ctx,
                                                           StringRef domain,
                                                           int64_t version) {
  OpBuilder &b = builder;
  SmallVector<Value> operands;
  for (Value v : ctx.inputs)
    operands.push_back(
        v ? v
          : hetpar::onnx::NoValueOp::create(b, ctx.loc, b.getNoneType())
                .getResult());
  // Attributes; graph-valued ones become regions.
  SmallVector<NamedAttribute> attrs;
  SmallVector<::onnx::GraphProto *> subgraphs;
  SmallVector<Attribute> regionNames;
  for (auto &a : *ctx.node.mutable_attribute()) {
    if (a.type() == ::onnx::AttributeProto::GRAPH) {
      subgraphs.push_back(a.mutable_g());
      regionNames.push_back(b.getStringAttr(a.name()));
      continue;
    }
    auto attr = ctx.convertAttribute(a);
    if (failed(attr))
      return failure();
    attrs.emplace_back(b.getStringAttr(a.name()), *attr);
  }
  // Result types: ONNX's own inference for the schema, else value_info.
  unsigned numResults = ctx.node.output_size();
  bool isIf = (domain.empty() || domain == "ai.onnx") &&
              ctx.node.op_type() == "If" && subgraphs.size() == 2;
  SmallVector<Type> inferred;
  std::string onnxError;
  // Our own checks are definite, also for nodes with subgraphs (a Scan with
  // 364 million scan inputs; found by the onnx-mutate fuzzer).
  if (domain.empty() || domain == "ai.onnx")
    if (std::string bad = checkBeforeONNXInference(ctx.node, ctx.inputs);
        !bad.empty())
      return ctx.error() << "invalid node (by ONNX's operator definition): "
                         << printable(bad);
  if (domain.empty() || domain == "ai.onnx" || domain == "ai.onnx.ml")
    inferred = inferTypesWithONNXSchema(ctx.node, version, ctx.inputs,
                                        model.ctx, &onnxError);
  SmallVector<Type> resultTypes;
  for (unsigned i = 0; i < numResults; ++i) {
    const std::string &name = ctx.node.output(i);
    Type t = i < inferred.size() ? inferred[i] : Type();
    if (auto it = valueInfo.find(name); it != valueInfo.end())
      if (Type declared = fromTypeProto(*it->second, model.ctx)) {
        auto refined = t ? refineType(t, declared) : FailureOr<Type>(declared);
        t = succeeded(refined) ? *refined : declared;
      }
    if (!t && name.empty())
      t = b.getNoneType();
    // If's results are typed from its branches once they are imported.
    if (!t && isIf)
      t = UnrankedTensorType::get(b.getF32Type());
    // ONNX rejects a node for a real reason (k larger than the axis), not
    // when it merely cannot look into subgraphs.
    if (!onnxError.empty() && subgraphs.empty() &&
        version <= kONNXLibraryMaxOpset &&
        (domain.empty() || domain == "ai.onnx"))
      return ctx.error() << "invalid node (by ONNX's operator definition): "
                         << printable(onnxError);
    if (!t)
      return ctx.error()
             << "cannot tell the type of output '" << printable(name)
             << "': HetPar does not model " << printable(ctx.node.op_type())
             << ", ONNX's type inference gives no tensor type for it (a "
                "sequence, an optional, or an unknown op), and the model "
                "has no value_info for it";
    resultTypes.push_back(t);
  }
  auto op = hetpar::onnx::GenericOp::create(
      b, ctx.loc, resultTypes, operands, b.getStringAttr(ctx.node.op_type()),
      b.getStringAttr(domain), b.getI64IntegerAttr(version),
      b.getDictionaryAttr(attrs), b.getArrayAttr(regionNames),
      static_cast<unsigned>(subgraphs.size()));
  for (auto [g, region] : llvm::zip(subgraphs, op->getRegions()))
    if (failed(importSubgraph(*g, region, ctx.loc)))
      return failure();
  if (isIf && failed(typeIfFromBranches(op, ctx)))
    return failure();
  return SmallVector<Value>(op->getResults());
}

/// The results of If are what both branches yield
/// (GenericOp::inferIfResultTypes); types already known (ONNX's inference,
/// value_info) refine them.
LogicalResult GraphImporter::typeIfFromBranches(Operation *op,
                                                NodeContext &ctx) {
  SmallVector<Type> types;
  std::string reason;
  if (failed(llvm::cast<hetpar::onnx::GenericOp>(op).inferIfResultTypes(
          types, reason)))
    return ctx.error() << reason;
  for (auto [result, merged] : llvm::zip(op->getResults(), types)) {
    auto refined = refineType(merged, result.getType());
    result.setType(succeeded(refined) ? *refined : merged);
  }
  return success();
}

LogicalResult GraphImporter::importSubgraph(::onnx::GraphProto &graph,
                                            Region &region, Location loc) {
  GraphImporter sub(model, this);
  Block *block = new Block();
  region.push_back(block);
  for (const auto &in : graph.input()) {
    std::string why;
    Type t = fromTypeProto(in.type(), model.ctx, &why);
    if (!t)
      return emitError(loc)
             << "subgraph input '" << printable(in.name()) << "' has " << why
             << ", which HetPar does not support";
    sub.values[in.name()] = block->addArgument(t, model.nodeLoc(in.name()));
  }
  sub.builder.setInsertionPointToEnd(block);
  if (failed(sub.importBody(graph)))
    return failure();
  SmallVector<Value> outs;
  for (const auto &o : graph.output()) {
    Value v = sub.lookup(o.name());
    if (!v)
      return emitError(loc) << "subgraph output '" << printable(o.name())
                            << "' is not defined";
    outs.push_back(v);
  }
  hetpar::onnx::YieldOp::create(sub.builder, loc, outs);
  return success();
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

/// The ONNX textual syntax (`.onnxtxt`).
LogicalResult ModelImporter::parseText(::onnx::ModelProto &model,
                                       StringRef text) {
  Location loc = fileLoc();
  std::string copy = text.str(); // the parser reads a NUL-terminated string
  ::onnx::OnnxParser parser(copy.c_str());
  auto status = parser.Parse(model);
  if (!status.IsOK())
    return emitError(loc) << "not a valid ONNX text model: "
                          << status.ErrorMessage();
  if (!parser.EndOfInput())
    return emitError(loc) << "not a valid ONNX text model: unexpected text "
                             "after the model";
  return success();
}

/// A model in memory: binary protobuf, or text when `path` ends in .onnxtxt.
LogicalResult ModelImporter::parseBytes(::onnx::ModelProto &model,
                                        StringRef bytes) {
  Location loc = fileLoc();
  if (bytes.empty())
    return emitError(loc) << "'" << path << "' is empty";
  if (StringRef(path).ends_with(".onnxtxt"))
    return parseText(model, bytes);
  if (bytes.size() > size_t(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), int(bytes.size())))
    return emitError(loc)
           << "not a valid ONNX model: the protobuf data is malformed, "
              "truncated, or nested deeper than protobuf's limit of 100 "
              "levels";
  return success();
}

LogicalResult ModelImporter::load(::onnx::ModelProto &model) {
  if (buffer)
    return parseBytes(model, *buffer);
  Location loc = fileLoc();
  if (!llvm::sys::fs::exists(path))
    return emitError(loc) << "cannot open '" << path << "': no such file";
  if (llvm::sys::fs::is_directory(path))
    return emitError(loc) << "'" << path
                          << "' is a directory, not an ONNX model";
  if (!llvm::sys::fs::is_regular_file(path))
    return emitError(loc)
           << "'" << path
           << "' is not a regular file (ONNX models are read from "
              "files)";
  uint64_t size = 0;
  if (!llvm::sys::fs::file_size(path, size) && size == 0)
    return emitError(loc) << "'" << path << "' is empty";

  if (StringRef(path).ends_with(".onnxtxt")) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!buffer)
      return emitError(loc)
             << "cannot read '" << path << "': " << buffer.getError().message();
    return parseText(model, (*buffer)->getBuffer());
  }

  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return emitError(loc) << "cannot open '" << path
                          << "': " << std::strerror(errno);
  bool ok;
  {
    // Streamed from the file: large raw_data strings are allocated once, then
    // moved into resource blobs, so the weights are held once.
    google::protobuf::io::FileInputStream stream(fd);
    ok = model.ParseFromZeroCopyStream(&stream);
  }
  ::close(fd);
  if (!ok)
    return emitError(loc)
           << "not a valid ONNX model: the protobuf data is malformed, "
              "truncated, or nested deeper than protobuf's limit of 100 "
              "levels";
  return success();
}

OwningOpRef<ModuleOp> ModelImporter::run() {
  ::onnx::ModelProto model;
  if (failed(load(model)))
    return {};
  Location loc = fileLoc();
  if (!model.has_graph())
    return (emitError(loc) << "the model has no graph (is this an ONNX model?)",
            nullptr);
  for (const auto &fn : model.functions())
    if (!functions.try_emplace(fn.domain() + "::" + fn.name(), &fn).second)
      return (emitError(loc) << "local function '" << printable(fn.name())
                             << "' of domain '" << printable(fn.domain())
                             << "' is defined twice",
              nullptr);
  if (model.opset_import_size() == 0)
    opsets[""] =
        1; // IR version 1 and 2 models without opset_import use opset 1.
  for (const auto &o : model.opset_import()) {
    std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
    if (o.version() <= 0)
      return (emitError(loc) << "opset_import of domain '" << o.domain()
                             << "' has invalid version " << o.version(),
              nullptr);
    opsets[d] = o.version();
  }
  if (auto v = opsetVersion(""); v && *v > 22)
    return (emitError(loc)
                << "the model uses opset " << *v
                << " of the default domain; HetPar supports opsets 1 to 22",
            nullptr);

  OpBuilder b(ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  {
    SmallVector<NamedAttribute> opsetAttrs;
    for (const auto &[domain, version] : opsets)
      opsetAttrs.emplace_back(
          b.getStringAttr(domain.empty() ? "ai.onnx" : domain),
          b.getI64IntegerAttr(version));
    (*module)->setAttr("onnx.opset_import", b.getDictionaryAttr(opsetAttrs));
    (*module)->setAttr("onnx.ir_version",
                       b.getI64IntegerAttr(model.ir_version()));
    if (!model.producer_name().empty())
      (*module)->setAttr(
          "onnx.producer",
          b.getStringAttr(model.producer_name() +
                          (model.producer_version().empty()
                               ? ""
                               : " " + model.producer_version())));
    (*module)->setAttr("onnx.model_file",
                       b.getStringAttr(llvm::sys::path::filename(path)));
  }

  ::onnx::GraphProto &graph = *model.mutable_graph();
  GraphImporter importer(*this, nullptr);

  // Graph inputs that are not initializers are the function's arguments.
  llvm::StringSet<> initNames;
  for (const auto &i : graph.initializer())
    initNames.insert(i.name());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  llvm::StringSet<> seen;
  SmallVector<StringRef> defaulted;
  for (const auto &in : graph.input()) {
    if (initNames.contains(in.name())) {
      defaulted.push_back(in.name());
      continue;
    }
    Location inLoc = nodeLoc(in.name());
    if (in.name().empty())
      return (emitError(inLoc) << "a graph input has no name", nullptr);
    if (!seen.insert(in.name()).second)
      return (emitError(inLoc) << "graph input '" << printable(in.name())
                               << "' is listed twice",
              nullptr);
    std::string why;
    Type t = fromTypeProto(in.type(), ctx, &why);
    if (!t)
      return (emitError(inLoc)
                  << "graph input '" << printable(in.name()) << "' has " << why
                  << (StringRef(why).contains("not a valid")
                          ? ""
                          : ", which HetPar does not support"),
              nullptr);
    if (auto it = options.inputShapes.find(in.name());
        it != options.inputShapes.end()) {
      auto requested = RankedTensorType::get(
          it->second, llvm::cast<ShapedType>(t).getElementType());
      auto refined = refineType(t, requested);
      if (failed(refined))
        return (emitError(inLoc)
                    << "graph input '" << printable(in.name()) << "' has type "
                    << t << ", which --input-shape " << printable(in.name())
                    << "=" << formatShape(it->second) << " does not match",
                nullptr);
      t = *refined;
    }
    // Checked here, before any shape rule multiplies its extents.
    if (exceedsMaxTensorBytes(t))
      return (emitError(inLoc) << "graph input '" << printable(in.name())
                               << "' of type " << t << " " << oversizeReason(t),
              nullptr);
    argTypes.push_back(t);
    argNames.push_back(in.name());
  }
  // ONNX (IR 4 and later) makes an initializer of a graph input its default,
  // which a caller may override; HetPar folds it as a constant (exporters'
  // keep_initializers_as_inputs writes every weight so). Said once.
  if (!defaulted.empty()) {
    bool one = defaulted.size() == 1;
    emitWarning(nodeLoc(defaulted.front()))
        << (one ? "graph input '" : "graph inputs '")
        << printable(defaulted.front()) << "'"
        << (one ? "" : " and " + std::to_string(defaulted.size() - 1) + " more")
        << (one ? " has an initializer, which HetPar compiles as a constant: "
                  "a run cannot override it"
                : " have initializers, which HetPar compiles as constants: a "
                  "run cannot override them");
  }
  for (const auto &entry : options.inputShapes)
    if (!llvm::is_contained(argNames, entry.getKey())) {
      auto diag = emitError(loc)
                  << "--input-shape names '" << entry.getKey()
                  << "', which is not a graph input; the inputs are:";
      for (const auto &n : argNames)
        diag << " " << n;
      return nullptr;
    }

  std::string funcName = graph.name().empty() ? "main_graph" : graph.name();
  for (char &c : funcName)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  auto func =
      func::FuncOp::create(b, loc, funcName, b.getFunctionType(argTypes, {}));
  module->push_back(func);
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    func.setArgAttr(i, "onnx.name", b.getStringAttr(name));
    entry->getArgument(i).setLoc(nodeLoc(name));
    importer.values[name] = entry->getArgument(i);
  }
  importer.builder.setInsertionPointToEnd(entry);
  if (failed(importer.importBody(graph)))
    return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &out : graph.output()) {
    Value v = importer.lookup(out.name());
    if (!v)
      return (emitError(nodeLoc(out.name()))
                  << "graph output '" << printable(out.name())
                  << "' is not produced by any node, input "
                     "or initializer",
              nullptr);
    results.push_back(v);
    resultTypes.push_back(v.getType());
  }
  func::ReturnOp::create(importer.builder, loc, results);
  func.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "onnx.name", b.getStringAttr(out.name()));

  if (failed(mlir::verify(*module)))
    return nullptr;
  return module;
}

} // namespace hetpar::import

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
hetpar::importONNXModel(StringRef path, MLIRContext *context,
                        const ONNXImportOptions &options) {
  context->loadDialect<hetpar::onnx::ONNXDialect, func::FuncDialect>();
  ModelImporter importer(path, context, options);
  return importer.run();
}

OwningOpRef<ModuleOp>
hetpar::importONNXModelFromBuffer(StringRef bytes, StringRef name,
                                  MLIRContext *context,
                                  const ONNXImportOptions &options) {
  context->loadDialect<hetpar::onnx::ONNXDialect, func::FuncDialect>();
  ModelImporter importer(name, context, options);
  importer.buffer = bytes;
  return importer.run();
}

llvm::Error
hetpar::ONNXImportOptions::addInputShapeSpecs(ArrayRef<std::string> specs) {
  for (const std::string &spec : specs) {
    auto parsed = parseInputShapeSpec(spec);
    if (!parsed)
      return parsed.takeError();
    if (!inputShapes.try_emplace(parsed->first, parsed->second).second)
      return llvm::createStringError("--input-shape gives '%s' twice",
                                     parsed->first.c_str());
  }
  return llvm::Error::success();
}

void hetpar::registerImportDialects(DialectRegistry &registry) {
  registry.insert<hetpar::onnx::ONNXDialect, func::FuncDialect,
                  ml_program::MLProgramDialect>();
  registry.addExtension(+[](MLIRContext *, hetpar::onnx::ONNXDialect *dialect) {
    dialect->setGenericTypeInference(&hetpar::import::inferGenericOpTypes);
  });
}
