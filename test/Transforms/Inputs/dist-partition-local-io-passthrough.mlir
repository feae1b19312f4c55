// A pipeline's training step (local-io over two stages) whose graph returns
// an input as it is: refused, since the loss attaches to what the last stage
// computes (a run of hetpar-dist-partition.mlir).
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, schedule = "1f1b",
    stages = [#dist.stage_plan<data = 1, devices = [0], tensor = 1>,
              #dist.stage_plan<data = 1, devices = [1], tensor = 1>]>} {
// expected-error @+1 {{partition: a pipeline's training step (local-io over 2 stages) returns what the last stage computes, where the loss attaches; graph output 1 is a graph input or a constant returned as it is}}
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = onnx.Relu(%a) {dist.stage_id = 1 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %b, %x : tensor<4x2xf32>, tensor<4x2xf32>
}
}
