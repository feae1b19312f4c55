// RUN: split-file %s %t
// RUN: hetpar-opt %t/step.mlir --hetpar-train-recompute --mlir-print-debuginfo | FileCheck %s
// RUN: hetpar-opt %t/step.mlir --hetpar-train-recompute='recompute=plan' | FileCheck %s --check-prefix=NOPLAN
// RUN: hetpar-opt %t/plan-on.mlir --hetpar-train-recompute='recompute=plan' | FileCheck %s --check-prefix=PLANON
// RUN: hetpar-opt %t/plan-off.mlir --hetpar-train-recompute='recompute=plan' | FileCheck %s --check-prefix=PLANOFF
// RUN: hetpar-opt %t/two-stages.mlir --hetpar-train-recompute='recompute=plan' --verify-diagnostics
// RUN: not hetpar-opt %t/step.mlir --hetpar-train-recompute='recompute=some' 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: hetpar-opt %t/state.mlir --hetpar-train-recompute | FileCheck %s --check-prefix=STATE
// RUN: hetpar-opt %t/batchnorm.mlir --hetpar-train-recompute | FileCheck %s --check-prefix=BN

//--- step.mlir
// A differentiated step (written by hand) of two layers, /h.0 and /h.1.
// Layer 0's Dropout mask and Tanh output are read by the backward: they are
// recomputed from the layer's inputs (%x, the weight load, the step load)
// just before the first backward op that reads them, the Dropout with the
// same seed and step. Its MatMul and Dropout output (forward use only) and
// the Add (read by layer 1: a layer crossing) are kept, and so are the
// values of the last layer, /h.1. The global_store (an op with an effect)
// still reads the original Tanh.
// CHECK-LABEL: func.func @main
// CHECK: %[[STEP:[^ ]+]] = ml_program.global_load @hetpar.step
// CHECK: %[[W0:[^ ]+]] = ml_program.global_load @w0
// CHECK: %[[W1:[^ ]+]] = ml_program.global_load @w1
// CHECK: %[[A:[^ ]+]] = onnx.MatMul(%arg0, %[[W0]])
// CHECK: %[[P:[^,]+]], %{{[^ ]+}} = onnx.Dropout(%[[A]]) ratio(%{{[^)]+}}) training_mode(%{{[^)]+}}) step(%[[STEP]]) {seed = 5 : i64}
// CHECK: %[[B:[^ ]+]] = onnx.Tanh(%[[P]])
// CHECK: %[[C:[^ ]+]] = onnx.Add(%[[B]], %arg0)
// CHECK: %[[D:[^ ]+]] = onnx.MatMul(%[[C]], %{{[^)]+}})
// CHECK: %[[E:[^ ]+]] = onnx.Tanh(%[[D]])
// CHECK: onnx.ReduceSum(%[[E]])
// The last layer's backward reads its own values and the crossing %c.
// CHECK: onnx.Mul(%[[E]], %[[E]])
// CHECK: onnx.Transpose(%[[C]])
// CHECK: onnx.Transpose(%[[W1]])
// CHECK-NEXT: onnx.MatMul
// The clones of layer 0, then its backward reading them.
// CHECK-NEXT: %[[A2:[^ ]+]] = onnx.MatMul(%arg0, %[[W0]]) {{.*}} loc(#[[LMM:[^)]+]])
// CHECK-NEXT: %[[P2:[^,]+]], %[[M2:[^ ]+]] = onnx.Dropout(%[[A2]]) ratio(%{{[^)]+}}) training_mode(%{{[^)]+}}) step(%[[STEP]]) {seed = 5 : i64}
// CHECK-NEXT: %[[B2:[^ ]+]] = onnx.Tanh(%[[P2]])
// CHECK-NEXT: onnx.Mul(%[[B2]], %[[B2]])
// CHECK-NOT: onnx.Add(%[[B2]]
// CHECK: onnx.Cast(%[[M2]])
// CHECK: ml_program.global_store @stat = %[[B]]
// CHECK: return
// CHECK: #[[LMM]] = loc("/h.0/fc/MatMul")

// Without a plan, recompute=plan changes nothing.
// NOPLAN-LABEL: func.func @main
// NOPLAN: onnx.Tanh
// NOPLAN: onnx.Tanh
// NOPLAN-NOT: onnx.Tanh
// NOPLAN-NOT: onnx.Dropout
// NOPLAN: return
module {
  ml_program.global private mutable @hetpar.step(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
  ml_program.global private mutable @w0(dense<0.5> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  ml_program.global private mutable @w1(dense<0.25> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  ml_program.global private mutable @stat(dense<0.0> : tensor<2x4xf32>) : tensor<2x4xf32> {hetpar.role = "buffer"}
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>) {
    %step = ml_program.global_load @hetpar.step : tensor<i64>
    %w0 = ml_program.global_load @w0 : tensor<4x4xf32>
    %w1 = ml_program.global_load @w1 : tensor<4x4xf32>
    %r = onnx.Constant dense<0.25> : tensor<f32>
    %t = onnx.Constant dense<true> : tensor<i1>
    %one = onnx.Constant dense<1.0> : tensor<f32>
    %a = onnx.MatMul(%x, %w0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.0/fc/MatMul")
    %p:2 = onnx.Dropout(%a) ratio(%r) training_mode(%t) step(%step) {seed = 5 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i1>, tensor<i64>) -> (tensor<2x4xf32>, tensor<2x4xi1>) loc("/h.0/drop/Dropout")
    %b = onnx.Tanh(%p#0) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/act/Tanh")
    %c = onnx.Add(%b, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/Add")
    %d = onnx.MatMul(%c, %w1) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.1/fc/MatMul")
    %e = onnx.Tanh(%d) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.1/act/Tanh")
    %l = onnx.ReduceSum(%e) {keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<f32> loc("/h.1/ReduceSum")
    // Backward of /h.1 (its forward location, as hetpar-onnx-differentiate).
    %e2 = onnx.Mul(%e, %e) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.1/act/Tanh")
    %de = onnx.Sub(%one, %e2) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.1/act/Tanh")
    %ct = onnx.Transpose(%c) {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc("/h.1/fc/MatMul")
    %dw1 = onnx.MatMul(%ct, %de) : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> loc("/h.1/fc/MatMul")
    %w1t = onnx.Transpose(%w1) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("/h.1/fc/MatMul")
    %dc = onnx.MatMul(%de, %w1t) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.1/fc/MatMul")
    // Backward of /h.0.
    %b2 = onnx.Mul(%b, %b) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/act/Tanh")
    %db = onnx.Sub(%one, %b2) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/act/Tanh")
    %da = onnx.Mul(%dc, %db) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/act/Tanh")
    %m = onnx.Cast(%p#1) {to = f32} : (tensor<2x4xi1>) -> tensor<2x4xf32> loc("/h.0/drop/Dropout")
    %dp = onnx.Mul(%da, %m) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/drop/Dropout")
    %xt = onnx.Transpose(%x) {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32> loc("/h.0/fc/MatMul")
    %dw0 = onnx.MatMul(%xt, %dp) : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32> loc("/h.0/fc/MatMul")
    ml_program.global_store @stat = %b : tensor<2x4xf32>
    return %l, %dw0, %dw1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}

//--- plan-on.mlir
// A plan whose one stage says recompute = true: layer 0's MatMul, read by
// the backward, is recomputed (its Tanh crosses into layer 1: kept).
// PLANON: onnx.ReduceSum
// PLANON-NEXT: onnx.Mul
// PLANON-NEXT: %[[A2:[^ ]+]] = onnx.MatMul(%arg0
// PLANON-NEXT: onnx.Mul(%[[A2]], %[[A2]])
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1, recompute = true>], microbatches = 1>} {
  ml_program.global private mutable @w0(dense<0.5> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  ml_program.global private mutable @w1(dense<0.25> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
    %w0 = ml_program.global_load @w0 : tensor<4x4xf32>
    %w1 = ml_program.global_load @w1 : tensor<4x4xf32>
    %a = onnx.MatMul(%x, %w0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.0/fc/MatMul")
    %b = onnx.Tanh(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/act/Tanh")
    %d = onnx.MatMul(%b, %w1) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.1/fc/MatMul")
    %e = onnx.Tanh(%d) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.1/act/Tanh")
    %l = onnx.ReduceSum(%e) {keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<f32> loc("/h.1/ReduceSum")
    %e2 = onnx.Mul(%e, %e) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %b2 = onnx.Mul(%a, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %g = onnx.Add(%e2, %b2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %l, %g : tensor<f32>, tensor<2x4xf32>
  }
}

//--- plan-off.mlir
// recompute = false in the plan: nothing changes.
// PLANOFF-COUNT-1: onnx.MatMul(%arg0
// PLANOFF-NOT: onnx.MatMul(%arg0
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1, recompute = false>]>} {
  ml_program.global private mutable @w0(dense<0.5> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  ml_program.global private mutable @w1(dense<0.25> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
    %w0 = ml_program.global_load @w0 : tensor<4x4xf32>
    %w1 = ml_program.global_load @w1 : tensor<4x4xf32>
    %a = onnx.MatMul(%x, %w0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.0/fc/MatMul")
    %d = onnx.MatMul(%a, %w1) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/h.1/fc/MatMul")
    %l = onnx.ReduceSum(%d) {keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<f32> loc("/h.1/ReduceSum")
    %g = onnx.Mul(%a, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    return %l, %g : tensor<f32>, tensor<2x4xf32>
  }
}

//--- two-stages.mlir
// expected-error @+1 {{hetpar-train-recompute: the plan has 2 stages; a training program is one stage on one device}}
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1, recompute = true>, #dist.stage_plan<devices = [1], data = 1, tensor = 1, recompute = true>]>} {
  func.func @main(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// BADOPT: hetpar-train-recompute: unknown recompute 'some' (all or plan)

//--- state.mlir
// State stored before the backward pass (a BatchNormalization's running
// statistics are written after their last forward read): the op reading it
// (the Sub of layer /h.0) is kept, not cloned, since a clone would read the
// new value; the Tanh after it (read by the backward and within its layer
// only) is recomputed from it.
// STATE-LABEL: func.func @main
// STATE: %[[A:[^ ]+]] = onnx.Sub
// STATE: ml_program.global_store @mean
// STATE-NEXT: %[[B2:[^ ]+]] = onnx.Tanh(%[[A]])
// STATE-NEXT: onnx.Mul(%[[B2]], %[[A]])
// STATE-NOT: onnx.Sub
module {
  ml_program.global private mutable @mean(dense<0.0> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "buffer"}
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
    %m = ml_program.global_load @mean : tensor<4xf32>
    %a = onnx.Sub(%x, %m) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("/h.0/Sub")
    %b = onnx.Tanh(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/Tanh")
    %o = onnx.Neg(%b) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/Neg")
    %n = onnx.Add(%m, %m) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("/h.0/Add")
    %c = onnx.Tanh(%o) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.1/Tanh")
    %l = onnx.ReduceSum(%c) {keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<f32> loc("/h.1/ReduceSum")
    ml_program.global_store @mean = %n : tensor<4xf32>
    %g = onnx.Mul(%b, %a) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/Tanh")
    return %l, %g : tensor<f32>, tensor<2x4xf32>
  }
}

//--- batchnorm.mlir
// A training-mode BatchNormalization reads its running statistics, stored
// before the backward pass, only for the new running statistics: its Y
// normalizes with the batch's (ONNX opset 15). It is recomputed, and its
// clone reads constants (mean 0, variance 1) instead of the globals, which
// hold the new values by then.
// BN-LABEL: func.func @main
// BN: %[[M:[^ ]+]] = ml_program.global_load @mean
// BN: %[[V:[^ ]+]] = ml_program.global_load @var
// BN: onnx.BatchNormalization(%arg0, %{{[^,]+}}, %{{[^,]+}}, %[[M]], %[[V]])
// BN: ml_program.global_store @var
// BN-NEXT: %[[ZERO:[^ ]+]] = onnx.Constant dense<0.000000e+00> : tensor<4xf32>
// BN-NEXT: %[[ONE:[^ ]+]] = onnx.Constant dense<1.000000e+00> : tensor<4xf32>
// BN-NEXT: %[[C:[^ ,]+]], %{{.*}} = onnx.BatchNormalization(%arg0, %{{[^,]+}}, %{{[^,]+}}, %[[ZERO]], %[[ONE]])
// BN-NEXT: onnx.Mul(%[[C]], %[[C]])
module {
  ml_program.global private mutable @mean(dense<0.0> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "buffer"}
  ml_program.global private mutable @var(dense<1.0> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "buffer"}
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) {
    %s = onnx.Constant dense<1.0> : tensor<4xf32>
    %bias = onnx.Constant dense<0.0> : tensor<4xf32>
    %m = ml_program.global_load @mean : tensor<4xf32>
    %v = ml_program.global_load @var : tensor<4xf32>
    %y:3 = onnx.BatchNormalization(%x, %s, %bias, %m, %v) {training_mode = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) loc("/h.0/bn/BatchNormalization")
    %r = onnx.Relu(%y#0) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/Relu")
    %c = onnx.Tanh(%r) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.1/Tanh")
    %l = onnx.ReduceSum(%c) {keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<f32> loc("/h.1/ReduceSum")
    ml_program.global_store @mean = %y#1 : tensor<4xf32>
    ml_program.global_store @var = %y#2 : tensor<4xf32>
    %g = onnx.Mul(%y#0, %y#0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/h.0/bn/BatchNormalization")
    return %l, %g : tensor<f32>, tensor<2x4xf32>
  }
}
