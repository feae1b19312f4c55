// Device 0 all-reduces with device 1, which never joins (it only broadcasts
// within a group of its own, so it does start MPI): without a timeout device
// 0 would wait forever. Used by test/Codegen/no-hangs.test.
dist.mesh @m devices [#dist.device<0, "A100-SXM4-80GB">, #dist.device<1, "V100-SXM2-32GB">]
func.func @device_0(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<2x4xf32> {onnx.name = "y"})
    attributes {dist.device = 0 : i64} {
  %y = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
func.func @device_1(%x: tensor<2x4xf32> {onnx.name = "x"}) -> (tensor<2x4xf32> {onnx.name = "y"})
    attributes {dist.device = 1 : i64} {
  %y = dist.broadcast %x on @m [1] root 1 : tensor<2x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
