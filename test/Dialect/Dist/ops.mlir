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
  // CHECK: dist.stage 0 on @cluster [0, 1] ins(%{{.*}}) attributes {in_shardings = [#dist.sharding<@cluster, [0, 1] split 1 sizes [64, 62]>], out_shardings = [#dist.sharding<@cluster, [0, 1] partial "sum">]}
  %s0 = dist.stage 0 on @cluster [0, 1] ins(%a) attributes {
      in_shardings = [#dist.sharding<@cluster, [0, 1] split 1 sizes [64, 62]>],
      out_shardings = [#dist.sharding<@cluster, [0, 1] partial "sum">]} {
  ^bb0(%arg: tensor<8x126xf32>):
    dist.yield %arg : tensor<8x126xf32>
  } : (tensor<8x126xf32>) -> tensor<8x126xf32>
  // CHECK: dist.transfer %{{.*}} : tensor<8x126xf32> from #dist.sharding<@cluster, [0, 1] partial "sum"> to #dist.sharding<@cluster, [2, 3] split 1 sizes [63, 63]>
  %t = dist.transfer %s0 : tensor<8x126xf32> from #dist.sharding<@cluster, [0, 1] partial "sum">
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
  // CHECK: dist.all_reduce %{{.*}} on @cluster [0, 1] reduction "sum" : tensor<8x32xf32> -> tensor<8x32xf32>
  %r = dist.all_reduce %p on @cluster [0, 1] reduction "sum" : tensor<8x32xf32> -> tensor<8x32xf32>
  // CHECK: dist.grad_all_reduce %{{.*}} on @cluster [0, 1]  : tensor<8x32xf32> -> tensor<8x32xf32>
  %f = dist.grad_all_reduce %p on @cluster [0, 1] : tensor<8x32xf32> -> tensor<8x32xf32>
  // CHECK: dist.all_gather %{{.*}} on @cluster [0, 1] dim 1 sizes [64, 62] : tensor<8x62xf32> -> tensor<8x126xf32>
  %g = dist.all_gather %x on @cluster [0, 1] dim 1 sizes [64, 62] : tensor<8x62xf32> -> tensor<8x126xf32>
  // CHECK: dist.reduce_scatter %{{.*}} on @cluster [0, 1] reduction "sum" dim 1 sizes [64, 62] : tensor<8x126xf32> -> tensor<8x62xf32>
  %rs = dist.reduce_scatter %g on @cluster [0, 1] reduction "sum" dim 1 sizes [64, 62] : tensor<8x126xf32> -> tensor<8x62xf32>
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
  return %g : tensor<8x126xf32>
}
