// RUN: split-file %s %t
// RUN: hetpar-opt %t/sync.mlir --hetpar-dist-sync-batch-norm=device=1 | FileCheck %s --check-prefix=SYNC
// RUN: hetpar-opt %t/sync.mlir --hetpar-dist-sync-batch-norm=device=1 --hetpar-onnx-differentiate | FileCheck %s --check-prefix=BACKWARD
// RUN: hetpar-opt %t/one.mlir --hetpar-dist-sync-batch-norm=device=0 | FileCheck %s --check-prefix=ONE
// RUN: not hetpar-opt %t/sync.mlir --hetpar-dist-sync-batch-norm 2>&1 | FileCheck %s --check-prefix=NODEVICE
// RUN: not hetpar-opt %t/sync.mlir --hetpar-dist-sync-batch-norm=device=7 2>&1 | FileCheck %s --check-prefix=NOTIN

//--- sync.mlir
// Two replicas (devices 0 and 1, rows 3 and 1 of a batch of 4): device 1's
// BatchNormalization over its [1, 2, 3, 3] rows (of x times a parameter)
// normalizes with the sums of
// x and of (x - mean)^2 over both replicas, divided by 4 x 3 x 3 = 36
// elements per channel; its running statistics follow from those.
// SYNC: dist.mesh @mesh devices [#dist.device<0, "H100-PCIe-80GB">, #dist.device<1, "L4">]
// SYNC: func.func @main({{.*}}) -> tensor<f32> attributes {dist.device = 1 : i64, hetpar.synchronized_statistics}
// SYNC: %[[M:.*]] = onnx.Constant dense<3.600000e+01> : tensor<f32>
// SYNC: %[[S1:.*]] = onnx.ReduceSum(%{{.*}}, %{{.*}}) : (tensor<1x2x3x3xf32>, tensor<3xi64>) -> tensor<1x2x1x1xf32>
// SYNC: %[[A1:.*]] = dist.all_reduce %[[S1]] on @mesh [0, 1] reduction sum : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xf32>
// SYNC: %[[G1:.*]] = dist.grad_all_reduce %[[A1]] on @mesh [0, 1] : tensor<1x2x1x1xf32> -> tensor<1x2x1x1xf32>
// SYNC: onnx.Div(%[[G1]], %[[M]])
// SYNC: dist.all_reduce %{{.*}} on @mesh [0, 1] reduction sum
// SYNC: dist.grad_all_reduce
// SYNC: onnx.Sqrt
// SYNC: onnx.Reciprocal
// SYNC-NOT: onnx.BatchNormalization
// SYNC: ml_program.global_store @bn.running_mean
// SYNC: ml_program.global_store @bn.running_var
// Differentiated, the sums' gradients are all-reduced too, and the seed is
// marked for hetpar-dist-reduce-gradients to weigh.
// BACKWARD: onnx.Constant {hetpar.seed} dense<1.000000e+00> : tensor<f32>
// BACKWARD-COUNT-2: dist.all_reduce %
// BACKWARD-NOT: dist.grad_all_reduce
// NODEVICE: hetpar-dist-sync-batch-norm needs device=<id>
// NOTIN: error: hetpar-dist-sync-batch-norm: device 7 is not in the plan
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [3.0, 1.0], kinds = ["H100-PCIe-80GB", "L4"]>]>} {
  ml_program.global private mutable @w(dense<2.0> : tensor<1x2x1x1xf32>) : tensor<1x2x1x1xf32> {hetpar.role = "param"}
  ml_program.global private mutable @bn.weight(dense<1.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @bn.bias(dense<0.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @bn.running_mean(dense<0.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "buffer"}
  ml_program.global private mutable @bn.running_var(dense<1.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "buffer"}
  func.func @main(%input: tensor<1x2x3x3xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<1x2x1x1xf32>
    %x = onnx.Mul(%input, %w) : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    %s = ml_program.global_load @bn.weight : tensor<2xf32>
    %b = ml_program.global_load @bn.bias : tensor<2xf32>
    %m = ml_program.global_load @bn.running_mean : tensor<2xf32>
    %v = ml_program.global_load @bn.running_var : tensor<2xf32>
    %y, %rm, %rv = onnx.BatchNormalization(%x, %s, %b, %m, %v) {training_mode = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>)
    ml_program.global_store @bn.running_mean = %rm : tensor<2xf32>
    ml_program.global_store @bn.running_var = %rv : tensor<2xf32>
    %l = onnx.ReduceMean(%y) {keepdims = 0 : i64} : (tensor<1x2x3x3xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

//--- one.mlir
// A stage of one replica keeps its BatchNormalization.
// ONE: onnx.BatchNormalization
// ONE-NOT: dist.all_reduce
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
  func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<4x2xf32> {
    %y, %rm, %rv = onnx.BatchNormalization(%x, %s, %b, %m, %v) {training_mode = 1 : i64} : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>)
    return %y : tensor<4x2xf32>
  }
}
