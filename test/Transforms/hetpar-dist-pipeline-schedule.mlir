// RUN: split-file %s %t
// RUN: hetpar-opt %t/first.mlir --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=0 | FileCheck %s --check-prefix=FIRST
// RUN: hetpar-opt %t/last.mlir --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=1 | FileCheck %s --check-prefix=LAST
// RUN: sed 's/"1f1b"/"gpipe"/' %t/first.mlir | hetpar-opt --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=0 | FileCheck %s --check-prefix=GPIPE
// RUN: hetpar-opt %t/counts.mlir --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=3 | FileCheck %s --check-prefix=COUNTS
// RUN: hetpar-opt %t/state.mlir --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=0 | FileCheck %s --check-prefix=STATE
// RUN: hetpar-opt %t/recompute.mlir --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=0 | FileCheck %s --check-prefix=RECOMPUTE
// RUN: sed 's/recompute = true/recompute = false/' %t/recompute.mlir | hetpar-opt --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=0 | FileCheck %s --check-prefix=NORECOMPUTE
// RUN: sed 's/recompute = true/recompute = false/' %t/recompute.mlir | hetpar-opt --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule='device=0 recompute=true' | FileCheck %s --check-prefix=RECOMPUTE
// RUN: hetpar-opt %t/errors.mlir --split-input-file --hetpar-dist-pipeline-schedule=device=0 --verify-diagnostics
// RUN: hetpar-opt %t/no-device.mlir --hetpar-dist-pipeline-schedule --verify-diagnostics

//--- first.mlir
// Stage 0 of 2 (device 0), 3 microbatches of 2 samples, 1F1B: one forward
// part to fill the pipeline (p - s - 1 = 1), then forward and backward in
// turn, then the last backward part. Differentiation receives the
// activation's gradient (tag 0 + 2^14) for the send of tag 0. The input
// holds the device's rows of the three microbatches (6 = 3 x 2); the
// parameter is loaded once; each slot's sends end it and the next slot's
// receives follow at once (one exchange step); the gradients of the three
// microbatches are summed.
// FIRST: func.func @main(%arg0: tensor<6x4xf32> {onnx.name = "x"}) -> (tensor<4x2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"})
// FIRST: ml_program.global_load @w
// FIRST-NOT: ml_program.global_load
// Each op of a slot carries its microbatch (hetpar.microbatch_index), which
// the measured timeline names its spans by; the parameter's load, hoisted,
// has none.
// FIRST: onnx.Slice(%arg0, {{.*}}) {hetpar.microbatch_index = 0 : i64} : (tensor<6x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
// FIRST: onnx.MatMul({{.*}}) {hetpar.microbatch_index = 0 : i64}
// FIRST-NEXT: dist.send %{{.*}} on @mesh to 1 tag 0 {hetpar.microbatch_index = 0 : i64} : tensor<2x2xf32>
// FIRST-NEXT: onnx.Constant
// FIRST-NEXT: onnx.Constant
// FIRST-NEXT: onnx.Constant
// FIRST-NEXT: onnx.Slice(%arg0, {{.*}}) {hetpar.microbatch_index = 1 : i64} : {{.*}} -> tensor<2x4xf32>
// FIRST-NEXT: onnx.MatMul
// FIRST-NEXT: dist.send %{{.*}} on @mesh to 1 tag 0 {hetpar.microbatch_index = 1 : i64} : tensor<2x2xf32>
// FIRST-NEXT: %[[D0:.*]] = dist.recv on @mesh from 1 tag 16384 {hetpar.microbatch_index = 0 : i64} : tensor<2x2xf32>
// FIRST: %[[G0:.*]] = onnx.Gemm({{.*}}, %[[D0]]) {hetpar.microbatch_index = 0 : i64
// FIRST: onnx.Slice(%arg0, {{.*}}) -> tensor<2x4xf32>
// FIRST-NEXT: onnx.MatMul
// FIRST-NEXT: dist.send %{{.*}} on @mesh to 1 tag 0 {hetpar.microbatch_index = 2 : i64} : tensor<2x2xf32>
// FIRST-NEXT: %[[D1:.*]] = dist.recv on @mesh from 1 tag 16384 {hetpar.microbatch_index = 1 : i64} : tensor<2x2xf32>
// FIRST-NEXT: %[[G1:.*]] = onnx.Gemm({{.*}}, %[[D1]])
// FIRST-NEXT: %[[S1:.*]] = onnx.Add(%[[G0]], %[[G1]]) {hetpar.microbatch_index = 1 : i64, hetpar.running_sum}
// FIRST-NEXT: %[[D2:.*]] = dist.recv on @mesh from 1 tag 16384 {hetpar.microbatch_index = 2 : i64} : tensor<2x2xf32>
// FIRST-NEXT: %[[G2:.*]] = onnx.Gemm({{.*}}, %[[D2]])
// FIRST-NEXT: %[[S2:.*]] = onnx.Add(%[[S1]], %[[G2]]) {hetpar.microbatch_index = 2 : i64, hetpar.running_sum}
// FIRST-NEXT: return %[[S2]]

// GPipe: every forward part, then every backward part.
// GPIPE-COUNT-3: dist.send %{{.*}} on @mesh to 1 tag 0
// GPIPE-NOT: dist.send
// GPIPE-COUNT-3: dist.recv on @mesh from 1 tag 16384
module attributes {dist.plan = #dist.plan<batch = 6, microbatches = 3, mode = training, schedule = "1f1b", stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
  dist.mesh @mesh devices [#dist.device<0, "L4">, #dist.device<1, "L4">]
  ml_program.global private mutable @w(dense<0.5> : tensor<4x2xf32>) : tensor<4x2xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}) attributes {dist.device = 0 : i64} {
    %w = ml_program.global_load @w : tensor<4x2xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
    dist.send %0 on @mesh to 1 tag 0 : tensor<2x2xf32>
    return
  }
}

//--- last.mlir
// Stage 1 of 2 (device 1), the last: each microbatch's forward part
// computes its loss and the gradients here; its backward part sends the
// activation's gradient back. The seed of microbatch k is 1/3 (a mean over
// the samples, 3 microbatches), so the loss is the mean of the
// microbatches' and the gradients sent back carry the weight.
// LAST: func.func @main(%arg0: tensor<6x2xf32> {onnx.name = "labels"}) -> (tensor<f32>, tensor<2xf32> {hetpar.gradient_of = @b, onnx.name = "b.grad"})
// LAST: %[[SEED:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// LAST: %[[X0:.*]] = dist.recv on @mesh from 0 tag 0 {hetpar.microbatch_index = 0 : i64} : tensor<2x2xf32>
// LAST: onnx.ReduceMean
// LAST: %[[W0:.*]] = onnx.Mul(%[[SEED]], %{{.*}}) {hetpar.microbatch_index = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// LAST: dist.send %{{.*}} on @mesh to 0 tag 16384 {hetpar.microbatch_index = 0 : i64} : tensor<2x2xf32>
// LAST-NEXT: dist.recv on @mesh from 0 tag 0 {hetpar.microbatch_index = 1 : i64} : tensor<2x2xf32>
// LAST-COUNT-2: dist.send %{{.*}} on @mesh to 0 tag 16384
// LAST: return
module attributes {dist.plan = #dist.plan<batch = 6, microbatches = 3, mode = training, schedule = "1f1b", stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
  dist.mesh @mesh devices [#dist.device<0, "L4">, #dist.device<1, "L4">]
  ml_program.global private mutable @b(dense<0.1> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  func.func @main(%y: tensor<2x2xf32> {onnx.name = "labels"}) -> tensor<f32> attributes {dist.device = 1 : i64} {
    %x = dist.recv on @mesh from 0 tag 0 : tensor<2x2xf32>
    %b = ml_program.global_load @b : tensor<2xf32>
    %0 = onnx.Add(%x, %b) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
    %1 = onnx.Sub(%0, %y) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %2 = onnx.Mul(%1, %1) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %3 = onnx.ReduceMean(%2) {keepdims = 0 : i64} : (tensor<2x2xf32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

//--- counts.mlir
// A last stage of two data-parallel replicas of two tensor-parallel devices
// each ({1, 2} and {3, 4}) and a mean over counted labels: device 3 sums its
// microbatch's count with device 1's, the other replica's holder of the
// same shards, not with the whole stage (which counts every label twice).
// COUNTS: dist.all_reduce %{{.*}} on @mesh [1, 3] reduction sum {hetpar.microbatch_index = 0 : i64}
// COUNTS: dist.all_reduce %{{.*}} on @mesh [1, 3] reduction sum {hetpar.microbatch_index = 1 : i64}
module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 2, mode = training, schedule = "1f1b", stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1, 2, 3, 4], data = 2, tensor = 2>]>} {
  dist.mesh @mesh devices [#dist.device<0, "L4">, #dist.device<1, "L4">, #dist.device<2, "L4">, #dist.device<3, "L4">, #dist.device<4, "L4">]
  ml_program.global private mutable @b(dense<0.1> : tensor<5xf32>) : tensor<5xf32> {hetpar.role = "param"}
  func.func @main(%y: tensor<2xi64> {onnx.name = "labels"}) -> tensor<f32> attributes {dist.device = 3 : i64} {
    %x = dist.recv on @mesh from 0 tag 0 : tensor<2x5xf32>
    %b = ml_program.global_load @b : tensor<5xf32>
    %0 = onnx.Add(%x, %b) : (tensor<2x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
    %1, %2 = onnx.SoftmaxCrossEntropyLoss(%0, %y) {ignore_index = -100 : i64, reduction = "mean"} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
    return %1 : tensor<f32>
  }
}

//--- state.mlir
// State the step writes (as BatchNormalization's running statistics): each
// microbatch loads what the one before stored, in the forward part, as one
// device accumulating the microbatches would; the parameter's load is
// hoisted once.
// STATE: ml_program.global_load @w
// STATE-NOT: ml_program.global_load @w
// STATE: ml_program.global_load @m : tensor<4xf32> {hetpar.microbatch_index = 0 : i64}
// STATE: ml_program.global_store @m = {{.*}} : tensor<4xf32> {hetpar.microbatch_index = 0 : i64}
// STATE: ml_program.global_load @m : tensor<4xf32> {hetpar.microbatch_index = 1 : i64}
// STATE: ml_program.global_store @m = {{.*}} : tensor<4xf32> {hetpar.microbatch_index = 1 : i64}
// STATE: ml_program.global_load @m : tensor<4xf32> {hetpar.microbatch_index = 2 : i64}
// STATE: ml_program.global_store @m = {{.*}} : tensor<4xf32> {hetpar.microbatch_index = 2 : i64}
// STATE-NOT: ml_program.global_load @m
module attributes {dist.plan = #dist.plan<batch = 6, microbatches = 3, mode = training, schedule = "1f1b", stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
  dist.mesh @mesh devices [#dist.device<0, "L4">, #dist.device<1, "L4">]
  ml_program.global private mutable @w(dense<0.5> : tensor<4x2xf32>) : tensor<4x2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @m(dense<0.0> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "buffer"}
  func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}) attributes {dist.device = 0 : i64} {
    %w = ml_program.global_load @w : tensor<4x2xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
    dist.send %0 on @mesh to 1 tag 0 : tensor<2x2xf32>
    %m = ml_program.global_load @m : tensor<4xf32>
    %axes = onnx.Constant dense<0> : tensor<1xi64>
    %mean = onnx.ReduceMean(%x, %axes) {keepdims = 0 : i64} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<4xf32>
    %new = onnx.Add(%m, %mean) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ml_program.global_store @m = %new : tensor<4xf32>
    return
  }
}

//--- recompute.mlir
// The plan's stage 0 recomputes: its one layer (/l0/: MatMul, Tanh, Mul)
// is not the last stage's, so it is recomputed too. The backward part of
// each microbatch reads clones of the MatMul and the Tanh (the Mul's
// gradient reads the Tanh's output), marked hetpar.recomputed and built in
// the backward slot from the microbatch's input; the layer's output is
// sent and not kept.
// RECOMPUTE: %[[X0:.*]] = onnx.Slice(%arg0, {{.*}}) {hetpar.microbatch_index = 0 : i64}
// RECOMPUTE: onnx.Tanh{{.*}}{hetpar.microbatch_index = 0 : i64}
// RECOMPUTE-NOT: hetpar.recomputed
// RECOMPUTE: dist.recv on @mesh from 1 tag 16384 {hetpar.microbatch_index = 0 : i64}
// RECOMPUTE-NEXT: %[[A:.*]] = onnx.MatMul(%[[X0]], %{{.*}}) {hetpar.microbatch_index = 0 : i64, hetpar.recomputed}
// RECOMPUTE-NEXT: %[[T:.*]] = onnx.Tanh(%[[A]]) {hetpar.microbatch_index = 0 : i64, hetpar.recomputed}
// RECOMPUTE-NEXT: onnx.Mul(%{{.*}}, %[[T]]) {hetpar.microbatch_index = 0 : i64}
// RECOMPUTE-COUNT-2: hetpar.recomputed
// NORECOMPUTE-NOT: hetpar.recomputed
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 2, mode = training, schedule = "1f1b", stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1, recompute = true>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
  dist.mesh @mesh devices [#dist.device<0, "L4">, #dist.device<1, "L4">]
  ml_program.global private mutable @w(dense<0.5> : tensor<4x4xf32>) : tensor<4x4xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}) attributes {dist.device = 0 : i64} {
    %w = ml_program.global_load @w : tensor<4x4xf32>
    %a = onnx.MatMul(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32> loc("/l0/MatMul")
    %t = onnx.Tanh(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("/l0/Tanh")
    %m = onnx.Mul(%t, %t) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("/l0/Mul")
    dist.send %m on @mesh to 1 tag 0 : tensor<2x4xf32>
    return
  }
}

//--- errors.mlir
// expected-error @+1 {{device 0 is not in the plan}}
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 2, mode = training, stages = [#dist.stage_plan<devices = [1], data = 1, tensor = 1>, #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
  func.func @main(%x: tensor<2x4xf32>) {
    return
  }
}

// -----

module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 2, mode = training, stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
  // expected-error @+1 {{input 0 has type 'tensor<3x4xf32>', not device 0's 2 rows of a microbatch on axis 0}}
  func.func @main(%x: tensor<3x4xf32>) {
    return
  }
}

// -----

// The backward part reading state that each microbatch's forward writes.
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 2, mode = training, stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
  ml_program.global private mutable @m(dense<0.0> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "buffer"}
  func.func @main(%x: tensor<2x4xf32>) -> tensor<4xf32> {
    %m = ml_program.global_load @m : tensor<4xf32>
    %new = onnx.Add(%m, %m) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ml_program.global_store @m = %new : tensor<4xf32>
    // expected-error @+1 {{the backward pass reads global 'm', which the forward pass writes per microbatch: a pipeline cannot give it the value of the microbatch}}
    %g = onnx.Mul(%m, %m) {hetpar.backward} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %g : tensor<4xf32>
  }
}

//--- no-device.mlir
// expected-error @+1 {{hetpar-dist-pipeline-schedule needs device=<id>}}
module {
  func.func @main() {
    return
  }
}
