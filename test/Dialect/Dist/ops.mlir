// The dist dialect's ops and attributes print and parse back unchanged.
// RUN: hetpar-opt %s | hetpar-opt | FileCheck %s

// CHECK: dist.mesh @cluster devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "A100-SXM4-80GB">, #dist.device<2, "V100-SXM2-32GB">, #dist.device<3, "V100-SXM2-32GB">]
dist.mesh @cluster devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "A100-SXM4-80GB">,
                            #dist.device<2, "V100-SXM2-32GB">, #dist.device<3, "V100-SXM2-32GB">]

// Global form: two stages, a transfer between their groups, shardings with
// uneven extents, replicated and partial values.
// CHECK-LABEL: func.func @pipeline
func.func @pipeline(%x: tensor<8x126xf32>) -> tensor<8x126xf32> {
  // CHECK: dist.annotate %{{.*}} : tensor<8x126xf32> as #dist.sharding<@cluster, [0, 1] split 1 sizes [64, 62]>
  %a = dist.annotate %x : tensor<8x126xf32> as #dist.sharding<@cluster, [0, 1] split 1 sizes [64, 62]>
  // CHECK: dist.stage 0 on @cluster [0, 1] ins(%{{.*}}) attributes {in_shardings = [#dist.sharding<@cluster, [0, 1] split 1 sizes [64, 62]>], out_shardings = [#dist.sharding<@cluster, [0, 1] partial sum>]}
  %s0 = dist.stage 0 on @cluster [0, 1] ins(%a) attributes {
      in_shardings = [#dist.sharding<@cluster, [0, 1] split 1 sizes [64, 62]>],
      out_shardings = [#dist.sharding<@cluster, [0, 1] partial sum>]} {
  ^bb0(%arg: tensor<8x126xf32>):
    dist.yield %arg : tensor<8x126xf32>
  } : (tensor<8x126xf32>) -> tensor<8x126xf32>
  // CHECK: dist.transfer %{{.*}} : tensor<8x126xf32> from #dist.sharding<@cluster, [0, 1] partial sum> to #dist.sharding<@cluster, [2, 3] split 1 sizes [63, 63]>
  %t = dist.transfer %s0 : tensor<8x126xf32> from #dist.sharding<@cluster, [0, 1] partial sum>
                                             to #dist.sharding<@cluster, [2, 3] split 1 sizes [63, 63]>
  // CHECK: dist.stage 1 on @cluster [2, 3] ins(%{{.*}}) {
  %s1 = dist.stage 1 on @cluster [2, 3] ins(%t) {
  ^bb0(%arg: tensor<8x126xf32>):
    dist.yield %arg : tensor<8x126xf32>
  } : (tensor<8x126xf32>) -> tensor<8x126xf32>
  return %s1 : tensor<8x126xf32>
}

// Local form: device 1's program, with its shard of 62 columns.
// CHECK-LABEL: func.func @device_1
func.func @device_1(%x: tensor<8x62xf32>, %p: tensor<8x32xf32>) -> tensor<8x126xf32>
    attributes {dist.device = 1 : i64} {
  // CHECK: dist.all_reduce %{{.*}} on @cluster [0, 1] reduction sum : tensor<8x32xf32> -> tensor<8x32xf32>
  %r = dist.all_reduce %p on @cluster [0, 1] reduction sum : tensor<8x32xf32> -> tensor<8x32xf32>
  // CHECK: dist.grad_all_reduce %{{.*}} on @cluster [0, 1]  : tensor<8x32xf32> -> tensor<8x32xf32>
  %f = dist.grad_all_reduce %p on @cluster [0, 1] : tensor<8x32xf32> -> tensor<8x32xf32>
  // CHECK: dist.all_gather %{{.*}} on @cluster [0, 1] dim 1 sizes [64, 62] : tensor<8x62xf32> -> tensor<8x126xf32>
  %g = dist.all_gather %x on @cluster [0, 1] dim 1 sizes [64, 62] : tensor<8x62xf32> -> tensor<8x126xf32>
  // CHECK: dist.reduce_scatter %{{.*}} on @cluster [0, 1] reduction sum dim 1 sizes [64, 62] : tensor<8x126xf32> -> tensor<8x62xf32>
  %rs = dist.reduce_scatter %g on @cluster [0, 1] reduction sum dim 1 sizes [64, 62] : tensor<8x126xf32> -> tensor<8x62xf32>
  // Rows split 5:3, columns gathered from 64 and 62: device 1 keeps 3 rows
  // and all 126 columns.
  // CHECK: dist.all_to_all %{{.*}} on @cluster [0, 1] split 0 [5, 3] concat 1 [64, 62] : tensor<8x62xf32> -> tensor<3x126xf32>
  %aa = dist.all_to_all %x on @cluster [0, 1] split 0 [5, 3] concat 1 [64, 62] : tensor<8x62xf32> -> tensor<3x126xf32>
  // CHECK: dist.broadcast %{{.*}} on @cluster [0, 1, 2] root 0 : tensor<8x32xf32> -> tensor<8x32xf32>
  %b = dist.broadcast %r on @cluster [0, 1, 2] root 0 : tensor<8x32xf32> -> tensor<8x32xf32>
  // CHECK: dist.send %{{.*}} on @cluster to 3 tag 7 : tensor<8x32xf32>
  dist.send %b on @cluster to 3 tag 7 : tensor<8x32xf32>
  // CHECK: dist.recv on @cluster from 0 tag 8 : tensor<8x32xf32>
  %v = dist.recv on @cluster from 0 tag 8 : tensor<8x32xf32>
  // Pieces print only the ranges they have.
  // CHECK: dist.send_pieces %{{.*}} on @cluster [#dist.piece<peer = 3, tag = 9, batch_dim = 0, batch_outer = 2, batch_start = 1, batch_size = 3, split_dim = 1, split_start = 4, split_size = 16>, #dist.piece<peer = 2, tag = 9>] : tensor<8x32xf32>
  dist.send_pieces %b on @cluster [#dist.piece<peer = 3, tag = 9, batch_dim = 0, batch_outer = 2, batch_start = 1, batch_size = 3, split_dim = 1, split_start = 4, split_size = 16>, #dist.piece<peer = 2, tag = 9, batch_dim = -1>] : tensor<8x32xf32>
  // CHECK: dist.recv_pieces on @cluster [#dist.piece<peer = 0, tag = 10, split_dim = 1, split_size = 30>, #dist.piece<peer = 2, tag = 10, split_dim = 1, split_start = 30, split_size = 2>] : tensor<8x32xf32>
  %w = dist.recv_pieces on @cluster [#dist.piece<peer = 0, tag = 10, split_dim = 1, split_size = 30>, #dist.piece<peer = 2, tag = 10, split_dim = 1, split_start = 30, split_size = 2>] : tensor<8x32xf32>
  return %g : tensor<8x126xf32>
}

// A plan round-trips; defaults (inference, gpipe, one microbatch) are
// elided, a schedule that is not a keyword is printed as a string.
// CHECK: module attributes {dist.plan = #dist.plan<mode = training, schedule = "1f1b", microbatches = 2, batch = 8, stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [5.000000e+00, 3.000000e+00], recompute = true, zero_shares = [8.000000e+01, 2.400000e+01], kinds = ["H100-PCIe-80GB", "L4"], zero_stage = 2>, #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>]>}
// CHECK: dist.op_sharding = #dist.op_sharding<dim = -1, parts = [3, 1], collective = all_reduce>, dist.stage_id = 1 : i64
// CHECK: module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>}
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, kinds = ["H100-PCIe-80GB", "L4"], recompute = true, batch_shares = [5.0, 3.0], zero_shares = [80.0, 24.0], zero_stage = 2>, #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>], batch = 8, microbatches = 2, schedule = "1f1b", mode = training>} {
  func.func private @f() attributes {dist.stage_id = 1 : i64, dist.op_sharding = #dist.op_sharding<dim = -1, parts = [3, 1], collective = all_reduce>}
}

module attributes {dist.plan = #dist.plan<mode = inference, schedule = gpipe, microbatches = 1, stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
}

// A partitioned module's graph inputs; batch_dim -1 (no batch) is elided.
// CHECK: module attributes {dist.graph_inputs = [#dist.graph_input<name = "pixels", type = tensor<8x3x4x4xf32>, batch_dim = 0>, #dist.graph_input<name = "scale", type = tensor<f32>>]}
module attributes {dist.graph_inputs = [#dist.graph_input<name = "pixels", type = tensor<8x3x4x4xf32>, batch_dim = 0>, #dist.graph_input<name = "scale", type = tensor<f32>, batch_dim = -1>]} {
}
