//===- Batch.h - where the batch lies in every value -------------*- C++
//-*-===//
//
// The one batch analysis of the planner (docs/partition.md, "The batch"). The
// batch is seeded at the graph inputs: where `dist.batch_dim` on a function
// argument says (hetpar-compile --batch-dim NAME=AXIS), or else in the first
// input's first dimension, or, when the model mixes that dimension's indices
// and another dimension of the first input is carried through every op (a
// sequence-first [L, N, E] export), in that one (analyzeBatch). The ops'
// sharding rules
// (ShardingRuleOpInterface) carry it on to their results. The search (the
// batch size, which factors tensor parallelism may split, whether data
// parallelism and microbatches are possible), the simulator, the baselines
// and hetpar-dist-partition all read it from here, so that they give the
// same answer.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_BATCH_H
#define HETPAR_PLAN_BATCH_H

#include "hetpar/Dialect/ONNX/ShardingRule.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// Where the batch lies in a value: dimension `dim` holds `outer` equal
/// chunks, each made of the samples, each sample `granule` indices. The
/// batch-first input [B, S] is {0, 1, 1}; after a Reshape to [B*S], {0, S, 1};
/// nn.MultiheadAttention's [L*N, E] rows are {0, 1, L}.
struct BatchDim {
  int dim = 0;
  int64_t granule = 1, outer = 1;
  bool operator==(const BatchDim &o) const {
    return dim == o.dim && granule == o.granule && outer == o.outer;
  }
  bool operator!=(const BatchDim &o) const { return !(*this == o); }
};

/// How one op carries the batch: the factor of its rule that holds it, with
/// the batch `within` equal chunks inside the factor and each sample `units`
/// of the factor's indices ([N*H] with N the batch: within 1, units H; the
/// [L*N] rows of a MatMul: within L, units 1).
struct OpBatch {
  int factor = -1; ///< -1: the op reads no value that carries the batch
  int64_t units = 1, within = 1;
  /// Non-empty when the op reads the batch but its rule cannot split it (it
  /// has no rule, reduces over the batch, or mixes it with another
  /// dimension): why, as "op 'X' node 'n' reduces over ...". Its results
  /// then carry no batch.
  std::string error;
  /// The op computes statistics over the batch that a split batch must
  /// synchronize (a training-mode BatchNormalization): its rule keeps the
  /// batch whole, but data-parallel training sums the statistics over the
  /// replicas (hetpar-dist-sync-batch-norm), so the batch splits. Results
  /// without the batch (the running statistics) are the same everywhere.
  bool synchronized = false;
  /// With `synchronized`: why an inference plan cannot split the batch.
  std::string inferenceError;
  /// Non-empty when the op reads a value that carries no batch along its
  /// batch factor (a constant of batch size, or an input marked with
  /// --batch-dim NAME=none that an op still reads per sample): data
  /// parallelism slices it at compile time, but microbatches cannot (the
  /// runtime cuts only the batch inputs). Why, as "op 'X' node 'n' reads
  /// operand 1 ...".
  std::string unmicrobatched;
};

/// The batch analysis of a function's ops (OpCatalog's order and rules).
struct BatchAnalysis {
  /// The batch: the extent of the seeded dimension; 0 when that is not a
  /// static dimension of at least 2 (a single sample is never split).
  int64_t size = 0;
  /// The extent of the seeded dimension as the planner counts samples: the
  /// batch, 1 for a single sample or a model without inputs, 0 for an empty
  /// batch.
  int64_t samples = 1;
  /// The first input's dimension where the batch was seeded (-1: none).
  int seedDim = -1;
  /// True when the seed came from `dist.batch_dim`, false when found here.
  bool seedGiven = false;
  std::vector<OpBatch> ops;
  llvm::DenseMap<mlir::Value, BatchDim> values;
  /// The first op whose rule cannot split the batch, or -1: data
  /// parallelism and microbatches are then impossible.
  int firstError = -1;
  /// The first op with synchronized batch statistics (OpBatch), or -1: a
  /// training plan may split the batch, an inference plan may not.
  int firstSynchronized = -1;
  /// The first op with OpBatch::unmicrobatched, or -1.
  int firstUnmicrobatched = -1;

  /// The op that keeps the batch whole (no data parallelism, no
  /// microbatches) in a training or an inference plan, or -1: firstError,
  /// or in inference firstSynchronized. The one answer of the search, the
  /// baselines and placePlan.
  int wholeBatchOp(bool training) const {
    return firstError >= 0 ? firstError : training ? -1 : firstSynchronized;
  }
  /// The op that allows no microbatches (wholeBatchOp, else
  /// firstUnmicrobatched), or -1. The one answer of the search, the
  /// baselines and placePlan.
  int noMicrobatchesOp(bool training) const {
    int whole = wholeBatchOp(training);
    return whole >= 0 ? whole : firstUnmicrobatched;
  }
  /// The op for which the search and the baselines choose no microbatches,
  /// or -1: noMicrobatchesOp, else in training firstSynchronized (each
  /// microbatch would normalize by its own batch statistics, as gradient
  /// accumulation does in PyTorch: a plan may ask for it, but a searched
  /// plan keeps the statistics of the batch the model was compiled for;
  /// data-parallel replicas synchronize theirs). The one answer of the
  /// search and the baselines.
  int unchosenMicrobatchesOp(bool training) const {
    int no = noMicrobatchesOp(training);
    return no >= 0 ? no : training ? firstSynchronized : -1;
  }
  /// Why op `i` (wholeBatchOp or noMicrobatchesOp) keeps the batch whole or
  /// allows no microbatches, as "node 'n' (Op) reduces over ...".
  std::string wholeBatchReason(int i) const;
  std::optional<BatchDim> of(mlir::Value v) const {
    auto it = values.find(v);
    if (it == values.end())
      return std::nullopt;
    return it->second;
  }
};

/// Computes the analysis over `ops` (in program order) with their sharding
/// rules (`rules[i]` of `ops[i]`, none when the op has no rule). The seed is
/// the first input: in its `dist.batch_dim` when it has one; otherwise, when
/// it has rank 2 or more (a vector input is one sample), in its dimension 0,
/// unless some op cannot split that one and another dimension d of it
/// (extent at least 2) is carried through every op, tried in order: then in
/// d. Every other input carries the batch where its own `dist.batch_dim`
/// says, or else in the seed's dimension, when its extent there is the
/// batch's.
BatchAnalysis analyzeBatch(mlir::Operation *func,
                           llvm::ArrayRef<mlir::Operation *> ops,
                           llvm::ArrayRef<std::optional<ShardingRule>> rules);

/// Where the analysis seeded the batch, for messages: "dimension 1 of input
/// 'tokens'" (the input's `onnx.name`, else its position), or "no input" when
/// it seeded none.
std::string describeBatchSeed(mlir::Operation *func, const BatchAnalysis &a);

} // namespace hetpar

#endif // HETPAR_PLAN_BATCH_H
