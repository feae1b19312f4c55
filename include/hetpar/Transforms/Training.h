//===- Training.h - names shared by the training passes and codegen -*- C++
//-*-===//
//
// The attributes through which the training passes (lib/Transforms/Train*.cpp,
// Differentiate.cpp) and code generation agree on what a global is
// (docs/training.md).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TRANSFORMS_TRAINING_H
#define HETPAR_TRANSFORMS_TRAINING_H

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Regex.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace hetpar::train {

/// On ml_program.global: "param", "buffer" (state the step updates without a
/// gradient: BatchNormalization's running statistics), "optimizer", "step" or
/// "state" (scalars of the step's control: loss scale, microbatch counter)
/// (weights.json's role).
inline constexpr llvm::StringLiteral kRoleAttr = "hetpar.role";
/// On optimizer state globals: the parameter (symbol) and the slot name.
inline constexpr llvm::StringLiteral kStateOfAttr = "hetpar.state_of";
inline constexpr llvm::StringLiteral kSlotAttr = "hetpar.slot";
/// On a function result: the parameter global it is the gradient of.
inline constexpr llvm::StringLiteral kGradientOfAttr = "hetpar.gradient_of";
/// Unit attribute on a gradient result (set by hetpar-onnx-differentiate):
/// no path leads from the parameter to the loss (it is unused, or read only
/// as a non-differentiable operand such as Dropout's ratio), so the result
/// is a zero constant. The optimizer leaves such a parameter as it is, as
/// PyTorch's optimizers skip a parameter whose .grad is None (no weight
/// decay, no moments); the data-parallel reduction does not sum it.
inline constexpr llvm::StringLiteral kNoGradientAttr = "hetpar.no_gradient";
/// On an argument of the evaluation step (hetpar-train-eval-mode): the
/// training program's weights.json tensor (a global of the step) it reads,
/// which the runtime binds to it in place of an input buffer.
inline constexpr llvm::StringLiteral kEvalBindAttr = "hetpar.bind_weight";
/// On the op that seeds the backward pass of a pipeline stage's step (the
/// gradient of the loss: 1 or the loss scale), set by
/// hetpar-onnx-differentiate for hetpar-dist-pipeline-schedule, which scales
/// it by each microbatch's weight and removes the mark; and of a step with
/// kSynchronizedAttr, whose seed hetpar-dist-reduce-gradients weighs.
inline constexpr llvm::StringLiteral kSeedAttr = "hetpar.seed";
/// On a data-parallel step whose forward pass sums values over the replicas
/// (hetpar-dist-sync-batch-norm's batch statistics): its backward pass sums
/// gradients over them too, so hetpar-dist-reduce-gradients weights each
/// replica's seed rather than its gradients (each replica's contribution to
/// those sums must carry its weight).
inline constexpr llvm::StringLiteral kSynchronizedAttr =
    "hetpar.synchronized_statistics";
/// On a collective of the backward pass whose operand does not come from the
/// backward pass (hetpar-onnx-differentiate's all-reduce of zeros where no
/// gradient reaches a dist.grad_all_reduce on this device): it runs in each
/// microbatch's backward part of a pipeline's schedule, as the group's other
/// devices run theirs.
inline constexpr llvm::StringLiteral kBackwardAttr = "hetpar.backward";
/// On a clone that a pipeline stage's activation recomputation made of a
/// forward op (hetpar-dist-pipeline-schedule): the CSE after the optimizer
/// must not merge it back into the original, whose operands it shares.
inline constexpr llvm::StringLiteral kRecomputedAttr = "hetpar.recomputed";
/// On an add of a running sum over microbatches (hetpar-dist-pipeline-
/// schedule's loss and gradient sums): code generation computes it where it
/// stands, never fused into the next microbatch's add, so that each
/// microbatch's gradients are freed once added rather than kept to the last.
inline constexpr llvm::StringLiteral kRunningSumAttr = "hetpar.running_sum";
/// On each op of a pipeline microbatch's forward or backward slot (set by
/// hetpar-dist-pipeline-schedule): the microbatch, an i64 from 0. Ops that
/// run once per step (hoisted invariants, the optimizer) have none. The
/// measured timeline (hetpar-run --train --trace) names its spans by it.
inline constexpr llvm::StringLiteral kMicrobatchIndexAttr =
    "hetpar.microbatch_index";
/// On a pipeline device's training module: {parameter name: the devices of
/// every stage that reads it, in mesh order} for each parameter that several
/// stages read (hetpar-compile writes it from the partition;
/// hetpar-dist-reduce-gradients sums the parameter's gradient over them).
inline constexpr llvm::StringLiteral kSharedParamsAttr = "hetpar.shared_params";
/// ZeRO-1 (docs/training.md, "Sharded optimizer state"). On a gradient
/// result (hetpar-dist-reduce-gradients): the result is this replica's shard
/// of the flattened gradient, and the attribute gives every replica's
/// element count, in the order of the step function's kZeroGroupAttr
/// (the stage's replicas, mesh order). hetpar-train-optimizer updates that
/// shard of the parameter with optimizer state of the shard's size, then
/// all-gathers the parameter.
inline constexpr llvm::StringLiteral kZeroSizesAttr = "hetpar.zero_sizes";
inline constexpr llvm::StringLiteral kZeroGroupAttr = "hetpar.zero_group";
/// On an optimizer-state global of a ZeRO-1 shard: the first element of the
/// flattened parameter (its kStateOfAttr) that the state holds. weights.json
/// carries it as "shard_offset"; a checkpoint's layout index is built from it.
inline constexpr llvm::StringLiteral kShardOffsetAttr = "hetpar.shard_offset";
/// Tensor parallelism (docs/training.md, "Tensor-parallel training"): on a
/// parameter's constant (hetpar-dist-partition, training) and then its
/// global (hetpar-train-lift-params), a #dist.sharding that splits one
/// dimension over the tensor-parallel group: this device holds its extent
/// of that dimension (the group's devices in order, each its `sizes` entry);
/// the other dimensions are whole. weights.json carries it as
/// "tensor_shard"; a checkpoint's layout index is built from it.
inline constexpr llvm::StringLiteral kTensorShardAttr = "hetpar.tensor_shard";
/// The gradient norm of a pipeline's step (clipping, the overflow test of
/// dynamic loss scaling) is over every stage's gradients: on the step
/// function, the devices (mesh order) whose weighted sums of squares add up
/// to it (hetpar-dist-reduce-gradients writes it, hetpar-train-optimizer
/// all-reduces over them); on a gradient result, its weight in that sum, 1
/// over the devices holding the same gradient (a data-parallel stage's
/// replicas, every copy of a shared parameter), 1 when absent.
inline constexpr llvm::StringLiteral kNormGroupAttr = "hetpar.grad_norm_group";
inline constexpr llvm::StringLiteral kNormWeightAttr =
    "hetpar.grad_norm_weight";
/// Name of the step counter global.
inline constexpr llvm::StringLiteral kStepGlobal = "hetpar.step";
/// Dynamic loss scaling (hetpar-train-mixed-precision, float16): the float32
/// scale and the int64 count of finite steps since it last changed, both
/// role "state". The function attribute kLossScaleAttr names the scale.
inline constexpr llvm::StringLiteral kLossScaleGlobal = "hetpar.loss_scale";
inline constexpr llvm::StringLiteral kGoodStepsGlobal = "hetpar.good_steps";
inline constexpr llvm::StringLiteral kLossScaleAttr = "hetpar.loss_scale";
/// Gradient accumulation (hetpar-train-optimizer accumulate > 1): the int64
/// index of the next microbatch within the step, role "state".
inline constexpr llvm::StringLiteral kMicrobatchGlobal = "hetpar.microbatch";
/// On a global that is zero at every step boundary, where checkpoints are
/// written (gradient accumulation's buffers and microbatch counter): a
/// checkpoint of another plan, which has no such tensor, resumes it as zeros
/// (weights.json "zero_between_steps").
inline constexpr llvm::StringLiteral kZeroBetweenStepsAttr =
    "hetpar.zero_between_steps";
/// The initial loss scale, 2^16 (torch.cuda.amp.GradScaler's init_scale).
inline constexpr double kInitialLossScale = 65536.0;
/// Finite steps after which the scale doubles (GradScaler's growth_interval).
inline constexpr int64_t kLossScaleGrowthInterval = 2000;

/// The function a training step is: the module's only public function with a
/// body. Fails with an error at the module otherwise.
mlir::FailureOr<mlir::func::FuncOp> stepFunction(mlir::ModuleOp module);

/// The step function of a pass that builds device `device`'s step of a plan
/// (`pass` names the pass in errors): stepFunction's, and an error at the
/// module when `device` is negative (the pass needs device=<id>).
mlir::FailureOr<mlir::func::FuncOp>
deviceStepFunction(mlir::ModuleOp module, int64_t device, llvm::StringRef pass);

/// Makes `func` device `device`'s step of stage `stage` (`dist.device`) and
/// gives the module a `dist.mesh @mesh` of the stage's devices when it has
/// none: what a step's collectives over its stage need.
void markDeviceStep(mlir::ModuleOp module, mlir::func::FuncOp func,
                    int64_t device, llvm::ArrayRef<int64_t> stageDevices,
                    llvm::ArrayRef<std::string> kinds);

/// Checks that every input of `func` holds `rows` samples on axis 0 (device
/// `device`'s rows of `what`: "the batch", "a microbatch"); an error at the
/// function naming the first input that does not.
mlir::LogicalResult checkDeviceRows(mlir::func::FuncOp func, int64_t device,
                                    int64_t rows, llvm::StringRef what);

/// The step counter global: `hetpar.step` (int64 scalar, role "step", 0 in
/// the first step), created before `func` when the module has none. The
/// optimizer pass increments it; hetpar-train-dropout reads it.
mlir::ml_program::GlobalOp getOrCreateStepGlobal(mlir::ModuleOp module,
                                                 mlir::func::FuncOp func);

/// The float ONNX initializer (onnx.ConstantOp named by
/// onnx::kInitializerAttrName, of a float element type) that `v` is, or
/// null: what training lifts into a parameter.
onnx::ConstantOp floatInitializer(mlir::Value v);

/// The initializers `--freeze PATTERN` names: PATTERN as a full match
/// ("^(PATTERN)$"), or an error ("--freeze 'P' is not a valid regular
/// expression: why"). The one reading of the flag, for
/// hetpar-train-lift-params and for hetpar-compile's whole-model check of a
/// pipeline's stages.
llvm::Expected<llvm::Regex> freezeRegex(llvm::StringRef pattern);

/// The error of a --freeze PATTERN that names no float initializer.
std::string freezeMatchesNothing(llvm::StringRef pattern);

/// The role of `global` ("" when it has none).
inline llvm::StringRef roleOf(mlir::ml_program::GlobalOp global) {
  if (auto role = global->getAttrOfType<mlir::StringAttr>(kRoleAttr))
    return role.getValue();
  return "";
}

} // namespace hetpar::train

#endif // HETPAR_TRANSFORMS_TRAINING_H
