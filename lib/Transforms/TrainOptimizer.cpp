//===- TrainOptimizer.cpp - optimizer state, schedule, clipping, updates --===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include <cmath>

namespace hetpar {
#define GEN_PASS_DEF_TRAINOPTIMIZERPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
struct TrainOptimizerPass
    : public hetpar::impl::TrainOptimizerPassBase<TrainOptimizerPass> {
  using Base::Base;

  LogicalResult checkOptions(Operation *at) {
    auto bad = [&](const llvm::Twine &what) {
      return at->emitError() << "optimizer: " << what;
    };
    if (optimizer != "adamw" && optimizer != "sgd" && optimizer != "none")
      return bad("unknown optimizer '" + optimizer + "' (adamw, sgd, none)");
    if (!(lr > 0) || !std::isfinite(lr))
      return bad("the learning rate must be positive, not " +
                 std::to_string(static_cast<double>(lr)));
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
      return bad("betas must be in [0, 1)");
    if (!(eps > 0))
      return bad("eps must be positive");
    if (momentum < 0 || (nesterov && momentum <= 0))
      return bad("momentum must be >= 0, and > 0 with nesterov");
    if (clipGradNorm < 0)
      return bad("clip-grad-norm must be >= 0");
    if (schedule != "constant" && schedule != "warmup-cosine")
      return bad("unknown schedule '" + schedule +
                 "' (constant, warmup-cosine)");
    if (schedule == "warmup-cosine" &&
        (warmupSteps < 0 || totalSteps <= warmupSteps))
      return bad("warmup-cosine needs 0 <= warmup-steps < total-steps");
    if (minLr < 0 || minLr > lr)
      return bad("min-lr must be in [0, lr]");
    return success();
  }

  /// A zero-initialized mutable global next to `param`.
  ml_program::GlobalOp addGlobal(OpBuilder &top, SymbolTable &symbols,
                                 Location loc, StringRef name,
                                 RankedTensorType type, StringRef role) {
    auto value =
        DenseElementsAttr::get(type, top.getZeroAttr(type.getElementType()));
    auto g = ml_program::GlobalOp::create(top, loc, name, type, true, value,
                                          top.getStringAttr("private"));
    g->setAttr(train::kRoleAttr, top.getStringAttr(role));
    symbols.insert(g);
    return g;
  }

  Value load(OpBuilder &b, Location loc, ml_program::GlobalOp g) {
    return ml_program::GlobalLoadOp::create(b, loc, g.getType(),
                                            FlatSymbolRefAttr::get(g));
  }
  void store(OpBuilder &b, Location loc, ml_program::GlobalOp g, Value v) {
    ml_program::GlobalStoreOp::create(b, loc, FlatSymbolRefAttr::get(g), v);
  }

  /// The learning rate of update number t (t >= 1) from the steps taken
  /// before it (t - 1), as Hugging Face's get_cosine_schedule_with_warmup
  /// does with a LambdaLR stepped once per update.
  Value learningRate(GradientBuilder &g, Value stepsBefore) {
    Value s = g.cast(stepsBefore, g.builder().getF32Type());
    Value base = g.scalar(lr, s);
    if (schedule == "constant")
      return base;
    double w = static_cast<double>(warmupSteps),
           t = static_cast<double>(totalSteps);
    Value prog = g.div(g.sub(s, g.scalar(w, s)), g.scalar(t - w, s));
    prog = g.create<onnx::MaxOp>(1, g.elementType(s),
                                 ValueRange{prog, g.scalar(0.0, s)})
               ->getResult(0);
    prog = g.create<onnx::MinOp>(1, g.elementType(s),
                                 ValueRange{prog, g.scalar(1.0, s)})
               ->getResult(0);
    Value c = g.make<onnx::CosOp>(g.mul(prog, g.scalar(M_PI, s)));
    Value cosine =
        g.add(g.scalar(minLr, s), g.mul(g.scalar(0.5 * (lr - minLr), s),
                                        g.add(g.scalar(1.0, s), c)));
    if (warmupSteps == 0)
      return cosine;
    Value warm = g.mul(base, g.div(s, g.scalar(w, s)));
    Operation *lt =
        g.create<onnx::LessOp>(1, g.builder().getI1Type(), s, g.scalar(w, s));
    return g.make<onnx::WhereOp>(lt->getResult(0), warm, cosine);
  }

  /// min(1, max_norm / (||grads||_2 + 1e-6)), torch.nn.utils.clip_grad_norm_'s
  /// coefficient; 1 without clipping.
  Value gradScale(GradientBuilder &g, ArrayRef<Value> grads) {
    Value one = g.scalar(1.0, grads.front());
    if (clipGradNorm == 0)
      return g.cast(one, g.builder().getF32Type());
    Value total;
    for (Value d : grads) {
      Value sq =
          g.make<onnx::ReduceSumSquareOp>(d, Value(), int64_t(0), int64_t(0));
      total = total ? g.add(total, sq) : sq;
    }
    Value norm = g.make<onnx::SqrtOp>(total);
    Value coef =
        g.div(g.scalar(clipGradNorm, norm), g.add(norm, g.scalar(1e-6, norm)));
    Value clipped =
        g.create<onnx::MinOp>(1, g.elementType(coef), ValueRange{coef, one})
            ->getResult(0);
    return g.cast(clipped, g.builder().getF32Type());
  }

  LogicalResult apply(ModuleOp module, func::FuncOp func) {
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    SmallVector<std::pair<ml_program::GlobalOp, Value>> params;
    for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
      auto of = func.getResultAttrOfType<FlatSymbolRefAttr>(
          i, train::kGradientOfAttr);
      auto g = of ? SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(
                        func, of)
                  : nullptr;
      if (!g)
        return func.emitError() << "optimizer: result " << i
                                << " is not a parameter's gradient (run "
                                   "hetpar-onnx-differentiate first)";
      params.push_back({g, ret.getOperand(i)});
    }
    if (params.empty())
      return func.emitError("optimizer: the function returns no gradients");
    // hetpar-train-dropout may have made it already (its masks read it).
    auto stepGlobal = train::getOrCreateStepGlobal(module, func);
    SymbolTable symbols(module);
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    top.setInsertionPoint(func);
    Location loc = func.getLoc();

    OpBuilder b(ret);
    GradientBuilder g(b, loc, {});
    Value before = load(b, loc, stepGlobal);
    Value step = g.add(before, g.scalar(1.0, before));
    Value rate = learningRate(g, before);
    SmallVector<Value> grads;
    for (auto &p : params)
      grads.push_back(p.second);
    Value scale = gradScale(g, grads);
    double wd = weightDecay >= 0 ? weightDecay.getValue()
                                 : (optimizer == "adamw" ? 0.01 : 0.0);
    for (auto [param, grad] : params) {
      auto type = llvm::cast<RankedTensorType>(param.getType());
      std::string name = param.getSymName().str();
      Location ploc = param.getLoc();
      auto state = [&](StringRef slot) {
        auto s = addGlobal(top, symbols, ploc, name + "." + slot.str(), type,
                           "optimizer");
        s->setAttr(train::kStateOfAttr, FlatSymbolRefAttr::get(param));
        s->setAttr(train::kSlotAttr, top.getStringAttr(slot));
        return s;
      };
      SmallVector<ml_program::GlobalOp> targets{param};
      SmallVector<Value> operands{load(b, ploc, param), grad};
      if (optimizer == "adamw") {
        targets.push_back(state("exp_avg"));
        targets.push_back(state("exp_avg_sq"));
        operands.push_back(load(b, ploc, targets[1]));
        operands.push_back(load(b, ploc, targets[2]));
      } else if (momentum > 0) {
        targets.push_back(state("momentum_buffer"));
        operands.push_back(load(b, ploc, targets[1]));
      }
      Operation *update;
      SmallVector<Type> types(targets.size(), type);
      if (optimizer == "adamw")
        update = onnx::AdamWOptimizerOp::create(
            b, ploc, types, operands[0], operands[1], operands[2], operands[3],
            rate, step, scale, b.getF32FloatAttr(beta1),
            b.getF32FloatAttr(beta2), b.getF32FloatAttr(eps),
            b.getF32FloatAttr(wd));
      else
        update = onnx::SGDOptimizerOp::create(
            b, ploc, types, operands[0], operands[1],
            momentum > 0 ? operands[2] : Value(), rate, step, scale,
            b.getF32FloatAttr(momentum), b.getI64IntegerAttr(nesterov ? 1 : 0),
            b.getF32FloatAttr(wd));
      for (auto [t, r] : llvm::zip(targets, update->getResults()))
        store(b, ploc, t, r);
    }
    // Last: everything above read the step count before this update.
    store(b, loc, stepGlobal, step);
    ret->setOperands(ret.getOperand(0));
    DictionaryAttr lossAttrs = func.getResultAttrDict(0);
    func.setFunctionType(FunctionType::get(func.getContext(),
                                           func.getArgumentTypes(),
                                           {ret.getOperand(0).getType()}));
    SmallVector<DictionaryAttr> attrs{lossAttrs ? lossAttrs
                                                : b.getDictionaryAttr({})};
    func.setAllResultAttrs(attrs);
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkOptions(module)))
      return signalPassFailure();
    if (optimizer == "none")
      return;
    auto func = train::stepFunction(module);
    if (failed(func) || failed(apply(module, *func)))
      signalPassFailure();
  }
};
} // namespace
