//===- EmitOp.cpp - every other op ----------------------------------------===//
//
// emitOp: the dispatch of one op to its emitter, and the families of
// library-kernel ops it tries in turn (tryEmit*): windows and pooling,
// reductions, normalizations and losses, layout ops.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

namespace hetpar::codegen::emitter {

LogicalResult Emitter::emitPool(Operation *op, bool isMax) {
  Value X = op->getOperand(0), Y = op->getResult(0);
  llvm::ArrayRef<int64_t> y = shapeOf(Y);
  size_t nsp = shapeOf(X).size() - 2;
  Window win = windowOf(op, intsAttr(op, "kernel_shape"));
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  Type elt = eltOf(Y);
  std::string indices = "(int64_t *)0";
  if (op->getNumResults() > 1 && op->getResult(1))
    indices = ptr(op->getResult(1));
  line(llvm::formatv("hp_pool_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, "
                     "{6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, "
                     "{16}, {17}, {18});",
                     storageType(elt), accType(elt), isMax ? "true" : "false",
                     numel(y), nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
                     hpDims(win.stride), hpDims(win.padBegin),
                     hpDims(win.padEnd), hpDims(win.dilation),
                     intAttr(op, "count_include_pad", 0), numel(k), numel(inSp),
                     numel(outSp), ptr(X), ptr(Y), indices));
  ++program.libraryCalls;
  return success();
}

/// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: hp_loss_rows per
/// target position, then hp_loss_reduce for "sum" and "mean".
/// The attributes the ONNX losses and their gradients share: ignore_index
/// (null when absent), and whether the reduction is "none" or "mean".
static std::tuple<IntegerAttr, bool, bool> lossAttrs(Operation *op) {
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  auto reduction = op->getAttrOfType<StringAttr>("reduction");
  bool none = reduction && reduction.getValue() == "none";
  bool mean = !reduction || reduction.getValue() == "mean";
  return {ignore, none, mean};
}

LogicalResult Emitter::emitLoss(Operation *op) {
  bool softmax = isa<onnx::SoftmaxCrossEntropyLossOp>(op);
  Value x = op->getOperand(0), labels = op->getOperand(1);
  Value weight = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  Value loss = op->getResult(0);
  Value logProb = op->getNumResults() > 1 ? op->getResult(1) : Value();
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t C = s[1], D = numel(s.drop_front(2));
  auto [ignore, none, mean] = lossAttrs(op);
  Type elt = eltOf(x);
  std::string T = storageType(elt), A = accType(elt);
  std::string rows = "((" + A + " *)" + scratch(op) + ")";
  std::string rowWeights =
      "((" + A + " *)(" + scratch(op) + " + " +
      std::to_string(numelOf(labels) * (elt.isF64() ? 8 : 4)) + "))";
  std::string nullT = "(" + T + " *)0", nullA = "(" + A + " *)0";
  line(llvm::formatv(
      "hp_launch(ctx, hp_loss_rows<{0}, {1}, {2}, {3}>, {4}, {5}, {6}, {7}, "
      "{8}LL, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16});",
      T, storageType(eltOf(labels)), A, softmax ? "true" : "false",
      numelOf(labels), C, D, ignore ? 1 : 0,
      ignore ? ignore.getValue().getSExtValue() : 0, ptr(x), ptr(labels),
      weight ? ptr(weight) : "(const " + T + " *)0",
      logProb && !logProb.use_empty() ? ptr(logProb) : nullT,
      none ? ptr(loss) : nullT, none ? nullA : rows, none ? nullA : rowWeights,
      indexCheck(op)));
  ++program.libraryCalls;
  if (!none) {
    line(llvm::formatv("hp_launch(ctx, hp_loss_reduce<{0}, {1}>, 1, {2}, "
                       "{3}, {4}, {5}, {6});",
                       T, A, numelOf(labels), mean ? 1 : 0, rows, rowWeights,
                       ptr(loss)));
    ++program.libraryCalls;
  }
  return success();
}

/// SoftmaxCrossEntropyLossGrad and NegativeLogLikelihoodLossGrad:
/// hp_loss_weight_sum for "mean", then hp_loss_grad per element.
LogicalResult Emitter::emitLossGrad(Operation *op) {
  bool softmax = isa<onnx::SoftmaxCrossEntropyLossGradOp>(op);
  Value dY = op->getOperand(0), x = op->getOperand(1),
        labels = op->getOperand(2);
  Value weight = op->getNumOperands() > 3 ? op->getOperand(3) : Value();
  Value dX = op->getResult(0);
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t C = s[1], D = numel(s.drop_front(2));
  auto [ignore, none, mean] = lossAttrs(op);
  Type elt = eltOf(x);
  std::string T = storageType(elt), A = accType(elt),
              L = storageType(eltOf(labels));
  std::string norm = "((" + A + " *)" + scratch(op) + ")";
  std::string weightPtr = weight ? ptr(weight) : "(const " + T + " *)0";
  int64_t ignoreIndex = ignore ? ignore.getValue().getSExtValue() : 0;
  if (mean) {
    line(llvm::formatv("hp_launch(ctx, hp_loss_weight_sum<{0}, {1}, {2}>, 1, "
                       "{3}, {4}, {5}, {6}LL, {7}, {8}, {9});",
                       T, L, A, numelOf(labels), C, ignore ? 1 : 0, ignoreIndex,
                       ptr(labels), weightPtr, norm));
    ++program.libraryCalls;
  }
  line(llvm::formatv(
      "hp_launch(ctx, hp_loss_grad<{0}, {1}, {2}, {3}>, {4}, {5}, {6}, {7}, "
      "{8}LL, {9}, {10}, {11}, {12}, {13}, {14}, {15});",
      T, L, A, softmax ? "true" : "false", numelOf(dX), C, D, ignore ? 1 : 0,
      ignoreIndex, none ? 1 : 0, ptr(dY),
      softmax ? ptr(x) : "(const " + T + " *)0", ptr(labels), weightPtr,
      mean ? norm : "(const " + A + " *)0", ptr(dX)));
  ++program.libraryCalls;
  return success();
}

LibraryEmitContext Emitter::libraryContext() {
  return LibraryEmitContext{[&](Value v) { return ptr(v); },
                            [&](Type t) { return storageType(t); },
                            [](Type t) { return accType(t); },
                            [&](Operation *o) { return scratch(o); },
                            [&](const llvm::Twine &text) { line(text); },
                            [&](Operation *o) { return indexCheck(o); },
                            [&](const std::string &src, const std::string &dst,
                                int64_t n,
                                Type elt) { emitCopy(src, dst, n, elt); }};
}

LogicalResult Emitter::emitReduce(Operation *op, Value in, Value out,
                                  llvm::ArrayRef<int64_t> axes,
                                  llvm::StringRef kind) {
  llvm::ArrayRef<int64_t> s = shapeOf(in);
  llvm::SmallVector<int64_t> st = stridesOf(s);
  llvm::SmallVector<bool> reduced(s.size(), false);
  for (int64_t a : axes)
    reduced[a] = true;
  llvm::SmallVector<int64_t> kd, ks, rd, rs;
  for (size_t d = 0; d < s.size(); ++d) {
    if (reduced[d]) {
      rd.push_back(s[d]);
      rs.push_back(st[d]);
    } else {
      kd.push_back(s[d]);
      ks.push_back(st[d]);
    }
  }
  Type elt = eltOf(in);
  line(llvm::formatv("hp_reduce_launch<{0}, {1}, HP_RED_{2}>(ctx, {3}, {4}, "
                     "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12});",
                     storageType(elt), accType(elt), kind, numelOf(out),
                     kd.size(), hpDims(kd), hpDims(ks), rd.size(), hpDims(rd),
                     hpDims(rs), numel(rd), ptr(in), ptr(out)));
  ++program.libraryCalls;
  return success();
}

//===----------------------------------------------------------------------===//
// One op
//===----------------------------------------------------------------------===//

static llvm::SmallVector<int64_t> constInts(Value v) {
  if (!v)
    return {};
  auto vals = getConstantIntValues(v);
  return vals ? *vals : llvm::SmallVector<int64_t>();
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (op->getDialect() && op->getDialect()->getNamespace() ==
                              dist::DistDialect::getDialectNamespace()) {
    comment(op);
    return emitCollective(op);
  }
  if (isElementwise(op))
    return emitElementwiseGroup(op);
  if (isRowGradient(op)) {
    comment(op);
    program.libraryCalls += codegen::emitRowGradient(op, libraryContext());
    return success();
  }
  if (isIndexingOp(op)) {
    comment(op);
    program.libraryCalls += codegen::emitIndexingOp(op, libraryContext());
    return success();
  }
  if (isa<onnx::FusedAttentionOp>(op)) {
    comment(op);
    program.libraryCalls += codegen::emitFusedAttention(op, libraryContext());
    return success();
  }
  if (isa<ml_program::GlobalLoadOp>(op))
    return success(); // aliases the global's storage
  if (isa<ml_program::GlobalStoreOp, onnx::AdamWOptimizerOp,
          onnx::SGDOptimizerOp, onnx::GatherGradOp>(op)) {
    comment(op);
    return emitTrainingOp(op);
  }
  comment(op);
  for (auto family : {&Emitter::tryEmitWindowed, &Emitter::tryEmitReduction,
                      &Emitter::tryEmitNormalization, &Emitter::tryEmitLayout})
    if (std::optional<LogicalResult> done = (this->*family)(op))
      return *done;
  return op->emitError("no code generation for this op");
}

/// GEMMs, convolutions and pooling (EmitGemmOps.cpp); none for another op.
std::optional<LogicalResult> Emitter::tryEmitWindowed(Operation *op) {
  Value out = op->getNumResults() ? op->getResult(0) : Value();
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<onnx::MatMulOp>([&](Operation *o) { return emitMatMul(o); })
      .Case([&](onnx::GemmOp o) { return emitGemm(o); })
      .Case<onnx::ConvOp, onnx::FusedConvOp>(
          [&](Operation *o) { return emitConv(o); })
      .Case([&](onnx::ConvGradOp o) { return emitConvGrad(o); })
      .Case<onnx::MaxPoolGradOp, onnx::AveragePoolGradOp>(
          [&](Operation *o) { return emitPoolGrad(o); })
      .Case([&](onnx::EinsumOp o) { return emitEinsum(o); })
      .Case<onnx::MaxPoolOp>([&](Operation *o) { return emitPool(o, true); })
      .Case<onnx::AveragePoolOp>(
          [&](Operation *o) { return emitPool(o, false); })
      .Case<onnx::GlobalAveragePoolOp, onnx::GlobalMaxPoolOp>(
          [&](Operation *o) {
            llvm::SmallVector<int64_t> axes;
            for (size_t d = 2; d < shapeOf(o->getOperand(0)).size(); ++d)
              axes.push_back(d);
            return emitReduce(o, o->getOperand(0), out, axes,
                              isa<onnx::GlobalMaxPoolOp>(o) ? "MAX" : "MEAN");
          })
      .Default([](Operation *) { return std::nullopt; });
}

/// Reductions, ArgMax/ArgMin and CumSum; none for another op.
std::optional<LogicalResult> Emitter::tryEmitReduction(Operation *op) {
  Value out = op->getNumResults() ? op->getResult(0) : Value();
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<onnx::ReduceMeanOp, onnx::ReduceSumOp, onnx::ReduceMaxOp,
            onnx::ReduceMinOp, onnx::ReduceProdOp, onnx::ReduceL1Op,
            onnx::ReduceL2Op, onnx::ReduceSumSquareOp, onnx::ReduceLogSumExpOp>(
          [&](Operation *o) -> LogicalResult {
            Value in = o->getOperand(0);
            int64_t rank = static_cast<int64_t>(shapeOf(in).size());
            llvm::SmallVector<int64_t> axes =
                o->getNumOperands() > 1 ? constInts(o->getOperand(1))
                                        : llvm::SmallVector<int64_t>();
            if (axes.empty()) {
              if (intAttr(o, "noop_with_empty_axes", 0)) {
                emitCopy(ptr(in), ptr(out), numelOf(in), eltOf(in));
                return success();
              }
              for (int64_t d = 0; d < rank; ++d)
                axes.push_back(d);
            }
            for (int64_t &a : axes)
              a = a < 0 ? a + rank : a;
            llvm::StringRef kind =
                llvm::TypeSwitch<Operation *, llvm::StringRef>(o)
                    .Case<onnx::ReduceMeanOp>([](auto) { return "MEAN"; })
                    .Case<onnx::ReduceSumOp>([](auto) { return "SUM"; })
                    .Case<onnx::ReduceMaxOp>([](auto) { return "MAX"; })
                    .Case<onnx::ReduceMinOp>([](auto) { return "MIN"; })
                    .Case<onnx::ReduceProdOp>([](auto) { return "PROD"; })
                    .Case<onnx::ReduceL1Op>([](auto) { return "L1"; })
                    .Case<onnx::ReduceL2Op>([](auto) { return "L2"; })
                    .Case<onnx::ReduceSumSquareOp>([](auto) { return "SUMSQ"; })
                    .Default([](auto) { return "LOGSUMEXP"; });
            return emitReduce(o, in, out, axes, kind);
          })
      .Case<onnx::ArgMaxOp, onnx::ArgMinOp>([&](Operation *o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t axis = axisOf(in, intAttr(o, "axis", 0));
        int64_t inner = numel(s.drop_front(axis + 1));
        line(llvm::formatv(
            "hp_arg_reduce_launch<{0}, {1}>(ctx, {2}, {3}, {4}, {5}, {6}, "
            "{7});",
            storageType(eltOf(in)), isa<onnx::ArgMaxOp>(o) ? "true" : "false",
            numelOf(out), s[axis], inner, intAttr(o, "select_last_index", 0),
            ptr(in), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::CumSumOp o) {
        Value X = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        int64_t axis = axisOf(X, constInts(o->getOperand(1))[0]);
        int64_t inner = numel(s.drop_front(axis + 1));
        if (numelOf(X) == 0)
          return success();
        line(llvm::formatv("hp_cumsum_launch<{0}, {1}>(ctx, {2}, {3}, {4}, "
                           "{5}, {6}, {7}, {8});",
                           storageType(eltOf(X)), accType(eltOf(X)),
                           numelOf(X) / s[axis], s[axis], inner,
                           intAttr(o, "exclusive", 0), intAttr(o, "reverse", 0),
                           ptr(X), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Softmax, the losses, the normalizations and a Dropout that drops; none
/// for another op.
std::optional<LogicalResult> Emitter::tryEmitNormalization(Operation *op) {
  Value out = op->getNumResults() ? op->getResult(0) : Value();
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case<onnx::SoftmaxOp, onnx::LogSoftmaxOp>([&](Operation *o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t axis = axisOf(in, intAttr(o, "axis", -1));
        int64_t inner = numel(s.drop_front(axis + 1));
        if (numelOf(in) == 0)
          return success();
        line(llvm::formatv("hp_softmax_launch<{0}, {1}, {2}>(ctx, {3}, {4}, "
                           "{5}, {6}, {7});",
                           storageType(eltOf(in)), accType(eltOf(in)),
                           isa<onnx::LogSoftmaxOp>(o) ? "true" : "false",
                           numelOf(in) / s[axis], s[axis], inner, ptr(in),
                           ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case<onnx::SoftmaxCrossEntropyLossOp, onnx::NegativeLogLikelihoodLossOp>(
          [&](Operation *o) { return emitLoss(o); })
      .Case<onnx::SoftmaxCrossEntropyLossGradOp,
            onnx::NegativeLogLikelihoodLossGradOp>(
          [&](Operation *o) { return emitLossGrad(o); })
      .Case([&](onnx::LayerNormalizationOp o) {
        Value X = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        int64_t axis = axisOf(X, intAttr(o, "axis", -1));
        int64_t len = numel(s.drop_front(axis));
        Value scale = o->getOperand(1);
        Value bias = o.getB();
        std::string S = storageType(eltOf(scale));
        auto stat = [&](unsigned i) {
          return o->getNumResults() > i && !o->getResult(i).use_empty()
                     ? ptr(o->getResult(i))
                     : "(" + S + " *)0";
        };
        if (numelOf(X) == 0)
          return success();
        // The elementwise group that computes X, where it runs in this
        // kernel (EmitLayerNormPrologue.cpp).
        std::string prologue = emitLayerNormPrologue(o);
        if (prologue.empty())
          return failure();
        line(llvm::formatv(
            "hp_layer_norm_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, {6}, "
            "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14});",
            storageType(eltOf(X)), S, accType(eltOf(X)), numelOf(X) / len, len,
            floatLiteral(floatAttr(o, "epsilon", 1e-5), false), ptr(X),
            ptr(scale), numelOf(scale),
            bias ? ptr(bias) : "(const " + S + " *)0", bias ? numelOf(bias) : 1,
            ptr(out), stat(1), stat(2), prologue));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::BatchNormalizationOp o) {
        // Training mode (inference BatchNormalization is elementwise).
        Value X = o.getX();
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        std::string S = storageType(eltOf(o.getScale()));
        auto stat = [&](unsigned i) {
          return o.getRunningStats().size() > i ? ptr(o.getRunningStats()[i])
                                                : "(" + S + " *)0";
        };
        line(llvm::formatv(
            "hp_batch_norm_train_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, "
            "{6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15});",
            storageType(eltOf(X)), S, accType(eltOf(X)), s[0], s[1],
            numel(s.drop_front(2)), floatLiteral(o.getEpsilon(), false),
            floatLiteral(o.getMomentum(), false), ptr(X), ptr(o.getScale()),
            ptr(o.getB()), ptr(o.getInputMean()), ptr(o.getInputVar()),
            ptr(out), stat(0), stat(1)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::DropoutOp o) {
        // Training mode (the others are views): Philox masks.
        Value x = o.getData(), ratio = o.getRatio(), mask = o.getMask();
        Value training = o.getTrainingMode(), step = o.getStep();
        auto on = training ? getConstantIntValues(training) : std::nullopt;
        std::string R = ratio ? storageType(eltOf(ratio)) : "float";
        uint64_t seed =
            o.getSeedAttr() ? o.getSeedAttr().getValue().getZExtValue() : 0;
        // Elements [offset, offset + n) of a larger tensor (a replica's
        // rows): the groups of 4 that cover them.
        int64_t offset =
            o.getElementOffsetAttr() ? o.getElementOffsetAttr().getInt() : 0;
        int64_t groups = (offset + numelOf(x) + 3) / 4 - offset / 4;
        line(llvm::formatv(
            "hp_launch(ctx, hp_dropout<{0}, {1}, {2}>, {3}, {4}, {12}LL, "
            "{5}ULL, {6}, {7}, {8}, {9}, {10}, {11});",
            storageType(eltOf(x)), R, accType(eltOf(x)), groups, numelOf(x),
            seed, step ? ptr(step) : "(const int64_t *)0",
            ratio ? ptr(ratio) : "(const float *)0",
            on ? "(const bool *)0" : ptr(training), ptr(x), ptr(out),
            mask ? ptr(mask) : "(bool *)0", offset));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::InstanceNormalizationOp o) {
        Value X = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        int64_t len = numel(s.drop_front(2));
        line(llvm::formatv(
            "hp_launch(ctx, hp_instance_norm<{0}, {1}>, {2}, {3}, "
            "{4}, {5}, {6}, {7}, {8}, {9});",
            storageType(eltOf(X)), accType(eltOf(X)), s[0] * s[1], s[1], len,
            floatLiteral(floatAttr(o, "epsilon", 1e-5), false), ptr(X),
            ptr(o->getOperand(1)), ptr(o->getOperand(2)), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// Layout ops: Transpose, Slice, Expand, Tile, Concat, Split, Pad, Trilu
/// and Resize; none for another op.
std::optional<LogicalResult> Emitter::tryEmitLayout(Operation *op) {
  Value out = op->getNumResults() ? op->getResult(0) : Value();
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(op)
      .Case([&](onnx::ResizeOp o) { return emitResize(o, out); })
      .Case([&](onnx::TransposeOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        llvm::SmallVector<int64_t> perm = intsAttr(o, "perm");
        if (perm.empty())
          for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d)
            perm.push_back(d);
        llvm::SmallVector<int64_t> st = stridesOf(s), in_, mods;
        for (int64_t p : perm)
          in_.push_back(st[p]);
        llvm::ArrayRef<int64_t> y = shapeOf(out);
        emitStridedCopy(in, y, in_, y, 0, ptr(out), stridesOf(y), 0, eltOf(in));
        return success();
      })
      .Case([&](onnx::SliceOp o) -> LogicalResult {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t rank = static_cast<int64_t>(s.size());
        llvm::SmallVector<int64_t> starts = constInts(o.getStarts()),
                                   ends = constInts(o.getEnds()),
                                   axes = constInts(o.getAxes()),
                                   steps = constInts(o.getSteps());
        if (axes.empty())
          for (size_t i = 0; i < starts.size(); ++i)
            axes.push_back(static_cast<int64_t>(i));
        if (steps.empty())
          steps.assign(starts.size(), 1);
        llvm::SmallVector<int64_t> st = stridesOf(s), begin(rank, 0),
                                   step_(rank, 1);
        for (size_t i = 0; i < starts.size(); ++i) {
          int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
          int64_t n = s[a], b = starts[i], stp = steps[i];
          if (b < 0)
            b = b < -n ? 0 : b + n;
          b = stp > 0 ? std::min(b, n) : std::min(b, n - 1);
          begin[a] = b;
          step_[a] = stp;
        }
        int64_t inOff = 0;
        llvm::SmallVector<int64_t> in_;
        for (int64_t d = 0; d < rank; ++d) {
          inOff += begin[d] * st[d];
          in_.push_back(step_[d] * st[d]);
        }
        llvm::ArrayRef<int64_t> y = shapeOf(out);
        emitStridedCopy(in, y, in_, y, inOff, ptr(out), stridesOf(y), 0,
                        eltOf(in));
        return success();
      })
      .Case([&](onnx::ExpandOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in), y = shapeOf(out);
        llvm::SmallVector<int64_t> st = stridesOf(s), in_(y.size(), 0);
        int off = static_cast<int>(y.size() - s.size());
        for (int d = 0; d < static_cast<int>(s.size()); ++d)
          if (s[d] != 1)
            in_[off + d] = st[d];
        emitStridedCopy(in, y, in_, y, 0, ptr(out), stridesOf(y), 0, eltOf(in));
        return success();
      })
      .Case([&](onnx::TileOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in), y = shapeOf(out);
        emitStridedCopy(in, y, stridesOf(s), s, 0, ptr(out), stridesOf(y), 0,
                        eltOf(in));
        return success();
      })
      .Case([&](onnx::ConcatOp o) {
        llvm::ArrayRef<int64_t> y = shapeOf(out);
        int64_t axis = axisOf(out, intAttr(o, "axis", 0));
        llvm::SmallVector<int64_t> ys = stridesOf(y);
        int64_t at = 0;
        for (Value in : o->getOperands()) {
          llvm::ArrayRef<int64_t> s = shapeOf(in);
          emitStridedCopy(in, s, stridesOf(s), s, 0, ptr(out), ys,
                          at * ys[axis], eltOf(in));
          at += s[axis];
        }
        return success();
      })
      .Case([&](onnx::SplitOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t axis = axisOf(in, intAttr(o, "axis", 0));
        llvm::SmallVector<int64_t> st = stridesOf(s);
        int64_t at = 0;
        for (Value r : o->getResults()) {
          llvm::ArrayRef<int64_t> y = shapeOf(r);
          if (!r.use_empty())
            emitStridedCopy(in, y, st, y, at * st[axis], ptr(r), stridesOf(y),
                            0, eltOf(in));
          at += y[axis];
        }
        return success();
      })
      .Case([&](onnx::PadOp o) -> LogicalResult {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in), y = shapeOf(out);
        int64_t rank = static_cast<int64_t>(s.size());
        llvm::SmallVector<int64_t> pads = constInts(o.getPads());
        llvm::SmallVector<int64_t> axes = constInts(o.getAxes());
        if (axes.empty())
          for (int64_t d = 0; d < rank; ++d)
            axes.push_back(d);
        llvm::SmallVector<int64_t> begin(rank, 0);
        for (size_t i = 0; i < axes.size(); ++i)
          begin[axes[i] < 0 ? axes[i] + rank : axes[i]] = pads[i];
        std::string mode = strAttr(o, "mode", "constant");
        int m = mode == "reflect" ? 1
                : mode == "edge"  ? 2
                : mode == "wrap"  ? 3
                                  : 0;
        Value cv = o.getConstantValue();
        std::string st = storageType(eltOf(in));
        line(llvm::formatv(
            "hp_launch(ctx, hp_pad<{0}>, {1}, {2}, {3}, {4}, {5}, "
            "{6}, {7}, {8}, {9});",
            st, numel(y), rank, m, hpDims(y), hpDims(s), hpDims(begin), ptr(in),
            cv && numelOf(cv) ? ptr(cv) : "(const " + st + " *)0", ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::TriluOp o) {
        Value in = o->getOperand(0), k = o.getK();
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        llvm::SmallVector<int64_t> kv = constInts(k);
        // A constant k is a literal; a k computed at run time is read by
        // the kernel from device memory.
        bool runtimeK = k && kv.empty();
        std::string kType = k ? storageType(eltOf(k)) : "int64_t";
        line(llvm::formatv("hp_launch(ctx, hp_trilu<{0}, {1}>, {2}, {3}, {4}, "
                           "{5}, {6}, {7}, {8}, {9});",
                           storageType(eltOf(in)), kType, numelOf(in),
                           s[s.size() - 2], s.back(), kv.empty() ? 0 : kv[0],
                           runtimeK ? ptr(k) : "(const " + kType + " *)0",
                           intAttr(o, "upper", 1), ptr(in), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace hetpar::codegen::emitter
