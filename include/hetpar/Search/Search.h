//===- Search.h - the plan search ---------------------------------*- C++
//-*-===//
//
// Finds the plan with the best predicted step time for a static module on a
// cluster (docs/search.md):
//  - intra-op: on a stage's tensor-parallel group, a sharding for every op
//    (a factor of its ShardingRuleOpInterface rule, or none) that minimizes
//    compute plus resharding time, by an integer linear program solved with
//    CBC (exact within the time budget), with a greedy solution and full
//    replication as fallbacks; shards are uneven, in proportion to each
//    device's speed for the op, on groups of mixed kinds;
//  - inter-op: the model's layers (from node names: "h.3", "layers.3",
//    "blocks.3", a bare "3") into pipeline stages, each on a contiguous block
//    of devices arranged as data x tensor (tensor groups inside one node), by
//    dynamic programming over layer ranges per stage count, microbatch count
//    and device blocks (as Alpa and Metis do); data-parallel replicas take
//    batch shares in proportion to their speed; activation recomputation where
//    memory needs it;
//  - the best candidates are simulated (Simulator.h) and the fastest that fits
//    every device wins; the baselines (pure data, pipeline and tensor
//    parallelism) are candidates too, so the plan is never predicted slower
//    than the best of them.
// Search passes only write annotations (annotateModule); the partition applies
// them.
//
// Units: seconds, bytes.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SEARCH_SEARCH_H
#define HETPAR_SEARCH_SEARCH_H

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Plan/Plan.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Plan/Simulator.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>
#include <vector>

namespace hetpar {

enum class Objective {
  Throughput, ///< time per step of the whole batch, microbatched
  Latency,    ///< time of one batch as one request: no microbatching
};

/// The compute dtype is not an option: it is the module's
/// `hetpar.compute_dtype` (hetpar/Support/FloatMode.h), which the simulator
/// and the cost model read the same way (OpCatalog::dtype).
struct SearchOptions {
  Mode mode = Mode::Inference;
  Objective objective = Objective::Throughput;
  /// Wall-clock budget in seconds; the best plan found by then is returned.
  double budgetSeconds = 60;
  /// When positive: exactly this many pipeline stages (an error when the model
  /// has fewer layers or the cluster fewer devices).
  int stages = 0;
  /// Called with the fraction of the search done (0..1) as it goes.
  std::function<void(double)> progress;
};

/// One evaluated plan.
struct Candidate {
  Plan plan;
  Prediction prediction;
  std::string description; ///< "2 stages: 4x2 on ..., 8 microbatches, 1F1B"
  bool fits() const { return prediction.memoryProblems.empty(); }
};

struct SearchStats {
  double seconds = 0;
  int candidatesEstimated = 0; ///< stage partitions scored by the DP
  int candidatesSimulated = 0;
  int shardingProblems = 0;  ///< intra-op problems solved
  int shardingOptimal = 0;   ///< of which CBC proved optimal
  int shardingFallbacks = 0; ///< of which the greedy or replicated plan won
  bool budgetExhausted = false;
};

struct SearchResult {
  Candidate best;
  /// The next best candidates that fit, fastest first (for --explain).
  std::vector<Candidate> alternatives;
  std::vector<Baseline> baselines;
  SearchStats stats;
  /// Why the winner won: lines for --explain.
  std::vector<std::string> explanation;
};

/// Searches a plan. Fails when no plan fits the cluster's memory, with the
/// bytes the model needs (weights, and in training gradients and optimizer
/// state) against the bytes the cluster has, and why the closest plans fail.
llvm::Expected<SearchResult> searchPlan(mlir::ModuleOp module,
                                        const Cluster &cluster,
                                        const CostModel &model,
                                        const SearchOptions &options);

/// Intra-op sharding of `ops` (indices into `catalog`, in order) for one
/// replica on `group` (device ids) with `batchShare` of the batch: the
/// shardings and the replica's time (forward + backward).
struct ShardingSolution {
  llvm::StringMap<OpSharding> shardings;
  double time = 0;
  bool optimal = false; ///< proven optimal by the solver
  std::string method;   ///< "ilp", "greedy", "replicated", "lean"
};
/// Auto: the fastest of the ILP, greedy and replicated assignments. Lean: a
/// greedy assignment that first minimizes the weight bytes left on any device
/// (for stages whose memory is tight).
enum class ShardingSolver { Auto, Lean };
llvm::Expected<ShardingSolution>
solveShardings(const OpCatalog &catalog, llvm::ArrayRef<int> ops,
               llvm::ArrayRef<int> group, double batchShare, bool training,
               const Cluster &cluster, const CostModel &model,
               double budgetSeconds,
               ShardingSolver solver = ShardingSolver::Auto);

/// Every legal sharding of op `i` on `group` (the first entry, std::nullopt,
/// is replication), as the search enumerates them. In training, only factors
/// that every parameter of the op contains (a split that leaves a weight whole
/// would leave partial weight gradients to all-reduce every step).
std::vector<std::optional<OpSharding>>
shardingChoices(const OpCatalog &catalog, int i, llvm::ArrayRef<int> group,
                double batchShare, bool training, const Cluster &cluster,
                const CostModel &model);

/// Writes `plan` onto the module's ops as the dist dialect's attributes for
/// the partition: `dist.stage_id` (i64) and `dist.op_sharding`
/// (#dist.op_sharding: dim, parts, collective) on ops, and `dist.plan`
/// (#dist.plan: stages with devices, data, tensor, batch_shares (relative),
/// recompute, ZeRO-1 shares and, when `cluster` is given, each device's
/// kind; microbatches, schedule, mode, batch) on the module. The partition
/// (hetpar-dist-partition) reads these. Errors: an op name the module does
/// not have, parts that do not fit the dimension they split.
llvm::Error annotateModule(mlir::ModuleOp module, const Plan &plan,
                           const Cluster *cluster = nullptr);

} // namespace hetpar

#endif // HETPAR_SEARCH_SEARCH_H
