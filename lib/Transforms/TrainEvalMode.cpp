//===- TrainEvalMode.cpp - the evaluation form of a training step ---------===//
//
// Turns a training step (after hetpar-train-lift-params and
// hetpar-train-attach-loss) into its evaluation form, PyTorch's model.eval()
// under torch.no_grad(): the loss on a batch, computed with the running
// statistics and without Dropout, writing nothing. The parameters become
// arguments, so that the runtime can bind them to the training program's
// weights (docs/training.md, "Evaluation").
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "llvm/ADT/MapVector.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINEVALMODEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
/// Rebuilds a training-mode BatchNormalization in inference mode (its
/// running statistics normalize). Fails when its new running statistics are
/// still read: only a global_store may read them, and those are gone.
LogicalResult toInference(onnx::BatchNormalizationOp bn) {
  if (bn.getTrainingMode() == 0)
    return success();
  for (Value stat : bn.getRunningStats())
    if (!stat.use_empty())
      return bn.emitError()
             << onnx::describeNode(bn)
             << ": evaluation cannot keep its running statistics as values "
                "(they are read by something other than a state update)";
  OpBuilder b(bn);
  auto eval = onnx::BatchNormalizationOp::create(
      b, bn.getLoc(), TypeRange{bn.getY().getType()}, bn->getOperands(),
      bn->getAttrs());
  eval.setTrainingMode(0);
  bn.getY().replaceAllUsesWith(eval.getY());
  bn.erase();
  return success();
}

/// Removes a Dropout in evaluation: its output is its input, its mask (when
/// read) all true, as ONNX's Dropout with training_mode false.
void removeDropout(onnx::DropoutOp op) {
  op.getOutput().replaceAllUsesWith(op.getData());
  if (Value mask = op.getMask(); mask && !mask.use_empty()) {
    OpBuilder b(op);
    auto type = llvm::cast<RankedTensorType>(mask.getType());
    auto ones = onnx::ConstantOp::create(
        b, op.getLoc(), DenseElementsAttr::get(type, b.getBoolAttr(true)));
    mask.replaceAllUsesWith(ones);
  }
  op.erase();
}

/// The globals `func` reads, in order of first read, with their loads.
llvm::MapVector<ml_program::GlobalOp, SmallVector<ml_program::GlobalLoadOp>>
readGlobals(func::FuncOp func, SymbolTable &symbols) {
  llvm::MapVector<ml_program::GlobalOp, SmallVector<ml_program::GlobalLoadOp>>
      reads;
  func.walk([&](ml_program::GlobalLoadOp load) {
    if (auto g = symbols.lookup<ml_program::GlobalOp>(
            load.getGlobal().getLeafReference()))
      reads[g].push_back(load);
  });
  return reads;
}

/// Makes each global `func` reads a new argument after the others, named
/// (onnx.name) and bound (kEvalBindAttr) after the global.
void globalsToArguments(func::FuncOp func, SymbolTable &symbols) {
  for (auto &[global, loads] : readGlobals(func, symbols)) {
    Builder b(func.getContext());
    StringAttr name = global.getSymNameAttr();
    NamedAttribute attrs[] = {b.getNamedAttr("onnx.name", name),
                              b.getNamedAttr(train::kEvalBindAttr, name)};
    unsigned index = func.getNumArguments();
    (void)func.insertArgument(index, global.getType(),
                              b.getDictionaryAttr(attrs), global.getLoc());
    for (ml_program::GlobalLoadOp load : loads) {
      load.getResult().replaceAllUsesWith(func.getArgument(index));
      load.erase();
    }
  }
}

struct TrainEvalModePass
    : public hetpar::impl::TrainEvalModePassBase<TrainEvalModePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = train::stepFunction(module);
    if (failed(func))
      return signalPassFailure();
    func->walk([](ml_program::GlobalStoreOp store) { store.erase(); });
    SmallVector<onnx::BatchNormalizationOp> norms(
        func->getBody().getOps<onnx::BatchNormalizationOp>());
    for (onnx::BatchNormalizationOp bn : norms)
      if (failed(toInference(bn)))
        return signalPassFailure();
    SmallVector<onnx::DropoutOp> drops(
        func->getBody().getOps<onnx::DropoutOp>());
    for (onnx::DropoutOp op : drops)
      removeDropout(op);
    SymbolTable symbols(module);
    globalsToArguments(*func, symbols);
    for (auto g :
         llvm::make_early_inc_range(module.getOps<ml_program::GlobalOp>()))
      if (SymbolTable::symbolKnownUseEmpty(g, module))
        g.erase();
  }
};
} // namespace
