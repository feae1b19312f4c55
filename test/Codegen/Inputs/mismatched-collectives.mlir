// Two devices that disagree: device 0 all-reduces 4 elements, device 1 8
// (what hetpar-dist-verify-exchanges rejects at compile time; the runtime's
// debug mode catches it too). Used by test/Codegen/no-hangs.test.
dist.mesh @m devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "V100-SXM2-32GB">]
func.func @device_0(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<4xf32> {onnx.name = "y"})
    attributes {dist.device = 0 : i64} {
  %f = onnx.Constant dense<1.0> : tensor<4xf32>
  %y = dist.all_reduce %f on @m [0, 1] reduction sum : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @device_1(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<2x4xf32> {onnx.name = "y"})
    attributes {dist.device = 1 : i64} {
  %y = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
