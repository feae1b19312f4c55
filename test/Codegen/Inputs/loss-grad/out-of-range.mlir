// Labels outside [0, C) that are not ignore_index (undefined in ONNX): the
// kernels read the nearest class instead of out of bounds. Used by
// test/Codegen/loss-gradients.test.
func.func @main(%x: tensor<2x5xf32> {onnx.name = "x"},
                %l: tensor<2xi64> {onnx.name = "labels"})
    -> (tensor<2xf32>, tensor<2x5xf32>) {
  %dy = onnx.Constant dense<1.0> : tensor<2xf32>
  %0 = onnx.NegativeLogLikelihoodLoss(%x, %l) {reduction = "none", ignore_index = -1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> tensor<2xf32>
  %1 = onnx.NegativeLogLikelihoodLossGrad(%dy, %x, %l) {reduction = "none", ignore_index = -1 : i64} : (tensor<2xf32>, tensor<2x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  return %0, %1 : tensor<2xf32>, tensor<2x5xf32>
}
