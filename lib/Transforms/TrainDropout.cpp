//===- TrainDropout.cpp - per-step masks of training-mode Dropout ---------===//
//
// Training-mode Dropout draws its mask from Philox4x32-10 keyed by a seed and
// counted by (element index, step): this pass gives each such Dropout its
// seed, the step counter as an operand and its mask result, which the
// gradient reuses (docs/training.md).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINDROPOUTPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
/// SplitMix64's output function (Steele, Lea, Flood: "Fast splittable
/// pseudorandom number generators", OOPSLA 2014): well mixed seeds from
/// consecutive integers.
uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Whether `op` drops at random: true for a constant true training_mode,
/// false for none or a constant false one, failure (after an error) for a
/// training_mode that is not a constant.
FailureOr<bool> isTraining(onnx::DropoutOp op) {
  Value t = op.getTrainingMode();
  if (!t)
    return false;
  auto values = getConstantIntValues(t);
  if (!values) {
    op.emitError() << onnx::describeNode(op)
                   << ": training needs a constant training_mode (its masks "
                      "are drawn per step)";
    return failure();
  }
  return llvm::any_of(*values, [](int64_t v) { return v != 0; });
}

struct TrainDropoutPass
    : public hetpar::impl::TrainDropoutPassBase<TrainDropoutPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = train::stepFunction(module);
    if (failed(func))
      return signalPassFailure();
    SmallVector<onnx::DropoutOp> training;
    for (auto op : func->getBody().getOps<onnx::DropoutOp>()) {
      FailureOr<bool> on = isTraining(op);
      if (failed(on))
        return signalPassFailure();
      if (*on)
        training.push_back(op);
    }
    if (training.empty())
      return;
    auto stepGlobal = train::getOrCreateStepGlobal(module, *func);
    OpBuilder start = OpBuilder::atBlockBegin(&func->getBody().front());
    Value step = ml_program::GlobalLoadOp::create(
        start, stepGlobal.getLoc(), stepGlobal.getType(),
        FlatSymbolRefAttr::get(stepGlobal));
    uint64_t unseeded = 0;
    for (onnx::DropoutOp op : training) {
      IntegerAttr seedAttr = op.getSeedAttr();
      if (!seedAttr) {
        uint64_t s = splitmix64(static_cast<uint64_t>(seed) + unseeded++);
        seedAttr = IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                    static_cast<int64_t>(s));
      }
      auto dataType = llvm::cast<ShapedType>(op.getData().getType());
      Type maskType = dataType.clone(IntegerType::get(&getContext(), 1));
      OpBuilder b(op);
      auto rebuilt = onnx::DropoutOp::create(
          b, op.getLoc(), TypeRange{op.getOutput().getType(), maskType},
          op.getData(), op.getRatio(), op.getTrainingMode(), step, seedAttr,
          op.getElementOffsetAttr());
      for (auto [from, to] : llvm::zip(op->getResults(), rebuilt->getResults()))
        from.replaceAllUsesWith(to);
      op.erase();
    }
  }
};
} // namespace
