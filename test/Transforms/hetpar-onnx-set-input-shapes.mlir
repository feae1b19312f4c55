// RUN: hetpar-opt %s --split-input-file --hetpar-onnx-set-input-shapes='shapes=input_ids=2x16,mask=2x?' | FileCheck %s
// RUN: not hetpar-opt %s --split-input-file --hetpar-onnx-set-input-shapes='shapes=input_ids=2x16x1' 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not hetpar-opt %s --split-input-file --hetpar-onnx-set-input-shapes='shapes=ids=2x16' 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not hetpar-opt %s --split-input-file --hetpar-onnx-set-input-shapes='shapes=input_ids=2xfoo' 2>&1 | FileCheck %s --check-prefix=SPEC
// RUN: not hetpar-opt %s --split-input-file --hetpar-onnx-set-input-shapes='shapes=input_ids=1125899906842624x8' 2>&1 | FileCheck %s --check-prefix=HUGE

// CHECK-LABEL: func.func @model
// CHECK-SAME: tensor<2x16xi64> {onnx.name = "input_ids"}
// CHECK-SAME: tensor<2x?xi64> {onnx.name = "mask"}
// The op types are refined later, by hetpar-onnx-infer-shapes.
// CHECK: onnx.Add(%{{.*}}, %{{.*}}) : (tensor<2x16xi64>, tensor<2x?xi64>) -> tensor<?x?xi64>
// RANK: error: input shape input_ids=2x16x1 does not match the input's 'tensor<?x?xi64>'
// NAME: error: input shape given for 'ids', which is not an input; the inputs are: input_ids mask
// SPEC: error: input shape 'input_ids=2xfoo': 'foo' is not a dimension
// The importer's size check (ShapeUtils.h's exceedsMaxTensorBytes): 2^50 x 8
// int64 is 2^56 bytes.
// HUGE: error: input shape input_ids=1125899906842624x8 gives a tensor that holds more than 2^53 bytes (8 PiB), the most HetPar plans for one tensor
func.func @model(%ids: tensor<?x?xi64> {onnx.name = "input_ids"}, %mask: tensor<?x?xi64> {onnx.name = "mask"}) -> tensor<?x?xi64> {
  %0 = onnx.Add(%ids, %mask) : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  return %0 : tensor<?x?xi64>
}
