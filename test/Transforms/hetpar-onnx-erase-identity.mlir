// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-erase-identity))' | FileCheck %s

// CHECK-LABEL: func.func @identity_and_inference_dropout
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: onnx.Identity
// CHECK-NOT: onnx.Dropout
// CHECK: %[[R:.*]] = onnx.Relu(%[[X]])
// CHECK: %[[F:.*]] = onnx.Constant dense<false>
// CHECK: %[[R2:.*]] = onnx.Relu(%[[R]])
// CHECK: return %[[R2]]
func.func @identity_and_inference_dropout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = onnx.Identity(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = onnx.Dropout(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = onnx.Relu(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %false = onnx.Constant dense<false> : tensor<i1>
  %3 = onnx.Dropout(%2) training_mode(%false) : (tensor<2x3xf32>, tensor<i1>) -> tensor<2x3xf32>
  %4 = onnx.Relu(%3) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// -----

// A used mask of an inference Dropout is all true.
// CHECK-LABEL: func.func @mask
// CHECK: %[[S:.*]] = onnx.Shape(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2xi64>
// CHECK: %[[M:.*]] = onnx.ConstantOfShape(%[[S]]) {value = dense<true> : tensor<i1>}
// CHECK: return %{{.*}}, %[[M]]
func.func @mask(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %0, %mask = onnx.Dropout(%x) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  return %0, %mask : tensor<2x3xf32>, tensor<2x3xi1>
}

// -----

// A training-mode Dropout of ratio 0 drops nothing (PyTorch exports
// nn.Dropout(p=0.0) in training mode so): erased, its mask all true.
// CHECK-LABEL: func.func @training_ratio_zero
// CHECK-NOT: onnx.Dropout
// CHECK: %[[M:.*]] = onnx.ConstantOfShape(%{{.*}}) {value = dense<true> : tensor<i1>}
// CHECK: return %{{.*}}, %[[M]]
func.func @training_ratio_zero(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %true = onnx.Constant dense<true> : tensor<i1>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %0, %mask = onnx.Dropout(%x) ratio(%zero) training_mode(%true) : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  return %0, %mask : tensor<2x3xf32>, tensor<2x3xi1>
}

// -----

// Training-mode Dropout is kept.
// CHECK-LABEL: func.func @training
// CHECK: onnx.Dropout
func.func @training(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %true = onnx.Constant dense<true> : tensor<i1>
  %0 = onnx.Dropout(%x) training_mode(%true) : (tensor<2x3xf32>, tensor<i1>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
