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
// RUN: sed 's/hetpar.compute_dtype = "bfloat16"/hetpar.optimizer_state_slots = 3 : i64/' %t.mlir | not hetpar-opt --hetpar-search-plan 2>&1 | FileCheck %s --check-prefix=BADSLOTS
// RUN: sed 's/hetpar.compute_dtype = "bfloat16"/hetpar.training_labels = 3 : i64/' %t.mlir | not hetpar-opt --hetpar-search-plan 2>&1 | FileCheck %s --check-prefix=BADLABELS

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
// CHECK-SAME: dist.plan = #dist.plan<schedule = "1f1b", stages = [#dist.stage_plan<devices = [0, 1], data = 1, tensor = 2, batch_shares = [1.000000e+00], recompute = false, kinds = ["A100-SXM4-80GB", "A100-SXM4-80GB"]>]>
// CHECK: onnx.MatMul
// CHECK-SAME: dist.op_sharding = #dist.op_sharding<dim = 1, parts = [16384, 16384]>
// CHECK-SAME: dist.stage_id = 0 : i64
// CHECK: onnx.Relu
// CHECK-SAME: dist.op_sharding = #dist.op_sharding<dim = 1, parts = [16384, 16384]>
// CHECK: onnx.MatMul
// CHECK-SAME: dist.op_sharding = #dist.op_sharding<dim = -1, parts = [16384, 16384], collective = all_reduce>
// Two stages, forced: one layer on each A100 (the MatMuls and the first Relu
// in layer 0, the last Relu in layer 1).
// PIPE: stages = [#dist.stage_plan<devices = [0],{{.*}}>, #dist.stage_plan<devices = [1],
// PIPE: onnx.MatMul{{.*}}dist.stage_id = 0 : i64
// PIPE: onnx.Relu{{.*}}dist.stage_id = 0 : i64
// PIPE: onnx.MatMul{{.*}}dist.stage_id = 0 : i64
// PIPE: onnx.Relu{{.*}}dist.stage_id = 1 : i64
// STAGES: error: hetpar-search-plan: 3 stages asked for, but the model has 2 layer(s) and the cluster 2 device(s)
// NOFILE: error: {{.*}}nonesuch.yaml
// MODE: error: hetpar-search-plan: mode must be 'inference' or 'training', not 'train'
// One line, without the module printed after it.
// NEG: error: hetpar-search-plan: stages must be 0 (any number) or more, not -1
// NEG-NOT: see current operation
// The compute dtype goes onto the module, where the search reads it (and a
// value that is not a dtype is an error, from the option or in the module).
// DTYPE: module attributes {dist.plan = #dist.plan<{{.*}}>, hetpar.compute_dtype = "bfloat16"}
// BADDTYPE: error: hetpar-search-plan: dtype must be 'float32', 'float16' or 'bfloat16', not 'fp8'
// BADATTR: error: hetpar-search-plan: the module's hetpar.compute_dtype is "fp8"; it must be "float32", "float16" or "bfloat16"
// The optimizer's state slots (hetpar-compile --optimizer writes them) too.
// BADSLOTS: error: hetpar-search-plan: the module's hetpar.optimizer_state_slots is 3 : i64; it must be an i64 from 0 to 2 (float32 state slots per parameter element)
// And the labels' type (hetpar-compile --loss writes it).
// BADLABELS: error: hetpar-search-plan: the module's hetpar.training_labels is 3 : i64; it must be the labels input, a #dist.graph_input with batch_dim = 0
func.func @mlp(%x: tensor<1x8192xf32>) -> tensor<1x8192xf32> {
  %w1 = onnx.Constant dense<0.5> : tensor<8192x32768xf32>
  %w2 = onnx.Constant dense<0.5> : tensor<32768x8192xf32>
  %0 = onnx.MatMul(%x, %w1) : (tensor<1x8192xf32>, tensor<8192x32768xf32>) -> tensor<1x32768xf32> loc("/layers.0/fc1/MatMul")
  %1 = onnx.Relu(%0) : (tensor<1x32768xf32>) -> tensor<1x32768xf32> loc("/layers.0/act/Relu")
  %2 = onnx.MatMul(%1, %w2) : (tensor<1x32768xf32>, tensor<32768x8192xf32>) -> tensor<1x8192xf32> loc("/layers.0/fc2/MatMul")
  %3 = onnx.Relu(%2) : (tensor<1x8192xf32>) -> tensor<1x8192xf32> loc("/layers.1/act/Relu")
  return %3 : tensor<1x8192xf32>
}
