//===- Batch.cpp - where the batch lies in every value --------------------===//
//
// Propagates the batch from the graph inputs through the ops' sharding rules
// (Batch.h). One forward walk in program order: an op that reads the batch
// finds the factor of its rule that holds it and places it in its results.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Plan/Batch.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <tuple>

using namespace mlir;
using namespace hetpar;

namespace {

/// The factor among `dims[bd.dim]` that holds the batch `bd` (of `batch`
/// samples), with its units and within (OpBatch); factor -1 when none holds
/// it whole. The batch may be the factor itself, its outer part (a reshape
/// made the batch the outer part of [N*H]) or a part inside it (a merge put
/// another factor outside the batch: the [L*N] rows). Any part of a parallel
/// factor is local work, as its indices are independent.
std::tuple<int, int64_t, int64_t> findBatchFactor(const ShardingRule &rule,
                                                  const DimFactors &dims,
                                                  const BatchDim &bd,
                                                  int64_t batch) {
  // An operand the rule reads whole (Reshape's shape) has no dimensions here.
  if (bd.dim < 0 || static_cast<size_t>(bd.dim) >= dims.size())
    return {-1, 0, 0};
  for (int f : dims[bd.dim]) {
    auto p = ShardingRule::placement(dims, f, rule.factors);
    if (!p || bd.outer % p->outer || bd.granule % p->granule)
      continue;
    int64_t units = bd.granule / p->granule, within = bd.outer / p->outer;
    if (rule.factors[f].size == within * batch * units)
      return {f, units, within};
  }
  return {-1, 0, 0};
}

/// Why operand `k` of `op` cannot carry its batch `bd`, or "" when factor
/// `f` of the rule holds it as a parallel factor.
std::string checkOperand(Operation *op, const std::optional<ShardingRule> &rule,
                         unsigned k, int f) {
  std::string what = onnx::describeNode(op);
  if (!rule || k >= rule->operands.size())
    return what + " has no sharding rule, so its operand " + std::to_string(k) +
           "'s batch cannot be split";
  if (f < 0)
    return what + " mixes the batch of operand " + std::to_string(k) +
           " with other dimensions (rule " + rule->str() + ")";
  if (rule->factors[f].kind == FactorKind::Reduction)
    return what + " reduces over the batch of operand " + std::to_string(k) +
           " (rule " + rule->str() + ")";
  if (rule->factors[f].kind == FactorKind::Whole)
    return what + " needs the batch of operand " + std::to_string(k) +
           " whole (rule " + rule->str() + ")";
  return "";
}

/// The argument attribute `dist.batch_dim` of `arg`, if any.
std::optional<int64_t> givenBatchDim(BlockArgument arg) {
  auto fn = llvm::cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (auto attr = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                   dist::kBatchDimAttrName))
    return attr.getInt();
  return std::nullopt;
}

/// The `onnx.name` of graph input `v`, or "" when `v` is no named argument.
std::string inputNameOf(Value v) {
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  auto fn = arg ? llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                : func::FuncOp();
  auto name =
      fn ? fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name")
         : StringAttr();
  return name ? name.str() : "";
}

/// A hint for an op that cannot carry the batch of operand `v`: when `v` is
/// a graph input other than the first, whose batch the analysis assumed from
/// its extent, the input may hold no batch at all (a table every sample
/// reads), which --batch-dim NAME=none says, or hold it on another axis
/// (when extents coincide), which --batch-dim NAME=AXIS says; "" otherwise.
std::string noBatchHint(Value v) {
  auto arg = llvm::dyn_cast<BlockArgument>(v);
  std::string name = inputNameOf(v);
  if (name.empty() || arg.getArgNumber() == 0 || givenBatchDim(arg))
    return "";
  return "; if input '" + name +
         "' holds no batch (the same for every sample), say so with "
         "--batch-dim " +
         name +
         "=none (inference); if its batch is on another axis, with "
         "--batch-dim " +
         name + "=AXIS";
}

/// Why `op`, whose batch is factor `f` of `rule`, cannot run in
/// microbatches: it reads an operand that carries no batch along `f` (each
/// sample its slice of a constant or of an input marked as holding none);
/// "" when it reads none.
std::string readAlongBatch(Operation *op, const ShardingRule &rule, int f,
                           const BatchAnalysis &a) {
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    if (a.of(v) || k >= rule.operands.size() ||
        !ShardingRule::placement(rule.operands[k], f, rule.factors))
      continue;
    std::string what = "operand " + std::to_string(k);
    if (std::string name = inputNameOf(v); !name.empty())
      what += " (input '" + name + "'" +
              (givenBatchDim(llvm::cast<BlockArgument>(v)) == dist::kNoBatchDim
                   ? ", marked with --batch-dim " + name + "=none"
                   : std::string()) +
              ")";
    return onnx::describeNode(op) + " reads " + what +
           ", which carries no batch, per sample of the batch: data "
           "parallelism slices it, microbatches cannot";
  }
  return "";
}

/// Whether `op` computes statistics over the batch of operand `k` that
/// data-parallel training synchronizes (OpBatch::synchronized).
bool synchronizesBatch(Operation *op, unsigned k) {
  auto bn = llvm::dyn_cast<onnx::BatchNormalizationOp>(op);
  return bn && bn.getTrainingMode() != 0 && k == 0;
}

/// The batch of op `op`: the factor every operand that carries the batch
/// agrees on, or the first reason it cannot be split.
OpBatch analyzeOp(Operation *op, const std::optional<ShardingRule> &rule,
                  const BatchAnalysis &a) {
  OpBatch out;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    auto bd = a.of(v);
    if (!bd)
      continue;
    auto [f, units, within] =
        rule && k < rule->operands.size()
            ? findBatchFactor(*rule, rule->operands[k], *bd, a.size)
            : std::tuple<int, int64_t, int64_t>{-1, 0, 0};
    out.error = checkOperand(op, rule, k, f);
    if (!out.error.empty() && f >= 0 && synchronizesBatch(op, k)) {
      out.error.clear();
      out.synchronized = true;
      out.inferenceError =
          onnx::describeNode(op) +
          " computes statistics over the batch (training mode), which only "
          "training synchronizes over the replicas";
    }
    if (out.error.empty() && out.factor >= 0 &&
        (f != out.factor || units != out.units || within != out.within))
      out.error = onnx::describeNode(op) +
                  " reads two batch dimensions that its rule does not align";
    if (!out.error.empty()) {
      if (!out.synchronized)
        out.error += noBatchHint(v);
      out.factor = -1;
      return out;
    }
    out.factor = f;
    out.units = units;
    out.within = within;
  }
  if (out.factor >= 0)
    out.unmicrobatched = readAlongBatch(op, *rule, out.factor, a);
  return out;
}

/// Carries the batch seeded in `a.values` through `ops` in program order.
void propagate(BatchAnalysis &a, llvm::ArrayRef<Operation *> ops,
               llvm::ArrayRef<std::optional<ShardingRule>> rules) {
  a.ops.assign(ops.size(), OpBatch());
  for (auto [i, op] : llvm::enumerate(ops)) {
    OpBatch &ob = a.ops[i];
    ob = analyzeOp(op, rules[i], a);
    if (!ob.error.empty() && a.firstError < 0)
      a.firstError = static_cast<int>(i);
    if (!ob.unmicrobatched.empty() && a.firstUnmicrobatched < 0)
      a.firstUnmicrobatched = static_cast<int>(i);
    if (ob.factor < 0)
      continue;
    llvm::SmallVector<std::pair<Value, BatchDim>> placed;
    for (auto [k, r] : llvm::enumerate(op->getResults())) {
      std::optional<FactorPlacement> p;
      if (k < rules[i]->results.size())
        p = ShardingRule::placement(rules[i]->results[k], ob.factor,
                                    rules[i]->factors);
      if (!p && ob.synchronized)
        continue; // the same statistics on every replica
      if (!p) {
        ob = OpBatch{-1, 1, 1,
                     onnx::describeNode(op) + ": result " + std::to_string(k) +
                         " drops the batch its operands carry"};
        break;
      }
      placed.push_back(
          {r, BatchDim{p->dim, ob.units * p->granule, ob.within * p->outer}});
    }
    if (!ob.error.empty()) {
      if (a.firstError < 0)
        a.firstError = static_cast<int>(i);
      continue;
    }
    for (auto &[r, bd] : placed)
      a.values[r] = bd;
    if (ob.synchronized && a.firstSynchronized < 0)
      a.firstSynchronized = static_cast<int>(i);
  }
}

/// The extent of dimension `dim` of argument `arg`, or -1 when it has no
/// such static dimension.
int64_t extentOf(BlockArgument arg, int64_t dim) {
  auto t = llvm::dyn_cast<RankedTensorType>(arg.getType());
  if (!t || dim < 0 || dim >= t.getRank() || t.isDynamicDim(dim))
    return -1;
  return t.getDimSize(dim);
}

/// The analysis with the batch seeded in dimension `dim` of the first
/// argument, and in every other argument with the same extent in its
/// `dist.batch_dim`, or in `dim` when it has none.
BatchAnalysis
seedAndPropagate(func::FuncOp fn, int64_t dim, llvm::ArrayRef<Operation *> ops,
                 llvm::ArrayRef<std::optional<ShardingRule>> rules) {
  BatchAnalysis a;
  a.ops.assign(ops.size(), OpBatch());
  int64_t extent = extentOf(fn.getArgument(0), dim);
  if (extent < 0)
    return a;
  a.seedDim = static_cast<int>(dim);
  a.samples = extent;
  if (extent < 2)
    return a;
  a.size = extent;
  for (BlockArgument arg : fn.getArguments()) {
    int64_t d = givenBatchDim(arg).value_or(dim);
    if (d != dist::kNoBatchDim && extentOf(arg, d) == extent)
      a.values[arg] = BatchDim{static_cast<int>(d), 1, 1};
  }
  propagate(a, ops, rules);
  return a;
}

} // namespace

BatchAnalysis
hetpar::analyzeBatch(Operation *func, llvm::ArrayRef<Operation *> ops,
                     llvm::ArrayRef<std::optional<ShardingRule>> rules) {
  auto fn = llvm::dyn_cast<func::FuncOp>(func);
  auto none = [&] {
    BatchAnalysis a;
    a.ops.assign(ops.size(), OpBatch());
    return a;
  };
  if (!fn || fn.getNumArguments() == 0)
    return none();
  if (auto given = givenBatchDim(fn.getArgument(0))) {
    BatchAnalysis a = seedAndPropagate(fn, *given, ops, rules);
    a.seedGiven = true;
    return a;
  }
  // A vector input is one sample.
  auto t = llvm::dyn_cast<RankedTensorType>(fn.getArgument(0).getType());
  if (!t || t.getRank() < 2)
    return none();
  BatchAnalysis a = seedAndPropagate(fn, 0, ops, rules);
  if (a.size == 0 || a.firstError < 0)
    return a;
  // Dimension 0 is mixed: a sequence-first export holds the batch further in.
  for (int64_t dim = 1; dim < t.getRank(); ++dim) {
    if (extentOf(fn.getArgument(0), dim) < 2)
      continue;
    BatchAnalysis other = seedAndPropagate(fn, dim, ops, rules);
    if (other.firstError < 0)
      return other;
  }
  return a;
}

std::string BatchAnalysis::wholeBatchReason(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= ops.size())
    return "";
  const OpBatch &ob = ops[i];
  return !ob.error.empty()            ? ob.error
         : !ob.inferenceError.empty() ? ob.inferenceError
                                      : ob.unmicrobatched;
}

std::string hetpar::describeBatchSeed(Operation *func, const BatchAnalysis &a) {
  auto fn = llvm::dyn_cast<func::FuncOp>(func);
  if (!fn || a.seedDim < 0)
    return "no input";
  return "dimension " + std::to_string(a.seedDim) + " of input '" +
         onnx::graphInputName(fn, 0) + "'";
}
