// The loss gradients (ONNX Runtime's training ops), as reverse-mode autodiff
// produces them after a SoftmaxCrossEntropyLoss: each case's dX against
// PyTorch autograd (make_refs.py writes the inputs and the references).
// Results: the forward mean loss, then the gradients of
//   0 SCE mean, weight, ignore_index 1   1 SCE sum   2 SCE none, weight
//   3 NLL mean, weight, ignore_index 1   4 NLL none  5 NLL sum, int32 labels
// and the forward mean loss and gradient with every position ignored (NaN
// and zeros, as PyTorch gives).
func.func @main(%x: tensor<3x5x2xf32> {onnx.name = "x"},
                %l: tensor<3x2xi64> {onnx.name = "labels"},
                %l32: tensor<3x2xi32> {onnx.name = "labels32"},
                %w: tensor<5xf32> {onnx.name = "weight"},
                %dy: tensor<f32> {onnx.name = "dy"},
                %dyn: tensor<3x2xf32> {onnx.name = "dy_none"},
                %lign: tensor<3x2xi64> {onnx.name = "labels_ignored"})
    -> (tensor<f32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>,
        tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<f32>,
        tensor<3x5x2xf32>) {
  %loss, %lp = onnx.SoftmaxCrossEntropyLoss(%x, %l, %w) {ignore_index = 1 : i64} : (tensor<3x5x2xf32>, tensor<3x2xi64>, tensor<5xf32>) -> (tensor<f32>, tensor<3x5x2xf32>)
  %g0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %lp, %l, %w) {ignore_index = 1 : i64} : (tensor<f32>, tensor<3x5x2xf32>, tensor<3x2xi64>, tensor<5xf32>) -> tensor<3x5x2xf32>
  %g1 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %lp, %l) {reduction = "sum"} : (tensor<f32>, tensor<3x5x2xf32>, tensor<3x2xi64>) -> tensor<3x5x2xf32>
  %g2 = onnx.SoftmaxCrossEntropyLossGrad(%dyn, %lp, %l, %w) {reduction = "none"} : (tensor<3x2xf32>, tensor<3x5x2xf32>, tensor<3x2xi64>, tensor<5xf32>) -> tensor<3x5x2xf32>
  %g3 = onnx.NegativeLogLikelihoodLossGrad(%dy, %lp, %l, %w) {ignore_index = 1 : i64} : (tensor<f32>, tensor<3x5x2xf32>, tensor<3x2xi64>, tensor<5xf32>) -> tensor<3x5x2xf32>
  %g4 = onnx.NegativeLogLikelihoodLossGrad(%dyn, %lp, %l) {reduction = "none"} : (tensor<3x2xf32>, tensor<3x5x2xf32>, tensor<3x2xi64>) -> tensor<3x5x2xf32>
  %g5 = onnx.NegativeLogLikelihoodLossGrad(%dy, %lp, %l32) {reduction = "sum"} : (tensor<f32>, tensor<3x5x2xf32>, tensor<3x2xi32>) -> tensor<3x5x2xf32>
  %lossi, %lpi = onnx.SoftmaxCrossEntropyLoss(%x, %lign) {ignore_index = 1 : i64} : (tensor<3x5x2xf32>, tensor<3x2xi64>) -> (tensor<f32>, tensor<3x5x2xf32>)
  %g6 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %lpi, %lign) {ignore_index = 1 : i64} : (tensor<f32>, tensor<3x5x2xf32>, tensor<3x2xi64>) -> tensor<3x5x2xf32>
  return %loss, %g0, %g1, %g2, %g3, %g4, %g5, %lossi, %g6 : tensor<f32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<3x5x2xf32>, tensor<f32>, tensor<3x5x2xf32>
}
