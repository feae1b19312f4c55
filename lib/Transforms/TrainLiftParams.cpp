//===- TrainLiftParams.cpp - trainable initializers become globals --------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/Regex.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINLIFTPARAMSPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
struct TrainLiftParamsPass
    : public hetpar::impl::TrainLiftParamsPassBase<TrainLiftParamsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<llvm::Regex> frozen;
    if (!freeze.empty()) {
      frozen.emplace("^(" + freeze + ")$");
      std::string err;
      if (!frozen->isValid(err)) {
        module.emitError() << "--freeze '" << freeze
                           << "' is not a valid regular expression: " << err;
        return signalPassFailure();
      }
    }
    SmallVector<onnx::ConstantOp> params;
    bool frozeAny = false;
    module.walk([&](onnx::ConstantOp c) {
      auto name = c->getAttrOfType<StringAttr>(onnx::kInitializerAttrName);
      if (!name || !llvm::isa<FloatType>(c.getType().getElementType()))
        return;
      if (frozen && frozen->match(name.getValue())) {
        frozeAny = true;
        return;
      }
      params.push_back(c);
    });
    if (frozen && !frozeAny) {
      module.emitError() << "--freeze '" << freeze
                         << "' matches no float initializer of the model";
      return signalPassFailure();
    }
    if (params.empty()) {
      module.emitError() << "nothing to train: the model has no float "
                            "initializer"
                         << (frozeAny ? " that --freeze leaves trainable" : "");
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    for (onnx::ConstantOp c : params) {
      auto name = c->getAttrOfType<StringAttr>(onnx::kInitializerAttrName);
      auto global = ml_program::GlobalOp::create(
          top, c.getLoc(), name.getValue(), c.getType(), /*is_mutable=*/true,
          c.getValue(), top.getStringAttr("private"));
      global->setAttr(train::kRoleAttr, top.getStringAttr("param"));
      symbols.insert(global); // renames on a clash with another symbol
      OpBuilder b(c);
      auto load = ml_program::GlobalLoadOp::create(
          b, c.getLoc(), c.getType(), FlatSymbolRefAttr::get(global));
      c.replaceAllUsesWith(load.getResult());
      c.erase();
    }
  }
};
} // namespace
