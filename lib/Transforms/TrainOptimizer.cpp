//===- TrainOptimizer.cpp - optimizer state, schedule, clipping, updates --===//
#include "TrainStepControl.h"

#include "hetpar/Dialect/Dist/DistOps.h"
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

std::string
hetpar::trainOptimizerOptionsError(const TrainOptimizerPassOptions &o) {
  const std::string &opt = o.optimizer;
  if (opt != "adamw" && opt != "sgd" && opt != "none")
    return "unknown optimizer '" + opt + "' (adamw, sgd, none)";
  if (!(o.lr > 0) || !std::isfinite(o.lr))
    return "the learning rate must be positive, not " + std::to_string(o.lr);
  if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
    return "betas must be in [0, 1)";
  if (!(o.eps > 0))
    return "eps must be positive";
  // Whether the optimizer has momentum at all comes first: "give a
  // momentum" would mislead a user of adamw who set nesterov.
  if ((o.momentum > 0 || o.nesterov) && opt != "sgd")
    return "momentum and nesterov are SGD's; optimizer '" + opt +
           "' has none (give optimizer sgd)";
  if (o.momentum < 0 || (o.nesterov && o.momentum <= 0))
    return "momentum must be >= 0, and > 0 with nesterov";
  if (o.clipGradNorm < 0)
    return "clip-grad-norm must be >= 0";
  if (o.schedule != "constant" && o.schedule != "warmup-cosine")
    return "unknown schedule '" + o.schedule + "' (constant, warmup-cosine)";
  if (o.schedule == "warmup-cosine" &&
      (o.warmupSteps < 0 || o.totalSteps <= o.warmupSteps))
    return "warmup-cosine needs 0 <= warmup-steps < total-steps";
  if (o.minLr < 0 || o.minLr > o.lr)
    return "min-lr must be in [0, lr]";
  if (o.accumulate < 1)
    return "grad-accumulation-steps must be at least 1";
  if (o.accumulate > 1 && opt == "none")
    return "gradient accumulation needs an optimizer (adamw or sgd)";
  return "";
}

namespace {
/// A parameter the step updates: its global, its gradient (a ZeRO-1 shard
/// under train::kZeroSizesAttr) and the gradient's result number.
struct Param {
  ml_program::GlobalOp global;
  Value grad;
  unsigned result;
};

struct TrainOptimizerPass
    : public hetpar::impl::TrainOptimizerPassBase<TrainOptimizerPass> {
  using Base::Base;

  LogicalResult checkOptions(Operation *at) {
    TrainOptimizerPassOptions o;
    o.optimizer = optimizer;
    o.lr = lr;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.momentum = momentum;
    o.nesterov = nesterov;
    o.clipGradNorm = clipGradNorm;
    o.schedule = schedule;
    o.warmupSteps = warmupSteps;
    o.totalSteps = totalSteps;
    o.minLr = minLr;
    o.accumulate = accumulate;
    std::string why = trainOptimizerOptionsError(o);
    if (!why.empty())
      return at->emitError() << "optimizer: " << why;
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

  /// Zero-initialized optimizer state PARAM.SLOT of `param`'s type, or
  /// with a ZeRO-1 `shard` (offset, elements) of the shard's: a vector of
  /// that many elements marked with its offset (train::kShardOffsetAttr).
  ml_program::GlobalOp
  addState(OpBuilder &top, SymbolTable &symbols, ml_program::GlobalOp param,
           StringRef slot,
           std::optional<std::pair<int64_t, int64_t>> shard = std::nullopt) {
    auto type = llvm::cast<RankedTensorType>(param.getType());
    if (shard)
      type = RankedTensorType::get({shard->second}, type.getElementType());
    auto s =
        addGlobal(top, symbols, param.getLoc(),
                  (param.getSymName() + "." + slot).str(), type, "optimizer");
    s->setAttr(train::kStateOfAttr, FlatSymbolRefAttr::get(param));
    s->setAttr(train::kSlotAttr, top.getStringAttr(slot));
    if (shard)
      s->setAttr(train::kShardOffsetAttr, top.getI64IntegerAttr(shard->first));
    return s;
  }

  /// The elements [offset, offset + n) of the flattened parameter value.
  static Value shardOfParam(GradientBuilder &g, Value param,
                            std::pair<int64_t, int64_t> shard) {
    auto t = llvm::cast<RankedTensorType>(param.getType());
    Value flat = g.reshape(param, {t.getNumElements()});
    Value from = g.i64s({shard.first});
    Value to = g.i64s({shard.first + shard.second});
    return g.make<onnx::SliceOp>(flat, from, to, g.i64s({0}), Value());
  }

  /// The whole parameter from every replica's updated shard (one
  /// all-gather over train::kZeroGroupAttr), in the parameter's shape.
  static Value gatherParam(OpBuilder &b, Location loc, func::FuncOp func,
                           const Param &p, Value shard) {
    ml_program::GlobalOp global = p.global;
    auto type = llvm::cast<RankedTensorType>(global.getType());
    auto sizes = func.getResultAttrOfType<DenseI64ArrayAttr>(
        p.result, train::kZeroSizesAttr);
    auto group = func->getAttrOfType<DenseI64ArrayAttr>(train::kZeroGroupAttr);
    Value whole = dist::AllGatherOp::create(
        b, loc,
        RankedTensorType::get({type.getNumElements()}, type.getElementType()),
        shard, FlatSymbolRefAttr::get(b.getContext(), "mesh"), group,
        b.getI64IntegerAttr(0), sizes);
    GradientBuilder g(b, loc, {});
    return g.reshape(whole, type.getShape());
  }

  Value load(OpBuilder &b, Location loc, ml_program::GlobalOp g) {
    return ml_program::GlobalLoadOp::create(b, loc, g.getType(),
                                            FlatSymbolRefAttr::get(g));
  }
  void store(OpBuilder &b, Location loc, ml_program::GlobalOp g, Value v) {
    ml_program::GlobalStoreOp::create(b, loc, FlatSymbolRefAttr::get(g), v);
  }

  /// Under gradient accumulation every microbatch draws its own Dropout
  /// masks: the masks' counter (hetpar-train-dropout's step operand) becomes
  /// train::microbatchMaskCounter of the step and microbatch counters.
  void countMasksByMicrobatch(func::FuncOp func, ml_program::GlobalOp stepG,
                              ml_program::GlobalOp microG) {
    SmallVector<onnx::DropoutOp> drops;
    func.walk([&](onnx::DropoutOp d) {
      if (d.getStep())
        drops.push_back(d);
    });
    if (drops.empty())
      return;
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    GradientBuilder g(b, func.getLoc(), {});
    Value step = load(b, func.getLoc(), stepG);
    Value micro = load(b, func.getLoc(), microG);
    Value counter = train::microbatchMaskCounter(g, step, accumulate, micro);
    for (onnx::DropoutOp d : drops)
      d.getStepMutable().assign(counter);
  }

  /// A norm over several devices (train::kNormGroupAttr), as
  /// hetpar-dist-reduce-gradients marked it: the group, and the weight of
  /// each of `params`.
  static void readNormGroup(func::FuncOp func, ArrayRef<Param> params,
                            train::GradScaleInputs &in) {
    auto group = func->getAttrOfType<DenseI64ArrayAttr>(train::kNormGroupAttr);
    if (!group)
      return;
    in.normGroup.assign(group.asArrayRef().begin(), group.asArrayRef().end());
    for (const Param &p : params) {
      auto w =
          func.getResultAttrOfType<FloatAttr>(p.result, train::kNormWeightAttr);
      in.normWeights.push_back(w ? w.getValueAsDouble() : 1.0);
    }
  }

  /// ZeRO-1: this device's shard of `p` (its flattened elements [offset,
  /// offset + sizes[me])), from train::kZeroSizesAttr; nullopt when whole.
  static std::optional<std::pair<int64_t, int64_t>> shardOf(func::FuncOp func,
                                                            const Param &p) {
    auto sizes = func.getResultAttrOfType<DenseI64ArrayAttr>(
        p.result, train::kZeroSizesAttr);
    auto group = func->getAttrOfType<DenseI64ArrayAttr>(train::kZeroGroupAttr);
    auto device = func->getAttrOfType<IntegerAttr>("dist.device");
    if (!sizes || !group || !device)
      return std::nullopt;
    int64_t offset = 0;
    for (auto [id, n] : llvm::zip(group.asArrayRef(), sizes.asArrayRef())) {
      if (id == device.getInt())
        return std::make_pair(offset, n);
      offset += n;
    }
    return std::nullopt;
  }

  LogicalResult apply(ModuleOp module, func::FuncOp func) {
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    SmallVector<Param> params;
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
      // No path to the loss: the parameter stays as it is
      // (train::kNoGradientAttr).
      if (!func.getResultAttr(i, train::kNoGradientAttr))
        params.push_back({g, ret.getOperand(i), i});
    }
    // A pipeline stage without parameters (it only passes activations and
    // gradients on) still counts the steps (its Dropout masks read them).
    if (ret.getNumOperands() < 2 && !func->hasAttr("dist.device"))
      return func.emitError("optimizer: the function returns no gradients");
    // hetpar-train-dropout may have made it already (its masks read it).
    auto stepGlobal = train::getOrCreateStepGlobal(module, func);
    SymbolTable symbols(module);
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    top.setInsertionPoint(func);
    Location loc = func.getLoc();
    auto i64 = RankedTensorType::get({}, top.getI64Type());

    OpBuilder b(ret);
    GradientBuilder g(b, loc, {});
    Value before = load(b, loc, stepGlobal);
    if (params.empty()) {
      store(b, loc, stepGlobal, g.add(before, g.scalar(1.0, before)));
      // The other stages' norm needs this device's (empty) share.
      train::GradScaleInputs none;
      readNormGroup(func, {}, none);
      if (!none.normGroup.empty() &&
          (clipGradNorm > 0 || func->hasAttr(train::kLossScaleAttr)))
        dist::AllReduceOp::create(
            b, NameLoc::get(b.getStringAttr("the step's gradient norm"), loc),
            RankedTensorType::get({}, b.getF32Type()),
            onnx::ConstantOp::create(
                b, loc,
                DenseElementsAttr::get(
                    RankedTensorType::get({}, b.getF32Type()), 0.0f)),
            FlatSymbolRefAttr::get(b.getContext(), "mesh"),
            b.getDenseI64ArrayAttr(none.normGroup),
            dist::ReductionKindAttr::get(b.getContext(),
                                         dist::ReductionKind::Sum));
      returnLossOnly(func);
      return success();
    }
    // Gradient accumulation: sum into PARAM.grad_accum; update on the last.
    train::GradScaleInputs in;
    in.clipGradNorm = clipGradNorm;
    in.microbatches = accumulate;
    Value micro;
    ml_program::GlobalOp microGlobal;
    if (accumulate > 1) {
      microGlobal =
          addGlobal(top, symbols, loc, train::kMicrobatchGlobal, i64, "state");
      microGlobal->setAttr(train::kZeroBetweenStepsAttr, top.getUnitAttr());
      micro = load(b, loc, microGlobal);
      countMasksByMicrobatch(func, stepGlobal, microGlobal);
      in.apply = train::equals(g, micro, accumulate - 1);
      Value first = train::equals(g, micro, 0);
      for (Param &p : params) {
        auto acc =
            addState(top, symbols, p.global, "grad_accum", shardOf(func, p));
        acc->setAttr(train::kZeroBetweenStepsAttr, top.getUnitAttr());
        Value sum = g.make<onnx::WhereOp>(
            first, p.grad, g.add(load(b, p.global.getLoc(), acc), p.grad));
        store(b, p.global.getLoc(), acc, sum);
        p.grad = sum;
      }
    }
    Value step = in.apply ? g.add(before, g.cast(in.apply, top.getI64Type()))
                          : g.add(before, g.scalar(1.0, before));
    train::Schedule sc{schedule, lr, minLr, warmupSteps, totalSteps};
    Value rate = train::learningRate(g, sc, before);
    // Dynamic loss scaling (hetpar-train-mixed-precision, float16).
    ml_program::GlobalOp scaleGlobal, goodGlobal;
    if (auto s =
            func->getAttrOfType<FlatSymbolRefAttr>(train::kLossScaleAttr)) {
      scaleGlobal = symbols.lookup<ml_program::GlobalOp>(s.getValue());
      goodGlobal =
          symbols.lookup<ml_program::GlobalOp>(train::kGoodStepsGlobal);
      if (!scaleGlobal || !goodGlobal)
        return func.emitError() << "optimizer: the loss scale " << s << " or @"
                                << train::kGoodStepsGlobal << " is missing";
      in.lossScale = load(b, loc, scaleGlobal);
    }
    SmallVector<Value> grads;
    for (const Param &p : params)
      grads.push_back(p.grad);
    readNormGroup(func, params, in);
    Value finite;
    Value scale = train::gradScale(g, grads, in, finite);
    double wd = weightDecay >= 0 ? weightDecay.getValue()
                                 : (optimizer == "adamw" ? 0.01 : 0.0);
    for (const Param &p : params) {
      ml_program::GlobalOp param = p.global;
      auto shard = shardOf(func, p);
      auto type = llvm::cast<RankedTensorType>(p.grad.getType());
      Location ploc = param.getLoc();
      auto state = [&](StringRef slot) {
        return addState(top, symbols, param, slot, shard);
      };
      SmallVector<ml_program::GlobalOp> targets{param};
      SmallVector<Value> operands{load(b, ploc, param), p.grad};
      if (shard)
        operands[0] = shardOfParam(g, operands[0], *shard);
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
      SmallVector<Value> updated(update->getResults());
      if (shard)
        updated[0] = gatherParam(b, ploc, func, p, updated[0]);
      for (auto [t, r] : llvm::zip(targets, updated))
        store(b, ploc, t, r);
    }
    // Last: everything above read the counters before this update.
    if (in.lossScale) {
      auto [nextScale, nextGood] = train::nextLossScale(
          g, in.lossScale, load(b, loc, goodGlobal), finite, in.apply);
      store(b, loc, scaleGlobal, nextScale);
      store(b, loc, goodGlobal, nextGood);
    }
    if (microGlobal) {
      Value zero = g.scalar(0.0, micro);
      Value next = g.add(micro, g.scalar(1.0, micro));
      store(b, loc, microGlobal, g.make<onnx::WhereOp>(in.apply, zero, next));
    }
    store(b, loc, stepGlobal, step);
    returnLossOnly(func);
    return success();
  }

  /// The step returns its loss (result 0) only: the optimizer consumed the
  /// gradients.
  static void returnLossOnly(func::FuncOp func) {
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() < 2)
      return;
    ret->setOperands(ret.getOperand(0));
    DictionaryAttr lossAttrs = func.getResultAttrDict(0);
    func.setFunctionType(FunctionType::get(func.getContext(),
                                           func.getArgumentTypes(),
                                           {ret.getOperand(0).getType()}));
    SmallVector<DictionaryAttr> attrs{
        lossAttrs ? lossAttrs : DictionaryAttr::get(func.getContext())};
    func.setAllResultAttrs(attrs);
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
