// RUN: hetpar-opt %s --split-input-file --hetpar-dist-global-form --hetpar-dist-localize | FileCheck %s

// hetpar-dist-localize leaves what travels between devices as
// dist.send_pieces / dist.recv_pieces: each piece a block of the value for
// one peer, in the local coordinates of the device that holds the op
// (hetpar-dist-lower-exchanges makes them messages). The blocks below are
// worked out by hand from the plans.

// Two stages; stage 0 is data parallel 3:1 over the microbatch of 4 rows
// (2 microbatches of the batch of 8): device 4 holds rows [0, 3), device 5
// row [3, 4). Each sends all of its rows to device 7, which receives the
// two blocks into rows [0, 3) and [3, 4) of its 4 rows.
module attributes {dist.plan = #dist.plan<microbatches = 2, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [3.0, 1.0], data = 2, devices = [4, 5], tensor = 1>, #dist.stage_plan<data = 1, devices = [7], tensor = 1>]>} {
func.func @main(%x: tensor<8x6xf32> {onnx.name = "x"}) -> (tensor<8x6xf32> {onnx.name = "y"}) {
  %e = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<8x6xf32>) -> tensor<8x6xf32>
  %y = onnx.Tanh(%e) {dist.stage_id = 1 : i64} : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}
}
// CHECK-LABEL: func.func @device_4(
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<3x6xf32>
// CHECK-NEXT: dist.send_pieces %[[R]] on @mesh [#dist.piece<peer = 7, tag = 0, batch_dim = 0, batch_size = 3>] : tensor<3x6xf32>
// CHECK-NOT: dist.send
// CHECK-LABEL: func.func @device_5(
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<1x6xf32>
// CHECK-NEXT: dist.send_pieces %[[R]] on @mesh [#dist.piece<peer = 7, tag = 0, batch_dim = 0, batch_size = 1>] : tensor<1x6xf32>
// CHECK-LABEL: func.func @device_7()
// CHECK-NEXT: %[[A:.*]] = dist.recv_pieces on @mesh [#dist.piece<peer = 4, tag = 0, batch_dim = 0, batch_size = 3>, #dist.piece<peer = 5, tag = 0, batch_dim = 0, batch_start = 3, batch_size = 1>] : tensor<4x6xf32>
// CHECK-NEXT: onnx.Tanh(%[[A]])
// CHECK-NOT: dist.recv

// -----

// A value that travels split: device 0 holds columns [0, 3) of %h, device 1
// column 3; stage 1 wants columns [0, 2) on device 2 and [2, 4) on device 3.
// Device 0 sends its columns 0-1 to device 2 and its column 2 to device 3;
// device 3 joins column 2 (from 0) and column 3 (from 1).
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>,
    #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">, #dist.device<3, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h = dist.stage 0 on @mesh [0, 1] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Relu(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [3, 1]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = dist.transfer %h : tensor<2x4xf32> from #dist.sharding<@mesh, [0, 1] split 1 sizes [3, 1]> to #dist.sharding<@mesh, [2, 3] split 1 sizes [2, 2]>
  %y = dist.stage 1 on @mesh [2, 3] ins(%t) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Tanh(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2], collective = all_gather>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<2x3xf32>
// CHECK-NEXT: dist.send_pieces %[[R]] on @mesh [#dist.piece<peer = 2, tag = 0, split_dim = 1, split_size = 2>, #dist.piece<peer = 3, tag = 0, split_dim = 1, split_start = 2, split_size = 1>] : tensor<2x3xf32>
// CHECK-LABEL: func.func @device_1(
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<2x1xf32>
// CHECK-NEXT: dist.send_pieces %[[R]] on @mesh [#dist.piece<peer = 3, tag = 0, split_dim = 1, split_size = 1>] : tensor<2x1xf32>
// CHECK-LABEL: func.func @device_2()
// CHECK-NEXT: dist.recv_pieces on @mesh [#dist.piece<peer = 0, tag = 0, split_dim = 1, split_size = 2>] : tensor<2x2xf32>
// CHECK-LABEL: func.func @device_3()
// CHECK-NEXT: dist.recv_pieces on @mesh [#dist.piece<peer = 0, tag = 0, split_dim = 1, split_size = 1>, #dist.piece<peer = 1, tag = 0, split_dim = 1, split_start = 1, split_size = 1>] : tensor<2x2xf32>

// -----

// The graph output, joined at the root (device 0) from the replicas' rows:
// device 1 sends all of its row under the output's tag (1: the value that
// leaves the stage has tag 0), and device 0 receives it whole, after its own
// rows.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<batch_shares = [3.0, 1.0], data = 2, devices = [0, 1], tensor = 1>]>} {
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x2xf32> {onnx.name = "y"}) {
  %y = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<3x2xf32>
// CHECK-NEXT: %[[P:.*]] = dist.recv_pieces on @mesh [#dist.piece<peer = 1, tag = 1>] : tensor<1x2xf32>
// CHECK-NEXT: onnx.Concat(%[[R]], %[[P]]) {axis = 0 : i64}
// CHECK-LABEL: func.func @device_1(
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<1x2xf32>
// CHECK-NEXT: dist.send_pieces %[[R]] on @mesh [#dist.piece<peer = 0, tag = 1>] : tensor<1x2xf32>
// CHECK-NEXT: return{{$}}
