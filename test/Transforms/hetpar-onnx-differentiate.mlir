// RUN: hetpar-opt %s --split-input-file --allow-unregistered-dialect --hetpar-onnx-differentiate --verify-diagnostics | FileCheck %s

// A two-layer MLP, loss = mean(Gemm(Relu(Gemm(x, W1^T) + b1), W2)). The
// function returns the loss, then one gradient per parameter global in module
// order, each named PARAM.grad and marked hetpar.gradient_of.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: -> (tensor<f32> {onnx.name = "loss"}, tensor<8x3xf32> {hetpar.gradient_of = @fc1.weight, onnx.name = "fc1.weight.grad"}, tensor<8xf32> {hetpar.gradient_of = @fc1.bias, onnx.name = "fc1.bias.grad"}, tensor<8x2xf32> {hetpar.gradient_of = @fc2.weight, onnx.name = "fc2.weight.grad"}, tensor<2xf32> {hetpar.gradient_of = @unused, hetpar.no_gradient, onnx.name = "unused.grad"})
// CHECK: %[[W1:.*]] = ml_program.global_load @fc1.weight
// CHECK: %[[B1:.*]] = ml_program.global_load @fc1.bias
// CHECK: %[[W2:.*]] = ml_program.global_load @fc2.weight
// CHECK: %[[Z:.*]] = onnx.Gemm(%arg0, %[[W1]], %[[B1]]) {transB = 1 : i64}
// CHECK: %[[H:.*]] = onnx.Relu(%[[Z]])
// CHECK: %[[Y:.*]] = onnx.Gemm(%[[H]], %[[W2]])
// CHECK: %[[LOSS:.*]] = onnx.ReduceMean(%[[Y]])
// The seed d loss = 1, spread evenly over the 8 elements of Y.
// CHECK: %[[ONE:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// CHECK: onnx.Expand({{.*}}) -> tensor<4x2xf32>
// CHECK: %[[N:.*]] = onnx.Constant dense<8.000000e+00> : tensor<f32>
// CHECK: %[[DY:.*]] = onnx.Div(%{{.*}}, %[[N]]) : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf32>
// Y = H W2: dW2 = H^T dY, dH = dY W2^T.
// CHECK-DAG: %[[DW2:.*]] = onnx.Gemm(%[[H]], %[[DY]]) {transA = 1 : i64} : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
// CHECK-DAG: %[[DH:.*]] = onnx.Gemm(%[[DY]], %[[W2]]) {transB = 1 : i64} : (tensor<4x2xf32>, tensor<8x2xf32>) -> tensor<4x8xf32>
// Relu: Where(Z > 0, dH, 0).
// CHECK: %[[ZERO:.*]] = onnx.Constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[GT:.*]] = onnx.Greater(%[[Z]], %[[ZERO]])
// CHECK: %[[DZ:.*]] = onnx.Where(%[[GT]], %[[DH]], %{{.*}}) {{.*}} -> tensor<4x8xf32>
// Z = x W1^T + b1 (transB): dW1 = dZ^T x, db1 = the sum of dZ over the batch;
// no gradient for the input x.
// CHECK-NOT: onnx.Gemm(%[[DZ]], %[[W1]])
// CHECK-DAG: %[[DW1:.*]] = onnx.Gemm(%[[DZ]], %arg0) {transA = 1 : i64} : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK-DAG: %[[DB1:.*]] = onnx.ReduceSum(%[[DZ]], %{{.*}}) {{.*}} -> tensor<1x8xf32>
// CHECK-DAG: %[[DB1R:.*]] = onnx.Reshape(%[[DB1]], %{{.*}}) {{.*}} -> tensor<8xf32>
// A parameter the loss does not depend on: a zero gradient.
// CHECK: %[[DU:.*]] = onnx.Constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %[[LOSS]], %[[DW1]], %[[DB1R]], %[[DW2]], %[[DU]]
module {
  ml_program.global private mutable @fc1.weight(dense<0.5> : tensor<8x3xf32>) : tensor<8x3xf32> {hetpar.role = "param"}
  ml_program.global private mutable @fc1.bias(dense<0.0> : tensor<8xf32>) : tensor<8xf32> {hetpar.role = "param"}
  ml_program.global private mutable @fc2.weight(dense<0.25> : tensor<8x2xf32>) : tensor<8x2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @unused(dense<1.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  ml_program.global private @frozen(dense<1.0> : tensor<2xf32>) : tensor<2xf32>
  func.func @mlp(%x: tensor<4x3xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}) {
    %w1 = ml_program.global_load @fc1.weight : tensor<8x3xf32>
    %b1 = ml_program.global_load @fc1.bias : tensor<8xf32>
    %w2 = ml_program.global_load @fc2.weight : tensor<8x2xf32>
    %0 = onnx.Gemm(%x, %w1, %b1) {transB = 1 : i64} : (tensor<4x3xf32>, tensor<8x3xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = onnx.Relu(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %2 = onnx.Gemm(%1, %w2) : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
    %3 = onnx.ReduceMean(%2) {keepdims = 0 : i64} : (tensor<4x2xf32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

// A parameter used twice (and loaded twice): its gradients are summed.
// transA on the forward Gemm: op(A) = A^T, so dA = B dY^T (a Gemm with transB).
// CHECK-LABEL: func.func @shared
// CHECK-SAME: tensor<3x4xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"}
// CHECK: %[[W:.*]] = ml_program.global_load @w
// CHECK: %[[W2:.*]] = ml_program.global_load @w
// CHECK: onnx.Gemm(%[[W]], %arg0) {transA = 1 : i64}
// CHECK: %[[D1:.*]] = onnx.Gemm(%arg0, %{{.*}}) {transB = 1 : i64} : (tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
// CHECK: %[[SUM:.*]] = onnx.Add(%[[D1]], %{{.*}}) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[SUM]]
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<3x4xf32>) : tensor<3x4xf32> {hetpar.role = "param"}
  func.func @shared(%x: tensor<3x5xf32> {onnx.name = "x"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<3x4xf32>
    %w2 = ml_program.global_load @w : tensor<3x4xf32>
    %0 = onnx.Gemm(%w, %x) {transA = 1 : i64} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<4x5xf32>) -> tensor<f32>
    %2 = onnx.ReduceSum(%w2) {keepdims = 0 : i64} : (tensor<3x4xf32>) -> tensor<f32>
    %3 = onnx.Add(%1, %2) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %3 : tensor<f32>
  }
}

// -----

// Cross-entropy: its fused gradient op from the log-probabilities; MatMul's
// gradient for a matrix B: A^T dY, one Gemm with transA (no transposed copy).
// CHECK-LABEL: func.func @xent
// CHECK: %[[Y:.*]] = onnx.MatMul(%arg0, %{{.*}})
// CHECK: %[[L:.*]], %[[LP:.*]] = onnx.SoftmaxCrossEntropyLoss(%[[Y]], %arg1) {ignore_index = -100 : i64}
// CHECK: %[[ONE:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DS:.*]] = onnx.SoftmaxCrossEntropyLossGrad(%[[ONE]], %[[LP]], %arg1) {ignore_index = -100 : i64} : (tensor<f32>, tensor<4x5xf32>, tensor<4xi64>) -> tensor<4x5xf32>
// CHECK-NOT: onnx.Transpose
// CHECK: %[[DW:.*]] = onnx.Gemm(%arg0, %[[DS]]) {transA = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: return %[[L]], %[[DW]]
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<3x5xf32>) : tensor<3x5xf32> {hetpar.role = "param"}
  func.func @xent(%x: tensor<4x3xf32> {onnx.name = "x"}, %y: tensor<4xi64> {onnx.name = "labels"}) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<3x5xf32>
    %0 = onnx.MatMul(%x, %w) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %1, %2 = onnx.SoftmaxCrossEntropyLoss(%0, %y) {ignore_index = -100 : i64, reduction = "mean"} : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
    return %1 : tensor<f32>
  }
}

// -----

// A weight matrix times a batch of matrices (x [2, 3, 4] @ w [4, 5], as every
// linear layer of an exported transformer): both gradients are single Gemms
// over the 2 x 3 rows (the reshapes are views). dW = x^T dY is not a product
// per batch entry summed afterwards, which held 2 x [4, 5] at once; dX = dY
// w^T reads w through transB, with no transposed copy of w.
// CHECK-LABEL: func.func @linear
// CHECK: %[[W:.*]] = ml_program.global_load @w
// CHECK: %[[A:.*]] = onnx.Mul(%arg0,
// CHECK: onnx.MatMul(%[[A]], %[[W]]) :
// CHECK-NOT: onnx.ReduceSum({{.*}}tensor<2x4x5xf32>
// CHECK-NOT: onnx.Transpose
// CHECK-DAG: %[[X2:.*]] = onnx.Reshape(%[[A]], %{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
// CHECK-DAG: %[[DY2:.*]] = onnx.Reshape(%{{.*}}, %{{.*}}) : (tensor<2x3x5xf32>, tensor<2xi64>) -> tensor<6x5xf32>
// CHECK-DAG: %[[DX2:.*]] = onnx.Gemm(%[[DY2]], %[[W]]) {transB = 1 : i64} : (tensor<6x5xf32>, tensor<4x5xf32>) -> tensor<6x4xf32>
// CHECK-DAG: %[[DW:.*]] = onnx.Gemm(%[[X2]], %[[DY2]]) {transA = 1 : i64} : (tensor<6x4xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
// CHECK: return %{{.*}}, %[[DW]]
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<4x5xf32>) : tensor<4x5xf32> {hetpar.role = "param"}
  ml_program.global private mutable @v(dense<0.5> : tensor<2x3x4xf32>) : tensor<2x3x4xf32> {hetpar.role = "param"}
  func.func @linear(%x: tensor<2x3x4xf32> {onnx.name = "x"}) -> tensor<f32> {
    %v = ml_program.global_load @v : tensor<2x3x4xf32>
    %w = ml_program.global_load @w : tensor<4x5xf32>
    %0 = onnx.Mul(%x, %v) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %1 = onnx.MatMul(%0, %w) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
    %2 = onnx.ReduceSum(%1) {keepdims = 0 : i64} : (tensor<2x3x5xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  // expected-error @+1 {{the loss (result 0) must be a float scalar, not 'tensor<2xf32>'}}
  func.func @not_scalar() -> tensor<2xf32> {
    %w = ml_program.global_load @w : tensor<2xf32>
    return %w : tensor<2xf32>
  }
}

// -----

module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  // expected-error @+1 {{the function returns nothing to use as the loss}}
  func.func @no_result() {
    return
  }
}

// -----

// Globals without hetpar.role = "param" are not trained.
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2xf32>) : tensor<2xf32>
  // expected-error @+1 {{nothing to train: no parameter global (run hetpar-train-lift-params first)}}
  func.func @no_param() -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<2xf32>
    %0 = onnx.ReduceSum(%w) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// An op of another dialect on the path: no rule.
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  func.func @foreign() -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<2xf32>
    // expected-error @+1 {{no gradient rule for op test.magic: it lies between a parameter and the loss}}
    %0 = "test.magic"(%w) : (tensor<2xf32>) -> tensor<2xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// An ONNX op without a rule (Hardmax, kept as onnx.Generic), named by its
// node (a bare name location, as reported without a file position).
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2x3xf32>) : tensor<2x3xf32> {hetpar.role = "param"}
  func.func @hardmax() -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<2x3xf32>
    // expected-error @unknown {{no gradient rule for node 'hm' (Hardmax): it lies between a parameter and the loss}}
    %0 = onnx.Generic "Hardmax"(%w) attributes {attrs = {}, domain = "", version = 17 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("hm")
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2x3xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// Off the path an op needs no rule: Tan of an input, and an integer ArgMax of
// the parameter.
// CHECK-LABEL: func.func @off_path
// CHECK-SAME: -> (tensor<f32>, tensor<2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"})
// CHECK: %[[T:.*]] = onnx.Tan(%arg0)
// CHECK: %[[DW:.*]] = onnx.Mul(%{{.*}}, %[[T]])
// CHECK: return %{{.*}}, %[[DW]] : tensor<f32>, tensor<2xf32>
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  func.func @off_path(%x: tensor<2xf32> {onnx.name = "x"}) -> (tensor<f32>, tensor<1xi64>) {
    %w = ml_program.global_load @w : tensor<2xf32>
    %t = onnx.Tan(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %0 = onnx.Mul(%t, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    %2 = onnx.ArgMax(%w) : (tensor<2xf32>) -> tensor<1xi64>
    return %1, %2 : tensor<f32>, tensor<1xi64>
  }
}

// -----

// Training-mode Dropout: dX = dY * mask / (1 - ratio), with the saved mask
// (no second draw). Here dY = 1 (ReduceSum's gradient, expanded).
// CHECK-LABEL: func.func @dropout_training
// CHECK: %[[Y:[^,]+]], %[[M:[^ ]+]] = onnx.Dropout(%[[W:[^)]+]]) ratio(%[[R:[^)]+]]) training_mode
// CHECK-DAG: %[[KEEP:.*]] = onnx.Sub(%{{[0-9]+}}, %[[R]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-DAG: %[[MF:.*]] = onnx.Cast(%[[M]]) {to = f32}
// CHECK-DAG: %[[DM:.*]] = onnx.Mul(%{{.*}}, %[[MF]])
// CHECK: %[[DX:.*]] = onnx.Div(%[[DM]], %[[KEEP]])
// CHECK: return %{{.*}}, %[[DX]]
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "param"}
  func.func @dropout_training(%s: tensor<i64>) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<4xf32>
    %r = onnx.Constant dense<0.25> : tensor<f32>
    %t = onnx.Constant dense<true> : tensor<i1>
    %0:2 = onnx.Dropout(%w) ratio(%r) training_mode(%t) step(%s) {seed = 1 : i64} : (tensor<4xf32>, tensor<f32>, tensor<i1>, tensor<i64>) -> (tensor<4xf32>, tensor<4xi1>)
    %1 = onnx.ReduceSum(%0#0) {keepdims = 0 : i64} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// Without its mask result a training-mode Dropout's gradient would need a
// second draw: hetpar-train-dropout adds the result.
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "param"}
  func.func @dropout_no_mask() -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<4xf32>
    %t = onnx.Constant dense<true> : tensor<i1>
    // expected-error @+1 {{gradient of Dropout in training mode needs its mask result (run hetpar-train-dropout first)}}
    %0 = onnx.Dropout(%w) training_mode(%t) : (tensor<4xf32>, tensor<i1>) -> tensor<4xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

module {
  ml_program.global private mutable @w(dense<0.5> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "param"}
  func.func @dropout_runtime_mode(%t: tensor<i1>) -> tensor<f32> {
    %w = ml_program.global_load @w : tensor<4xf32>
    // expected-error @+1 {{gradient of Dropout needs a constant training_mode}}
    %0:2 = onnx.Dropout(%w) training_mode(%t) : (tensor<4xf32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xi1>)
    %1 = onnx.ReduceSum(%0#0) {keepdims = 0 : i64} : (tensor<4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// Training-mode BatchNormalization: the statistics are recomputed from X
// (ReduceMean over every axis but the channel), and the running statistics,
// which do not reach Y, get no gradient (they are no parameters here).
// CHECK-LABEL: func.func @batchnorm_training
// CHECK: onnx.ReduceMean(%{{.*}}, %{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
// CHECK: onnx.ReduceSum(%{{.*}}, %{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<1x3x1xf32>
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x3x4xf32>, tensor<3xf32>
module {
  ml_program.global private mutable @x(dense<0.5> : tensor<2x3x4xf32>) : tensor<2x3x4xf32> {hetpar.role = "param"}
  ml_program.global private mutable @scale(dense<1.0> : tensor<3xf32>) : tensor<3xf32> {hetpar.role = "param"}
  ml_program.global private mutable @mean(dense<0.0> : tensor<3xf32>) : tensor<3xf32> {hetpar.role = "buffer"}
  func.func @batchnorm_training() -> tensor<f32> {
    %x = ml_program.global_load @x : tensor<2x3x4xf32>
    %s = ml_program.global_load @scale : tensor<3xf32>
    %m = ml_program.global_load @mean : tensor<3xf32>
    %0:3 = onnx.BatchNormalization(%x, %s, %m, %m, %s) {training_mode = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
    ml_program.global_store @mean = %0#1 : tensor<3xf32>
    %1 = onnx.ReduceSum(%0#0) {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// -----

// A tensor-parallel forward pass (device 1 of [0, 1], hetpar-dist-partition):
// the gradient of a summing all-reduce passes through (Megatron's g), that of
// an all-gather is this device's slice (columns 2..3 of 4), and that of a
// dist.grad_all_reduce is summed over the group (Megatron's f), which then
// leaves the function. @u enters the group but reaches no loss on this
// device (as where only another device's part of the graph reads it): its
// gradient's all-reduce still runs, on zeros, marked to run in the backward
// part of a pipeline's schedule, so that both devices' collectives match.
// CHECK-LABEL: func.func @tensor_parallel
// CHECK-NOT: dist.grad_all_reduce
// CHECK: %[[W:.*]] = ml_program.global_load @w : tensor<3x2xf32>
// CHECK: %[[U:.*]] = ml_program.global_load @u : tensor<4xf32>
// CHECK: %[[P:.*]] = onnx.MatMul(%arg0, %[[W]])
// CHECK: %[[R:.*]] = dist.all_reduce %[[P]] on @mesh [0, 1] reduction sum
// CHECK: %[[G:.*]] = dist.all_gather %[[R]] on @mesh [0, 1] dim 1 sizes [2, 2]
// CHECK: %[[DG:.*]] = onnx.Slice(%{{.*}}, %{{.*}}, %{{.*}}) axes(%{{.*}}) : (tensor<2x4xf32>, {{.*}}) -> tensor<2x2xf32>
// CHECK: %[[DW:.*]] = onnx.Gemm(%arg0, %[[DG]]) {transA = 1 : i64}
// CHECK: %[[ZERO:.*]] = onnx.Constant dense<0.000000e+00> : tensor<4xf32>
// CHECK: %[[DU:.*]] = dist.all_reduce %[[ZERO]] on @mesh [0, 1] reduction sum {hetpar.backward} : tensor<4xf32> -> tensor<4xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DU]]
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
ml_program.global private mutable @w(dense<0.5> : tensor<3x2xf32>) : tensor<3x2xf32> {hetpar.role = "param"}
ml_program.global private mutable @u(dense<0.5> : tensor<4xf32>) : tensor<4xf32> {hetpar.role = "param"}
func.func @tensor_parallel(%x: tensor<2x3xf32>) -> tensor<f32> attributes {dist.device = 1 : i64} {
  %w = ml_program.global_load @w : tensor<3x2xf32>
  %u = ml_program.global_load @u : tensor<4xf32>
  %ue = dist.grad_all_reduce %u on @mesh [0, 1] : tensor<4xf32> -> tensor<4xf32>
  %p = onnx.MatMul(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %r = dist.all_reduce %p on @mesh [0, 1] reduction sum : tensor<2x2xf32> -> tensor<2x2xf32>
  %g = dist.all_gather %r on @mesh [0, 1] dim 1 sizes [2, 2] : tensor<2x2xf32> -> tensor<2x4xf32>
  %l = onnx.ReduceSum(%g) {keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Resharding collectives (device 0 of [0, 1]): the gradient of a summing
// reduce-scatter is the all-gather of the result's gradient (each device's
// partial sum reached every block), that of an all-to-all the all-to-all
// back (split and concat swapped). @v's all-to-all reaches no loss on this
// device: its backward all-to-all still runs, on zeros, so that both
// devices' collectives match.
// CHECK-LABEL: func.func @resplit
// CHECK: %[[RS:.*]] = dist.reduce_scatter %{{.*}} on @mesh [0, 1] reduction sum dim 0 sizes [3, 1] : tensor<4x6xf32> -> tensor<3x6xf32>
// CHECK: dist.all_to_all %[[RS]] on @mesh [0, 1] split 1 [4, 2] concat 0 [3, 1] : tensor<3x6xf32> -> tensor<4x4xf32>
// CHECK: %[[ZERO:.*]] = onnx.Constant dense<0.000000e+00> : tensor<4x1xf32>
// CHECK: %[[DV:.*]] = dist.all_to_all %[[ZERO]] on @mesh [0, 1] split 0 [2, 2] concat 1 [1, 1] {hetpar.backward} : tensor<4x1xf32> -> tensor<2x2xf32>
// CHECK: %[[DA:.*]] = dist.all_to_all %{{.*}} on @mesh [0, 1] split 0 [3, 1] concat 1 [4, 2] {hetpar.backward} : tensor<4x4xf32> -> tensor<3x6xf32>
// CHECK: %[[DW:.*]] = dist.all_gather %[[DA]] on @mesh [0, 1] dim 0 sizes [3, 1] {hetpar.backward} : tensor<3x6xf32> -> tensor<4x6xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DV]]
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
ml_program.global private mutable @w(dense<0.5> : tensor<4x6xf32>) : tensor<4x6xf32> {hetpar.role = "param"}
ml_program.global private mutable @v(dense<0.5> : tensor<2x2xf32>) : tensor<2x2xf32> {hetpar.role = "param"}
func.func @resplit() -> tensor<f32> attributes {dist.device = 0 : i64} {
  %w = ml_program.global_load @w : tensor<4x6xf32>
  %vs = ml_program.global_load @v : tensor<2x2xf32>
  %r = dist.reduce_scatter %w on @mesh [0, 1] reduction sum dim 0 sizes [3, 1] : tensor<4x6xf32> -> tensor<3x6xf32>
  %a = dist.all_to_all %r on @mesh [0, 1] split 1 [4, 2] concat 0 [3, 1] : tensor<3x6xf32> -> tensor<4x4xf32>
  %b = dist.all_to_all %vs on @mesh [0, 1] split 1 [1, 1] concat 0 [2, 2] : tensor<2x2xf32> -> tensor<4x1xf32>
  %l = onnx.ReduceSum(%a) {keepdims = 0 : i64} : (tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A tensor-parallel device of a pipeline stage that neither sends nor
// returns anything (another device of its group sends what leaves the
// stage): it is differentiated from its group entry, whose backward
// all-reduce (on zeros here) brings the gradient the sender received.
// CHECK-LABEL: func.func @sends_nothing
// CHECK-SAME: -> (tensor<3x2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"})
// CHECK: %[[ZERO:.*]] = onnx.Constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK: %[[DP:.*]] = dist.all_reduce %[[ZERO]] on @mesh [0, 1] reduction sum {hetpar.backward}
// CHECK: %[[DW:.*]] = onnx.Gemm(%arg0, %[[DP]]) {transA = 1 : i64}
// CHECK: return %[[DW]]
dist.mesh @mesh devices [#dist.device<0, "A100">, #dist.device<1, "A100">]
ml_program.global private mutable @w(dense<0.5> : tensor<3x2xf32>) : tensor<3x2xf32> {hetpar.role = "param"}
func.func @sends_nothing(%x: tensor<2x3xf32>) attributes {dist.device = 1 : i64} {
  %w = ml_program.global_load @w : tensor<3x2xf32>
  %p = onnx.MatMul(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %e = dist.grad_all_reduce %p on @mesh [0, 1] : tensor<2x2xf32> -> tensor<2x2xf32>
  return
}
