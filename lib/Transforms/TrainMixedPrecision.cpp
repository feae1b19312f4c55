//===- TrainMixedPrecision.cpp - 16-bit compute, float32 master weights ---===//
//
// Retypes the training step's float32 values to bfloat16 or float16 before
// differentiation, so the backward pass, the cost model and code generation
// all see the 16-bit types in the IR (docs/training.md, "Mixed precision").
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/SymbolTable.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINMIXEDPRECISIONPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
bool isF32Tensor(Type t) {
  auto s = llvm::dyn_cast<ShapedType>(t);
  return s && s.getElementType().isF32();
}

Type withElement(Type t, Type elt) {
  return llvm::cast<ShapedType>(t).clone(elt);
}

/// `v` cast to element type `elt` just after its definition (or at `at`).
Value castAfter(OpBuilder &b, Value v, Type elt) {
  return onnx::CastOp::create(b, v.getLoc(), withElement(v.getType(), elt), v,
                              TypeAttr::get(elt), b.getI64IntegerAttr(1));
}

/// Replaces every use of the float32 `v` except by the new cast with a cast of
/// it to `elt`.
void castUses(Value v, Type elt) {
  if (!isF32Tensor(v.getType()) || v.use_empty())
    return;
  OpBuilder b(v.getContext());
  b.setInsertionPointAfterValue(v);
  Value c = castAfter(b, v, elt);
  v.replaceAllUsesExcept(c, c.getDefiningOp());
}

/// True for an op that updates state: a result stored to a global
/// (BatchNormalization's running statistics). It runs in float32 so that the
/// state does not round to 16 bits every step.
bool updatesState(Operation *op) {
  return llvm::any_of(op->getUsers(), [](Operation *user) {
    return llvm::isa<ml_program::GlobalStoreOp>(user);
  });
}

/// Casts `op`'s float32 results to `elt` for every user but the stores.
void castResultsForUsers(Operation *op, Type elt) {
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  for (Value r : op->getResults()) {
    if (!isF32Tensor(r.getType()) ||
        llvm::all_of(r.getUsers(), [](Operation *u) {
          return llvm::isa<ml_program::GlobalStoreOp>(u);
        }))
      continue;
    Value c = castAfter(b, r, elt);
    r.replaceUsesWithIf(c, [&](OpOperand &use) {
      return use.getOwner() != c.getDefiningOp() &&
             !llvm::isa<ml_program::GlobalStoreOp>(use.getOwner());
    });
  }
}

/// True for an op whose float results do not follow from float operands
/// (constants, ConstantOfShape, random generators): its results are cast.
bool isFloatSource(Operation *op) {
  return llvm::none_of(op->getOperandTypes(), [](Type t) {
    auto s = llvm::dyn_cast<ShapedType>(t);
    return s && llvm::isa<FloatType>(s.getElementType());
  });
}

struct TrainMixedPrecisionPass
    : public hetpar::impl::TrainMixedPrecisionPassBase<
          TrainMixedPrecisionPass> {
  using Base::Base;

  /// Runs `op` in float32: its operands that became 16-bit are cast back (a
  /// float32 value cast to 16 bits is used as it was, unrounded).
  void keepInF32(Operation *op, Type half) {
    OpBuilder b(op);
    Type f32 = b.getF32Type();
    for (OpOperand &use : op->getOpOperands()) {
      auto s = llvm::dyn_cast<ShapedType>(use.get().getType());
      if (!s || s.getElementType() != half)
        continue;
      auto cast = use.get().getDefiningOp<onnx::CastOp>();
      if (cast && isF32Tensor(cast.getInput().getType()))
        use.set(cast.getInput());
      else
        use.set(castAfter(b, use.get(), f32));
    }
  }

  /// Gives `op`'s float32 results the 16-bit type `half` (a Cast to float32
  /// casts to `half`), or casts them when `op` is a float source.
  void retype(Operation *op, Type half) {
    if (auto cast = llvm::dyn_cast<onnx::CastOp>(op)) {
      if (cast.getTo().isF32()) {
        cast.setTo(half);
        cast.getResult().setType(
            llvm::cast<TensorType>(withElement(cast.getType(), half)));
      } else {
        castUses(cast.getResult(), half);
      }
      return;
    }
    if (llvm::isa<ml_program::GlobalLoadOp>(op) || isFloatSource(op)) {
      for (Value r : op->getResults())
        castUses(r, half);
      return;
    }
    for (Value r : op->getResults())
      if (isF32Tensor(r.getType()))
        r.setType(withElement(r.getType(), half));
  }

  /// Casts the return's operands back to the function's result types.
  void castResults(func::FuncOp func, func::ReturnOp ret) {
    OpBuilder b(ret);
    for (auto [operand, type] :
         llvm::zip(ret->getOpOperands(), func.getResultTypes()))
      if (operand.get().getType() != type)
        operand.set(castAfter(b, operand.get(),
                              llvm::cast<ShapedType>(type).getElementType()));
  }

  /// hetpar.loss_scale and hetpar.good_steps for float16.
  LogicalResult addLossScaling(ModuleOp module, func::FuncOp func) {
    SymbolTable symbols(module);
    if (symbols.lookup(train::kLossScaleGlobal))
      return module.emitError()
             << "the module already has a global @" << train::kLossScaleGlobal;
    OpBuilder top(func);
    auto add = [&](StringRef name, Attribute value) {
      auto type =
          llvm::cast<RankedTensorType>(llvm::cast<TypedAttr>(value).getType());
      auto g = ml_program::GlobalOp::create(top, func.getLoc(), name, type,
                                            /*is_mutable=*/true, value,
                                            top.getStringAttr("private"));
      g->setAttr(train::kRoleAttr, top.getStringAttr("state"));
      symbols.insert(g);
      return g;
    };
    auto f32 = RankedTensorType::get({}, top.getF32Type());
    auto i64 = RankedTensorType::get({}, top.getI64Type());
    auto scale = add(train::kLossScaleGlobal,
                     DenseElementsAttr::get(
                         f32, top.getF32FloatAttr(train::kInitialLossScale)));
    add(train::kGoodStepsGlobal,
        DenseElementsAttr::get(i64, top.getI64IntegerAttr(0)));
    func->setAttr(train::kLossScaleAttr, FlatSymbolRefAttr::get(scale));
    return success();
  }

  LogicalResult convert(ModuleOp module, func::FuncOp func) {
    if (dtype != "bfloat16" && dtype != "float16")
      return module.emitError() << "mixed precision: unknown dtype '" << dtype
                                << "' (bfloat16 or float16)";
    MLIRContext *ctx = module.getContext();
    Type half = dtype == "bfloat16" ? Type(BFloat16Type::get(ctx))
                                    : Type(Float16Type::get(ctx));
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    Value loss = ret.getNumOperands() ? ret.getOperand(0) : Value();
    auto lt = loss ? llvm::dyn_cast<RankedTensorType>(loss.getType()) : nullptr;
    if (!lt || lt.getRank() != 0 || !lt.getElementType().isF32())
      return func.emitError() << "mixed precision: the loss (result 0) must be "
                                 "a float32 scalar";
    Operation *lossOp = loss.getDefiningOp();
    for (BlockArgument a : func.getArguments())
      castUses(a, half);
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      // The casts made for sources above are already in place.
      if (auto c = llvm::dyn_cast<onnx::CastOp>(op);
          c && c.getTo() == half && isF32Tensor(c.getInput().getType()))
        continue;
      if (op == lossOp) {
        keepInF32(op, half);
      } else if (updatesState(op)) {
        keepInF32(op, half);
        castResultsForUsers(op, half);
      } else if (!llvm::isa<ml_program::GlobalStoreOp>(op)) {
        retype(op, half);
      }
    }
    castResults(func, ret);
    if (dtype == "float16")
      return addLossScaling(module, func);
    return success();
  }

  void runOnOperation() override {
    auto func = train::stepFunction(getOperation());
    if (failed(func) || failed(convert(getOperation(), *func)))
      signalPassFailure();
  }
};
} // namespace
