//===- PlanPlacement.h - a plan checked against its model -------*- C++ -*-===//
//
// The one check of a C++ Plan (a plan file, a baseline, a search candidate)
// against the model it places and the cluster it runs on: which ops each
// stage holds, which devices, and each replica's share of a microbatch. The
// simulator times what it returns; annotateModule writes it onto the module
// as `dist.plan`, whose reader (readPlanAnnotation) checks only what a
// hand-written annotation can add.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_PLANPLACEMENT_H
#define HETPAR_PLAN_PLANPLACEMENT_H

#include "hetpar/Plan/Plan.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace hetpar {

class OpCatalog;
struct Cluster;

/// Where a valid plan puts things.
struct PlanPlacement {
  /// Per op of the catalog: its stage.
  std::vector<int> stageOf;
  /// Per stage: its ops' catalog indices, in the function's order.
  std::vector<std::vector<int>> stageOps;
  /// Per stage and replica: its fraction of a microbatch (the plan's
  /// batch_shares, or equal parts, over their sum), each a whole number of
  /// samples.
  std::vector<std::vector<double>> replicaShares;
  /// The batch (samples of one step) and the samples of one microbatch.
  int64_t batch = 0, microbatchSamples = 0;
  /// What is legal but has no effect ("'recompute' in inference").
  std::vector<std::string> warnings;
};

/// Checks `plan` against the model of `catalog` and, when given, `cluster`.
/// Errors (the first found, naming the stage, op or device):
///  - a stage names an op the model does not have, gives one of 'first' and
///    'last' only, or 'first' after 'last';
///  - an op in two stages or listed twice, an op in no stage, or a value
///    that flows from a later stage to an earlier one;
///  - a sharding of an op outside its stage, or of a result dimension the op
///    does not have;
///  - a device the cluster does not have, or in two stages;
///  - a batch of 0 samples, microbatches that do not divide it, a replica
///    without a whole, positive number of samples of a microbatch;
///  - a split batch (microbatches or data parallelism) in a model whose
///    batch analysis found an op that mixes samples, or, in an inference
///    plan, one whose batch statistics only training synchronizes.
llvm::Expected<PlanPlacement>
placePlan(const OpCatalog &catalog, const Plan &plan, const Cluster *cluster);

/// Whether stage `stage` of a plan of `numStages` stages takes graph input
/// `input` (an argument of the model function): one of its ops reads it, or
/// it is a graph output and `stage` is the last (which returns the outputs).
/// `stageOfOp` gives an op's stage, -1 outside every stage. The one answer
/// of the partition (the arguments of each device's function) and the
/// simulator (each device's input memory): a later pipeline stage holds no
/// copy of an image batch its first stage alone reads.
bool stageTakesInput(mlir::BlockArgument input, int stage, int numStages,
                     llvm::function_ref<int(mlir::Operation *)> stageOfOp);

} // namespace hetpar

#endif // HETPAR_PLAN_PLANPLACEMENT_H
