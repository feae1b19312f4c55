// Reductions that take a warp per output or row on the GPU
// (test/Codegen/nvcc-build.test): CumSum over rows of 40 (inclusive,
// exclusive and reversed), ReduceMax and ReduceMin over 48 elements, ArgMax
// and ArgMin over rows of 40, in float and int64; ReduceMax of uint64 and
// ReduceMin of int32 over 48 (a uint64 accumulator; int32's identity).
func.func @main(%x: tensor<3x40xf32> {onnx.name = "x"}, %i: tensor<3x40xi64> {onnx.name = "i"}, %r: tensor<2x48xf32> {onnx.name = "r"}, %ri: tensor<2x48xi64> {onnx.name = "ri"}, %ru: tensor<2x48xui64> {onnx.name = "ru"}, %r32: tensor<2x48xi32> {onnx.name = "r32"}) -> (tensor<3x40xf32>, tensor<3x40xi64>, tensor<3x40xf32>, tensor<2x1xf32>, tensor<2x1xi64>, tensor<3xi64>, tensor<3x1xi64>, tensor<2x1xui64>, tensor<2x1xi32>) {
  %axis = onnx.Constant dense<1> : tensor<i64>
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %0 = onnx.CumSum(%x, %axis) : (tensor<3x40xf32>, tensor<i64>) -> tensor<3x40xf32> loc("cumsum")
  %1 = onnx.CumSum(%i, %axis) {exclusive = 1 : i64} : (tensor<3x40xi64>, tensor<i64>) -> tensor<3x40xi64> loc("cumsum_exclusive")
  %2 = onnx.CumSum(%x, %axis) {reverse = 1 : i64} : (tensor<3x40xf32>, tensor<i64>) -> tensor<3x40xf32> loc("cumsum_reverse")
  %3 = onnx.ReduceMax(%r, %axes) : (tensor<2x48xf32>, tensor<1xi64>) -> tensor<2x1xf32> loc("max")
  %4 = onnx.ReduceMin(%ri, %axes) : (tensor<2x48xi64>, tensor<1xi64>) -> tensor<2x1xi64> loc("min")
  %5 = onnx.ArgMax(%x) {axis = 1 : i64, keepdims = 0 : i64, select_last_index = 1 : i64} : (tensor<3x40xf32>) -> tensor<3xi64> loc("argmax")
  %6 = onnx.ArgMin(%i) {axis = 1 : i64} : (tensor<3x40xi64>) -> tensor<3x1xi64> loc("argmin")
  %7 = onnx.ReduceMax(%ru, %axes) : (tensor<2x48xui64>, tensor<1xi64>) -> tensor<2x1xui64> loc("max_uint64")
  %8 = onnx.ReduceMin(%r32, %axes) : (tensor<2x48xi32>, tensor<1xi64>) -> tensor<2x1xi32> loc("min_int32")
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<3x40xf32>, tensor<3x40xi64>, tensor<3x40xf32>, tensor<2x1xf32>, tensor<2x1xi64>, tensor<3xi64>, tensor<3x1xi64>, tensor<2x1xui64>, tensor<2x1xi32>
}
