// A user's own pass, built out of tree against the installed HetPar CMake package
// (find_package(HetPar)) and loaded by hetpar-opt. examples/pass-plugin.
// RUN: rm -rf %t && mkdir -p %t
// RUN: "%cmake" --install %builddir --prefix %t/install > %t/install.log
// RUN: "%cmake" -S %srcroot/examples/pass-plugin -B %t/build -G "%generator" -DCMAKE_CXX_COMPILER=%cxx -DHetPar_DIR=%t/install/lib/cmake/hetpar > %t/configure.log
// RUN: "%cmake" --build %t/build > %t/build.log
// RUN: %t/install/bin/hetpar-opt --load-pass-plugin=%t/build/HetParExamplePlugin.so --pass-pipeline='builtin.module(func.func(example-annotate-flops))' %s | FileCheck %s

// By hand: MatMul 1x4 by 4x8 = 2*1*8*4 = 64 FLOP, Relu on 8 elements = 8; total 72.
// CHECK: func.func @mlp{{.*}} attributes {example.total_flops = 72 : i64}
// CHECK: onnx.MatMul{{.*}}example.flops = 64 : i64
// CHECK: onnx.Relu{{.*}}example.flops = 8 : i64
func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
  %1 = onnx.Relu(%0) : (tensor<1x8xf32>) -> tensor<1x8xf32>
  return %1 : tensor<1x8xf32>
}
