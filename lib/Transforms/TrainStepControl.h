//===- TrainStepControl.h - schedule, clipping, loss scale, accumulation --===//
//
// The scalar logic of hetpar-train-optimizer, built from ordinary onnx ops
// (docs/training.md): the learning-rate schedule, the gradient scale that
// carries clipping, loss-scale unscaling and the skip of a step, the dynamic
// loss scale's update, and gradient accumulation over microbatches.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_TRANSFORMS_TRAINSTEPCONTROL_H
#define HETPAR_LIB_TRANSFORMS_TRAINSTEPCONTROL_H

#include "hetpar/Dialect/ONNX/Gradient.h"

namespace hetpar::train {

/// Learning-rate schedule options (see TrainOptimizerPass).
struct Schedule {
  std::string kind = "constant"; // constant | warmup-cosine
  double lr = 1e-3, minLr = 0;
  int64_t warmupSteps = 0, totalSteps = 0;
};

/// The float32 learning rate of update number t (t >= 1) from the int64 count
/// of updates before it (t - 1), as Hugging Face's
/// get_cosine_schedule_with_warmup does with a LambdaLR stepped once per
/// update.
mlir::Value learningRate(GradientBuilder &g, const Schedule &s,
                         mlir::Value stepsBefore);

/// What scales the gradients of one update and decides whether it happens.
struct GradScaleInputs {
  /// max_norm of torch.nn.utils.clip_grad_norm_ (0: no clipping).
  double clipGradNorm = 0;
  /// The float32 loss scale the gradients carry (null: 1).
  mlir::Value lossScale;
  /// Microbatches whose summed gradients make one update (>= 1).
  int64_t microbatches = 1;
  /// Bool scalar: this call completes an update (null: every call does).
  mlir::Value apply;
  /// A pipeline's step (train::kNormGroupAttr): each gradient's weight in
  /// the sum of squares (empty: 1 each) and the devices over which the
  /// weighted sums are all-reduced into the step's (empty: this device's).
  llvm::SmallVector<double> normWeights;
  llvm::SmallVector<int64_t> normGroup;
};

/// The float32 scalar `grad_scale` of the optimizer ops: min(1, clip /
/// (||G||_2 + 1e-6)) / (lossScale * microbatches) of the true gradients G =
/// grads / (lossScale * microbatches); NaN (the ops then skip the step) when
/// `apply` is false or, with a loss scale, when the sum of squares of `grads`
/// is not finite. `finite` receives that test (a bool scalar, null without a
/// loss scale).
mlir::Value gradScale(GradientBuilder &g, llvm::ArrayRef<mlir::Value> grads,
                      const GradScaleInputs &in, mlir::Value &finite);

/// The next dynamic loss scale and count of finite steps, as
/// torch.cuda.amp.GradScaler.update with its defaults: on a non-finite step
/// halve the scale and reset the count; after kLossScaleGrowthInterval finite
/// steps double it. Unchanged when `apply` (may be null) is false.
std::pair<mlir::Value, mlir::Value>
nextLossScale(GradientBuilder &g, mlir::Value scale, mlir::Value goodSteps,
              mlir::Value finite, mlir::Value apply);

/// The Dropout masks' counter of one microbatch: step * microbatches +
/// microbatch (int64 scalars; `microbatches` >= 1), the microbatch's index
/// over the whole run. Under gradient accumulation and in a pipeline's step
/// every microbatch then draws its own masks, and a resumed run (whose
/// checkpoint holds the counters) draws the same ones.
mlir::Value microbatchMaskCounter(GradientBuilder &g, mlir::Value step,
                                  int64_t microbatches, mlir::Value microbatch);

/// A bool scalar: whether int64 scalar `x` equals `v`.
mlir::Value equals(GradientBuilder &g, mlir::Value x, int64_t v);

} // namespace hetpar::train

#endif // HETPAR_LIB_TRANSFORMS_TRAINSTEPCONTROL_H
