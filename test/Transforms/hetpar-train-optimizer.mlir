// RUN: split-file %s %t
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer='optimizer=sgd lr=0.1 momentum=0.9 nesterov=true' | FileCheck %s --check-prefix=MOMENTUM
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer='optimizer=sgd lr=0.1' | FileCheck %s --check-prefix=SGD
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer='schedule=warmup-cosine warmup-steps=10 total-steps=100 lr=0.01 min-lr=1e-5 beta1=0.8 weight-decay=0' | FileCheck %s --check-prefix=COSINE
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer='clip-grad-norm=1.0' | FileCheck %s --check-prefix=CLIP
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer='optimizer=none' | FileCheck %s --check-prefix=NONE
// RUN: hetpar-opt %t/step.mlir --hetpar-train-optimizer='grad-accumulation-steps=4' | FileCheck %s --check-prefix=ACCUM
// RUN: hetpar-opt %t/accumulate-zero.mlir --hetpar-train-optimizer='grad-accumulation-steps=0' --verify-diagnostics
// RUN: hetpar-opt %t/accumulate-none.mlir --hetpar-train-optimizer='optimizer=none grad-accumulation-steps=2' --verify-diagnostics
// RUN: hetpar-opt %t/errors.mlir --split-input-file --hetpar-train-optimizer --verify-diagnostics
// RUN: hetpar-opt %t/existing-step.mlir --hetpar-train-optimizer='optimizer=sgd' | FileCheck %s --check-prefix=EXISTING
// RUN: hetpar-opt %t/existing-step.mlir --hetpar-train-optimizer='optimizer=sgd grad-accumulation-steps=3' | FileCheck %s --check-prefix=MASKS
// RUN: hetpar-opt %t/lr-zero.mlir --hetpar-train-optimizer='lr=0' --verify-diagnostics
// RUN: hetpar-opt %t/lr-negative.mlir --hetpar-train-optimizer='lr=-1' --verify-diagnostics
// RUN: hetpar-opt %t/beta1.mlir --hetpar-train-optimizer='beta1=1' --verify-diagnostics
// RUN: hetpar-opt %t/beta2.mlir --hetpar-train-optimizer='beta2=-0.1' --verify-diagnostics
// RUN: hetpar-opt %t/eps.mlir --hetpar-train-optimizer='eps=0' --verify-diagnostics
// RUN: hetpar-opt %t/nesterov.mlir --hetpar-train-optimizer='optimizer=sgd nesterov=true' --verify-diagnostics
// RUN: hetpar-opt %t/momentum.mlir --hetpar-train-optimizer='optimizer=sgd momentum=-0.5' --verify-diagnostics
// RUN: hetpar-opt %t/adamw-momentum.mlir --hetpar-train-optimizer='momentum=0.9' --verify-diagnostics
// RUN: hetpar-opt %t/adamw-nesterov.mlir --hetpar-train-optimizer='nesterov=true' --verify-diagnostics
// RUN: hetpar-opt %t/clip.mlir --hetpar-train-optimizer='clip-grad-norm=-1' --verify-diagnostics
// RUN: hetpar-opt %t/cosine-no-total.mlir --hetpar-train-optimizer='schedule=warmup-cosine warmup-steps=10' --verify-diagnostics
// RUN: hetpar-opt %t/cosine-negative.mlir --hetpar-train-optimizer='schedule=warmup-cosine warmup-steps=-1 total-steps=10' --verify-diagnostics
// RUN: hetpar-opt %t/min-lr.mlir --hetpar-train-optimizer='min-lr=1' --verify-diagnostics
// RUN: hetpar-opt %t/unknown-optimizer.mlir --hetpar-train-optimizer='optimizer=adam' --verify-diagnostics
// RUN: hetpar-opt %t/unknown-schedule.mlir --hetpar-train-optimizer='schedule=linear' --verify-diagnostics
// RUN: hetpar-opt %t/no-gradient.mlir --hetpar-train-optimizer | FileCheck %s --check-prefix=NOGRAD
// RUN: hetpar-opt %t/no-gradient-only.mlir --hetpar-train-optimizer | FileCheck %s --check-prefix=NOGRADONLY
// RUN: hetpar-opt %t/none-checked.mlir --hetpar-train-optimizer='optimizer=none lr=0' --verify-diagnostics

//--- step.mlir
// What hetpar-onnx-differentiate returns: the loss, then the gradients of @w
// and @b.
//
// AdamW (the default; lr 1e-3, PyTorch's defaults, which the op's attributes
// hold, so none is printed): zero state globals exp_avg and exp_avg_sq per
// parameter, the step counter, and per parameter one fused update whose
// results are stored back; the function returns the loss only.
// ADAMW-LABEL: module
// ADAMW: ml_program.global private mutable @w({{.*}}) : tensor<2xf32> {hetpar.role = "param"}
// ADAMW: ml_program.global private mutable @b({{.*}}) : tensor<f32> {hetpar.role = "param"}
// ADAMW: ml_program.global private mutable @hetpar.step(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
// ADAMW: ml_program.global private mutable @w.exp_avg(dense<0.000000e+00> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "optimizer", hetpar.slot = "exp_avg", hetpar.state_of = @w}
// ADAMW: ml_program.global private mutable @w.exp_avg_sq(dense<0.000000e+00> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "optimizer", hetpar.slot = "exp_avg_sq", hetpar.state_of = @w}
// ADAMW: ml_program.global private mutable @b.exp_avg(dense<0.000000e+00> : tensor<f32>) : tensor<f32> {hetpar.role = "optimizer", hetpar.slot = "exp_avg", hetpar.state_of = @b}
// ADAMW: ml_program.global private mutable @b.exp_avg_sq(dense<0.000000e+00> : tensor<f32>) : tensor<f32> {hetpar.role = "optimizer", hetpar.slot = "exp_avg_sq", hetpar.state_of = @b}
// ADAMW-LABEL: func.func @main
// ADAMW-SAME: -> (tensor<f32> {onnx.name = "loss"})
// ADAMW: %[[LOSS:.*]] = onnx.Add
// ADAMW: %[[GB:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// The step counter: this update is number step + 1.
// ADAMW: %[[S:.*]] = ml_program.global_load @hetpar.step : tensor<i64>
// ADAMW: %[[ONE:.*]] = onnx.Constant dense<1> : tensor<i64>
// ADAMW: %[[T:.*]] = onnx.Add(%[[S]], %[[ONE]]) : (tensor<i64>, tensor<i64>) -> tensor<i64>
// ADAMW: %[[LR:.*]] = onnx.Constant dense<1.000000e-03> : tensor<f32>
// No clipping: the gradient scale is 1.
// ADAMW: %[[SCALE:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// ADAMW: %[[W:.*]] = ml_program.global_load @w : tensor<2xf32>
// ADAMW: %[[M:.*]] = ml_program.global_load @w.exp_avg : tensor<2xf32>
// ADAMW: %[[V:.*]] = ml_program.global_load @w.exp_avg_sq : tensor<2xf32>
// ADAMW: %[[P:.*]], %[[M2:.*]], %[[V2:.*]] = onnx.AdamWOptimizer(%[[W]], %arg0, %[[M]], %[[V]], %[[LR]], %[[T]], %[[SCALE]]) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
// ADAMW-NEXT: ml_program.global_store @w = %[[P]] : tensor<2xf32>
// ADAMW-NEXT: ml_program.global_store @w.exp_avg = %[[M2]] : tensor<2xf32>
// ADAMW-NEXT: ml_program.global_store @w.exp_avg_sq = %[[V2]] : tensor<2xf32>
// ADAMW: onnx.AdamWOptimizer(%{{.*}}, %[[GB]], %{{.*}}, %{{.*}}, %[[LR]], %[[T]], %[[SCALE]])
// ADAMW-NEXT: ml_program.global_store @b =
// ADAMW-NEXT: ml_program.global_store @b.exp_avg =
// ADAMW-NEXT: ml_program.global_store @b.exp_avg_sq =
// The counter is stored last: the schedule and the updates read it before.
// ADAMW-NEXT: ml_program.global_store @hetpar.step = %[[T]] : tensor<i64>
// ADAMW-NEXT: return %[[LOSS]] : tensor<f32>

// SGD with (Nesterov) momentum: one momentum_buffer per parameter.
// MOMENTUM-LABEL: module
// MOMENTUM: ml_program.global private mutable @hetpar.step(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
// MOMENTUM-NEXT: ml_program.global private mutable @w.momentum_buffer(dense<0.000000e+00> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "optimizer", hetpar.slot = "momentum_buffer", hetpar.state_of = @w}
// MOMENTUM-NEXT: ml_program.global private mutable @b.momentum_buffer(dense<0.000000e+00> : tensor<f32>) : tensor<f32> {hetpar.role = "optimizer", hetpar.slot = "momentum_buffer", hetpar.state_of = @b}
// MOMENTUM-NOT: ml_program.global private
// MOMENTUM: %[[LR:.*]] = onnx.Constant dense<1.000000e-01> : tensor<f32>
// MOMENTUM: %[[B:.*]] = ml_program.global_load @w.momentum_buffer
// MOMENTUM: %[[P:.*]], %[[B2:.*]] = onnx.SGDOptimizer(%{{.*}}, %arg0, %[[B]], %[[LR]], %{{.*}}, %{{.*}}) {momentum = 0.899999976 : f32, nesterov = 1 : i64}
// MOMENTUM-NEXT: ml_program.global_store @w = %[[P]]
// MOMENTUM-NEXT: ml_program.global_store @w.momentum_buffer = %[[B2]]
// MOMENTUM: onnx.SGDOptimizer
// MOMENTUM-NEXT: ml_program.global_store @b =
// MOMENTUM-NEXT: ml_program.global_store @b.momentum_buffer =

// SGD without momentum has no state but the step counter.
// SGD-LABEL: module
// SGD: ml_program.global private mutable @hetpar.step
// SGD-NOT: ml_program.global private
// SGD: %[[P:.*]] = onnx.SGDOptimizer(%{{.*}}, %arg0, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<2xf32>
// SGD-NEXT: ml_program.global_store @w = %[[P]]
// SGD: onnx.SGDOptimizer
// SGD-NEXT: ml_program.global_store @b =

// Linear warm-up to lr over 10 steps, then a cosine down to min-lr at step
// 100, from the steps taken before this one (s):
// s < 10 ? lr * s / 10 : min + (lr - min) / 2 * (1 + cos(pi * clamp((s - 10) / 90, 0, 1))).
// COSINE-LABEL: func.func @main
// COSINE: %[[S:.*]] = ml_program.global_load @hetpar.step
// COSINE: %[[T:.*]] = onnx.Add(%[[S]],
// COSINE: %[[SF:.*]] = onnx.Cast(%[[S]]) {to = f32} : (tensor<i64>) -> tensor<f32>
// COSINE: %[[LR:.*]] = onnx.Constant dense<0.00999999977> : tensor<f32>
// COSINE: %[[W1:.*]] = onnx.Constant dense<1.000000e+01> : tensor<f32>
// COSINE: %[[D:.*]] = onnx.Sub(%[[SF]], %[[W1]])
// COSINE: %[[SPAN:.*]] = onnx.Constant dense<9.000000e+01> : tensor<f32>
// COSINE: %[[PR:.*]] = onnx.Div(%[[D]], %[[SPAN]])
// COSINE: %[[LO:.*]] = onnx.Max(%[[PR]], %{{.*}})
// COSINE: %[[HI:.*]] = onnx.Min(%[[LO]], %{{.*}})
// COSINE: %[[PI:.*]] = onnx.Constant dense<3.14159274> : tensor<f32>
// COSINE: %[[X:.*]] = onnx.Mul(%[[HI]], %[[PI]])
// COSINE: %[[C:.*]] = onnx.Cos(%[[X]])
// COSINE: %[[MIN:.*]] = onnx.Constant dense<9.99999974E-6> : tensor<f32>
// COSINE: %[[HALF:.*]] = onnx.Constant dense<4.995000e-03> : tensor<f32>
// COSINE: %[[C1:.*]] = onnx.Add(%{{.*}}, %[[C]])
// COSINE: %[[C2:.*]] = onnx.Mul(%[[HALF]], %[[C1]])
// COSINE: %[[COS:.*]] = onnx.Add(%[[MIN]], %[[C2]])
// COSINE: %[[F:.*]] = onnx.Div(%[[SF]], %{{.*}})
// COSINE: %[[WARM:.*]] = onnx.Mul(%[[LR]], %[[F]])
// COSINE: %[[LT:.*]] = onnx.Less(%[[SF]], %{{.*}}) : (tensor<f32>, tensor<f32>) -> tensor<i1>
// COSINE: %[[RATE:.*]] = onnx.Where(%[[LT]], %[[WARM]], %[[COS]])
// COSINE: onnx.AdamWOptimizer(%{{.*}}, %arg0, %{{.*}}, %{{.*}}, %[[RATE]], %[[T]], %{{.*}}) {beta1 = 8.000000e-01 : f32, weight_decay = 0.000000e+00 : f32}

// Clipping: scale = min(max_norm / (||(dw, db)||_2 + 1e-6), 1), into every
// update.
// CLIP-LABEL: func.func @main
// CLIP: %[[GB:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// CLIP: %[[ONE:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// CLIP: %[[SW:.*]] = onnx.ReduceSumSquare(%arg0) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
// CLIP: %[[SB:.*]] = onnx.ReduceSumSquare(%[[GB]]) {keepdims = 0 : i64} : (tensor<f32>) -> tensor<f32>
// CLIP: %[[SUM:.*]] = onnx.Add(%[[SW]], %[[SB]])
// CLIP: %[[NORM:.*]] = onnx.Sqrt(%[[SUM]])
// CLIP: %[[MAX:.*]] = onnx.Constant dense<1.000000e+00> : tensor<f32>
// CLIP: %[[EPS:.*]] = onnx.Constant dense<9.99999997E-7> : tensor<f32>
// CLIP: %[[DEN:.*]] = onnx.Add(%[[NORM]], %[[EPS]])
// CLIP: %[[COEF:.*]] = onnx.Div(%[[MAX]], %[[DEN]])
// CLIP: %[[SCALE:.*]] = onnx.Min(%[[COEF]], %[[ONE]])
// CLIP: onnx.AdamWOptimizer(%{{.*}}, %arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE]])
// CLIP: onnx.AdamWOptimizer(%{{.*}}, %[[GB]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE]])

// grad-accumulation-steps=4: each call sums its gradient into w.grad_accum (the first
// call of a step starts from its own gradient); the step counter grows only
// on the 4th call, which alone updates (grad_scale 1/4: the mean gradient;
// NaN, the skip signal, on the other calls); the microbatch counter wraps.
// Both are zero between steps (hetpar.zero_between_steps: a resume from a
// plan without them starts them at zero).
// ACCUM: ml_program.global private mutable @hetpar.microbatch(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "state", hetpar.zero_between_steps}
// ACCUM: ml_program.global private mutable @w.grad_accum(dense<0.000000e+00> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "optimizer", hetpar.slot = "grad_accum", hetpar.state_of = @w, hetpar.zero_between_steps}
// ACCUM-LABEL: func.func @main
// ACCUM: %[[S:.*]] = ml_program.global_load @hetpar.step : tensor<i64>
// ACCUM: %[[MB:.*]] = ml_program.global_load @hetpar.microbatch : tensor<i64>
// ACCUM: %[[THREE:.*]] = onnx.Constant dense<3> : tensor<i64>
// ACCUM: %[[LAST:.*]] = onnx.Equal(%[[MB]], %[[THREE]])
// ACCUM: %[[ZERO:.*]] = onnx.Constant dense<0> : tensor<i64>
// ACCUM: %[[FIRST:.*]] = onnx.Equal(%[[MB]], %[[ZERO]])
// ACCUM: %[[ACC:.*]] = ml_program.global_load @w.grad_accum : tensor<2xf32>
// ACCUM: %[[ADD:.*]] = onnx.Add(%[[ACC]], %arg0)
// ACCUM: %[[SUM:.*]] = onnx.Where(%[[FIRST]], %arg0, %[[ADD]])
// ACCUM: ml_program.global_store @w.grad_accum = %[[SUM]]
// ACCUM: %[[INC:.*]] = onnx.Cast(%[[LAST]]) {to = i64}
// ACCUM: %[[T:.*]] = onnx.Add(%[[S]], %[[INC]])
// ACCUM: %[[Q:.*]] = onnx.Constant dense<2.500000e-01> : tensor<f32>
// ACCUM: %[[NAN:.*]] = onnx.Constant dense<0x7FC00000> : tensor<f32>
// ACCUM: %[[GS:.*]] = onnx.Where(%[[LAST]], %[[Q]], %[[NAN]])
// ACCUM: onnx.AdamWOptimizer(%{{.*}}, %[[SUM]], %{{.*}}, %{{.*}}, %{{.*}}, %[[T]], %[[GS]])
// ACCUM: %[[NEXT:.*]] = onnx.Where(%[[LAST]], %{{.*}}, %{{.*}})
// ACCUM: ml_program.global_store @hetpar.microbatch = %[[NEXT]]
// ACCUM: ml_program.global_store @hetpar.step = %[[T]]

// optimizer=none: the module as it was (the loss and the gradients).
// NONE-NOT: hetpar.step
// NONE: func.func @main(%arg0: tensor<2xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"}, tensor<f32> {hetpar.gradient_of = @b, onnx.name = "b.grad"})
// NONE-NOT: Optimizer
// NONE-NOT: global_store
module {
  ml_program.global private mutable @w(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @b(dense<0.5> : tensor<f32>) : tensor<f32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"}, tensor<f32> {hetpar.gradient_of = @b, onnx.name = "b.grad"}) {
    %w = ml_program.global_load @w : tensor<2xf32>
    %b = ml_program.global_load @b : tensor<f32>
    %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    %2 = onnx.Add(%1, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %one = onnx.Constant dense<1.0> : tensor<f32>
    return %2, %x, %one : tensor<f32>, tensor<2xf32>, tensor<f32>
  }
}

//--- existing-step.mlir
// A step counter made before (hetpar-train-dropout's, which its masks read) is
// the one incremented: no second counter.
// EXISTING: ml_program.global private mutable @hetpar.step(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
// EXISTING-NOT: {hetpar.role = "step"}
// EXISTING-LABEL: func.func @main
// EXISTING: %[[S:.*]] = ml_program.global_load @hetpar.step : tensor<i64>
// EXISTING: onnx.Dropout(%arg0) step(%[[S]])
// EXISTING: %[[T:.*]] = onnx.Add(%{{.*}}, %{{.*}}) : (tensor<i64>, tensor<i64>) -> tensor<i64>
// EXISTING: ml_program.global_store @hetpar.step = %[[T]] : tensor<i64>
// EXISTING-NEXT: return
// Under accumulation the masks count microbatches: the Dropout reads
// step * 3 + microbatch.
// MASKS-LABEL: func.func @main
// MASKS-NEXT: %[[S:.*]] = ml_program.global_load @hetpar.step : tensor<i64>
// MASKS-NEXT: %[[M:.*]] = ml_program.global_load @hetpar.microbatch : tensor<i64>
// MASKS-NEXT: %[[N:.*]] = onnx.Constant dense<3> : tensor<i64>
// MASKS-NEXT: %[[SN:.*]] = onnx.Mul(%[[S]], %[[N]])
// MASKS-NEXT: %[[C:.*]] = onnx.Add(%[[SN]], %[[M]])
// MASKS: onnx.Dropout(%arg0) step(%[[C]])
module {
  ml_program.global private mutable @w(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @hetpar.step(dense<0> : tensor<i64>) : tensor<i64> {hetpar.role = "step"}
  func.func @main(%x: tensor<2xf32>) -> (tensor<f32> {onnx.name = "loss"}, tensor<2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"}) {
    %s = ml_program.global_load @hetpar.step : tensor<i64>
    %d = onnx.Dropout(%x) step(%s) : (tensor<2xf32>, tensor<i64>) -> tensor<2xf32>
    %w = ml_program.global_load @w : tensor<2xf32>
    %0 = onnx.Mul(%d, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    return %1, %d : tensor<f32>, tensor<2xf32>
  }
}

//--- errors.mlir
module {
  // expected-error @+1 {{optimizer: the function returns no gradients}}
  func.func @loss_only(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

module {
  ml_program.global private mutable @w(dense<1.0> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  // expected-error @+1 {{optimizer: result 1 is not a parameter's gradient (run hetpar-onnx-differentiate first)}}
  func.func @unmarked(%x: tensor<f32>, %g: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>) {
    return %x, %g : tensor<f32>, tensor<2xf32>
  }
}

// -----

module {
  // expected-error @+1 {{optimizer: result 1 is not a parameter's gradient (run hetpar-onnx-differentiate first)}}
  func.func @unknown_global(%x: tensor<f32>, %g: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32> {hetpar.gradient_of = @nonesuch}) {
    return %x, %g : tensor<f32>, tensor<2xf32>
  }
}

// Option errors, before anything else (optimizer=none too).

//--- lr-zero.mlir
// expected-error @+1 {{optimizer: the learning rate must be positive, not 0.000000}}
module {}

//--- lr-negative.mlir
// expected-error @+1 {{optimizer: the learning rate must be positive, not -1.000000}}
module {}

//--- beta1.mlir
// expected-error @+1 {{optimizer: betas must be in [0, 1)}}
module {}

//--- beta2.mlir
// expected-error @+1 {{optimizer: betas must be in [0, 1)}}
module {}

//--- eps.mlir
// expected-error @+1 {{optimizer: eps must be positive}}
module {}

//--- nesterov.mlir
// expected-error @+1 {{optimizer: momentum must be >= 0, and > 0 with nesterov}}
module {}

//--- momentum.mlir
// expected-error @+1 {{optimizer: momentum must be >= 0, and > 0 with nesterov}}
module {}

//--- adamw-momentum.mlir
// A flag of another optimizer is an error, not ignored.
// expected-error @+1 {{optimizer: momentum and nesterov are SGD's; optimizer 'adamw' has none (give optimizer sgd)}}
module {}

//--- adamw-nesterov.mlir
// Nesterov alone with AdamW: the optimizer has no momentum, which says more
// than asking for a momentum.
// expected-error @+1 {{optimizer: momentum and nesterov are SGD's; optimizer 'adamw' has none (give optimizer sgd)}}
module {}

//--- clip.mlir
// expected-error @+1 {{optimizer: clip-grad-norm must be >= 0}}
module {}

//--- cosine-no-total.mlir
// expected-error @+1 {{optimizer: warmup-cosine needs 0 <= warmup-steps < total-steps}}
module {}

//--- cosine-negative.mlir
// expected-error @+1 {{optimizer: warmup-cosine needs 0 <= warmup-steps < total-steps}}
module {}

//--- min-lr.mlir
// expected-error @+1 {{optimizer: min-lr must be in [0, lr]}}
module {}

//--- unknown-optimizer.mlir
// expected-error @+1 {{optimizer: unknown optimizer 'adam' (adamw, sgd, none)}}
module {}

//--- unknown-schedule.mlir
// expected-error @+1 {{optimizer: unknown schedule 'linear' (constant, warmup-cosine)}}
module {}

//--- none-checked.mlir
// expected-error @+1 {{optimizer: the learning rate must be positive, not 0.000000}}
module {}

//--- accumulate-zero.mlir
// expected-error @+1 {{optimizer: grad-accumulation-steps must be at least 1}}
module {}

//--- accumulate-none.mlir
// expected-error @+1 {{optimizer: gradient accumulation needs an optimizer (adamw or sgd)}}
module {}

//--- no-gradient.mlir
// @ratio reaches the loss only as Dropout's ratio would (no path:
// hetpar.no_gradient). As PyTorch's AdamW skips a parameter whose .grad is
// None, it gets no state and no update (no weight decay); @w is updated.
// NOGRAD-NOT: @ratio.exp_avg
// NOGRAD: @w.exp_avg
// NOGRAD-NOT: @ratio.exp_avg
// NOGRAD-LABEL: func.func @main
// NOGRAD-SAME: -> (tensor<f32> {onnx.name = "loss"})
// NOGRAD: onnx.AdamWOptimizer
// NOGRAD-NEXT: ml_program.global_store @w =
// NOGRAD-NOT: global_store @ratio
// NOGRAD-NOT: AdamWOptimizer
// NOGRAD: ml_program.global_store @hetpar.step
module {
  ml_program.global private mutable @w(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32> {hetpar.role = "param"}
  ml_program.global private mutable @ratio(dense<0.3> : tensor<f32>) : tensor<f32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<2xf32> {hetpar.gradient_of = @w, onnx.name = "w.grad"}, tensor<f32> {hetpar.gradient_of = @ratio, hetpar.no_gradient, onnx.name = "ratio.grad"}) {
    %w = ml_program.global_load @w : tensor<2xf32>
    %0 = onnx.Mul(%x, %w) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = onnx.ReduceSum(%0) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    %zero = onnx.Constant dense<0.0> : tensor<f32>
    return %1, %x, %zero : tensor<f32>, tensor<2xf32>, tensor<f32>
  }
}

//--- no-gradient-only.mlir
// Every parameter without a path: the step only counts, and returns its loss.
// NOGRADONLY-NOT: Optimizer
// NOGRADONLY-LABEL: func.func @main
// NOGRADONLY-SAME: -> (tensor<f32> {onnx.name = "loss"})
// NOGRADONLY-NOT: Optimizer
// NOGRADONLY: ml_program.global_store @hetpar.step
// NOGRADONLY-NEXT: return %{{.*}} : tensor<f32>
module {
  ml_program.global private mutable @ratio(dense<0.3> : tensor<f32>) : tensor<f32> {hetpar.role = "param"}
  func.func @main(%x: tensor<2xf32> {onnx.name = "x"}) -> (tensor<f32> {onnx.name = "loss"}, tensor<f32> {hetpar.gradient_of = @ratio, hetpar.no_gradient, onnx.name = "ratio.grad"}) {
    %1 = onnx.ReduceSum(%x) {keepdims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
    %zero = onnx.Constant dense<0.0> : tensor<f32>
    return %1, %zero : tensor<f32>, tensor<f32>
  }
}
