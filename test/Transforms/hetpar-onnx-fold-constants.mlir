// RUN: hetpar-opt %s --split-input-file --hetpar-onnx-fold-constants | FileCheck %s
// Expected values are worked out by hand from the ONNX operator definitions.

// Gather with indices [0, -1] on a 3x4 matrix takes rows 0 and 2.
// CHECK-LABEL: func.func @gather_negative_index
// CHECK: %[[C:.*]] = onnx.Constant dense<{{\[}}[0, 1, 2, 3], [8, 9, 10, 11]]> : tensor<2x4xi64>
// CHECK-NEXT: return %[[C]]
func.func @gather_negative_index() -> tensor<2x4xi64> {
  %data = onnx.Constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi64>
  %idx = onnx.Constant dense<[0, -1]> : tensor<2xi64>
  %0 = onnx.Gather(%data, %idx) : (tensor<3x4xi64>, tensor<2xi64>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// Slice of [1,2,3,4] from -1 with step -1: to INT_MIN gives [4,3,2,1]; steps of 2
// from 0 give [1,3].
// CHECK-LABEL: func.func @slice
// CHECK-DAG: onnx.Constant dense<[4, 3, 2, 1]> : tensor<4xi64>
// CHECK-DAG: onnx.Constant dense<[1, 3]> : tensor<2xi64>
// CHECK-NOT: onnx.Slice
func.func @slice() -> (tensor<4xi64>, tensor<2xi64>) {
  %x = onnx.Constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %start = onnx.Constant dense<[-1]> : tensor<1xi64>
  %min = onnx.Constant dense<[-9223372036854775808]> : tensor<1xi64>
  %step = onnx.Constant dense<[-1]> : tensor<1xi64>
  %0 = onnx.Slice(%x, %start, %min) steps(%step) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %end = onnx.Constant dense<[4]> : tensor<1xi64>
  %two = onnx.Constant dense<[2]> : tensor<1xi64>
  %1 = onnx.Slice(%x, %zero, %end) steps(%two) : (tensor<4xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  return %0, %1 : tensor<4xi64>, tensor<2xi64>
}

// -----

// Integer Div truncates toward zero (-7 / 2 = -3); Mod without fmod takes the
// divisor's sign (-7 mod 2 = 1, 7 mod -2 = -1); broadcasting a scalar.
// CHECK-LABEL: func.func @arith
// CHECK-DAG: onnx.Constant dense<[-3, 3]> : tensor<2xi64>
// CHECK-DAG: onnx.Constant dense<[1, -1]> : tensor<2xi64>
// CHECK-DAG: onnx.Constant dense<[-5, 9]> : tensor<2xi64>
// CHECK-DAG: onnx.Constant dense<[-14, 14]> : tensor<2xi64>
// CHECK-DAG: onnx.Constant dense<[7, -7]> : tensor<2xi64>
func.func @arith() -> (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) {
  %a = onnx.Constant dense<[-7, 7]> : tensor<2xi64>
  %b = onnx.Constant dense<2> : tensor<i64>
  %m = onnx.Constant dense<[2, -2]> : tensor<2xi64>
  %0 = onnx.Div(%a, %b) : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %1 = onnx.Mod(%a, %m) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %2 = onnx.Add(%a, %b) : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %3 = onnx.Mul(%a, %b) : (tensor<2xi64>, tensor<i64>) -> tensor<2xi64>
  %4 = onnx.Neg(%a) : (tensor<2xi64>) -> tensor<2xi64>
  return %0, %1, %2, %3, %4 : tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>
}

// -----

// Shape and Size of a tensor with a static shape; Shape with start/end.
// CHECK-LABEL: func.func @shape_size
// CHECK-DAG: onnx.Constant dense<[2, 3, 4]> : tensor<3xi64>
// CHECK-DAG: onnx.Constant dense<[3, 4]> : tensor<2xi64>
// CHECK-DAG: onnx.Constant dense<24> : tensor<i64>
func.func @shape_size(%x: tensor<2x3x4xf32>) -> (tensor<3xi64>, tensor<2xi64>, tensor<i64>) {
  %0 = onnx.Shape(%x) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %1 = onnx.Shape(%x) {start = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  %2 = onnx.Size(%x) : (tensor<2x3x4xf32>) -> tensor<i64>
  return %0, %1, %2 : tensor<3xi64>, tensor<2xi64>, tensor<i64>
}

// -----

// Concat, Unsqueeze, Squeeze, Reshape and Expand of constants.
// CHECK-LABEL: func.func @layout
// CHECK-DAG: onnx.Constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK-DAG: onnx.Constant dense<{{\[}}[5, 6]]> : tensor<1x2xi64>
// CHECK-DAG: onnx.Constant dense<7> : tensor<i64>
// CHECK-DAG: onnx.Constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK-DAG: onnx.Constant dense<{{\[}}[5, 6], [5, 6], [5, 6]]> : tensor<3x2xi64>
func.func @layout() -> (tensor<3xi64>, tensor<1x2xi64>, tensor<i64>, tensor<2x2xi64>, tensor<3x2xi64>) {
  %a = onnx.Constant dense<[1]> : tensor<1xi64>
  %b = onnx.Constant dense<[2, 3]> : tensor<2xi64>
  %0 = onnx.Concat(%a, %b) {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %c = onnx.Constant dense<[5, 6]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %1 = onnx.Unsqueeze(%c, %ax0) : (tensor<2xi64>, tensor<1xi64>) -> tensor<1x2xi64>
  %d = onnx.Constant dense<[7]> : tensor<1xi64>
  %2 = onnx.Squeeze(%d, %ax0) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %e = onnx.Constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %s = onnx.Constant dense<[2, 2]> : tensor<2xi64>
  %3 = onnx.Reshape(%e, %s) : (tensor<4xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %t = onnx.Constant dense<[3, 1]> : tensor<2xi64>
  %4 = onnx.Expand(%c, %t) : (tensor<2xi64>, tensor<2xi64>) -> tensor<3x2xi64>
  return %0, %1, %2, %3, %4 : tensor<3xi64>, tensor<1x2xi64>, tensor<i64>, tensor<2x2xi64>, tensor<3x2xi64>
}

// -----

// ConstantOfShape (default float 0, and an int value), Range (ceil((10-1)/3) = 3
// elements: 1, 4, 7), Cast float to int truncates toward zero.
// CHECK-LABEL: func.func @generators
// CHECK-DAG: onnx.Constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK-DAG: onnx.Constant dense<5> : tensor<2xi32>
// CHECK-DAG: onnx.Constant dense<[1, 4, 7]> : tensor<3xi64>
// CHECK-DAG: onnx.Constant dense<[-2, 2]> : tensor<2xi64>
func.func @generators() -> (tensor<2x3xf32>, tensor<2xi32>, tensor<3xi64>, tensor<2xi64>) {
  %s = onnx.Constant dense<[2, 3]> : tensor<2xi64>
  %0 = onnx.ConstantOfShape(%s) : (tensor<2xi64>) -> tensor<2x3xf32>
  %s2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %1 = onnx.ConstantOfShape(%s2) {value = dense<5> : tensor<1xi32>} : (tensor<1xi64>) -> tensor<2xi32>
  %start = onnx.Constant dense<1> : tensor<i64>
  %limit = onnx.Constant dense<10> : tensor<i64>
  %delta = onnx.Constant dense<3> : tensor<i64>
  %2 = onnx.Range(%start, %limit, %delta) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3xi64>
  %f = onnx.Constant dense<[-2.7, 2.7]> : tensor<2xf32>
  %3 = onnx.Cast(%f) {to = i64} : (tensor<2xf32>) -> tensor<2xi64>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2xi32>, tensor<3xi64>, tensor<2xi64>
}

// -----

// Comparisons, logic and Where (the mask pattern of exported attention).
// CHECK-LABEL: func.func @logic
// CHECK-DAG: onnx.Constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-DAG: onnx.Constant dense<[false, true, false]> : tensor<3xi1>
// CHECK-DAG: onnx.Constant dense<[10, 2, 30]> : tensor<3xi64>
// CHECK-DAG: onnx.Constant dense<[true, true, false]> : tensor<3xi1>
func.func @logic() -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi64>, tensor<3xi1>) {
  %a = onnx.Constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = onnx.Constant dense<[1, 5, 0]> : tensor<3xi64>
  %0 = onnx.Equal(%a, %b) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %1 = onnx.Less(%a, %b) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi1>
  %x = onnx.Constant dense<[10, 20, 30]> : tensor<3xi64>
  %y = onnx.Constant dense<2> : tensor<i64>
  %n = onnx.Not(%1) : (tensor<3xi1>) -> tensor<3xi1>
  %2 = onnx.Where(%n, %x, %y) : (tensor<3xi1>, tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %3 = onnx.Or(%0, %1) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  return %0, %1, %2, %3 : tensor<3xi1>, tensor<3xi1>, tensor<3xi64>, tensor<3xi1>
}

// -----

// Identity, identity Transpose and same-type Cast forward their operand; ops on
// non-constant data stay.
// CHECK-LABEL: func.func @forwarding
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: onnx.Identity
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: onnx.Cast
// CHECK: %[[R:.*]] = onnx.Relu(%[[X]])
// CHECK: return %[[R]]
func.func @forwarding(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = onnx.Identity(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = onnx.Transpose(%0) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = onnx.Cast(%1) {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = onnx.Relu(%2) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// Folds that would overflow int64 or trap are refused: INT64_MIN / -1 and
// INT64_MIN mod -1 stay as ops (their run-time semantics decide), as does the
// negation of INT64_MIN.
// CHECK-LABEL: func.func @overflow_refused
// CHECK: onnx.Div
// CHECK: onnx.Mod
// CHECK: onnx.Neg
// CHECK: onnx.Add
func.func @overflow_refused() -> (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) {
  %min = onnx.Constant dense<[-9223372036854775808]> : tensor<1xi64>
  %m1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %0 = onnx.Div(%min, %m1) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %1 = onnx.Mod(%min, %m1) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %2 = onnx.Neg(%min) : (tensor<1xi64>) -> tensor<1xi64>
  %3 = onnx.Add(%min, %m1) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %0, %1, %2, %3 : tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>
}

// -----

// Transpose of a constant (the pad computations of exported F.pad): the 2x3
// matrix [[1,2,3],[4,5,6]] transposed is [[1,4],[2,5],[3,6]]; with perm
// [1,0,2] a 2x2x1 tensor [[[1],[2]],[[3],[4]]] becomes [[[1],[3]],[[2],[4]]].
// CHECK-LABEL: func.func @transpose_constant
// CHECK-DAG: onnx.Constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-DAG: onnx.Constant dense<{{\[}}{{\[}}[1], [3]], {{\[}}[2], [4]]]> : tensor<2x2x1xi64>
// CHECK-NOT: onnx.Transpose
func.func @transpose_constant() -> (tensor<3x2xi64>, tensor<2x2x1xi64>) {
  %a = onnx.Constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %0 = onnx.Transpose(%a) : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %b = onnx.Constant dense<[[[1], [2]], [[3], [4]]]> : tensor<2x2x1xi64>
  %1 = onnx.Transpose(%b) {perm = array<i64: 1, 0, 2>} : (tensor<2x2x1xi64>) -> tensor<2x2x1xi64>
  return %0, %1 : tensor<3x2xi64>, tensor<2x2x1xi64>
}

// -----

// Float shape arithmetic: ceil(2.5) = 3, floor(-2.5) = -3, sqrt(16) = 4, |-7| = 7;
// NonZero of a constant: [0, 3, 0, 5] has non-zeros at 1 and 3.
// CHECK-LABEL: func.func @float_shape_math
// CHECK-DAG: onnx.Constant dense<3.000000e+00> : tensor<f32>
// CHECK-DAG: onnx.Constant dense<-3.000000e+00> : tensor<f32>
// CHECK-DAG: onnx.Constant dense<4.000000e+00> : tensor<f32>
// CHECK-DAG: onnx.Constant dense<7> : tensor<i64>
// CHECK-DAG: onnx.Constant dense<{{\[}}[1, 3]]> : tensor<1x2xi64>
func.func @float_shape_math() -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>, tensor<1x2xi64>) {
  %a = onnx.Constant dense<2.5> : tensor<f32>
  %0 = onnx.Ceil(%a) : (tensor<f32>) -> tensor<f32>
  %b = onnx.Constant dense<-2.5> : tensor<f32>
  %1 = onnx.Floor(%b) : (tensor<f32>) -> tensor<f32>
  %c = onnx.Constant dense<16.0> : tensor<f32>
  %2 = onnx.Sqrt(%c) : (tensor<f32>) -> tensor<f32>
  %d = onnx.Constant dense<-7> : tensor<i64>
  %3 = onnx.Abs(%d) : (tensor<i64>) -> tensor<i64>
  %e = onnx.Constant dense<[0, 3, 0, 5]> : tensor<4xi64>
  %4 = onnx.NonZero(%e) : (tensor<4xi64>) -> tensor<1x2xi64>
  return %0, %1, %2, %3, %4 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>, tensor<1x2xi64>
}

// -----

// Folds in narrow types must fit the type: INT32_MIN / -1 does not fold in i32.
// NonZero of a scalar counts it as a one-element vector (ONNX Runtime): 5 gives
// [[0]], 0 gives a 1x0 result.
// CHECK-LABEL: func.func @narrow_and_scalar
// CHECK-DAG: onnx.Constant dense<0> : tensor<1x1xi64>
// CHECK-DAG: onnx.Constant dense<> : tensor<1x0xi64>
// CHECK: onnx.Div
func.func @narrow_and_scalar() -> (tensor<i32>, tensor<1x1xi64>, tensor<1x0xi64>) {
  %min = onnx.Constant dense<-2147483648> : tensor<i32>
  %m1 = onnx.Constant dense<-1> : tensor<i32>
  %0 = onnx.Div(%min, %m1) : (tensor<i32>, tensor<i32>) -> tensor<i32>
  %five = onnx.Constant dense<5> : tensor<i64>
  %1 = onnx.NonZero(%five) : (tensor<i64>) -> tensor<1x1xi64>
  %zero = onnx.Constant dense<0> : tensor<i64>
  %2 = onnx.NonZero(%zero) : (tensor<i64>) -> tensor<1x0xi64>
  return %0, %1, %2 : tensor<i32>, tensor<1x1xi64>, tensor<1x0xi64>
}

// -----

// ScatterND of constants (the attention mask torchvision's Swin builds with
// slice assignments): rows [1] and [-1] of a 3x2 zero matrix become [5, 6]
// and [7, 8]; with reduction add the repeated row 0 sums both updates.
// CHECK-LABEL: func.func @scatter_nd
// CHECK-DAG: onnx.Constant dense<{{\[}}[0.000000e+00, 0.000000e+00], [5.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00]]> : tensor<3x2xf32>
// CHECK-DAG: onnx.Constant dense<{{\[}}[12, 14], [0, 0], [0, 0]]> : tensor<3x2xi64>
// CHECK-NOT: onnx.ScatterND
func.func @scatter_nd() -> (tensor<3x2xf32>, tensor<3x2xi64>) {
  %data = onnx.Constant dense<0.0> : tensor<3x2xf32>
  %idx = onnx.Constant dense<[[1], [-1]]> : tensor<2x1xi64>
  %upd = onnx.Constant dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %0 = onnx.ScatterND(%data, %idx, %upd) : (tensor<3x2xf32>, tensor<2x1xi64>, tensor<2x2xf32>) -> tensor<3x2xf32>
  %idata = onnx.Constant dense<0> : tensor<3x2xi64>
  %same = onnx.Constant dense<[[0], [0]]> : tensor<2x1xi64>
  %iupd = onnx.Constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
  %1 = onnx.ScatterND(%idata, %same, %iupd) {reduction = "add"} : (tensor<3x2xi64>, tensor<2x1xi64>, tensor<2x2xi64>) -> tensor<3x2xi64>
  return %0, %1 : tensor<3x2xf32>, tensor<3x2xi64>
}

// -----

// ScatterElements along axis 1 of [[1, 2, 3]]: index 2 then -1 (the same
// element), reduction max keeps the larger update, 9; index 0 takes 4.
// CHECK-LABEL: func.func @scatter_elements
// CHECK: %[[C:.*]] = onnx.Constant dense<{{\[}}[4, 2, 9]]> : tensor<1x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @scatter_elements() -> tensor<1x3xi64> {
  %data = onnx.Constant dense<[[1, 2, 3]]> : tensor<1x3xi64>
  %idx = onnx.Constant dense<[[2, -1, 0]]> : tensor<1x3xi64>
  %upd = onnx.Constant dense<[[9, 8, 4]]> : tensor<1x3xi64>
  %0 = onnx.ScatterElements(%data, %idx, %upd) {axis = 1 : i64, reduction = "max"} : (tensor<1x3xi64>, tensor<1x3xi64>, tensor<1x3xi64>) -> tensor<1x3xi64>
  return %0 : tensor<1x3xi64>
}
