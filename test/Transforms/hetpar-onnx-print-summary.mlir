// RUN: hetpar-opt %s --hetpar-onnx-print-summary -o /dev/null | FileCheck %s
// FLOP counts by hand (multiply-add = 2):
//   Conv: output 1x4x4x4 = 64 elements, each 3*3*3 = 27 multiply-adds, plus bias:
//         2*64*27 + 64 = 3520
//   Relu: 64;  Flatten: 0
//   Gemm: 1x64 by 64x10 with bias: 2*10*64 + 10 = 1290
//   Softmax over 10 elements: 5*10 = 50
// Parameters: W 4*3*3*3 = 108, B 4, G 640, C 10 = 762 floats (3048 bytes);
// the int64 shape constant is not a parameter but counts 16 constant bytes.
// CHECK: function @net
// CHECK-NEXT:   input  image: 1x3x8x8 f32
// CHECK-NEXT:   output probs: 1x10 f32
// CHECK-NEXT:   ops: 6 in 6 kinds
// CHECK:        Conv       1   3520
// CHECK-NEXT:   Relu       1     64
// CHECK-NEXT:   Flatten    1      0
// CHECK-NEXT:   Gemm       1   1290
// CHECK-NEXT:   Softmax    1     50
// CHECK-NEXT:   Reshape    1      0
// CHECK-NEXT:   parameters: 762 (762)
// CHECK-NEXT:   constant bytes: 3064 (3.06 kB)
// CHECK-NEXT:   FLOP per run: 4924 (4.92 kFLOP)
func.func @net(%x: tensor<1x3x8x8xf32> {onnx.name = "image"}) -> (tensor<1x10xf32> {onnx.name = "probs"}) {
  %w = onnx.Constant dense<0.5> : tensor<4x3x3x3xf32>
  %b = onnx.Constant dense<0.1> : tensor<4xf32>
  %0 = onnx.Conv(%x, %w, %b) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %1 = onnx.Relu(%0) : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %2 = onnx.Flatten(%1) : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %g = onnx.Constant dense<0.01> : tensor<64x10xf32>
  %c = onnx.Constant dense<0.0> : tensor<10xf32>
  %3 = onnx.Gemm(%2, %g, %c) : (tensor<1x64xf32>, tensor<64x10xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  %4 = onnx.Softmax(%3) : (tensor<1x10xf32>) -> tensor<1x10xf32>
  %s = onnx.Constant dense<[1, 10]> : tensor<2xi64>
  %5 = onnx.Reshape(%4, %s) : (tensor<1x10xf32>, tensor<2xi64>) -> tensor<1x10xf32>
  return %5 : tensor<1x10xf32>
}

// BatchNormalization of 2x3x4x4 = 96 elements: a fused scale and shift in
// inference (2 per element: 192), batch statistics in training mode (8 per
// element, as LayerNormalization: 768).
// CHECK: function @batchnorm
// CHECK:        BatchNormalization{{ +}}2{{ +}}960
// CHECK:        FLOP per run: 960
func.func @batchnorm(%x: tensor<2x3x4x4xf32> {onnx.name = "x"}) -> (tensor<2x3x4x4xf32> {onnx.name = "y"}) {
  %s = onnx.Constant dense<1.0> : tensor<3xf32>
  %0 = onnx.BatchNormalization(%x, %s, %s, %s, %s) : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x4xf32>
  %1:3 = onnx.BatchNormalization(%0, %s, %s, %s, %s) {training_mode = 1 : i64} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %1#0 : tensor<2x3x4x4xf32>
}
