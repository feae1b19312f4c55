// The Megatron MLP of issue 6 partitioned by hand (what the partitioner will
// produce): Y = (X[4,2] x W1[2,32]) x W2[32,8] with every weight 1.0 and
// X = 1.0 over 4 devices. W1 is split by columns (8 each: column-parallel),
// W2 by rows (row-parallel); each device computes 4x8 partial sums of
// 2 * 8 = 16 and the all-reduce over the group adds them: 4 * 16 = 64.
// Used by test/Codegen/megatron-mlp.test.
dist.mesh @m devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "A100-SXM4-80GB">,
                      #dist.device<2, "V100-SXM2-32GB">, #dist.device<3, "V100-SXM2-32GB">]
func.func @device_0(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"})
    attributes {dist.device = 0 : i64} {
  %w1 = onnx.Constant dense<1.0> : tensor<2x8xf32>
  %w2 = onnx.Constant dense<1.0> : tensor<8x8xf32>
  %h = onnx.MatMul(%x, %w1) : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %p = onnx.MatMul(%h, %w2) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = dist.all_reduce %p on @m [0, 1, 2, 3] reduction sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @device_1(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"})
    attributes {dist.device = 1 : i64} {
  %w1 = onnx.Constant dense<1.0> : tensor<2x8xf32>
  %w2 = onnx.Constant dense<1.0> : tensor<8x8xf32>
  %h = onnx.MatMul(%x, %w1) : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %p = onnx.MatMul(%h, %w2) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = dist.all_reduce %p on @m [0, 1, 2, 3] reduction sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @device_2(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"})
    attributes {dist.device = 2 : i64} {
  %w1 = onnx.Constant dense<1.0> : tensor<2x8xf32>
  %w2 = onnx.Constant dense<1.0> : tensor<8x8xf32>
  %h = onnx.MatMul(%x, %w1) : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %p = onnx.MatMul(%h, %w2) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = dist.all_reduce %p on @m [0, 1, 2, 3] reduction sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @device_3(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<4x8xf32> {onnx.name = "y"})
    attributes {dist.device = 3 : i64} {
  %w1 = onnx.Constant dense<1.0> : tensor<2x8xf32>
  %w2 = onnx.Constant dense<1.0> : tensor<8x8xf32>
  %h = onnx.MatMul(%x, %w1) : (tensor<4x2xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %p = onnx.MatMul(%h, %w2) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = dist.all_reduce %p on @m [0, 1, 2, 3] reduction sum : tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
