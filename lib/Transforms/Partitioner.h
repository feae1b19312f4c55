//===- Partitioner.h - hetpar-dist-localize's state -----------*- C++ -*-===//
//
// The one class behind hetpar-dist-localize (DistLocalize.cpp describes
// the pass), shared by the files that implement it: DistLocalize.cpp (the
// plan, one op, the module), PlanStages.cpp (a plan's mesh and stages in the
// IR, shared with hetpar-dist-introduce-transfers and hetpar-dist-apply-plan),
// PartitionGlobalForm.cpp (reading the global form), PartitionSplits.cpp (what
// an op's sharding makes of its values, shared with
// hetpar-dist-introduce-transfers),
// PartitionLayouts.cpp (local values and their
// conversions), PartitionDevice.cpp (one device's program and the
// transfers between stages), PartitionTraining.cpp (what a training plan
// adds for its backward pass). Private to lib/Transforms.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_TRANSFORMS_PARTITIONER_H
#define HETPAR_LIB_TRANSFORMS_PARTITIONER_H

#include "BlockOps.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Plan/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar::partition {

using namespace mlir;

inline constexpr llvm::StringLiteral kMesh = "mesh";

/// One pipeline stage of the plan, with each replica's rows of a microbatch.
struct StageInfo : StageAnnotation {
  std::vector<Operation *> ops;
  StageInfo(StageAnnotation st) : StageAnnotation(std::move(st)) {}
};

/// A value on one device: its local SSA value and its layouts.
struct Local {
  Value value;
  std::optional<BatchDim> batch;
  enum Kind { Replicated, Split, Partial } kind = Replicated;
  // Split: dimension `dim` in `outer` chunks; rank t holds factor units
  // [starts[t], starts[t] + sizes[t]) of each, `granule` indices per unit.
  int dim = -1;
  int64_t granule = 1, outer = 1;
  SmallVector<int64_t> starts, sizes;
  dist::ReductionKind reduction = dist::ReductionKind::Sum; // Partial
  // Partial: what the op adds once to the sum (getAddedOperand), added after
  // the all-reduce by every device; null when nothing.
  Value addend;
  bool sameSplit(const Local &o) const {
    if (kind != o.kind)
      return false;
    if (kind != Split)
      return true;
    if (dim != o.dim || outer != o.outer || starts.size() != o.starts.size())
      return false;
    for (size_t t = 0; t < starts.size(); ++t)
      if (starts[t] * granule != o.starts[t] * o.granule ||
          sizes[t] * granule != o.sizes[t] * o.granule)
        return false;
    return true;
  }
};

/// An op's tensor-parallel split: the factor of its sharding rule that its
/// dist.op_sharding splits (-1: none), and each device's units of it.
struct TensorSplit {
  int factor = -1;
  SmallVector<int64_t> starts, sizes;
};

/// `'Op' node 'name'` for diagnostics.
std::string describeOp(Operation *op);

/// The module's one model function (defined, without dist.device); fails
/// with an error at the module naming `pass` otherwise.
FailureOr<func::FuncOp> modelFunction(ModuleOp module, StringRef pass);

// A plan's mesh and stages in the IR (PlanStages.cpp): the one reading of
// hetpar-dist-introduce-transfers, hetpar-dist-apply-plan and
// hetpar-dist-localize.

/// The module's `dist.mesh @mesh`, created first in the module from the
/// plan's devices in plan order (the process ranks) when it has none.
dist::MeshOp getOrCreatePlanMesh(ModuleOp module, const PlanAnnotation &plan);

/// The pipeline stage of each op of an annotated model function (its
/// dist.stage_id); constants, dist.transfer and the terminator have none.
struct StageAssignment {
  DenseMap<Operation *, int> stageOf;
  std::vector<SmallVector<Operation *>> ops; ///< per stage, in block order
};

/// Reads the stages of `func`'s ops under a plan of `numStages` stages.
/// Fails with an error at the op: no dist.stage_id, or one the plan does not
/// have; regions (the partition does not split them); a value of a later
/// stage read, directly or through a dist.transfer.
FailureOr<StageAssignment> readStageAssignment(func::FuncOp func,
                                               size_t numStages);

/// The stages a dist.transfer joins: that of the op computing its input,
/// and the one later stage of all its users, where `stageOf` gives an op's
/// stage (none outside every stage). Fails with an error at the transfer
/// otherwise.
FailureOr<std::pair<int, int>>
transferStages(dist::TransferOp t,
               llvm::function_ref<std::optional<int>(Operation *)> stageOf);

// What an op's dist.op_sharding makes of its values (PartitionSplits.cpp):
// the one reading of hetpar-dist-introduce-transfers and hetpar-dist-localize.

/// The op's dist.op_sharding as the simulator reads a plan's (none without
/// one).
std::optional<OpSharding> namedSharding(Operation *op);

/// The tensor-parallel split that `op`'s dist.op_sharding names on a group
/// of `t` devices (factor -1 without one), checked against its sharding
/// rule. Fails with an error at the op: a sharding without a rule, one the
/// rule cannot resolve, parts that do not add up to the factor.
FailureOr<TensorSplit> tensorSplitOf(const OpCatalog &catalog, Operation *op,
                                     int64_t t);

/// The split a `reduce_scatter` after an op leaves its partial sums in: the
/// last dimension of `type` in the proportions of the sharding's parts (as
/// the simulator's afterCollective has it), in indices (granule 1);
/// replicated where the dimension has fewer indices than devices (then the
/// sums are all-reduced).
Local reduceScatterLayout(dist::OpShardingAttr sharding, Type type);

/// The tensor-parallel layout of an operand or result whose dimensions
/// hold `dims` of `rule`'s factors: split where the split factor lies,
/// replicated when it holds none of it.
Local tensorLayout(const ShardingRule &rule, const DimFactors &dims,
                   const TensorSplit &split);

class Partitioner {
public:
  Partitioner(ModuleOp module, func::FuncOp func, bool localIO)
      : module(module), func(func), ctx(module.getContext()), b(ctx),
        localIO(localIO) {}

  LogicalResult run();

private:
  // --- the plan ---------------------------------------------------------
  /// A dist.transfer of the global form: the value its stage yields, the
  /// stage that receives it, and its two layouts.
  struct Transfer {
    Value value;
    int to;
    dist::ShardingAttr source, target;
    Location loc; ///< the dist.transfer's, for errors
  };
  /// The global form's stages inlined into the function (each op with its
  /// dist.stage_id, as the rest of the partition reads them), its transfers
  /// recorded and removed. Fails at the op: an op outside every stage,
  /// stages out of order, a stage reading another's value without a
  /// transfer, an op with regions.
  LogicalResult flattenGlobalForm();
  /// The plan (dist.plan), checked against the global form's stages.
  LogicalResult readPlan();
  /// A transfer's layouts, checked against its stages: split at both ends
  /// (then the value travels in the overlaps) or at neither.
  LogicalResult readTransfer(const Transfer &t);
  InFlightDiagnostic error(Operation *at) { return at->emitError(); }

  // --- one device -------------------------------------------------------
  struct Device {
    int64_t id;
    int stage, replica, rank;
    SmallVector<int64_t> group; // the replica's devices
    func::FuncOp fn;
    DenseMap<Value, Local> values;
    DenseMap<BlockArgument, Value> args; // graph input -> its argument here
    DenseMap<Value, Value> replicated;   // cache of makeReplicated
    // Cache of the all-to-alls: a value resplit along another dimension.
    DenseMap<Value, SmallVector<Local, 1>> resplit;
    // Training: the dist.grad_all_reduce of a local value, and the shard of
    // a parameter (an initializer) that this device holds.
    DenseMap<Value, Value> entered, paramShards;
  };
  LogicalResult partitionDevice(Device &d);
  void createFunction(Device &d, SmallVectorImpl<Type> &argTypes);
  std::string graphInputName(BlockArgument a);
  void recordGraphInputs();
  LogicalResult receiveFromEarlierStages(Device &d);
  LogicalResult replicateSentWhole(Device &d);
  LogicalResult sendToLaterStages(Device &d);
  LogicalResult joinOutputsAtRoot(Device &d, ArrayRef<Type> argTypes,
                                  SmallVectorImpl<Value> &results);
  LogicalResult localResults(Device &d, ArrayRef<Type> argTypes,
                             SmallVectorImpl<Value> &results);
  FailureOr<Local> lookup(Device &d, Value global);
  FailureOr<Local> convert(Device &d, Value global, Local cur,
                           std::optional<BatchDim> batch, const Local &tp,
                           Operation *user, unsigned operand);
  LogicalResult partitionOp(Device &d, Operation *op,
                            SmallVectorImpl<Local> &results);
  FailureOr<TensorSplit> tensorSplit(Operation *op, int64_t t);
  /// The tensor-parallel layout operand `k` of `op` needs on a group of `t`
  /// (replicated for an op without a rule or sharding).
  FailureOr<Local> operandLayout(Operation *op, unsigned k, int64_t t);
  FailureOr<Value> makeReplicated(Device &d, Value global);
  LogicalResult applyCollective(Device &d, Operation *op, Local &result,
                                Value global);
  LogicalResult placeDropout(Device &d, Operation *op, onnx::DropoutOp local,
                             const Local &out);

  // --- training (a plan of mode "training") ------------------------------
  /// Parameters that stay whole on every device of a stage: read with two
  /// tensor-parallel layouts, in chunks, or by several stages.
  void findWholeParameters();
  /// `local` through a dist.grad_all_reduce over the device's group (once per
  /// value): where a replicated value enters per-device work, its gradient
  /// is summed over the group.
  Value enterGroup(Device &d, Location loc, Value local);
  /// Whether `global` may need a gradient: a float value that is not a
  /// constant other than an initializer.
  bool mayNeedGradient(Value global) const;
  /// Device `d`'s shard of parameter `global` in layout `tp`, sliced now and
  /// still named as the initializer (train::kTensorShardAttr), or null when
  /// `global` is not a parameter that training shards.
  Value parameterShard(Device &d, Value global, const Local &tp);
  /// `global` as it arrives from an earlier stage (`l`: its batch layout,
  /// and on the replica's first device the received value), broadcast from
  /// that device to the group (dist.broadcast: the gradient goes back from
  /// there alone).
  Value receiveInGroup(Device &d, Location loc, Value global, const Local &l);
  bool usedByStage(Value v, int stage) const;
  bool usedByLaterStage(Value v, int stage) const;

  // --- IR helpers -------------------------------------------------------
  RankedTensorType localType(Device &d, Value global, const Local &l);
  Value i64Const(Location loc, ArrayRef<int64_t> values) {
    return blocks::i64Constant(b, loc, values);
  }
  Value slice(Location loc, Value x, int dim, int64_t outer, int64_t start,
              int64_t size) {
    return blocks::sliceBlock(b, loc, x, dim, outer, start, size);
  }
  Value concat(Location loc, ArrayRef<Value> pieces, int dim, int64_t outer) {
    return blocks::concatBlocks(b, loc, pieces, dim, outer);
  }
  Value reshape(Location loc, Value x, ArrayRef<int64_t> shape) {
    return blocks::reshapeTo(b, loc, x, shape);
  }
  Value transpose(Location loc, Value x, ArrayRef<int64_t> perm);
  /// A collective along `dim` (in `outer` chunks) runs on contiguous
  /// blocks: `collectiveAlong` moves the dimension outermost, lets `make`
  /// build the collective on it (given the dimension it is now), and moves
  /// it back, the result's extent along `dim` being `outer` x the
  /// collective's.
  Value collectiveAlong(Location loc, Value x, int dim, int64_t outer,
                        llvm::function_ref<Value(Value, int64_t)> make);
  Value allGather(Location loc, Device &d, Value x, int dim, int64_t outer,
                  ArrayRef<int64_t> sizes);
  Value reduceScatter(Location loc, Device &d, Value x, int dim, int64_t outer,
                      ArrayRef<int64_t> sizes, dist::ReductionKind kind);
  /// `x` (split as `from`) resplit as `to` along another dimension: one
  /// dist.all_to_all over the group, each device sending what the others
  /// hold of its block, (p - 1) / p of its bytes once.
  Value allToAll(Location loc, Device &d, Value x, const Local &from,
                 const Local &to);
  Value addBlockOf(Location loc, Device &d, Value value, Value addend,
                   const Local &tp);
  int64_t rowsOf(const Device &d) const {
    return stages[d.stage].rows[d.replica];
  }
  int64_t offsetOf(const Device &d) const {
    return stages[d.stage].offsets[d.replica];
  }

  // --- transfers --------------------------------------------------------
  struct Piece {
    int64_t from, to; // device ids
    int64_t lo, hi;   // rows of the microbatch (all when no batch)
    int64_t tag;
    // A value that travels split: the indices [dlo, dhi) of its split
    // dimension (both 0 otherwise).
    int64_t dlo = 0, dhi = 0;
  };
  /// The piece of `global` that device `d` exchanges with `peer` as `p`
  /// says, in d's local coordinates: rows [p.lo, p.hi) of the microbatch
  /// where the value carries a split batch (none when p.hi == p.lo), and
  /// with `split` (the value's split on d), indices [p.dlo, p.dhi) of it.
  dist::ExchangePieceAttr pieceOf(const Device &d, Value global, const Piece &p,
                                  int64_t peer, const Local *split = nullptr);
  /// A dist.recv_pieces of `type` from `pieces`.
  Value recvPieces(Location loc, Type type, ArrayRef<Attribute> pieces);
  /// The devices that send graph output `j` (value `v`) to the root: one per
  /// replica of its stage when it carries the batch (in replica order), else
  /// one; spread over the ranks of each replica.
  SmallVector<int64_t> outputSenders(Value v, size_t j);
  /// The pieces that carry `global` (produced in stage `s`) to device `to`,
  /// cut along the batch; in training only to each replica's first device
  /// (receiveInGroup broadcasts), unless `everyRank`.
  SmallVector<Piece> piecesTo(Value global, int s, int64_t to, int64_t tag,
                              bool everyRank = false);
  /// The pieces of a value that travels split to device `to`: the overlap
  /// of each sending device's rows and indices with the receiver's.
  SmallVector<Piece> splitPiecesTo(Value global, int64_t to);
  SmallVector<Piece> exitPieces(Value v);
  int stageOfValue(Value v) const;

  ModuleOp module;
  func::FuncOp func;
  MLIRContext *ctx;
  OpBuilder b;
  /// Inputs of the replica's rows, local outputs (the local-io option).
  bool localIO;
  std::vector<StageInfo> stages;
  int64_t microbatches = 1, batch = 0, microbatchRows = 0;
  /// Microbatches or data parallelism: the batch is split.
  bool splitsBatch = false;
  DenseMap<Operation *, int> stageOf;
  /// The ops' sharding rules and their resolution, shared with the
  /// simulator (Sharding.h).
  std::optional<OpCatalog> catalog;
  std::vector<Device> devices;
  DenseMap<int64_t, Device *> deviceById;
  /// The global form's transfers and the devices of its stages.
  SmallVector<Transfer> transfers;
  SmallVector<SmallVector<int64_t>> stageDevices;
  /// A value that travels split (its transfer says so): the split it
  /// leaves in and the one it arrives in (indices).
  struct SplitTransfer {
    Local source, target;
  };
  DenseMap<Value, SplitTransfer> splitExits;
  /// Values that leave their stage (to a later stage or the outputs), in
  /// tag order, and their tags.
  DenseMap<Value, int64_t> exitTag;
  SmallVector<Value> exits;
  /// Where the batch lies in `v` on every device that holds it: the batch
  /// analysis's answer where the plan splits the batch (microbatches or
  /// data parallelism), none otherwise. The one reading of the batch for
  /// graph inputs, values between stages and outputs, so that no device's
  /// program depends on how another device's was built.
  std::optional<BatchDim> splitBatchOf(Value v) const;
  /// A training plan: gradients must be able to flow back (markers, named
  /// parameter shards).
  bool training = false;
  /// findWholeParameters: per stage, the parameters kept whole.
  llvm::DenseSet<std::pair<int, Value>> wholeParams;
};

} // namespace hetpar::partition

#endif // HETPAR_LIB_TRANSFORMS_PARTITIONER_H
