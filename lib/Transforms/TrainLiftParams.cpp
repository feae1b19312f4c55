//===- TrainLiftParams.cpp - trainable initializers become globals --------===//
//
// Float initializers become mutable ml_program globals: parameters (role
// "param"), and the running statistics of training-mode BatchNormalization
// (role "buffer"), which each step overwrites with the node's new running
// statistics (docs/training.md).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Regex.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINLIFTPARAMSPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
StringAttr initializerName(Operation *op) {
  return op ? op->getAttrOfType<StringAttr>(onnx::kInitializerAttrName)
            : StringAttr();
}

/// "running_var of node 'bn1' (BatchNormalization)".
std::string describeStat(Value result) {
  auto res = llvm::cast<OpResult>(result);
  return std::string(res.getResultNumber() == 1 ? "running_mean"
                                                : "running_var") +
         " of " + onnx::describeNode(res.getOwner());
}

/// Whether initializer `c` holds an infinity or a NaN: a mask (an exporter's
/// folded causal mask, -inf above the diagonal), not a parameter. PyTorch
/// keeps such a tensor in a buffer and never trains it; a gradient step
/// would only move its finite entries.
bool holdsNonFinite(onnx::ConstantOp c) {
  auto value = llvm::dyn_cast_or_null<ElementsAttr>(c.getValue());
  return value && hasNonFiniteElements(value);
}

struct TrainLiftParamsPass
    : public hetpar::impl::TrainLiftParamsPassBase<TrainLiftParamsPass> {
  using Base::Base;

  /// The running-statistics initializers of training-mode
  /// BatchNormalization nodes, each with the node's result that replaces it
  /// after a step (null when the node returns no running statistics: the
  /// buffer then keeps its value). Fails (with an error) when one initializer
  /// would be written by two nodes.
  FailureOr<llvm::MapVector<Operation *, Value>> findBuffers(ModuleOp module) {
    llvm::MapVector<Operation *, Value> buffers;
    WalkResult walk = module.walk([&](onnx::BatchNormalizationOp bn) {
      if (bn.getTrainingMode() == 0)
        return WalkResult::advance();
      Value stats[2] = {bn.getInputMean(), bn.getInputVar()};
      for (unsigned k = 0; k < 2; ++k) {
        onnx::ConstantOp c = train::floatInitializer(stats[k]);
        if (!c)
          continue; // not an initializer: the new statistics are just values
        Value result = bn.getRunningStats().size() == 2
                           ? bn.getRunningStats()[k]
                           : Value();
        auto [it, inserted] = buffers.insert({c, result});
        if (!inserted && !it->second)
          it->second = result;
        else if (!inserted && result && it->second != result) {
          bn.emitError() << "initializer '" << initializerName(c).getValue()
                         << "' would get two new running statistics ("
                         << describeStat(it->second) << " and "
                         << describeStat(result)
                         << "): a training program keeps one copy of it";
          return WalkResult::interrupt();
        }
        if (result && result.getType() != c.getType()) {
          bn.emitError() << "running statistic result of type "
                         << result.getType() << " cannot update initializer '"
                         << initializerName(c).getValue() << "' of type "
                         << c.getType();
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    return buffers;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<llvm::Regex> frozen;
    if (!freeze.empty()) {
      llvm::Expected<llvm::Regex> re = train::freezeRegex(freeze);
      if (!re) {
        module.emitError() << llvm::toString(re.takeError());
        return signalPassFailure();
      }
      frozen.emplace(std::move(*re));
    }
    auto buffers = findBuffers(module);
    if (failed(buffers))
      return signalPassFailure();
    // In module order: parameters and buffers interleave as their constants.
    SmallVector<onnx::ConstantOp> lifted;
    bool frozeAny = false, anyParam = false;
    module.walk([&](onnx::ConstantOp c) {
      if (!train::floatInitializer(c))
        return;
      if (buffers->count(c)) {
        lifted.push_back(c);
        return;
      }
      if (frozen && frozen->match(initializerName(c).getValue())) {
        frozeAny = true;
        return;
      }
      if (holdsNonFinite(c)) {
        emitRemark(c.getLoc())
            << "initializer '" << initializerName(c).getValue()
            << "' holds an infinity or a NaN (a mask): kept constant, not "
               "trained";
        return;
      }
      lifted.push_back(c);
      anyParam = true;
    });
    if (frozen && !frozeAny && requireMatch) {
      module.emitError() << train::freezeMatchesNothing(freeze);
      return signalPassFailure();
    }
    // A pipeline stage without parameters still passes gradients on.
    bool stage = false;
    module.walk([&](Operation *op) {
      stage |= llvm::isa<dist::SendOp, dist::RecvOp>(op);
    });
    if (!anyParam && !stage) {
      module.emitError() << "nothing to train: the model has no float "
                            "initializer"
                         << (frozeAny ? " that --freeze leaves trainable"
                                      : " marked onnx.initializer (import "
                                        "with hetpar-translate --import-onnx "
                                        "--mark-initializers)");
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    for (onnx::ConstantOp c : lifted) {
      bool buffer = buffers->count(c);
      Value newValue = buffers->lookup(c);
      auto global = ml_program::GlobalOp::create(
          top, c.getLoc(), initializerName(c).getValue(), c.getType(),
          /*is_mutable=*/true, c.getValue(), top.getStringAttr("private"));
      global->setAttr(train::kRoleAttr,
                      top.getStringAttr(buffer ? "buffer" : "param"));
      if (Attribute shard = c->getAttr(train::kTensorShardAttr))
        global->setAttr(train::kTensorShardAttr, shard);
      symbols.insert(global); // renames on a clash with another symbol
      OpBuilder b(c);
      auto load = ml_program::GlobalLoadOp::create(
          b, c.getLoc(), c.getType(), FlatSymbolRefAttr::get(global));
      c.replaceAllUsesWith(load.getResult());
      c.erase();
      if (!newValue)
        continue;
      // Stored last: every read of the old value comes before it.
      Operation *ret = newValue.getParentBlock()->getTerminator();
      OpBuilder end(ret);
      ml_program::GlobalStoreOp::create(
          end, newValue.getLoc(), FlatSymbolRefAttr::get(global), newValue);
    }
  }
};
} // namespace
