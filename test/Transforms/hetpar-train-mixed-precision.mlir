// RUN: split-file %s %t
// RUN: hetpar-opt %t/step.mlir --hetpar-train-mixed-precision | FileCheck %s --check-prefix=BF16
// RUN: hetpar-opt %t/step.mlir --hetpar-train-mixed-precision='dtype=float16' | FileCheck %s --check-prefix=F16
// RUN: hetpar-opt %t/step.mlir --hetpar-train-mixed-precision='dtype=float16' --hetpar-onnx-differentiate --hetpar-train-optimizer | FileCheck %s --check-prefix=SCALED
// RUN: hetpar-opt %t/state.mlir --hetpar-train-mixed-precision | FileCheck %s --check-prefix=STATE
// RUN: hetpar-opt %t/unknown.mlir --hetpar-train-mixed-precision='dtype=float8' --verify-diagnostics
// RUN: hetpar-opt %t/f16-loss.mlir --hetpar-train-mixed-precision --verify-diagnostics
// RUN: hetpar-opt %t/twice.mlir --hetpar-train-mixed-precision='dtype=float16' --verify-diagnostics

//--- step.mlir
// What hetpar-train-attach-loss leaves: a linear layer on float32 input x, a
// mask built from an int64 input by a Cast to float32, a constant, and the
// cross-entropy loss.
//
// bfloat16: the master weight stays a float32 global whose load is cast; the
// input is cast on entry; the Cast to float32 casts to bfloat16; the
// constant is cast; every computed value is bfloat16; the loss op gets its
// float operand cast back to float32 and the loss stays a float32 scalar.
// BF16-LABEL: module
// BF16: ml_program.global private mutable @w({{.*}}) : tensor<3x4xf32> {hetpar.role = "param"}
// BF16-NOT: hetpar.loss_scale
// BF16-LABEL: func.func @main
// BF16-SAME: (%arg0: tensor<2x3xf32> {onnx.name = "x"}, %arg1: tensor<2x4xi64> {onnx.name = "m"}, %arg2: tensor<2xi64> {onnx.name = "labels"}) -> (tensor<f32> {onnx.name = "loss"})
// BF16: %[[X:.*]] = onnx.Cast(%arg0) {to = bf16} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
// BF16: %[[WF:.*]] = ml_program.global_load @w : tensor<3x4xf32>
// BF16: %[[W:.*]] = onnx.Cast(%[[WF]]) {to = bf16} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// BF16: %[[Y:.*]] = onnx.MatMul(%[[X]], %[[W]]) : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// BF16: %[[M:.*]] = onnx.Cast(%arg1) {to = bf16} : (tensor<2x4xi64>) -> tensor<2x4xbf16>
// BF16: %[[CF:.*]] = onnx.Constant dense<2.000000e+00> : tensor<f32>
// BF16: %[[C:.*]] = onnx.Cast(%[[CF]]) {to = bf16} : (tensor<f32>) -> tensor<bf16>
// BF16: %[[S:.*]] = onnx.Mul(%[[M]], %[[C]]) : (tensor<2x4xbf16>, tensor<bf16>) -> tensor<2x4xbf16>
// BF16: %[[Z:.*]] = onnx.Add(%[[Y]], %[[S]]) : (tensor<2x4xbf16>, tensor<2x4xbf16>) -> tensor<2x4xbf16>
// BF16: %[[Z32:.*]] = onnx.Cast(%[[Z]]) {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
// BF16: %[[L:.*]], %{{.*}} = onnx.SoftmaxCrossEntropyLoss(%[[Z32]], %arg2) {{.*}} : (tensor<2x4xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x4xf32>)
// BF16: return %[[L]] : tensor<f32>
//
// float16: the same in f16, plus the loss scale (2^16) and the count of
// finite steps as "state" globals, named by the function.
// F16: ml_program.global private mutable @hetpar.loss_scale(dense<6.553600e+04> : tensor<f32>) : tensor<f32> {hetpar.role = "state"}
// F16: ml_program.global private mutable @hetpar.good_steps(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "state"}
// F16-LABEL: func.func @main
// F16-SAME: attributes {hetpar.loss_scale = @hetpar.loss_scale}
// F16: onnx.MatMul({{.*}}) : (tensor<2x3xf16>, tensor<3x4xf16>) -> tensor<2x4xf16>
//
// Differentiation seeds the backward pass with the scale; the weight's
// gradient comes back to float32 through the Cast's gradient; the optimizer
// unscales (1 / scale), replaces the scale by NaN (skip) when the sum of
// squares of the gradients is not finite, and updates the scale and the
// count after the weights.
// SCALED-LABEL: func.func @main
// SCALED: %[[SEED:.*]] = ml_program.global_load @hetpar.loss_scale : tensor<f32>
// SCALED: onnx.SoftmaxCrossEntropyLossGrad(%[[SEED]],
// SCALED: %[[DW:.*]] = onnx.Cast(%{{.*}}) {to = f32} : (tensor<3x4xf16>) -> tensor<3x4xf32>
// SCALED: %[[SC:.*]] = ml_program.global_load @hetpar.loss_scale : tensor<f32>
// SCALED: %[[ONE:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// SCALED: %[[UN:.*]] = onnx.Div(%[[ONE]], %[[SC]])
// SCALED: %[[SQ:.*]] = onnx.ReduceSumSquare(%[[DW]])
// SCALED: %[[NAN:.*]] = onnx.IsNaN(%[[SQ]])
// SCALED: %[[INF:.*]] = onnx.IsInf(%[[SQ]])
// SCALED: %[[BAD:.*]] = onnx.Or(%[[NAN]], %[[INF]])
// SCALED: %[[OK:.*]] = onnx.Not(%[[BAD]])
// SCALED: %[[Q:.*]] = onnx.Constant dense<0x7FC00000> : tensor<f32>
// SCALED: %[[GS:.*]] = onnx.Where(%[[OK]], %[[UN]], %[[Q]])
// SCALED: onnx.AdamWOptimizer(%{{.*}}, %[[DW]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[GS]])
// SCALED: %[[G:.*]] = ml_program.global_load @hetpar.good_steps
// SCALED: onnx.Constant dense<2000> : tensor<i64>
// SCALED: %[[TWO:.*]] = onnx.Constant dense<2.000000e+00> : tensor<f32>
// SCALED: %[[TWICE:.*]] = onnx.Mul(%[[SC]], %[[TWO]])
// SCALED: %[[GROWN:.*]] = onnx.Where(%{{.*}}, %[[TWICE]], %[[SC]])
// SCALED: %[[P5:.*]] = onnx.Constant dense<5.000000e-01> : tensor<f32>
// SCALED: %[[HALF:.*]] = onnx.Mul(%[[SC]], %[[P5]])
// SCALED: %[[NEXT:.*]] = onnx.Where(%[[OK]], %[[GROWN]], %[[HALF]])
// SCALED: ml_program.global_store @hetpar.loss_scale = %[[NEXT]]
// SCALED: ml_program.global_store @hetpar.good_steps =
// SCALED: ml_program.global_store @hetpar.step =
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<3x4xf32>) : tensor<3x4xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"}, %m: tensor<2x4xi64> {onnx.name = "m"}, %labels: tensor<2xi64> {onnx.name = "labels"}) -> (tensor<f32> {onnx.name = "loss"}) {
    %w = ml_program.global_load @w : tensor<3x4xf32>
    %y = onnx.MatMul(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %mf = onnx.Cast(%m) {to = f32} : (tensor<2x4xi64>) -> tensor<2x4xf32>
    %c = onnx.Constant dense<2.0> : tensor<f32>
    %s = onnx.Mul(%mf, %c) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %z = onnx.Add(%y, %s) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %loss, %logp = onnx.SoftmaxCrossEntropyLoss(%z, %labels) {ignore_index = -100 : i64, reduction = "mean"} : (tensor<2x4xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x4xf32>)
    return %loss : tensor<f32>
  }
}

//--- state.mlir
// An op whose result is stored to a global (as BatchNormalization's running
// statistics are) runs in float32 on the unrounded float32 values (the
// buffer's load, not its 16-bit cast) and on the float32 cast of the 16-bit
// activation; the store gets the float32 result, other users a 16-bit cast.
// STATE-LABEL: func.func @main
// STATE: %[[X:.*]] = onnx.Cast(%arg0) {to = bf16}
// STATE: %[[RM:.*]] = ml_program.global_load @rm : tensor<4xf32>
// STATE: %[[Y:.*]] = onnx.Relu(%[[X]]) : (tensor<4xbf16>) -> tensor<4xbf16>
// STATE: %[[Y32:.*]] = onnx.Cast(%[[Y]]) {to = f32}
// STATE: %[[NEW:.*]] = onnx.Add(%[[RM]], %[[Y32]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// STATE: %[[NEW16:.*]] = onnx.Cast(%[[NEW]]) {to = bf16}
// STATE: onnx.ReduceSum(%[[NEW16]]) {{.*}} -> tensor<bf16>
// STATE: ml_program.global_store @rm = %[[NEW]] : tensor<4xf32>
module {
  ml_program.global private mutable @rm(dense<0.0> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "buffer"}
  func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
    %rm = ml_program.global_load @rm : tensor<4xf32>
    %y = onnx.Relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %new = onnx.Add(%rm, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %s = onnx.ReduceSum(%new) {keepdims = 0 : i64} : (tensor<4xf32>) -> tensor<f32>
    %l = onnx.Neg(%s) : (tensor<f32>) -> tensor<f32>
    ml_program.global_store @rm = %new : tensor<4xf32>
    return %l : tensor<f32>
  }
}

//--- unknown.mlir
// expected-error @below {{mixed precision: unknown dtype 'float8' (bfloat16 or float16)}}
module {
  func.func @main() -> tensor<f32> {
    %c = onnx.Constant dense<1.0> : tensor<f32>
    return %c : tensor<f32>
  }
}

//--- f16-loss.mlir
module {
  // expected-error @below {{mixed precision: the loss (result 0) must be a float32 scalar}}
  func.func @main() -> tensor<f16> {
    %c = onnx.Constant dense<1.0> : tensor<f16>
    return %c : tensor<f16>
  }
}

//--- twice.mlir
// expected-error @below {{the module already has a global @hetpar.loss_scale}}
module {
  ml_program.global private mutable @hetpar.loss_scale(dense<1.0> : tensor<f32>) : tensor<f32>
  func.func @main() -> tensor<f32> {
    %c = onnx.Constant dense<1.0> : tensor<f32>
    return %c : tensor<f32>
  }
}
