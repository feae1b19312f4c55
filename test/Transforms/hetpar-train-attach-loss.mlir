// RUN: split-file %s %t
// RUN: hetpar-opt %t/output.mlir --hetpar-train-attach-loss | FileCheck %s --check-prefix=OUTPUT
// RUN: hetpar-opt %t/logits.mlir --split-input-file --hetpar-train-attach-loss='loss=cross-entropy' | FileCheck %s --check-prefix=XENT
// RUN: hetpar-opt %t/logits.mlir --split-input-file --hetpar-train-attach-loss='loss=mse labels=target' | FileCheck %s --check-prefix=MSE
// RUN: hetpar-opt %t/two-outputs.mlir --hetpar-train-attach-loss='loss=cross-entropy output=1' | FileCheck %s --check-prefix=OUT1
// RUN: hetpar-opt %t/output-errors.mlir --split-input-file --hetpar-train-attach-loss --verify-diagnostics
// RUN: hetpar-opt %t/xent-errors.mlir --split-input-file --hetpar-train-attach-loss='loss=cross-entropy' --verify-diagnostics
// RUN: hetpar-opt %t/range.mlir --hetpar-train-attach-loss='loss=mse output=2' --verify-diagnostics
// RUN: hetpar-opt %t/unknown.mlir --hetpar-train-attach-loss='loss=hinge' --verify-diagnostics
// RUN: hetpar-opt %t/labels-taken.mlir --hetpar-train-attach-loss='loss=mse' --verify-diagnostics
// RUN: hetpar-opt %t/labels-path.mlir --hetpar-train-attach-loss='loss=mse labels=../lab' --verify-diagnostics
// RUN: hetpar-opt %t/labels-path.mlir --hetpar-train-attach-loss='loss=mse labels=..' --verify-diagnostics

//--- output.mlir
// loss=output (the default): the scalar output is the loss; the result is
// renamed "loss" and no input is added.
// OUTPUT-LABEL: func.func @main
// OUTPUT-SAME: (%arg0: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"})
// OUTPUT: %[[L:.*]] = onnx.ReduceMean
// OUTPUT-NEXT: return %[[L]] : tensor<f32>
func.func @main(%x: tensor<4x2xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "y"}) {
  %0 = onnx.ReduceMean(%x) {keepdims = 0 : i64} : (tensor<4x2xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

//--- logits.mlir
// loss=cross-entropy on logits [B, C]: int64 labels [B] appended (batch axis
// 0); SoftmaxCrossEntropyLoss (ignore_index -100 and the mean, as PyTorch;
// reduction = "mean" is the default and not printed) on the logits as they are.
// XENT-LABEL: func.func @classifier
// XENT-SAME: (%arg0: tensor<4x3xf32> {onnx.name = "x"}, %arg1: tensor<4xi64> {dist.batch_dim = 0 : i64, onnx.name = "labels"}) -> (tensor<f32> {onnx.name = "loss"})
// XENT: %[[Y:.*]] = onnx.Relu
// XENT-NEXT: %[[L:.*]], %{{.*}} = onnx.SoftmaxCrossEntropyLoss(%[[Y]], %arg1) {ignore_index = -100 : i64} : (tensor<4x3xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x3xf32>)
// XENT-NEXT: return %[[L]] : tensor<f32>
// loss=mse: labels of the output's shape and type, named by labels=; the mean
// of the squared difference.
// MSE-LABEL: func.func @classifier
// MSE-SAME: %arg1: tensor<4x3xf32> {dist.batch_dim = 0 : i64, onnx.name = "target"}) -> (tensor<f32> {onnx.name = "loss"})
// MSE: %[[Y:.*]] = onnx.Relu
// MSE-NEXT: %[[D:.*]] = onnx.Sub(%[[Y]], %arg1)
// MSE-NEXT: %[[SQ:.*]] = onnx.Mul(%[[D]], %[[D]])
// MSE-NEXT: %[[L:.*]] = onnx.ReduceMean(%[[SQ]]) {keepdims = 0 : i64{{.*}}} : (tensor<4x3xf32>) -> tensor<f32>
// MSE-NEXT: return %[[L]] : tensor<f32>
func.func @classifier(%x: tensor<4x3xf32> {onnx.name = "x"}) -> (tensor<4x3xf32> {onnx.name = "y"}) {
  %0 = onnx.Relu(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A language model's logits [B, S, V] against labels [B, S]: both flattened
// to [B*S, V] and [B*S].
// XENT-LABEL: func.func @lm
// XENT-SAME: %arg1: tensor<2x5xi64> {dist.batch_dim = 0 : i64, onnx.name = "labels"}) -> (tensor<f32> {onnx.name = "loss"})
// XENT-DAG: %[[S1:.*]] = onnx.Constant dense<[10, 7]> : tensor<2xi64>
// XENT-DAG: %[[S2:.*]] = onnx.Constant dense<10> : tensor<1xi64>
// XENT-DAG: %[[F:.*]] = onnx.Reshape(%arg0, %[[S1]]) {{.*}} -> tensor<10x7xf32>
// XENT-DAG: %[[I:.*]] = onnx.Reshape(%arg1, %[[S2]]) {{.*}} -> tensor<10xi64>
// XENT: %[[L:.*]], %{{.*}} = onnx.SoftmaxCrossEntropyLoss(%[[F]], %[[I]]) {ignore_index = -100 : i64} : (tensor<10x7xf32>, tensor<10xi64>) -> (tensor<f32>, tensor<10x7xf32>)
// XENT-NEXT: return %[[L]] : tensor<f32>
// MSE-LABEL: func.func @lm
// MSE-SAME: %arg1: tensor<2x5x7xf32> {dist.batch_dim = 0 : i64, onnx.name = "target"})
func.func @lm(%logits: tensor<2x5x7xf32> {onnx.name = "logits"}) -> (tensor<2x5x7xf32> {onnx.name = "out"}) {
  return %logits : tensor<2x5x7xf32>
}

//--- two-outputs.mlir
// output=1 picks the model output; the others are dropped.
// OUT1-LABEL: func.func @main
// OUT1-SAME: -> (tensor<f32> {onnx.name = "loss"})
// OUT1: onnx.SoftmaxCrossEntropyLoss(%arg1, %{{.*}}) {{.*}} : (tensor<4x3xf32>, tensor<4xi64>)
func.func @main(%a: tensor<4x2xf32> {onnx.name = "a"}, %b: tensor<4x3xf32> {onnx.name = "b"}) -> (tensor<4x2xf32>, tensor<4x3xf32>) {
  return %a, %b : tensor<4x2xf32>, tensor<4x3xf32>
}

//--- range.mlir
// expected-error @+1 {{the model has 2 outputs; there is no output 2 to compute the loss on}}
func.func @main(%a: tensor<4x2xf32> {onnx.name = "a"}, %b: tensor<4x3xf32> {onnx.name = "b"}) -> (tensor<4x2xf32>, tensor<4x3xf32>) {
  return %a, %b : tensor<4x2xf32>, tensor<4x3xf32>
}

//--- output-errors.mlir
// expected-error @+1 {{--loss output needs one scalar model output; the model returns 'tensor<4x2xf32>' (use --loss cross-entropy|mse --labels NAME)}}
func.func @not_scalar(%x: tensor<4x2xf32> {onnx.name = "x"}) -> tensor<4x2xf32> {
  return %x : tensor<4x2xf32>
}

// -----

// expected-error @+1 {{--loss output needs one scalar model output; the model returns 'tensor<f32>', 'tensor<f32>'}}
func.func @two_scalars(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{the loss needs a float output; output 0 is 'tensor<i64>'}}
func.func @int_output(%x: tensor<i64>) -> tensor<i64> {
  return %x : tensor<i64>
}

// -----

// expected-error @+1 {{training needs one function; found @a and @b}}
module {
  func.func @a(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
  func.func @b(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

//--- xent-errors.mlir
// expected-error @+1 {{cross-entropy needs logits [batch, ..., classes]; output 0 is 'tensor<4xf32>'}}
func.func @vector(%x: tensor<4xf32> {onnx.name = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{the loss needs a float output; output 0 is 'tensor<4x3xi64>'}}
func.func @int_logits(%x: tensor<4x3xi64> {onnx.name = "x"}) -> tensor<4x3xi64> {
  return %x : tensor<4x3xi64>
}

// -----

// expected-error @+1 {{the loss needs a static output shape; output 0 is 'tensor<?x3xf32>' (run hetpar-onnx-to-static first)}}
func.func @dynamic(%x: tensor<?x3xf32> {onnx.name = "x"}) -> tensor<?x3xf32> {
  return %x : tensor<?x3xf32>
}

//--- unknown.mlir
// expected-error @+1 {{unknown loss 'hinge' (output, cross-entropy or mse)}}
func.func @main(%x: tensor<4x3xi64> {onnx.name = "x"}) -> tensor<4x3xi64> {
  return %x : tensor<4x3xi64>
}

//--- labels-taken.mlir
// expected-error @+1 {{the model already has an input named 'labels' (choose --labels)}}
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}, %l: tensor<4x3xf32> {onnx.name = "labels"}) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}

//--- labels-path.mlir
// The labels' name names their file in the training data (<name>.npy).
// expected-error @+1 {{must be a file name (the training data holds <name>.npy): not empty, '.' or '..', and without '/' or '\' (choose --labels)}}
func.func @main(%x: tensor<4x3xf32> {onnx.name = "x"}) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}
