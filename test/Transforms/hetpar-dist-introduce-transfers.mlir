// RUN: hetpar-opt %s --split-input-file --hetpar-dist-introduce-transfers --verify-diagnostics | FileCheck %s

// Two stages: stage 0 is 2 data-parallel replicas of 2 tensor-parallel
// devices, stage 1 one replica of 2. %h leaves stage 0 split 4 + 4 along its
// columns and every user in stage 1 wants it split 2 + 6 along them: its
// transfer is split at both ends. %g is replicated where it leaves. The
// transfers follow their producers; the users in stage 1 read them; the
// constant and the graph input need none.
module attributes {dist.plan = #dist.plan<microbatches = 1, mode = inference, schedule = gpipe, stages = [
    #dist.stage_plan<devices = [0, 1, 2, 3], data = 2, tensor = 2, kinds = ["A100", "A100", "T4", "T4"]>,
    #dist.stage_plan<devices = [4, 5], data = 1, tensor = 2, kinds = ["L4", "L4"]>]>} {
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<1.0> : tensor<2x8xf32>
  %h = onnx.MatMul(%x, %w) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [4, 4]>} : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %g = onnx.Sigmoid(%h) {dist.stage_id = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = onnx.Relu(%h) {dist.stage_id = 1 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 6]>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = onnx.Add(%r, %g) {dist.stage_id = 1 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [2, 6], collective = all_gather>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}
// CHECK: dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">, #dist.device<2, "T4">, #dist.device<3, "T4">, #dist.device<4, "L4">, #dist.device<5, "L4">]
// CHECK-LABEL: func.func @main(
// CHECK: %[[W:.*]] = onnx.Constant
// CHECK-NEXT: %[[H:.*]] = onnx.MatMul(%arg0, %[[W]]) {{.*}}dist.stage_id = 0
// CHECK-NEXT: %[[TH:.*]] = dist.transfer %[[H]] : tensor<4x8xf32> from #dist.sharding<@mesh, [0, 1, 2, 3] replicas 2 split 1 sizes [4, 4]> to #dist.sharding<@mesh, [4, 5] split 1 sizes [2, 6]>
// CHECK-NEXT: %[[G:.*]] = onnx.Sigmoid(%[[H]]) {dist.stage_id = 0
// CHECK-NEXT: %[[TG:.*]] = dist.transfer %[[G]] : tensor<4x8xf32> from #dist.sharding<@mesh, [0, 1, 2, 3] replicas 2> to #dist.sharding<@mesh, [4, 5]>
// CHECK-NEXT: %[[R:.*]] = onnx.Relu(%[[TH]])
// CHECK-NEXT: %[[Y:.*]] = onnx.Add(%[[R]], %[[TG]])
// CHECK-NEXT: return %[[Y]]

// -----

// A value that stages 1 and 2 read gets a transfer for each, replicated; a
// graph output of stage 0 needs none; a mesh the module has stays.
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [2], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "H100">, #dist.device<1, "H100">, #dist.device<2, "V100">]
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %b = onnx.Tanh(%a) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = onnx.Add(%a, %b) {dist.stage_id = 2 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c, %a : tensor<2x4xf32>, tensor<2x4xf32>
}
}
// CHECK: dist.mesh @mesh devices [#dist.device<0, "H100">, #dist.device<1, "H100">, #dist.device<2, "V100">]
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %[[A:.*]] = onnx.Relu(%arg0)
// CHECK-NEXT: %[[T01:.*]] = dist.transfer %[[A]] : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
// CHECK-NEXT: %[[T02:.*]] = dist.transfer %[[A]] : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [2]>
// CHECK-NEXT: %[[B:.*]] = onnx.Tanh(%[[T01]])
// CHECK-NEXT: %[[T12:.*]] = dist.transfer %[[B]] : tensor<2x4xf32> from #dist.sharding<@mesh, [1]> to #dist.sharding<@mesh, [2]>
// CHECK-NEXT: %[[C:.*]] = onnx.Add(%[[T02]], %[[T12]])
// CHECK-NEXT: return %[[C]], %[[A]]

// -----

// A user's transfer is kept, and no other is added (hetpar-dist-apply-plan
// then refuses the Add's read of %a).
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = dist.transfer %a : tensor<2x4xf32> from #dist.sharding<@mesh, [0]> to #dist.sharding<@mesh, [1]>
  %b = onnx.Tanh(%t) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = onnx.Add(%a, %b) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}
}
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: onnx.Relu
// CHECK-NEXT: dist.transfer
// CHECK-NEXT: onnx.Tanh
// CHECK-NEXT: onnx.Add

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

// Every op but constants needs its stage before transfers can be placed.
module attributes {dist.plan = #dist.plan<stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{op 'Relu' has no dist.stage_id}}
  %e = onnx.Relu(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %e : tensor<2x4xf32>
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

// A constant is copied into each stage that reads it, with or without a
// dist.stage_id: no transfer.
module attributes {dist.plan = #dist.plan<stages = [
    #dist.stage_plan<devices = [0], data = 1, tensor = 1>,
    #dist.stage_plan<devices = [1], data = 1, tensor = 1>]>} {
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = onnx.Constant {dist.stage_id = 0 : i64} dense<1.0> : tensor<1x4xf32>
  %a = onnx.Add(%x, %w) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %b = onnx.Add(%a, %w) {dist.stage_id = 1 : i64} : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  return %b : tensor<2x4xf32>
}
}
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: %[[W:.*]] = onnx.Constant
// CHECK-NEXT: %[[A:.*]] = onnx.Add(%arg0, %[[W]])
// CHECK-NEXT: %[[T:.*]] = dist.transfer %[[A]]
// CHECK-NEXT: onnx.Add(%[[T]], %[[W]])
