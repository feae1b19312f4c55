//===- Recompute.cpp - layer-by-layer activation recomputation ------------===//
//
// The rewrite behind hetpar-train-recompute and a pipeline stage's
// recomputation in hetpar-dist-pipeline-schedule (Recompute.h).
//
//===----------------------------------------------------------------------===//
#include "Recompute.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/Sharding.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace hetpar::train {

bool isRecomputeLeaf(Operation *op) {
  return op->hasTrait<OpTrait::ConstantLike>() ||
         llvm::isa<ml_program::GlobalLoadOp>(op);
}

void assignForwardLayers(RecomputeScope &scope, Block &body) {
  SmallVector<Operation *> named;
  std::vector<std::string> names;
  for (Operation &op : body) {
    if (!scope.forward.contains(&op) || isRecomputeLeaf(&op))
      continue;
    named.push_back(&op);
    names.push_back(onnx::getNodeName(op.getLoc()));
  }
  std::vector<int> layers = assignLayers(names);
  for (auto [op, l] : llvm::zip(named, layers))
    scope.layer[op] = l;
  if (!layers.empty())
    scope.lastLayer = layers.back();
}

namespace {

/// Whether `op` only computes values: an op without memory effects, or an
/// onnx op (value semantics; training-mode Dropout's mask is a function of
/// its seed attribute, its step operand and the element index, so a clone
/// draws the same mask). Ops with regions are not cloned.
bool isValueOp(Operation *op) {
  return !op->getNumRegions() &&
         (llvm::isa<onnx::ONNXDialect>(op->getDialect()) ||
          isMemoryEffectFree(op));
}

/// Whether operand `k` of `op` is a running-statistics input that `op`'s
/// result Y does not read: a training-mode BatchNormalization normalizes
/// with the batch's statistics (ONNX opset 15), and its input_mean and
/// input_var only enter the running statistics it returns.
bool isUnreadStatistic(Operation *op, unsigned k) {
  auto bn = llvm::dyn_cast<onnx::BatchNormalizationOp>(op);
  return bn && bn.getTrainingMode() != 0 &&
         (k == bn.getInputMeanMutable().getOperandNumber() ||
          k == bn.getInputVarMutable().getOperandNumber());
}

/// Whether `op` reads a global that the forward pass stores, other than
/// through an operand that a clone does not need (isUnreadStatistic).
bool readsStoredState(const RecomputeScope &s, Operation *op) {
  for (OpOperand &use : op->getOpOperands()) {
    auto load = use.get().getDefiningOp<ml_program::GlobalLoadOp>();
    if (load && s.stored.contains(load.getGlobal().getLeafReference()) &&
        !isUnreadStatistic(op, use.getOperandNumber()))
      return true;
  }
  return false;
}

/// A clone of a training-mode BatchNormalization reads constants (mean 0,
/// variance 1), made before it and added to `clones`, where the original
/// reads its running statistics: after the forward pass they hold the new
/// values, which code generation does not let a later read see as the old
/// ones, and the clone's Y does not read them (its running-statistics
/// results are not used).
void detachUnreadStatistics(Operation *clone,
                            SmallVectorImpl<Operation *> &clones) {
  OpBuilder b(clone);
  for (OpOperand &use : clone->getOpOperands()) {
    if (!isUnreadStatistic(clone, use.getOperandNumber()) ||
        !use.get().getDefiningOp<ml_program::GlobalLoadOp>())
      continue;
    auto t = llvm::cast<RankedTensorType>(use.get().getType());
    bool isVar =
        use.getOperandNumber() == llvm::cast<onnx::BatchNormalizationOp>(clone)
                                      .getInputVarMutable()
                                      .getOperandNumber();
    auto constant = onnx::ConstantOp::create(
        b, clone->getLoc(),
        DenseElementsAttr::get(
            t, b.getFloatAttr(t.getElementType(), isVar ? 1.0 : 0.0)));
    use.set(constant);
    clones.push_back(constant);
  }
}

/// Whether `user` is a backward reader that may read a recomputed value: a
/// backward op without memory effects.
bool isRewirable(const RecomputeScope &s, Block &body, Operation *user) {
  Operation *top = body.findAncestorOpInBlock(*user);
  return top && !s.forward.contains(top) &&
         !top->hasTrait<OpTrait::IsTerminator>() && s.isBackward(top) &&
         isValueOp(top);
}

/// Whether `v`, a result of forward op `def` of layer `l`, is kept as it is:
/// its op cannot be cloned (it has effects, or reads state the step stores),
/// or a forward op of another layer, the return or an op that is neither
/// forward nor backward also reads it.
bool isKept(const RecomputeScope &s, Block &body, Value v, Operation *def,
            int l) {
  if (!isValueOp(def) || readsStoredState(s, def))
    return true;
  for (Operation *user : v.getUsers()) {
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top || top->hasTrait<OpTrait::IsTerminator>())
      return true;
    if (s.forward.contains(top)) {
      auto it = s.layer.find(top);
      if (it == s.layer.end() || it->second != l)
        return true;
    } else if (!s.isBackward(top)) {
      return true;
    }
  }
  return false;
}

/// Per layer: its values to recompute (in program order).
llvm::MapVector<int, SmallVector<Value>>
detectRecomputed(const RecomputeScope &s, Block &body) {
  llvm::MapVector<int, SmallVector<Value>> out;
  for (Operation &op : body) {
    auto it = s.layer.find(&op);
    if (it == s.layer.end() || (s.keepLastLayer && it->second == s.lastLayer))
      continue;
    for (Value r : op.getResults())
      if (!isKept(s, body, r, &op, it->second) &&
          llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return isRewirable(s, body, u); }))
        out[it->second].push_back(r);
  }
  return out;
}

/// The ops of layer `l` that computing `values` takes, in program order:
/// everything back to the layer's inputs and its kept values.
SmallVector<Operation *> collectClones(const RecomputeScope &s, Block &body,
                                       ArrayRef<Value> values, int l) {
  llvm::DenseSet<Operation *> needed;
  SmallVector<Value> work(values.begin(), values.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    auto it = def ? s.layer.find(def) : s.layer.end();
    if (it == s.layer.end() || it->second != l || isKept(s, body, v, def, l) ||
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
void recomputeLayer(const RecomputeScope &s, Block &body,
                    ArrayRef<Value> values, int l,
                    SmallVectorImpl<Operation *> &clones) {
  Operation *first = nullptr;
  for (Value v : values)
    for (Operation *u : v.getUsers())
      if (isRewirable(s, body, u)) {
        Operation *top = body.findAncestorOpInBlock(*u);
        if (!first || top->isBeforeInBlock(first))
          first = top;
      }
  OpBuilder b(first);
  IRMapping map;
  for (Operation *op : collectClones(s, body, values, l)) {
    Operation *clone = b.clone(*op, map);
    detachUnreadStatistics(clone, clones);
    clones.push_back(clone);
  }
  for (Value v : values) {
    Value clone = map.lookup(v);
    v.replaceUsesWithIf(clone, [&](OpOperand &use) {
      return isRewirable(s, body, use.getOwner());
    });
  }
}

} // namespace

SmallVector<Operation *> recomputeLayers(const RecomputeScope &scope,
                                         Block &body) {
  SmallVector<Operation *> clones;
  for (auto &[l, values] : detectRecomputed(scope, body))
    recomputeLayer(scope, body, values, l, clones);
  return clones;
}

} // namespace hetpar::train
