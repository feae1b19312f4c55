// RUN: split-file %s %t
// RUN: hetpar-opt %t/train.mlir --hetpar-train-dropout | FileCheck %s
// RUN: hetpar-opt %t/train.mlir --hetpar-train-dropout='seed=7' | FileCheck %s --check-prefix=SEED7
// RUN: hetpar-opt %t/existing-step.mlir --hetpar-train-dropout | FileCheck %s --check-prefix=EXISTING
// RUN: hetpar-opt %t/inference.mlir --hetpar-train-dropout | FileCheck %s --check-prefix=INFER
// RUN: hetpar-opt %t/not-constant.mlir --hetpar-train-dropout --verify-diagnostics

//--- train.mlir
// Every training-mode Dropout reads the step counter (created here: int64 0,
// role "step"; loaded once, first) and returns its mask. Seeds: the ONNX seed
// when given (5), else splitmix64(seed + k) for the k-th unseeded one:
// splitmix64(0) = 0xe220a8397b1dcdaf, splitmix64(1) = 0x910a2dec89025cc1
// (SplitMix64's reference sequence; as int64 below).
// CHECK-LABEL: module
// CHECK: ml_program.global private mutable @hetpar.step(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[STEP:[^ ]+]] = ml_program.global_load @hetpar.step : tensor<i64>
// CHECK: %[[Y0:[^,]+]], %[[M0:[^ ]+]] = onnx.Dropout(%arg0) ratio(%{{[^)]+}}) training_mode(%{{[^)]+}}) step(%[[STEP]]) {seed = -2152535657050944081 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<i1>, tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK: %[[Y1:[^,]+]], %{{[^ ]+}} = onnx.Dropout(%[[Y0]]) ratio(%{{[^)]+}}) training_mode(%{{[^)]+}}) step(%[[STEP]]) {seed = -7995527694508729151 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<i1>, tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK: %[[Y2:[^,]+]], %{{[^ ]+}} = onnx.Dropout(%[[Y1]]) training_mode(%{{[^)]+}}) step(%[[STEP]]) {seed = 5 : i64} : (tensor<2x3xf32>, tensor<i1>, tensor<i64>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// CHECK: onnx.Cast(%[[M0]])
// CHECK: onnx.ReduceSum(%[[Y2]])
// The program seed shifts the unseeded ones only: splitmix64(7), (8).
// SEED7: {seed = 7191089600892374487 : i64}
// SEED7: {seed = -7037347547344193994 : i64}
// SEED7: {seed = 5 : i64}
func.func @main(%x: tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32>) {
  %r = onnx.Constant dense<0.25> : tensor<f32>
  %t = onnx.Constant dense<true> : tensor<i1>
  %0:2 = onnx.Dropout(%x) ratio(%r) training_mode(%t) : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
  %1 = onnx.Dropout(%0#0) ratio(%r) training_mode(%t) : (tensor<2x3xf32>, tensor<f32>, tensor<i1>) -> tensor<2x3xf32>
  %2 = onnx.Dropout(%1) training_mode(%t) {seed = 5 : i64} : (tensor<2x3xf32>, tensor<i1>) -> tensor<2x3xf32>
  %m = onnx.Cast(%0#1) {to = f32} : (tensor<2x3xi1>) -> tensor<2x3xf32>
  %s = onnx.ReduceSum(%2) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
  return %s, %m : tensor<f32>, tensor<2x3xf32>
}

//--- existing-step.mlir
// A step counter made before (a role "step" global) is the one read.
// EXISTING: ml_program.global private mutable @counter(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
// EXISTING-NOT: ml_program.global
// EXISTING: ml_program.global_load @counter
ml_program.global private mutable @counter(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %t = onnx.Constant dense<true> : tensor<i1>
  %0 = onnx.Dropout(%x) training_mode(%t) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//--- inference.mlir
// Dropout without training_mode, or with a constant false one, is left alone,
// and no step counter is made.
// INFER-NOT: ml_program.global
// INFER: onnx.Dropout(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// INFER: onnx.Dropout(%{{.*}}) training_mode(%{{.*}}) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
// INFER-NOT: step(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %f = onnx.Constant dense<false> : tensor<i1>
  %0 = onnx.Dropout(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = onnx.Dropout(%0) training_mode(%f) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

//--- not-constant.mlir
// A training_mode computed at run time cannot be drawn per step.
func.func @main(%x: tensor<4xf32>, %t: tensor<i1>) -> tensor<4xf32> {
  // expected-error @+1 {{training needs a constant training_mode (its masks are drawn per step)}}
  %0 = onnx.Dropout(%x) training_mode(%t) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
