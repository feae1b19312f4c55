//===- TrainRecompute.cpp - activation recomputation, layer by layer ------===//
//
// Activation checkpointing as a rewrite of the differentiated training step:
// the backward ops of each layer read a clone of the layer's forward values,
// rebuilt from the layer's inputs just before the layer's backward, so the
// forward originals die at their last forward use (docs/training.md,
// "Activation recomputation").
//
//===----------------------------------------------------------------------===//
#include "Recompute.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINRECOMPUTEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// The forward pass of a differentiated step: the backward slice of the loss
/// (result 0 of `ret`), leaves included. The backward pass starts at the
/// first other op that reads a forward value other than a leaf, state
/// updates (stores and what only feeds them) aside: a
/// data-parallel step's loss transfer (a forward op) comes after its
/// gradients' all-reduces, so program order alone does not say where the
/// forward pass ends. Globals stored before the backward pass
/// (BatchNormalization's running statistics) are its state; the
/// optimizer's stores come after it.
struct Forward {
  train::RecomputeScope scope;
  Operation *firstBackward = nullptr;
};

void detectForward(Forward &f, Block &body, func::ReturnOp ret) {
  llvm::DenseSet<Operation *> &forward = f.scope.forward;
  SmallVector<Value> work{ret.getOperand(0)};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !forward.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  for (Operation &op : body) {
    if (forward.contains(&op) || op.hasTrait<OpTrait::IsTerminator>())
      continue;
    if (auto store = llvm::dyn_cast<ml_program::GlobalStoreOp>(op)) {
      f.scope.stored.insert(store.getGlobal().getLeafReference());
      continue;
    }
    // State updates (what only feeds stores) and reads of leaves (a load, a
    // constant) do not start the backward pass.
    bool feedsStores =
        op.getNumResults() && llvm::all_of(op.getUsers(), [](Operation *u) {
          return llvm::isa<ml_program::GlobalStoreOp>(u);
        });
    if (!feedsStores && llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && forward.contains(def) && !train::isRecomputeLeaf(def);
        })) {
      f.firstBackward = &op;
      break;
    }
  }
  train::assignForwardLayers(f.scope, body);
}

/// Whether the module's `dist.plan` asks for recomputation: its one
/// stage's `recompute` flag (false when absent); false without a plan. Fails
/// (after an error at the module) on a plan of several stages.
FailureOr<bool> planAsksRecompute(ModuleOp module) {
  auto plan = module->getAttrOfType<dist::PlanAttr>(dist::kPlanAttrName);
  if (!plan)
    return false;
  if (plan.getStages().size() != 1)
    return module.emitError()
           << "hetpar-train-recompute: the plan has " << plan.getStages().size()
           << " stages; a training program is one stage on one device";
  return plan.getStagePlans().front().recomputes();
}

struct TrainRecomputePass
    : public hetpar::impl::TrainRecomputePassBase<TrainRecomputePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (recompute != "all" && recompute != "plan") {
      module.emitError() << "hetpar-train-recompute: unknown recompute '"
                         << recompute << "' (all or plan)";
      return signalPassFailure();
    }
    if (recompute == "plan") {
      FailureOr<bool> on = planAsksRecompute(module);
      if (failed(on))
        return signalPassFailure();
      if (!*on)
        return;
    }
    auto func = train::stepFunction(module);
    if (failed(func))
      return signalPassFailure();
    Block &body = func->getBody().front();
    auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() == 0) {
      func->emitError("hetpar-train-recompute: the step returns no loss");
      return signalPassFailure();
    }
    Forward f;
    detectForward(f, body, ret);
    if (!f.firstBackward)
      return;
    f.scope.isBackward = [&](Operation *op) {
      return op == f.firstBackward || f.firstBackward->isBeforeInBlock(op);
    };
    train::recomputeLayers(f.scope, body);
  }
};
} // namespace
