//===- PartitionSplits.cpp - the layouts an op's sharding gives -----------===//
//
// The model function, op names for diagnostics, and what an op's
// dist.op_sharding makes of its operands and results on a
// tensor-parallel group: the one reading of an op sharding shared by
// hetpar-dist-introduce-transfers (the layouts its transfers name) and
// hetpar-dist-localize (the layouts it builds). Partitioner.h declares them.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include "hetpar/Support/ShapeUtils.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

std::string hetpar::partition::describeOp(Operation *op) {
  std::string name = onnx::getNodeName(op->getLoc());
  return "'" + onnx::getONNXOpType(op) + "'" +
         (name.empty() ? std::string() : " node '" + name + "'");
}

FailureOr<func::FuncOp> hetpar::partition::modelFunction(ModuleOp module,
                                                         StringRef pass) {
  SmallVector<func::FuncOp> funcs;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isDeclaration() && !f->hasAttr(dist::kDeviceAttrName))
      funcs.push_back(f);
  if (funcs.size() != 1)
    return module.emitError()
           << pass << ": expected one model function, found " << funcs.size();
  return funcs.front();
}

std::optional<OpSharding> hetpar::partition::namedSharding(Operation *op) {
  auto attr =
      op->getAttrOfType<dist::OpShardingAttr>(dist::kOpShardingAttrName);
  if (!attr)
    return std::nullopt;
  OpSharding s;
  s.dim = attr.getDim();
  ArrayRef<int64_t> parts = attr.getParts().asArrayRef();
  s.parts.assign(parts.begin(), parts.end());
  s.collective = attr.getCollective();
  return s;
}

FailureOr<TensorSplit>
hetpar::partition::tensorSplitOf(const OpCatalog &catalog, Operation *op,
                                 int64_t t) {
  int index = catalog.index.lookup(op);
  const std::optional<ShardingRule> &rule = catalog.rules[index];
  auto sharding =
      op->getAttrOfType<dist::OpShardingAttr>(dist::kOpShardingAttrName);
  TensorSplit split;
  if (!sharding)
    return split;
  // The dist dialect's verifier has checked the parts against the stage.
  DenseI64ArrayAttr parts = sharding.getParts();
  if (!rule)
    return op->emitError() << "partition: op " << describeOp(op)
                           << " is sharded but has no sharding rule";
  // The factor the sharding names, as the simulator resolves it.
  std::optional<OpSharding> named = namedSharding(op);
  auto resolved = resolveSharding(catalog, index, &*named, t);
  if (!resolved)
    return op->emitError() << "partition: "
                           << llvm::toString(resolved.takeError());
  split.factor = resolved->factor;
  int64_t at = 0;
  for (int64_t p : parts.asArrayRef()) {
    split.starts.push_back(at);
    split.sizes.push_back(p);
    at += p;
  }
  const auto &factor = rule->factors[split.factor];
  if (at != factor.size)
    return op->emitError() << "partition: the parts of op " << describeOp(op)
                           << " add up to " << at
                           << " but the factor they split has " << factor.size;
  return split;
}

Local hetpar::partition::reduceScatterLayout(dist::OpShardingAttr sharding,
                                             Type type) {
  Local out;
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked || ranked.getRank() == 0)
    return out;
  ArrayRef<int64_t> parts = sharding.getParts().asArrayRef();
  std::vector<double> weights(parts.begin(), parts.end());
  // Fewer indices than devices: no split (the values are all-reduced).
  std::vector<int64_t> sizes =
      splitProportionally(ranked.getShape().back(), weights);
  if (sizes.empty())
    return out;
  out.kind = Local::Split;
  out.dim = static_cast<int>(ranked.getRank() - 1);
  for (int64_t n : sizes) {
    out.starts.push_back(
        out.sizes.empty() ? 0 : out.starts.back() + out.sizes.back());
    out.sizes.push_back(n);
  }
  return out;
}

Local hetpar::partition::tensorLayout(const ShardingRule &rule,
                                      const DimFactors &dims,
                                      const TensorSplit &split) {
  Local out;
  if (split.factor < 0)
    return out;
  if (auto p = ShardingRule::placement(dims, split.factor, rule.factors)) {
    out.kind = Local::Split;
    out.dim = p->dim;
    out.granule = p->granule;
    out.outer = p->outer;
    out.starts = split.starts;
    out.sizes = split.sizes;
  }
  return out;
}
