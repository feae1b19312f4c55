// A training plan's forward graph with local-io (hetpar-dist-partition.mlir's
// LOCAL checks): data parallelism 5:3 over the batch of 8.
module attributes {dist.plan = #dist.plan<batch = 8, microbatches = 1, mode = training, schedule = "1f1b",
    stages = [#dist.stage_plan<batch_shares = [5.0, 3.0], data = 2, devices = [0, 1], tensor = 1,
               kinds = ["H100-PCIe-80GB", "L4"]>]>} {
func.func @main(%x: tensor<8x2xf32> {onnx.name = "x"}) -> (tensor<8x3xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<1.0> : tensor<2x3xf32>
  %y = onnx.MatMul(%x, %w) {dist.stage_id = 0 : i64} : (tensor<8x2xf32>, tensor<2x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
}
