//===- SchemaInference.cpp - ONNX's type inference for unmodeled ops
//--------===//
//
// For a node whose operator the onnx dialect does not model, the result types
// come from the ONNX library's own type and shape inference for the operator's
// schema (the reference implementation of every standard operator's typing).
// The ONNX library reports failures by throwing, so this file is built with
// exceptions and never lets one escape.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include "hetpar/Support/ShapeUtils.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <memory>
#include <unordered_map>

using namespace mlir;

namespace hetpar::import {

/// A TensorProto holding the value of a small int32/int64/float constant
/// (ONNX's inference reads such inputs: TopK's K, Resize's scales and sizes,
/// Upsample's scales); null for anything else.
static std::unique_ptr<::onnx::TensorProto> constantInput(Value v) {
  ElementsAttr attr = hetpar::getConstantElements(v);
  if (!attr || attr.getNumElements() > 1024)
    return nullptr;
  auto type = llvm::cast<ShapedType>(attr.getType());
  int32_t onnxType = getONNXElementType(type.getElementType());
  auto t = std::make_unique<::onnx::TensorProto>();
  t->set_data_type(onnxType);
  for (int64_t d : type.getShape())
    t->add_dims(d);
  if (onnxType == ::onnx::TensorProto::FLOAT) {
    auto values = hetpar::readFloatElements(attr);
    if (!values)
      return nullptr;
    for (double x : *values)
      t->add_float_data(static_cast<float>(x));
    return t;
  }
  if (onnxType != ::onnx::TensorProto::INT64 &&
      onnxType != ::onnx::TensorProto::INT32)
    return nullptr;
  auto values = hetpar::readIntElements(attr);
  if (!values)
    return nullptr;
  for (int64_t x : *values) {
    if (onnxType == ::onnx::TensorProto::INT64)
      t->add_int64_data(x);
    else
      t->add_int32_data(static_cast<int32_t>(x));
  }
  return t;
}

/// ONNX's inference divides by window and block attributes without checking
/// them (SIGFPE on LpPool strides = 0, DepthToSpace blocksize = 2^32): such
/// attributes must be in [1, 2^31) (pads in [0, 2^31)) before it is called. An
/// empty string when they are.
static std::string checkDivisorAttributes(const ::onnx::NodeProto &node) {
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  for (const auto &a : node.attribute()) {
    StringRef name = a.name();
    bool positive = name == "strides" || name == "dilations" ||
                    name == "blocksize" || name == "kernel_shape" ||
                    name == "group";
    if (!positive && name != "pads")
      continue;
    SmallVector<int64_t> values(a.ints().begin(), a.ints().end());
    if (a.type() == ::onnx::AttributeProto::INT)
      values.push_back(a.i());
    for (int64_t v : values)
      if (v > kLimit || v < (positive ? 1 : 0))
        return "attribute '" + name.str() + "' must be in [" +
               (positive ? "1" : "0") + ", 2^31), got " + std::to_string(v);
  }
  return "";
}

/// ONNX's convolution and pooling inference (convPoolShapeInference) reads
/// the weight's dimensions and the window attributes by the input's rank
/// without checking them (ConvInteger with a rank-3 input and a rank-4
/// weight read out of bounds): the data input must have a batch, a channel
/// and a spatial dimension, a weight the same rank, and each window
/// attribute one entry per spatial dimension (pads two). An empty string
/// when they do, or when the ranks are not known here.
static std::string checkConvPoolRanks(const ::onnx::NodeProto &node,
                                      ArrayRef<Value> inputs) {
  StringRef op = node.op_type();
  if (!op.contains("Conv") && !op.contains("Pool") && op != "MaxUnpool")
    return "";
  auto rankOf = [&](size_t i) -> int64_t {
    if (i >= inputs.size() || !inputs[i])
      return -1;
    auto t = dyn_cast<RankedTensorType>(inputs[i].getType());
    return t ? t.getRank() : -1;
  };
  // QLinearConv: x, x_scale, x_zero_point, w, ...
  size_t weight = op == "QLinearConv" ? 3 : 1;
  int64_t rank = rankOf(0);
  if (rank < 0)
    return "";
  if (rank < 3)
    return "input 0 has rank " + std::to_string(rank) +
           "; it needs a batch, a channel and a spatial dimension";
  // MaxUnpool's indices have the input's shape; ONNX's inference read them
  // without a type when they had no rank (SIGSEGV, found by the onnx fuzzer).
  if (op == "MaxUnpool" && rankOf(1) != rank)
    return "input 1 (the indices) has " +
           (rankOf(1) < 0 ? std::string("no known rank")
                          : "rank " + std::to_string(rankOf(1))) +
           "; it needs the input's rank, " + std::to_string(rank);
  bool hasWeight = op.contains("Conv") && weight < size_t(node.input_size());
  if (hasWeight && rankOf(weight) >= 0 && rankOf(weight) != rank)
    return "the weight has rank " + std::to_string(rankOf(weight)) +
           ", the input " + std::to_string(rank);
  for (const auto &a : node.attribute()) {
    StringRef name = a.name();
    int64_t per = name == "pads" ? 2 : 1;
    if ((name == "kernel_shape" || name == "strides" || name == "dilations" ||
         name == "pads" || name == "output_padding" ||
         name == "output_shape") &&
        a.ints_size() != per * (rank - 2))
      return "attribute '" + name.str() + "' has " +
             std::to_string(a.ints_size()) + " values; the input's " +
             std::to_string(rank - 2) + " spatial dimensions need " +
             std::to_string(per * (rank - 2));
  }
  return "";
}

/// Inputs whose rank ONNX's inference functions assume without checking it
/// (STFT read the signal's dimension 2 of a rank-1 signal, and the
/// recurrences of opset 1 their X's dimension 1 of a rank-1 X: SIGSEGV,
/// found by the `onnx` fuzzer): the op, the input and the rank its schema
/// gives.
/// An empty string when the ranks are right or not known here.
static std::string checkFixedRanks(const ::onnx::NodeProto &node,
                                   ArrayRef<Value> inputs) {
  struct FixedRank {
    const char *op;
    size_t input;
    int64_t rank;
    const char *what;
  };
  static const FixedRank table[] = {
      {"STFT", 0, 3, "the signal [batch, length, 1 or 2]"},
      {"RNN", 0, 3, "X [seq_length, batch_size, input_size]"},
      {"GRU", 0, 3, "X [seq_length, batch_size, input_size]"},
      {"LSTM", 0, 3, "X [seq_length, batch_size, input_size]"},
  };
  for (const FixedRank &f : table) {
    if (node.op_type() != f.op || f.input >= inputs.size() || !inputs[f.input])
      continue;
    auto t = dyn_cast<RankedTensorType>(inputs[f.input].getType());
    if (t && t.getRank() != f.rank)
      return "input " + std::to_string(f.input) + " has rank " +
             std::to_string(t.getRank()) + "; " + f.what + " needs rank " +
             std::to_string(f.rank);
  }
  return "";
}

/// ONNX's Scan inference sizes its vectors by `num_scan_inputs` before it
/// compares it with the inputs (a Scan claiming 364 million scan inputs
/// asked for 2.9 GB inside libonnx; found by the onnx-mutate fuzzer): it
/// must be in [1, number of inputs]. An empty string when it is, or when
/// the node is no Scan.
static std::string checkScanInputCount(const ::onnx::NodeProto &node) {
  if (node.op_type() != "Scan")
    return "";
  for (const auto &a : node.attribute())
    if (a.name() == "num_scan_inputs" &&
        (a.i() < 1 || a.i() > node.input_size()))
      return "attribute 'num_scan_inputs' must be in [1, " +
             std::to_string(node.input_size()) + "] (the node's inputs), got " +
             std::to_string(a.i());
  return "";
}

std::string checkBeforeONNXInference(const ::onnx::NodeProto &node,
                                     ArrayRef<Value> inputs) {
  std::string bad = checkDivisorAttributes(node);
  if (bad.empty())
    bad = checkConvPoolRanks(node, inputs);
  if (bad.empty())
    bad = checkFixedRanks(node, inputs);
  if (bad.empty())
    bad = checkScanInputCount(node);
  return bad;
}

SmallVector<Type> inferTypesWithONNXSchema(::onnx::NodeProto &node,
                                           int64_t version,
                                           ArrayRef<Value> inputs,
                                           MLIRContext *ctx,
                                           std::string *error) {
  SmallVector<Type> out(node.output_size());
  if (std::string bad = checkBeforeONNXInference(node, inputs); !bad.empty()) {
    if (error)
      *error = bad;
    return out;
  }
  try {
    const ::onnx::OpSchema *schema = ::onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(version), node.domain());
    if (!schema)
      return out;
    // The node against its schema first (input and output counts, required
    // and unknown attributes, attribute types): ONNX's inference functions
    // assume a valid node (Scan without num_scan_inputs read a null
    // pointer), as ONNX Runtime runs the checker before them. Also where
    // the schema has no inference function (GRU-1 without its required R
    // reached the RNN unrolling; found by the onnx fuzzer).
    schema->Verify(node);
    if (!schema->has_type_and_shape_inference_function())
      return out;
    std::vector<::onnx::TypeProto> storage(inputs.size());
    std::vector<std::unique_ptr<::onnx::TensorProto>> constants;
    std::unordered_map<std::string, ::onnx::TypeProto *> types;
    std::unordered_map<std::string, const ::onnx::TensorProto *> data;
    for (size_t i = 0;
         i < inputs.size() && i < static_cast<size_t>(node.input_size()); ++i) {
      if (!inputs[i] || node.input(i).empty())
        continue;
      toTypeProto(inputs[i].getType(), storage[i]);
      types[node.input(i)] = &storage[i];
      if (auto c = constantInput(inputs[i])) {
        data[node.input(i)] = c.get();
        constants.push_back(std::move(c));
      }
    }
    std::unordered_map<std::string, const ::onnx::SparseTensorProto *> sparse;
    ::onnx::shape_inference::InferenceContextImpl context(node, types, data,
                                                          sparse);
    schema->GetTypeAndShapeInferenceFunction()(context);
    for (int i = 0; i < node.output_size(); ++i) {
      const ::onnx::TypeProto *t = context.getOutputType(i);
      if (t && t->value_case() != ::onnx::TypeProto::VALUE_NOT_SET)
        out[i] = fromTypeProto(*t, ctx);
    }
  } catch (const std::exception &e) {
    // ONNX could not type the node (a shape error, a subgraph it cannot see
    // into): the caller falls back to the model's value_info.
    if (error)
      *error = e.what();
    return SmallVector<Type>(node.output_size());
  } catch (...) {
    // ONNX could not type the node (a shape error, a subgraph it cannot see
    // into): the caller falls back to the model's value_info.
    return SmallVector<Type>(node.output_size());
  }
  return out;
}

/// Converts an attribute of onnx.Generic back to ONNX; false for kinds that
/// have no ONNX form here (then the node is typed without it).
static bool toAttributeProto(StringRef name, Attribute attr,
                             ::onnx::AttributeProto &out) {
  using AP = ::onnx::AttributeProto;
  out.set_name(name.str());
  if (auto i = llvm::dyn_cast<IntegerAttr>(attr)) {
    out.set_type(AP::INT);
    out.set_i(i.getValue().getSExtValue());
  } else if (auto f = llvm::dyn_cast<FloatAttr>(attr)) {
    out.set_type(AP::FLOAT);
    out.set_f(static_cast<float>(f.getValueAsDouble()));
  } else if (auto str = llvm::dyn_cast<StringAttr>(attr)) {
    out.set_type(AP::STRING);
    out.set_s(str.str());
  } else if (auto ints = llvm::dyn_cast<DenseI64ArrayAttr>(attr)) {
    out.set_type(AP::INTS);
    for (int64_t v : ints.asArrayRef())
      out.add_ints(v);
  } else if (auto floats = llvm::dyn_cast<DenseF32ArrayAttr>(attr)) {
    out.set_type(AP::FLOATS);
    for (float v : floats.asArrayRef())
      out.add_floats(v);
  } else if (auto strs = llvm::dyn_cast<ArrayAttr>(attr)) {
    out.set_type(AP::STRINGS);
    for (Attribute a : strs) {
      auto s = llvm::dyn_cast<StringAttr>(a);
      if (!s)
        return false;
      out.add_strings(s.str());
    }
  } else if (auto type = llvm::dyn_cast<TypeAttr>(attr)) {
    out.set_type(AP::TYPE_PROTO);
    toTypeProto(type.getValue(), *out.mutable_tp());
  } else if (auto elements = llvm::dyn_cast<ElementsAttr>(attr)) {
    auto st = llvm::cast<ShapedType>(elements.getType());
    int32_t code = getONNXElementType(st.getElementType());
    auto *t = out.mutable_t();
    t->set_data_type(code);
    for (int64_t d : st.getShape())
      t->add_dims(d);
    if (code == ::onnx::TensorProto::FLOAT ||
        code == ::onnx::TensorProto::DOUBLE) {
      auto values = readFloatElements(elements);
      if (!values)
        return false;
      for (double v : *values) {
        if (code == ::onnx::TensorProto::FLOAT)
          t->add_float_data(static_cast<float>(v));
        else
          t->add_double_data(v);
      }
    } else if (llvm::isa<IntegerType>(st.getElementType())) {
      auto values = readIntElements(elements);
      if (!values)
        return false;
      for (int64_t v : *values) {
        if (code == ::onnx::TensorProto::INT64)
          t->add_int64_data(v);
        else if (code == ::onnx::TensorProto::UINT32 ||
                 code == ::onnx::TensorProto::UINT64)
          t->add_uint64_data(static_cast<uint64_t>(v));
        else
          t->add_int32_data(static_cast<int32_t>(v));
      }
    } else {
      return false;
    }
    out.set_type(AP::TENSOR);
  } else {
    return false;
  }
  return true;
}

void inferGenericOpTypes(Operation *op, SmallVectorImpl<Type> &out) {
  auto generic = llvm::dyn_cast<hetpar::onnx::GenericOp>(op);
  if (!generic || generic->getNumRegions() != 0) {
    out.append(op->getNumResults(), Type());
    return;
  }
  ::onnx::NodeProto node;
  node.set_op_type(generic.getOpType().str());
  node.set_domain(generic.getDomain().str());
  SmallVector<Value> inputs;
  for (auto [i, v] : llvm::enumerate(generic.getInputs())) {
    bool absent = llvm::isa<NoneType>(v.getType());
    node.add_input(absent ? "" : "in" + std::to_string(i));
    inputs.push_back(absent ? Value() : v);
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    node.add_output("out" + std::to_string(i));
  for (NamedAttribute a : generic.getAttrs())
    if (!toAttributeProto(a.getName(), a.getValue(), *node.add_attribute()))
      node.mutable_attribute()->RemoveLast();
  llvm::append_range(out, inferTypesWithONNXSchema(node, generic.getVersion(),
                                                   inputs, op->getContext(),
                                                   nullptr));
}

} // namespace hetpar::import
