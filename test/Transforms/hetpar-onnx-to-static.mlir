// The whole pipeline: input shapes, inference with folding, Identity removal,
// canonicalization, static check.
// RUN: hetpar-opt %s --hetpar-onnx-to-static='input-shapes=x=4x8' | FileCheck %s
// RUN: not hetpar-opt %s --hetpar-onnx-to-static 2>&1 | FileCheck %s --check-prefix=DYN

// CHECK-LABEL: func.func @model
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {onnx.name = "x"}) -> (tensor<4x2x4xf32> {onnx.name = "y"})
// CHECK-NEXT: %[[S:.*]] = onnx.Constant dense<[4, 2, 4]> : tensor<3xi64>
// CHECK-NEXT: %[[R:.*]] = onnx.Reshape(%[[X]], %[[S]]) : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<4x2x4xf32>
// CHECK-NEXT: %[[T:.*]] = onnx.Tanh(%[[R]]) : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
// CHECK-NEXT: return %[[T]]
// DYN: error: input 'x' has dynamic type 'tensor<?x8xf32>'; give its shape with --input-shape
func.func @model(%x: tensor<?x8xf32> {onnx.name = "x"}) -> (tensor<?x2x4xf32> {onnx.name = "y"}) {
  %id = onnx.Identity(%x) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %shape = onnx.Shape(%id) : (tensor<?x8xf32>) -> tensor<2xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %b = onnx.Gather(%shape, %i0) : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %ax = onnx.Constant dense<[0]> : tensor<1xi64>
  %b1 = onnx.Unsqueeze(%b, %ax) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = onnx.Constant dense<[2, 4]> : tensor<2xi64>
  %target = onnx.Concat(%b1, %rest) {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %r = onnx.Reshape(%id, %target) : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x2x4xf32>
  %d = onnx.Dropout(%r) : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %t = onnx.Tanh(%d) : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  return %t : tensor<?x2x4xf32>
}
