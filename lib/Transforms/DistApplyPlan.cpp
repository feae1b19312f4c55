//===- DistApplyPlan.cpp - hetpar-dist-apply-plan -------------------------===//
//
// Puts a model annotated with a plan (dist.plan, dist.stage_id,
// dist.op_sharding) into the global form of the dist dialect: the mesh, one
// dist.stage region per pipeline stage, and a dist.transfer for every value
// that goes from one stage to another, naming the layouts it leaves and
// arrives in (Passes.td describes the result). Mechanism only: the stages
// are the annotations'; a transfer travels split where exitSplit
// (Sharding.h), the simulator's answer, says so.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace hetpar {
#define GEN_PASS_DEF_DISTAPPLYPLANPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

namespace {

/// The layouts one transfer names: its value's layout where it leaves the
/// producing stage and where it arrives in the receiving one (one replica's
/// tensor-parallel devices; the replicas hold their rows of the batch).
struct TransferLayouts {
  Local source, target;
};

class PlanApplier {
public:
  PlanApplier(ModuleOp module, func::FuncOp func)
      : module(module), func(func), ctx(module.getContext()), b(ctx),
        catalog(func) {}

  LogicalResult run() {
    FailureOr<PlanAnnotation> read =
        readPlanAnnotation(module, catalog.batch.samples);
    if (failed(read))
      return failure();
    plan = std::move(*read);
    if (failed(assignStages()))
      return failure();
    findSplitTransfers();
    createMesh();
    for (size_t s = 0; s < plan.stages.size(); ++s)
      formStage(static_cast<int>(s));
    return success();
  }

private:
  /// Every op but constants has a stage of the plan, and reads no value of
  /// a later stage.
  LogicalResult assignStages();
  /// The values that travel split (exitSplit), with the layouts of both
  /// ends in indices.
  void findSplitTransfers();
  void createMesh();
  /// Moves stage `s`'s ops into a dist.stage, each value from another stage
  /// through a dist.transfer.
  void formStage(int s);
  dist::ShardingAttr sharding(int s, const Local &l);

  ModuleOp module;
  func::FuncOp func;
  MLIRContext *ctx;
  OpBuilder b;
  OpCatalog catalog;
  PlanAnnotation plan;
  std::vector<SmallVector<Operation *>> stageOps;
  DenseMap<Operation *, int> stageOf;
  DenseMap<Value, TransferLayouts> splitTransfers;
};

} // namespace

LogicalResult PlanApplier::assignStages() {
  stageOps.resize(plan.stages.size());
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        isa<onnx::ConstantOp, onnx::NoValueOp>(op))
      continue;
    auto s = op.getAttrOfType<IntegerAttr>(dist::kStageIdAttrName);
    if (!s || s.getInt() < 0 ||
        s.getInt() >= static_cast<int64_t>(plan.stages.size()))
      return op.emitError() << "op " << describeOp(&op)
                            << (s ? " names a stage the plan does not have"
                                  : " has no dist.stage_id");
    if (op.getNumRegions())
      return op.emitError() << "op " << describeOp(&op)
                            << " has regions, which the partition does not "
                               "split";
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto it = stageOf.find(def);
            it != stageOf.end() && it->second > s.getInt())
          return op.emitError() << "op " << describeOp(&op) << " in stage "
                                << s.getInt() << " uses a value of stage "
                                << it->second << ", which runs later";
    stageOf[&op] = s.getInt();
    stageOps[s.getInt()].push_back(&op);
  }
  return success();
}

void PlanApplier::findSplitTransfers() {
  size_t n = catalog.ops.size();
  std::vector<std::optional<ResolvedSharding>> resolved(n);
  std::vector<std::optional<OpSharding>> named(n);
  std::vector<int> stageIndex(n, -1);
  for (auto [i, op] : llvm::enumerate(catalog.ops)) {
    auto it = stageOf.find(op);
    if (it == stageOf.end())
      continue;
    stageIndex[i] = it->second;
    named[i] = namedSharding(op);
    auto r = resolveSharding(catalog, i, named[i] ? &*named[i] : nullptr,
                             plan.stages[it->second].tensor);
    if (r)
      resolved[i] = std::move(*r);
    else
      llvm::consumeError(r.takeError()); // the partition reports it
  }
  for (auto [i, op] : llvm::enumerate(catalog.ops)) {
    if (stageIndex[i] < 0)
      continue;
    for (OpResult r : op->getResults()) {
      std::optional<ExitSplit> exit = exitSplit(
          catalog, r,
          [&](int k) { return resolved[k] ? &*resolved[k] : nullptr; },
          [&](int k) {
            return named[k] ? named[k]->collective
                            : std::optional<dist::CollectiveKind>();
          },
          [&](int k) { return stageIndex[k]; });
      if (!exit)
        continue;
      // The same layouts in indices, as the partition builds them.
      auto split = [&](Operation *at, int stage) {
        return tensorSplitOf(catalog, at, plan.stages[stage].tensor);
      };
      FailureOr<TensorSplit> from = split(op, stageIndex[i]);
      Operation *user = catalog.ops[exit->user];
      FailureOr<TensorSplit> to = split(user, exit->stage);
      const std::optional<ShardingRule> &rule = catalog.rules[i];
      const std::optional<ShardingRule> &userRule = catalog.rules[exit->user];
      if (failed(from) || failed(to) || !rule || !userRule)
        continue; // the partition reports it
      TransferLayouts l;
      auto sharding =
          op->getAttrOfType<dist::OpShardingAttr>(dist::kOpShardingAttrName);
      if (sharding &&
          sharding.getCollective() == dist::CollectiveKind::ReduceScatter)
        l.source = reduceScatterLayout(sharding, r.getType());
      else
        l.source =
            tensorLayout(*rule, rule->results[r.getResultNumber()], *from);
      l.target =
          tensorLayout(*userRule, userRule->operands[exit->operand], *to);
      // Pieces go to and from every device of a replica (the partition
      // refuses empty parts in a transfer).
      auto whole = [](const Local &x) {
        return x.kind == Local::Split && x.outer == 1 &&
               !llvm::is_contained(x.sizes, 0);
      };
      if (whole(l.source) && whole(l.target))
        splitTransfers[r] = l;
    }
  }
}

void PlanApplier::createMesh() {
  b.setInsertionPointToStart(module.getBody());
  SmallVector<Attribute> devices;
  for (const StageAnnotation &st : plan.stages)
    for (auto [id, kind] : llvm::zip(st.devices, st.kinds))
      devices.push_back(dist::DeviceAttr::get(ctx, id, b.getStringAttr(kind)));
  dist::MeshOp::create(b, func.getLoc(), kMesh, b.getArrayAttr(devices));
}

dist::ShardingAttr PlanApplier::sharding(int s, const Local &l) {
  const StageAnnotation &st = plan.stages[s];
  SmallVector<int64_t> sizes;
  if (l.kind == Local::Split)
    for (int64_t n : l.sizes)
      sizes.push_back(n * l.granule);
  return dist::ShardingAttr::get(
      ctx, FlatSymbolRefAttr::get(ctx, kMesh), st.devices,
      l.kind == Local::Split ? l.dim : -1, sizes, std::nullopt, st.data);
}

void PlanApplier::formStage(int s) {
  Block &body = func.getBody().front();
  Operation *ret = body.getTerminator();
  llvm::SmallPtrSet<Operation *, 16> mine(stageOps[s].begin(),
                                          stageOps[s].end());
  // What the stage reads from outside (first use first) and what leaves it.
  llvm::SetVector<Value> inputs;
  SmallVector<Value> leaving;
  for (Operation *op : stageOps[s]) {
    for (Value v : op->getOperands())
      if (!v.getDefiningOp() || !mine.contains(v.getDefiningOp()))
        inputs.insert(v);
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !mine.contains(u); }))
        leaving.push_back(r);
  }
  // Values of earlier stages arrive through a transfer each (the earlier
  // stages are formed: their values are dist.stage results).
  b.setInsertionPoint(ret);
  Location loc = func.getLoc();
  SmallVector<Value> operands;
  for (Value v : inputs) {
    auto producer = v.getDefiningOp<dist::StageOp>();
    if (!producer) {
      operands.push_back(v);
      continue;
    }
    int from = static_cast<int>(producer.getIndex());
    Value inner = producer.getBody().front().getTerminator()->getOperand(
        llvm::cast<OpResult>(v).getResultNumber());
    TransferLayouts l;
    if (auto it = splitTransfers.find(inner); it != splitTransfers.end())
      l = it->second;
    operands.push_back(dist::TransferOp::create(b, loc, v.getType(), v,
                                                sharding(from, l.source),
                                                sharding(s, l.target)));
  }
  SmallVector<Type> resultTypes;
  for (Value v : leaving)
    resultTypes.push_back(v.getType());
  const StageAnnotation &st = plan.stages[s];
  auto stage = dist::StageOp::create(b, loc, resultTypes, operands, s, kMesh,
                                     st.devices, nullptr, nullptr);
  Block *block = new Block();
  stage.getBody().push_back(block);
  for (Operation *op : stageOps[s]) {
    op->moveBefore(block, block->end());
    op->removeAttr(dist::kStageIdAttrName);
  }
  for (Value v : inputs) {
    BlockArgument arg = block->addArgument(v.getType(), v.getLoc());
    v.replaceUsesWithIf(arg, [&](OpOperand &use) {
      return use.getOwner()->getBlock() == block;
    });
  }
  OpBuilder inner = OpBuilder::atBlockEnd(block);
  dist::YieldOp::create(inner, loc, leaving);
  for (auto [v, r] : llvm::zip(leaving, stage.getResults()))
    v.replaceUsesWithIf(
        r, [&](OpOperand &use) { return use.getOwner()->getBlock() != block; });
}

namespace {

struct DistApplyPlanPass
    : hetpar::impl::DistApplyPlanPassBase<DistApplyPlanPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> func = modelFunction(module, "apply-plan");
    if (failed(func))
      return signalPassFailure();
    // A model in the global form already (a user's) stays as it is.
    if (!func->getOps<dist::StageOp>().empty())
      return;
    PlanApplier applier(module, *func);
    if (failed(applier.run()))
      signalPassFailure();
  }
};

} // namespace
