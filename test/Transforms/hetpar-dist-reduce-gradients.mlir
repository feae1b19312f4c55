// RUN: split-file %s %t
// RUN: hetpar-opt %t/mean.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=1 | FileCheck %s --check-prefix=MEAN
// RUN: hetpar-opt %t/mean.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients='device=1 bucket-mib=0.00001' | FileCheck %s --check-prefix=BUCKETS
// A bucket of 1e30 MiB holds every gradient, as the default 25 MiB does here.
// RUN: hetpar-opt %t/mean.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients='device=1 bucket-mib=1e30' | FileCheck %s --check-prefix=MEAN
// RUN: hetpar-opt %t/negmean.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=1 | FileCheck %s --check-prefix=NEGMEAN
// RUN: hetpar-opt %t/xent.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=2 | FileCheck %s --check-prefix=XENT
// RUN: hetpar-opt %t/sum.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=0 | FileCheck %s --check-prefix=SUM
// RUN: hetpar-opt %t/zero.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=1 | FileCheck %s --check-prefix=ZERO
// RUN: hetpar-opt %t/zero.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=1 --hetpar-train-optimizer | FileCheck %s --check-prefix=ZEROOPT
// RUN: hetpar-opt %t/zero2.mlir --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=1 --hetpar-dist-reduce-gradients=device=1 | FileCheck %s --check-prefix=ZERO2
// RUN: sed 's/, zero_stage = 2//' %t/zero2.mlir | hetpar-opt --hetpar-onnx-differentiate --hetpar-dist-pipeline-schedule=device=1 --hetpar-dist-reduce-gradients=device=1 | FileCheck %s --check-prefix=ZERO1
// RUN: not hetpar-opt %t/zero.mlir --hetpar-dist-reduce-gradients='device=1 bucket-mib=0' 2>&1 | FileCheck %s --check-prefix=BUCKET0
// RUN: hetpar-opt %t/tensor.mlir --hetpar-onnx-differentiate --hetpar-dist-reduce-gradients=device=3 | FileCheck %s --check-prefix=TENSOR
// RUN: hetpar-opt %t/errors.mlir --split-input-file --hetpar-dist-reduce-gradients=device=1 --verify-diagnostics
// RUN: hetpar-opt %t/no-device.mlir --hetpar-dist-reduce-gradients --verify-diagnostics

//--- mean.mlir
// Device 1 holds 3 of the 8 samples (shares 5:3): the mean loss and every
// gradient are weighted by 3/8 and summed over the replicas. Both gradients
// (2 + 8 floats) fit one 25 MiB bucket: flattened in the order the backward
// pass makes them (b's first), concatenated, scaled once, all-reduced right
// after the last of them, and cut back.
// MEAN: dist.mesh @mesh devices [#dist.device<0, "H100-PCIe-80GB">, #dist.device<1, "L4">]
// MEAN: func.func @main({{.*}}) -> (tensor<f32>, {{.*}}) attributes {dist.device = 1 : i64}
// MEAN: %[[W:.*]] = onnx.Constant dense<3.750000e-01> : tensor<f32>
// MEAN: %[[DB:.*]] = onnx.Reshape({{.*}}) : (tensor<1x2xf32>, tensor<1xi64>) -> tensor<2xf32>
// MEAN: %[[DW:.*]] = onnx.Gemm
// MEAN: %[[FW:.*]] = onnx.Reshape(%[[DW]], {{.*}}) -> tensor<8xf32>
// MEAN: %[[CAT:.*]] = onnx.Concat(%[[DB]], %[[FW]]) {axis = 0 : i64} : (tensor<2xf32>, tensor<8xf32>) -> tensor<10xf32>
// MEAN: %[[S:.*]] = onnx.Mul(%[[CAT]], %[[W]])
// MEAN: %[[R:.*]] = dist.all_reduce %[[S]] on @mesh [0, 1] reduction sum : tensor<10xf32> -> tensor<10xf32>
// MEAN: %[[GB:.*]] = onnx.Slice(%[[R]], {{.*}}) -> tensor<2xf32>
// MEAN: %[[PW:.*]] = onnx.Slice(%[[R]], {{.*}}) -> tensor<8xf32>
// MEAN: %[[GW:.*]] = onnx.Reshape(%[[PW]], {{.*}}) -> tensor<4x2xf32>
// MEAN: %[[L:.*]] = onnx.Mul(%{{.*}}, %[[W]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// MEAN: %[[LR:.*]] = dist.all_reduce %[[L]] on @mesh [0, 1] reduction sum : tensor<f32> -> tensor<f32>
// MEAN: return %[[LR]], %[[GW]], %[[GB]]

// Buckets smaller than one gradient: one
// all-reduce per gradient, each right after it.
// BUCKETS: %[[W:.*]] = onnx.Constant dense<3.750000e-01> : tensor<f32>
// BUCKETS: %[[DB:.*]] = onnx.Reshape({{.*}}) -> tensor<2xf32>
// BUCKETS-NEXT: %[[SB:.*]] = onnx.Mul(%[[DB]], %[[W]])
// BUCKETS-NEXT: dist.all_reduce %[[SB]] on @mesh [0, 1] reduction sum : tensor<2xf32>
// BUCKETS: %[[DW:.*]] = onnx.Gemm
// BUCKETS-NEXT: %[[SW:.*]] = onnx.Mul(%[[DW]], %[[W]])
// BUCKETS-NEXT: dist.all_reduce %[[SW]] on @mesh [0, 1] reduction sum : tensor<4x2xf32>
module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [5.0, 3.0], kinds = ["H100-PCIe-80GB", "L4"]>]>} {
  ml_program.global private mutable @w(dense<0.5> : tensor<4x2xf32>) : tensor<4x2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @b(dense<0.1> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<3x4xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<4x2xf32>
    %b = ml_program.global_load @b : tensor<2xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %1 = onnx.Add(%0, %b) : (tensor<3x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
    %2 = onnx.ReduceMean(%1) {keepdims = 0 : i64} : (tensor<3x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

//--- negmean.mlir
// A model's own loss -mean(...) (PyTorch's -(t * log p).sum(1).mean()): the
// negation is looked through, as a constant scale is; weighted by 3/8 as a
// mean.
// NEGMEAN: %[[W:.*]] = onnx.Constant dense<3.750000e-01> : tensor<f32>
// NEGMEAN: %[[N:.*]] = onnx.Neg
// NEGMEAN: %[[L:.*]] = onnx.Mul(%[[N]], %[[W]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// NEGMEAN: dist.all_reduce %[[L]] on @mesh [0, 1] reduction sum : tensor<f32> -> tensor<f32>
module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [5.0, 3.0], kinds = ["H100-PCIe-80GB", "L4"]>]>} {
  ml_program.global private mutable @w(dense<0.5> : tensor<4x2xf32>) : tensor<4x2xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<3x4xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<4x2xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %1 = onnx.ReduceMean(%0) {keepdims = 0 : i64} : (tensor<3x2xf32>) -> tensor<f32>
    %2 = onnx.Neg(%1) : (tensor<f32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

//--- zero.mlir
// ZeRO-1 with state shares 3:1 (zero_shares). @w's 8 gradient elements are
// cut 6:2: replica 0's 6, then replica 1's 2, are reduce-scattered, and
// device 1 returns its 2 (hetpar.zero_sizes; splitProportionally: one
// each, the other 6 by 3:1). @b, one element for two replicas, stays whole
// and is all-reduced. The norm adds the replicas' sums of squares: a shard
// once, @b half on each.
// ZERO: func.func @main({{.*}}) -> (tensor<f32>, tensor<2xf32> {hetpar.gradient_of = @w, hetpar.zero_sizes = array<i64: 6, 2>, onnx.name = "w.grad"}, tensor<f32> {hetpar.grad_norm_weight = 5.000000e-01 : f64, hetpar.gradient_of = @b, onnx.name = "b.grad"})
// ZERO-SAME: attributes {dist.device = 1 : i64, hetpar.grad_norm_group = array<i64: 0, 1>, hetpar.zero_group = array<i64: 0, 1>}
// ZERO: dist.all_reduce %{{.*}} on @mesh [0, 1] reduction sum : tensor<f32>
// A bucket of one gradient is laid out replica by replica already: it is
// reduce-scattered without a packing copy (no Slice, no Concat).
// ZERO: %[[FW:.*]] = onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<8xf32>
// ZERO-NOT: onnx.Concat
// ZERO: %[[S:.*]] = onnx.Mul(%[[FW]], %{{.*}})
// ZERO-NEXT: %[[MINE:.*]] = dist.reduce_scatter %[[S]] on @mesh [0, 1] reduction sum dim 0 sizes [6, 2] : tensor<8xf32> -> tensor<2xf32>
// BUCKET0: error: bucket-mib must be a positive number of MiB, got 0
// The optimizer updates device 1's 2 elements (offset 6) with state of that
// size, then all-gathers @w.
// ZEROOPT: ml_program.global private mutable @w.exp_avg(dense<0.000000e+00> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "optimizer", hetpar.shard_offset = 6 : i64, hetpar.slot = "exp_avg", hetpar.state_of = @w}
// ZEROOPT: ml_program.global private mutable @b.exp_avg(dense<0.000000e+00> : tensor<f32>) : tensor<f32> {hetpar.role = "optimizer", hetpar.slot = "exp_avg", hetpar.state_of = @b}
// ZEROOPT: dist.reduce_scatter
// ZEROOPT: %[[W:.*]] = ml_program.global_load @w : tensor<4x2xf32>
// ZEROOPT: %[[FLAT:.*]] = onnx.Reshape(%[[W]], %{{.*}}) : (tensor<4x2xf32>, tensor<1xi64>) -> tensor<8xf32>
// ZEROOPT: %[[MINE:.*]] = onnx.Slice(%[[FLAT]], {{.*}}) -> tensor<2xf32>
// ZEROOPT: %[[NEW:.*]], %{{.*}}, %{{.*}} = onnx.AdamWOptimizer(%[[MINE]],
// ZEROOPT: %[[ALL:.*]] = dist.all_gather %[[NEW]] on @mesh [0, 1] dim 0 sizes [6, 2] : tensor<2xf32> -> tensor<8xf32>
// ZEROOPT: %[[BACK:.*]] = onnx.Reshape(%[[ALL]], %{{.*}}) : (tensor<8xf32>, tensor<2xi64>) -> tensor<4x2xf32>
// ZEROOPT: ml_program.global_store @w = %[[BACK]] : tensor<4x2xf32>
module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [5.0, 3.0], zero_shares = [3.0, 1.0], kinds = ["H100-PCIe-80GB", "L4"]>]>} {
  ml_program.global private mutable @w(dense<0.5> : tensor<4x2xf32>) : tensor<4x2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @b(dense<0.1> : tensor<f32>) : tensor<f32> {hetpar.role = "param"}
  func.func @main(%x: tensor<3x4xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<4x2xf32>
    %b = ml_program.global_load @b : tensor<f32>
    %0 = onnx.MatMul(%x, %w) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %1 = onnx.Add(%0, %b) : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
    %2 = onnx.ReduceMean(%1) {keepdims = 0 : i64} : (tensor<3x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

//--- zero2.mlir
// ZeRO-2 in a pipeline: stage 0 is two replicas (devices 0 and 1, one
// sample of each of 2 microbatches), state shares 1:1. Each microbatch's
// gradient of @w is reduce-scattered as soon as its backward part has made
// it, and device 1 sums only its 4 elements over the microbatches (a
// running sum of shards); the whole running sum of the schedule is gone.
// ZERO2: func.func @main({{.*}}) -> (tensor<f32> {onnx.name = "loss"}, tensor<4xf32> {hetpar.gradient_of = @w, hetpar.zero_sizes = array<i64: 4, 4>, onnx.name = "w.grad"})
// ZERO2: %[[G0:.*]] = onnx.Gemm({{.*}}) {hetpar.microbatch_index = 0 : i64
// ZERO2: %[[R0:.*]] = dist.reduce_scatter %{{.*}} on @mesh [0, 1] reduction sum dim 0 sizes [4, 4] : tensor<8xf32> -> tensor<4xf32>
// ZERO2: onnx.Gemm({{.*}}) {hetpar.microbatch_index = 1 : i64
// ZERO2: %[[R1:.*]] = dist.reduce_scatter %{{.*}} on @mesh [0, 1] reduction sum dim 0 sizes [4, 4] : tensor<8xf32> -> tensor<4xf32>
// ZERO2-NEXT: %[[ACC:.*]] = onnx.Add(%[[R0]], %[[R1]]) {hetpar.running_sum}
// ZERO2-NOT: onnx.Add
// ZERO2-NOT: dist.reduce_scatter
// ZERO2: return %{{.*}}, %[[ACC]]
// ZeRO-1: the whole gradients are summed over the microbatches, then
// reduce-scattered once.
// ZERO1: onnx.Add({{.*}}) {hetpar.microbatch_index = 1 : i64, hetpar.running_sum}
// ZERO1-COUNT-1: dist.reduce_scatter
// ZERO1-NOT: dist.reduce_scatter
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 2, mode = training, schedule = "1f1b", stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, zero_shares = [1.0, 1.0], zero_stage = 2>, #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
  dist.mesh @mesh devices [#dist.device<0, "L4">, #dist.device<1, "L4">, #dist.device<2, "L4">]
  ml_program.global private mutable @w(dense<0.5> : tensor<4x2xf32>) : tensor<4x2xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<1x4xf32> {onnx.name = "x"}) attributes {dist.device = 1 : i64} {
    %w = ml_program.global_load @w : tensor<4x2xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<1x4xf32>, tensor<4x2xf32>) -> tensor<1x2xf32>
    dist.send %0 on @mesh to 2 tag 0 : tensor<1x2xf32>
    return
  }
}

//--- xent.mlir
// Cross-entropy with ignored labels: a replica's mean is over its labels
// that count, so its weight is its count over the replicas' sum (one scalar
// all-reduce), not its rows over the batch. Three replicas of 2 samples.
// XENT: %[[Y:.*]] = onnx.Constant dense<-100> : tensor<i64>
// XENT-NEXT: %[[EQ:.*]] = onnx.Equal(%arg1, %[[Y]]) : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
// XENT-NEXT: %[[KEEP:.*]] = onnx.Not(%[[EQ]])
// XENT-NEXT: %[[F:.*]] = onnx.Cast(%[[KEEP]]) {to = f32}
// XENT: %[[N:.*]] = onnx.ReduceSum(%[[F]], {{.*}}) {keepdims = 0 : i64} : (tensor<2xf32>, tensor<1xi64>) -> tensor<f32>
// XENT-NEXT: %[[ALL:.*]] = dist.all_reduce %[[N]] on @mesh [0, 1, 2] reduction sum : tensor<f32> -> tensor<f32>
// XENT-NEXT: %[[Z:.*]] = onnx.Constant dense<0.000000e+00> : tensor<f32>
// XENT-NEXT: %[[SOME:.*]] = onnx.Greater(%[[N]], %[[Z]])
// XENT-NEXT: %[[Z2:.*]] = onnx.Constant dense<0.000000e+00> : tensor<f32>
// XENT-NEXT: %[[NONE:.*]] = onnx.Equal(%[[ALL]], %[[Z2]])
// XENT-NEXT: %[[ANY:.*]] = onnx.Or(%[[SOME]], %[[NONE]])
// XENT-NEXT: %[[W:.*]] = onnx.Div(%[[N]], %[[ALL]])
// A replica whose labels are all ignored (a NaN mean, NaN gradients) adds
// zeros instead, unless no replica counts any label (then the batch's loss
// is NaN, as one device's).
// XENT: %[[S:.*]] = onnx.Mul(%{{.*}}, %[[W]]) : (tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
// XENT: %[[G:.*]] = onnx.Where(%[[ANY]], %[[S]], %{{.*}}) : (tensor<i1>, tensor<3x5xf32>, tensor<f32>) -> tensor<3x5xf32>
// XENT-NEXT: dist.all_reduce %[[G]] on @mesh [0, 1, 2] reduction sum : tensor<3x5xf32>
module attributes {dist.plan = #dist.plan<batch = 6, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1, 2], data = 3, tensor = 1>]>} {
  ml_program.global private mutable @w(dense<0.5> : tensor<3x5xf32>) : tensor<3x5xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"}, %y: tensor<2xi64> {onnx.name = "labels"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<3x5xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
    %1, %2 = onnx.SoftmaxCrossEntropyLoss(%0, %y) {ignore_index = -100 : i64, reduction = "mean"} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x5xf32>)
    return %1 : tensor<f32>
  }
}

//--- sum.mlir
// A summed loss (through a constant scale): the replicas' sums add up, so
// the weight is 1.
// SUM: %[[ONE:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// SUM: dist.all_reduce
// SUM: onnx.Mul(%{{.*}}, %[[ONE]])
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1>]>} {
  ml_program.global private mutable @w(dense<0.5> : tensor<3xf32>) : tensor<3xf32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<3xf32>
    %0 = onnx.Mul(%x, %w) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
    %c = onnx.Constant dense<0.5> : tensor<f32>
    %2 = onnx.Mul(%1, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

//--- tensor.mlir
// Data x tensor parallelism: replica r of two holds devices 2r and 2r + 1.
// Device 3 (replica 1, rank 1) sums its gradients with device 1, the other
// replica's rank 1, which holds the same shards. The norm group is every
// device: @w's gradient is a tensor-parallel shard, held by the 2 replicas
// (weight 1/2); @b's is whole, held by all 4 devices (weight 1/4).
// TENSOR: func.func @main({{.*}}) -> (tensor<f32>, tensor<3xf32> {hetpar.grad_norm_weight = 5.000000e-01 : f64, {{.*}}}, tensor<f32> {hetpar.grad_norm_weight = 2.500000e-01 : f64, {{.*}}}) attributes {dist.device = 3 : i64, hetpar.grad_norm_group = array<i64: 0, 1, 2, 3>}
// TENSOR: dist.all_reduce %{{.*}} on @mesh [1, 3] reduction sum : tensor<4xf32> -> tensor<4xf32>
// TENSOR: dist.all_reduce %{{.*}} on @mesh [1, 3] reduction sum : tensor<f32> -> tensor<f32>
module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1, 2, 3], data = 2, tensor = 2>]>} {
  ml_program.global private mutable @w(dense<0.5> : tensor<3xf32>) : tensor<3xf32> {hetpar.role = "param", hetpar.tensor_shard = #dist.sharding<@mesh, [2, 3] split 0 sizes [3, 3]>}
  ml_program.global private mutable @b(dense<0.5> : tensor<f32>) : tensor<f32> {hetpar.role = "param"}
  func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<3xf32>
    %b = ml_program.global_load @b : tensor<f32>
    %0 = onnx.Mul(%x, %w) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %1 = onnx.Add(%0, %b) : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %2 = onnx.ReduceMean(%1) {keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

//--- errors.mlir
// expected-error @+1 {{device 1 is not in the plan}}
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 2], data = 2, tensor = 1>]>} {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
    %0 = onnx.ReduceMean(%x) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [5.0, 3.0]>]>} {
  // expected-error @+1 {{input 0 has type 'tensor<4x3xf32>', not device 1's 3 rows of the batch on axis 0}}
  func.func @main(%x: tensor<4x3xf32>) -> tensor<f32> {
    %0 = onnx.ReduceMean(%x) {keepdims = 0 : i64} : (tensor<4x3xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// A share that is not a whole number of samples (PlanAnnotation.h).
// expected-error @+1 {{dist.plan stage 0: a replica's share of a microbatch of 4 samples is 2.67, not a positive whole number}}
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [2.0, 1.0]>]>} {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
    %0 = onnx.ReduceMean(%x) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1>]>} {
  // expected-error @+1 {{data parallelism and microbatches split the batch, so the loss must be a mean or a sum over the samples (ReduceMean, ReduceSum, or a mean or summed cross-entropy, through constant scales and negation); here it is computed by 'onnx.ReduceMax'}}
  func.func @main(%x: tensor<2x3xf32>) -> (tensor<f32>, tensor<2x3xf32> {hetpar.gradient_of = @w}) {
    %0 = onnx.ReduceMax(%x) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
    return %0, %x : tensor<f32>, tensor<2x3xf32>
  }
}

// -----

module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1>]>} {
  func.func @main(%x: tensor<2x3x4x4xf32>) -> tensor<f32> {
    %s = onnx.Constant dense<1.0> : tensor<3xf32>
    // expected-error @+1 {{training-mode BatchNormalization normalizes over the batch, which data parallelism splits}}
    %y, %m, %v = onnx.BatchNormalization(%x, %s, %s, %s, %s) {training_mode = 1 : i64} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
    %0 = onnx.ReduceMean(%y) {keepdims = 0 : i64} : (tensor<2x3x4x4xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

//--- no-device.mlir
// expected-error @+1 {{hetpar-dist-reduce-gradients needs device=<id>}}
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1>]>} {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<f32> {
    %0 = onnx.ReduceMean(%x) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}
