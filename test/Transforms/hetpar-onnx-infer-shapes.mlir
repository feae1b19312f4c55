// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-infer-shapes))' | FileCheck %s
// RUN: hetpar-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(hetpar-onnx-infer-shapes{fold=false}))' | FileCheck %s --check-prefix=NOFOLD

// The shape computation of a model exported with a dynamic batch axis, after the
// batch was fixed to 2: Shape -> Gather -> Unsqueeze -> Concat -> Reshape. One
// sweep folds it and makes every type static.
// CHECK-LABEL: func.func @dynamic_export
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>) -> tensor<2x2x4xf32>
// CHECK-NOT: onnx.Shape
// CHECK-NOT: onnx.Gather
// CHECK-NOT: onnx.Concat
// CHECK: %[[SHAPE:.*]] = onnx.Constant dense<[2, 2, 4]> : tensor<3xi64>
// CHECK: %[[R:.*]] = onnx.Reshape(%[[X]], %[[SHAPE]]) : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x2x4xf32>
// CHECK: %[[T:.*]] = onnx.Relu(%[[R]]) : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
// CHECK: return %[[T]] : tensor<2x2x4xf32>
// NOFOLD-LABEL: func.func @dynamic_export
// NOFOLD: onnx.Shape(%{{.*}}) : (tensor<2x8xf32>) -> tensor<2xi64>
// NOFOLD: onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<?x2x4xf32>
func.func @dynamic_export(%x: tensor<2x8xf32>) -> tensor<?x2x4xf32> {
  %shape = onnx.Shape(%x) : (tensor<2x8xf32>) -> tensor<2xi64>
  %zero = onnx.Constant dense<0> : tensor<i64>
  %batch = onnx.Gather(%shape, %zero) : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %batch1 = onnx.Unsqueeze(%batch, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = onnx.Constant dense<[2, 4]> : tensor<2xi64>
  %target = onnx.Concat(%batch1, %rest) {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %r = onnx.Reshape(%x, %target) : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<?x2x4xf32>
  %y = onnx.Relu(%r) : (tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  return %y : tensor<?x2x4xf32>
}

// -----

// Refinement follows each op's rule: broadcasting, MatMul batch dimensions,
// Softmax keeps its input's type, Split with num_outputs gives [3,3,3,1].
// CHECK-LABEL: func.func @rules
// CHECK: onnx.Add(%{{.*}}, %{{.*}}) : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<4x5x3xf32>
// CHECK: onnx.MatMul(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<4x3x5xf32>) -> tensor<4x2x5xf32>
// CHECK: onnx.Softmax(%{{.*}}) : (tensor<4x2x5xf32>) -> tensor<4x2x5xf32>
// CHECK: onnx.Split(%{{.*}}) {num_outputs = 4 : i64} : (tensor<10xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1xf32>)
func.func @rules(%a: tensor<4x1x3xf32>, %b: tensor<5x1xf32>, %m: tensor<2x3xf32>, %n: tensor<4x3x5xf32>, %s: tensor<10xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<?xf32>) {
  %0 = onnx.Add(%a, %b) : (tensor<4x1x3xf32>, tensor<5x1xf32>) -> tensor<*xf32>
  %1 = onnx.MatMul(%m, %n) : (tensor<2x3xf32>, tensor<4x3x5xf32>) -> tensor<*xf32>
  %2 = onnx.Softmax(%1) : (tensor<*xf32>) -> tensor<*xf32>
  %3:4 = onnx.Split(%s) {num_outputs = 4 : i64} : (tensor<10xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return %0, %2, %3#3 : tensor<*xf32>, tensor<*xf32>, tensor<?xf32>
}

// -----

// Reshape with allowzero keeps a real 0: [0,3,4] to [3,4,0] gives [3,4,0]; without
// allowzero, 0 copies the input dimension.
// CHECK-LABEL: func.func @reshape_zero
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) {allowzero = 1 : i64} : (tensor<0x3x4xf32>, tensor<3xi64>) -> tensor<3x4x0xf32>
// CHECK: onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
func.func @reshape_zero(%x: tensor<0x3x4xf32>, %y: tensor<2x3x4xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %s = onnx.Constant dense<[3, 4, 0]> : tensor<3xi64>
  %0 = onnx.Reshape(%x, %s) {allowzero = 1 : i64} : (tensor<0x3x4xf32>, tensor<3xi64>) -> tensor<*xf32>
  %t = onnx.Constant dense<[0, -1]> : tensor<2xi64>
  %1 = onnx.Reshape(%y, %t) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %0, %1 : tensor<*xf32>, tensor<*xf32>
}

// -----

// Expand broadcasts both ways: [2,2] to [1,2] stays [2,2]; to [2,1,1] gives [2,2,2].
// Concat of a legacy empty [0] tensor and a [1,2] tensor gives [1,2].
// CHECK-LABEL: func.func @expand_concat
// CHECK: onnx.Expand(%{{.*}}, %{{.*}}) : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
// CHECK: onnx.Expand(%{{.*}}, %{{.*}}) : (tensor<2x2xf32>, tensor<3xi64>) -> tensor<2x2x2xf32>
// CHECK: onnx.Concat(%{{.*}}, %{{.*}}) {axis = 0 : i64} : (tensor<0xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
func.func @expand_concat(%x: tensor<2x2xf32>, %e: tensor<0xf32>, %y: tensor<1x2xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %s1 = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %0 = onnx.Expand(%x, %s1) : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<*xf32>
  %s2 = onnx.Constant dense<[2, 1, 1]> : tensor<3xi64>
  %1 = onnx.Expand(%x, %s2) : (tensor<2x2xf32>, tensor<3xi64>) -> tensor<*xf32>
  %2 = onnx.Concat(%e, %y) {axis = 0 : i64} : (tensor<0xf32>, tensor<1x2xf32>) -> tensor<*xf32>
  return %0, %1, %2 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Slice with negative steps: [1,2,3,4][-1:INT_MAX:-1] is empty and
// [1,2,3,4][-1:INT_MIN:-1] is [4,3,2,1] (so the shapes are 0 and 4).
// CHECK-LABEL: func.func @slice_negative_step
// CHECK: onnx.Slice{{.*}} -> tensor<0xf32>
// CHECK: onnx.Slice{{.*}} -> tensor<4xf32>
func.func @slice_negative_step(%x: tensor<4xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %start = onnx.Constant dense<[-1]> : tensor<1xi64>
  %max = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %min = onnx.Constant dense<[-9223372036854775808]> : tensor<1xi64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %step = onnx.Constant dense<[-1]> : tensor<1xi64>
  %0 = onnx.Slice(%x, %start, %max) axes(%axes) steps(%step) : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  %1 = onnx.Slice(%x, %start, %min) axes(%axes) steps(%step) : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %0, %1 : tensor<?xf32>, tensor<?xf32>
}

// -----

// Convolution and pooling output extents: (8 + 2 - 3) / 2 + 1 = 4; SAME_UPPER
// gives ceil(8 / 2) = 4; MaxPool 3x3 stride 2 on 8 gives floor(5 / 2) + 1 = 3, and
// with ceil_mode ceil(5 / 2) + 1 = 4 (the last window starts at 6 < 8, so it stays).
// CHECK-LABEL: func.func @windows
// CHECK: onnx.Conv{{.*}} -> tensor<1x4x4x4xf32>
// CHECK: onnx.Conv{{.*}} -> tensor<1x4x4x4xf32>
// CHECK: onnx.MaxPool{{.*}} -> tensor<1x3x4x4xf32>
// CHECK: onnx.MaxPool{{.*}} -> tensor<1x3x3x3xf32>
func.func @windows(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %p: tensor<1x3x8x8xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %0 = onnx.Conv(%x, %w) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
  %1 = onnx.Conv(%x, %w) {auto_pad = "SAME_UPPER", strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<*xf32>
  %2 = onnx.MaxPool(%p) {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<*xf32>
  %3 = onnx.MaxPool(%p) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<*xf32>
  return %0, %1, %2, %3 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Ops the dialect does not model are typed by ONNX's own schema inference once
// their inputs are known: TopK with K = 2 on 4x6 along axis 1 gives 4x2.
// CHECK-LABEL: func.func @generic
// CHECK: onnx.Generic "TopK"{{.*}} -> (tensor<4x2xf32>, tensor<4x2xi64>)
// CHECK: return {{.*}} : tensor<4x2xf32>
func.func @generic(%x: tensor<4x6xf32>) -> tensor<?x?xf32> {
  %k = onnx.Constant dense<[2]> : tensor<1xi64>
  %0:2 = onnx.Generic "TopK"(%x, %k) attributes {attrs = {axis = 1 : i64}, domain = "", version = 17 : i64} : (tensor<4x6xf32>, tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
  return %0#0 : tensor<?x?xf32>
}

// -----

// Range counts exactly in integers: from INT64_MIN to INT64_MIN + 10 by 3 is
// ceil(10 / 3) = 4 elements. NonZero of a constant has a static count. Einsum
// "bsd,btd->bst" on (2,5,8) and (2,7,8) gives (2,5,7); without "->" the output is
// the letters that appear once, sorted: "ij,jk" gives "ik".
// CHECK-LABEL: func.func @counts
// CHECK: onnx.Constant dense<[-9223372036854775808, -9223372036854775805, -9223372036854775802, -9223372036854775799]> : tensor<4xi64>
// CHECK: onnx.Einsum{{.*}} -> tensor<2x5x7xf32>
// CHECK: onnx.Einsum{{.*}} -> tensor<3x5xf32>
func.func @counts(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> (tensor<?xi64>, tensor<*xf32>, tensor<*xf32>) {
  %start = onnx.Constant dense<-9223372036854775808> : tensor<i64>
  %limit = onnx.Constant dense<-9223372036854775798> : tensor<i64>
  %delta = onnx.Constant dense<3> : tensor<i64>
  %0 = onnx.Range(%start, %limit, %delta) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %1 = onnx.Einsum(%q, %k) {equation = "bsd,btd->bst"} : (tensor<2x5x8xf32>, tensor<2x7x8xf32>) -> tensor<*xf32>
  %2 = onnx.Einsum(%a, %b) {equation = "ij,jk"} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return %0, %1, %2 : tensor<?xi64>, tensor<*xf32>, tensor<*xf32>
}

// -----

// A TorchScript-style shape test: if x.shape[1] > 4 then x[:, :4] else x. Once
// x is 2x6x3 the condition folds to true and the If is replaced by its then
// branch, which yields 2x4x3.
// CHECK-LABEL: func.func @shape_dependent_if
// CHECK-SAME: -> tensor<2x4x3xf32>
// CHECK-NOT: onnx.Generic
// CHECK: onnx.Slice{{.*}} -> tensor<2x4x3xf32>
func.func @shape_dependent_if(%x: tensor<2x6x3xf32>) -> tensor<?x?x?xf32> {
  %shape = onnx.Shape(%x) : (tensor<2x6x3xf32>) -> tensor<3xi64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %d = onnx.Gather(%shape, %one) : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %four = onnx.Constant dense<4> : tensor<i64>
  %c = onnx.Greater(%d, %four) : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %0 = onnx.Generic "If"(%c) attributes {attrs = {}, domain = "", region_names = ["then_branch", "else_branch"], version = 17 : i64} bodies {
    %s = onnx.Constant dense<[0]> : tensor<1xi64>
    %e = onnx.Constant dense<[4]> : tensor<1xi64>
    %a = onnx.Constant dense<[1]> : tensor<1xi64>
    %t = onnx.Slice(%x, %s, %e) axes(%a) : (tensor<2x6x3xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x?x?xf32>
    onnx.Yield %t : tensor<?x?x?xf32>
  }, {
    onnx.Yield %x : tensor<2x6x3xf32>
  } : (tensor<i1>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// An If on a run-time condition keeps what both branches agree on: 4x3 here.
// CHECK-LABEL: func.func @runtime_if
// CHECK: onnx.Generic "If"
// CHECK: -> tensor<4x3xf32>
// CHECK: return {{.*}} : tensor<4x3xf32>
func.func @runtime_if(%c: tensor<i1>, %x: tensor<4x3xf32>) -> tensor<?x3xf32> {
  %0 = onnx.Generic "If"(%c) attributes {attrs = {}, domain = "", region_names = ["then_branch", "else_branch"], version = 17 : i64} bodies {
    %r = onnx.Relu(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    onnx.Yield %r : tensor<4x3xf32>
  }, {
    %n = onnx.Neg(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    onnx.Yield %n : tensor<4x3xf32>
  } : (tensor<i1>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Slice with a step of INT64_MAX from 0 to INT64_MAX takes one element (numpy
// and ONNX Runtime agree); the extent arithmetic must not overflow.
// CHECK-LABEL: func.func @huge_step
// CHECK: onnx.Slice{{.*}} -> tensor<1xf32>
func.func @huge_step(%x: tensor<10xf32>) -> tensor<?xf32> {
  %s = onnx.Constant dense<[0]> : tensor<1xi64>
  %e = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %st = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %0 = onnx.Slice(%x, %s, %e) steps(%st) : (tensor<10xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// Training-mode BatchNormalization of an X whose channel axis is dynamic: the
// running statistics take C from the per-channel operands (a training program
// stores them into globals of that static type).
// CHECK-LABEL: func.func @batchnorm_channels_from_stats
// CHECK: onnx.BatchNormalization{{.*}} -> (tensor<?x?x5xf32>, tensor<3xf32>, tensor<3xf32>)
func.func @batchnorm_channels_from_stats(%x: tensor<?x?x5xf32>, %s: tensor<3xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %s, %s) {training_mode = 1 : i64} : (tensor<?x?x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<?x?x5xf32>, tensor<?xf32>, tensor<?xf32>)
  return %0#1, %0#2 : tensor<?xf32>, tensor<?xf32>
}
