//===- Training.h - hetpar-compile --mode training ----------------*- C++
//-*-===//
#ifndef HETPAR_TOOLS_COMPILE_TRAINING_H
#define HETPAR_TOOLS_COMPILE_TRAINING_H

#include "hetpar/Codegen/Codegen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar::tools {

/// One device's training step of a plan: the plan's device and the
/// microbatches of a step. One stage: a data-parallel replica, which runs
/// the microbatches as accumulation steps. Several stages (`pipeline`): a
/// device of a pipeline stage, whose step runs every microbatch in the
/// plan's schedule (hetpar-dist-pipeline-schedule); only the last stage
/// (`lastStage`) has the outputs the loss attaches to.
struct ReplicaStep {
  int64_t device;
  int64_t microbatches;
  bool pipeline = false;
  bool lastStage = true;
  /// The plan's stage of the device recomputes its activations (its
  /// "recompute", which the simulator charged): as --recompute.
  bool recompute = false;
};

/// Adds the passes that turn the imported module (initializers marked) into
/// one training step, per the --loss/--optimizer/... flags: lift parameters,
/// make static (`toStatic`), attach the loss, 16-bit compute when `dtype` is
/// F16 or BF16 (float32 master weights), differentiate, apply the optimizer,
/// clean up. With `replica`, the step is that replica's of the module's plan:
/// hetpar-dist-reduce-gradients between differentiation and the optimizer,
/// and the plan's microbatches as the accumulation steps.
void buildTrainingPipeline(
    mlir::OpPassManager &pm, codegen::FloatMode dtype,
    const std::function<void(mlir::OpPassManager &)> &toStatic,
    std::optional<ReplicaStep> replica = std::nullopt);

/// The accumulation steps of a replica's step: the plan's microbatches;
/// an error at `planned` when --grad-accumulation-steps says otherwise.
mlir::FailureOr<int64_t> replicaMicrobatches(mlir::ModuleOp planned,
                                             int64_t planMicrobatches);

/// The training steps of a data-parallel or pipeline plan
/// (docs/training.md, "Data-parallel training", "Pipeline training"):
/// `planned` is the static model with its initializers marked and the plan
/// annotated (annotateModule); it is partitioned with local-io (each
/// device's rows in, the last stage's outputs out, transfers between
/// stages), and each device's function becomes its own module through the
/// training pipeline with that device's ReplicaStep. Errors (emitted): a
/// plan trainingProblem refuses, a bad plan, whatever the partition and the
/// training passes refuse, an initializer of `trained` that is neither a
/// global nor a named constant of a step.
struct ReplicaSteps {
  /// One plan of one stage: one step per distinct row count (replicas of
  /// equal rows have the same program: no device id is compiled in). A
  /// pipeline: one step per device (each has its own peers).
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  /// Per device of the plan, stage by stage in mesh order: its module.
  std::vector<size_t> moduleOf;
};
mlir::FailureOr<ReplicaSteps>
buildReplicaSteps(mlir::ModuleOp planned, codegen::FloatMode dtype,
                  llvm::ArrayRef<std::string> trained);

/// The float initializers of the imported `module` that something reads (by
/// their onnx.initializer names): buildReplicaSteps checks that each is still
/// a global or a named constant of every step, none folded away.
std::vector<std::string> trainableInitializers(mlir::ModuleOp module);

/// The category of the training flags (--loss, --optimizer, ...), shown by
/// --help next to hetpar-compile's own.
llvm::cl::OptionCategory &trainingOptionCategory();

/// --recompute: every stage of a training plan recomputes its activations
/// (hetpar-compile writes it into the plan, which the simulator and the
/// code generation then read).
bool recomputeEveryStage();

/// Checks the optimizer flags (trainOptimizerOptionsError: the same errors
/// as hetpar-train-optimizer's, also for --plan-only) and writes onto
/// `module`, for the planner's memory, the state slots that --optimizer and
/// --momentum keep (hetpar/Support/OptimizerState.h) and the
/// labels input that --loss adds, named by --labels
/// (hetpar/Plan/TrainingLabels.h; none when the loss output's shape is not
/// static yet).
llvm::Error markTrainingState(mlir::ModuleOp module);

/// Whether --eval-program (on by default) asks for the evaluation step.
bool wantEvalProgram();

/// The training flags' values that are wrong whatever the plan (today
/// --bucket-mib: a positive, finite number of MiB), as an error naming the
/// flag; success otherwise.
llvm::Error checkTrainingFlags();

/// Adds the passes that turn the same imported module into the evaluation
/// step of the training program (`hetpar-run --eval-data`): the same
/// parameters, static shapes and loss as buildTrainingPipeline, then
/// hetpar-train-eval-mode (float32 compute on the master weights).
void buildEvalPipeline(
    mlir::OpPassManager &pm,
    const std::function<void(mlir::OpPassManager &)> &toStatic);

/// The manifest's "training" object (docs/training.md) for the compiled step
/// function of `module` in compute dtype `dtype`, as JSON text. The batch
/// size is `batchSize` when given (the samples of a call over all
/// data-parallel replicas), else the step function's; the microbatches are
/// `microbatches` when positive, else --grad-accumulation-steps (the calls
/// of a step). `callMicrobatches` > 1: each call runs that many microbatches
/// of a pipeline (manifest "call_microbatches"; each device takes its rows
/// of each). "recompute" is --recompute, or `planRecomputes` (a stage of the
/// plan recomputes).
std::string trainingManifest(mlir::ModuleOp module, codegen::FloatMode dtype,
                             std::optional<int64_t> batchSize = std::nullopt,
                             int64_t microbatches = 0,
                             int64_t callMicrobatches = 1,
                             bool planRecomputes = false);

} // namespace hetpar::tools

#endif // HETPAR_TOOLS_COMPILE_TRAINING_H
