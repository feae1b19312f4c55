//===- SchemaInference.cpp - ONNX's type inference for unmodeled ops --------===//
//
// For a node whose operator the onnx dialect does not model, the result types come
// from the ONNX library's own type and shape inference for the operator's schema
// (the reference implementation of every standard operator's typing). The ONNX
// library reports failures by throwing, so this file is built with exceptions and
// never lets one escape.
//
//===----------------------------------------------------------------------===//

#include "ImporterInternal.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <unordered_map>

using namespace mlir;

namespace hetpar::import {

SmallVector<Type> inferTypesWithONNXSchema(::onnx::NodeProto &node, int64_t version,
                                           ArrayRef<Type> inputTypes, MLIRContext *ctx) {
  SmallVector<Type> out(node.output_size());
  try {
    const ::onnx::OpSchema *schema =
        ::onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(version), node.domain());
    if (!schema || !schema->has_type_and_shape_inference_function())
      return out;
    std::vector<::onnx::TypeProto> storage(inputTypes.size());
    std::unordered_map<std::string, ::onnx::TypeProto *> types;
    for (size_t i = 0; i < inputTypes.size() && i < static_cast<size_t>(node.input_size()); ++i) {
      if (!inputTypes[i] || node.input(i).empty())
        continue;
      toTypeProto(inputTypes[i], storage[i]);
      types[node.input(i)] = &storage[i];
    }
    std::unordered_map<std::string, const ::onnx::TensorProto *> data;
    std::unordered_map<std::string, const ::onnx::SparseTensorProto *> sparse;
    ::onnx::shape_inference::InferenceContextImpl context(node, types, data, sparse);
    schema->GetTypeAndShapeInferenceFunction()(context);
    for (int i = 0; i < node.output_size(); ++i) {
      const ::onnx::TypeProto *t = context.getOutputType(i);
      if (t && t->value_case() != ::onnx::TypeProto::VALUE_NOT_SET)
        out[i] = fromTypeProto(*t, ctx);
    }
  } catch (...) {
    // ONNX could not type the node (a shape error, a subgraph it cannot see into):
    // the caller falls back to the model's value_info.
    return SmallVector<Type>(node.output_size());
  }
  return out;
}

} // namespace hetpar::import
