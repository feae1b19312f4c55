// The generated source of training-mode BatchNormalization and Dropout
// (docs/training.md): the batch-statistics kernel with epsilon, momentum and
// the running-statistics outputs, and the Philox Dropout with its seed, step,
// ratio and mask; 24 elements are 6 groups of 4.
// RUN: split-file %s %t
// RUN: hetpar-translate --emit-device-source %t/ops.mlir | FileCheck %s
// RUN: %expect-exit 1 hetpar-translate --emit-device-source %t/mixed.mlir 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: hetpar-translate --emit-device-source %t/zero-ratio.mlir | FileCheck %s --check-prefix=ZERO
// RUN: hetpar-translate --emit-device-source %t/offset.mlir | FileCheck %s --check-prefix=OFFSET
// RUN: hetpar-translate --emit-device-source %t/state-order.mlir | FileCheck %s --check-prefix=STATE
// RUN: %expect-exit 1 hetpar-translate --emit-device-source %t/stale-read.mlir 2>&1 | FileCheck %s --check-prefix=STALE
// RUN: hetpar-translate --emit-device-source %t/prologue-global.mlir | FileCheck %s --check-prefix=PROGLOBAL

//--- ops.mlir
// CHECK: // BatchNormalization bn
// CHECK-NEXT: hp_batch_norm_train_launch<float, float, float>(ctx, 2, 3, 4, 1.00000005e-03f, 8.00000012e-01f, ((const float *)inputs[0]), {{.*}}, ((float *)outputs[1]), ((float *)(arena + {{[0-9]+}})));
// CHECK: // Dropout drop
// CHECK-NEXT: hp_launch(ctx, hp_dropout<float, float, float>, 6, 24, 0LL, 7ULL, ((const int64_t *)inputs[1]), ((const float *)(weights + {{[0-9]+}})), (const bool *)0, ((float *)(arena + 0)), ((float *)outputs[0]), ((bool *)outputs[2]));
func.func @main(%x: tensor<2x3x4xf32> {onnx.name = "x"}, %step: tensor<i64> {onnx.name = "step"}) -> (tensor<2x3x4xf32> {onnx.name = "y"}, tensor<3xf32> {onnx.name = "mean"}, tensor<2x3x4xi1> {onnx.name = "mask"}) {
  %s = onnx.Constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = onnx.Constant dense<[0.0, 1.0, 2.0]> : tensor<3xf32>
  %r = onnx.Constant dense<0.25> : tensor<f32>
  %t = onnx.Constant dense<true> : tensor<i1>
  %0:3 = onnx.BatchNormalization(%x, %s, %b, %b, %s) {momentum = 0.8 : f32, epsilon = 1.0e-3 : f32, training_mode = 1 : i64} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) loc("bn")
  %1:2 = onnx.Dropout(%0#0) ratio(%r) training_mode(%t) step(%step) {seed = 7 : i64} : (tensor<2x3x4xf32>, tensor<f32>, tensor<i1>, tensor<i64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>) loc("drop")
  return %1#0, %0#1, %1#1 : tensor<2x3x4xf32>, tensor<3xf32>, tensor<2x3x4xi1>
}

//--- mixed.mlir
// One storage type for the per-channel operands of the training kernel.
// MIXED: error: node 'bn': unsupported op BatchNormalization: scale, B, mean and var of different element types
func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"}, %s: tensor<3xf16> {onnx.name = "s"}, %m: tensor<3xf32> {onnx.name = "m"}) -> (tensor<2x3xf32> {onnx.name = "y"}) {
  %0 = onnx.BatchNormalization(%x, %s, %s, %m, %m) {training_mode = 1 : i64} : (tensor<2x3xf32>, tensor<3xf16>, tensor<3xf16>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("bn")
  return %0 : tensor<2x3xf32>
}

//--- zero-ratio.mlir
// A constant ratio of 0 (PyTorch exports F.dropout(x, 0.0) so) is the identity
// even in training mode: a view, its mask all true.
// ZERO-NOT: hp_dropout
// ZERO: hp_launch(ctx, hp_fill<bool>, 4, true, ((bool *)outputs[1]));
// ZERO-NOT: hp_dropout
func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32> {onnx.name = "y"}, tensor<4xi1> {onnx.name = "mask"}) {
  %r = onnx.Constant dense<0.0> : tensor<f32>
  %t = onnx.Constant dense<true> : tensor<i1>
  %0:2 = onnx.Dropout(%x) ratio(%r) training_mode(%t) : (tensor<4xf32>, tensor<f32>, tensor<i1>) -> (tensor<4xf32>, tensor<4xi1>)
  %1 = onnx.Relu(%0#0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1, %0#1 : tensor<4xf32>, tensor<4xi1>
}

//--- offset.mlir
// A replica's rows of a larger tensor (element_offset, set by the partition):
// elements [5, 29) of it take the words of groups 1 to 7, so 7 iterations.
// OFFSET: hp_launch(ctx, hp_dropout<float, float, float>, 7, 24, 5LL, 3ULL,
func.func @main(%x: tensor<2x3x4xf32> {onnx.name = "x"}, %step: tensor<i64> {onnx.name = "step"}) -> (tensor<2x3x4xf32> {onnx.name = "y"}) {
  %t = onnx.Constant dense<true> : tensor<i1>
  %0:2 = onnx.Dropout(%x) training_mode(%t) step(%step) {seed = 3 : i64, element_offset = 5 : i64} : (tensor<2x3x4xf32>, tensor<i1>, tensor<i64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>)
  return %0#0 : tensor<2x3x4xf32>
}

//--- state-order.mlir
// A global is one copy in the weights and a load is a view of it: a load
// after a store reads the stored value (a pipeline's second microbatch reads
// the running statistics the first wrote), so two load-update-store rounds
// compile. Each store copies its value into the global's weights, which the
// next round reads.
// STATE: k0_Add, 4, ((float *)(weights + 0))
// STATE: hp_copy_launch<float>({{.*}}((float *)(weights + 0)));
// STATE: k1_Add, 4, ((float *)(weights + 0))
// STATE: hp_copy_launch<float>({{.*}}((float *)(weights + 0)));
module {
  ml_program.global private mutable @m(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32> {onnx.name = "y"}) {
    %a = ml_program.global_load @m : tensor<4xf32>
    %b = onnx.Add(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ml_program.global_store @m = %b : tensor<4xf32>
    %c = ml_program.global_load @m : tensor<4xf32>
    %d = onnx.Add(%c, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ml_program.global_store @m = %d : tensor<4xf32>
    return %d : tensor<4xf32>
  }
}

//--- stale-read.mlir
// A read of a load's value after a store to its global would see the new
// value, not the one loaded: an error at the reader.
// STALE: error: reads global @m after it was updated in place (code generation keeps one copy of each global)
module {
  ml_program.global private mutable @m(dense<0.0> : tensor<4xf32>) : tensor<4xf32>
  func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32> {onnx.name = "y"}) {
    %a = ml_program.global_load @m : tensor<4xf32>
    %b = onnx.Add(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ml_program.global_store @m = %b : tensor<4xf32>
    %d = onnx.Mul(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %d : tensor<4xf32>
  }
}

//--- prologue-global.mlir
// A residual Add that reads a parameter is no LayerNorm prologue when an
// optimizer (which updates the parameter in place, its store after the
// LayerNorm emitting nothing) or a global store runs between it and the
// LayerNorm: the prologue would read the new value. The Adds keep their
// kernels, before the update.
// PROGLOBAL: HP_KERNEL(k0_Add,
// PROGLOBAL: HP_KERNEL(k1_Add,
// PROGLOBAL: hp_launch(ctx, k0_Add,
// PROGLOBAL: hp_launch(ctx, hp_sgd
// PROGLOBAL: hp_pro_none());
// PROGLOBAL: hp_launch(ctx, k1_Add,
// PROGLOBAL: hp_copy_launch<float>(
// PROGLOBAL: hp_pro_none());
module {
  ml_program.global private mutable @w(dense<0.5> : tensor<2x4xf32>) : tensor<2x4xf32>
  ml_program.global private mutable @m(dense<0.0> : tensor<2x4xf32>) : tensor<2x4xf32>
  func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}, %step: tensor<i64> {onnx.name = "step"}) -> (tensor<2x4xf32> {onnx.name = "y"}, tensor<2x4xf32> {onnx.name = "z"}) {
    %s = onnx.Constant dense<1.0> : tensor<4xf32>
    %lr = onnx.Constant dense<0.1> : tensor<f32>
    %one = onnx.Constant dense<1.0> : tensor<f32>
    %w = ml_program.global_load @w : tensor<2x4xf32>
    %r = onnx.Add(%x, %w) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("residual_w")
    %p = onnx.SGDOptimizer(%w, %x, %lr, %step, %one) : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<2x4xf32> loc("sgd")
    %n = onnx.LayerNormalization(%r, %s) {axis = -1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("ln_w")
    ml_program.global_store @w = %p : tensor<2x4xf32>
    %m = ml_program.global_load @m : tensor<2x4xf32>
    %q = onnx.Add(%x, %m) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> loc("residual_m")
    ml_program.global_store @m = %x : tensor<2x4xf32>
    %o = onnx.LayerNormalization(%q, %s) {axis = -1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("ln_m")
    return %n, %o : tensor<2x4xf32>, tensor<2x4xf32>
  }
}
