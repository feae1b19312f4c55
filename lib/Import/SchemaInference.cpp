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

/// A TensorProto holding the value of a small integer constant (ONNX's
/// inference reads such inputs, e.g. TopK's K or Resize's sizes); null for
/// anything else.
static std::unique_ptr<::onnx::TensorProto> constantInput(Value v) {
  ElementsAttr attr = hetpar::getConstantElements(v);
  if (!attr || attr.getNumElements() > 1024)
    return nullptr;
  auto type = llvm::cast<ShapedType>(attr.getType());
  int32_t onnxType = getONNXElementType(type.getElementType());
  if (onnxType != ::onnx::TensorProto::INT64 &&
      onnxType != ::onnx::TensorProto::INT32)
    return nullptr;
  auto values = hetpar::readIntElements(attr);
  if (!values)
    return nullptr;
  auto t = std::make_unique<::onnx::TensorProto>();
  t->set_data_type(onnxType);
  for (int64_t d : type.getShape())
    t->add_dims(d);
  for (int64_t x : *values) {
    if (onnxType == ::onnx::TensorProto::INT64)
      t->add_int64_data(x);
    else
      t->add_int32_data(static_cast<int32_t>(x));
  }
  return t;
}

SmallVector<Type> inferTypesWithONNXSchema(::onnx::NodeProto &node,
                                           int64_t version,
                                           ArrayRef<Value> inputs,
                                           MLIRContext *ctx) {
  SmallVector<Type> out(node.output_size());
  try {
    const ::onnx::OpSchema *schema = ::onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(version), node.domain());
    if (!schema || !schema->has_type_and_shape_inference_function())
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
  } catch (...) {
    // ONNX could not type the node (a shape error, a subgraph it cannot see
    // into): the caller falls back to the model's value_info.
    return SmallVector<Type>(node.output_size());
  }
  return out;
}

} // namespace hetpar::import
