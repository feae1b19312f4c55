//===- TraceSpans.cpp - Spans of a training step's measured timeline ------===//
#include "TraceSpans.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;

llvm::StringRef hetpar::codegen::traceCategoryName(TraceCategory c) {
  switch (c) {
  case TraceCategory::Forward:
    return "forward";
  case TraceCategory::Backward:
    return "backward";
  case TraceCategory::Optimizer:
    return "optimizer";
  case TraceCategory::Collective:
    return "collective";
  case TraceCategory::Transfer:
    return "transfer";
  }
  return "forward";
}

/// The ops `roots` are computed from, the roots included (within the block).
static llvm::DenseSet<Operation *>
producersOf(llvm::ArrayRef<Operation *> roots) {
  llvm::DenseSet<Operation *> seen;
  llvm::SmallVector<Operation *> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    for (Value in : op->getOperands())
      if (Operation *def = in.getDefiningOp())
        work.push_back(def);
  }
  return seen;
}

/// A load of the optimizer's state: a global of train::kRoleAttr
/// "optimizer" (moments, momentum, the gradient accumulation buffers) or
/// "step", or the accumulation's microbatch counter.
static bool readsOptimizerState(Operation *op) {
  auto load = llvm::dyn_cast<ml_program::GlobalLoadOp>(op);
  if (!load)
    return false;
  auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
      op, load.getGlobalAttr());
  if (!global)
    return false;
  auto role = global->getAttrOfType<StringAttr>(train::kRoleAttr);
  return global.getSymName() == train::kMicrobatchGlobal ||
         (role &&
          (role.getValue() == "optimizer" || role.getValue() == "step"));
}

static bool isGradientTransfer(Operation *op) {
  if (auto send = llvm::dyn_cast<dist::SendOp>(op))
    return send.getTag() >= dist::kGradientTagOffset;
  return false;
}

TraceSpans::TraceSpans(func::FuncOp func) {
  Block &body = func.getBody().front();
  isTrainingStep = !body.getOps<ml_program::GlobalStoreOp>().empty();
  if (!isTrainingStep)
    return;
  llvm::SmallVector<Operation *> forwardRoots{body.getTerminator()};
  llvm::SmallVector<Operation *> gradientRoots;
  for (Operation &op : body.without_terminator()) {
    if (llvm::isa<dist::SendOp>(op))
      (isGradientTransfer(&op) ? gradientRoots : forwardRoots).push_back(&op);
    if (op.hasAttr(train::kBackwardAttr))
      gradientRoots.push_back(&op);
    Value grad;
    if (auto adam = llvm::dyn_cast<onnx::AdamWOptimizerOp>(op))
      grad = adam.getGrad();
    if (auto sgd = llvm::dyn_cast<onnx::SGDOptimizerOp>(op))
      grad = sgd.getGrad();
    if (grad && grad.getDefiningOp())
      gradientRoots.push_back(grad.getDefiningOp());
  }
  llvm::DenseSet<Operation *> forward = producersOf(forwardRoots);
  llvm::DenseSet<Operation *> backward = producersOf(gradientRoots);
  // A pipeline microbatch's forward part ends before its backward part
  // starts: a forward op of microbatch k after k's backward began (the
  // weighted loss's running sum) runs in k's backward part.
  llvm::DenseSet<int64_t> backwardStarted;
  llvm::DenseSet<Operation *> readsState;
  for (Operation &op : body.without_terminator()) {
    if (readsOptimizerState(&op) ||
        llvm::any_of(op.getOperands(), [&](Value in) {
          return readsState.contains(in.getDefiningOp());
        }))
      readsState.insert(&op);
    TraceCategory phase = forward.contains(&op)      ? TraceCategory::Forward
                          : readsState.contains(&op) ? TraceCategory::Optimizer
                          : backward.contains(&op)   ? TraceCategory::Backward
                                                     : TraceCategory::Optimizer;
    int64_t k = microbatchOfOp(&op, phase);
    if (phase == TraceCategory::Backward && k >= 0)
      backwardStarted.insert(k);
    if (phase == TraceCategory::Forward && backwardStarted.contains(k))
      phase = TraceCategory::Backward;
    phaseOf[&op] = phase;
    microbatchOf[&op] = k;
  }
}

/// The op's train::kMicrobatchIndexAttr. A forward or backward op without
/// one (made by a rewrite after the pipeline's schedule, which does not
/// keep it) belongs to the microbatch it computes from: the latest of its
/// operands'. Collectives and the optimizer keep only their own mark.
int64_t TraceSpans::microbatchOfOp(Operation *op, TraceCategory phase) const {
  if (auto k = op->getAttrOfType<IntegerAttr>(train::kMicrobatchIndexAttr))
    return k.getInt();
  bool isDist =
      op->getDialect() && op->getDialect()->getNamespace() ==
                              dist::DistDialect::getDialectNamespace();
  if (isDist || phase == TraceCategory::Optimizer)
    return -1;
  int64_t k = -1;
  for (Value in : op->getOperands())
    if (Operation *def = in.getDefiningOp())
      k = std::max(k, microbatchOf.lookup_or(def, -1));
  return k;
}

TraceSpanKey TraceSpans::keyOf(Operation *op) const {
  TraceSpanKey key;
  if (llvm::isa<dist::SendOp, dist::RecvOp>(op)) {
    key.category = TraceCategory::Transfer;
    return key;
  }
  key.microbatch = microbatchOf.lookup_or(op, -1);
  if (op->getDialect() && op->getDialect()->getNamespace() ==
                              dist::DistDialect::getDialectNamespace()) {
    key.category = TraceCategory::Collective;
    return key;
  }
  key.category = phaseOf.lookup(op);
  return key;
}
