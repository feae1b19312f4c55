//===- Differentiate.cpp - reverse-mode autodiff of the training step -----===//
//
// From the function's first result (the scalar loss), builds the backward
// graph through each op's GradientOpInterface rule and returns the loss and one
// gradient per parameter (docs/training.md).
//
//===----------------------------------------------------------------------===//
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
  LogicalResult findActive(Value loss);
  LogicalResult differentiate(Operation *op, OpBuilder &b);
  void accumulate(Value v, Value grad, OpBuilder &b);
  /// The gradient of the loss itself: 1, or the global the function's
  /// hetpar.loss_scale names. Null after an error.
  Value seed(OpBuilder &b, RankedTensorType lossType);

  func::FuncOp func;
  /// Parameter globals in module order, and their loads.
  SmallVector<ml_program::GlobalOp> params;
  llvm::DenseMap<Operation *, SmallVector<Value>> loadsOf;
  /// Values on a path from a parameter to the loss.
  llvm::DenseSet<Value> active;
  llvm::DenseMap<Value, Value> grads;
};

LogicalResult Differentiator::findActive(Value loss) {
  // Forward: values that depend on a parameter.
  llvm::DenseSet<Value> fromParam;
  for (Operation &op : func.getBody().front()) {
    bool dep = false;
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
  // Backward: of those, the ones the loss depends on.
  SmallVector<Value> work{loss};
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

LogicalResult Differentiator::differentiate(Operation *op, OpBuilder &b) {
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
  if (ret.getNumOperands() == 0)
    return func.emitError("the function returns nothing to use as the loss");
  Value loss = ret.getOperand(0);
  auto lt = llvm::dyn_cast<RankedTensorType>(loss.getType());
  if (!lt || lt.getRank() != 0 || !llvm::isa<FloatType>(lt.getElementType()))
    return func.emitError() << "the loss (result 0) must be a float scalar, "
                               "not "
                            << loss.getType();
  auto module = func->getParentOfType<ModuleOp>();
  for (auto g : module.getOps<ml_program::GlobalOp>())
    if (train::roleOf(g) == "param")
      params.push_back(g);
  if (params.empty())
    return func.emitError("nothing to train: no parameter global "
                          "(run hetpar-train-lift-params first)");
  func.walk([&](ml_program::GlobalLoadOp load) {
    if (auto g = SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
            load, load.getGlobalAttr()))
      loadsOf[g].push_back(load.getResult());
  });
  if (failed(findActive(loss)))
    return failure();
  // Every op on a path needs a rule: check them all before building anything,
  // so that a failure leaves the function as it was.
  for (Operation &op : func.getBody().front()) {
    if (llvm::isa<GradientOpInterface>(op) ||
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
  Value start = seed(b, lt);
  if (!start)
    return failure();
  grads[loss] = start;
  for (Operation *op : llvm::reverse(forward))
    if (failed(differentiate(op, b)))
      return failure();

  SmallVector<Value> results{loss};
  SmallVector<Type> types{loss.getType()};
  for (ml_program::GlobalOp p : params) {
    Value total;
    for (Value load : loadsOf.lookup(p))
      if (Value d = grads.lookup(load))
        total = total
                    ? onnx::AddOp::create(b, p.getLoc(), d.getType(), total, d)
                          .getResult()
                    : d;
    if (!total) {
      auto t = llvm::cast<RankedTensorType>(p.getType());
      total = onnx::ConstantOp::create(
          b, p.getLoc(),
          DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
    }
    results.push_back(total);
    types.push_back(total.getType());
  }
  ret->setOperands(results);
  SmallVector<DictionaryAttr> resultAttrs;
  resultAttrs.push_back(func.getResultAttrDict(0));
  for (ml_program::GlobalOp p : params)
    resultAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(train::kGradientOfAttr, FlatSymbolRefAttr::get(p)),
         b.getNamedAttr("onnx.name",
                        b.getStringAttr(p.getSymName() + ".grad"))}));
  func.setFunctionType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), types));
  func.setAllResultAttrs(resultAttrs);
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
