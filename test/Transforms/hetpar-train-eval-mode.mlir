// RUN: split-file %s %t
// RUN: hetpar-opt %t/step.mlir --hetpar-train-lift-params --hetpar-train-eval-mode | FileCheck %s
// RUN: hetpar-opt %t/stats-read.mlir --hetpar-train-eval-mode --verify-diagnostics

//--- step.mlir
// After lift-params the step reads the parameters and the BatchNormalization
// buffers as globals and stores the new running statistics. Its evaluation
// form stores nothing, normalizes with the running statistics (inference
// mode: training_mode 0, the default, so not printed; one result), drops the Dropout, and takes every global it read as a
// new argument after %x, in order of first read, named and bound after the
// global; the globals are gone.
// CHECK-LABEL: module
// CHECK-NOT: ml_program.global
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x2x3xf32>
// CHECK-SAME: %[[S:[^:]+]]: tensor<2xf32> {hetpar.bind_weight = "bn.scale", onnx.name = "bn.scale"}
// CHECK-SAME: %[[B:[^:]+]]: tensor<2xf32> {hetpar.bind_weight = "bn.bias", onnx.name = "bn.bias"}
// CHECK-SAME: %[[M:[^:]+]]: tensor<2xf32> {hetpar.bind_weight = "bn.running_mean", onnx.name = "bn.running_mean"}
// CHECK-SAME: %[[V:[^:]+]]: tensor<2xf32> {hetpar.bind_weight = "bn.running_var", onnx.name = "bn.running_var"}
// CHECK-NOT: global_load
// CHECK: %[[Y:[^ ]+]] = onnx.BatchNormalization(%[[X]], %[[S]], %[[B]], %[[M]], %[[V]]) {momentum = 8.000000e-01 : f32} : ({{.*}}) -> tensor<4x2x3xf32>
// CHECK-NOT: onnx.Dropout
// The mask a model reads is all true.
// CHECK: %[[TRUE:[^ ]+]] = onnx.Constant dense<true> : tensor<4x2x3xi1>
// CHECK: %[[MASK:[^ ]+]] = onnx.Cast(%[[TRUE]])
// CHECK: onnx.Mul(%[[Y]], %[[MASK]])
// CHECK-NOT: global_store
// CHECK: return
func.func @main(%x: tensor<4x2x3xf32>) -> tensor<f32> {
  %s = onnx.Constant {onnx.initializer = "bn.scale"} dense<[1.0, 2.0]> : tensor<2xf32>
  %b = onnx.Constant {onnx.initializer = "bn.bias"} dense<[0.0, 1.0]> : tensor<2xf32>
  %m = onnx.Constant {onnx.initializer = "bn.running_mean"} dense<[0.1, 0.2]> : tensor<2xf32>
  %v = onnx.Constant {onnx.initializer = "bn.running_var"} dense<[1.0, 2.0]> : tensor<2xf32>
  %r = onnx.Constant dense<0.5> : tensor<f32>
  %t = onnx.Constant dense<true> : tensor<i1>
  %0:3 = onnx.BatchNormalization(%x, %s, %b, %m, %v) {momentum = 0.8 : f32, training_mode = 1 : i64} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>)
  %1:2 = onnx.Dropout(%0#0) ratio(%r) training_mode(%t) : (tensor<4x2x3xf32>, tensor<f32>, tensor<i1>) -> (tensor<4x2x3xf32>, tensor<4x2x3xi1>)
  %2 = onnx.Cast(%1#1) {to = f32} : (tensor<4x2x3xi1>) -> tensor<4x2x3xf32>
  %3 = onnx.Mul(%1#0, %2) : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %4 = onnx.ReduceMean(%3) {keepdims = 0 : i64} : (tensor<4x2x3xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

//--- stats-read.mlir
// New running statistics read by anything but a state update cannot be
// kept in evaluation.
ml_program.global private mutable @mean(dense<0.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "buffer"}
ml_program.global private mutable @var(dense<1.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "buffer"}
func.func @main(%x: tensor<4x2xf32>, %s: tensor<2xf32>) -> tensor<2xf32> {
  %m = ml_program.global_load @mean : tensor<2xf32>
  %v = ml_program.global_load @var : tensor<2xf32>
  // expected-error @+1 {{evaluation cannot keep its running statistics as values}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %m, %v) {training_mode = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  %1 = onnx.Add(%0#1, %s) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
