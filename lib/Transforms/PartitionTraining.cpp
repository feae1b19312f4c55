//===- PartitionTraining.cpp - a training plan's partition ----------------===//
//
// What hetpar-dist-localize adds for a training plan's backward pass
// (Partitioner.h; docs/training.md, "Tensor-parallel training"): where
// gradients are summed over a tensor-parallel group, which parameters become
// per-device shards, and how an activation reaches a group.
//
//===----------------------------------------------------------------------===//
#include "Partitioner.h"

#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Training.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

//===----------------------------------------------------------------------===//
// Training: where gradients are summed over the group, parameter shards
//===----------------------------------------------------------------------===//

void Partitioner::findWholeParameters() {
  DenseMap<Value, int> readBy; // parameter -> its stage, -1 for several
  DenseMap<std::pair<int, Value>, Local> layoutOf;
  for (auto [s, st] : llvm::enumerate(stages))
    for (Operation *op : st.ops) {
      int index = catalog->index.lookup(op);
      const std::optional<ShardingRule> &rule = catalog->rules[index];
      FailureOr<TensorSplit> split = TensorSplit();
      if (st.tensor > 1)
        split = tensorSplit(op, st.tensor); // errors again in partitionOp
      for (auto [k, v] : llvm::enumerate(op->getOperands())) {
        if (!train::floatInitializer(v))
          continue;
        auto [stage, fresh] = readBy.try_emplace(v, static_cast<int>(s));
        if (!fresh && stage->second != static_cast<int>(s))
          stage->second = -1;
        Local want;
        if (succeeded(split) && rule && k < rule->operands.size())
          want = tensorLayout(*rule, rule->operands[k], *split);
        auto key = std::make_pair(static_cast<int>(s), v);
        auto [seen, first] = layoutOf.try_emplace(key, want);
        if ((!first && !seen->second.sameSplit(want)) || want.outer > 1)
          wholeParams.insert(key);
      }
    }
  for (auto [v, stage] : readBy)
    if (stage < 0)
      for (int s = 0; s < static_cast<int>(stages.size()); ++s)
        wholeParams.insert({s, v});
}

Value Partitioner::enterGroup(Device &d, Location loc, Value local) {
  if (d.group.size() < 2)
    return local;
  auto [it, fresh] = d.entered.try_emplace(local, Value());
  if (!fresh)
    return it->second;
  it->second = dist::GradAllReduceOp::create(b, loc, local.getType(), local,
                                             FlatSymbolRefAttr::get(ctx, kMesh),
                                             b.getDenseI64ArrayAttr(d.group));
  return it->second;
}

bool Partitioner::mayNeedGradient(Value global) const {
  auto t = llvm::dyn_cast<RankedTensorType>(global.getType());
  if (!t || !llvm::isa<FloatType>(t.getElementType()))
    return false;
  auto c = global.getDefiningOp<onnx::ConstantOp>();
  return !c || c->hasAttr(onnx::kInitializerAttrName);
}

Value Partitioner::parameterShard(Device &d, Value global, const Local &tp) {
  onnx::ConstantOp param = train::floatInitializer(global);
  if (!training || !param || tp.outer != 1 ||
      wholeParams.contains({d.stage, global}))
    return Value();
  if (Value shard = d.paramShards.lookup(global))
    return shard;
  auto sliced =
      sliceElements(param.getValue(), tp.dim, 1, tp.starts[d.rank] * tp.granule,
                    tp.sizes[d.rank] * tp.granule);
  if (failed(sliced))
    return Value();
  SmallVector<int64_t> sizes;
  for (int64_t n : tp.sizes)
    sizes.push_back(n * tp.granule);
  auto shard = onnx::ConstantOp::create(b, param.getLoc(), *sliced);
  shard->setAttr(onnx::kInitializerAttrName,
                 param->getAttr(onnx::kInitializerAttrName));
  shard->setAttr(train::kTensorShardAttr,
                 dist::ShardingAttr::get(ctx,
                                         FlatSymbolRefAttr::get(ctx, kMesh),
                                         d.group, tp.dim, sizes, std::nullopt,
                                         /*replicas=*/1));
  d.paramShards[global] = shard;
  return shard;
}

Value Partitioner::receiveInGroup(Device &d, Location loc, Value global,
                                  const Local &l) {
  Value mine = l.value;
  if (!mine) {
    RankedTensorType t = localType(d, global, l);
    mine = onnx::ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
  }
  return dist::BroadcastOp::create(
      b, loc, mine.getType(), mine, FlatSymbolRefAttr::get(ctx, kMesh),
      b.getDenseI64ArrayAttr(d.group), b.getI64IntegerAttr(d.group.front()));
}

bool Partitioner::usedByStage(Value v, int stage) const {
  return llvm::any_of(stages[stage].ops, [&](Operation *op) {
    return llvm::is_contained(op->getOperands(), v);
  });
}

bool Partitioner::usedByLaterStage(Value v, int stage) const {
  for (int s = stage + 1; s < static_cast<int>(stages.size()); ++s)
    if (usedByStage(v, s))
      return true;
  return false;
}
