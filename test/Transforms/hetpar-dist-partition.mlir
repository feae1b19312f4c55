// RUN: hetpar-opt %s --split-input-file --hetpar-dist-global-form --hetpar-dist-partition --hetpar-dist-verify-exchanges --verify-diagnostics | FileCheck %s
// RUN: hetpar-opt %S/Inputs/dist-partition-local-io.mlir --hetpar-dist-global-form --hetpar-dist-partition=local-io=true | FileCheck %s --check-prefix=LOCAL
// RUN: hetpar-opt %S/Inputs/dist-partition-tensor-training.mlir --hetpar-dist-global-form --hetpar-dist-partition=local-io=true | FileCheck %s --check-prefix=TRAIN
// RUN: hetpar-opt %S/Inputs/dist-partition-local-io-passthrough.mlir --split-input-file --hetpar-dist-global-form --hetpar-dist-partition=local-io=true --verify-diagnostics | FileCheck %s --check-prefix=PASSTHROUGH

// A training plan with tensor parallelism (docs/training.md, "Tensor-parallel
// training"). The replicated input of the column-parallel Gemm enters the
// group through dist.grad_all_reduce (its gradient is summed in the backward
// pass). w1 and b1 become this device's shards at compile time, still named
// as their initializers and marked with their split. w2 is read split by the
// row-parallel Gemm and whole by the last MatMul, so it stays whole and is
// sliced at run time, after its own dist.grad_all_reduce. b2, which the
// row-parallel Gemm adds once, is added after the all-reduce by both
// devices, so that their graphs have one shape.
// The labels the loss adds join the graph inputs, as a whole step takes them.
// TRAIN: module attributes {dist.graph_inputs = [#dist.graph_input<name = "x", type = tensor<2x3xf32>>, #dist.graph_input<name = "labels", type = tensor<2x4xf32>, batch_dim = 0>]
// TRAIN-LABEL: func.func @device_0(
// TRAIN: %[[X:.*]] = dist.grad_all_reduce %arg0 on @mesh [0, 1]
// TRAIN: %[[W1:.*]] = onnx.Constant {hetpar.tensor_shard = #dist.sharding<@mesh, [0, 1] split 0 sizes [3, 1]>, onnx.initializer = "w1"} {{.*}} : tensor<3x3xf32>
// TRAIN: %[[B1:.*]] = onnx.Constant {hetpar.tensor_shard = #dist.sharding<@mesh, [0, 1] split 0 sizes [3, 1]>, onnx.initializer = "b1"} {{.*}} : tensor<3xf32>
// TRAIN: onnx.Gemm(%[[X]], %[[W1]], %[[B1]])
// TRAIN: %[[W2:.*]] = onnx.Constant {onnx.initializer = "w2"} {{.*}} : tensor<4x4xf32>
// TRAIN: %[[B2:.*]] = onnx.Constant {onnx.initializer = "b2"}
// TRAIN: %[[W2E:.*]] = dist.grad_all_reduce %[[W2]] on @mesh [0, 1]
// TRAIN: onnx.Slice(%[[W2E]],
// TRAIN: %[[S:.*]] = onnx.Gemm(%{{.*}}, %{{.*}}) {transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// TRAIN: %[[R:.*]] = dist.all_reduce %[[S]] on @mesh [0, 1] reduction sum
// TRAIN: %[[Y:.*]] = onnx.Add(%[[R]], %[[B2]])
// TRAIN: onnx.MatMul(%[[Y]], %[[W2]])
// TRAIN-LABEL: func.func @device_1(
// TRAIN: onnx.Constant {hetpar.tensor_shard = #dist.sharding<@mesh, [0, 1] split 0 sizes [3, 1]>, onnx.initializer = "w1"} {{.*}} : tensor<1x3xf32>
// TRAIN: onnx.Gemm(%{{.*}}, %{{.*}}) {transB = 1 : i64} : (tensor<2x1xf32>, tensor<4x1xf32>) -> tensor<2x4xf32>
// TRAIN: dist.all_reduce
// TRAIN: onnx.Add

// A pipeline's training step returns a graph input and a constant as they
// are from its last stage, which takes the input; the first stage takes it
// too (its Relu reads it) and returns nothing.
// PASSTHROUGH-LABEL: func.func @device_0(%arg0: tensor<4x2xf32> {onnx.name = "x"}) attributes
// PASSTHROUGH: dist.send
// PASSTHROUGH-NEXT: return{{$}}
// PASSTHROUGH-LABEL: func.func @device_1(%arg0: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<2xf32>)
// PASSTHROUGH: %[[R:.*]] = onnx.Relu
// PASSTHROUGH: %[[C:.*]] = onnx.Constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// PASSTHROUGH: return %[[R]], %arg0, %[[C]]

// local-io (a data-parallel training step is built from each device's
// function): each device takes its own rows (5 and 3), slices nothing, and
// returns its rows of the output; nothing is sent to a root.
// LOCAL-LABEL: func.func @device_0(
// LOCAL-SAME: %arg0: tensor<5x2xf32> {dist.batch_dim = 0 : i64, onnx.name = "x"}) -> (tensor<5x3xf32> {dist.batch_dim = 0 : i64, onnx.name = "y"})
// LOCAL-NOT: onnx.Slice
// LOCAL-NOT: dist.send
// LOCAL: %[[Y:.*]] = onnx.MatMul(%arg0, %{{.*}}) : (tensor<5x2xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
// LOCAL-NEXT: return %[[Y]]
// LOCAL-LABEL: func.func @device_1(
// LOCAL-SAME: %arg0: tensor<3x2xf32> {dist.batch_dim = 0 : i64, onnx.name = "x"}) -> (tensor<3x3xf32> {dist.batch_dim = 0 : i64, onnx.name = "y"})
// LOCAL-NOT: dist.recv
// LOCAL: return

// Issue 6's Megatron MLP: W1 column-parallel, W2 row-parallel with an
// all-reduce, over a group of 3 with uneven parts 4, 2, 2 of 8 columns. Each
// device holds its slice of the weights (sliced at compile time); only the
// first device of the last stage returns the output. Nothing splits the batch,
// so it is not followed (no dist.batch_dim). An inference plan takes no
// labels, even where the module names some.
module attributes {hetpar.training_labels = #dist.graph_input<name = "labels", type = tensor<4xi64>, batch_dim = 0>,
    dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1, 2], recompute = false, tensor = 3,
               kinds = ["A100-SXM4-80GB", "V100-SXM2-32GB", "V100-SXM2-32GB"]>]>} {
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x3xf32> {onnx.name = "y"}) {
  %w1 = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]]> : tensor<2x8xf32>
  %w2 = onnx.Constant dense<1.0> : tensor<8x3xf32>
  %h = onnx.MatMul(%x, %w1) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 2, 2]>} : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %y = onnx.MatMul(%h, %w2) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = -1, parts = [4, 2, 2], collective = all_reduce>} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
}
// CHECK: module attributes {dist.graph_inputs = [#dist.graph_input<name = "x", type = tensor<4x2xf32>>], dist.microbatches = 1 : i64, hetpar.training_labels = #dist.graph_input<name = "labels", type = tensor<4xi64>, batch_dim = 0>}
// CHECK: dist.mesh @mesh devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "V100-SXM2-32GB">, #dist.device<2, "V100-SXM2-32GB">]
// CHECK-LABEL: func.func @device_0(
// CHECK-SAME: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x3xf32> {onnx.name = "y"})
// CHECK-SAME: attributes {dist.device = 0 : i64, dist.stage_id = 0 : i64}
// CHECK: onnx.Constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00], [1.000000e+01, 1.100000e+01, 1.200000e+01, 1.300000e+01]]> : tensor<2x4xf32>
// CHECK: onnx.MatMul{{.*}} -> tensor<4x4xf32>
// CHECK: onnx.Constant dense<1.000000e+00> : tensor<4x3xf32>
// CHECK: %[[P:.*]] = onnx.MatMul{{.*}} -> tensor<4x3xf32>
// CHECK: %[[S:.*]] = dist.all_reduce %[[P]] on @mesh [0, 1, 2] reduction sum : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK: return %[[S]]
// CHECK-LABEL: func.func @device_1(
// CHECK-SAME: tensor<4x2xf32> {onnx.name = "x"}) attributes {dist.device = 1 : i64, dist.stage_id = 0 : i64}
// CHECK: onnx.Constant dense<{{\[}}[4.000000e+00, 5.000000e+00], [1.400000e+01, 1.500000e+01]]> : tensor<2x2xf32>
// CHECK: dist.all_reduce {{.*}} on @mesh [0, 1, 2] reduction sum : tensor<4x3xf32>
// CHECK-NEXT: return{{$}}
// CHECK-LABEL: func.func @device_2(
// CHECK: onnx.Constant dense<{{\[}}[6.000000e+00, 7.000000e+00], [1.600000e+01, 1.700000e+01]]> : tensor<2x2xf32>

// -----

// A row-parallel MatMul's partial sums feed a Relu split 4:2 along the
// columns: one reduce-scatter gives each device its reduced columns (not an
// all-reduce and a slice). The columns are an inner dimension, so the
// collective runs between two transposes; the output leaves gathered.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>]>} {
func.func @main(%x: tensor<4x8xf32> {onnx.name = "x"}) -> (tensor<4x6xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<1.0> : tensor<8x6xf32>
  %p = onnx.MatMul(%x, %w) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = -1, parts = [4, 4]>} : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %y = onnx.Relu(%p) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 2]>} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK: %[[P:.*]] = onnx.MatMul{{.*}} -> tensor<4x6xf32>
// CHECK-NOT: dist.all_reduce
// CHECK: %[[T:.*]] = onnx.Transpose(%[[P]]) {perm = array<i64: 1, 0>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
// CHECK: %[[RS:.*]] = dist.reduce_scatter %[[T]] on @mesh [0, 1] reduction sum dim 0 sizes [4, 2] : tensor<6x4xf32> -> tensor<4x4xf32>
// CHECK: %[[B:.*]] = onnx.Transpose(%[[RS]]) {perm = array<i64: 1, 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: onnx.Relu(%[[B]]) : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: dist.all_gather
// CHECK-LABEL: func.func @device_1(
// CHECK: dist.reduce_scatter {{.*}} on @mesh [0, 1] reduction sum dim 0 sizes [4, 2] : tensor<6x4xf32> -> tensor<2x4xf32>
// CHECK: onnx.Relu{{.*}} : (tensor<4x2xf32>) -> tensor<4x2xf32>

// -----

// A value split 4:2 along dimension 1 that two ops want split 3:1 along
// dimension 2: one all-to-all (each device sends the others their columns
// of its rows), which both users share; no gather and slice.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>]>} {
func.func @main(%x: tensor<2x6x4xf32> {onnx.name = "x"}) -> (tensor<2x6x4xf32> {onnx.name = "y"}) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 2]>} : (tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %b = onnx.Sigmoid(%a) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 2, parts = [3, 1]>} : (tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %c = onnx.Tanh(%a) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 2, parts = [3, 1]>} : (tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  %y = onnx.Add(%b, %c) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 2, parts = [3, 1]>} : (tensor<2x6x4xf32>, tensor<2x6x4xf32>) -> tensor<2x6x4xf32>
  return %y : tensor<2x6x4xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK: %[[A:.*]] = onnx.Relu{{.*}} -> tensor<2x4x4xf32>
// CHECK-NOT: dist.all_gather
// CHECK: %[[T:.*]] = dist.all_to_all %[[A]] on @mesh [0, 1] split 2 [3, 1] concat 1 [4, 2] : tensor<2x4x4xf32> -> tensor<2x6x3xf32>
// CHECK-NOT: dist.all_to_all
// CHECK: onnx.Sigmoid(%[[T]]) : (tensor<2x6x3xf32>) -> tensor<2x6x3xf32>
// CHECK: onnx.Tanh(%[[T]]) : (tensor<2x6x3xf32>) -> tensor<2x6x3xf32>
// CHECK: dist.all_gather
// CHECK-LABEL: func.func @device_1(
// CHECK: dist.all_to_all {{.*}} split 2 [3, 1] concat 1 [4, 2] : tensor<2x2x4xf32> -> tensor<2x6x1xf32>

// -----

// Two pipeline stages, 2 microbatches of the batch of 8; the first stage is
// data parallel 3:1, so each microbatch of 4 rows is cut 3 + 1 and joined
// again by the second stage. Reshapes get their local shapes.
module attributes {dist.plan = #dist.plan<microbatches = 2, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [3.0, 1.0], data = 2, devices = [4, 5], recompute = false, tensor = 1>, #dist.stage_plan<batch_shares = [1.0], data = 1, devices = [7], recompute = false, tensor = 1>]>} {
func.func @main(%x: tensor<8x6xf32> {onnx.name = "x"}) -> (tensor<8x3xf32> {onnx.name = "y"}) {
  %s = onnx.Constant dense<[8, 2, 3]> : tensor<3xi64>
  %s2 = onnx.Constant dense<[8, 6]> : tensor<2xi64>
  %w = onnx.Constant dense<2.0> : tensor<6x3xf32>
  %r = onnx.Reshape(%x, %s) {dist.stage_id = 0 : i64} : (tensor<8x6xf32>, tensor<3xi64>) -> tensor<8x2x3xf32>
  %e = onnx.Relu(%r) {dist.stage_id = 0 : i64} : (tensor<8x2x3xf32>) -> tensor<8x2x3xf32>
  %f = onnx.Reshape(%e, %s2) {dist.stage_id = 1 : i64} : (tensor<8x2x3xf32>, tensor<2xi64>) -> tensor<8x6xf32>
  %y = onnx.MatMul(%f, %w) {dist.stage_id = 1 : i64} : (tensor<8x6xf32>, tensor<6x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
}
// The graph's input, a whole step's batch; stage 1 reads it nowhere, so
// device 7's function does not take it.
// CHECK: module attributes {dist.graph_inputs = [#dist.graph_input<name = "x", type = tensor<8x6xf32>, batch_dim = 0>], dist.microbatches = 2 : i64}
// CHECK: dist.mesh @mesh devices [#dist.device<4, "unknown">, #dist.device<5, "unknown">, #dist.device<7, "unknown">]
// CHECK-LABEL: func.func @device_4(
// CHECK-SAME: %[[X:.*]]: tensor<4x6xf32> {dist.batch_dim = 0 : i64, onnx.name = "x"}) attributes {dist.device = 4 : i64, dist.stage_id = 0 : i64}
// CHECK: %[[BEGIN:.*]] = onnx.Constant dense<0> : tensor<1xi64>
// CHECK: %[[END:.*]] = onnx.Constant dense<3> : tensor<1xi64>
// CHECK: %[[AX:.*]] = onnx.Constant dense<0> : tensor<1xi64>
// CHECK: onnx.Slice(%[[X]], %[[BEGIN]], %[[END]]) axes(%[[AX]]) {{.*}} -> tensor<3x6xf32>
// CHECK: onnx.Constant dense<[3, 2, 3]> : tensor<3xi64>
// CHECK: %[[R:.*]] = onnx.Relu{{.*}} -> tensor<3x2x3xf32>
// CHECK: dist.send %[[R]] on @mesh to 7 tag 0 : tensor<3x2x3xf32>
// CHECK-LABEL: func.func @device_5(
// CHECK-DAG: onnx.Constant dense<3> : tensor<1xi64>
// CHECK-DAG: onnx.Constant dense<4> : tensor<1xi64>
// CHECK: onnx.Slice{{.*}} -> tensor<1x6xf32>
// CHECK: dist.send {{.*}} on @mesh to 7 tag 0 : tensor<1x2x3xf32>
// CHECK-LABEL: func.func @device_7()
// CHECK-SAME: -> (tensor<4x3xf32> {dist.batch_dim = 0 : i64, onnx.name = "y"})
// CHECK: %[[A:.*]] = dist.recv on @mesh from 4 tag 0 : tensor<3x2x3xf32>
// CHECK: %[[B:.*]] = dist.recv on @mesh from 5 tag 0 : tensor<1x2x3xf32>
// CHECK: onnx.Concat(%[[A]], %[[B]]) {axis = 0 : i64} {{.*}} -> tensor<4x2x3xf32>
// CHECK: onnx.Constant dense<[4, 6]> : tensor<2xi64>
// CHECK: onnx.MatMul{{.*}} -> tensor<4x3xf32>

// -----

// Each stage's devices take the graph inputs the stage reads
// (stageTakesInput): stage 0 reads x, stage 1 reads y and returns z as it
// is; no stage reads `unused`, which only the module's dist.graph_inputs
// lists (the runtime still asks for it, in graph order). Two microbatches:
// each device's inputs hold one, the graph's a whole step.
module attributes {dist.plan = #dist.plan<microbatches = 2, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>,
              #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}, %unused: tensor<3xf32> {onnx.name = "unused"}, %y: tensor<2x4xf32> {onnx.name = "y"}, %z: tensor<5xf32> {onnx.name = "z"}) -> (tensor<2x4xf32>, tensor<5xf32>) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = onnx.Add(%a, %y) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %b, %z : tensor<2x4xf32>, tensor<5xf32>
}
}
// CHECK: module attributes {dist.graph_inputs = [#dist.graph_input<name = "x", type = tensor<2x4xf32>, batch_dim = 0>, #dist.graph_input<name = "unused", type = tensor<3xf32>>, #dist.graph_input<name = "y", type = tensor<2x4xf32>, batch_dim = 0>, #dist.graph_input<name = "z", type = tensor<5xf32>>]
// CHECK-LABEL: func.func @device_0(
// CHECK-SAME: %arg0: tensor<1x4xf32> {dist.batch_dim = 0 : i64, onnx.name = "x"}) attributes
// CHECK-LABEL: func.func @device_1(
// CHECK-SAME: %[[Y:.*]]: tensor<1x4xf32> {dist.batch_dim = 0 : i64, onnx.name = "y"}, %[[Z:.*]]: tensor<5xf32> {onnx.name = "z"}) -> (tensor<1x4xf32> {dist.batch_dim = 0 : i64}, tensor<5xf32>)
// CHECK: %[[A:.*]] = dist.recv on @mesh from 0
// CHECK: %[[B:.*]] = onnx.Add(%[[A]], %[[Y]])
// CHECK: return %[[B]], %[[Z]]

// -----

// Data parallel 3:1 over a batch in dimension 1 of the input ([L, N, E], as
// sequence-first exports give it; the batch analysis finds it there, as
// ReduceSum mixes dimension 0), and a Resize to `sizes`: each device gets
// its samples' slice of dimension 1, tagged dist.batch_dim = 1, and its
// Resize the sizes of its own rows.
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [3.0, 1.0], data = 2, devices = [0, 1], recompute = false, tensor = 1>]>} {
func.func @main(%x: tensor<5x4x6xf32> {onnx.name = "x"}) -> (tensor<4x1x2x12xf32> {onnx.name = "y"}) {
  %a = onnx.Constant dense<[0]> : tensor<1xi64>
  %s = onnx.ReduceSum(%x, %a) {dist.stage_id = 0 : i64, keepdims = 0 : i64} : (tensor<5x4x6xf32>, tensor<1xi64>) -> tensor<4x6xf32>
  %shape = onnx.Constant dense<[4, 1, 1, 6]> : tensor<4xi64>
  %r = onnx.Reshape(%s, %shape) {dist.stage_id = 0 : i64} : (tensor<4x6xf32>, tensor<4xi64>) -> tensor<4x1x1x6xf32>
  %sizes = onnx.Constant dense<[4, 1, 2, 12]> : tensor<4xi64>
  %y = onnx.Resize(%r) sizes(%sizes) {dist.stage_id = 0 : i64, mode = "linear"} : (tensor<4x1x1x6xf32>, tensor<4xi64>) -> tensor<4x1x2x12xf32>
  return %y : tensor<4x1x2x12xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK-SAME: %arg0: tensor<5x4x6xf32> {dist.batch_dim = 1 : i64, onnx.name = "x"})
// CHECK: onnx.Slice{{.*}} -> tensor<5x3x6xf32>
// CHECK: %[[S:.*]] = onnx.Constant dense<[3, 1, 2, 12]> : tensor<4xi64>
// CHECK: onnx.Resize(%{{.*}}) sizes(%[[S]]) {{.*}} -> tensor<3x1x2x12xf32>
// CHECK-LABEL: func.func @device_1(
// CHECK: onnx.Slice{{.*}} -> tensor<5x1x6xf32>
// CHECK: onnx.Resize{{.*}} -> tensor<1x1x2x12xf32>

// -----

// A split output read by an unsharded op is all-gathered first; a gather
// along an inner dimension goes through a transpose (the collective gathers
// contiguous blocks).
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1], recompute = false, tensor = 2>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = onnx.Relu(%x) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [3, 1]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = onnx.Softmax(%e) {dist.stage_id = 0 : i64, axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK: onnx.Slice{{.*}} -> tensor<2x3xf32>
// CHECK: %[[L:.*]] = onnx.Relu{{.*}} -> tensor<2x3xf32>
// CHECK: %[[T:.*]] = onnx.Transpose(%[[L]]) {perm = array<i64: 1, 0>} {{.*}} -> tensor<3x2xf32>
// CHECK: %[[G:.*]] = dist.all_gather %[[T]] on @mesh [0, 1] dim 0 sizes [3, 1] : tensor<3x2xf32> -> tensor<4x2xf32>
// CHECK: onnx.Transpose(%[[G]]) {perm = array<i64: 1, 0>} {{.*}} -> tensor<2x4xf32>
// CHECK: onnx.Softmax
// CHECK-LABEL: func.func @device_1(
// CHECK: onnx.Relu{{.*}} -> tensor<2x1xf32>
// CHECK: dist.all_gather {{.*}} sizes [3, 1] : tensor<1x2xf32> -> tensor<4x2xf32>

// -----

// The global form as a user's pass left it: %h could travel split (stage 1
// wants it split as stage 0 leaves it), but its transfer says replicated, so
// stage 0 gathers it and sends it whole.
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>,
    #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">, #dist.device<3, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h = dist.stage 0 on @mesh [0, 1] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Relu(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = dist.transfer %h : tensor<2x4xf32> from #dist.sharding<@mesh, [0, 1]> to #dist.sharding<@mesh, [2, 3]>
  %y = dist.stage 1 on @mesh [2, 3] ins(%t) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Tanh(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2], collective = all_gather>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK: onnx.Relu{{.*}} -> tensor<2x2xf32>
// CHECK: dist.all_gather {{.*}} on @mesh [0, 1] dim 0 sizes [2, 2]
// CHECK: %[[W:.*]] = onnx.Transpose{{.*}} -> tensor<2x4xf32>
// CHECK: dist.send %[[W]] on @mesh to 2 tag 0 : tensor<2x4xf32>
// CHECK-LABEL: func.func @device_2(
// CHECK: dist.recv on @mesh from 0 tag 0 : tensor<2x4xf32>
// CHECK: onnx.Slice

// -----

// The same global form with a split transfer whose source is not the split
// the op leaves (3 + 1 for 2 + 2).
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>,
    #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">, #dist.device<3, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h = dist.stage 0 on @mesh [0, 1] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    // expected-error @+1 {{the dist.transfer of a result of op 'Relu' leaves split otherwise than the op's sharding leaves it}}
    %r = onnx.Relu(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
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

// -----

// A value that travels split to stage 1 and replicated to stage 2: a split
// travels to one stage.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>, #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>, #dist.stage_plan<devices = [4], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">, #dist.device<3, "unknown">, #dist.device<4, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h = dist.stage 0 on @mesh [0, 1] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Relu(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{a value travels split along one dimension, to one later stage, and is no graph output}}
  %t1 = dist.transfer %h : tensor<2x4xf32> from #dist.sharding<@mesh, [0, 1] split 1 sizes [2, 2]> to #dist.sharding<@mesh, [2, 3] split 1 sizes [2, 2]>
  %g = dist.stage 1 on @mesh [2, 3] ins(%t1) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Tanh(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2], collective = all_gather>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t2 = dist.transfer %g : tensor<2x4xf32> from #dist.sharding<@mesh, [2, 3]> to #dist.sharding<@mesh, [4]>
  %t3 = dist.transfer %h : tensor<2x4xf32> from #dist.sharding<@mesh, [0, 1]> to #dist.sharding<@mesh, [4]>
  %y = dist.stage 2 on @mesh [4] ins(%t2, %t3) {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>):
    %r = onnx.Add(%a, %b) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}

// -----

// A split transfer that gives a device nothing.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0, 1], data = 1, tensor = 2>, #dist.stage_plan<devices = [2, 3], data = 1, tensor = 2>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">, #dist.device<3, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h = dist.stage 0 on @mesh [0, 1] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Relu(%a) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 2]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{the target of a dist.transfer gives a device no index of its split}}
  %t = dist.transfer %h : tensor<2x4xf32> from #dist.sharding<@mesh, [0, 1] split 1 sizes [2, 2]> to #dist.sharding<@mesh, [2, 3] split 1 sizes [4, 0]>
  %y = dist.stage 1 on @mesh [2, 3] ins(%t) {
  ^bb0(%a: tensor<2x4xf32>):
    dist.yield %a : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}

// -----

// One transfer read by two stages.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>, #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">, #dist.device<2, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %h = dist.stage 0 on @mesh [0] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Relu(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{dist.transfer: its users lie in stages 1 and 2; one transfer per receiving stage}}
  %t = dist.transfer %h : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [2]>
  %y = dist.stage 1 on @mesh [1] ins(%t) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Tanh(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %z = dist.stage 2 on @mesh [2] ins(%t) {
  ^bb0(%a: tensor<2x4xf32>):
    %r = onnx.Sigmoid(%a) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y, %z : tensor<2x4xf32>, tensor<2x4xf32>
}
}

// -----

// A global form with an op outside every stage.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h = dist.stage 0 on @mesh [0] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    dist.yield %a : tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{op 'Relu' is outside every dist.stage: the partition takes the global form (hetpar-dist-global-form)}}
  %e = onnx.Relu(%h) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %e : tensor<2x4xf32>
}
}

// -----

// A mean's partial results do not combine elementwise (local means divide by
// the local count): its rule keeps the reduced axis whole, so a plan that
// splits it is refused, by the rule the search reads too.
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1], recompute = false, tensor = 2>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x1xf32> {
  %a = onnx.Constant dense<[1]> : tensor<1xi64>
  // expected-error @+1 {{partition: sharding of 'ReduceMean#0': dim -1 splits a contraction, but the op has none (ReduceMean op's rule: ([i, j], [_]) -> ([i, _]) {i=2, j=4 whole})}}
  %m = onnx.ReduceMean(%x, %a) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = -1, parts = [2, 2], collective = all_reduce>} : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return %m : tensor<2x1xf32>
}
}

// -----

module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1], recompute = false, tensor = 2>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{the parts of op 'Relu' add up to 5 but the factor they split has 4}}
  %e = onnx.Relu(%x) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [3, 2]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %e : tensor<2x4xf32>
}
}

// -----

// A sequence-first attention's rows [L*N, E] (N = 4 the batch, inside L's
// rows), microbatched: L split over the group would leave a microbatch's
// rows no block of its parts; refused (the search never plans it).
module attributes {dist.plan = #dist.plan<microbatches = 2, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1], recompute = false, tensor = 2>]>} {
func.func @main(%x: tensor<4x5x16xf32>) -> tensor<20x16xf32> {
  %t = onnx.Transpose(%x) {dist.stage_id = 0 : i64, perm = array<i64: 1, 0, 2>} : (tensor<4x5x16xf32>) -> tensor<5x4x16xf32>
  %s = onnx.Constant {dist.stage_id = 0 : i64} dense<[20, 16]> : tensor<2xi64>
  // expected-error @+1 {{partition: op 'Reshape' splits result 0's batch dimension by tensor parallelism}}
  %r = onnx.Reshape(%t, %s) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 0, parts = [3, 2], collective = all_gather>} : (tensor<5x4x16xf32>, tensor<2xi64>) -> tensor<20x16xf32>
  return %r : tensor<20x16xf32>
}
}

// -----

// expected-error @+1 {{stage 0: a replica's share of a microbatch of 2 samples is 1.50, not a positive whole number}}
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [3.0, 1.0], data = 2, devices = [0, 1], recompute = false, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %e = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %e : tensor<2x4xf32>
}
}

// -----

// expected-error @+1 {{the partition makes inference programs; the plan's mode is 'training'}}
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = training, schedule = "1f1b",
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0], recompute = false, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}
}

// -----

// A depthwise Conv (group 4) split along its groups 3 + 1: each device runs a
// grouped convolution of its own groups, with their kernels and biases.
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1], recompute = false, tensor = 2>]>} {
func.func @main(%x: tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %w = onnx.Constant dense<[[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]> : tensor<4x1x1x1xf32>
  %b = onnx.Constant dense<[0.5, 1.5, 2.5, 3.5]> : tensor<4xf32>
  %y = onnx.Conv(%x, %w, %b) {group = 4 : i64, dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [3, 1], collective = all_gather>} : (tensor<1x4x3x3xf32>, tensor<4x1x1x1xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  return %y : tensor<1x4x3x3xf32>
}
}
// Nothing splits the batch, so it is not followed. The unnamed input gets
// the name code generation gives it.
// CHECK-LABEL: func.func @device_0(
// CHECK-SAME: %arg0: tensor<1x4x3x3xf32> {onnx.name = "input_0"}) -> tensor<1x4x3x3xf32>
// CHECK: onnx.Slice{{.*}} -> tensor<1x3x3x3xf32>
// CHECK: onnx.Constant dense<{{\[}}{{\[}}{{\[}}[1.000000e+00]]], {{\[}}{{\[}}[2.000000e+00]]], {{\[}}{{\[}}[3.000000e+00]]]]> : tensor<3x1x1x1xf32>
// CHECK: onnx.Constant dense<[5.000000e-01, 1.500000e+00, 2.500000e+00]> : tensor<3xf32>
// CHECK: onnx.Conv({{.*}}) {group = 3 : i64} : (tensor<1x3x3x3xf32>, tensor<3x1x1x1xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
// CHECK: dist.all_gather {{.*}} dim 1 sizes [3, 1]
// CHECK-LABEL: func.func @device_1(
// CHECK: onnx.Constant dense<4.000000e+00> : tensor<1x1x1x1xf32>
// CHECK: onnx.Constant dense<3.500000e+00> : tensor<1xf32>
// CHECK: onnx.Conv({{.*}}) : (tensor<1x1x3x3xf32>, tensor<1x1x1x1xf32>, tensor<1xf32>) -> tensor<1x1x3x3xf32>

// -----

// nn.MultiheadAttention's layouts under data parallelism 1:1 (L=3, N=2, H=2,
// E=4): the batch N is the outer part of N*H after the head split, and the
// inner part of the L*N rows of the Gemm after the merge, where each device
// keeps one sample's row in each of the 3 chunks.
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [1.0, 1.0], data = 2, devices = [0, 1], recompute = false, tensor = 1>]>} {
func.func @main(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %xs = onnx.Transpose(%x) {perm = array<i64: 1, 0, 2>, dist.stage_id = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %s1 = onnx.Constant dense<[3, 4, 2]> : tensor<3xi64>
  %h = onnx.Reshape(%xs, %s1) {dist.stage_id = 0 : i64} : (tensor<3x2x4xf32>, tensor<3xi64>) -> tensor<3x4x2xf32>
  %s2 = onnx.Constant dense<[6, 4]> : tensor<2xi64>
  %r = onnx.Reshape(%h, %s2) {dist.stage_id = 0 : i64} : (tensor<3x4x2xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %w = onnx.Constant dense<1.0> : tensor<4x4xf32>
  %g = onnx.Gemm(%r, %w) {transB = 1 : i64, dist.stage_id = 0 : i64} : (tensor<6x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>
  %s3 = onnx.Constant dense<[3, 2, 4]> : tensor<3xi64>
  %o = onnx.Reshape(%g, %s3) {dist.stage_id = 0 : i64} : (tensor<6x4xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
  %y = onnx.Transpose(%o) {perm = array<i64: 1, 0, 2>, dist.stage_id = 0 : i64} : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
}
// CHECK-LABEL: func.func @device_0(
// CHECK-SAME: tensor<2x3x4xf32> {dist.batch_dim = 0 : i64})
// CHECK: onnx.Slice{{.*}} -> tensor<1x3x4xf32>
// CHECK: onnx.Transpose{{.*}} -> tensor<3x1x4xf32>
// CHECK: onnx.Constant dense<[3, 2, 2]> : tensor<3xi64>
// CHECK: onnx.Reshape{{.*}} -> tensor<3x2x2xf32>
// CHECK: onnx.Constant dense<[3, 4]> : tensor<2xi64>
// CHECK: onnx.Reshape{{.*}} -> tensor<3x4xf32>
// CHECK: onnx.Gemm{{.*}} -> tensor<3x4xf32>
// CHECK: onnx.Constant dense<[3, 1, 4]> : tensor<3xi64>
// CHECK: onnx.Reshape{{.*}} -> tensor<3x1x4xf32>
// CHECK: onnx.Transpose{{.*}} -> tensor<1x3x4xf32>
// CHECK: dist.recv on @mesh from 1
// CHECK: onnx.Concat

// -----

// The global form given directly: an op with regions inside a stage.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">]
func.func @main(%c: tensor<i1>, %x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %y = dist.stage 0 on @mesh [0] ins(%c, %x) {
  ^bb0(%a: tensor<i1>, %b: tensor<4x3xf32>):
    // expected-error @+1 {{op 'If' has regions, which the partition does not split}}
    %0 = onnx.Generic "If"(%a) attributes {attrs = {}, domain = "", region_names = ["then_branch", "else_branch"], version = 17 : i64} bodies {
      onnx.Yield %b : tensor<4x3xf32>
    }, {
      onnx.Yield %b : tensor<4x3xf32>
    } : (tensor<i1>) -> tensor<4x3xf32>
    dist.yield %0 : tensor<4x3xf32>
  } : (tensor<i1>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
}

// -----

// The global form given directly: stage 0 sends a constant of its own.
// CHECK-LABEL: func.func @device_0(
// CHECK: dist.send %{{.*}} on @mesh to 1 tag
// CHECK: dist.send %{{.*}} on @mesh to 1 tag
// CHECK-LABEL: func.func @device_1(
// CHECK: dist.recv on @mesh from 0
// CHECK: dist.recv on @mesh from 0
// CHECK: onnx.Mul
// CHECK-NOT: dist.stage_id
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h:2 = dist.stage 0 on @mesh [0] ins(%x) {
  ^bb0(%a: tensor<2x4xf32>):
    %c = onnx.Constant dense<2.0> : tensor<2x4xf32>
    %r = onnx.Add(%a, %c) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r, %c : tensor<2x4xf32>, tensor<2x4xf32>
  } : (tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
  %t = dist.transfer %h#0 : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
  %t2 = dist.transfer %h#1 : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
  %y = dist.stage 1 on @mesh [1] ins(%t, %t2) {
  ^bb0(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>):
    %r = onnx.Mul(%a, %b) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    dist.yield %r : tensor<2x4xf32>
  } : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
}

// -----

// A value a tensor-parallel stage leaves split (Relu's columns 4:4 on
// devices 1 and 2) goes whole to a stage of one device, which only device 1
// sends to. Device 2 still computes its columns and joins the all-gather:
// it is a collective of the whole group (without device 2's part, device 1
// would wait for it forever; the exchange check refused the program).
// CHECK-LABEL: func.func @device_1(
// CHECK: onnx.Relu
// CHECK: dist.all_gather %{{.*}} on @mesh [1, 2] dim 0 sizes [4, 4]
// CHECK: dist.send %{{.*}} on @mesh to 0 tag 0 : tensor<4x8xf32>
// CHECK-LABEL: func.func @device_2(
// CHECK: onnx.Relu
// CHECK: dist.all_gather %{{.*}} on @mesh [1, 2] dim 0 sizes [4, 4]
// CHECK-NOT: dist.send
// CHECK: return
// CHECK-LABEL: func.func @device_0(
// CHECK: dist.recv on @mesh from 1 tag 0 : tensor<4x8xf32>
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [1, 2], data = 1, tensor = 2>,
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<4x6xf32> {onnx.name = "x"}) -> (tensor<4x3xf32> {onnx.name = "y"}) {
  %w1 = onnx.Constant dense<1.0> : tensor<6x8xf32>
  %w2 = onnx.Constant dense<1.0> : tensor<8x3xf32>
  %h = onnx.MatMul(%x, %w1) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 4]>} : (tensor<4x6xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
  %r = onnx.Relu(%h) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 4]>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = onnx.MatMul(%r, %w2) {dist.stage_id = 1 : i64} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
}
