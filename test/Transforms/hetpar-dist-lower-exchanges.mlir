// RUN: hetpar-opt %s --hetpar-dist-lower-exchanges | FileCheck %s
// RUN: hetpar-opt %S/Inputs/dist-lower-exchanges-bad-type.mlir --hetpar-dist-lower-exchanges --verify-diagnostics

// A hand-written local form (the values are not those of one plan: each
// block is checked by hand against the pieces' ranges).
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">]

// Sends: every block is cut first, then the three sends follow back to back
// (one exchange step). The batch of %r lies in 2 chunks of dimension 0 (as
// the outer factor of N*H would): the blocks are rows [1, 2) and [0, 1) of
// each chunk of 2 rows, cut through a 2x2x6 view. The constant is sliced at
// compile time: columns [1, 3) of [[1, 2, 3], [4, 5, 6]]; the whole
// constant, read by nothing else, leaves the program.
// CHECK-LABEL: func.func @device_0(
// CHECK-NOT: 4.000000e+00, 5.000000e+00, 6.000000e+00]]
// CHECK: %[[R:.*]] = onnx.Relu
// CHECK: %[[V:.*]] = onnx.Reshape(%[[R]], %{{.*}}) : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<2x2x6xf32>
// CHECK: %[[S:.*]] = onnx.Slice(%[[V]], {{.*}} -> tensor<2x1x6xf32>
// CHECK: %[[B1:.*]] = onnx.Reshape(%[[S]], %{{.*}}) : (tensor<2x1x6xf32>, tensor<2xi64>) -> tensor<2x6xf32>
// CHECK: %[[B2:.*]] = onnx.Reshape({{.*}} -> tensor<2x6xf32>
// CHECK: %[[B3:.*]] = onnx.Constant dense<{{\[\[}}2.000000e+00, 3.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT: dist.send %[[B1]] on @mesh to 1 tag 0 : tensor<2x6xf32>
// CHECK-NEXT: dist.send %[[B2]] on @mesh to 2 tag 0 : tensor<2x6xf32>
// CHECK-NEXT: dist.send %[[B3]] on @mesh to 1 tag 1 : tensor<2x2xf32>
// CHECK-NEXT: return
func.func @device_0(%x: tensor<4x6xf32>) attributes {dist.device = 0 : i64} {
  %c = onnx.Constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r = onnx.Relu(%x) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  dist.send_pieces %r on @mesh [#dist.piece<peer = 1, tag = 0, batch_dim = 0, batch_outer = 2, batch_start = 1, batch_size = 1>, #dist.piece<peer = 2, tag = 0, batch_dim = 0, batch_outer = 2, batch_size = 1>] : tensor<4x6xf32>
  dist.send_pieces %c on @mesh [#dist.piece<peer = 1, tag = 1, split_dim = 1, split_start = 1, split_size = 2>] : tensor<2x3xf32>
  return
}

// Receives: the seven receives back to back, then the joins. %a's first
// run (batch_start 0) is columns [0, 3) from device 0 and column 3 from
// device 2, joined along dimension 1; its second run, rows [1, 4), follows
// along dimension 0. %b is joined from two rows. %c, which nothing reads, is
// received and not joined.
// CHECK-LABEL: func.func @device_1(
// CHECK-NEXT: %[[A1:.*]] = dist.recv on @mesh from 0 tag 0 : tensor<1x3xf32>
// CHECK-NEXT: %[[A2:.*]] = dist.recv on @mesh from 2 tag 0 : tensor<1x1xf32>
// CHECK-NEXT: %[[A3:.*]] = dist.recv on @mesh from 2 tag 2 : tensor<3x4xf32>
// CHECK-NEXT: %[[B1:.*]] = dist.recv on @mesh from 0 tag 1 : tensor<1x2xf32>
// CHECK-NEXT: %[[B2:.*]] = dist.recv on @mesh from 2 tag 1 : tensor<1x2xf32>
// CHECK-NEXT: dist.recv on @mesh from 0 tag 3 : tensor<1x2xf32>
// CHECK-NEXT: dist.recv on @mesh from 2 tag 3 : tensor<1x2xf32>
// CHECK-NEXT: %[[ROW0:.*]] = onnx.Concat(%[[A1]], %[[A2]]) {axis = 1 : i64} : (tensor<1x3xf32>, tensor<1x1xf32>) -> tensor<1x4xf32>
// CHECK-NEXT: %[[A:.*]] = onnx.Concat(%[[ROW0]], %[[A3]]) {axis = 0 : i64} : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[B:.*]] = onnx.Concat(%[[B1]], %[[B2]]) {axis = 0 : i64} : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @device_1() -> (tensor<4x4xf32>, tensor<2x2xf32>) attributes {dist.device = 1 : i64} {
  %a = dist.recv_pieces on @mesh [#dist.piece<peer = 0, tag = 0, batch_dim = 0, batch_size = 1, split_dim = 1, split_size = 3>, #dist.piece<peer = 2, tag = 0, batch_dim = 0, batch_size = 1, split_dim = 1, split_start = 3, split_size = 1>, #dist.piece<peer = 2, tag = 2, batch_dim = 0, batch_start = 1, batch_size = 3, split_dim = 1, split_size = 4>] : tensor<4x4xf32>
  %b = dist.recv_pieces on @mesh [#dist.piece<peer = 0, tag = 1, batch_dim = 0, batch_size = 1>, #dist.piece<peer = 2, tag = 1, batch_dim = 0, batch_start = 1, batch_size = 1>] : tensor<2x2xf32>
  %c = dist.recv_pieces on @mesh [#dist.piece<peer = 0, tag = 3, batch_dim = 0, batch_size = 1>, #dist.piece<peer = 2, tag = 3, batch_dim = 0, batch_start = 1, batch_size = 1>] : tensor<2x2xf32>
  return %a, %b : tensor<4x4xf32>, tensor<2x2xf32>
}
