// OneHot of int64 indices [2, 3] into 5 classes along axis 1: a [2, 5, 3]
// result, off 0 and on 1 (test/Codegen/nvcc-build.test compiles it).
func.func @main(%i: tensor<2x3xi64> {onnx.name = "indices"}) -> (tensor<2x5x3xf32> {onnx.name = "y"}) {
  %depth = onnx.Constant dense<5> : tensor<i64>
  %values = onnx.Constant dense<[0.0, 1.0]> : tensor<2xf32>
  %0 = onnx.OneHot(%i, %depth, %values) {axis = 1 : i64} : (tensor<2x3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<2x5x3xf32> loc("one_hot")
  return %0 : tensor<2x5x3xf32>
}
