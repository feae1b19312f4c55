// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-fuse-attention))' | FileCheck %s

// GPT-2's form: Div by a scalar, a causal Where(mask, S, fill), Softmax on
// the last axis, the product with V: one FusedAttention with divide = 1 and
// keep = 1 (the default, not printed); the chain is gone.
// CHECK-LABEL: func.func @gpt2
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[KT:.*]]: tensor<2x4x8x16xf32>, %[[V:.*]]: tensor<2x4x16x8xf32>, %[[S:.*]]: tensor<f32>, %[[M:.*]]: tensor<1x1x16x16xi1>, %[[F:.*]]: tensor<f32>)
// CHECK-NEXT: %[[Y:.*]] = onnx.FusedAttention(%[[Q]], %[[KT]], %[[V]]) scale(%[[S]]) mask(%[[M]]) fill(%[[F]]) {divide = 1 : i64} : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>, tensor<f32>, tensor<1x1x16x16xi1>, tensor<f32>) -> tensor<2x4x16x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gpt2(%q: tensor<2x4x16x8xf32>, %kt: tensor<2x4x8x16xf32>, %v: tensor<2x4x16x8xf32>, %s: tensor<f32>, %m: tensor<1x1x16x16xi1>, %f: tensor<f32>) -> tensor<2x4x16x8xf32> {
  %0 = onnx.MatMul(%q, %kt) : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %1 = onnx.Div(%0, %s) : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %2 = onnx.Where(%m, %1, %f) : (tensor<1x1x16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %3 = onnx.Softmax(%2) {axis = -1 : i64} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %4 = onnx.MatMul(%3, %v) : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %4 : tensor<2x4x16x8xf32>
}

// -----

// The reverse select Where(mask, fill, S) (keep = 0) after a Mul by a scalar
// on the left; Lq differs from Lk (cross-attention), Dv from D.
// CHECK-LABEL: func.func @reverse_select
// CHECK: onnx.FusedAttention(%{{.*}}, %{{.*}}, %{{.*}}) scale(%{{.*}}) mask(%{{.*}}) fill(%{{.*}}) {keep = 0 : i64} : (tensor<3x5x8xf32>, tensor<3x8x7xf32>, tensor<3x7x6xf32>, tensor<f32>, tensor<5x7xi1>, tensor<f32>) -> tensor<3x5x6xf32>
// CHECK-NOT: onnx.Softmax
func.func @reverse_select(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x7xf32>, %v: tensor<3x7x6xf32>, %s: tensor<f32>, %m: tensor<5x7xi1>, %f: tensor<f32>) -> tensor<3x5x6xf32> {
  %0 = onnx.MatMul(%q, %kt) : (tensor<3x5x8xf32>, tensor<3x8x7xf32>) -> tensor<3x5x7xf32>
  %1 = onnx.Mul(%s, %0) : (tensor<f32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %2 = onnx.Where(%m, %f, %1) : (tensor<5x7xi1>, tensor<f32>, tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %3 = onnx.Softmax(%2) {axis = 2 : i64} : (tensor<3x5x7xf32>) -> tensor<3x5x7xf32>
  %4 = onnx.MatMul(%3, %v) : (tensor<3x5x7xf32>, tensor<3x7x6xf32>) -> tensor<3x5x6xf32>
  return %4 : tensor<3x5x6xf32>
}

// -----

// BERT's additive padding mask [N, 1, 1, Lk] after the Div; and a bare
// Softmax(Q KT) V (nn.MultiheadAttention scales Q beforehand).
// CHECK-LABEL: func.func @additive
// CHECK: onnx.FusedAttention(%{{.*}}, %{{.*}}, %{{.*}}) scale(%{{.*}}) mask(%{{.*}}) {divide = 1 : i64} : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>, tensor<f32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x8xf32>
// CHECK-LABEL: func.func @bare
// CHECK: onnx.FusedAttention(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<6x9x4xf32>, tensor<6x4x9xf32>, tensor<6x9x4xf32>) -> tensor<6x9x4xf32>
func.func @additive(%q: tensor<2x4x16x8xf32>, %kt: tensor<2x4x8x16xf32>, %v: tensor<2x4x16x8xf32>, %s: tensor<f32>, %m: tensor<2x1x1x16xf32>) -> tensor<2x4x16x8xf32> {
  %0 = onnx.MatMul(%q, %kt) : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %1 = onnx.Div(%0, %s) : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %2 = onnx.Add(%1, %m) : (tensor<2x4x16x16xf32>, tensor<2x1x1x16xf32>) -> tensor<2x4x16x16xf32>
  %3 = onnx.Softmax(%2) : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %4 = onnx.MatMul(%3, %v) : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  return %4 : tensor<2x4x16x8xf32>
}
func.func @bare(%q: tensor<6x9x4xf32>, %kt: tensor<6x4x9xf32>, %v: tensor<6x9x4xf32>) -> tensor<6x9x4xf32> {
  %0 = onnx.MatMul(%q, %kt) : (tensor<6x9x4xf32>, tensor<6x4x9xf32>) -> tensor<6x9x9xf32>
  %1 = onnx.Softmax(%0) {axis = -1 : i64} : (tensor<6x9x9xf32>) -> tensor<6x9x9xf32>
  %2 = onnx.MatMul(%1, %v) : (tensor<6x9x9xf32>, tensor<6x9x4xf32>) -> tensor<6x9x4xf32>
  return %2 : tensor<6x9x4xf32>
}

// -----

// Left alone: the Softmax result has a second use (a training graph's
// backward pass reads it); a Softmax over another axis; a product that
// broadcasts K over the heads; a mask that widens the scores.
// CHECK-LABEL: func.func @unfused
// CHECK-NOT: onnx.FusedAttention
// CHECK-COUNT-4: onnx.Softmax
func.func @unfused(%q: tensor<2x4x4xf32>, %kt: tensor<2x4x4xf32>, %k1: tensor<1x4x4xf32>, %v: tensor<2x4x4xf32>, %wide: tensor<3x2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<3x2x4x4xf32>) {
  %0 = onnx.MatMul(%q, %kt) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %1 = onnx.Softmax(%0) : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %2 = onnx.MatMul(%1, %v) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %3 = onnx.MatMul(%q, %kt) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %4 = onnx.Softmax(%3) {axis = 1 : i64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %5 = onnx.MatMul(%4, %v) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %6 = onnx.MatMul(%q, %k1) : (tensor<2x4x4xf32>, tensor<1x4x4xf32>) -> tensor<2x4x4xf32>
  %7 = onnx.Softmax(%6) : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %8 = onnx.MatMul(%7, %v) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %9 = onnx.MatMul(%q, %kt) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %10 = onnx.Add(%9, %wide) : (tensor<2x4x4xf32>, tensor<3x2x4x4xf32>) -> tensor<3x2x4x4xf32>
  %11 = onnx.Softmax(%10) : (tensor<3x2x4x4xf32>) -> tensor<3x2x4x4xf32>
  return %2, %1, %5, %8, %11 : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<3x2x4x4xf32>
}

// -----

// The head transposes around GPT-2's attention fold into the op: Q and V are
// read from [N, L, H, D] through perm [0, 2, 1, 3], K through [0, 2, 3, 1]
// (KT's columns contiguous), Y written back as [N, L, H, D]. A transpose that
// moves the head dimension last (Q's contiguous dimension would be L x H
// away from both matrix dimensions) stays, and so does one with another use.
// CHECK-LABEL: func.func @head_layouts
// CHECK-SAME: (%[[Q:.*]]: tensor<2x16x4x8xf32>, %[[K:.*]]: tensor<2x16x4x8xf32>, %[[V:.*]]: tensor<2x16x4x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = onnx.FusedAttention(%[[Q]], %[[K]], %[[V]]) {kt_perm = array<i64: 0, 2, 3, 1>, q_perm = array<i64: 0, 2, 1, 3>, v_perm = array<i64: 0, 2, 1, 3>, y_perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @head_layouts(%q: tensor<2x16x4x8xf32>, %k: tensor<2x16x4x8xf32>, %v: tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32> {
  %qt = onnx.Transpose(%q) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %kt = onnx.Transpose(%k) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x8x16xf32>
  %vt = onnx.Transpose(%v) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
  %0 = onnx.MatMul(%qt, %kt) : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  %1 = onnx.Softmax(%0) : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %2 = onnx.MatMul(%1, %vt) : (tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  %3 = onnx.Transpose(%2) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
  return %3 : tensor<2x16x4x8xf32>
}

// CHECK-LABEL: func.func @kept_transposes
// CHECK: %[[QT:.*]] = onnx.Transpose(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>}
// CHECK: %[[VT:.*]] = onnx.Transpose(%{{.*}}) {perm = array<i64: 0, 2, 1, 3>}
// CHECK: onnx.FusedAttention(%[[QT]], %{{.*}}, %[[VT]]) : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
func.func @kept_transposes(%q: tensor<2x8x16x4xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x8x4x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {
  %qt = onnx.Transpose(%q) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x8x16x4xf32>) -> tensor<2x4x8x16xf32>
  %vt = onnx.Transpose(%v) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %0 = onnx.MatMul(%qt, %kt) : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %1 = onnx.Softmax(%0) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %2 = onnx.MatMul(%1, %vt) : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %2, %vt : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
}

// -----

// A one-element scale of rank 4 (a registered [1, 1, 1, 1] buffer) is a
// scale like a scalar.
// CHECK-LABEL: func.func @scale_of_rank_four
// CHECK: onnx.FusedAttention(%{{.*}}, %{{.*}}, %{{.*}}) scale(%{{.*}}) : (tensor<2x3x8x1xf32>, tensor<2x3x1x10xf32>, tensor<2x3x10x5xf32>, tensor<1x1x1x1xf32>) -> tensor<2x3x8x5xf32>
func.func @scale_of_rank_four(%q: tensor<2x3x8x1xf32>, %kt: tensor<2x3x1x10xf32>, %v: tensor<2x3x10x5xf32>, %c: tensor<1x1x1x1xf32>) -> tensor<2x3x8x5xf32> {
  %0 = onnx.MatMul(%q, %kt) : (tensor<2x3x8x1xf32>, tensor<2x3x1x10xf32>) -> tensor<2x3x8x10xf32>
  %1 = onnx.Mul(%0, %c) : (tensor<2x3x8x10xf32>, tensor<1x1x1x1xf32>) -> tensor<2x3x8x10xf32>
  %2 = onnx.Softmax(%1) : (tensor<2x3x8x10xf32>) -> tensor<2x3x8x10xf32>
  %3 = onnx.MatMul(%2, %v) : (tensor<2x3x8x10xf32>, tensor<2x3x10x5xf32>) -> tensor<2x3x8x5xf32>
  return %3 : tensor<2x3x8x5xf32>
}

// -----

// Grouped-query attention as Hugging Face's Llama exports it: 6 query heads
// over 2 key/value heads, each repeated 3 times (Unsqueeze, Expand, Reshape;
// K's then transposed): the repeats fold into kv_repeat = 3, so the op reads
// K and V in place (K through kt_perm) and the copies are gone.
// CHECK-LABEL: func.func @grouped_query
// CHECK-SAME: (%[[Q:.*]]: tensor<2x6x16x8xf32>, %[[K:.*]]: tensor<2x2x16x8xf32>, %[[V:.*]]: tensor<2x2x16x8xf32>)
// CHECK-NOT: onnx.Unsqueeze
// CHECK-NOT: onnx.Expand
// CHECK-NOT: onnx.Reshape
// CHECK: %[[Y:.*]] = onnx.FusedAttention(%[[Q]], %[[K]], %[[V]]) {kt_perm = array<i64: 0, 1, 3, 2>, kv_repeat = 3 : i64} : (tensor<2x6x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> tensor<2x6x16x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @grouped_query(%q: tensor<2x6x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>) -> tensor<2x6x16x8xf32> {
  %ax = onnx.Constant dense<[2]> : tensor<1xi64>
  %big = onnx.Constant dense<[2, 2, 3, 16, 8]> : tensor<5xi64>
  %heads = onnx.Constant dense<[2, 6, 16, 8]> : tensor<4xi64>
  %k1 = onnx.Unsqueeze(%k, %ax) : (tensor<2x2x16x8xf32>, tensor<1xi64>) -> tensor<2x2x1x16x8xf32>
  %k2 = onnx.Expand(%k1, %big) : (tensor<2x2x1x16x8xf32>, tensor<5xi64>) -> tensor<2x2x3x16x8xf32>
  %k3 = onnx.Reshape(%k2, %heads) : (tensor<2x2x3x16x8xf32>, tensor<4xi64>) -> tensor<2x6x16x8xf32>
  %kt = onnx.Transpose(%k3) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x6x16x8xf32>) -> tensor<2x6x8x16xf32>
  %v1 = onnx.Unsqueeze(%v, %ax) : (tensor<2x2x16x8xf32>, tensor<1xi64>) -> tensor<2x2x1x16x8xf32>
  %v2 = onnx.Expand(%v1, %big) : (tensor<2x2x1x16x8xf32>, tensor<5xi64>) -> tensor<2x2x3x16x8xf32>
  %v3 = onnx.Reshape(%v2, %heads) : (tensor<2x2x3x16x8xf32>, tensor<4xi64>) -> tensor<2x6x16x8xf32>
  %0 = onnx.MatMul(%q, %kt) : (tensor<2x6x16x8xf32>, tensor<2x6x8x16xf32>) -> tensor<2x6x16x16xf32>
  %1 = onnx.Softmax(%0) {axis = -1 : i64} : (tensor<2x6x16x16xf32>) -> tensor<2x6x16x16xf32>
  %2 = onnx.MatMul(%1, %v3) : (tensor<2x6x16x16xf32>, tensor<2x6x16x8xf32>) -> tensor<2x6x16x8xf32>
  return %2 : tensor<2x6x16x8xf32>
}

// -----

// Left alone: only K is repeated (V has its 6 heads), so the repeat stays a
// copy and the op reads the repeated K.
// CHECK-LABEL: func.func @repeat_k_only
// CHECK: onnx.Expand
// CHECK: onnx.FusedAttention
// CHECK-NOT: kv_repeat
func.func @repeat_k_only(%q: tensor<2x6x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x6x16x8xf32>) -> tensor<2x6x16x8xf32> {
  %ax = onnx.Constant dense<[2]> : tensor<1xi64>
  %big = onnx.Constant dense<[2, 2, 3, 16, 8]> : tensor<5xi64>
  %heads = onnx.Constant dense<[2, 6, 16, 8]> : tensor<4xi64>
  %k1 = onnx.Unsqueeze(%k, %ax) : (tensor<2x2x16x8xf32>, tensor<1xi64>) -> tensor<2x2x1x16x8xf32>
  %k2 = onnx.Expand(%k1, %big) : (tensor<2x2x1x16x8xf32>, tensor<5xi64>) -> tensor<2x2x3x16x8xf32>
  %k3 = onnx.Reshape(%k2, %heads) : (tensor<2x2x3x16x8xf32>, tensor<4xi64>) -> tensor<2x6x16x8xf32>
  %kt = onnx.Transpose(%k3) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x6x16x8xf32>) -> tensor<2x6x8x16xf32>
  %0 = onnx.MatMul(%q, %kt) : (tensor<2x6x16x8xf32>, tensor<2x6x8x16xf32>) -> tensor<2x6x16x16xf32>
  %1 = onnx.Softmax(%0) {axis = -1 : i64} : (tensor<2x6x16x16xf32>) -> tensor<2x6x16x16xf32>
  %2 = onnx.MatMul(%1, %v) : (tensor<2x6x16x16xf32>, tensor<2x6x16x8xf32>) -> tensor<2x6x16x8xf32>
  return %2 : tensor<2x6x16x8xf32>
}
