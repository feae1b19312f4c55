//===- Simulator.h - evaluate a plan on a cluster -----------------*- C++
//-*-===//
//
// Resolves a plan against a static module and a cluster (every op in exactly
// one stage, devices that exist and are used once), computes each stage's
// forward and backward time per microbatch with the cost model, runs the
// pipeline schedule (GPipe or 1F1B) as a discrete-event simulation, and
// accounts memory per device. The result is what plan.json and trace.json
// report.
//
// Units: seconds, bytes, FLOP.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_SIMULATOR_H
#define HETPAR_PLAN_SIMULATOR_H

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Plan/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// One span of the timeline (Chrome trace "X" event).
struct TraceSpan {
  std::string name;
  std::string
      category; ///< "forward", "backward", "transfer", "collective", "sync"
  int device;
  int lane; ///< 0 compute, 1 collectives, 2 send/recv
  double start, duration;
};

/// The largest bucket of gradients one collective reduces, in bytes
/// (dist::kGradientBucketMiB, the programs' default). ZeRO-2 packs one at a
/// time.
inline constexpr double kGradientBucketBytes =
    dist::kGradientBucketMiB * 1024 * 1024;

struct DeviceMemory {
  double weights = 0, activations = 0, gradients = 0, optimizer = 0;
  /// The graph inputs the device's program takes, in their model dtypes:
  /// every input (hetpar-dist-partition gives every device function every
  /// graph input; the runtime holds them for the program), a batch input at
  /// one microbatch in inference and at the replica's rows of the step in
  /// training, an input without the batch whole.
  double inputs = 0;
  double total() const {
    return weights + activations + gradients + optimizer + inputs;
  }
};

struct DevicePrediction {
  int id;
  std::string kind;
  int stage;
  DeviceMemory memory;
  double capacity; ///< the device's memory, bytes
  double busy = 0; ///< seconds of compute in the step
};

struct StagePrediction {
  double forward =
      0; ///< seconds per microbatch (slowest replica), collectives included
  double backward = 0; ///< 0 in inference
  double forwardCollectives = 0;
  double transferOut = 0; ///< seconds to send a microbatch's boundary values on
  double gradientSync = 0;
  std::vector<std::string> ops;
};

struct Prediction {
  double stepTime = 0;   ///< seconds per step (one global batch)
  double throughput = 0; ///< samples per second
  double flopsPerStep =
      0; ///< model FLOP per step (forward, plus backward in training)
  double bubbleFraction = 0; ///< idle share of the stages' time
  int64_t batch = 1; ///< samples per step (the module's batch dimension)
  /// The compute dtype every byte count was made in (OpCatalog::dtype).
  FloatMode dtype = FloatMode::F32;
  std::vector<StagePrediction> stages;
  std::vector<DevicePrediction> devices;
  std::vector<TraceSpan> trace;
  /// One line per device whose memory does not fit (empty when all fit).
  std::vector<std::string> memoryProblems;
  /// Parts of the plan that have no effect (recompute in inference).
  std::vector<std::string> warnings;
};

/// Evaluates `plan`. Errors (with what is wrong) for a plan that does not match
/// the module or the cluster: an unknown or repeated op, an op in no stage, an
/// unknown device or one in two stages, a sharding of an op outside its stage.
/// A plan that does not fit memory is not an error here: see memoryProblems.
llvm::Expected<Prediction> simulate(mlir::ModuleOp module,
                                    const Cluster &cluster, const Plan &plan,
                                    const CostModel &costModel);
class OpCatalog;
/// The same with the function's ops already catalogued (the search evaluates
/// many plans of one function); without `withTrace` the prediction's trace
/// stays empty (a pipeline of many stages and microbatches has millions of
/// spans).
llvm::Expected<Prediction> simulate(const OpCatalog &catalog,
                                    mlir::func::FuncOp func,
                                    const Cluster &cluster, const Plan &plan,
                                    const CostModel &costModel,
                                    bool withTrace = true);

/// The pipeline schedule alone: the start and end of every forward (and, in
/// training, backward) task of every stage, given per-stage task times and the
/// transfer time from each stage to the next (index s: from s to s + 1).
/// A transfer occupies its link (one per boundary and direction), so transfers
/// of consecutive microbatches queue when the link is slower than the stage.
struct ScheduledTask {
  int stage, microbatch;
  bool backward;
  double start, end;
  /// The transfer of this task's output to the next stage (forward) or its
  /// input gradients to the previous stage (backward); both -1 when none.
  double sendStart = -1, sendEnd = -1;
};
std::vector<ScheduledTask> schedulePipeline(int stages, int microbatches,
                                            Schedule schedule, bool training,
                                            llvm::ArrayRef<double> forward,
                                            llvm::ArrayRef<double> backward,
                                            llvm::ArrayRef<double> transfer);
/// The pipeline bubble: the share of stages x (first task start .. last task
/// end) in which a stage computes nothing. For equal stage times and no
/// transfers this is (p - 1) / (m + p - 1) (Huang et al., GPipe, 2019).
double bubbleFraction(llvm::ArrayRef<ScheduledTask> tasks, int stages);
/// Microbatches a stage holds activations for at its peak: 1 in inference;
/// in training m under GPipe and min(stages - stage, m) under 1F1B.
int inFlightMicrobatches(int stage, int stages, int microbatches,
                         Schedule schedule, bool training);

/// Per op of `ops` (a function's ops in order, a forward pass): the values
/// (its operands and results) that its gradient rule reads, as
/// hetpar-onnx-differentiate would build it: what a training step saves for
/// its backward pass (constants included). An op with a GradientOpInterface and
/// an operand on a path from a parameter (a float constant of more than one
/// element) builds its backward ops into a scratch block, erased again; an op
/// whose rule fails reads all its operands and results. The IR is left as it
/// was. `active`, when given, receives the float values on a path from a
/// parameter: those whose gradient the backward pass computes.
std::vector<llvm::SmallVector<mlir::Value>>
valuesReadByGradients(llvm::ArrayRef<mlir::Operation *> ops,
                      llvm::DenseSet<mlir::Value> *active = nullptr);

/// The predicted fields of plan.json (DESIGN.md) plus the plan itself.
llvm::json::Object predictionToJSON(const Plan &plan, const Prediction &p,
                                    const Cluster &cluster);
/// Writes trace.json in the Chrome trace-event format (opens in Perfetto): one
/// process per device, a compute and a communication thread each.
void writeTraceJSON(llvm::raw_ostream &os, const Prediction &p,
                    const Cluster &cluster);

/// The ops a plan refers to: the function's ops other than constants and the
/// terminator, in order, each with a unique name: its ONNX node name, or
/// "<OpType>#<position>" when it has none, with "#2", "#3", ... appended to
/// later ops that repeat a name.
std::vector<std::pair<mlir::Operation *, std::string>>
listPlanOps(mlir::func::FuncOp func);

/// "1.23 GB", "456 B": SI units, as cluster files give memory.
std::string formatBytes(double bytes);

/// `total` items split into positive integer parts proportional to `weights`
/// (largest remainder); empty when total < the number of parts.
std::vector<int64_t> splitProportionally(int64_t total,
                                         llvm::ArrayRef<double> weights);

/// ZeRO-1: each data-parallel replica's relative share of a training
/// stage's optimizer state: the plan's `zero_shares`, else each replica's
/// (first) device memory in bytes from `cluster` (1 each without one).
/// Empty when the stage's `zero` is 0. The shares annotateModule writes and
/// the simulator's memory use; hetpar-dist-reduce-gradients cuts each
/// parameter by them with splitProportionally.
std::vector<double> zeroStateShares(const Stage &stage, const Cluster *cluster);

/// Training: `plan` with ZeRO-1 on each of its data-parallel stages, or
/// where that does not fit and the plan has several microbatches ZeRO-2,
/// and its prediction, when `pred` (the plan's own) does not fit memory and
/// that one does; nullopt otherwise (inference, no data-parallel stage, fits
/// already, or ZeRO does not help enough). What the search and the
/// data-parallel baseline do with a plan that does not fit.
std::optional<std::pair<Plan, Prediction>>
shardStateIfNeeded(const OpCatalog &catalog, mlir::func::FuncOp func,
                   const Cluster &cluster, const Plan &plan,
                   const Prediction &pred, const CostModel &model);

/// The reference plans the chosen plan is compared against: pure data
/// parallelism, a pipeline with one stage per device, pure tensor parallelism
/// (each built as Baselines.cpp describes), with their predictions.
struct Baseline {
  std::string name; ///< "data_parallel", "pipeline", "tensor_parallel"
  Plan plan;        ///< valid unless notApplicable is set
  std::optional<Prediction> prediction;
  std::string
      notApplicable; ///< why this baseline cannot be built, when it cannot
  bool fits() const { return prediction && prediction->memoryProblems.empty(); }
};
std::vector<Baseline> makeBaselines(mlir::ModuleOp module,
                                    const Cluster &cluster, Mode mode,
                                    const CostModel &costModel);

/// The baselines as plan.json's "baselines" field.
llvm::json::Object baselinesToJSON(llvm::ArrayRef<Baseline> baselines);

} // namespace hetpar

#endif // HETPAR_PLAN_SIMULATOR_H
