//===- PlanAnnotation.h - the plan the module carries -------------*- C++
//-*-===//
//
// The plan as the IR carries it (docs/partition.md, "Annotations"): the
// module attribute `dist.plan` (#dist.plan, DistBase.td, whose verifier
// checks its structure), written by annotateModule (Search.h) or a user's
// pass, read by every pass that applies a plan
// (hetpar-dist-partition, hetpar-dist-reduce-gradients) and by the driver
// that builds one training program per data-parallel replica. This is the one
// reader, so that every consumer cuts the batch into the same rows.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_PLANANNOTATION_H
#define HETPAR_PLAN_PLANANNOTATION_H

#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// One pipeline stage of an annotated plan.
struct StageAnnotation {
  /// Device ids in mesh order: replica r holds devices[r * tensor ..
  /// r * tensor + tensor - 1].
  llvm::SmallVector<int64_t> devices;
  int64_t data = 1, tensor = 1;
  /// The kind of each device ("unknown" when the annotation gives none).
  llvm::SmallVector<std::string> kinds;
  /// Per replica: its samples of a microbatch and the first of them
  /// (offsets[r] = rows[0] + ... + rows[r-1]).
  llvm::SmallVector<int64_t> rows, offsets;
  bool recompute = false;
  /// ZeRO-1 (training): each replica's relative share of the optimizer
  /// state (`zero_shares`; empty: every replica holds all of it).
  llvm::SmallVector<double> zeroShares;
  /// With zeroShares: 1 (ZeRO-1) or 2 (ZeRO-2: a pipeline's microbatches
  /// each reduce-scatter their gradients, and the replica sums only its
  /// shards).
  int64_t zeroStage = 1;
  /// The replica of device `id` in this stage, or -1.
  int64_t replicaOf(int64_t id) const;
  /// The devices that hold the same shards as device `id` (one per replica,
  /// in replica order): the group of a data-parallel reduction. Empty when
  /// `id` is not in this stage.
  llvm::SmallVector<int64_t> dataGroupOf(int64_t id) const;
};

/// An annotated plan, read and checked.
struct PlanAnnotation {
  std::vector<StageAnnotation> stages;
  int64_t microbatches = 1;
  /// Samples of one step (the batch) and of one microbatch.
  int64_t batch = 0, microbatchRows = 0;
  dist::PlanMode mode = dist::PlanMode::Inference;
  dist::PipelineSchedule schedule = dist::PipelineSchedule::GPipe;
  /// The stage that holds device `id`, or -1.
  int stageOf(int64_t id) const;
  /// Why training programs cannot be generated for this plan ("" when they
  /// can: any plan in float32; 16-bit ones of one stage without tensor
  /// parallelism). The one answer of
  /// hetpar-compile and hetpar-dist-reduce-gradients.
  /// `sixteenBit`: the step computes in bfloat16 or float16.
  std::string trainingProblem(bool sixteenBit = false) const;
};

/// Why training programs cannot be generated for a plan whose stages have
/// `tensorOfStage` tensor-parallel devices each ("" when they can): the one
/// answer behind PlanAnnotation::trainingProblem, which hetpar-compile also
/// asks of a searched plan before annotating it.
std::string trainingPlanProblem(llvm::ArrayRef<int64_t> tensorOfStage,
                                bool sixteenBit);

/// Reads `dist.plan` on `module` (its structure is checked by the
/// attribute's verifier). The batch is the plan's `batch` when it has one
/// (annotateModule writes it), else `batch` (the caller's: the first input's
/// first dimension). Each replica's rows of a microbatch are its share of
/// `batch_shares` (relative numbers, equal when absent) of the microbatch,
/// which must come out whole. Errors are emitted on `module` and name the
/// stage: no plan, no batch, microbatches not dividing the batch, a share
/// that is not a positive whole number of samples.
llvm::FailureOr<PlanAnnotation>
readPlanAnnotation(mlir::ModuleOp module, std::optional<int64_t> batch);

} // namespace hetpar

#endif // HETPAR_PLAN_PLANANNOTATION_H
