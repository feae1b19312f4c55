// A 3-D grouped convolution with a bias, then 3-D average pooling
// (test/Codegen/nvcc-build.test): hp_conv_nd_launch and hp_pool_launch, cuDNN's
// N-d convolution and pooling on the GPU.
func.func @main(%x: tensor<2x4x4x5x3xf32> {onnx.name = "x"}) -> (tensor<2x6x2x1x1xf32> {onnx.name = "y"}) {
  %w = onnx.Constant dense<1.0> : tensor<6x2x3x2x2xf32>
  %b = onnx.Constant dense<0.5> : tensor<6xf32>
  %0 = onnx.Conv(%x, %w, %b) {group = 2 : i64, strides = array<i64: 1, 2, 1>, pads = array<i64: 1, 0, 1, 1, 1, 0>, dilations = array<i64: 1, 1, 2>} : (tensor<2x4x4x5x3xf32>, tensor<6x2x3x2x2xf32>, tensor<6xf32>) -> tensor<2x6x4x3x2xf32> loc("conv3d")
  %1 = onnx.AveragePool(%0) {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>} : (tensor<2x6x4x3x2xf32>) -> tensor<2x6x2x1x1xf32> loc("pool3d")
  return %1 : tensor<2x6x2x1x1xf32>
}
