// GEMM epilogues (test/Codegen/emit-device-source.mlir): an elementwise
// chain that reads a Gemm's product alone, beside scalar constants, is the
// GEMM's epilogue functor; one that reads another tensor, or a product that
// is read twice, is not.
func.func @main(%a: tensor<2x4xf32> {onnx.name = "a"}, %b: tensor<4x3xf32> {onnx.name = "b"}, %c: tensor<3xf32> {onnx.name = "c"}, %r: tensor<2x3xf32> {onnx.name = "r"}) -> (tensor<1x2x3xf32> {onnx.name = "gelu"}, tensor<2x3xf32> {onnx.name = "relu"}, tensor<2x3xf32> {onnx.name = "residual"}, tensor<2x3xf32> {onnx.name = "twice"}, tensor<2x3xf32> {onnx.name = "product"}) {
  %sqrt2 = onnx.Constant dense<1.41421354> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %shape = onnx.Constant dense<[1, 2, 3]> : tensor<3xi64>
  // GELU (erf form, as PyTorch exports nn.GELU) after a view of the product.
  %0 = onnx.Gemm(%a, %b, %c) : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("gemm_gelu")
  %v = onnx.Reshape(%0, %shape) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<1x2x3xf32> loc("view")
  %1 = onnx.Div(%v, %sqrt2) : (tensor<1x2x3xf32>, tensor<f32>) -> tensor<1x2x3xf32> loc("div")
  %2 = onnx.Erf(%1) : (tensor<1x2x3xf32>) -> tensor<1x2x3xf32> loc("erf")
  %3 = onnx.Add(%2, %one) : (tensor<1x2x3xf32>, tensor<f32>) -> tensor<1x2x3xf32> loc("add1")
  %4 = onnx.Mul(%v, %3) : (tensor<1x2x3xf32>, tensor<1x2x3xf32>) -> tensor<1x2x3xf32> loc("mul")
  %5 = onnx.Mul(%4, %half) : (tensor<1x2x3xf32>, tensor<f32>) -> tensor<1x2x3xf32> loc("half")
  // Relu, without a bias.
  %6 = onnx.Gemm(%a, %b) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("gemm_relu")
  %7 = onnx.Relu(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu")
  // A residual tensor in the chain: a kernel of its own.
  %8 = onnx.Gemm(%a, %b, %c) : (tensor<2x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("gemm_residual")
  %9 = onnx.Add(%8, %r) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("add_residual")
  %10 = onnx.Relu(%9) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu_residual")
  // The product is also a result: stored, and Relu a kernel of its own.
  %11 = onnx.Gemm(%a, %b) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("gemm_twice")
  %12 = onnx.Relu(%11) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("relu_twice")
  return %5, %7, %10, %12, %11 : tensor<1x2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
