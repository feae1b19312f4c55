// A constant whose data is absent (a dense_resource without its blob): used by
// test/Codegen/emit-device-source.mlir.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = onnx.Constant dense_resource<w> : tensor<4xf32> loc("w")
  %0 = onnx.MatMul(%x, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %1 = onnx.Add(%x, %0) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
