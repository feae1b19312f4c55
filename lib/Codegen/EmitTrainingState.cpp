//===- EmitTrainingState.cpp - training state -----------------------------===//
//
// A training step's ml_program globals (parameters, optimizer state, the
// step counter) live in weights.bin and are updated in place there; the
// optimizer ops and the stores that write them.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

namespace hetpar::codegen::emitter {

//===----------------------------------------------------------------------===//
// Training state (ml_program globals)
//===----------------------------------------------------------------------===//

ml_program::GlobalOp Emitter::globalOf(Operation *op) {
  SymbolRefAttr sym;
  if (auto l = dyn_cast<ml_program::GlobalLoadOp>(op))
    sym = l.getGlobalAttr();
  else if (auto st = dyn_cast<ml_program::GlobalStoreOp>(op))
    sym = st.getGlobalAttr();
  return sym ? SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op,
                                                                          sym)
             : nullptr;
}

/// The bytes a global starts with (its value; a splat of zeros without
/// expanding element by element).
static FailureOr<std::vector<char>> initialBytes(ml_program::GlobalOp g) {
  auto type = llvm::cast<RankedTensorType>(g.getType());
  auto dense = llvm::dyn_cast_if_present<DenseElementsAttr>(g.getValueAttr());
  if (dense && dense.isSplat()) {
    unsigned bits = type.getElementTypeBitWidth();
    std::vector<char> zeros(type.getNumElements() * (bits == 1 ? 1 : bits / 8));
    bool zero = llvm::isa<FloatType>(type.getElementType())
                    ? dense.getSplatValue<llvm::APFloat>().isZero()
                    : dense.getSplatValue<llvm::APInt>().isZero();
    if (zero)
      return zeros;
  }
  auto elements = llvm::dyn_cast_if_present<ElementsAttr>(g.getValueAttr());
  if (!elements)
    return failure();
  return getElementsBytes(elements);
}

/// weights.json's "tensor_shard" of a parameter global of `type` that holds
/// device `self`'s part of `shard` (docs/training.md, "Tensor-parallel
/// training"): {"dim", "start", "size", "shape": the whole parameter's
/// shape}.
static llvm::json::Object tensorShardJson(dist::ShardingAttr shard,
                                          int64_t self, RankedTensorType type) {
  int64_t dim = shard.getSplitDim(), start = 0, size = 0;
  for (auto [id, n] : llvm::zip(shard.getDevices(), shard.getSizes())) {
    if (id == self) {
      size = n;
      break;
    }
    start += n;
  }
  llvm::json::Array shape;
  for (auto [k, e] : llvm::enumerate(type.getShape())) {
    int64_t whole = e;
    if (static_cast<int64_t>(k) == dim) {
      whole = 0;
      for (int64_t n : shard.getSizes())
        whole += n;
    }
    shape.push_back(whole);
  }
  return llvm::json::Object{{"dim", dim},
                            {"start", start},
                            {"size", size},
                            {"shape", std::move(shape)}};
}

LogicalResult Emitter::planGlobals() {
  auto module = func->getParentOfType<ModuleOp>();
  if (!module)
    return success();
  for (auto g : module.getOps<ml_program::GlobalOp>()) {
    auto type = llvm::dyn_cast<RankedTensorType>(g.getType());
    auto bytes = type ? initialBytes(g) : FailureOr<std::vector<char>>();
    if (failed(bytes))
      return g.emitError() << "global @" << g.getSymName()
                           << ": code generation needs a static tensor with "
                              "an initial value";
    if (converted(type.getElementType()))
      return g.emitError("training state in 16-bit storage is not supported "
                         "yet (compile training with --dtype float32)");
    llvm::json::Object extra;
    llvm::StringRef role = train::roleOf(g);
    extra["role"] = role.empty() ? "constant" : role.str();
    if (auto of = g->getAttrOfType<FlatSymbolRefAttr>(train::kStateOfAttr))
      extra["of"] = of.getValue().str();
    if (auto slot = g->getAttrOfType<StringAttr>(train::kSlotAttr))
      extra["slot"] = slot.getValue().str();
    if (auto at = g->getAttrOfType<IntegerAttr>(train::kShardOffsetAttr))
      extra["shard_offset"] = at.getInt();
    if (g->hasAttr(train::kZeroBetweenStepsAttr))
      extra["zero_between_steps"] = true;
    if (auto shard =
            g->getAttrOfType<dist::ShardingAttr>(train::kTensorShardAttr)) {
      auto self = func->getAttrOfType<IntegerAttr>(dist::kDeviceAttrName);
      if (!self)
        return g.emitError() << "global @" << g.getSymName()
                             << " is a tensor-parallel shard, but the "
                                "function has no dist.device";
      extra["tensor_shard"] = tensorShardJson(shard, self.getInt(), type);
    }
    globalOffset[g] =
        appendWeight(g.getSymName(), type.getElementType(), type.getShape(),
                     std::move(*bytes), std::move(extra));
  }
  // Loads alias the global; an optimizer result whose only use stores it
  // back to the global its operand was loaded from is written in place.
  // global -> the steps that write it
  llvm::DenseMap<Operation *, llvm::SmallVector<int64_t, 1>> writeSteps;
  for (Operation *op : ops) {
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
      if (auto g = globalOf(op))
        storage[load.getResult()] = {Storage::Weight, 0, globalOffset[g]};
    if (!isa<onnx::AdamWOptimizerOp, onnx::SGDOptimizerOp>(op))
      continue;
    // Result i updates operand tied[i].
    llvm::SmallVector<unsigned> tied{0, 2, 3};
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      Value in = op->getOperand(tied[i]);
      auto load = in.getDefiningOp<ml_program::GlobalLoadOp>();
      if (!load || !r.hasOneUse())
        continue;
      auto store = dyn_cast<ml_program::GlobalStoreOp>(*r.getUsers().begin());
      if (!store || globalOf(store) != globalOf(load))
        continue;
      // Copied first: inserting r may rehash the map under a reference.
      Storage tiedStorage = storage.lookup(load.getResult());
      storage[r] = tiedStorage;
      inPlaceStores.insert(store);
      writeSteps[globalOf(load)].push_back(step.lookup(op));
    }
  }
  for (Operation *op : ops)
    if (isa<ml_program::GlobalStoreOp>(op) && !inPlaceStores.count(op))
      writeSteps[globalOf(op)].push_back(step.lookup(op));
  // A load's value is the global's one copy: no write may come between the
  // load and a read of its value (a load after a write reads the new value,
  // as a pipeline's next microbatch reads running statistics).
  for (Operation *op : ops)
    for (Value in : op->getOperands())
      if (auto load = root(in).getDefiningOp<ml_program::GlobalLoadOp>()) {
        int64_t loaded = step.lookup(load), read = runStep(op);
        bool stale =
            llvm::any_of(writeSteps.lookup(globalOf(load)),
                         [&](int64_t w) { return w > loaded && w < read; });
        if (stale && !isa<ml_program::GlobalStoreOp>(op))
          return op->emitError()
                 << "reads global @" << globalOf(load).getSymName()
                 << " after it was updated in place (code generation keeps "
                    "one copy of each global)";
      }
  return success();
}

LogicalResult Emitter::emitTrainingOp(Operation *op) {
  auto f = [&](Attribute a) {
    return floatLiteral(llvm::cast<FloatAttr>(a).getValueAsDouble(), false);
  };
  if (auto st = dyn_cast<ml_program::GlobalStoreOp>(op)) {
    if (inPlaceStores.count(op))
      return success();
    Value v = st.getValue();
    std::string dst = "((" + storageType(eltOf(v)) + " *)(weights + " +
                      std::to_string(globalOffset.lookup(globalOf(op))) + "))";
    emitCopy(ptr(v), dst, numelOf(v), eltOf(v));
    return success();
  }
  if (auto a = dyn_cast<onnx::AdamWOptimizerOp>(op)) {
    line(llvm::formatv(
        "hp_launch(ctx, hp_adamw, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
        "{9}, {10}, {11}, {12}, {13}, {14});",
        numelOf(a.getParam()), ptr(a.getParam()), ptr(a.getGrad()),
        ptr(a.getExpAvg()), ptr(a.getExpAvgSq()), ptr(op->getResult(0)),
        ptr(op->getResult(1)), ptr(op->getResult(2)), ptr(a.getLr()),
        ptr(a.getStep()), ptr(a.getGradScale()), f(a.getBeta1Attr()),
        f(a.getBeta2Attr()), f(a.getEpsilonAttr()), f(a.getWeightDecayAttr())));
    ++program.libraryCalls;
    return success();
  }
  if (auto sgd = dyn_cast<onnx::SGDOptimizerOp>(op)) {
    bool buf = bool(sgd.getMomentumBuffer());
    line(llvm::formatv(
        "hp_launch(ctx, hp_sgd, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
        "{9}, {10}, {11});",
        numelOf(sgd.getParam()), ptr(sgd.getParam()), ptr(sgd.getGrad()),
        buf ? ptr(sgd.getMomentumBuffer()) : "(const float *)0",
        ptr(op->getResult(0)), buf ? ptr(op->getResult(1)) : "(float *)0",
        ptr(sgd.getLr()), ptr(sgd.getStep()), ptr(sgd.getGradScale()),
        f(sgd.getMomentumAttr()), sgd.getNesterov(),
        f(sgd.getWeightDecayAttr())));
    ++program.libraryCalls;
    return success();
  }
  auto g = cast<onnx::GatherGradOp>(op);
  llvm::ArrayRef<int64_t> s = g.getShape();
  int64_t axis = g.getAxis() < 0 ? g.getAxis() + s.size() : g.getAxis();
  Value out = g.getResult(), idx = g.getIndices();
  std::string t = storageType(eltOf(out));
  line(llvm::formatv("hp_launch(ctx, hp_fill<{0}>, {1}, ({0})0, {2});", t,
                     numelOf(out), ptr(out)));
  line(llvm::formatv(
      "hp_launch(ctx, hp_gather_grad<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, {7}, "
      "{8}, {9});",
      t, storageType(eltOf(idx)),
      numel(s.take_front(axis)) * numel(s.drop_front(axis + 1)), s[axis],
      numelOf(idx), numel(s.drop_front(axis + 1)), ptr(g.getDY()), ptr(idx),
      ptr(out), indexCheck(op)));
  program.libraryCalls += 2;
  return success();
}

} // namespace hetpar::codegen::emitter
