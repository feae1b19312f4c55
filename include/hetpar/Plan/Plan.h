//===- Plan.h - how a model is split over a cluster ---------------*- C++
//-*-===//
//
// A plan (plan.json, docs/plan-format.md): pipeline stages in order, each with
// its ops, its device group arranged as a (data x tensor) mesh, the
// data-parallel replicas' shares of the batch, and per-op tensor sharding; the
// microbatch count and the pipeline schedule. The simulator (Simulator.h)
// evaluates a plan and fills in the predicted fields. Plans are written by the
// search, or by hand.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_PLAN_H
#define HETPAR_PLAN_PLAN_H

#include "hetpar/Dialect/Dist/DistOps.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// The dist dialect's kinds (DistBase.td): one spelling for plan.json, the
/// command line and the IR ("gpipe", "1f1b"; "inference", "training").
using Schedule = dist::PipelineSchedule;
using Mode = dist::PlanMode;

inline llvm::StringRef getScheduleName(Schedule s) {
  return dist::stringifyPipelineSchedule(s);
}
inline llvm::StringRef getModeName(Mode m) {
  return dist::stringifyPlanMode(m);
}

/// How one op is split across the devices of a tensor-parallel group.
struct OpSharding {
  /// Output dimension that is split (for a MatMul-class op, the output column
  /// dimension is "column parallel"), or -1 when the contraction dimension is
  /// split ("row parallel": partial sums).
  int64_t dim = -1;
  /// Relative sizes of the parts, one per device of the group (uneven splits
  /// allowed: [5, 3] gives 5/8 and 3/8).
  std::vector<double> parts;
  /// The collective that follows the op over its group: all_reduce (after a
  /// contraction split), all_gather (to rebuild a split output),
  /// reduce_scatter, or none (the next op consumes the split as is, as in
  /// Megatron's column -> row pairs). "none" in plan.json.
  std::optional<dist::CollectiveKind> collective;
};

struct Stage {
  /// Op names (ONNX node names) in this stage, in the module's order. When
  /// given as a range in plan.json ("first"/"last"), expanded at resolution.
  std::vector<std::string> ops;
  std::optional<std::string> firstOp, lastOp;
  /// Device ids; `data` x `tensor` = their count; replica r uses devices
  /// [r * tensor, (r + 1) * tensor).
  std::vector<int> devices;
  int data = 1;
  int tensor = 1;
  /// Share of each microbatch per data replica (sums to 1; even by default).
  std::vector<double> batchShares;
  /// Tensor sharding of ops of this stage (others are replicated on the group).
  llvm::StringMap<OpSharding> shardings;
  /// Recompute activations in the backward pass instead of keeping them.
  bool recompute = false;
  /// ZeRO stage of the data-parallel replicas in training: 0 (each replica
  /// holds the whole optimizer state), 1 (each holds a shard of every
  /// large parameter's state, updates that shard and all-gathers the
  /// parameter) or 2 (also sums a pipeline's microbatch gradients as
  /// shards only); docs/training.md, "Sharded optimizer state".
  int zero = 0;
  /// ZeRO-1: each replica's relative share of the state (empty: in
  /// proportion to each device's memory, from the cluster).
  std::vector<double> zeroShares;
};

struct Plan {
  std::vector<Stage> stages;
  int microbatches = 1;
  Schedule schedule = Schedule::OneFOneB;
  Mode mode = Mode::Inference;
  /// Whether the file said "mode" (hetpar-compile's --mode must then agree).
  bool modeGiven = false;
  /// Free-form provenance ("hand-written", "search", "baseline: data
  /// parallel").
  std::string origin;
};

/// ", ZeRO-1" or ", ZeRO-2" (the highest stage of any of the plan's
/// stages), or "" without sharded state: what the search and the baselines
/// add to a plan's `origin` when they shard its state to fit.
std::string zeroOriginTag(const Plan &plan);

/// Reads a plan; errors name the file, the line and the field.
llvm::Expected<Plan> loadPlan(llvm::StringRef path);
llvm::Expected<Plan> parsePlan(llvm::StringRef text, llvm::StringRef path);

/// The plan's own fields as JSON (the simulator adds the predictions).
llvm::json::Object planToJSON(const Plan &plan);

} // namespace hetpar

#endif // HETPAR_PLAN_PLAN_H
