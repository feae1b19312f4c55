// RUN: hetpar-opt %s --split-input-file --hetpar-onnx-verify-static --verify-diagnostics

func.func @static(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = onnx.Relu(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{input 'x' has dynamic type 'tensor<?x3xf32>'; give its shape with --input-shape}}
func.func @dynamic_input(%x: tensor<?x3xf32> {onnx.name = "x"}) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}

// -----

// Only the op where dynamism starts is reported, with the input whose values
// decide the shape.
func.func @data_dependent(%n: tensor<i64> {onnx.name = "n"}) -> tensor<?xi64> {
  %zero = onnx.Constant dense<0> : tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  // expected-error @+1 {{op Range has a result of dynamic type 'tensor<?xi64>': the shape depends on the values of input 'n', which HetPar does not support}}
  %0 = onnx.Range(%zero, %n, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %1 = onnx.Neg(%0) : (tensor<?xi64>) -> tensor<?xi64>
  return %1 : tensor<?xi64>
}

// -----

func.func @unsupported(%x: tensor<2x3xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{op TopK has a result of dynamic type 'tensor<*xf32>': unsupported op TopK (HetPar cannot infer its shapes)}}
  %0 = onnx.Generic "TopK"(%x) attributes {attrs = {}, domain = "", version = 17 : i64} : (tensor<2x3xf32>) -> tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

// A shape computed by an op that did not fold (a cast of NaN to an integer) is
// named as the cause; the data input is not blamed.
func.func @unfolded(%x: tensor<2x6xf32> {onnx.name = "x"}) -> tensor<?x?xf32> {
  %nan = onnx.Constant dense<[0x7FC00000, 3.0]> : tensor<2xf32>
  %s = onnx.Cast(%nan) {to = i64} : (tensor<2xf32>) -> tensor<2xi64>
  // expected-error @+1 {{op Reshape has a result of dynamic type 'tensor<?x?xf32>': its shape is computed by op Cast, which HetPar could not fold}}
  %0 = onnx.Reshape(%x, %s) : (tensor<2x6xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// An If whose branches disagree on a shape depends on its condition's value.
func.func @if_on_input(%c: tensor<i1> {onnx.name = "c"}, %x: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{op If has a result of dynamic type 'tensor<?x?xf32>': the shape depends on the values of input 'c'}}
  %0 = onnx.Generic "If"(%c) attributes {attrs = {}, domain = "", region_names = ["then_branch", "else_branch"], version = 17 : i64} bodies {
    onnx.Yield %x : tensor<2x3xf32>
  }, {
    onnx.Yield %y : tensor<3x2xf32>
  } : (tensor<i1>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// A tensor of more than 2^53 bytes: 2^30 x 2^22 float32 is 2^54 bytes.
// expected-error @+1 {{input 'x' of type 'tensor<1073741824x4194304xf32>' holds more than 2^53 bytes (8 PiB), the most HetPar plans for one tensor}}
func.func @oversized_input(%x: tensor<1073741824x4194304xf32> {onnx.name = "x"}) -> tensor<1073741824x4194304xf32> {
  return %x : tensor<1073741824x4194304xf32>
}

// -----

// An empty tensor whose other extents multiply past 2^53 bytes: the code that
// indexes it computes strides from them all the same (2^31 x 2^22 float32).
// expected-error @+1 {{input 'x' of type 'tensor<2147483648x0x4194304xf32>' is empty, but its other extents span more than 2^53 bytes (8 PiB; its strides do), the most HetPar plans for one tensor}}
func.func @oversized_empty_input(%x: tensor<2147483648x0x4194304xf32> {onnx.name = "x"}) -> tensor<2147483648x0x4194304xf32> {
  return %x : tensor<2147483648x0x4194304xf32>
}

// -----

// Only the op where the size starts is reported (2^31 x 2^22 float32 is 2^55
// bytes).
func.func @oversized_result(%x: tensor<2147483648x1xf32>, %y: tensor<1x4194304xf32>) -> tensor<2147483648x4194304xf32> {
  // expected-error @+1 {{op Add has a result of type 'tensor<2147483648x4194304xf32>' that holds more than 2^53 bytes (8 PiB)}}
  %0 = onnx.Add(%x, %y) : (tensor<2147483648x1xf32>, tensor<1x4194304xf32>) -> tensor<2147483648x4194304xf32>
  %1 = onnx.Neg(%0) : (tensor<2147483648x4194304xf32>) -> tensor<2147483648x4194304xf32>
  return %1 : tensor<2147483648x4194304xf32>
}
