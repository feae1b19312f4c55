// RUN: hetpar-opt %s --hetpar-search-plan="cluster=%S/Inputs/two-a100.yaml" | FileCheck %s
// RUN: hetpar-opt %s --hetpar-search-plan="cluster=%S/Inputs/two-a100.yaml stages=2" | FileCheck %s --check-prefix=PIPE
// RUN: not hetpar-opt %s --hetpar-search-plan="cluster=%S/Inputs/two-a100.yaml stages=3" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not hetpar-opt %s --hetpar-search-plan="cluster=%S/Inputs/nonesuch.yaml" 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not hetpar-opt %s --hetpar-search-plan="mode=train" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not hetpar-opt %s --hetpar-search-plan="stages=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: hetpar-opt %s --hetpar-search-plan="cluster=%S/Inputs/two-a100.yaml dtype=bfloat16" -o %t.mlir
// RUN: FileCheck %s --check-prefix=DTYPE < %t.mlir
// RUN: not hetpar-opt %s --hetpar-search-plan="dtype=fp8" 2>&1 | FileCheck %s --check-prefix=BADDTYPE
// RUN: sed 's/"bfloat16"/"fp8"/' %t.mlir | not hetpar-opt --hetpar-search-plan 2>&1 | FileCheck %s --check-prefix=BADATTR

// One sample through two 1 GB weight matrices: reading the weights bounds the
// time, so splitting them over the two A100s (Megatron's column- then
// row-parallel pair) halves it, and nothing else can (one sample: no data
// parallelism; one microbatch: a pipeline runs its stages one after the other).
// The first MatMul splits its 32768 output columns 16384/16384 (dim 1), the
// Relu follows, the second MatMul splits its contraction (dim -1) and
// all-reduces the partial sums. (The second MatMul's node is named as the last
// op of the first layer, so the layer boundary, where values are whole, does
// not fall between the pair.)
// CHECK-LABEL: module attributes
// CHECK-SAME: hetpar.plan = {microbatches = 1 : i64, mode = "inference", schedule = "1f1b", stages = [{batch_shares = array<f64: 1.000000e+00>, data = 1 : i64, devices = array<i32: 0, 1>, kinds = ["A100-SXM4-80GB", "A100-SXM4-80GB"], recompute = false, tensor = 2 : i64}]}
// CHECK: onnx.MatMul
// CHECK-SAME: hetpar.sharding = {collective = "none", dim = 1 : i64, parts = array<i64: 16384, 16384>}
// CHECK-SAME: hetpar.stage = 0 : i64
// CHECK: onnx.Relu
// CHECK-SAME: hetpar.sharding = {collective = "none", dim = 1 : i64, parts = array<i64: 16384, 16384>}
// CHECK: onnx.MatMul
// CHECK-SAME: hetpar.sharding = {collective = "all_reduce", dim = -1 : i64, parts = array<i64: 16384, 16384>}
// Two stages, forced: one layer on each A100 (the MatMuls and the first Relu
// in layer 0, the last Relu in layer 1).
// PIPE: stages = [{{.*}}devices = array<i32: 0>{{.*}}}, {{{.*}}devices = array<i32: 1>
// PIPE: onnx.MatMul{{.*}}hetpar.stage = 0 : i64
// PIPE: onnx.Relu{{.*}}hetpar.stage = 0 : i64
// PIPE: onnx.MatMul{{.*}}hetpar.stage = 0 : i64
// PIPE: onnx.Relu{{.*}}hetpar.stage = 1 : i64
// STAGES: error: hetpar-search-plan: 3 stages asked for, but the model has 2 layer(s) and the cluster 2 device(s)
// NOFILE: error: {{.*}}nonesuch.yaml
// MODE: error: hetpar-search-plan: mode must be 'inference' or 'training', not 'train'
// One line, without the module printed after it.
// NEG: error: hetpar-search-plan: stages must be 0 (any number) or more, not -1
// NEG-NOT: see current operation
// The compute dtype goes onto the module, where the search reads it (and a
// value that is not a dtype is an error, from the option or in the module).
// DTYPE: module attributes {hetpar.compute_dtype = "bfloat16", hetpar.plan = {
// BADDTYPE: error: hetpar-search-plan: dtype must be 'float32', 'float16' or 'bfloat16', not 'fp8'
// BADATTR: error: hetpar-search-plan: the module's hetpar.compute_dtype is "fp8"; it must be "float32", "float16" or "bfloat16"
func.func @mlp(%x: tensor<1x8192xf32>) -> tensor<1x8192xf32> {
  %w1 = onnx.Constant dense<0.5> : tensor<8192x32768xf32>
  %w2 = onnx.Constant dense<0.5> : tensor<32768x8192xf32>
  %0 = onnx.MatMul(%x, %w1) : (tensor<1x8192xf32>, tensor<8192x32768xf32>) -> tensor<1x32768xf32> loc("/layers.0/fc1/MatMul")
  %1 = onnx.Relu(%0) : (tensor<1x32768xf32>) -> tensor<1x32768xf32> loc("/layers.0/act/Relu")
  %2 = onnx.MatMul(%1, %w2) : (tensor<1x32768xf32>, tensor<32768x8192xf32>) -> tensor<1x8192xf32> loc("/layers.0/fc2/MatMul")
  %3 = onnx.Relu(%2) : (tensor<1x8192xf32>) -> tensor<1x8192xf32> loc("/layers.1/act/Relu")
  return %3 : tensor<1x8192xf32>
}
