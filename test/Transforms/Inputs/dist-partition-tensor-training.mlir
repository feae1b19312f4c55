// A training plan with tensor parallelism over two devices, 3 + 1 of the
// hidden dimension of 4 (hetpar-dist-partition.mlir's TRAIN checks): a
// column-parallel Gemm, a split Relu, a row-parallel Gemm whose bias is added
// once, and a parameter that two ops read in different layouts. The labels
// the loss will add join the graph inputs the module lists.
module attributes {hetpar.training_labels = #dist.graph_input<name = "labels", type = tensor<2x4xf32>, batch_dim = 0>,
    dist.plan = #dist.plan<batch = 2, microbatches = 1, mode = training, schedule = "1f1b",
    stages = [#dist.stage_plan<batch_shares = [1.0], data = 1, devices = [0, 1], tensor = 2,
               kinds = ["H100-PCIe-80GB", "L4"]>]>} {
func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"}) -> (tensor<2x4xf32> {onnx.name = "y"}) {
  %w1 = onnx.Constant {onnx.initializer = "w1"} dense<1.0> : tensor<4x3xf32>
  %b1 = onnx.Constant {onnx.initializer = "b1"} dense<0.5> : tensor<4xf32>
  %w2 = onnx.Constant {onnx.initializer = "w2"} dense<2.0> : tensor<4x4xf32>
  %b2 = onnx.Constant {onnx.initializer = "b2"} dense<0.25> : tensor<4xf32>
  %h = onnx.Gemm(%x, %w1, %b1) {transB = 1 : i64, dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [3, 1]>} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = onnx.Relu(%h) {dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = 1, parts = [3, 1]>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = onnx.Gemm(%r, %w2, %b2) {transB = 1 : i64, dist.stage_id = 0 : i64, dist.op_sharding = #dist.op_sharding<dim = -1, parts = [3, 1], collective = all_reduce>} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %z = onnx.MatMul(%y, %w2) {dist.stage_id = 0 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %z : tensor<2x4xf32>
}
}
