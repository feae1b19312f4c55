// Gemms with a bias row C [N] on operands that are not constants, so no
// packing (test/Codegen/emit-device-source.mlir).
func.func @main(%a: tensor<2x4xf32> {onnx.name = "a"}, %at: tensor<4x2xf32> {onnx.name = "at"}, %b: tensor<4x3xf32> {onnx.name = "b"}, %c: tensor<3xf32> {onnx.name = "c"}) -> (tensor<2x3xf32> {onnx.name = "y"}, tensor<2x3xf32> {onnx.name = "z"}) {
  %0 = onnx.Gemm(%a, %b, %c) : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("gemm")
  %1 = onnx.Gemm(%at, %b, %c) {transA = 1 : i64, beta = 0.5 : f32} : (tensor<4x2xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("gemm_ta")
  return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
