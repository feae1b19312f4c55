//===- DistLocalize.cpp - hetpar-dist-localize ----------------------------===//
//
// Splits a model in the global form (hetpar-dist-global-form's: dist.stage
// regions, dist.op_sharding, dist.transfer) into one function per device in
// the local form of the dist dialect (Passes.td describes the result), with
// what travels between devices left as dist.send_pieces / dist.recv_pieces
// for hetpar-dist-lower-exchanges. Mechanism only: every decision comes from
// the IR; the sharding rules (ShardingRuleOpInterface) say how an op's work
// splits.
//
// Each device function runs one microbatch of its data-parallel replica. Two
// kinds of split are tracked per value and device:
//  * the batch: every value that carries the batch holds the replica's rows of
//    the microbatch; where the batch lies in a value (dimension, elements per
//    sample, outer chunks) follows from the graph inputs' first dimension
//    through the ops' rules, so Reshapes that merge batch and sequence keep
//    working;
//  * tensor parallelism over the replica's devices: a value is replicated,
//    split along one dimension (uneven extents per device) or partial sums.
// Where an op needs another layout than its operand has, the pass inserts
// the conversion: a local slice (weights are sliced at compile time), an
// all-gather, an all-reduce, an all-to-all. Values that leave a stage leave
// replicated within the replica and travel in pieces, cut and joined along
// the batch where the replicas of the two stages split the microbatch
// differently; a value whose dist.transfer is split travels split, in the
// overlaps of the two stages' splits.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Plan/Simulator.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <numeric>
#include <optional>

namespace hetpar {
#define GEN_PASS_DEF_DISTLOCALIZEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::readPlan() {
  // The batch: the batch analysis's (docs/partition.md, "The batch"), the
  // one the search and the simulator count, unless the annotation names it.
  FailureOr<PlanAnnotation> plan =
      readPlanAnnotation(module, catalog->batch.samples);
  if (failed(plan))
    return failure();
  // A training plan's forward graph is partitioned with local-io; its
  // training step is built per device from there (docs/training.md).
  if (plan->mode != dist::PlanMode::Inference && !localIO)
    return module.emitError()
           << "the partition makes inference programs; the plan's mode is '"
           << dist::stringifyPlanMode(plan->mode)
           << "' (a training plan's devices are partitioned with local-io "
              "and trained with hetpar-dist-reduce-gradients, "
              "docs/training.md)";
  training = plan->mode == dist::PlanMode::Training;
  microbatches = plan->microbatches;
  batch = plan->batch;
  microbatchRows = plan->microbatchRows;
  for (StageAnnotation &st : plan->stages) {
    splitsBatch |= st.data > 1;
    stages.push_back(std::move(st));
  }
  splitsBatch |= microbatches > 1;

  if (stageDevices.size() != stages.size())
    return func.emitError()
           << "partition: the function has " << stageDevices.size()
           << " dist.stage ops but the plan " << stages.size()
           << " stages (hetpar-dist-apply-plan makes them)";
  for (auto [s, st] : llvm::enumerate(stages))
    if (stageDevices[s] != ArrayRef<int64_t>(st.devices))
      return func.emitError() << "partition: dist.stage " << s
                              << " is not on the plan's devices of stage " << s;
  for (Operation &op : func.getBody().front())
    if (auto it = stageOf.find(&op); it != stageOf.end())
      stages[it->second].ops.push_back(&op);
  for (const Transfer &t : transfers)
    if (failed(readTransfer(t)))
      return failure();
  return success();
}

std::optional<BatchDim> Partitioner::splitBatchOf(Value v) const {
  // The batch is followed only where the plan splits it (a batch of one
  // sample never is).
  if (!splitsBatch)
    return std::nullopt;
  return catalog->batch.of(v);
}

int Partitioner::stageOfValue(Value v) const {
  if (Operation *def = v.getDefiningOp())
    if (auto it = stageOf.find(def); it != stageOf.end())
      return it->second;
  return -1;
}
//===----------------------------------------------------------------------===//
// One op on one device
//===----------------------------------------------------------------------===//

/// A training-mode Dropout on a part of its tensor draws the masks of that
/// part's elements (element_offset): the replica's rows of the batch, one
/// block of the tensor when the batch is its outermost non-unit dimension.
/// Any other part would draw other masks than one device does.
LogicalResult Partitioner::placeDropout(Device &d, Operation *op,
                                        onnx::DropoutOp local,
                                        const Local &out) {
  if (!local.getTrainingMode())
    return success();
  auto where = [&]() {
    return op->emitError() << "partition: training-mode Dropout "
                           << describeOp(op) << " ";
  };
  if (out.kind != Local::Replicated)
    return where() << "is split by tensor parallelism; its masks would "
                      "differ from one device's (not supported)";
  if (!out.batch)
    return success();
  ArrayRef<int64_t> shape =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  const BatchDim &bd = *out.batch;
  bool block = bd.outer == 1 && llvm::all_of(shape.take_front(bd.dim),
                                             [](int64_t e) { return e == 1; });
  if (!block)
    return where() << "holds the batch inside dimension " << bd.dim << " of "
                   << op->getResult(0).getType()
                   << ", so a replica's rows are not one block of it and "
                      "their masks would differ from one device's";
  int64_t inner = 1;
  for (int64_t e : shape.drop_front(bd.dim + 1))
    inner *= e;
  local.setElementOffsetAttr(
      b.getI64IntegerAttr(offsetOf(d) * bd.granule * inner));
  return success();
}

FailureOr<TensorSplit> Partitioner::tensorSplit(Operation *op, int64_t t) {
  return tensorSplitOf(*catalog, op, t);
}

FailureOr<Local> Partitioner::operandLayout(Operation *op, unsigned k,
                                            int64_t t) {
  const std::optional<ShardingRule> &rule =
      catalog->rules[catalog->index.lookup(op)];
  if (!rule || k >= rule->operands.size())
    return Local();
  FailureOr<TensorSplit> split = tensorSplit(op, t);
  if (failed(split))
    return failure();
  return tensorLayout(*rule, rule->operands[k], *split);
}

/// Fails with an error at `op` when `l` splits the dimension of `what` #k
/// that holds the batch: a device's rows of the microbatch (or its
/// replica's) are then no block of the split's parts ([L*N] rows of a
/// sequence-first attention with L split). The search never plans it
/// (shardingForFactor).
static LogicalResult checkSplitBesideBatch(Operation *op, const Local &l,
                                           llvm::StringRef what, size_t k) {
  if (!l.batch || l.kind != Local::Split || l.dim != l.batch->dim)
    return success();
  return op->emitError() << "partition: op " << describeOp(op) << " splits "
                         << what << " " << k
                         << "'s batch dimension by tensor parallelism (the "
                            "dimension holds the batch and the split factor; "
                            "split another factor, or plan no microbatches "
                            "and no data parallelism for this stage)";
}

LogicalResult Partitioner::partitionOp(Device &d, Operation *op,
                                       SmallVectorImpl<Local> &results) {
  int index = catalog->index.lookup(op);
  const std::optional<ShardingRule> &rule = catalog->rules[index];
  int64_t t = d.group.size();

  // The batch factor: the batch analysis's (Batch.h), which the operands'
  // batch layouts must match.
  SmallVector<Local> operands;
  const OpBatch &opBatch = catalog->batch.ops[index];
  int fb = -1;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    auto l = lookup(d, v);
    if (failed(l))
      return failure();
    operands.push_back(*l);
    if (!l->batch)
      continue;
    if (!opBatch.error.empty())
      return op->emitError()
             << "partition: " << opBatch.error
             << ", so the batch cannot be split over replicas or microbatches";
    if (opBatch.synchronized && !training)
      return op->emitError()
             << "partition: op " << describeOp(op)
             << " computes statistics over the batch (training mode), which "
                "only training synchronizes over the replicas, so an "
                "inference plan cannot split its batch";
    if (catalog->batch.of(v) != l->batch)
      return op->emitError()
             << "partition: operand " << k << " of op " << describeOp(op)
             << " holds the batch elsewhere than the batch analysis says";
    fb = opBatch.factor;
  }
  int64_t perSample = opBatch.units, within = opBatch.within;

  // The tensor-parallel factor, as resolveSharding names it.
  FailureOr<TensorSplit> split = tensorSplit(op, t);
  if (failed(split))
    return failure();
  int ft = split->factor;
  auto layoutIn = [&](const DimFactors &dims, Local &out) {
    out = tensorLayout(*rule, dims, *split);
    if (fb >= 0)
      if (auto p = ShardingRule::placement(dims, fb, rule->factors))
        out.batch = BatchDim{p->dim, perSample * p->granule, within * p->outer};
  };

  bool reductionSplit =
      ft >= 0 && rule->factors[ft].kind == FactorKind::Reduction;
  // What the op adds once to its sum (Gemm's C, Conv's bias): with the
  // contraction split, every device computes the sum's part without it and
  // adds it after the all-reduce (Local::addend), so that the devices' graphs
  // (and their backward passes) have one shape.
  auto ruleOp = llvm::dyn_cast<ShardingRuleOpInterface>(op);
  std::optional<unsigned> added =
      reductionSplit && ruleOp ? ruleOp.getAddedOperand() : std::nullopt;

  // Operands in the layouts the op needs.
  IRMapping mapping;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    Local want;
    if (rule && k < rule->operands.size())
      layoutIn(rule->operands[k], want);
    if (failed(checkSplitBesideBatch(op, want, "operand", k)))
      return failure();
    auto got = convert(d, v, operands[k], want.batch, want, op, k);
    if (failed(got))
      return failure();
    // A replicated operand of work split over the group: each device's
    // backward gives only its part of the operand's gradient.
    Value value = got->value;
    if (training && ft >= 0 && t > 1 && want.kind != Local::Split &&
        !(added && k == *added) && mayNeedGradient(v))
      value = enterGroup(d, op->getLoc(), value);
    mapping.map(v, value);
  }

  // The local op.
  Operation *local = b.clone(*op, mapping);
  for (llvm::StringRef name :
       {dist::kStageIdAttrName, dist::kOpShardingAttrName})
    local->removeAttr(name);
  Value addend;
  if (added) {
    addend = ruleOp.buildAddedTerm(b, local->getOperand(*added));
    local->eraseOperand(*added);
  }
  for (auto [k, r] : llvm::enumerate(op->getResults())) {
    Local l;
    if (rule && k < rule->results.size())
      layoutIn(rule->results[k], l);
    if (failed(checkSplitBesideBatch(op, l, "result", k)))
      return failure();
    // Synchronized statistics (hetpar-dist-sync-batch-norm) are the same
    // on every replica.
    if (fb >= 0 && !l.batch && !opBatch.synchronized)
      return op->emitError()
             << "partition: result " << k << " of op " << describeOp(op)
             << " drops the batch its operands carry";
    if (reductionSplit && l.kind != Local::Split) {
      l.kind = Local::Partial;
      l.reduction = rule->reduction;
      if (k == 0)
        l.addend = addend;
    }
    if (auto rt = llvm::dyn_cast<RankedTensorType>(r.getType()))
      local->getResult(k).setType(localType(d, r, l));
    l.value = local->getResult(k);
    results.push_back(l);
  }
  if (auto dropout = llvm::dyn_cast<onnx::DropoutOp>(local))
    if (failed(placeDropout(d, op, dropout, results.front())))
      return failure();
  // What the op states about shapes (a Reshape's shape operand, Split's
  // sizes, a grouped Conv's group): the local types'.
  if (auto localRule = llvm::dyn_cast<ShardingRuleOpInterface>(local)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(local);
    localRule.adaptToLocalShapes(b);
  }
  // The op's own shape rule must agree with the local types.
  if (auto iface = llvm::dyn_cast<onnx::InferShapesOpInterface>(local)) {
    SmallVector<Type> inferred;
    if (failed(iface.inferResultTypes(inferred)))
      return failure();
    for (auto [k, r] : llvm::enumerate(local->getResults()))
      if (k < inferred.size() && failed(refineType(r.getType(), inferred[k])))
        return op->emitError()
               << "partition: on device " << d.id << " result " << k
               << " of op " << describeOp(op) << " would be " << r.getType()
               << " but the op computes " << inferred[k]
               << " from its local operands";
  }
  return success();
}

LogicalResult Partitioner::applyCollective(Device &d, Operation *op,
                                           Local &result, Value global) {
  auto sharding =
      op->getAttrOfType<dist::OpShardingAttr>(dist::kOpShardingAttrName);
  if (!sharding || !sharding.getCollective())
    return success();
  // all_reduce and all_gather rebuild the whole value; reduce_scatter
  // leaves partial sums split along the last dimension, in the op's
  // proportions (as the simulator's afterCollective has it).
  Local want;
  if (*sharding.getCollective() == dist::CollectiveKind::ReduceScatter &&
      result.kind == Local::Partial)
    want = reduceScatterLayout(sharding, global.getType());
  auto out = convert(d, global, result, result.batch, want, op, 0);
  if (failed(out))
    return failure();
  result = *out;
  return success();
}
//===----------------------------------------------------------------------===//
// The whole module
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::run() {
  // The global form (hetpar-dist-global-form) flat, each op marked with its
  // stage, before anything reads the ops.
  if (failed(flattenGlobalForm()))
    return failure();
  catalog.emplace(func);
  if (failed(readPlan()))
    return failure();
  if (training)
    findWholeParameters();
  // Devices in plan order (the mesh order, so the process ranks).
  for (auto [s, st] : llvm::enumerate(stages))
    for (auto [k, id] : llvm::enumerate(st.devices)) {
      Device d;
      d.id = id;
      d.stage = s;
      d.replica = k / st.tensor;
      d.rank = k % st.tensor;
      for (int64_t j = 0; j < st.tensor; ++j)
        d.group.push_back(st.devices[d.replica * st.tensor + j]);
      devices.push_back(std::move(d));
    }
  for (Device &d : devices)
    deviceById[d.id] = &d;

  // Values that leave their stage, in a fixed order: their tags.
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [s, st] : llvm::enumerate(stages))
    for (Operation *op : st.ops)
      for (Value r : op->getResults()) {
        bool leaves = llvm::is_contained(ret.getOperands(), r);
        for (Operation *user : r.getUsers())
          if (auto it = stageOf.find(user);
              it != stageOf.end() && it->second != static_cast<int>(s))
            leaves = true;
        if (leaves) {
          exitTag[r] = exits.size();
          exits.push_back(r);
        }
      }

  // Each device on its own: what travels between devices (tags, the batch,
  // split layouts) is read from the IR, not from another device's program.
  for (Device &d : devices)
    if (failed(partitionDevice(d)))
      return failure();

  // The mesh (hetpar-dist-global-form's) stays; the annotated graph goes.
  module->setAttr(dist::kMicrobatchesAttrName,
                  b.getI64IntegerAttr(microbatches));
  recordGraphInputs();
  module->removeAttr(dist::kPlanAttrName);
  func.erase();
  return success();
}

namespace {

struct DistLocalizePass : hetpar::impl::DistLocalizePassBase<DistLocalizePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> func = modelFunction(module, "partition");
    if (failed(func))
      return signalPassFailure();
    Partitioner p(module, *func, localIo);
    if (failed(p.run()))
      signalPassFailure();
  }
};

} // namespace
