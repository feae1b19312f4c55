// A pipeline's training step (local-io over two stages) whose graph returns
// an input and a constant as they are: the last stage takes the input
// (stageTakesInput) and returns both beside what it computes, so that the
// loss can attach to any output (a run of hetpar-dist-partition.mlir, the
// PASSTHROUGH checks).
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, schedule = "1f1b",
    stages = [#dist.stage_plan<data = 1, devices = [0], tensor = 1>,
              #dist.stage_plan<data = 1, devices = [1], tensor = 1>]>} {
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<2xf32>) {
  %c = onnx.Constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = onnx.Relu(%a) {dist.stage_id = 1 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %b, %x, %c : tensor<4x2xf32>, tensor<4x2xf32>, tensor<2xf32>
}
}

// -----

// An output that an earlier stage computes is refused: the loss attaches to
// the last stage's outputs.
module attributes {dist.plan = #dist.plan<batch = 4, microbatches = 1, mode = training, schedule = "1f1b",
    stages = [#dist.stage_plan<data = 1, devices = [0], tensor = 1>,
              #dist.stage_plan<data = 1, devices = [1], tensor = 1>]>} {
// expected-error @+1 {{partition: a pipeline's training step (local-io over 2 stages) returns what the last stage computes, where the loss attaches; graph output 1 is computed by stage 0}}
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %a = onnx.Relu(%x) {dist.stage_id = 0 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  %b = onnx.Relu(%a) {dist.stage_id = 1 : i64} : (tensor<4x2xf32>) -> tensor<4x2xf32>
  return %b, %a : tensor<4x2xf32>, tensor<4x2xf32>
}
}
