//===- Differentiate.cpp - reverse-mode autodiff of the training step -----===//
//
// From the function's first result (the scalar loss), builds the backward
// graph through each op's GradientOpInterface rule and returns the loss and one
// gradient per parameter (docs/training.md). A pipeline stage's function
// (local form) is differentiated from its loss, if it has one, and from the
// activations it sends: each transfer's gradient travels back as a message
// (docs/training.md, "Pipeline training").
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "llvm/ADT/SetVector.h"

namespace hetpar {
#define GEN_PASS_DEF_DIFFERENTIATEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
bool isFloatTensor(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t && llvm::isa<FloatType>(t.getElementType());
}

class Differentiator {
public:
  Differentiator(func::FuncOp func) : func(func) {}
  LogicalResult run();

private:
  LogicalResult findActive(ArrayRef<Value> roots);
  LogicalResult checkTransfers();
  LogicalResult differentiate(Operation *op, OpBuilder &b);
  LogicalResult differentiateResplit(Operation *op, Value dy, OpBuilder &b);
  void differentiateSend(dist::SendOp send, OpBuilder &b);
  void differentiateRecv(dist::RecvOp recv, OpBuilder &b);
  LogicalResult differentiateCollective(Operation *op, OpBuilder &b);
  /// Replaces every dist.grad_all_reduce by its operand once the backward
  /// pass is built.
  void eraseGroupEntries();
  void accumulate(Value v, Value grad, OpBuilder &b);
  /// The gradient of the loss itself: 1, or the global the function's
  /// hetpar.loss_scale names. Null after an error.
  Value seed(OpBuilder &b, RankedTensorType lossType);

  func::FuncOp func;
  /// Parameter globals in module order, and their loads.
  SmallVector<ml_program::GlobalOp> params;
  llvm::DenseMap<Operation *, SmallVector<Value>> loadsOf;
  /// Values on a path from a parameter (or a received activation) to the
  /// loss (or a sent activation).
  llvm::DenseSet<Value> active;
  /// The float activations the function sends to later stages.
  SmallVector<dist::SendOp> sends;
  llvm::DenseMap<Value, Value> grads;
};

LogicalResult Differentiator::findActive(ArrayRef<Value> roots) {
  // Forward: values that depend on a parameter or on a received or
  // broadcast activation (which depends on an earlier stage's parameters).
  llvm::DenseSet<Value> fromParam;
  for (Operation &op : func.getBody().front()) {
    // A broadcast's result is the root's operand, whatever this device's.
    bool dep = llvm::isa<dist::RecvOp, dist::BroadcastOp>(op);
    if (auto load = llvm::dyn_cast<ml_program::GlobalLoadOp>(op)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
          load, load.getGlobalAttr());
      dep = global && train::roleOf(global) == "param";
    }
    for (Value in : op.getOperands())
      dep |= fromParam.contains(in);
    if (dep)
      for (Value r : op.getResults())
        if (isFloatTensor(r))
          fromParam.insert(r);
  }
  // Backward: of those, the ones the loss or a sent activation depends on.
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!fromParam.contains(v) || !active.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp())
      for (Value in : def->getOperands())
        work.push_back(in);
  }
  return success();
}

void Differentiator::accumulate(Value v, Value grad, OpBuilder &b) {
  auto [it, inserted] = grads.insert({v, grad});
  if (!inserted)
    it->second =
        onnx::AddOp::create(b, grad.getLoc(), v.getType(), it->second, grad);
}

/// Transfers whose gradient can travel back: float activations with forward
/// tags below dist::kGradientTagOffset.
LogicalResult Differentiator::checkTransfers() {
  WalkResult r = func.walk([&](Operation *op) {
    auto send = llvm::dyn_cast<dist::SendOp>(op);
    auto recv = llvm::dyn_cast<dist::RecvOp>(op);
    if (!send && !recv)
      return WalkResult::advance();
    int64_t tag = send ? send.getTag() : recv.getTag();
    if (tag >= dist::kLossTag) {
      op->emitError() << "transfer tag " << tag << " is not below "
                      << dist::kLossTag
                      << " (dist::kLossTag): its gradient's message would "
                         "reuse a tag";
      return WalkResult::interrupt();
    }
    if (send && isFloatTensor(send.getInput()))
      sends.push_back(send);
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// The backward of sending y to a later stage: receive dL/dy from it. Every
/// float transfer gets its gradient message, active or not, so that both
/// sides agree without knowing each other's graph.
void Differentiator::differentiateSend(dist::SendOp send, OpBuilder &b) {
  Value y = send.getInput();
  Value dy = dist::RecvOp::create(
      b, send.getLoc(), y.getType(), send.getMeshAttr(), send.getPeerAttr(),
      b.getI64IntegerAttr(send.getTag() + dist::kGradientTagOffset));
  if (active.contains(y))
    accumulate(y, dy, b);
}

/// The backward of receiving x from an earlier stage: send dL/dx back to it
/// (zeros when nothing here depends on x).
void Differentiator::differentiateRecv(dist::RecvOp recv, OpBuilder &b) {
  Value x = recv.getResult();
  if (!isFloatTensor(x))
    return;
  Value dx = grads.lookup(x);
  if (!dx) {
    auto t = llvm::cast<RankedTensorType>(x.getType());
    dx = onnx::ConstantOp::create(
        b, recv.getLoc(),
        DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
  }
  dist::SendOp::create(
      b, recv.getLoc(), dx, recv.getMeshAttr(), recv.getPeerAttr(),
      b.getI64IntegerAttr(recv.getTag() + dist::kGradientTagOffset));
}

/// The collectives that differentiateCollective has a rule for.
static bool isCollective(Operation *op) {
  return llvm::isa<dist::GradAllReduceOp, dist::AllReduceOp, dist::AllGatherOp,
                   dist::ReduceScatterOp, dist::AllToAllOp, dist::BroadcastOp>(
      op);
}

/// A zero tensor of `x`'s type.
static Value zerosLike(OpBuilder &b, Location loc, Value x) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  return onnx::ConstantOp::create(
      b, loc, DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
}

/// The collectives of a tensor-parallel forward pass (hetpar-dist-partition).
/// A replicated value's gradient is whole on every device of the group, so
/// the gradient of a summing all-reduce is the result's (Megatron's g), that
/// of an all-gather this device's slice of the result's, that of a
/// broadcast the result's on the root, and that of a dist.grad_all_reduce
/// (Megatron's f) the result's summed over the group.
/// The last runs on every device of the group whenever its operand depends
/// on a parameter, with zeros where no gradient reaches the result, so that
/// the devices' collectives match.
LogicalResult Differentiator::differentiateCollective(Operation *op,
                                                      OpBuilder &b) {
  Value x = op->getOperand(0), dy = grads.lookup(op->getResult(0));
  if (!active.contains(x))
    return success();
  Location loc = op->getLoc();
  if (auto entry = llvm::dyn_cast<dist::GradAllReduceOp>(op)) {
    auto sum = dist::AllReduceOp::create(
        b, loc, x.getType(), dy ? dy : zerosLike(b, loc, x),
        entry.getMeshAttr(), entry.getDevicesAttr(),
        dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::Sum));
    // On zeros it still runs where the other devices' runs: in the
    // backward part of a pipeline's schedule.
    sum->setAttr(train::kBackwardAttr, b.getUnitAttr());
    accumulate(x, sum, b);
    return success();
  }
  if (isa<dist::ReduceScatterOp, dist::AllToAllOp>(op))
    return differentiateResplit(op, dy, b);
  if (!dy)
    return success();
  auto device = func->getAttrOfType<IntegerAttr>(dist::kDeviceAttrName);
  if (auto broadcast = llvm::dyn_cast<dist::BroadcastOp>(op)) {
    // The root's operand is the value (the others' is ignored).
    if (device && device.getInt() == static_cast<int64_t>(broadcast.getRoot()))
      accumulate(x, dy, b);
    return success();
  }
  if (auto reduce = llvm::dyn_cast<dist::AllReduceOp>(op)) {
    if (reduce.getReduction() != dist::ReductionKind::Sum)
      return op->emitError()
             << "no gradient rule for an all-reduce of '"
             << dist::stringifyReductionKind(reduce.getReduction())
             << "' (a split ReduceMax/Min/Prod): it lies "
                "between a parameter and the loss";
    accumulate(x, dy, b);
    return success();
  }
  auto gather = llvm::cast<dist::AllGatherOp>(op);
  ArrayRef<int64_t> group = gather.getDevices(), sizes = gather.getSizes();
  auto at = device ? llvm::find(group, device.getInt()) : group.end();
  if (at == group.end())
    return op->emitError("the all-gather's group does not hold the "
                         "function's dist.device");
  int64_t from = 0;
  for (int64_t k = 0; k < at - group.begin(); ++k)
    from += sizes[k];
  int64_t dim = static_cast<int64_t>(gather.getDim());
  GradientBuilder g(b, loc, {});
  accumulate(x,
             g.make<onnx::SliceOp>(dy, g.i64s({from}),
                                   g.i64s({from + sizes[at - group.begin()]}),
                                   g.i64s({dim}), Value()),
             b);
  return success();
}

/// A summing reduce-scatter's gradient is the all-gather of the result's (each
/// device's partial operand contributed to every block), an all-to-all's the
/// all-to-all back. Both run on every device of the group whenever the
/// operand depends on a parameter, on zeros where no gradient reaches the
/// result, so that the devices' collectives match.
LogicalResult Differentiator::differentiateResplit(Operation *op, Value dy,
                                                   OpBuilder &b) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  if (!dy)
    dy = zerosLike(b, loc, op->getResult(0));
  Operation *back;
  if (auto rs = llvm::dyn_cast<dist::ReduceScatterOp>(op)) {
    if (rs.getReduction() != dist::ReductionKind::Sum)
      return op->emitError() << "no gradient rule for a reduce-scatter of '"
                             << dist::stringifyReductionKind(rs.getReduction())
                             << "' (a split ReduceMax/Min/Prod): it lies "
                                "between a parameter and the loss";
    back = dist::AllGatherOp::create(b, loc, x.getType(), dy, rs.getMeshAttr(),
                                     rs.getDevicesAttr(), rs.getDimAttr(),
                                     rs.getSizesAttr());
  } else {
    auto a2a = llvm::cast<dist::AllToAllOp>(op);
    back = dist::AllToAllOp::create(
        b, loc, x.getType(), dy, a2a.getMeshAttr(), a2a.getDevicesAttr(),
        a2a.getConcatDimAttr(), a2a.getConcatSizesAttr(), a2a.getSplitDimAttr(),
        a2a.getSplitSizesAttr());
  }
  back->setAttr(train::kBackwardAttr, b.getUnitAttr());
  accumulate(x, back->getResult(0), b);
  return success();
}

void Differentiator::eraseGroupEntries() {
  for (auto entry :
       llvm::make_early_inc_range(func.getOps<dist::GradAllReduceOp>())) {
    entry.getResult().replaceAllUsesWith(entry.getInput());
    entry.erase();
  }
}

LogicalResult Differentiator::differentiate(Operation *op, OpBuilder &b) {
  if (isCollective(op))
    return differentiateCollective(op, b);
  if (auto send = llvm::dyn_cast<dist::SendOp>(op)) {
    if (isFloatTensor(send.getInput()))
      differentiateSend(send, b);
    return success();
  }
  if (auto recv = llvm::dyn_cast<dist::RecvOp>(op)) {
    differentiateRecv(recv, b);
    return success();
  }
  SmallVector<Value> dY;
  bool any = false;
  for (Value r : op->getResults()) {
    dY.push_back(grads.lookup(r));
    any |= bool(dY.back());
  }
  // Leaves (parameter loads) and ops whose operands need no gradient.
  if (!any || llvm::none_of(op->getOperands(),
                            [&](Value in) { return active.contains(in); }))
    return success();
  auto rule = llvm::dyn_cast<GradientOpInterface>(op);
  if (!rule)
    return op->emitError() << "no gradient rule for " << onnx::describeNode(op)
                           << ": it lies between a parameter and the loss";
  SmallVector<bool> needed;
  for (Value in : op->getOperands())
    needed.push_back(active.contains(in));
  GradientBuilder g(b, op->getLoc(), needed);
  SmallVector<Value> dX;
  if (failed(rule.buildGradients(g, dY, dX)))
    return failure();
  if (dX.size() != op->getNumOperands())
    return op->emitError() << "gradient rule of " << onnx::describeNode(op)
                           << " gave " << dX.size() << " gradients for "
                           << op->getNumOperands() << " operands";
  for (auto [in, d] : llvm::zip(op->getOperands(), dX)) {
    if (!d || !active.contains(in))
      continue;
    if (d.getType() != in.getType())
      return op->emitError()
             << "gradient rule of " << onnx::describeNode(op) << " gave "
             << d.getType() << " for an operand of type " << in.getType();
    accumulate(in, d, b);
  }
  return success();
}

Value Differentiator::seed(OpBuilder &b, RankedTensorType lossType) {
  Location loc = func.getLoc();
  if (auto scale =
          func->getAttrOfType<FlatSymbolRefAttr>(train::kLossScaleAttr)) {
    auto g =
        SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(func, scale);
    if (!g || g.getType() != lossType) {
      func.emitError() << "the loss scale " << scale
                       << " is not a global of the loss's type " << lossType;
      return {};
    }
    return ml_program::GlobalLoadOp::create(b, loc, lossType, scale);
  }
  return onnx::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(lossType,
                             b.getFloatAttr(lossType.getElementType(), 1.0)));
}

LogicalResult Differentiator::run() {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (failed(checkTransfers()))
    return failure();
  // A pipeline stage before the last returns nothing: it is differentiated
  // from what it sends, or (a tensor-parallel device that sends nothing)
  // from the gradients its group's dist.grad_all_reduce sums.
  Value loss;
  RankedTensorType lt;
  if (ret.getNumOperands() == 0 && sends.empty() &&
      func.getOps<dist::GradAllReduceOp>().empty())
    return func.emitError("the function returns nothing to use as the loss");
  if (ret.getNumOperands() != 0) {
    loss = ret.getOperand(0);
    lt = llvm::dyn_cast<RankedTensorType>(loss.getType());
    if (!lt || lt.getRank() != 0 || !llvm::isa<FloatType>(lt.getElementType()))
      return func.emitError() << "the loss (result 0) must be a float scalar, "
                                 "not "
                              << loss.getType();
  }
  auto module = func->getParentOfType<ModuleOp>();
  for (auto g : module.getOps<ml_program::GlobalOp>())
    if (train::roleOf(g) == "param")
      params.push_back(g);
  // A pipeline stage's device: it sends or receives activations, or (a
  // tensor-parallel group's device other than the first) gets them by a
  // broadcast.
  bool transfers = !sends.empty() || !func.getOps<dist::RecvOp>().empty() ||
                   !func.getOps<dist::BroadcastOp>().empty();
  if (params.empty() && !transfers)
    return func.emitError("nothing to train: no parameter global "
                          "(run hetpar-train-lift-params first)");
  func.walk([&](ml_program::GlobalLoadOp load) {
    if (auto g = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
            load, load.getGlobalAttr()))
      loadsOf[g].push_back(load.getResult());
  });
  SmallVector<Value> roots;
  if (loss)
    roots.push_back(loss);
  for (dist::SendOp send : sends)
    roots.push_back(send.getInput());
  // A group entry's backward all-reduce, and the backward collective of a
  // reduce-scatter or an all-to-all, run on every device of the group.
  for (Operation &op : func.getBody().front())
    if (isa<dist::GradAllReduceOp, dist::ReduceScatterOp, dist::AllToAllOp>(op))
      roots.push_back(op.getOperand(0));
  if (failed(findActive(roots)))
    return failure();
  // Every op on a path needs a rule: check them all before building anything,
  // so that a failure leaves the function as it was.
  for (Operation &op : func.getBody().front()) {
    if (llvm::isa<GradientOpInterface>(op) || isCollective(&op) ||
        llvm::none_of(op.getResults(),
                      [&](Value r) { return active.contains(r); }) ||
        llvm::none_of(op.getOperands(),
                      [&](Value in) { return active.contains(in); }))
      continue;
    return op.emitError() << "no gradient rule for " << onnx::describeNode(&op)
                          << ": it lies between a parameter and the loss";
  }

  OpBuilder b(ret);
  SmallVector<Operation *> forward;
  for (Operation &op : func.getBody().front())
    if (&op != ret.getOperation())
      forward.push_back(&op);
  // The seed: dloss/dloss = 1, or the loss scale (mixed precision).
  if (loss) {
    Value start = seed(b, lt);
    if (!start)
      return failure();
    grads[loss] = start;
    if (transfers || func->hasAttr(train::kSynchronizedAttr))
      start.getDefiningOp()->setAttr(train::kSeedAttr, b.getUnitAttr());
  }
  for (Operation *op : llvm::reverse(forward))
    if (failed(differentiate(op, b)))
      return failure();

  SmallVector<Value> results;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> resultAttrs;
  if (loss) {
    results.push_back(loss);
    types.push_back(loss.getType());
    resultAttrs.push_back(func.getResultAttrDict(0));
  }
  llvm::SmallDenseSet<Operation *> noGradient;
  for (ml_program::GlobalOp p : params) {
    Value total;
    for (Value load : loadsOf.lookup(p))
      if (Value d = grads.lookup(load))
        total = total
                    ? onnx::AddOp::create(b, p.getLoc(), d.getType(), total, d)
                          .getResult()
                    : d;
    if (!total) {
      noGradient.insert(p);
      auto t = llvm::cast<RankedTensorType>(p.getType());
      total = onnx::ConstantOp::create(
          b, p.getLoc(),
          DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
    }
    results.push_back(total);
    types.push_back(total.getType());
  }
  ret->setOperands(results);
  for (ml_program::GlobalOp p : params) {
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr(train::kGradientOfAttr, FlatSymbolRefAttr::get(p)),
        b.getNamedAttr("onnx.name", b.getStringAttr(p.getSymName() + ".grad"))};
    if (noGradient.contains(p))
      attrs.push_back(b.getNamedAttr(train::kNoGradientAttr, b.getUnitAttr()));
    resultAttrs.push_back(b.getDictionaryAttr(attrs));
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), types));
  func.setAllResultAttrs(resultAttrs);
  eraseGroupEntries();
  return success();
}

struct DifferentiatePass
    : public hetpar::impl::DifferentiatePassBase<DifferentiatePass> {
  void runOnOperation() override {
    auto func = train::stepFunction(getOperation());
    if (failed(func) || failed(Differentiator(*func).run()))
      signalPassFailure();
  }
};
} // namespace
