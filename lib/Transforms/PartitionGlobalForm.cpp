//===- PartitionGlobalForm.cpp - hetpar-dist-localize's input -----------===//
//
// How hetpar-dist-localize reads the global form (hetpar-dist-global-form's):
// its stages inlined into the model function, each op marked with its stage,
// and its transfers' layouts checked against the plan's stages. Partitioner.h
// declares the members.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

LogicalResult Partitioner::flattenGlobalForm() {
  Block &body = func.getBody().front();
  SmallVector<dist::StageOp> stageOps;
  SmallVector<dist::TransferOp> transferOps;
  for (Operation &op : body) {
    if (auto st = dyn_cast<dist::StageOp>(op))
      stageOps.push_back(st);
    else if (auto t = dyn_cast<dist::TransferOp>(op))
      transferOps.push_back(t);
    else if (!isa<func::ReturnOp, onnx::ConstantOp, onnx::NoValueOp>(op))
      return op.emitError()
             << "partition: op " << describeOp(&op)
             << " is outside every dist.stage: the partition "
                "takes the global form (hetpar-dist-global-form)";
  }
  for (auto [s, st] : llvm::enumerate(stageOps)) {
    if (st.getIndexAttr().getInt() != static_cast<int64_t>(s))
      return st.emitError() << "partition: dist.stage "
                            << st.getIndexAttr().getInt() << " comes where "
                            << "stage " << s << " belongs (stage order)";
    // A value from another stage arrives through a transfer.
    for (Value v : st.getInputs())
      if (v.getDefiningOp<dist::StageOp>())
        return st.emitError() << "partition: dist.stage " << s
                              << " reads a value of another stage without a "
                                 "dist.transfer";
    stageDevices.emplace_back(st.getDevices().begin(), st.getDevices().end());
  }
  auto stage = [](Operation *op) -> std::optional<int> {
    if (auto st = dyn_cast<dist::StageOp>(op))
      return st.getIndexAttr().getInt();
    return std::nullopt;
  };
  for (dist::TransferOp t : transferOps) {
    FailureOr<std::pair<int, int>> joins = transferStages(t, stage);
    if (failed(joins))
      return failure();
    auto from = t.getInput().getDefiningOp<dist::StageOp>();
    Transfer info{Value(), joins->second, t.getSource(), t.getTarget(),
                  t.getLoc()};
    auto yield =
        llvm::cast<dist::YieldOp>(from.getBody().front().getTerminator());
    info.value =
        yield.getValues()[llvm::cast<OpResult>(t.getInput()).getResultNumber()];
    if (!info.value.getDefiningOp())
      return t.emitError() << "partition: a dist.transfer moves a value its "
                              "stage computes, not one it takes";
    transfers.push_back(info);
  }
  // The stages' ops into the function, in stage order, each with its
  // dist.stage_id; the transfers go (recorded above).
  for (auto [s, st] : llvm::enumerate(stageOps)) {
    Block &inner = st.getBody().front();
    for (auto [arg, v] : llvm::zip(inner.getArguments(), st.getInputs()))
      arg.replaceAllUsesWith(v);
    auto yield = llvm::cast<dist::YieldOp>(inner.getTerminator());
    for (auto [r, v] : llvm::zip(st.getResults(), yield.getValues()))
      r.replaceAllUsesWith(v);
    for (Operation &op :
         llvm::make_early_inc_range(inner.without_terminator())) {
      op.moveBefore(st);
      op.setAttr(dist::kStageIdAttrName, b.getI64IntegerAttr(s));
      // Constants too: a stage may send one (readStageAssignment, which
      // only checks here, gives them no stage).
      stageOf[&op] = s;
    }
  }
  for (dist::TransferOp t : transferOps) {
    t.getResult().replaceAllUsesWith(t.getInput());
    t.erase();
  }
  for (dist::StageOp st : stageOps)
    st.erase();
  // The stages' checks (regions, later stages read), as the global form's
  // passes make them.
  return success(succeeded(readStageAssignment(func, stageOps.size())));
}

/// Stage `st`'s layout of a value as a transfer's sharding names it: the
/// split within each replica, in indices (granule 1).
static FailureOr<Local> transferLayout(Location loc,
                                       dist::ShardingAttr sharding,
                                       const StageInfo &st, int s,
                                       StringRef end) {
  auto fail = [&]() {
    return mlir::emitError(loc)
           << "partition: the " << end << " of a dist.transfer ";
  };
  if (sharding.getDevices() != ArrayRef<int64_t>(st.devices) ||
      sharding.getReplicas() != st.data)
    return fail() << "must lie on stage " << s << "'s devices as its "
                  << st.data << " replicas";
  if (sharding.getPartial())
    return fail() << "is partial; values leave a stage reduced";
  Local l;
  if (!sharding.isSplit())
    return l;
  if (llvm::is_contained(sharding.getSizes(), 0))
    return fail() << "gives a device no index of its split (every device of "
                     "a replica holds a part)";
  l.kind = Local::Split;
  l.dim = static_cast<int>(sharding.getSplitDim());
  for (int64_t n : sharding.getSizes()) {
    l.starts.push_back(l.sizes.empty() ? 0 : l.starts.back() + l.sizes.back());
    l.sizes.push_back(n);
  }
  return l;
}

LogicalResult Partitioner::readTransfer(const Transfer &t) {
  Value v = t.value;
  int from = stageOfValue(v);
  Location loc = t.loc;
  auto source = transferLayout(loc, t.source, stages[from], from, "source");
  auto target = transferLayout(loc, t.target, stages[t.to], t.to, "target");
  if (failed(source) || failed(target))
    return failure();
  if (source->kind != target->kind)
    return mlir::emitError(loc) << "partition: a dist.transfer leaves split "
                                   "exactly when it arrives split";
  if (source->kind != Local::Split)
    return success();
  // A split travels to one stage, and is no graph output.
  bool output = llvm::any_of(
      v.getUsers(), [](Operation *u) { return isa<func::ReturnOp>(u); });
  int to = llvm::count_if(transfers,
                          [&](const Transfer &o) { return o.value == v; });
  if (to > 1 || output || source->dim != target->dim)
    return mlir::emitError(loc)
           << "partition: a value travels split along one dimension, to one "
              "later stage, and is no graph output";
  splitExits[v] = SplitTransfer{*source, *target};
  return success();
}
