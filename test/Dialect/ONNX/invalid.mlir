// Negative tests: one per constraint that the shape rules (the verifiers) check.
// RUN: hetpar-opt %s -split-input-file -verify-diagnostics

func.func @case0(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+1 {{result #0 has type 'tensor<2x4xf32>' but its shape rule gives 'tensor<2x3xf32>'}}
  %0 = onnx.Add(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case1(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operand shapes 2x3 and 4 do not broadcast}}
  %0 = onnx.Add(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @generic_regions(%a: tensor<2xf32>) {
  // expected-error @+1 {{has 1 regions but 2 region names}}
  %0 = onnx.Generic "If"(%a) attributes {attrs = {}, domain = "", region_names = ["a", "b"], version = 17 : i64} bodies {
    onnx.Yield %a : tensor<2xf32>
  } : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case3(%a: tensor<2xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = onnx.Gelu(%a) {approximate = "fast"} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case4(%a: tensor<2xf32>, %m: tensor<2xf32>) {
  // expected-error @+1 {{'min' must be a scalar, got shape 2}}
  %0 = onnx.Clip(%a) min(%m) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case5(%a: tensor<2xf32>, %m: tensor<f16>) {
  // expected-error @+1 {{'min' must have the input's element type}}
  %0 = onnx.Clip(%a) min(%m) : (tensor<2xf32>, tensor<f16>) -> tensor<2xf32>
  return
}

// -----

func.func @case7(%a: tensor<2xf32>, %r: tensor<2xf32>) {
  // expected-error @+1 {{'ratio' must be a scalar, got shape 2}}
  %0 = onnx.Dropout(%a) ratio(%r) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case8(%a: tensor<2xi64>) {
  // expected-error @+1 {{fmod must be 0 or 1, got 2}}
  %0 = onnx.Mod(%a, %a) {fmod = 2 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return
}

// -----

func.func @case9(%a: tensor<2xf32>) {
  // expected-error @+1 {{fmod must be 1 for floating-point operands}}
  %0 = onnx.Mod(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case10(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{slope of shape 3 does not broadcast to X of shape 2x3x4}}
  %0 = onnx.PRelu(%x, %s) : (tensor<2x3x4xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @case11() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %0 = onnx.Max() : () -> tensor<2xf32>
  return
}

// -----

func.func @case12(%a: tensor<f32>, %b: tensor<2xf32>) {
  // expected-error @+1 {{operands must have rank >= 1}}
  %0 = onnx.MatMul(%a, %b) : (tensor<f32>, tensor<2xf32>) -> tensor<f32>
  return
}

// -----

func.func @case13(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{cannot multiply 2x3 by 4x5: contracted dimensions 3 and 4 differ}}
  %0 = onnx.MatMul(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @case14(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error @+1 {{batch dimensions of 2x2x3 and 3x3x5 do not broadcast}}
  %0 = onnx.MatMul(%a, %b) : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<2x2x5xf32>
  return
}

// -----

func.func @case15(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{transA and transB must be 0 or 1}}
  %0 = onnx.Gemm(%a, %a) {transA = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @case16(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{A and B must have rank 2}}
  %0 = onnx.Gemm(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @case17(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{cannot multiply 2x3 by 4x5: contracted dimensions 3 and 4 differ}}
  %0 = onnx.Gemm(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @case18(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{C of shape 3 does not broadcast to 2x5}}
  %0 = onnx.Gemm(%a, %b, %c) : (tensor<2x3xf32>, tensor<3x5xf32>, tensor<3xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @case19(%x: tensor<1x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+1 {{X and W must have rank >= 3}}
  %0 = onnx.Conv(%x, %w) : (tensor<1x3xf32>, tensor<4x3xf32>) -> tensor<1x4xf32>
  return
}

// -----

func.func @case20(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{X (rank 3) and W (rank 4) must have the same rank}}
  %0 = onnx.Conv(%x, %w) : (tensor<1x3x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case21(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{group must be positive, got 0}}
  %0 = onnx.Conv(%x, %w) {group = 0 : i64} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case22(%x: tensor<1x3x8xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{X has 3 channels but W expects 2 per group times group 1}}
  %0 = onnx.Conv(%x, %w) : (tensor<1x3x8xf32>, tensor<4x2x3xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case23(%x: tensor<1x4x8xf32>, %w: tensor<3x2x3xf32>) {
  // expected-error @+1 {{W's 3 output channels are not divisible by group 2}}
  %0 = onnx.Conv(%x, %w) {group = 2 : i64} : (tensor<1x4x8xf32>, tensor<3x2x3xf32>) -> tensor<1x3x6xf32>
  return
}

// -----

func.func @case24(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{B must have shape (M)}}
  %0 = onnx.Conv(%x, %w, %b) : (tensor<1x3x8xf32>, tensor<4x3x3xf32>, tensor<5xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case25(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'strides' must have 1 entries, got 2}}
  %0 = onnx.Conv(%x, %w) {strides = array<i64: 1, 1>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case26(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'kernel_shape' must have 1 entries, got 2}}
  %0 = onnx.Conv(%x, %w) {kernel_shape = array<i64: 3, 3>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case27(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{kernel_shape, strides and dilations must be positive}}
  %0 = onnx.Conv(%x, %w) {strides = array<i64: 0>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6xf32>
  return
}

// -----

func.func @case28(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{pads must be non-negative}}
  %0 = onnx.Conv(%x, %w) {pads = array<i64: -1, 0>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x5xf32>
  return
}

// -----

func.func @case29(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{unknown auto_pad "SAME"}}
  %0 = onnx.Conv(%x, %w) {auto_pad = "SAME"} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case30(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{pads cannot be given with auto_pad SAME_UPPER}}
  %0 = onnx.Conv(%x, %w) {auto_pad = "SAME_UPPER", pads = array<i64: 1, 1>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x8xf32>
  return
}

// -----

func.func @case31(%x: tensor<1x3x2xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{window of extent 3 does not fit spatial axis 0 of extent 2 with its padding}}
  %0 = onnx.Conv(%x, %w) : (tensor<1x3x2xf32>, tensor<4x3x3xf32>) -> tensor<1x4x1xf32>
  return
}

// -----

func.func @case32(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{X must have rank >= 3}}
  %0 = onnx.MaxPool(%x) {kernel_shape = array<i64: 2>} : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

// A kernel_shape that W's shape contradicts (code generation reads W's).
func.func @conv_kernel_shape_not_w(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x5x5xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+1 {{kernel_shape [3, 3] does not match W's spatial extents [5, 5]}}
  %0 = onnx.Conv(%x, %w) {kernel_shape = array<i64: 3, 3>} : (tensor<1x1x8x8xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

// A Conv's kernel_shape entry of INT64_MIN is invalid even where W's extent
// is unknown (only a kernel read from W may be dynamic).
func.func @conv_kernel_int64_min(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x?x3xf32>) -> tensor<1x1x?x6xf32> {
  // expected-error @+1 {{kernel_shape, strides and dilations must be positive}}
  %0 = onnx.Conv(%x, %w) {kernel_shape = array<i64: -9223372036854775808, 3>} : (tensor<1x1x8x8xf32>, tensor<1x1x?x3xf32>) -> tensor<1x1x?x6xf32>
  return %0 : tensor<1x1x?x6xf32>
}

// -----

// A kernel entry equal to the dynamic-extent marker is an invalid kernel, not
// an unknown one.
func.func @maxpool_kernel_int64_min(%x: tensor<1x3x32x32xf32>) -> tensor<1x3x32x32xf32> {
  // expected-error @+1 {{kernel_shape, strides and dilations must be positive}}
  %0 = onnx.MaxPool(%x) {auto_pad = "SAME_LOWER", kernel_shape = array<i64: -9223372036854775808, 2>} : (tensor<1x3x32x32xf32>) -> tensor<1x3x32x32xf32>
  return %0 : tensor<1x3x32x32xf32>
}

// -----

func.func @case33(%x: tensor<1x3x8xf32>) {
  // expected-error @+1 {{ceil_mode must be 0 or 1}}
  %0 = onnx.AveragePool(%x) {ceil_mode = 2 : i64, kernel_shape = array<i64: 2>} : (tensor<1x3x8xf32>) -> tensor<1x3x7xf32>
  return
}

// -----

func.func @case34(%x: tensor<1x3xf32>) {
  // expected-error @+1 {{X must have rank >= 3}}
  %0 = onnx.GlobalAveragePool(%x) : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return
}

// -----

func.func @case35(%x: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{X must have rank >= 2}}
  %0 = onnx.BatchNormalization(%x, %s, %s, %s, %s) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case36(%x: tensor<2x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{scale, B, input_mean and input_var must have shape (4), got 3}}
  %0 = onnx.BatchNormalization(%x, %s, %s, %s, %s) : (tensor<2x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case37(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{has 1 or 3 results, not 2}}
  %0:2 = onnx.BatchNormalization(%x, %s, %s, %s, %s) {training_mode = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @case38(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{input must have rank >= 3}}
  %0 = onnx.InstanceNormalization(%x, %s, %s) : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case39(%x: tensor<2x4x5xf32>, %s: tensor<3xf32>) {
  // expected-error @+1 {{scale and B must have shape (C)}}
  %0 = onnx.InstanceNormalization(%x, %s, %s) : (tensor<2x4x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4x5xf32>
  return
}

// -----

func.func @case40(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{has at most 3 results}}
  %0:4 = onnx.LayerNormalization(%x, %s) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

func.func @case41(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.LayerNormalization(%x, %s) {axis = 2 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case42(%x: tensor<2x4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{Scale of shape 2 does not broadcast to the normalized shape 4}}
  %0 = onnx.LayerNormalization(%x, %s) : (tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case43(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{axis -3 is out of range for rank 2}}
  %0 = onnx.Softmax(%x) {axis = -3 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case44(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{keepdims and noop_with_empty_axes must be 0 or 1}}
  %0 = onnx.ReduceSum(%x) {keepdims = 2 : i64} : (tensor<2x4xf32>) -> tensor<1x1xf32>
  return
}

// -----

func.func @case45(%x: tensor<2x4xf32>, %axes: tensor<1x1xi64>) {
  // expected-error @+1 {{'axes' must be 1-D, got shape 1x1}}
  %0 = onnx.ReduceSum(%x, %axes) : (tensor<2x4xf32>, tensor<1x1xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @case46(%x: tensor<2x4xf32>) {
  %axes = onnx.Constant dense<[2]> : tensor<1xi64>
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.ReduceMax(%x, %axes) : (tensor<2x4xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return
}

// -----

func.func @case47(%x: tensor<2x4xf32>) {
  %axes = onnx.Constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+1 {{axis -1 is repeated}}
  %0 = onnx.ReduceMean(%x, %axes) : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x1xf32>
  return
}

// -----

func.func @global_pool_empty(%x: tensor<1x2x0x3xf32>) {
  // expected-error @+1 {{pools over the empty spatial extent of 'tensor<1x2x0x3xf32>': no element to pool}}
  %0 = onnx.GlobalAveragePool(%x) : (tensor<1x2x0x3xf32>) -> tensor<1x2x1x1xf32>
  return
}

// -----

func.func @argmax_empty_axis(%x: tensor<2x0xf32>) {
  // expected-error @+1 {{reduces axis 1 of 'tensor<2x0xf32>', which is empty: no index to return}}
  %0 = onnx.ArgMax(%x) {axis = 1 : i64} : (tensor<2x0xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @case48(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{keepdims and select_last_index must be 0 or 1}}
  %0 = onnx.ArgMax(%x) {select_last_index = 3 : i64} : (tensor<2x4xf32>) -> tensor<1x4xi64>
  return
}

// -----

func.func @case49(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{axis 5 is out of range for rank 2}}
  %0 = onnx.ArgMin(%x) {axis = 5 : i64} : (tensor<2x4xf32>) -> tensor<2x4xi64>
  return
}

// -----

func.func @case50(%x: tensor<2x4xf32>, %a: tensor<2xi64>) {
  // expected-error @+1 {{'axis' must be a scalar, got shape 2}}
  %0 = onnx.CumSum(%x, %a) : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case51(%x: tensor<2x4xf32>) {
  %a = onnx.Constant dense<2> : tensor<i64>
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.CumSum(%x, %a) : (tensor<2x4xf32>, tensor<i64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case52(%x: tensor<2x4xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{allowzero must be 0 or 1}}
  %0 = onnx.Reshape(%x, %s) {allowzero = 3 : i64} : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @case53(%x: tensor<2x4xf32>, %s: tensor<2x1xi64>) {
  // expected-error @+1 {{'shape' must be 1-D, got shape 2x1}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x4xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @case54(%x: tensor<2x4xf32>) {
  %s = onnx.Constant dense<[-2, 4]> : tensor<2xi64>
  // expected-error @+1 {{shape entry -2 at index 0 is invalid (must be >= -1)}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case55(%x: tensor<2x4xf32>) {
  %s = onnx.Constant dense<[-1, -1]> : tensor<2xi64>
  // expected-error @+1 {{shape -1x-1 has more than one -1}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @case56(%x: tensor<8xf32>) {
  %s = onnx.Constant dense<[2, 0]> : tensor<2xi64>
  // expected-error @+1 {{shape entry 0 at index 1 copies a dimension the input of rank 1 does not have}}
  %0 = onnx.Reshape(%x, %s) : (tensor<8xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case57(%x: tensor<0x4xf32>) {
  %s = onnx.Constant dense<[0, -1]> : tensor<2xi64>
  // expected-error @+1 {{with allowzero, shape cannot contain both 0 and -1}}
  %0 = onnx.Reshape(%x, %s) {allowzero = 1 : i64} : (tensor<0x4xf32>, tensor<2xi64>) -> tensor<0x?xf32>
  return
}

// -----

func.func @case58(%x: tensor<2x3xf32>) {
  %s = onnx.Constant dense<[4, -1]> : tensor<2xi64>
  // expected-error @+1 {{cannot reshape 2x3 (6 elements) to 4x-1}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x?xf32>
  return
}

// -----

func.func @case59(%x: tensor<2x3xf32>) {
  %s = onnx.Constant dense<[4, 2]> : tensor<2xi64>
  // expected-error @+1 {{cannot reshape 2x3 (6 elements) to 4x2 (8 elements)}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  return
}

// -----

func.func @case60(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %0 = onnx.Flatten(%x) {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<6x1xf32>
  return
}

// -----

func.func @case61(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm has 1 entries for rank 2}}
  %0 = onnx.Transpose(%x) {perm = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case62(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{perm is not a permutation of [0, 2)}}
  %0 = onnx.Transpose(%x) {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  return
}

// -----

func.func @case63(%x: tensor<2x1xf32>) {
  %a = onnx.Constant dense<[0]> : tensor<1xi64>
  // expected-error @+1 {{cannot squeeze axis 0 of extent 2 in shape 2x1}}
  %0 = onnx.Squeeze(%x, %a) : (tensor<2x1xf32>, tensor<1xi64>) -> tensor<1xf32>
  return
}

// -----

func.func @case64(%x: tensor<2x1xf32>) {
  %a = onnx.Constant dense<[2]> : tensor<1xi64>
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.Squeeze(%x, %a) : (tensor<2x1xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return
}

// -----

func.func @case65(%x: tensor<2xf32>) {
  %a = onnx.Constant dense<[0, 0]> : tensor<2xi64>
  // expected-error @+1 {{axis 0 is repeated}}
  %0 = onnx.Unsqueeze(%x, %a) : (tensor<2xf32>, tensor<2xi64>) -> tensor<1x1x2xf32>
  return
}

// -----

func.func @case66(%x: tensor<2xf32>) {
  %a = onnx.Constant dense<[3]> : tensor<1xi64>
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %0 = onnx.Unsqueeze(%x, %a) : (tensor<2xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  return
}

// -----

func.func @case67() {
  // expected-error @+1 {{expected 1 or more operands, but found 0}}
  %0 = onnx.Concat() {axis = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @case68(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{inputs have different ranks (2x3 and 3)}}
  %0 = onnx.Concat(%a, %b) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  return
}

// -----

func.func @case69(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{inputs of shapes 2x3 and 2x4 differ outside axis 0}}
  %0 = onnx.Concat(%a, %b) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @case70(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.Concat(%a) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @case71(%a: tensor<10xf32>) {
  // expected-error @+1 {{num_outputs is 4 but the op has 3 results}}
  %0:3 = onnx.Split(%a) {num_outputs = 4 : i64} : (tensor<10xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @case72(%a: tensor<10xf32>) {
  %s = onnx.Constant dense<[5, 6]> : tensor<2xi64>
  // expected-error @+1 {{split sizes sum to 11 but axis 0 has extent 10}}
  %0:2 = onnx.Split(%a, %s) : (tensor<10xf32>, tensor<2xi64>) -> (tensor<5xf32>, tensor<6xf32>)
  return
}

// -----

func.func @case73(%a: tensor<10xf32>) {
  %s = onnx.Constant dense<[11, -1]> : tensor<2xi64>
  // expected-error @+1 {{split sizes must be non-negative}}
  %0:2 = onnx.Split(%a, %s) : (tensor<10xf32>, tensor<2xi64>) -> (tensor<11xf32>, tensor<?xf32>)
  return
}

// -----

func.func @case74(%a: tensor<10xf32>) {
  %s = onnx.Constant dense<[2, 3, 5]> : tensor<3xi64>
  // expected-error @+1 {{split has 3 entries for 2 results}}
  %0:2 = onnx.Split(%a, %s) : (tensor<10xf32>, tensor<3xi64>) -> (tensor<2xf32>, tensor<3xf32>)
  return
}

// -----

func.func @case75(%a: tensor<10xf32>) {
  // expected-error @+1 {{extent 10 of axis 0 does not split into 3 equal parts}}
  %0:3 = onnx.Split(%a) : (tensor<10xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @case76(%a: tensor<5xf32>) {
  // expected-error @+1 {{cannot split extent 5 into 4 parts of 2}}
  %0:4 = onnx.Split(%a) {num_outputs = 4 : i64} : (tensor<5xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @case77(%x: tensor<4xf32>, %s: tensor<1x1xi64>) {
  // expected-error @+1 {{'starts/ends/axes/steps' must be 1-D, got shape 1x1}}
  %0 = onnx.Slice(%x, %s, %s) : (tensor<4xf32>, tensor<1x1xi64>, tensor<1x1xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @case78(%x: tensor<4xf32>, %s: tensor<1xi64>, %e: tensor<1xi32>) {
  // expected-error @+1 {{starts, ends, axes and steps must have one element type}}
  %0 = onnx.Slice(%x, %s, %e) : (tensor<4xf32>, tensor<1xi64>, tensor<1xi32>) -> tensor<?xf32>
  return
}

// -----

func.func @case79(%x: tensor<4xf32>, %s: tensor<1xi64>, %e: tensor<2xi64>) {
  // expected-error @+1 {{starts, ends, axes and steps must have one length}}
  %0 = onnx.Slice(%x, %s, %e) : (tensor<4xf32>, tensor<1xi64>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @case80(%x: tensor<4xf32>) {
  %s = onnx.Constant dense<0> : tensor<1xi64>
  %st = onnx.Constant dense<0> : tensor<1xi64>
  // expected-error @+1 {{steps cannot be 0}}
  %0 = onnx.Slice(%x, %s, %s) steps(%st) : (tensor<4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @case81(%x: tensor<f32>, %i: tensor<1xi64>) {
  // expected-error @+1 {{data must have rank >= 1}}
  %0 = onnx.Gather(%x, %i) : (tensor<f32>, tensor<1xi64>) -> tensor<1xf32>
  return
}

// -----

func.func @case82(%x: tensor<3x4xf32>, %i: tensor<1xi64>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = onnx.Gather(%x, %i) {axis = 2 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<3x1xf32>
  return
}

// -----

func.func @case83(%x: tensor<3x4xf32>) {
  %i = onnx.Constant dense<[0, 3]> : tensor<2xi64>
  // expected-error @+1 {{index 3 is out of range for axis 0 of extent 3}}
  %0 = onnx.Gather(%x, %i) : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

func.func @case84(%x: tensor<3x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{data and indices must have the same rank}}
  %0 = onnx.GatherElements(%x, %i) : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @case85(%x: tensor<2x2xf32>) {
  %s = onnx.Constant dense<[-1, 2]> : tensor<2xi64>
  // expected-error @+1 {{shape -1x2 has a negative entry}}
  %0 = onnx.Expand(%x, %s) : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  return
}

// -----

func.func @case86(%x: tensor<2x2xf32>) {
  %s = onnx.Constant dense<[3, 2]> : tensor<2xi64>
  // expected-error @+1 {{cannot expand 2x2 to 3x2}}
  %0 = onnx.Expand(%x, %s) : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  return
}

// -----

func.func @case87(%x: tensor<2x2xf32>, %r: tensor<3xi64>) {
  // expected-error @+1 {{repeats has 3 entries for rank 2}}
  %0 = onnx.Tile(%x, %r) : (tensor<2x2xf32>, tensor<3xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @case88(%x: tensor<2x2xf32>) {
  %r = onnx.Constant dense<[1, -1]> : tensor<2xi64>
  // expected-error @+1 {{repeats must be non-negative}}
  %0 = onnx.Tile(%x, %r) : (tensor<2x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  return
}

// -----

func.func @case89(%x: tensor<2xf32>, %p: tensor<2xi64>) {
  // expected-error @+1 {{unknown mode "mirror"}}
  %0 = onnx.Pad(%x, %p) {mode = "mirror"} : (tensor<2xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @case90(%x: tensor<2xf32>) {
  %p = onnx.Constant dense<[1, 1, 1]> : tensor<3xi64>
  // expected-error @+1 {{pads has 3 entries for 1 padded axes}}
  %0 = onnx.Pad(%x, %p) : (tensor<2xf32>, tensor<3xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @case91(%x: tensor<2xf32>) {
  %p = onnx.Constant dense<[-2, -1]> : tensor<2xi64>
  // expected-error @+1 {{pads crop axis 0 below zero}}
  %0 = onnx.Pad(%x, %p) : (tensor<2xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @case92(%s: tensor<2xi64>) {
  // expected-error @+1 {{value must have exactly one element}}
  %0 = onnx.ConstantOfShape(%s) {value = dense<[1.0, 2.0]> : tensor<2xf32>} : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @case93() {
  %s = onnx.Constant dense<[2, -3]> : tensor<2xi64>
  // expected-error @+1 {{shape 2x-3 has a negative entry}}
  %0 = onnx.ConstantOfShape(%s) : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @case94(%a: tensor<2xi64>, %b: tensor<i64>) {
  // expected-error @+1 {{'start' must be a scalar, got shape 2}}
  %0 = onnx.Range(%a, %b, %b) : (tensor<2xi64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @case95(%a: tensor<i64>) {
  %d = onnx.Constant dense<0> : tensor<i64>
  // expected-error @+1 {{delta cannot be 0}}
  %0 = onnx.Range(%a, %a, %d) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @case96(%x: tensor<4xf32>) {
  // expected-error @+1 {{input must have rank >= 2}}
  %0 = onnx.Trilu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @case97(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{upper must be 0 or 1}}
  %0 = onnx.Trilu(%x) {upper = 2 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @one_hot_values(%i: tensor<3xi64>, %d: tensor<i64>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'values' must hold 2 elements ([off, on]), got shape 3}}
  %0 = onnx.OneHot(%i, %d, %v) : (tensor<3xi64>, tensor<i64>, tensor<3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @one_hot_depth(%i: tensor<3xi64>, %v: tensor<2xf32>) {
  %d = onnx.Constant dense<0> : tensor<i64>
  // expected-error @+1 {{depth must be a positive number of classes (at most 2^31 - 1), got 0}}
  %0 = onnx.OneHot(%i, %d, %v) : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @one_hot_axis(%i: tensor<3xi64>, %v: tensor<2xf32>) {
  %d = onnx.Constant dense<4> : tensor<i64>
  // expected-error @+1 {{axis}}
  %0 = onnx.OneHot(%i, %d, %v) {axis = 2 : i64} : (tensor<3xi64>, tensor<i64>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @one_hot_depth_shape(%i: tensor<3xi64>, %d: tensor<2xi64>, %v: tensor<2xf32>) {
  // expected-error @+1 {{'depth' must be a scalar, got shape 2}}
  %0 = onnx.OneHot(%i, %d, %v) : (tensor<3xi64>, tensor<2xi64>, tensor<2xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @conv_window_limit(%x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{kernel_shape, strides, dilations and pads must be below 2^31, got 9223372036854775807}}
  %0 = onnx.Conv(%x, %w) {dilations = array<i64: 9223372036854775807>} : (tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @tile_overflow(%x: tensor<4611686018427387904xf32>) {
  %r = onnx.Constant dense<[4]> : tensor<1xi64>
  // expected-error @+1 {{tiling axis 0 overflows int64}}
  %0 = onnx.Tile(%x, %r) : (tensor<4611686018427387904xf32>, tensor<1xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @pad_overflow(%x: tensor<2xf32>) {
  %p = onnx.Constant dense<[9223372036854775807, 1]> : tensor<2xi64>
  // expected-error @+1 {{padding axis 0 overflows int64}}
  %0 = onnx.Pad(%x, %p) : (tensor<2xf32>, tensor<2xi64>) -> tensor<?xf32>
  return
}

// -----

func.func @concat_overflow(%a: tensor<9223372036854775807xf32>) {
  // expected-error @+1 {{the concatenated extent overflows int64}}
  %0 = onnx.Concat(%a, %a) {axis = 0 : i64} : (tensor<9223372036854775807xf32>, tensor<9223372036854775807xf32>) -> tensor<?xf32>
  return
}

// -----

func.func @result_too_large() {
  %s = onnx.Constant dense<[4611686018427387904, 4611686018427387904]> : tensor<2xi64>
  // expected-error @+1 {{result shape 4611686018427387904x4611686018427387904 has more elements than fit in 64 bits}}
  %0 = onnx.ConstantOfShape(%s) : (tensor<2xi64>) -> tensor<?x?xf32>
  return
}

// -----

func.func @flatten_overflow(%x: tensor<4611686018427387904x4x1xf32>) {
  // expected-error @+1 {{flattening 4611686018427387904x4x1 overflows int64}}
  %0 = onnx.Flatten(%x) {axis = 2 : i64} : (tensor<4611686018427387904x4x1xf32>) -> tensor<?x?xf32>
  return
}

// -----

func.func @range_not_finite() {
  %s = onnx.Constant dense<0.0> : tensor<f32>
  %l = onnx.Constant dense<0x7FC00000> : tensor<f32>
  %d = onnx.Constant dense<1.0> : tensor<f32>
  // expected-error @+1 {{start, limit and delta must be finite}}
  %0 = onnx.Range(%s, %l, %d) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<?xf32>
  return
}

// -----

func.func @einsum_terms(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{equation 'ij,jk->ik' has 2 input terms for 1 inputs}}
  %0 = onnx.Einsum(%a) {equation = "ij,jk->ik"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_rank(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{term 'ijk' does not fit an input of rank 2}}
  %0 = onnx.Einsum(%a) {equation = "ijk->i"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_extent(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{axis 'j' has extents 3 and 4}}
  %0 = onnx.Einsum(%a, %b) {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_output(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{output axis 'z' is not an input axis}}
  %0 = onnx.Einsum(%a) {equation = "ij->z"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_output_twice(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{output axis 'i' appears twice}}
  %0 = onnx.Einsum(%a) {equation = "ij->ii"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @einsum_character(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{equation term 'i2' has the character '2'}}
  %0 = onnx.Einsum(%a) {equation = "i2->i"} : (tensor<2x3xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @range_too_long() {
  %s = onnx.Constant dense<-9223372036854775808> : tensor<i64>
  %l = onnx.Constant dense<9223372036854775807> : tensor<i64>
  %d = onnx.Constant dense<1> : tensor<i64>
  // expected-error @+1 {{Range has more elements than fit in 64 bits}}
  %0 = onnx.Range(%s, %l, %d) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  return
}

// -----

func.func @split_overflow(%x: tensor<10xf32>) {
  %s = onnx.Constant dense<[9223372036854775807, 9223372036854775807]> : tensor<2xi64>
  // expected-error @+1 {{split sizes overflow int64}}
  %0:2 = onnx.Split(%x, %s) : (tensor<10xf32>, tensor<2xi64>) -> (tensor<?xf32>, tensor<?xf32>)
  return
}

// -----

func.func @where_mixed_types(%c: tensor<2xi1>, %x: tensor<2xf64>, %y: tensor<2xf32>) {
  // expected-error @+1 {{X and Y have different element types ('f64' and 'f32')}}
  %0 = onnx.Where(%c, %x, %y) : (tensor<2xi1>, tensor<2xf64>, tensor<2xf32>) -> tensor<2xf64>
  return
}

// -----

// The losses and their gradients: one case per constraint.

func.func @loss_rank(%x: tensor<4xf32>, %l: tensor<4xi64>) {
  // expected-error @+1 {{scores must have rank >= 2, got shape 4}}
  %0 = onnx.SoftmaxCrossEntropyLoss(%x, %l) : (tensor<4xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_labels_shape(%x: tensor<2x3x5xf32>, %l: tensor<2x4xi64>) {
  // expected-error @+1 {{labels must have shape 2x5 (scores without axis 1), got 2x4}}
  %0 = onnx.SoftmaxCrossEntropyLoss(%x, %l) : (tensor<2x3x5xf32>, tensor<2x4xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_labels_rank(%x: tensor<2x3xf32>, %l: tensor<2x1xi64>) {
  // expected-error @+1 {{target must have shape 2 (input without axis 1), got 2x1}}
  %0 = onnx.NegativeLogLikelihoodLoss(%x, %l) : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight_shape(%x: tensor<2x3xf32>, %l: tensor<2xi64>, %w: tensor<4xf32>) {
  // expected-error @+1 {{weight must have shape (3), got 4}}
  %0 = onnx.NegativeLogLikelihoodLoss(%x, %l, %w) : (tensor<2x3xf32>, tensor<2xi64>, tensor<4xf32>) -> tensor<f32>
  return
}

// -----

func.func @loss_weight_type(%x: tensor<2x3xf32>, %l: tensor<2xi64>, %w: tensor<3xf64>) {
  // expected-error @+1 {{weights must have the element type of scores ('f32'), got 'f64'}}
  %0 = onnx.SoftmaxCrossEntropyLoss(%x, %l, %w) : (tensor<2x3xf32>, tensor<2xi64>, tensor<3xf64>) -> tensor<f32>
  return
}

// -----

func.func @loss_reduction(%x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{reduction must be "none", "sum" or "mean", got "max"}}
  %0 = onnx.SoftmaxCrossEntropyLoss(%x, %l) {reduction = "max"} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_result_none(%x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{result #0 has type 'tensor<f32>' but its shape rule gives 'tensor<2xf32>'}}
  %0 = onnx.NegativeLogLikelihoodLoss(%x, %l) {reduction = "none"} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return
}

// -----

func.func @loss_result_mean(%x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{result #0 has type 'tensor<2xf32>' but its shape rule gives 'tensor<f32>'}}
  %0 = onnx.NegativeLogLikelihoodLoss(%x, %l) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @loss_result_type(%x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{result #0 has type 'tensor<f64>' but its shape rule gives 'tensor<f32>'}}
  %0 = onnx.NegativeLogLikelihoodLoss(%x, %l) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f64>
  return
}

// -----

func.func @loss_log_prob_shape(%x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{result #1 has type 'tensor<3x2xf32>' but its shape rule gives 'tensor<2x3xf32>'}}
  %0:2 = onnx.SoftmaxCrossEntropyLoss(%x, %l) : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<3x2xf32>)
  return
}

// -----

func.func @loss_grad_rank(%dy: tensor<f32>, %x: tensor<3xf32>, %l: tensor<3xi64>) {
  // expected-error @+1 {{log_prob must have rank >= 2, got shape 3}}
  %0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %x, %l) : (tensor<f32>, tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @loss_grad_label_shape(%dy: tensor<f32>, %x: tensor<2x3xf32>, %l: tensor<3xi64>) {
  // expected-error @+1 {{label must have shape 2 (log_prob without axis 1), got 3}}
  %0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %x, %l) : (tensor<f32>, tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_weight(%dy: tensor<f32>, %x: tensor<2x3xf32>, %l: tensor<2xi64>, %w: tensor<2xf32>) {
  // expected-error @+1 {{weight must have shape (3), got 2}}
  %0 = onnx.NegativeLogLikelihoodLossGrad(%dy, %x, %l, %w) : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_weight_type(%dy: tensor<f32>, %x: tensor<2x3xf32>, %l: tensor<2xi64>, %w: tensor<3xf16>) {
  // expected-error @+1 {{weight must have the element type of input ('f32'), got 'f16'}}
  %0 = onnx.NegativeLogLikelihoodLossGrad(%dy, %x, %l, %w) : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>, tensor<3xf16>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_dy_scalar(%dy: tensor<2xf32>, %x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{'dY' must be a scalar, got shape 2}}
  %0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %x, %l) {reduction = "sum"} : (tensor<2xf32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_dy_none(%dy: tensor<3xf32>, %x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{dY must have shape 2 (the loss without reduction), got 3}}
  %0 = onnx.NegativeLogLikelihoodLossGrad(%dy, %x, %l) {reduction = "none"} : (tensor<3xf32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_dy_type(%dy: tensor<f64>, %x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{dY must have the element type 'f32', got 'f64'}}
  %0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %x, %l) : (tensor<f64>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_reduction(%dy: tensor<f32>, %x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{reduction must be "none", "sum" or "mean", got "avg"}}
  %0 = onnx.NegativeLogLikelihoodLossGrad(%dy, %x, %l) {reduction = "avg"} : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return
}

// -----

func.func @loss_grad_result(%dy: tensor<f32>, %x: tensor<2x3xf32>, %l: tensor<2xi64>) {
  // expected-error @+1 {{result #0 has type 'tensor<2x4xf32>' but its shape rule gives 'tensor<2x3xf32>'}}
  %0 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %x, %l) : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  return
}

// -----

// The gradients of the windowed ops: dY must have the forward result's shape.
func.func @conv_grad_dy_shape(%dy: tensor<1x4x5xf32>, %x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{dY has shape 1x4x5 but the forward result has shape 1x4x6}}
  %0:3 = onnx.ConvGrad(%dy, %x, %w) : (tensor<1x4x5xf32>, tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> (tensor<1x3x8xf32>, tensor<4x3x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_grad_group(%dy: tensor<1x4x6xf32>, %x: tensor<1x3x8xf32>, %w: tensor<4x2x3xf32>) {
  // expected-error @+1 {{X has 3 channels but W expects 2 per group times group 1}}
  %0:3 = onnx.ConvGrad(%dy, %x, %w) : (tensor<1x4x6xf32>, tensor<1x3x8xf32>, tensor<4x2x3xf32>) -> (tensor<1x3x8xf32>, tensor<4x2x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @conv_grad_element_type(%dy: tensor<1x4x6xf16>, %x: tensor<1x3x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{operands must have one element type}}
  %0:3 = onnx.ConvGrad(%dy, %x, %w) : (tensor<1x4x6xf16>, tensor<1x3x8xf32>, tensor<4x3x3xf32>) -> (tensor<1x3x8xf16>, tensor<4x3x3xf16>, tensor<4xf16>)
  return
}

// -----

func.func @maxpool_grad_dy_shape(%dy: tensor<1x3x3xf32>, %x: tensor<1x3x8xf32>) {
  // expected-error @+1 {{dY has shape 1x3x3 but the forward result has shape 1x3x4}}
  %0 = onnx.MaxPoolGrad(%dy, %x) {kernel_shape = array<i64: 2>, strides = array<i64: 2>} : (tensor<1x3x3xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  return
}

// -----

func.func @avgpool_grad_count_include_pad(%dy: tensor<1x3x4xf32>) {
  // expected-error @+1 {{count_include_pad must be 0 or 1}}
  %0 = onnx.AveragePoolGrad(%dy) {shape = array<i64: 1, 3, 8>, kernel_shape = array<i64: 2>, strides = array<i64: 2>, count_include_pad = 2 : i64} : (tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  return
}

// -----

func.func @avgpool_grad_negative_shape(%dy: tensor<1x3x4xf32>) {
  // expected-error @+1 {{has a negative extent}}
  %0 = onnx.AveragePoolGrad(%dy) {shape = array<i64: 1, -3, 8>, kernel_shape = array<i64: 2>, strides = array<i64: 2>} : (tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  return
}

// -----

func.func @case98(%a: tensor<2xf32>, %s: tensor<2xi64>) {
  // expected-error @+1 {{'step' must be a scalar, got shape 2}}
  %0 = onnx.Dropout(%a) step(%s) : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  return
}

// -----

func.func @case98b(%a: tensor<2xf32>) {
  // expected-error @+1 {{element_offset -4 is negative}}
  %0 = onnx.Dropout(%a) {element_offset = -4 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @case99(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{returns running statistics only in training mode (training_mode 1)}}
  %0:3 = onnx.BatchNormalization(%x, %s, %s, %s, %s) : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// A shape operand of 65 entries would make a result of rank 65 (found by
// fuzzing: one of 374 million entries made inference allocate 3 GB).
func.func @rank_over_64(%s: tensor<65xi64>) {
  // expected-error @+1 {{'input' has 65 entries, a result of more than the 64 dimensions HetPar supports (NumPy 2's NPY_MAXDIMS)}}
  %0 = onnx.ConstantOfShape(%s) : (tensor<65xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @reshape_rank_over_64(%x: tensor<4xf32>, %s: tensor<100xi64>) {
  // expected-error @+1 {{'shape' has 100 entries}}
  %0 = onnx.Reshape(%x, %s) : (tensor<4xf32>, tensor<100xi64>) -> tensor<*xf32>
  return
}

// -----

// Found by fuzzing: more axes than the input's rank made a result of negative
// rank (an abort in SmallVector).
func.func @squeeze_more_axes_than_rank(%x: tensor<2x3xf32>, %a: tensor<3xi64>) {
  // expected-error @+1 {{'axes' has 3 entries but the input has rank 2}}
  %0 = onnx.Squeeze(%x, %a) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @unsqueeze_rank_over_64(%x: tensor<2x3xf32>, %a: tensor<63xi64>) {
  // expected-error @+1 {{'axes' has 63 entries, a result of more than the 64 dimensions HetPar supports}}
  %0 = onnx.Unsqueeze(%x, %a) : (tensor<2x3xf32>, tensor<63xi64>) -> tensor<*xf32>
  return
}

// -----

// Axes of 2^63 - 1 entries: the rank they give overflowed int64 and passed
// the check (SmallVector's abort; found by the onnx-mutate fuzzer).
func.func @unsqueeze_axes_near_int64_max(%x: tensor<3x4x5xf32>, %a: tensor<9223372036854775807xi64>) {
  // expected-error @+1 {{'axes' has 9223372036854775807 entries, a result of more than the 64 dimensions HetPar supports}}
  %0 = onnx.Unsqueeze(%x, %a) : (tensor<3x4x5xf32>, tensor<9223372036854775807xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @gather_nd_tuple(%x: tensor<2x3xf32>, %i: tensor<4x3xi64>) {
  // expected-error @+1 {{index tuples of 3 entries for data of rank 2 and batch_dims 0 (from 1 to 2)}}
  %0 = onnx.GatherND(%x, %i) : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_nd_batch(%x: tensor<2x3xf32>, %i: tensor<5x1xi64>) {
  // expected-error @+1 {{batch axis 0 has extent 2 in data but 5 in indices}}
  %0 = onnx.GatherND(%x, %i) {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<5x1xi64>) -> tensor<5xf32>
  return
}

// -----

func.func @gather_nd_constant(%x: tensor<2x3xf32>) {
  %i = onnx.Constant dense<[[1, 3]]> : tensor<1x2xi64>
  // expected-error @+1 {{index 3 is out of range for axis 1 of extent 3}}
  %0 = onnx.GatherND(%x, %i) : (tensor<2x3xf32>, tensor<1x2xi64>) -> tensor<1xf32>
  return
}

// -----

func.func @scatter_nd_updates(%x: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{updates have shape 2x4, not 2x3}}
  %0 = onnx.ScatterND(%x, %i, %u) : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @scatter_nd_scalar_indices(%x: tensor<3xf32>, %i: tensor<i64>, %u: tensor<f32>) {
  // expected-error @+1 {{indices must have rank 1 or more (index tuples along its last dimension), got a scalar}}
  %0 = onnx.ScatterND(%x, %i, %u) : (tensor<3xf32>, tensor<i64>, tensor<f32>) -> tensor<3xf32>
  return
}

// -----

func.func @gather_nd_scalar_indices(%x: tensor<3xf32>, %i: tensor<i64>) {
  // expected-error @+1 {{indices must have rank 1 or more (index tuples along its last dimension), got a scalar}}
  %0 = onnx.GatherND(%x, %i) : (tensor<3xf32>, tensor<i64>) -> tensor<*xf32>
  return
}

// -----

func.func @scatter_nd_reduction(%x: tensor<4xf32>, %i: tensor<1x1xi64>, %u: tensor<1xf32>) {
  // expected-error @+1 {{reduction 'sum' is not none, add, mul, max or min}}
  %0 = onnx.ScatterND(%x, %i, %u) {reduction = "sum"} : (tensor<4xf32>, tensor<1x1xi64>, tensor<1xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @scatter_nd_constant(%x: tensor<4xf32>, %u: tensor<1xf32>) {
  %i = onnx.Constant dense<[[-5]]> : tensor<1x1xi64>
  // expected-error @+1 {{index -5 is out of range for axis 0 of extent 4}}
  %0 = onnx.ScatterND(%x, %i, %u) : (tensor<4xf32>, tensor<1x1xi64>, tensor<1xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @scatter_elements_shapes(%x: tensor<4x3xf32>, %i: tensor<2x3xi64>, %u: tensor<2x2xf32>) {
  // expected-error @+1 {{indices 2x3 and updates 2x2 must have one shape}}
  %0 = onnx.ScatterElements(%x, %i, %u) : (tensor<4x3xf32>, tensor<2x3xi64>, tensor<2x2xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @scatter_elements_larger(%x: tensor<2x3xf32>, %i: tensor<2x4xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+1 {{indices 2x4 are larger than data 2x3}}
  %0 = onnx.ScatterElements(%x, %i, %u) {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xi64>, tensor<2x4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @resize_mode(%x: tensor<1x1x2x2xf32>) {
  %s = onnx.Constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  // expected-error @+1 {{mode 'area' is not nearest, linear or cubic}}
  %0 = onnx.Resize(%x) scales(%s) {mode = "area"} : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @resize_scales_and_sizes(%x: tensor<1x1x2x2xf32>) {
  %s = onnx.Constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  %z = onnx.Constant dense<[1, 1, 4, 4]> : tensor<4xi64>
  // expected-error @+1 {{both scales and sizes are given (ONNX takes one of them)}}
  %0 = onnx.Resize(%x) scales(%s) sizes(%z) : (tensor<1x1x2x2xf32>, tensor<4xf32>, tensor<4xi64>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @resize_scales(%x: tensor<1x1x2x2xf32>) {
  %s = onnx.Constant dense<[1.0, 1.0, 2.0, 2.0]> : tensor<4xf32>
  // expected-error @+1 {{result #0 has type 'tensor<1x1x3x4xf32>' but its shape rule gives 'tensor<1x1x4x4xf32>'}}
  %0 = onnx.Resize(%x) scales(%s) : (tensor<1x1x2x2xf32>, tensor<4xf32>) -> tensor<1x1x3x4xf32>
  return
}

// -----

// FusedAttention: a mask that does not broadcast to the scores [2, 4, 5].
func.func @fused_attention_mask(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x5xf32>, %v: tensor<2x5x6xf32>, %m: tensor<3xf32>) -> tensor<2x4x6xf32> {
  // expected-error @+1 {{mask 3 does not broadcast to the scores 2x4x5}}
  %0 = onnx.FusedAttention(%q, %kt, %v) mask(%m) : (tensor<2x4x8xf32>, tensor<2x8x5xf32>, tensor<2x5x6xf32>, tensor<3xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// FusedAttention: a select mask without its fill value.
func.func @fused_attention_fill(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x5xf32>, %v: tensor<2x5x6xf32>, %m: tensor<4x5xi1>) -> tensor<2x4x6xf32> {
  // expected-error @+1 {{'fill' is present exactly when 'mask' is i1}}
  %0 = onnx.FusedAttention(%q, %kt, %v) mask(%m) : (tensor<2x4x8xf32>, tensor<2x8x5xf32>, tensor<2x5x6xf32>, tensor<4x5xi1>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// FusedAttention: KT's contracted dimension differs from Q's last.
func.func @fused_attention_contract(%q: tensor<2x4x8xf32>, %kt: tensor<2x7x5xf32>, %v: tensor<2x5x6xf32>) -> tensor<2x4x6xf32> {
  // expected-error @+1 {{cannot multiply Q 2x4x8 by KT 2x7x5 and V 2x5x6}}
  %0 = onnx.FusedAttention(%q, %kt, %v) : (tensor<2x4x8xf32>, tensor<2x7x5xf32>, tensor<2x5x6xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// FusedAttention: a q_perm under which neither of Q's matrix dimensions is
// contiguous in the operand.
func.func @fused_attention_perm(%q: tensor<2x4x8xf32>, %kt: tensor<2x8x5xf32>, %v: tensor<2x5x6xf32>) -> tensor<2x4x6xf32> {
  // expected-error @+1 {{'q_perm' leaves neither matrix dimension contiguous}}
  %0 = onnx.FusedAttention(%q, %kt, %v) {q_perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>, tensor<2x8x5xf32>, tensor<2x5x6xf32>) -> tensor<2x4x6xf32>
  return %0 : tensor<2x4x6xf32>
}

// -----

// FusedAttention: kv_repeat 3 with K and V of 2 heads needs Q of 6, not 4;
// a kv_repeat of 0; a kv_repeat without a head dimension.
func.func @fused_attention_kv_repeat(%q: tensor<2x4x5x8xf32>, %kt: tensor<2x2x8x5xf32>, %v: tensor<2x2x5x8xf32>) -> tensor<2x4x5x8xf32> {
  // expected-error @+1 {{batch dimensions of Q 2x4x5x8, KT 2x2x8x5 and V 2x2x5x8 differ (with 'kv_repeat' 3)}}
  %0 = onnx.FusedAttention(%q, %kt, %v) {kv_repeat = 3 : i64} : (tensor<2x4x5x8xf32>, tensor<2x2x8x5xf32>, tensor<2x2x5x8xf32>) -> tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x5x8xf32>
}

// -----

func.func @fused_attention_kv_repeat_zero(%q: tensor<2x4x5x8xf32>, %kt: tensor<2x4x8x5xf32>, %v: tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32> {
  // expected-error @+1 {{'kv_repeat' must be at least 1, got 0}}
  %0 = onnx.FusedAttention(%q, %kt, %v) {kv_repeat = 0 : i64} : (tensor<2x4x5x8xf32>, tensor<2x4x8x5xf32>, tensor<2x4x5x8xf32>) -> tensor<2x4x5x8xf32>
  return %0 : tensor<2x4x5x8xf32>
}

// -----

func.func @fused_attention_kv_repeat_rank(%q: tensor<4x8xf32>, %kt: tensor<8x5xf32>, %v: tensor<5x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kv_repeat' 2 needs a head dimension: rank 3 or more, got 2}}
  %0 = onnx.FusedAttention(%q, %kt, %v) {kv_repeat = 2 : i64} : (tensor<4x8xf32>, tensor<8x5xf32>, tensor<5x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// FusedConv: Clip without its bounds, an unknown activation, a residual of
// another shape.
func.func @fused_conv_clip(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) {
  // expected-error @+1 {{Clip needs activation_params [lower, upper] with lower <= upper}}
  %0 = onnx.FusedConv(%x, %w) {activation = "Clip"} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @fused_conv_activation(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) {
  // expected-error @+1 {{activation must be none, Relu or Clip, got 'Tanh'}}
  %0 = onnx.FusedConv(%x, %w) {activation = "Tanh"} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

func.func @fused_conv_residual(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %z: tensor<1x2x4x1xf32>) {
  // expected-error @+1 {{Z must have the result's shape}}
  %0 = onnx.FusedConv(%x, %w) residual(%z) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x4xf32>
  return
}

// -----

// A scale that puts the extent past int64 (it came out as INT64_MIN, which
// read as a dynamic extent).
func.func @resize_extent_past_int64(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x?x4xf32> {
  %s = onnx.Constant dense<[1.0, 1.0, 2.5e18, 1.0]> : tensor<4xf32>
  // expected-error @+1 {{scale 2.500000e+18 makes axis 2's extent 1.000000e+19, past 2^62}}
  %0 = onnx.Resize(%x) scales(%s) {mode = "nearest"} : (tensor<1x1x4x4xf32>, tensor<4xf32>) -> tensor<1x1x?x4xf32>
  return %0 : tensor<1x1x?x4xf32>
}
