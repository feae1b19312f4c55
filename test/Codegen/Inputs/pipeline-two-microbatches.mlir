// Two pipeline stages over 2 microbatches of a batch of 8, the first stage
// data parallel 3:1 over devices 4 and 5, the second on device 7:
// y = Relu(x) x W with W[6, 3] all 2.0. Written as a user would before
// partitioning it themselves (hetpar-opt --hetpar-dist-global-form
// --hetpar-dist-partition); used by test/Codegen/hand-partitioned-pipeline.test.
module attributes {dist.plan = #dist.plan<microbatches = 2, mode = inference, schedule = gpipe,
    stages = [#dist.stage_plan<batch_shares = [3.0, 1.0], data = 2, devices = [4, 5], recompute = false, tensor = 1>, #dist.stage_plan<batch_shares = [1.0], data = 1, devices = [7], recompute = false, tensor = 1>]>} {
func.func @main(%x: tensor<8x6xf32> {onnx.name = "x"}) -> (tensor<8x3xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<2.0> : tensor<6x3xf32>
  %e = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<8x6xf32>) -> tensor<8x6xf32>
  %y = onnx.MatMul(%e, %w) {dist.stage_id = 1 : i64} : (tensor<8x6xf32>, tensor<6x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
}
