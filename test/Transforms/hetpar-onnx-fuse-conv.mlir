// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-fuse-conv))' | FileCheck %s

// A ResNet block's end: Conv with bias, Add of the shortcut (on the left),
// Relu: one FusedConv with the shortcut as its residual; the chain is gone.
// CHECK-LABEL: func.func @residual_relu
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8x8xf32>, %[[W:.*]]: tensor<4x4x3x3xf32>, %[[B:.*]]: tensor<4xf32>, %[[Z:.*]]: tensor<2x4x8x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = onnx.FusedConv(%[[X]], %[[W]]) bias(%[[B]]) residual(%[[Z]]) {activation = "Relu", pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @residual_relu(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %b: tensor<4xf32>, %z: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %0 = onnx.Conv(%x, %w, %b) {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %1 = onnx.Add(%z, %0) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %2 = onnx.Relu(%1) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %2 : tensor<2x4x8x8xf32>
}

// -----

// Conv, then Relu (no bias, grouped, strided: the attributes carry over);
// MobileNet's ReLU6 as a Clip with constant bounds; an Add alone.
// CHECK-LABEL: func.func @activations
// CHECK: %[[R:.*]] = onnx.FusedConv(%{{.*}}, %{{.*}}) {activation = "Relu", group = 2 : i64, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
// CHECK: %[[C:.*]] = onnx.FusedConv(%[[R]], %{{.*}}) {activation = "Clip", activation_params = array<f32: 0.000000e+00, 6.000000e+00>} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
// CHECK: onnx.FusedConv(%[[C]], %{{.*}}) residual(%[[C]]) : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NOT: onnx.Relu
// CHECK-NOT: onnx.Clip
// CHECK-NOT: onnx.Add
func.func @activations(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x1x1xf32>, %w2: tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32> {
  %0 = onnx.Conv(%x, %w) {group = 2 : i64, strides = array<i64: 2, 2>} : (tensor<1x4x8x8xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %1 = onnx.Relu(%0) : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %lo = onnx.Constant dense<0.0> : tensor<f32>
  %hi = onnx.Constant dense<6.0> : tensor<f32>
  %2 = onnx.Conv(%1, %w2) : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %3 = onnx.Clip(%2) min(%lo) max(%hi) : (tensor<1x4x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %4 = onnx.Conv(%3, %w2) : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %5 = onnx.Add(%4, %3) : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %5 : tensor<1x4x4x4xf32>
}

// -----

// PyTorch's ReLU6 export, Relu then Clip(0, 6): one Clip. A Clip without a
// lower bound clamps to float's lowest value (ONNX's default), not -inf.
// CHECK-LABEL: func.func @relu6_and_missing_bound
// CHECK: %[[R:.*]] = onnx.FusedConv(%{{.*}}, %{{.*}}) {activation = "Clip", activation_params = array<f32: 0.000000e+00, 6.000000e+00>}
// CHECK: onnx.FusedConv(%[[R]], %{{.*}}) {activation = "Clip", activation_params = array<f32: -3.40282347E+38, 2.000000e+00>}
// CHECK-NOT: onnx.Relu
// CHECK-NOT: onnx.Clip
func.func @relu6_and_missing_bound(%x: tensor<1x4x4x4xf32>, %w: tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32> {
  %lo = onnx.Constant dense<0.0> : tensor<f32>
  %six = onnx.Constant dense<6.0> : tensor<f32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %0 = onnx.Conv(%x, %w) : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %1 = onnx.Relu(%0) : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %2 = onnx.Clip(%1) min(%lo) max(%six) : (tensor<1x4x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  %3 = onnx.Conv(%2, %w) : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
  %4 = onnx.Clip(%3) max(%two) : (tensor<1x4x4x4xf32>, tensor<f32>) -> tensor<1x4x4x4xf32>
  return %4 : tensor<1x4x4x4xf32>
}

// -----

// Left alone: a Conv result with a second use (a training graph's backward
// pass reads it), an Add that broadcasts, a Clip with a bound from data, a
// Conv without a fusable user, and an Add of two equal dynamic types (which
// may broadcast at run time).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: onnx.FusedConv
// CHECK: onnx.Relu
// CHECK: onnx.Add
// CHECK: onnx.Clip
// CHECK-LABEL: func.func @dynamic_residual
// CHECK-NOT: onnx.FusedConv
// CHECK: onnx.Add
func.func @left_alone(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %c: tensor<2x1x1xf32>, %m: tensor<f32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %0 = onnx.Conv(%x, %w) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = onnx.Relu(%0) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %2 = onnx.Conv(%x, %w) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %3 = onnx.Add(%2, %c) : (tensor<1x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %4 = onnx.Conv(%x, %w) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %5 = onnx.Clip(%4) min(%m) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %6 = onnx.Conv(%x, %w) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %0, %1, %3, %5, %6 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}
func.func @dynamic_residual(%x: tensor<?x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %z: tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32> {
  %0 = onnx.Conv(%x, %w) : (tensor<?x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<?x2x4x4xf32>
  %1 = onnx.Add(%0, %z) : (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  return %1 : tensor<?x2x4x4xf32>
}

