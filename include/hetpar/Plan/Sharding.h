//===- Sharding.h - layouts, resharding and per-op timing ---------*- C++
//-*-===//
//
// What a tensor-parallel sharding of an op means for time: the op's sharding
// (plan.json's {dim, parts, collective}) is resolved against its sharding rule
// (ShardingRuleOpInterface) into the layouts its operands need and its results
// have over the group (replicated, split along a dimension, or partial sums),
// and each device's share of the work. Where a value's layout differs from the
// layout its user needs, a collective reshards it (all-gather, all-reduce,
// reduce-scatter, all-to-all). The simulator and the search both time ops with
// StageTimer, so a plan the search chose is scored exactly as the search saw
// it.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PLAN_SHARDING_H
#define HETPAR_PLAN_SHARDING_H

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Dialect/ONNX/ShardingRule.h"
#include "hetpar/Plan/Batch.h"
#include "hetpar/Plan/Plan.h"
#include "hetpar/Plan/TrainingLabels.h"
#include "hetpar/Support/OptimizerState.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// How a value lies on the devices of a tensor-parallel group.
struct Layout {
  enum Kind { Replicated, Split, Partial } kind = Replicated;
  int dim = -1;      ///< Split: the dimension
  int64_t outer = 1; ///< Split: the dimension is `outer` equal chunks, each
                     ///< split alike
  std::vector<double> fractions; ///< Split: each device's share (sums to 1)
  bool operator==(const Layout &o) const;
  bool operator!=(const Layout &o) const { return !(*this == o); }
  std::string str() const;
};

/// The layer of an op from its node name: the path up to its first component
/// that is a number or "<name>.<number>" ("/m/transformer/h.3/attn/MatMul" ->
/// "/m/transformer/h.3"), or "" when there is none.
std::string layerOf(llvm::StringRef nodeName);

/// The layer of each op of a sequence from the ops' node names, in program
/// order: 0, 1, ... An op whose name gives another layer (layerOf) than the
/// current one starts a new layer; an op without a layer name joins the layer
/// before it (those before any named layer form layer 0). The one layer
/// assignment of the planner (OpCatalog::layer), the simulator and
/// hetpar-train-recompute.
std::vector<int> assignLayers(llvm::ArrayRef<std::string> names);

/// The ops of a function with everything the timing needs, computed once:
/// their work (measureOp), sharding rules and the alignment of each factor,
/// and the compute dtype that every size in bytes is counted in.
class OpCatalog {
public:
  explicit OpCatalog(mlir::func::FuncOp func);

  size_t size() const { return ops.size(); }
  /// The compute dtype of the function's module (getComputeDtype; float32
  /// when the attribute is absent or malformed: searchPlan and simulate reject
  /// a malformed one first). The search, the simulator and the cost model's
  /// OpWork all take it from here.
  FloatMode dtype = FloatMode::F32;
  /// Bytes of a value of `type` in the compute dtype (tensorBytes).
  double bytesOf(mlir::Type type) const { return tensorBytes(type, dtype); }
  /// The optimizer's float32 state slots per parameter element
  /// (getOptimizerStateSlots: AdamW's 2 when the module does not say;
  /// malformed as for `dtype`).
  int64_t optimizerSlots = kMaxOptimizerStateSlots;
  /// The labels a training step's loss adds, which the last stage takes
  /// (getTrainingLabels; null when the module names none, or malformed as
  /// for `dtype`).
  mlir::RankedTensorType labels;
  /// Bytes a training step keeps per parameter element beyond the weight and
  /// its gradient: the optimizer's slots, and a master copy when the compute
  /// dtype holds parameters in 16 bits (the search's bound while it builds
  /// stages; the simulator counts the master copy per parameter's type).
  double stateBytesPerParameter() const {
    return kOptimizerSlotBytes * double(optimizerSlots) +
           (dtype == FloatMode::F32 ? 0 : kMasterCopyBytes);
  }
  std::vector<mlir::Operation *> ops;
  std::vector<std::string> names; ///< listPlanOps names
  std::vector<std::optional<OpWork>> work;
  std::vector<std::optional<ShardingRule>> rules;
  /// Per op and factor: the factor's unit in elements of the factor, so that
  /// splits of one value agree along a chain of ops (the 768 columns that a
  /// later Reshape views as 12 heads of 64 split in blocks of 64); 0 when the
  /// factor cannot be split in whole units.
  std::vector<std::vector<int64_t>> factorUnit;
  /// Per op and factor: the factor is a block of a larger dimension somewhere
  /// (attention heads): split evenly on devices of one kind.
  std::vector<std::vector<bool>> blockFactor;
  /// Per op: its layer (0, 1, ...; see layerOf), in order: an op whose node
  /// names another layer starts a new one, ops without a layer name join the
  /// layer before them (those before any layer form the first).
  std::vector<int> layer;
  /// Per op: the values its gradient rule reads (valuesReadByGradients): what a
  /// training step keeps for the op's backward.
  std::vector<llvm::SmallVector<mlir::Value>> readByGradient;
  /// The float values on a path from a parameter: those whose gradient a
  /// training step computes (valuesReadByGradients).
  llvm::DenseSet<mlir::Value> withGradient;
  /// Where the batch lies in each value and which factor of each op holds it
  /// (Batch.h): the one answer of the search, the simulator and the
  /// partition.
  BatchAnalysis batch;
  llvm::DenseMap<mlir::Operation *, int> index;
  llvm::StringMap<int> byName;
};

/// An op's sharding resolved for a group of `t` devices.
struct ResolvedSharding {
  int factor = -1; ///< the split factor; -1 when replicated or without a rule
  std::vector<Layout> operands, results; ///< needed / produced (before the
                                         ///< op's own collective)
  std::vector<double> shares; ///< each device's share of the op's work
  /// Per operand: each device's share of it (a constant's memory).
  std::vector<std::vector<double>> operandShares;
  /// The result's split dimension comes from a constant operand (a weight's
  /// columns), which can be laid out at compile time in any order: any split
  /// of that dimension is free to produce.
  bool flexibleResult = false;
};

/// Resolves `sharding` (null: replicated) of op `i` of `catalog` over a group
/// of `t` devices. Errors say what does not fit the op's rule.
llvm::Expected<ResolvedSharding>
resolveSharding(const OpCatalog &catalog, int i, const OpSharding *s, int t);

/// The OpSharding that splits factor `f` of op `i` over devices of relative
/// speeds `weights`, or std::nullopt when the factor cannot be split there
/// (too small, a whole factor, a block factor the group size does not divide
/// on devices of one kind, a factor of the batch dimension, which data
/// parallelism owns).
std::optional<OpSharding> shardingForFactor(const OpCatalog &catalog, int i,
                                            int f,
                                            llvm::ArrayRef<double> weights,
                                            bool homogeneous);

/// Seconds to turn `from` into `to` for a value of `bytes` (whole tensor, this
/// replica's share of the batch) over `group`, and the collective used.
double reshardTime(const Layout &from, const Layout &to, double bytes,
                   llvm::ArrayRef<int> group, const Cluster &cluster,
                   const CostModel &model, Collective *used = nullptr);

/// The layout a value of type `type` has after `collective` (none,
/// all_gather, all_reduce or reduce_scatter) follows an op producing
/// `layout`: reduce_scatter leaves partial sums split along the last
/// dimension in the op's `shares` (ResolvedSharding::shares), as
/// hetpar-dist-partition does, or whole (an all-reduce) when that dimension
/// has fewer indices than the group has devices.
Layout afterCollective(const Layout &layout,
                       std::optional<Collective> collective, mlir::Type type,
                       llvm::ArrayRef<double> shares);

/// A value that leaves its stage split (exitSplit): the producer's split
/// and the split its first user in the receiving stage needs.
struct ExitSplit {
  int stage;        ///< the receiving stage
  int user;         ///< the first user there (catalog index)
  unsigned operand; ///< the operand of `user` it is
  Layout from, to;  ///< both Split along one dimension, outer 1
};

/// Whether `value` (a result of op `catalog.index[owner]`) travels to a later
/// stage split as its producer leaves it: each device of the receiving group
/// gets, from each sending device, the part of its own split that the sender
/// holds (by send/recv), and nothing is gathered first. That is so when the
/// producer's layout after its own collective is a split with outer 1, the
/// value is no graph output, every user outside its stage is in one later
/// stage, and each of them needs the operand in one split along the same
/// dimension with outer 1 (any sizes against the producer's: the pieces are
/// the overlaps; one split for all users, so that none converts it there,
/// where the receiving stage's timing, which takes values from outside as
/// they arrive, would not charge it). `resolved` and `collectiveOf` give an
/// op's resolved sharding on its own stage's group and its collective,
/// `stageOf` its stage, by catalog index. The one answer of the simulator and
/// hetpar-dist-partition.
std::optional<ExitSplit>
exitSplit(const OpCatalog &catalog, mlir::OpResult value,
          llvm::function_ref<const ResolvedSharding *(int)> resolved,
          llvm::function_ref<std::optional<Collective>(int)> collectiveOf,
          llvm::function_ref<int(int)> stageOf);

/// Times one replica of a stage: its ops in order on its tensor-parallel
/// group, each op on its slowest device, then its own collective and the
/// reshards its users need; values from outside the stage arrive replicated,
/// values leaving the stage leave replicated, but for those in `leaveSplit`
/// (exitSplit), which leave as they are. In training, the backward pass
/// runs the forward of the ops in `recomputed` (catalog indices; null for
/// none) again: layer-by-layer recomputation (recomputedOps).
struct ReplicaTime {
  double forward = 0, backward = 0, collectives = 0;
  std::vector<double> ownForward, ownBackward; ///< per device of the group
};
llvm::Expected<ReplicaTime>
timeReplica(const OpCatalog &catalog, llvm::ArrayRef<int> ops,
            const llvm::StringMap<OpSharding> &shardings,
            llvm::ArrayRef<int> group, double batchShare, bool training,
            const llvm::DenseSet<int> *recomputed, const Cluster &cluster,
            const CostModel &model,
            const llvm::DenseSet<mlir::Value> *leaveSplit = nullptr);

/// The share of `value` (a result of an op of a stage whose ops are `inStage`;
/// `resolved` gives the resolved sharding of an op by its catalog index) that
/// device `t` of the group keeps: its fraction while the value (after
/// `collective`) and every use of it stay split, 1 when some use needs it
/// whole, outside the stage too.
double keptShare(const OpCatalog &catalog,
                 llvm::function_ref<const ResolvedSharding *(int)> resolved,
                 mlir::OpResult value, std::optional<Collective> collective,
                 const llvm::DenseSet<int> &inStage, int t);

/// Whether `v` is a constant (a weight or another initializer).
bool isConstant(mlir::Value v);

/// Elements of `v` when it is a parameter, a constant floating-point tensor of
/// more than one element (the optimizer keeps state for it); 0 otherwise.
double parameterCount(mlir::Value v);

/// The one check of the module attributes the planner reads: the compute
/// dtype (getComputeDtype: float32, float16 or bfloat16) and the optimizer's
/// state slots (getOptimizerStateSlots: 0 to 2). The error names the
/// attribute and its value. searchPlan and simulate call it first.
llvm::Error checkPlanningAttributes(mlir::ModuleOp module);

} // namespace hetpar

#endif // HETPAR_PLAN_SHARDING_H
