// LayerNorm prologues (test/Codegen/emit-device-source.mlir): the
// elementwise group that computes a LayerNormalization's X runs in the
// LayerNorm's kernel when the LayerNorm is X's first reader and every operand
// is laid out as X, one of X's rows or one element; otherwise the group
// keeps its kernel.
func.func @main(%a: tensor<2x3x4xf32> {onnx.name = "a"}, %b: tensor<2x3x4xf32> {onnx.name = "b"}, %c: tensor<2x1x4xf32> {onnx.name = "c"}) -> (tensor<2x3x4xf32> {onnx.name = "pre_norm"}, tensor<2x3x4xf32> {onnx.name = "read_first"}, tensor<2x3x4xf32> {onnx.name = "column"}) {
  %bias = onnx.Constant dense<[0.1, 0.2, 0.3, 0.4]> : tensor<4xf32>
  %scale = onnx.Constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %shift = onnx.Constant dense<0.5> : tensor<4xf32>
  // A pre-norm block: x = a + (b + bias) feeds the LayerNorm, then the next
  // residual Add reads x again: fused, x stored.
  %0 = onnx.Add(%b, %bias) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> loc("bias")
  %1 = onnx.Add(%a, %0) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("residual")
  %2 = onnx.LayerNormalization(%1, %scale, %shift) {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> loc("ln")
  %3 = onnx.Add(%2, %1) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("next_residual")
  // X read before the LayerNorm (Relu): the Add keeps its kernel.
  %4 = onnx.Add(%a, %b) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("read_add")
  %5 = onnx.Relu(%4) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("read_relu")
  %6 = onnx.LayerNormalization(%4, %scale, %shift) {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> loc("ln_read")
  %7 = onnx.Add(%5, %6) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("read_sum")
  // An operand broadcast along the middle dimension ([2, 1, 4]) is neither a
  // row nor X's layout: a kernel of its own.
  %8 = onnx.Add(%a, %c) : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32> loc("column_add")
  %9 = onnx.LayerNormalization(%8, %scale, %shift) {axis = -1 : i64} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32> loc("ln_column")
  return %3, %7, %9 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}
