// RUN: split-file %s %t
// RUN: hetpar-opt %t/lift.mlir --hetpar-train-lift-params | FileCheck %s
// RUN: hetpar-opt %t/rename.mlir --hetpar-train-lift-params | FileCheck %s --check-prefix=RENAME
// RUN: hetpar-opt %t/lift.mlir --hetpar-train-lift-params='freeze=fc\.bias|other' | FileCheck %s --check-prefix=FREEZE
// RUN: hetpar-opt %t/nothing.mlir --split-input-file --hetpar-train-lift-params --verify-diagnostics
// RUN: hetpar-opt %t/all-frozen.mlir --hetpar-train-lift-params='freeze=fc\..*' --verify-diagnostics
// RUN: hetpar-opt %t/no-match.mlir --hetpar-train-lift-params='freeze=fc1\..*' --verify-diagnostics
// RUN: hetpar-opt %t/bad-regex.mlir --hetpar-train-lift-params='freeze=*' --verify-diagnostics
// RUN: hetpar-opt %t/buffers.mlir --hetpar-train-lift-params | FileCheck %s --check-prefix=BUF
// RUN: hetpar-opt %t/buffers.mlir --hetpar-train-lift-params='freeze=bn\..*' | FileCheck %s --check-prefix=BUFFREEZE
// RUN: hetpar-opt %t/shared-buffer.mlir --split-input-file --hetpar-train-lift-params --verify-diagnostics
// A model imported as the documentation says (the initializers marked by
// hetpar-translate --mark-initializers or hetpar-compile --mode training
// --emit=mlir): its 6 initializers become parameters. Imported for
// inference, it has none to train, and the error says how to import it.
// RUN: hetpar-translate --import-onnx %models/mlp/model.onnx --mark-initializers | hetpar-opt --hetpar-train-lift-params | FileCheck %s --check-prefix=IMPORTED
// RUN: hetpar-compile %models/mlp/model.onnx --mode training --emit=mlir -o %t/mlp-training.mlir
// RUN: hetpar-opt %t/mlp-training.mlir --hetpar-train-lift-params | FileCheck %s --check-prefix=IMPORTED
// IMPORTED-COUNT-6: ml_program.global private mutable @"{{[0-9]}}.{{weight|bias}}"
// IMPORTED-NOT: ml_program.global private mutable
// RUN: hetpar-translate --import-onnx %models/mlp/model.onnx | not hetpar-opt --hetpar-train-lift-params 2>&1 | FileCheck %s --check-prefix=UNMARKED
// UNMARKED: error: nothing to train: the model has no float initializer marked onnx.initializer (import with hetpar-translate --import-onnx --mark-initializers)

//--- lift.mlir
// Float initializers become private mutable globals (module order: the order
// of the constants) read by global_load; an integer initializer and a float
// constant that is no initializer (a folded or Constant node) stay constants.
// CHECK-LABEL: module
// CHECK: ml_program.global private mutable @fc.weight(dense<{{\[}}[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>) : tensor<2x3xf32> {hetpar.role = "param"}
// CHECK-NEXT: ml_program.global private mutable @fc.bias(dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
// CHECK-NOT: ml_program.global {{.*}}@shape
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[W:.*]] = ml_program.global_load @fc.weight : tensor<2x3xf32>
// CHECK-DAG: %[[B:.*]] = ml_program.global_load @fc.bias : tensor<2xf32>
// CHECK-DAG: %[[S:.*]] = onnx.Constant {onnx.initializer = "shape"} dense<[4, 2]> : tensor<2xi64>
// CHECK-DAG: %[[K:.*]] = onnx.Constant dense<2.000000e+00> : tensor<f32>
// CHECK: onnx.Gemm(%arg0, %[[W]], %[[B]]) {transB = 1 : i64}
// CHECK: onnx.Mul(%{{.*}}, %[[K]])
// CHECK: onnx.Reshape(%{{.*}}, %[[S]])

// --freeze (a full match: "other" names nothing here, "fc" alone would not
// match) keeps fc.bias a constant.
// FREEZE-LABEL: module
// FREEZE: ml_program.global private mutable @fc.weight
// FREEZE-NOT: ml_program.global {{.*}}@fc.bias
// FREEZE: %[[B:.*]] = onnx.Constant {onnx.initializer = "fc.bias"} dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// FREEZE: onnx.Gemm(%arg0, %{{.*}}, %[[B]])
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}) -> (tensor<4x2xf32> {onnx.name = "y"}) {
  %w = onnx.Constant {onnx.initializer = "fc.weight"} dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %b = onnx.Constant {onnx.initializer = "fc.bias"} dense<[0.5, -0.5]> : tensor<2xf32>
  %s = onnx.Constant {onnx.initializer = "shape"} dense<[4, 2]> : tensor<2xi64>
  %k = onnx.Constant dense<2.0> : tensor<f32>
  %0 = onnx.Gemm(%x, %w, %b) {transB = 1 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %1 = onnx.Mul(%0, %k) : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
  %2 = onnx.Reshape(%1, %s) : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

//--- rename.mlir
// An initializer named like another symbol: the global is renamed, and the
// load follows it.
// RENAME-LABEL: module
// RENAME: ml_program.global private mutable @[[G:main_[0-9]+]](dense<1.000000e+00> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
// RENAME-LABEL: func.func @main
// RENAME: ml_program.global_load @[[G]] : tensor<2xf32>
func.func @main(%x: tensor<2xf32> {onnx.name = "x"}) -> tensor<2xf32> {
  %w = onnx.Constant {onnx.initializer = "main"} dense<1.0> : tensor<2xf32>
  %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

//--- nothing.mlir
// No initializer at all: the constant is no parameter.
// expected-error @+1 {{nothing to train: the model has no float initializer}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %k = onnx.Constant dense<1.0> : tensor<2xf32>
    %0 = onnx.Mul(%x, %k) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

// -----

// Integer initializers are never trained.
// expected-error @+1 {{nothing to train: the model has no float initializer}}
module {
  func.func @main(%x: tensor<2xi64>) -> tensor<2xi64> {
    %k = onnx.Constant {onnx.initializer = "k"} dense<1> : tensor<2xi64>
    %0 = onnx.Add(%x, %k) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    return %0 : tensor<2xi64>
  }
}

//--- all-frozen.mlir
// expected-error @+1 {{nothing to train: the model has no float initializer that --freeze leaves trainable}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %w = onnx.Constant {onnx.initializer = "fc.weight"} dense<1.0> : tensor<2xf32>
    %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

//--- no-match.mlir
// A --freeze that names nothing is a typo, not a no-op.
// expected-error @+1 {{--freeze 'fc1\..*' matches no float initializer of the model}}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %w = onnx.Constant {onnx.initializer = "fc.weight"} dense<1.0> : tensor<2xf32>
    %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

//--- bad-regex.mlir
// expected-error @+1 {{--freeze '*' is not a valid regular expression: }}
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %w = onnx.Constant {onnx.initializer = "fc.weight"} dense<1.0> : tensor<2xf32>
    %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

//--- buffers.mlir
// The running statistics of a training-mode BatchNormalization are state, not
// parameters: role "buffer", and the node's new running statistics are stored
// into them last, after every read of the old values. Those of an inference
// BatchNormalization (training_mode 0) stay parameters; a training-mode one
// without running-statistics results keeps its buffers unchanged (no store).
// BUF-LABEL: module
// BUF: ml_program.global private mutable @bn.scale({{.*}}) : tensor<2xf32> {hetpar.role = "param"}
// BUF-NEXT: ml_program.global private mutable @bn.bias({{.*}}) : tensor<2xf32> {hetpar.role = "param"}
// BUF-NEXT: ml_program.global private mutable @bn.running_mean(dense<[1.000000e-01, 2.000000e-01]> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "buffer"}
// BUF-NEXT: ml_program.global private mutable @bn.running_var(dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "buffer"}
// BUF-NEXT: ml_program.global private mutable @bn2.running_mean({{.*}}) : tensor<2xf32> {hetpar.role = "buffer"}
// BUF-NEXT: ml_program.global private mutable @bn2.running_var({{.*}}) : tensor<2xf32> {hetpar.role = "buffer"}
// BUF-NEXT: ml_program.global private mutable @eval.mean({{.*}}) : tensor<2xf32> {hetpar.role = "param"}
// BUF-LABEL: func.func @main
// BUF: %[[M:[^ ]+]] = ml_program.global_load @bn.running_mean
// BUF: %[[V:[^ ]+]] = ml_program.global_load @bn.running_var
// BUF: %[[Y:[^,]+]], %[[RS:[^ ]+]]:2 = onnx.BatchNormalization(%arg0, %{{[^,]+}}, %{{[^,]+}}, %[[M]], %[[V]]) {momentum = 8.000000e-01 : f32, training_mode = 1 : i64}
// BUF: %[[EVAL:[^ ]+]] = onnx.BatchNormalization(%[[Y]], {{.*}}) : (
// BUF: onnx.BatchNormalization(%[[EVAL]], {{.*}}) {training_mode = 1 : i64}
// BUF-NOT: global_store
// BUF: ml_program.global_store @bn.running_mean = %[[RS]]#0 : tensor<2xf32>
// BUF-NEXT: ml_program.global_store @bn.running_var = %[[RS]]#1 : tensor<2xf32>
// BUF-NEXT: return
// --freeze does not apply to buffers.
// BUFFREEZE-NOT: @bn.scale
// BUFFREEZE: @bn.running_mean({{.*}}) : tensor<2xf32> {hetpar.role = "buffer"}
// BUFFREEZE: @bn.running_var({{.*}}) : tensor<2xf32> {hetpar.role = "buffer"}
// BUFFREEZE: ml_program.global_store @bn.running_mean
func.func @main(%x: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  %s = onnx.Constant {onnx.initializer = "bn.scale"} dense<[1.0, 2.0]> : tensor<2xf32>
  %b = onnx.Constant {onnx.initializer = "bn.bias"} dense<[0.0, 1.0]> : tensor<2xf32>
  %m = onnx.Constant {onnx.initializer = "bn.running_mean"} dense<[0.1, 0.2]> : tensor<2xf32>
  %v = onnx.Constant {onnx.initializer = "bn.running_var"} dense<[1.0, 2.0]> : tensor<2xf32>
  %m2 = onnx.Constant {onnx.initializer = "bn2.running_mean"} dense<[0.3, 0.4]> : tensor<2xf32>
  %v2 = onnx.Constant {onnx.initializer = "bn2.running_var"} dense<[3.0, 4.0]> : tensor<2xf32>
  %em = onnx.Constant {onnx.initializer = "eval.mean"} dense<[0.5, 0.6]> : tensor<2xf32>
  %0:3 = onnx.BatchNormalization(%x, %s, %b, %m, %v) {momentum = 0.8 : f32, training_mode = 1 : i64} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>)
  %1 = onnx.BatchNormalization(%0#0, %s, %b, %em, %v) : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2x3xf32>
  %2 = onnx.BatchNormalization(%1, %s, %b, %m2, %v2) {training_mode = 1 : i64} : (tensor<4x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2x3xf32>
  return %2 : tensor<4x2x3xf32>
}

//--- shared-buffer.mlir
// Two training-mode nodes cannot both update one initializer.
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %s = onnx.Constant {onnx.initializer = "s"} dense<[1.0, 2.0]> : tensor<2xf32>
  %m = onnx.Constant {onnx.initializer = "mean"} dense<[0.1, 0.2]> : tensor<2xf32>
  %v = onnx.Constant {onnx.initializer = "var"} dense<[1.0, 2.0]> : tensor<2xf32>
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %m, %v) {training_mode = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  // expected-error @+1 {{initializer 'mean' would get two new running statistics (running_mean of}}
  %1:3 = onnx.BatchNormalization(%0#0, %s, %s, %m, %v) {training_mode = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  return %1#0 : tensor<4x2xf32>
}

// -----

// Nor can one node update one initializer as both its mean and its variance.
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %s = onnx.Constant {onnx.initializer = "s"} dense<[1.0, 2.0]> : tensor<2xf32>
  %m = onnx.Constant {onnx.initializer = "stats"} dense<[0.1, 0.2]> : tensor<2xf32>
  // expected-error @+1 {{initializer 'stats' would get two new running statistics (running_mean of op BatchNormalization and running_var of op BatchNormalization): a training program keeps one copy of it}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %m, %m) {training_mode = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
  return %0#0 : tensor<4x2xf32>
}

// -----

// The new statistics must have the initializer's type.
func.func @main(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %s = onnx.Constant {onnx.initializer = "s"} dense<[1.0, 2.0]> : tensor<2xf32>
  %m = onnx.Constant {onnx.initializer = "mean"} dense<[0.1, 0.2]> : tensor<2xf32>
  %v = onnx.Constant {onnx.initializer = "var"} dense<[1.0, 2.0]> : tensor<2xf32>
  // expected-error @+1 {{running statistic result of type 'tensor<?xf32>' cannot update initializer 'mean' of type 'tensor<2xf32>'}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %m, %v) {training_mode = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<?xf32>, tensor<?xf32>)
  return %0#0 : tensor<4x2xf32>
}
