// RUN: hetpar-opt %s --split-input-file --hetpar-dist-apply-plan --verify-diagnostics | FileCheck %s

// The inputs route values between stages through dist.transfer, as
// hetpar-dist-introduce-transfers (its own test) leaves them.

// Two stages: stage 0 is 2 data-parallel replicas of 2 tensor-parallel
// devices, stage 1 one replica of 2. The transfers move between the stages,
// in the order stage 1 reads them, and read stage 0's results. The constant
// and the graph input enter stage 0 as operands; the ops lose dist.stage_id
// and keep dist.op_sharding; the output leaves stage 1.
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe, stages = [
    #dist.stage_plan<devices = [0, 1, 2, 3], data = 2, tensor = 2, kinds = ["A100", "A100", "T4", "T4"]>,
    #dist.stage_plan<devices = [4, 5], data = 1, tensor = 2, kinds = ["L4", "L4"]>]>} {
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "T4">, #dist.device<3, "T4">, #dist.device<4, "L4">, #dist.device<5, "L4">]
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<1.0> : tensor<2x8xf32>
  %h = onnx.MatMul(%x, %w) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 4]>} : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %th = dist.transfer %h : tensor<4x8xf32> from #dist.sharding<@mesh, [0, 1, 2, 3] replicas 2 split 1 sizes [4, 4]> to #dist.sharding<@mesh, [4, 5] split 1 sizes [2, 6]>
  %g = onnx.Sigmoid(%h) {dist.stage_id = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %tg = dist.transfer %g : tensor<4x8xf32> from #dist.sharding<@mesh, [0, 1, 2, 3] replicas 2> to #dist.sharding<@mesh, [4, 5]>
  %r = onnx.Relu(%th) {dist.stage_id = 1 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 6]>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = onnx.Add(%r, %tg) {dist.stage_id = 1 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 6], collective = all_gather>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}
// CHECK-LABEL: func.func @main(
// CHECK: %[[W:.*]] = onnx.Constant
// CHECK: %[[S0:.*]]:2 = dist.stage 0 on @mesh [0, 1, 2, 3] ins(%arg0, %[[W]]) {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<2x8xf32>):
// CHECK-NEXT: %[[H:.*]] = onnx.MatMul(%[[A]], %[[B]]) {dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 4]>}
// CHECK-NEXT: %[[G:.*]] = onnx.Sigmoid(%[[H]]) :
// CHECK-NEXT: dist.yield %[[H]], %[[G]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT: } : (tensor<4x2xf32>, tensor<2x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK-NEXT: %[[T0:.*]] = dist.transfer %[[S0]]#0 : tensor<4x8xf32> from #dist.sharding<@mesh, [0, 1, 2, 3] replicas 2 split 1 sizes [4, 4]> to #dist.sharding<@mesh, [4, 5] split 1 sizes [2, 6]>
// CHECK-NEXT: %[[T1:.*]] = dist.transfer %[[S0]]#1 : tensor<4x8xf32> from #dist.sharding<@mesh, [0, 1, 2, 3] replicas 2> to #dist.sharding<@mesh, [4, 5]>
// CHECK-NEXT: %[[S1:.*]] = dist.stage 1 on @mesh [4, 5] ins(%[[T0]], %[[T1]]) {
// CHECK: onnx.Relu
// CHECK-NOT: dist.stage_id
// CHECK: dist.yield
// CHECK: return %[[S1]] : tensor<4x8xf32>

// -----

// A value that stages 1 and 2 read, through a transfer each; a graph output
// computed by stage 0 leaves it too.
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "A100">]
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t01 = dist.transfer %a : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
  %t02 = dist.transfer %a : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [2]>
  %b = onnx.Tanh(%t01) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t12 = dist.transfer %b : tensor<2x4xf32> from #dist.sharding<@mesh, [1]> to #dist.sharding<@mesh, [2]>
  %c = onnx.Add(%t02, %t12) {dist.stage_id = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c, %a : tensor<2x4xf32>, tensor<2x4xf32>
}
}
// CHECK: dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "A100">]
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @main(
// CHECK: %[[S0:.*]] = dist.stage 0 on @mesh [0] ins(%arg0)
// CHECK: %[[T01:.*]] = dist.transfer %[[S0]] : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
// CHECK: %[[S1:.*]] = dist.stage 1 on @mesh [1] ins(%[[T01]])
// CHECK: %[[T02:.*]] = dist.transfer %[[S0]] : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [2]>
// CHECK: %[[T12:.*]] = dist.transfer %[[S1]] : tensor<2x4xf32> from #dist.sharding<@mesh, [1]> to #dist.sharding<@mesh, [2]>
// CHECK: %[[S2:.*]] = dist.stage 2 on @mesh [2] ins(%[[T02]], %[[T12]])
// CHECK: return %[[S2]], %[[S0]]

// -----

// The batch, which the plan does not give, is the batch analysis's over the
// transfers too: 4 (dimension 0 of x and z), which 2 microbatches divide.
module attributes {dist.plan = #dist.plan<microbatches = 2, stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}, %z: tensor<4x2xf32> {onnx.name = "z"}) -> (tensor<4x3xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<1.0> : tensor<2x3xf32>
  %a = onnx.MatMul(%z, %w) {dist.stage_id = 0 : i64} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %t = dist.transfer %a : tensor<4x3xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
  %y = onnx.Add(%x, %t) {dist.stage_id = 1 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
}
// CHECK-LABEL: func.func @main(
// CHECK: %[[S0:.*]] = dist.stage 0 on @mesh [0] ins(%arg1,
// CHECK: %[[T:.*]] = dist.transfer %[[S0]]
// CHECK: dist.stage 1 on @mesh [1] ins(%arg0, %[[T]])

// -----

// One stage of two data-parallel devices: the mesh is made from the plan's
// devices, and the stage takes everything.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [3, 1], data = 2, tensor = 1, kinds = ["H100", "V100"]>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a : tensor<2x4xf32>
}
}
// CHECK: dist.mesh @mesh devices [#dist.device<3, "H100">, #dist.device<1, "V100">]
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %[[S:.*]] = dist.stage 0 on @mesh [3, 1] ins(%arg0)
// CHECK: return %[[S]]

// -----

module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{op 'Relu' has no dist.stage_id}}
  %e = onnx.Relu(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %e : tensor<2x4xf32>
}
}

// -----

module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = onnx.Relu(%x) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{op 'Tanh' in stage 0 uses a value of stage 1, which runs later}}
  %b = onnx.Tanh(%a) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}
}

// -----

// expected-error @+1 {{no plan on the module}}
module {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}
}

// -----

// An op with regions (its branches read values of other stages).
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>, #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
func.func @main(%c: tensor<i1>, %x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  // expected-error @+1 {{op 'If' has regions, which the partition does not split}}
  %0 = onnx.Generic "If"(%c) attributes {dist.stage_id = 1 : i64, attrs = {}, domain = "", region_names = ["then_branch", "else_branch"], version = 17 : i64} bodies {
    onnx.Yield %r : tensor<4x3xf32>
  }, {
    onnx.Yield %x : tensor<4x3xf32>
  } : (tensor<i1>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
}

// -----

// A value of stage 0 that stage 1 reads without a transfer.
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{op 'Tanh' in stage 1 reads a value of another stage without a dist.transfer (hetpar-dist-introduce-transfers makes them)}}
  %b = onnx.Tanh(%a) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}
}

// -----

// A transfer that a graph output reads (it belongs to no stage).
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{dist.transfer: its input must be computed in a stage and each of its users must be an op of a stage}}
  %t = dist.transfer %a : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
  %b = onnx.Tanh(%t) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %b, %t : tensor<2x4xf32>, tensor<2x4xf32>
}
}

// -----

// A transfer within one stage.
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{dist.transfer: it moves a value of stage 0 to stage 0, which does not run later}}
  %t = dist.transfer %a : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [0]>
  %b = onnx.Tanh(%t) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = onnx.Sigmoid(%b) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}
}
