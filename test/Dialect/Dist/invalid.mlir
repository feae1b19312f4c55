// Negative tests: one per constraint the dist verifiers check (made by
// hand; every expected message is the verifier's).
// RUN: hetpar-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{device id -1 is negative}}
dist.mesh @m devices [#dist.device<-1, "A100">]

// -----

// expected-error @+1 {{device 1 has an empty kind}}
dist.mesh @m devices [#dist.device<1, "">]

// -----

// expected-error @+1 {{has no devices}}
dist.mesh @m devices []

// -----

// expected-error @+1 {{lists device 0 twice}}
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<0, "V100">]

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+2 {{expected integer value}}
  // expected-error @+1 {{failed to parse Dist_ShardingAttr parameter}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, []>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{device 1 appears twice in the group [1, 1]}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [1, 1]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{device id -2 is negative}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [-2]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{split dimension -3 is negative}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] split -3 sizes [3, 3]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{a split over 2 devices needs 2 extents, got 3}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] split 1 sizes [2, 2, 2]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{3 replicas do not divide a group of 4 devices}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1, 2, 3] replicas 3>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{a split over 2 devices needs 2 extents, got 4}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1, 2, 3] replicas 2 split 1 sizes [2, 2, 1, 1]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{extent -1 is negative}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] split 1 sizes [7, -1]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+2 {{expected one of [sum, max, min, prod] for how the values of a group combine elementwise (the reductions NCCL and MPI both provide), got: avg}}
  // expected-error @+1 {{failed to parse Dist_ShardingAttr parameter 'partial'}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] partial avg>
  return
}

// -----

// `partial` without its reduction is an error, not a replicated value.
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+2 {{expected keyword for how the values of a group combine elementwise}}
  // expected-error @+1 {{failed to parse Dist_ShardingAttr parameter 'partial'}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] partial>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{a split value cannot also be partial}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] split 1 sizes [3, 3] partial sum>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{split dimension 2 does not exist in 'tensor<8x6xf32>'}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] split 2 sizes [3, 3]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{the extents [4, 3] add up to 7, but dimension 1 of 'tensor<8x6xf32>' has 6}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 1] split 1 sizes [4, 3]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{device 7 is not in mesh @m}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@m, [0, 7]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{refers to @nope, which is not a dist.mesh}}
  %a = dist.annotate %x : tensor<8x6xf32> as #dist.sharding<@nope, [0]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{target: the extents [4, 4] add up to 8}}
  %a = dist.transfer %x : tensor<8x6xf32> from #dist.sharding<@m, [0, 1]> to #dist.sharding<@m, [2, 3] split 1 sizes [4, 4]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
dist.mesh @n devices [#dist.device<0, "A100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{moves between meshes @m and @n (one mesh expected)}}
  %a = dist.transfer %x : tensor<8x6xf32> from #dist.sharding<@m, [0]> to #dist.sharding<@n, [0]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{device 9 is not in mesh @m}}
  %a = dist.transfer %x : tensor<8x6xf32> from #dist.sharding<@m, [0]> to #dist.sharding<@m, [9]>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{stage index -1 is negative}}
  %s0 = dist.stage -1 on @m [0, 1] ins(%x)  {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{the device group is empty}}
  %s0 = dist.stage 0 on @m [] ins(%x)  {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{device 5 is not in mesh @m}}
  %s0 = dist.stage 0 on @m [0, 5] ins(%x)  {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{body arguments do not match the operands' types}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x)  {
  ^bb0(%a: tensor<8x7xf32>):
    dist.yield %a : tensor<8x7xf32>
  } : (tensor<8x6xf32>) -> tensor<8x7xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{yields 'tensor<8x6xf32>' but the stage returns 'tensor<6x8xf32>'}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x)  {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<6x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{has 2 input shardings for 1 values}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x) attributes {in_shardings = [#dist.sharding<@m, [0]>, #dist.sharding<@m, [1]>]} {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{input sharding #0 is not a #dist.sharding}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x) attributes {in_shardings = [1 : i64]} {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{output sharding #0 uses device 2, which does not run the stage}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x) attributes {out_shardings = [#dist.sharding<@m, [2]>]} {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{input sharding #0: the extents [3, 4] add up to 7}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x) attributes {in_shardings = [#dist.sharding<@m, [0, 1] split 1 sizes [3, 4]>]} {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{is a local-form op: it must be inside a function with a 'dist.device' attribute}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<8x6xf32> -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{runs on device 1, which is not in its group [2, 3]}}
  %r = dist.all_reduce %x on @m [2, 3] reduction sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the device group is empty}}
  %r = dist.all_reduce %x on @m [] reduction sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 1 appears twice in the group [1, 1]}}
  %r = dist.all_reduce %x on @m [1, 1] reduction sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 6 is not in mesh @m}}
  %r = dist.all_reduce %x on @m [1, 6] reduction sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{refers to @q, which is not a dist.mesh}}
  %r = dist.all_reduce %x on @q [1] reduction sum : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<?x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{needs static local shapes}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{changes the element type from 'f32' to 'f16'}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<8x4xf32> -> tensor<8x4xf16>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+2 {{expected ::hetpar::dist::ReductionKind to be one of: sum, max, min, prod}}
  // expected-error @+1 {{failed to parse Dist_ReductionKindAttr parameter 'value'}}
  %r = dist.all_reduce %x on @m [0, 1] reduction mean : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{result type 'tensor<4x8xf32>' differs from the operand type 'tensor<8x4xf32>'}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{root 3 is not in the group [0, 1]}}
  %r = dist.broadcast %x on @m [0, 1] root 3 : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{result type 'tensor<8x5xf32>' differs from the operand type 'tensor<8x4xf32>'}}
  %r = dist.broadcast %x on @m [0, 1] root 0 : tensor<8x4xf32> -> tensor<8x5xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{gather dimension 2 does not exist in 'tensor<8x4xf32>'}}
  %r = dist.all_gather %x on @m [0, 1] dim 2 sizes [5, 4] : tensor<8x4xf32> -> tensor<8x9xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{needs one gather size per device (2), got 3}}
  %r = dist.all_gather %x on @m [0, 1] dim 1 sizes [5, 4, 1] : tensor<8x4xf32> -> tensor<8x9xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{gather size -5 is negative}}
  %r = dist.all_gather %x on @m [0, 1] dim 1 sizes [-5, 4] : tensor<8x4xf32> -> tensor<8x9xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the operand has 4 along dimension 1, expected 5 (this device's size)}}
  %r = dist.all_gather %x on @m [0, 1] dim 1 sizes [4, 5] : tensor<8x4xf32> -> tensor<8x9xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the result has 8 along dimension 1, expected 9 (the sum of the sizes)}}
  %r = dist.all_gather %x on @m [0, 1] dim 1 sizes [5, 4] : tensor<8x4xf32> -> tensor<8x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{changes dimension 0: 'tensor<8x4xf32>' to 'tensor<7x9xf32>'}}
  %r = dist.all_gather %x on @m [0, 1] dim 1 sizes [5, 4] : tensor<8x4xf32> -> tensor<7x9xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{changes the rank: 'tensor<8x4xf32>' to 'tensor<8x9x1xf32>'}}
  %r = dist.all_gather %x on @m [0, 1] dim 1 sizes [5, 4] : tensor<8x4xf32> -> tensor<8x9x1xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+2 {{expected ::hetpar::dist::ReductionKind to be one of: sum, max, min, prod}}
  // expected-error @+1 {{failed to parse Dist_ReductionKindAttr parameter 'value'}}
  %r = dist.reduce_scatter %x on @m [0, 1] reduction any dim 1 sizes [2, 2] : tensor<8x4xf32> -> tensor<8x2xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{scatter dimension -1 does not exist in 'tensor<8x4xf32>'}}
  %r = dist.reduce_scatter %x on @m [0, 1] reduction sum dim -1 sizes [2, 2] : tensor<8x4xf32> -> tensor<8x2xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the operand has 4 along dimension 1, expected 5 (the sum of the sizes)}}
  %r = dist.reduce_scatter %x on @m [0, 1] reduction sum dim 1 sizes [3, 2] : tensor<8x4xf32> -> tensor<8x2xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the result has 2 along dimension 1, expected 1 (this device's size)}}
  %r = dist.reduce_scatter %x on @m [0, 1] reduction sum dim 1 sizes [3, 1] : tensor<8x4xf32> -> tensor<8x2xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{splits and concatenates the same dimension 1}}
  %r = dist.all_to_all %x on @m [0, 1] split 1 [2, 2] concat 1 [4, 4] : tensor<8x4xf32> -> tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{needs one concat size per device (2), got 1}}
  %r = dist.all_to_all %x on @m [0, 1] split 0 [4, 4] concat 1 [4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{split dimension 3 does not exist}}
  %r = dist.all_to_all %x on @m [0, 1] split 3 [4, 4] concat 1 [4, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the operand has 8 along dimension 0, expected 9 (the sum of the split sizes)}}
  %r = dist.all_to_all %x on @m [0, 1] split 0 [5, 4] concat 1 [4, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the result has 4 along dimension 0, expected 3 (this device's split size)}}
  %r = dist.all_to_all %x on @m [0, 1] split 0 [5, 3] concat 1 [4, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the operand has 4 along dimension 1, expected 3 (this device's concat size)}}
  %r = dist.all_to_all %x on @m [0, 1] split 0 [4, 4] concat 1 [4, 3] : tensor<8x4xf32> -> tensor<4x7xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{the result has 8 along dimension 1, expected 9 (the sum of the concat sizes)}}
  %r = dist.all_to_all %x on @m [0, 1] split 0 [4, 4] concat 1 [5, 4] : tensor<8x4xf32> -> tensor<4x8xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
// expected-error @+1 {{'dist.device' must be a non-negative integer device id, got "one"}}
func.func @f() attributes {dist.device = "one"} {
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
// expected-error @+1 {{'dist.device' must be a non-negative integer device id, got -1}}
func.func @f() attributes {dist.device = -1 : i64} {
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
// expected-error @+1 {{unknown dist attribute 'dist.stagez'}}
func.func @f() attributes {dist.stagez = 1 : i64} {
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 9 : i64} {
  // expected-error @+1 {{device 9 is not in mesh @m}}
  dist.send %x on @m to 0 tag 0 : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
dist.mesh @n devices [#dist.device<0, "A100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{input sharding #0 uses mesh @n, not the stage's @m}}
  %s0 = dist.stage 0 on @m [0, 1] ins(%x) attributes {in_shardings = [#dist.sharding<@n, [0]>]} {
  ^bb0(%a: tensor<8x6xf32>):
    dist.yield %a : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  %s0 = dist.stage 0 on @m [0, 1] ins(%x) {
  ^bb0(%a: tensor<8x6xf32>):
    // expected-error @+1 {{is nested in another stage}}
    %s1 = dist.stage 1 on @m [0] ins(%a) {
    ^bb0(%b: tensor<8x6xf32>):
      dist.yield %b : tensor<8x6xf32>
    } : (tensor<8x6xf32>) -> tensor<8x6xf32>
    dist.yield %s1 : tensor<8x6xf32>
  } : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{exchanges with its own device 1}}
  dist.send %x on @m to 1 tag 0 : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{peer -2 is negative}}
  dist.send %x on @m to -2 tag 0 : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{tag -1 is outside [0, 32767] (the least MPI_TAG_UB MPI allows)}}
  %r = dist.recv on @m from 0 tag -1 : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 8 is not in mesh @m}}
  %r = dist.recv on @m from 8 tag 0 : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{needs a static local shape}}
  %r = dist.recv on @m from 0 tag 0 : tensor<?x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">, #dist.device<3, "V100">]
func.func @f(%x: tensor<8x6xf32>) {
  // expected-error @+1 {{is a local-form op}}
  dist.send %x on @m to 1 tag 0 : tensor<8x6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{has no pieces}}
  dist.send_pieces %x on @m [] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{exchanges with its own device 1}}
  dist.send_pieces %x on @m [#dist.piece<peer = 1, tag = 0>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{has a batch range (dimension 0, 2 chunks, start 3, size 2) outside 'tensor<8x4xf32>'}}
  dist.send_pieces %x on @m [#dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_outer = 2, batch_start = 3, batch_size = 2>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 7 is not in mesh @m}}
  dist.send_pieces %x on @m [#dist.piece<peer = 7, tag = 0>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // MPI takes tags up to MPI_TAG_UB, at least 32767; (int)2^31 fails in
  // MPI, and (int)(2^32 - 1) is MPI_ANY_TAG.
  // expected-error @+1 {{tag 2147483648 is outside [0, 32767]}}
  dist.send_pieces %x on @m [#dist.piece<peer = 0, tag = 2147483648>] : tensor<8x4xf32>
  return
}

// -----

// expected-error @+1 {{a piece's batch_dim and split_dim are both 1}}
#bad = #dist.piece<peer = 0, tag = 0, batch_dim = 1, batch_size = 1, split_dim = 1, split_size = 1>

// -----

// expected-error @+1 {{a piece without a split_dim has no range along it}}
#bad = #dist.piece<peer = 0, tag = 0, split_size = 1>

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // Rows [0, 3) and [4, 8): row 3 is missing.
  // expected-error @+1 {{pieces do not tile 'tensor<8x4xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_size = 3>, #dist.piece<peer = 2, tag = 0, batch_dim = 0, batch_start = 4, batch_size = 4>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // Columns [0, 3) of a run that needs all 4.
  // expected-error @+1 {{pieces do not tile 'tensor<8x4xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0, split_dim = 1, split_size = 3>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // Two whole pieces: the second overlaps the first.
  // expected-error @+1 {{pieces do not tile 'tensor<8x4xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0>, #dist.piece<peer = 2, tag = 0>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // The same rows twice.
  // expected-error @+1 {{pieces do not tile 'tensor<2x2xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_size = 2>, #dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_size = 2>] : tensor<2x2xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<2x3xf32>) attributes {dist.device = 1 : i64} {
  // start + size overflows int64.
  // expected-error @+1 {{has a split range (dimension 1, 1 chunks, start 9223372036854775807, size 1) outside 'tensor<2x3xf32>'}}
  dist.send_pieces %x on @m [#dist.piece<peer = 0, tag = 0, split_dim = 1, split_start = 9223372036854775807, split_size = 1>] : tensor<2x3xf32>
  return
}

// -----

// expected-error @+1 {{'dist.microbatches' must be a positive integer on a module}}
module attributes {dist.microbatches = 0 : i64} {
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{has no pieces}}
  dist.send_pieces %x on @m [] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{exchanges with its own device 1}}
  dist.send_pieces %x on @m [#dist.piece<peer = 1, tag = 0>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{has a batch range (dimension 0, 2 chunks, start 3, size 2) outside 'tensor<8x4xf32>'}}
  dist.send_pieces %x on @m [#dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_outer = 2, batch_start = 3, batch_size = 2>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 7 is not in mesh @m}}
  dist.send_pieces %x on @m [#dist.piece<peer = 7, tag = 0>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // MPI takes tags up to MPI_TAG_UB, at least 32767; (int)2^31 fails in
  // MPI, and (int)(2^32 - 1) is MPI_ANY_TAG.
  // expected-error @+1 {{tag 2147483648 is outside [0, 32767]}}
  dist.send_pieces %x on @m [#dist.piece<peer = 0, tag = 2147483648>] : tensor<8x4xf32>
  return
}

// -----

// expected-error @+1 {{a piece's batch_dim and split_dim are both 1}}
#bad = #dist.piece<peer = 0, tag = 0, batch_dim = 1, batch_size = 1, split_dim = 1, split_size = 1>

// -----

// expected-error @+1 {{a piece without a split_dim has no range along it}}
#bad = #dist.piece<peer = 0, tag = 0, split_size = 1>

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // Rows [0, 3) and [4, 8): row 3 is missing.
  // expected-error @+1 {{pieces do not tile 'tensor<8x4xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_size = 3>, #dist.piece<peer = 2, tag = 0, batch_dim = 0, batch_start = 4, batch_size = 4>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // Columns [0, 3) of a run that needs all 4.
  // expected-error @+1 {{pieces do not tile 'tensor<8x4xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0, split_dim = 1, split_size = 3>] : tensor<8x4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "V100">]
func.func @f() attributes {dist.device = 1 : i64} {
  // Two whole pieces: the second overlaps the first.
  // expected-error @+1 {{pieces do not tile 'tensor<8x4xf32>'}}
  %r = dist.recv_pieces on @m [#dist.piece<peer = 0, tag = 0>, #dist.piece<peer = 2, tag = 0>] : tensor<8x4xf32>
  return
}

// -----

// expected-error @+1 {{'dist.microbatches' must be a positive integer on a module}}
func.func @f() attributes {dist.microbatches = 2 : i64} {
  return
}

// -----

// expected-error @+1 {{'dist.batch_dim' of argument 0 must be a dimension of its tensor type or -1 (no batch)}}
func.func @f(%x: tensor<2x4xf32> {dist.batch_dim = 2 : i64}) {
  return
}

// -----

// expected-error @+1 {{'dist.batch_dim' of argument 0 must be a dimension of its tensor type or -1 (no batch)}}
func.func @f(%x: tensor<2x4xf32> {dist.batch_dim = -2 : i64}) {
  return
}

// -----

// expected-error @+1 {{'dist.batch_dim' of result 0 must be a dimension of its tensor type}}
func.func @f(%x: tensor<2x4xf32>) -> (tensor<2x4xf32> {dist.batch_dim = -1 : i64}) {
  return %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{unknown dist attribute 'dist.batch' on argument 0}}
func.func @f(%x: tensor<2x4xf32> {dist.batch = 0 : i64}) {
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
func.func @f(%x: tensor<8x4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{result type 'tensor<8x2xf32>' differs from the operand type 'tensor<8x4xf32>'}}
  %r = dist.grad_all_reduce %x on @m [0, 1] : tensor<8x4xf32> -> tensor<8x2xf32>
  return
}

// -----
// The plan's attributes (#dist.plan, #dist.stage_plan, #dist.op_sharding)
// and their places on a module.

// expected-error @+1 {{dim -2 is neither a result dimension nor -1 (the contraction)}}
func.func private @f() attributes {a = #dist.op_sharding<dim = -2, parts = [1, 1]>}

// -----

// expected-error @+1 {{an op sharding needs at least one part}}
func.func private @f() attributes {a = #dist.op_sharding<dim = 0, parts = []>}

// -----

// expected-error @+1 {{part 0 is less than 1}}
func.func private @f() attributes {a = #dist.op_sharding<dim = 0, parts = [2, 0]>}

// -----

// expected-error @+1 {{the collective after an op is all_reduce, all_gather or reduce_scatter, not all_to_all}}
func.func private @f() attributes {a = #dist.op_sharding<dim = 0, parts = [1, 1], collective = all_to_all>}

// -----

// expected-error @+1 {{the device group is empty}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [], data = 1, tensor = 1>}

// -----

// expected-error @+1 {{device 0 appears twice in the group [0, 0]}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 0], data = 2, tensor = 1>}

// -----

// expected-error @+1 {{a stage of 3 devices needs data >= 1 and tensor >= 1 with data x tensor = 3, got 2 x 1}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 1, 2], data = 2, tensor = 1>}

// -----

// expected-error @+1 {{batch_shares has 1 entries for 2 replicas}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, batch_shares = [1.0]>}

// -----

// expected-error @+1 {{zero_shares must be positive, got 0}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, zero_shares = [1.0, 0.0]>}

// -----

// expected-error @+1 {{zero_stage must be 1 or 2, got 3}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, zero_shares = [1.0, 1.0], zero_stage = 3>}

// -----

// expected-error @+1 {{zero_stage 2 needs zero_shares}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 1], data = 2, tensor = 1, zero_stage = 2>}

// -----

// expected-error @+1 {{kinds has 1 entries for 2 devices}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0, 1], data = 1, tensor = 2, kinds = ["L4"]>}

// -----

// expected-error @+1 {{a device kind must be a non-empty string, got ""}}
func.func private @f() attributes {a = #dist.stage_plan<devices = [0], data = 1, tensor = 1, kinds = [""]>}

// -----

// expected-error @+1 {{microbatches must be >= 1, got 0}}
func.func private @f() attributes {a = #dist.plan<microbatches = 0, stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>}

// -----

// expected-error @+1 {{the batch of 6 is not a positive multiple of 4 microbatches}}
func.func private @f() attributes {a = #dist.plan<microbatches = 4, batch = 6, stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>}

// -----

// expected-error @+1 {{a plan needs at least one stage}}
func.func private @f() attributes {a = #dist.plan<stages = []>}

// -----

// expected-error @+1 {{stage 0 is not a #dist.stage_plan: 3 : i64}}
func.func private @f() attributes {a = #dist.plan<stages = [3]>}

// -----

// expected-error @+1 {{device 1 is in two stages}}
func.func private @f() attributes {a = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1], data = 2, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>}

// -----

// expected-error @+2 {{expected ::hetpar::dist::PipelineSchedule to be one of: gpipe, 1f1b}}
// expected-error @+1 {{failed to parse Dist_PlanAttr parameter 'schedule'}}
func.func private @f() attributes {a = #dist.plan<schedule = "interleaved", stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>}

// -----

// expected-error @+1 {{'dist.plan' must be a #dist.plan on a module}}
func.func private @f() attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>}

// -----

// expected-error @+1 {{'dist.stage_id' must be a non-negative integer, got -1 : i64}}
func.func private @f() attributes {dist.stage_id = -1 : i64}

// -----

module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
  // expected-error @+1 {{'dist.stage_id' is 1 but the plan has 1 stages}}
  func.func private @f() attributes {dist.stage_id = 1 : i64}
}

// -----

// expected-error @+1 {{'dist.op_sharding' needs a 'dist.stage_id' on the same op}}
func.func private @f() attributes {dist.op_sharding = #dist.op_sharding<dim = 0, parts = [1, 1]>}

// -----

// expected-error @+1 {{'dist.op_sharding' must be a #dist.op_sharding, got 1 : i64}}
func.func private @f() attributes {dist.stage_id = 0 : i64, dist.op_sharding = 1 : i64}

// -----

module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1, 2], data = 1, tensor = 3>]>} {
  // expected-error @+1 {{'dist.op_sharding' has 2 parts but stage 0 has 3 tensor-parallel devices}}
  func.func private @f() attributes {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 0, parts = [1, 1]>}
}

// -----

// expected-error @+1 {{graph input 'x': batch_dim 2 is not a dimension of 'tensor<4x3xf32>' (or -1, no batch)}}
module attributes {dist.graph_inputs = [#dist.graph_input<name = "x", type = tensor<4x3xf32>, batch_dim = 2>]} {
}

// -----

// expected-error @+1 {{a graph input has an empty name}}
module attributes {dist.graph_inputs = [#dist.graph_input<name = "", type = tensor<4xf32>>]} {
}

// -----

// expected-error @+1 {{'dist.graph_inputs' names input 'x' twice}}
module attributes {dist.graph_inputs = [#dist.graph_input<name = "x", type = tensor<4xf32>>, #dist.graph_input<name = "x", type = tensor<2xf32>>]} {
}

// -----

// expected-error @+1 {{'dist.graph_inputs' must be an array of #dist.graph_input on a module}}
func.func @f() attributes {dist.graph_inputs = []} {
  return
}
