// A Pow by a constant 2 or 3 is a product (hp_square, hp_cube), not powf;
// other exponents call hp_pow.
// RUN: hetpar-translate --emit-device-source %s | FileCheck %s

func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32> {onnx.name = "y"}, tensor<4xf32> {onnx.name = "z"}, tensor<4xf32> {onnx.name = "w"}) {
  %three = onnx.Constant dense<3.0> : tensor<f32>
  %two = onnx.Constant dense<2> : tensor<i64>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %0 = onnx.Pow(%x, %three) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> loc("cube")
  %1 = onnx.Pow(%x, %two) : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32> loc("square")
  %2 = onnx.Pow(%x, %half) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> loc("root")
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-DAG: = hp_cube(v0);
// CHECK-DAG: = hp_square(v0);
// CHECK-DAG: = hp_pow(v0, (float)5.00000000e-01f);
