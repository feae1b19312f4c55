// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-fold-transposes))' | FileCheck %s

// A tied LM head: the transposed embedding becomes Gemm's transB; the
// activations are flattened to rows and the result reshaped back, and the
// Transpose is gone.
// CHECK-LABEL: func.func @lm_head
// CHECK-SAME: (%[[H:.*]]: tensor<2x3x4xf32>, %[[E:.*]]: tensor<5x4xf32>)
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: onnx.MatMul
// CHECK: %[[H2:.*]] = onnx.Reshape(%[[H]], %{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
// CHECK: %[[G:.*]] = onnx.Gemm(%[[H2]], %[[E]]) {transB = 1 : i64} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
// CHECK: %[[Y:.*]] = onnx.Reshape(%[[G]], %{{.*}}) : (tensor<6x5xf32>, tensor<3xi64>) -> tensor<2x3x5xf32>
// CHECK: return %[[Y]]
func.func @lm_head(%h: tensor<2x3x4xf32>, %e: tensor<5x4xf32>) -> tensor<2x3x5xf32> {
  %t = onnx.Transpose(%e) {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = onnx.MatMul(%h, %t) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// A transposed left operand: transA, no reshape. The Transpose has another
// user, so it stays.
// CHECK-LABEL: func.func @left
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<4x2xf32>)
// CHECK: %[[T:.*]] = onnx.Transpose(%[[X]])
// CHECK: %[[G:.*]] = onnx.Gemm(%[[X]], %[[B]]) {transA = 1 : i64} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
// CHECK: return %[[G]], %[[T]]
func.func @left(%x: tensor<4x3xf32>, %b: tensor<4x2xf32>) -> (tensor<3x2xf32>, tensor<3x4xf32>) {
  %t = onnx.Transpose(%x) {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = onnx.MatMul(%t, %b) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %y, %t : tensor<3x2xf32>, tensor<3x4xf32>
}

// -----

// Gemm's flags toggle: transB = 1 on a transposed W reads W as it is
// (transB = 0 is the default and not printed).
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[A:.*]]: tensor<3x4xf32>, %[[W:.*]]: tensor<4x2xf32>, %[[C:.*]]: tensor<2xf32>)
// CHECK-NOT: onnx.Transpose
// CHECK: onnx.Gemm(%[[A]], %[[W]], %[[C]]) {alpha = 2.000000e+00 : f32} :
func.func @gemm(%a: tensor<3x4xf32>, %w: tensor<4x2xf32>, %c: tensor<2xf32>) -> tensor<3x2xf32> {
  %t = onnx.Transpose(%w) {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %y = onnx.Gemm(%a, %t, %c) {alpha = 2.0 : f32, transB = 1 : i64} : (tensor<3x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// Left alone: a batched transpose (rank 3), a transpose that is not a swap
// of a matrix's axes, and integer products.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: onnx.Gemm
// CHECK-COUNT-2: onnx.Transpose
// CHECK-NOT: onnx.Gemm
// CHECK: onnx.Transpose
// CHECK-NOT: onnx.Gemm
// CHECK: onnx.MatMul
// CHECK-NOT: onnx.Gemm
func.func @kept(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>, %a: tensor<3x4xi32>, %w: tensor<5x4xi32>) -> (tensor<2x3x3xf32>, tensor<3x5xi32>, tensor<2x3x3xf32>) {
  %kt = onnx.Transpose(%k) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = onnx.MatMul(%q, %kt) : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %wt = onnx.Transpose(%w) {perm = array<i64: 1, 0>} : (tensor<5x4xi32>) -> tensor<4x5xi32>
  %i = onnx.MatMul(%a, %wt) : (tensor<3x4xi32>, tensor<4x5xi32>) -> tensor<3x5xi32>
  %sh = onnx.Constant dense<[2, 4, 3]> : tensor<3xi64>
  %p = onnx.Transpose(%k) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %pr = onnx.Reshape(%p, %sh) : (tensor<4x2x3xf32>, tensor<3xi64>) -> tensor<2x4x3xf32>
  %s2 = onnx.MatMul(%q, %pr) : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  return %s, %i, %s2 : tensor<2x3x3xf32>, tensor<3x5xi32>, tensor<2x3x3xf32>
}
