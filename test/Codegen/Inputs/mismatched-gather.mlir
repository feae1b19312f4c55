// An uneven all-gather of 10 elements whose two devices disagree on the
// per-member sizes (6 + 4 against 5 + 5): the same total, so only the
// per-member counts tell. Used by test/Codegen/no-hangs.test.
dist.mesh @m devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "V100-SXM2-32GB">]
func.func @device_0(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<10xf32> {onnx.name = "y"})
    attributes {dist.device = 0 : i64} {
  %p = onnx.Constant dense<1.0> : tensor<6xf32>
  %y = dist.all_gather %p on @m [0, 1] dim 0 sizes [6, 4] : tensor<6xf32> -> tensor<10xf32>
  return %y : tensor<10xf32>
}
func.func @device_1(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<10xf32> {onnx.name = "y"})
    attributes {dist.device = 1 : i64} {
  %p = onnx.Constant dense<1.0> : tensor<5xf32>
  %y = dist.all_gather %p on @m [0, 1] dim 0 sizes [5, 5] : tensor<5xf32> -> tensor<10xf32>
  return %y : tensor<10xf32>
}
