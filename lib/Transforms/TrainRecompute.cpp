//===- TrainRecompute.cpp - activation recomputation, layer by layer ------===//
//
// Activation checkpointing as a rewrite of the differentiated training step:
// the backward ops of each layer read a clone of the layer's forward values,
// rebuilt from the layer's inputs just before the layer's backward, so the
// forward originals die at their last forward use (docs/training.md,
// "Activation recomputation").
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINRECOMPUTEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// Ops that take no part in layers and are never cloned: constants, absent
/// optional operands and reads of globals (a clone of a load after the
/// optimizer's stores would read the new value).
bool isLeaf(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         llvm::isa<ml_program::GlobalLoadOp>(op);
}

/// Whether `op` only computes values: an op without memory effects, or an
/// onnx op (value semantics; training-mode Dropout's mask is a function of
/// its seed attribute, its step operand and the element index, so a clone
/// draws the same mask). Ops with regions are not cloned.
bool isValueOp(Operation *op) {
  return !op->getNumRegions() &&
         (llvm::isa<onnx::ONNXDialect>(op->getDialect()) ||
          isMemoryEffectFree(op));
}

/// The forward pass of a differentiated step and its layers.
struct Forward {
  /// Ops the loss (result 0 of `ret`) depends on, leaves included.
  llvm::DenseSet<Operation *> ops;
  /// Layer (assignLayers) of each forward op that is not a leaf.
  llvm::DenseMap<Operation *, int> layer;
  /// The last forward op in program order: backward readers come after it.
  Operation *last = nullptr;
  int lastLayer = -1;
  /// Globals stored before the backward pass begins (BatchNormalization's
  /// running statistics, written after their last read in the forward
  /// pass): an op reading one is not cloned, since its clone, in the backward
  /// pass, would read the new value (and code generation keeps one copy of
  /// a global). The optimizer's stores come after the backward pass.
  llvm::DenseSet<StringAttr> stored;
};

/// Whether `op` reads a global stored before the backward pass.
bool readsStoredState(const Forward &f, Operation *op) {
  return llvm::any_of(op->getOperands(), [&](Value v) {
    auto load = v.getDefiningOp<ml_program::GlobalLoadOp>();
    return load && f.stored.contains(load.getGlobal().getLeafReference());
  });
}

/// The forward ops of the step: the backward slice of the loss in `body`.
Forward detectForward(Block &body, func::ReturnOp ret) {
  Forward f;
  SmallVector<Value> work{ret.getOperand(0)};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !f.ops.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> named;
  std::vector<std::string> names;
  for (Operation &op : body) {
    if (!f.ops.contains(&op))
      continue;
    f.last = &op;
    if (isLeaf(&op))
      continue;
    named.push_back(&op);
    names.push_back(onnx::getNodeName(op.getLoc()));
  }
  // The stores up to the first op of the backward pass.
  for (Operation &op : body) {
    if (f.last && f.last->isBeforeInBlock(&op) &&
        !llvm::isa<ml_program::GlobalStoreOp>(op))
      break;
    if (auto store = llvm::dyn_cast<ml_program::GlobalStoreOp>(op))
      f.stored.insert(store.getGlobal().getLeafReference());
  }
  std::vector<int> layers = assignLayers(names);
  for (auto [op, l] : llvm::zip(named, layers))
    f.layer[op] = l;
  if (!layers.empty())
    f.lastLayer = layers.back();
  return f;
}

/// Whether `user` is a backward reader that may read a recomputed value: a
/// non-forward op after the forward pass without memory effects.
bool isRewirable(const Forward &f, Block &body, Operation *user) {
  Operation *top = body.findAncestorOpInBlock(*user);
  return top && !f.ops.contains(top) && f.last->isBeforeInBlock(top) &&
         !top->hasTrait<OpTrait::IsTerminator>() && isValueOp(top);
}

/// Whether `v`, a result of forward op `def` of layer `l`, is kept as it is:
/// its op cannot be cloned (it has effects, or reads state the step stores),
/// or a forward op of another layer, the return or
/// an op inside the forward pass that is not forward also reads it.
bool isKept(const Forward &f, Block &body, Value v, Operation *def, int l) {
  if (!isValueOp(def) || readsStoredState(f, def))
    return true;
  for (Operation *user : v.getUsers()) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top || top->hasTrait<OpTrait::IsTerminator>())
      return true;
    if (f.ops.contains(top)) {
      auto it = f.layer.find(top);
      if (it == f.layer.end() || it->second != l)
        return true;
    } else if (!f.last->isBeforeInBlock(top)) {
      return true;
    }
  }
  return false;
}

/// Per layer: its values to recompute (in program order).
llvm::MapVector<int, SmallVector<Value>> detectRecomputed(const Forward &f,
                                                          Block &body) {
  llvm::MapVector<int, SmallVector<Value>> out;
  for (Operation &op : body) {
    auto it = f.layer.find(&op);
    if (it == f.layer.end() || it->second == f.lastLayer)
      continue;
    for (Value r : op.getResults())
      if (!isKept(f, body, r, &op, it->second) &&
          llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return isRewirable(f, body, u); }))
        out[it->second].push_back(r);
  }
  return out;
}

/// The ops of layer `l` that computing `values` takes, in program order:
/// everything back to the layer's inputs and its kept values.
SmallVector<Operation *> collectClones(const Forward &f, Block &body,
                                       ArrayRef<Value> values, int l) {
  llvm::DenseSet<Operation *> needed;
  SmallVector<Value> work(values.begin(), values.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    auto it = def ? f.layer.find(def) : f.layer.end();
    if (it == f.layer.end() || it->second != l || isKept(f, body, v, def, l) ||
        !needed.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ordered;
  for (Operation &op : body)
    if (needed.contains(&op))
      ordered.push_back(&op);
  return ordered;
}

/// Clones the ops computing `values` of layer `l` before their first
/// backward reader and makes every backward reader read the clones.
void recomputeLayer(const Forward &f, Block &body, ArrayRef<Value> values,
                    int l) {
  Operation *first = nullptr;
  for (Value v : values)
    for (Operation *u : v.getUsers())
      if (isRewirable(f, body, u)) {
        Operation *top = body.findAncestorOpInBlock(*u);
        if (!first || top->isBeforeInBlock(first))
          first = top;
      }
  OpBuilder b(first);
  IRMapping map;
  for (Operation *op : collectClones(f, body, values, l))
    b.clone(*op, map);
  for (Value v : values) {
    Value clone = map.lookup(v);
    v.replaceUsesWithIf(clone, [&](OpOperand &use) {
      return isRewirable(f, body, use.getOwner());
    });
  }
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
    Forward f = detectForward(body, ret);
    if (!f.last)
      return;
    for (auto &[l, values] : detectRecomputed(f, body))
      recomputeLayer(f, body, values, l);
  }
};
} // namespace
