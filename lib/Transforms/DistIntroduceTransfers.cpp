//===- DistIntroduceTransfers.cpp - hetpar-dist-introduce-transfers -------===//
//
// The first step of the global form (Passes.td describes the result): on a
// model annotated with a plan (dist.plan, dist.stage_id, dist.op_sharding),
// every value that one stage computes and another reads goes through a
// dist.transfer, one per receiving stage, naming the layout it leaves its
// stage in and the one it arrives in. hetpar-dist-apply-plan then forms the
// stages around them. Mechanism only: a transfer travels split where
// exitSplit (Sharding.h), the simulator's answer, says so.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

#include <map>

namespace hetpar {
#define GEN_PASS_DEF_DISTINTRODUCETRANSFERSPASS
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

class TransferIntroducer {
public:
  TransferIntroducer(ModuleOp module, func::FuncOp func)
      : module(module), func(func), ctx(module.getContext()), b(ctx),
        catalog(func) {}

  LogicalResult run() {
    FailureOr<PlanAnnotation> read =
        readPlanAnnotation(module, catalog.batch.samples);
    if (failed(read))
      return failure();
    plan = std::move(*read);
    if (failed(readStages()))
      return failure();
    findSplitTransfers();
    getOrCreatePlanMesh(module, plan);
    // (The transfers go after their producer: the next op is taken first.)
    for (Operation &op :
         llvm::make_early_inc_range(func.getBody().front().getOperations()))
      if (stageOf.count(&op))
        introduceTransfers(&op);
    return success();
  }

private:
  /// Each op's stage (readStageAssignment).
  LogicalResult readStages();
  /// The values that travel split (exitSplit), with the layouts of both
  /// ends in indices.
  void findSplitTransfers();
  /// A dist.transfer after `op` for each result and each other stage that
  /// reads it, its users there rewired to it.
  void introduceTransfers(Operation *op);
  dist::ShardingAttr sharding(int s, const Local &l);

  ModuleOp module;
  func::FuncOp func;
  MLIRContext *ctx;
  OpBuilder b;
  OpCatalog catalog;
  PlanAnnotation plan;
  DenseMap<Operation *, int> stageOf;
  DenseMap<Value, TransferLayouts> splitTransfers;
};

} // namespace

LogicalResult TransferIntroducer::readStages() {
  FailureOr<StageAssignment> read =
      readStageAssignment(func, plan.stages.size());
  if (failed(read))
    return failure();
  stageOf = std::move(read->stageOf);
  return success();
}

void TransferIntroducer::findSplitTransfers() {
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

dist::ShardingAttr TransferIntroducer::sharding(int s, const Local &l) {
  const StageAnnotation &st = plan.stages[s];
  SmallVector<int64_t> sizes;
  if (l.kind == Local::Split)
    for (int64_t n : l.sizes)
      sizes.push_back(n * l.granule);
  return dist::ShardingAttr::get(
      ctx, FlatSymbolRefAttr::get(ctx, kMesh), st.devices,
      l.kind == Local::Split ? l.dim : -1, sizes, std::nullopt, st.data);
}

void TransferIntroducer::introduceTransfers(Operation *op) {
  int from = stageOf.lookup(op);
  b.setInsertionPointAfter(op);
  for (OpResult r : op->getResults()) {
    // The receiving stages in stage order, each with its uses of `r`.
    std::map<int, SmallVector<OpOperand *>> usesByStage;
    for (OpOperand &use : r.getUses())
      if (auto it = stageOf.find(use.getOwner());
          it != stageOf.end() && it->second != from)
        usesByStage[it->second].push_back(&use);
    // Replicated unless exitSplit (which names one receiving stage) says
    // the value travels split.
    TransferLayouts l;
    if (auto it = splitTransfers.find(r); it != splitTransfers.end())
      l = it->second;
    for (auto &[to, uses] : usesByStage) {
      auto t = dist::TransferOp::create(b, op->getLoc(), r.getType(), r,
                                        sharding(from, l.source),
                                        sharding(to, l.target));
      for (OpOperand *use : uses)
        use->set(t);
    }
  }
}

namespace {

struct DistIntroduceTransfersPass
    : hetpar::impl::DistIntroduceTransfersPassBase<DistIntroduceTransfersPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> func = modelFunction(module, "introduce-transfers");
    if (failed(func))
      return signalPassFailure();
    // Transfers there already (a user's, or the global form) stay.
    if (!func->getOps<dist::TransferOp>().empty() ||
        !func->getOps<dist::StageOp>().empty())
      return;
    TransferIntroducer introducer(module, *func);
    if (failed(introducer.run()))
      signalPassFailure();
  }
};

} // namespace
