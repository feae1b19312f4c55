// A user's own pass, built out of tree against the installed HetPar CMake package
// (find_package(HetPar)) and loaded by hetpar-opt. examples/pass-plugin.
// RUN: rm -rf %t && mkdir -p %t
// RUN: "%cmake" --install %builddir --prefix %t/install > %t/install.log
// RUN: "%cmake" -S %srcroot/examples/pass-plugin -B %t/build -G "%generator" -DCMAKE_CXX_COMPILER=%cxx -DHetPar_DIR=%t/install/lib/cmake/hetpar > %t/configure.log
// RUN: "%cmake" --build %t/build > %t/build.log
// RUN: %t/install/bin/hetpar-opt --load-pass-plugin=%t/build/HetParExamplePlugin.so --pass-pipeline='builtin.module(func.func(example-annotate-flops))' %s | FileCheck %s

// The plugin's cost model: collectives take twice as long, so a data-parallel
// plan's gradient all-reduce, and with it the step, takes longer.
// RUN: echo '{"stages": [{"first": "/0/Gemm", "last": "/4/Gemm", "devices": [0, 1, 2, 3, 4, 5, 6, 7], "data": 8}], "mode": "training"}' > %t/dp.json
// RUN: %t/install/bin/hetpar-compile %models/mlp/model-dynamic.onnx --input-shape x=64x32 --cluster %srcroot/examples/clusters/dgx-h100x8.yaml --plan %t/dp.json --plan-only -o %t/default | FileCheck %s --check-prefix=PLAN
// RUN: %t/install/bin/hetpar-compile --load-pass-plugin=%t/build/HetParExamplePlugin.so --cost-model example-congested %models/mlp/model-dynamic.onnx --input-shape x=64x32 --cluster %srcroot/examples/clusters/dgx-h100x8.yaml --plan %t/dp.json --plan-only -o %t/congested | FileCheck %s --check-prefix=PLAN
// PLAN: plan (given): 1 stage(s), 1 microbatch(es), 1f1b, training
// RUN: FileCheck %s --check-prefix=CONGESTED --input-file=%t/congested/plan.json
// CONGESTED: "cost_model": "example-congested"
// RUN: %python %srcroot/test/lib/compare-step.py %t/default/plan.json %t/congested/plan.json | FileCheck %s --check-prefix=SLOWER
// SLOWER: second is slower
// RUN: %expect-exit 1 %t/install/bin/hetpar-compile --cost-model example-congested %models/mlp/model.onnx --plan-only -o %t/none | FileCheck %s --check-prefix=UNREGISTERED
// UNREGISTERED: error: unknown cost model 'example-congested' (registered: default)

// A file that is no pass plugin, or none at all, is an error of hetpar-opt
// (MLIR's option alone prints "Request ignored" and exits 0).
// RUN: %expect-exit 1 %t/install/bin/hetpar-opt --load-pass-plugin=%t/build/CMakeCache.txt %s 2>&1 | FileCheck %s --check-prefix=NOTPLUGIN
// NOTPLUGIN: hetpar-opt: error: cannot load pass plugin '{{.*}}CMakeCache.txt': Could not load library
// RUN: %expect-exit 1 %t/install/bin/hetpar-opt --load-pass-plugin %t/missing.so %s 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: hetpar-opt: error: cannot load pass plugin '{{.*}}missing.so'
// The same from a response file.
// RUN: echo "--load-pass-plugin=%t/missing.so" > %t/args.rsp
// RUN: %expect-exit 1 %t/install/bin/hetpar-opt @%t/args.rsp %s 2>&1 | FileCheck %s --check-prefix=MISSING

// By hand: MatMul 1x4 by 4x8 = 2*1*8*4 = 64 FLOP, Relu on 8 elements = 8; total 72.
// CHECK: func.func @mlp{{.*}} attributes {example.total_flops = 72 : i64}
// CHECK: onnx.MatMul{{.*}}example.flops = 64 : i64
// CHECK: onnx.Relu{{.*}}example.flops = 8 : i64
func.func @mlp(%x: tensor<1x4xf32>, %w: tensor<4x8xf32>) -> tensor<1x8xf32> {
  %0 = onnx.MatMul(%x, %w) : (tensor<1x4xf32>, tensor<4x8xf32>) -> tensor<1x8xf32>
  %1 = onnx.Relu(%0) : (tensor<1x8xf32>) -> tensor<1x8xf32>
  return %1 : tensor<1x8xf32>
}
