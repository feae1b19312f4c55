// The fused backward ops SoftmaxGrad, LogSoftmaxGrad and LayerNormalizationGrad:
// round trip (results may stay unranked), and one negative
// test per constraint their verifiers check.
// RUN: split-file %s %t
// RUN: hetpar-opt %t/ops.mlir | hetpar-opt | FileCheck %s
// RUN: hetpar-opt %t/invalid.mlir -split-input-file -verify-diagnostics

//--- ops.mlir
// CHECK-LABEL: func.func @softmax_grads
// CHECK: onnx.SoftmaxGrad(%{{.*}}, %{{.*}}) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: onnx.LogSoftmaxGrad(%{{.*}}, %{{.*}}) : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<*xbf16>
func.func @softmax_grads(%dy: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>, %dyh: tensor<2x3x4xbf16>, %yh: tensor<2x3x4xbf16>) {
  %0 = onnx.SoftmaxGrad(%dy, %y) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = onnx.LogSoftmaxGrad(%dyh, %yh) : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<*xbf16>
  return
}

// CHECK-LABEL: func.func @layer_norm_grad
// CHECK: onnx.LayerNormalizationGrad(%{{.*}}, %{{.*}}, %{{.*}}) {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
func.func @layer_norm_grad(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %s: tensor<3x4xf32>) {
  %0:3 = onnx.LayerNormalizationGrad(%dy, %x, %s) {axis = 1 : i64, epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x4xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

//--- invalid.mlir
func.func @softmax_grad_axis(%dy: tensor<2x3xf32>, %y: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.SoftmaxGrad' op axis 2 is out of range for rank 2}}
  %0 = onnx.SoftmaxGrad(%dy, %y) {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @log_softmax_grad_shape(%dy: tensor<2x4xf32>, %y: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.LogSoftmaxGrad' op dY has shape 2x4 but Y has shape 2x3}}
  %0 = onnx.LogSoftmaxGrad(%dy, %y) : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @softmax_grad_type(%dy: tensor<2x3xbf16>, %y: tensor<2x3xf32>) {
  // expected-error @+1 {{'onnx.SoftmaxGrad' op operands must have one element type, got 'bf16' and 'f32'}}
  %0 = onnx.SoftmaxGrad(%dy, %y) : (tensor<2x3xbf16>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @layer_norm_grad_axis(%dy: tensor<2x3xf32>, %x: tensor<2x3xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'onnx.LayerNormalizationGrad' op axis -3 is out of range for rank 2}}
  %0:3 = onnx.LayerNormalizationGrad(%dy, %x, %s) {axis = -3 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @layer_norm_grad_scale(%dy: tensor<2x3x4xf32>, %x: tensor<2x3x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{'onnx.LayerNormalizationGrad' op Scale has shape 4 but the normalized shape (X's axes from 1) is 3x4}}
  %0:3 = onnx.LayerNormalizationGrad(%dy, %x, %s) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @layer_norm_grad_dy(%dy: tensor<2x5xf32>, %x: tensor<2x3xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{'onnx.LayerNormalizationGrad' op dY has shape 2x5 but X has shape 2x3}}
  %0:3 = onnx.LayerNormalizationGrad(%dy, %x, %s) : (tensor<2x5xf32>, tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}
