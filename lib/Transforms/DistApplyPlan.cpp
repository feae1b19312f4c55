//===- DistApplyPlan.cpp - hetpar-dist-apply-plan -------------------------===//
//
// Puts a model annotated with a plan (dist.plan, dist.stage_id,
// dist.op_sharding), whose values between stages go through dist.transfer
// (hetpar-dist-introduce-transfers), into the global form of the dist
// dialect: the mesh and one dist.stage region per pipeline stage, the
// transfers between them (Passes.td describes the result). Mechanism only:
// the stages are the annotations'.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace hetpar {
#define GEN_PASS_DEF_DISTAPPLYPLANPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

namespace {

class PlanApplier {
public:
  PlanApplier(ModuleOp module, func::FuncOp func)
      : module(module), func(func), b(module.getContext()), catalog(func) {}

  LogicalResult run() {
    FailureOr<PlanAnnotation> read =
        readPlanAnnotation(module, catalog.batch.samples);
    if (failed(read))
      return failure();
    plan = std::move(*read);
    if (failed(assignStages()))
      return failure();
    getOrCreatePlanMesh(module, plan);
    for (size_t s = 0; s < plan.stages.size(); ++s)
      if (failed(formStage(static_cast<int>(s))))
        return failure();
    return success();
  }

private:
  /// Each op's stage (readStageAssignment), and each transfer's: a value of
  /// one stage carried to one later stage.
  LogicalResult assignStages();
  /// Moves stage `s`'s ops into a dist.stage, and the transfers that bring
  /// it values of earlier stages before it. Fails at the op: a value of
  /// another stage read without a transfer.
  LogicalResult formStage(int s);

  ModuleOp module;
  func::FuncOp func;
  OpBuilder b;
  OpCatalog catalog;
  PlanAnnotation plan;
  std::vector<SmallVector<Operation *>> stageOps;
  DenseMap<Operation *, int> stageOf;
};

} // namespace

/// The first op of `ops` that reads `v`.
static Operation *firstUser(Value v,
                            const llvm::SmallPtrSetImpl<Operation *> &ops) {
  Operation *first = nullptr;
  for (Operation *u : v.getUsers())
    if (ops.contains(u) && (!first || u->isBeforeInBlock(first)))
      first = u;
  return first;
}

LogicalResult PlanApplier::assignStages() {
  FailureOr<StageAssignment> read =
      readStageAssignment(func, plan.stages.size());
  if (failed(read))
    return failure();
  stageOf = std::move(read->stageOf);
  stageOps = std::move(read->ops);
  auto stage = [&](Operation *op) -> std::optional<int> {
    if (auto it = stageOf.find(op); it != stageOf.end())
      return it->second;
    return std::nullopt;
  };
  for (auto t : func.getBody().front().getOps<dist::TransferOp>())
    if (failed(transferStages(t, stage)))
      return failure();
  return success();
}

LogicalResult PlanApplier::formStage(int s) {
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
  // stages are formed: the transfers read their dist.stage results), which
  // moves before the stage.
  b.setInsertionPoint(ret);
  Location loc = func.getLoc();
  SmallVector<Value> operands;
  for (Value v : inputs) {
    if (auto t = v.getDefiningOp<dist::TransferOp>())
      t->moveBefore(ret);
    else if (v.getDefiningOp<dist::StageOp>())
      return firstUser(v, mine)->emitError()
             << "op " << describeOp(firstUser(v, mine)) << " in stage " << s
             << " reads a value of another stage without a dist.transfer "
                "(hetpar-dist-introduce-transfers makes them)";
    operands.push_back(v);
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
  return success();
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
