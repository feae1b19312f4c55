// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-fuse-gemm-bias))' | FileCheck %s

// nn.Linear on [batch, seq, hidden] as PyTorch exports it: the rows are
// flattened, one Gemm adds the biases (reshaped from [1, 5] to [5]), the
// result takes the product's shape again; MatMul and Add are gone.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-DAG: %[[W:.*]] = onnx.Constant dense<5.000000e-01> : tensor<4x5xf32>
// CHECK-DAG: %[[C:.*]] = onnx.Constant dense<2.000000e+00> : tensor<1x5xf32>
// CHECK-NOT: onnx.MatMul
// CHECK-NOT: onnx.Add
// CHECK: %[[X2:.*]] = onnx.Reshape(%[[X]], %{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
// CHECK: %[[C1:.*]] = onnx.Reshape(%[[C]], %{{.*}}) : (tensor<1x5xf32>, tensor<1xi64>) -> tensor<5xf32>
// CHECK: %[[G:.*]] = onnx.Gemm(%[[X2]], %[[W]], %[[C1]]) : (tensor<6x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
// CHECK: %[[Y:.*]] = onnx.Reshape(%[[G]], %{{.*}}) : (tensor<6x5xf32>, tensor<3xi64>) -> tensor<2x3x5xf32>
// CHECK: return %[[Y]]
func.func @linear(%x: tensor<2x3x4xf32>) -> tensor<2x3x5xf32> {
  %w = onnx.Constant dense<0.5> : tensor<4x5xf32>
  %c = onnx.Constant dense<2.0> : tensor<1x5xf32>
  %m = onnx.MatMul(%x, %w) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %y = onnx.Add(%m, %c) : (tensor<2x3x5xf32>, tensor<1x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// Rows already: no reshape; the bias may be the Add's first operand.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: tensor<6x4xf32>)
// CHECK-NOT: onnx.Reshape
// CHECK: %[[G:.*]] = onnx.Gemm(%[[X]], %{{.*}}, %{{.*}}) : (tensor<6x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
// CHECK: return %[[G]]
func.func @rows(%x: tensor<6x4xf32>) -> tensor<6x5xf32> {
  %w = onnx.Constant dense<0.5> : tensor<4x5xf32>
  %c = onnx.Constant dense<2.0> : tensor<5xf32>
  %m = onnx.MatMul(%x, %w) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y = onnx.Add(%c, %m) : (tensor<5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  return %y : tensor<6x5xf32>
}

// -----

// Left as they are: a product with a second use (a backward pass would read
// it), a weight that is not a constant (a trained parameter), biases that
// are not a row ([6, 1] varies along the rows), and an Add that broadcasts
// the product ([6, 5] + [2, 6, 5]).
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: onnx.Gemm
// CHECK-COUNT-4: onnx.MatMul
func.func @unfused(%x: tensor<6x4xf32>, %p: tensor<4x5xf32>, %z: tensor<2x6x5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<2x6x5xf32>) {
  %w = onnx.Constant dense<0.5> : tensor<4x5xf32>
  %c = onnx.Constant dense<2.0> : tensor<5xf32>
  %col = onnx.Constant dense<2.0> : tensor<6x1xf32>
  %m1 = onnx.MatMul(%x, %w) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y1 = onnx.Add(%m1, %c) : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %m2 = onnx.MatMul(%x, %p) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y2 = onnx.Add(%m2, %c) : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %m3 = onnx.MatMul(%x, %w) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y3 = onnx.Add(%m3, %col) : (tensor<6x5xf32>, tensor<6x1xf32>) -> tensor<6x5xf32>
  %m4 = onnx.MatMul(%x, %w) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %y4 = onnx.Add(%m4, %z) : (tensor<6x5xf32>, tensor<2x6x5xf32>) -> tensor<2x6x5xf32>
  return %y1, %m1, %y2, %y3, %y4 : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<2x6x5xf32>
}
