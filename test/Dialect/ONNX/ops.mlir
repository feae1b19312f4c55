// Round trip: print, parse again, print the same.
// RUN: hetpar-opt %s | hetpar-opt | FileCheck %s
// RUN: hetpar-opt %s --mlir-print-op-generic | hetpar-opt | FileCheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<2x3xi1>) -> tensor<2x3xf32> {
  // CHECK: onnx.Add(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %0 = onnx.Add(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK: onnx.Relu
  %1 = onnx.Relu(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: onnx.LeakyRelu(%{{.*}}) {alpha = 2.000000e-01 : f32}
  %2 = onnx.LeakyRelu(%1) {alpha = 0.2 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: onnx.Where
  %3 = onnx.Where(%c, %2, %a) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: onnx.Equal
  %4 = onnx.Equal(%3, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK: onnx.Max
  %5 = onnx.Max(%3, %b, %a) : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: onnx.Clip(%{{.*}}) max(%{{.*}})
  %m = onnx.Constant dense<6.0> : tensor<f32>
  %6 = onnx.Clip(%5) max(%m) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: onnx.Cast(%{{.*}}) {to = f16}
  %7 = onnx.Cast(%6) {to = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  return %6 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @linear_algebra
func.func @linear_algebra(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %img: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32> {
  // CHECK: onnx.Gemm(%{{.*}}, %{{.*}}, %{{.*}}) {transB = 1 : i64}
  %0 = onnx.Gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // CHECK: onnx.MatMul
  %1 = onnx.MatMul(%0, %w) : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  // CHECK: onnx.Conv(%{{.*}}, %{{.*}}) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
  %2 = onnx.Conv(%img, %k) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
  // CHECK: onnx.MaxPool(%{{.*}}) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>}
  %3 = onnx.MaxPool(%2) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  return %2 : tensor<1x4x4x4xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>) -> (tensor<3x8xf32>, tensor<2x12xf32>) {
  // CHECK: onnx.Shape(%{{.*}}) {start = 1 : i64}
  %0 = onnx.Shape(%x) {start = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  %shape = onnx.Constant dense<[3, 8]> : tensor<2xi64>
  // CHECK: onnx.Reshape
  %1 = onnx.Reshape(%x, %shape) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  // CHECK: onnx.Flatten(%{{.*}}) :
  %2 = onnx.Flatten(%x) {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %starts = onnx.Constant dense<0> : tensor<1xi64>
  %ends = onnx.Constant dense<2> : tensor<1xi64>
  %axes = onnx.Constant dense<2> : tensor<1xi64>
  // CHECK: onnx.Slice(%{{.*}}, %{{.*}}, %{{.*}}) axes(%{{.*}})
  %3 = onnx.Slice(%x, %starts, %ends) axes(%axes) : (tensor<2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x2xf32>
  // CHECK: onnx.Split(%{{.*}}) {axis = 2 : i64, num_outputs = 2 : i64}
  %4:2 = onnx.Split(%x) {axis = 2 : i64, num_outputs = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>)
  // CHECK: onnx.ReduceMean(%{{.*}}, %{{.*}}) {keepdims = 0 : i64}
  %5 = onnx.ReduceMean(%x, %axes) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x3xf32>
  return %1, %2 : tensor<3x8xf32>, tensor<2x12xf32>
}

// CHECK-LABEL: func.func @generic
func.func @generic(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK: onnx.NoValue
  %none = onnx.NoValue
  // CHECK: onnx.Generic "Custom"(%{{.*}}, %{{.*}}) attributes {attrs = {alpha = 1.000000e+00 : f32}, domain = "com.example", version = 1 : i64}
  %0 = onnx.Generic "Custom"(%x, %none) attributes {attrs = {alpha = 1.0 : f32}, domain = "com.example", op_type = "Custom", version = 1 : i64} : (tensor<2x3xf32>, none) -> tensor<2x3xf32>
  // CHECK: onnx.Generic "If"(%{{.*}}) attributes {attrs = {}, domain = "", region_names = ["then_branch"], version = 17 : i64} bodies {
  // CHECK: onnx.Yield %{{.*}} : tensor<2x3xf32>
  %c = onnx.Constant dense<true> : tensor<i1>
  %1 = onnx.Generic "If"(%c) attributes {attrs = {}, domain = "", op_type = "If", region_names = ["then_branch"], version = 17 : i64} bodies {
    onnx.Yield %0 : tensor<2x3xf32>
  } : (tensor<i1>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @losses
func.func @losses(%x: tensor<2x3x4xf32>, %l: tensor<2x4xi64>, %w: tensor<3xf32>, %li: tensor<2x4xi32>) -> (tensor<f32>, tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<f32>) {
  // CHECK: onnx.SoftmaxCrossEntropyLoss(%{{.*}}, %{{.*}}, %{{.*}}) {ignore_index = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x4xi64>, tensor<3xf32>) -> (tensor<f32>, tensor<2x3x4xf32>)
  %0:2 = onnx.SoftmaxCrossEntropyLoss(%x, %l, %w) {ignore_index = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x4xi64>, tensor<3xf32>) -> (tensor<f32>, tensor<2x3x4xf32>)
  // CHECK: onnx.NegativeLogLikelihoodLoss(%{{.*}}, %{{.*}}) {reduction = "none"} : (tensor<2x3x4xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  %1 = onnx.NegativeLogLikelihoodLoss(%0#1, %li) {reduction = "none"} : (tensor<2x3x4xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  // CHECK: onnx.SoftmaxCrossEntropyLoss(%{{.*}}, %{{.*}}) {reduction = "sum"} : (tensor<2x3x4xf32>, tensor<2x4xi64>) -> tensor<f32>
  %2 = onnx.SoftmaxCrossEntropyLoss(%x, %l) {reduction = "sum"} : (tensor<2x3x4xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %0#0, %0#1, %1, %2 : tensor<f32>, tensor<2x3x4xf32>, tensor<2x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @loss_gradients
func.func @loss_gradients(%dy: tensor<f32>, %dyn: tensor<2x4xf32>, %lp: tensor<2x3x4xf32>, %l: tensor<2x4xi64>, %w: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  // CHECK: onnx.SoftmaxCrossEntropyLossGrad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {ignore_index = 1 : i64} : (tensor<f32>, tensor<2x3x4xf32>, tensor<2x4xi64>, tensor<3xf32>) -> tensor<2x3x4xf32>
  %0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %lp, %l, %w) {ignore_index = 1 : i64} : (tensor<f32>, tensor<2x3x4xf32>, tensor<2x4xi64>, tensor<3xf32>) -> tensor<2x3x4xf32>
  // CHECK: onnx.NegativeLogLikelihoodLossGrad(%{{.*}}, %{{.*}}, %{{.*}}) {reduction = "none"} : (tensor<2x4xf32>, tensor<2x3x4xf32>, tensor<2x4xi64>) -> tensor<2x3x4xf32>
  %1 = onnx.NegativeLogLikelihoodLossGrad(%dyn, %lp, %l) {reduction = "none"} : (tensor<2x4xf32>, tensor<2x3x4xf32>, tensor<2x4xi64>) -> tensor<2x3x4xf32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
