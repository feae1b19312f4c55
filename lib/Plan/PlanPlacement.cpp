//===- PlanPlacement.cpp - a plan checked against its model ---------------===//
#include "hetpar/Plan/PlanPlacement.h"

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/Sharding.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace mlir;

namespace hetpar {
namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The catalog indices stage `s` names: 'first' to 'last', or its 'ops'.
llvm::Expected<std::vector<int>> namedOps(const OpCatalog &table,
                                          const Stage &stage, size_t s) {
  std::vector<int> indices;
  auto find = [&](const std::string &name) -> llvm::Expected<int> {
    auto it = table.byName.find(name);
    if (it == table.byName.end())
      return fail(llvm::formatv("stage {0}: no op is named '{1}'", s, name));
    return it->second;
  };
  if (!stage.firstOp && !stage.lastOp) {
    for (const std::string &name : stage.ops) {
      auto i = find(name);
      if (!i)
        return i.takeError();
      indices.push_back(*i);
    }
    return indices;
  }
  if (!stage.firstOp || !stage.lastOp)
    return fail(llvm::formatv("stage {0}: give both 'first' and 'last'", s));
  auto from = find(*stage.firstOp);
  if (!from)
    return from.takeError();
  auto to = find(*stage.lastOp);
  if (!to)
    return to.takeError();
  if (*from > *to)
    return fail(llvm::formatv("stage {0}: '{1}' comes after '{2}'", s,
                              *stage.firstOp, *stage.lastOp));
  for (int i = *from; i <= *to; ++i)
    indices.push_back(i);
  return indices;
}

/// Every op in exactly one stage.
llvm::Error placeOps(const OpCatalog &table, const Plan &plan,
                     PlanPlacement &out) {
  out.stageOf.assign(table.ops.size(), -1);
  out.stageOps.assign(plan.stages.size(), {});
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    auto indices = namedOps(table, stage, s);
    if (!indices)
      return indices.takeError();
    for (int i : *indices) {
      if (out.stageOf[i] == static_cast<int>(s))
        return fail(llvm::formatv("stage {0}: op '{1}' is listed twice", s,
                                  table.names[i]));
      if (out.stageOf[i] >= 0)
        return fail(llvm::formatv("op '{0}' is in stages {1} and {2}",
                                  table.names[i], out.stageOf[i], s));
      out.stageOf[i] = s;
      out.stageOps[s].push_back(i);
    }
    llvm::sort(out.stageOps[s]);
  }
  std::vector<std::string> missing;
  for (auto [i, s] : llvm::enumerate(out.stageOf))
    if (s < 0)
      missing.push_back("'" + table.names[i] + "'");
  if (missing.empty())
    return llvm::Error::success();
  size_t shown = std::min<size_t>(missing.size(), 5);
  return fail(
      llvm::formatv("{0} ops are in no stage: {1}{2}", missing.size(),
                    llvm::join(llvm::ArrayRef(missing).take_front(shown), ", "),
                    missing.size() > shown ? ", ..." : ""));
}

/// A value may only flow forward, from a stage to itself or a later one.
llvm::Error checkStageOrder(const OpCatalog &table, const PlanPlacement &p) {
  for (auto [i, op] : llvm::enumerate(table.ops))
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      auto it = def ? table.index.find(def) : table.index.end();
      if (it == table.index.end() || p.stageOf[it->second] <= p.stageOf[i])
        continue;
      return fail(llvm::formatv(
          "op '{0}' (stage {1}) uses a value of op '{2}' in the later stage "
          "{3}; stages must follow the model's order",
          table.names[i], p.stageOf[i], table.names[it->second],
          p.stageOf[it->second]));
    }
  return llvm::Error::success();
}

/// Each sharding names an op of its stage and a dimension its result has.
llvm::Error checkShardings(const OpCatalog &table, const Plan &plan,
                           const PlanPlacement &p) {
  for (auto [s, stage] : llvm::enumerate(plan.stages))
    for (auto &e : stage.shardings) {
      auto it = table.byName.find(e.getKey());
      if (it == table.byName.end() ||
          p.stageOf[it->second] != static_cast<int>(s))
        return fail(llvm::formatv("stage {0}: sharding of '{1}', which is not "
                                  "an op of the stage",
                                  s, e.getKey()));
      Operation *op = table.ops[it->second];
      auto type =
          op->getNumResults()
              ? llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType())
              : RankedTensorType();
      if (type && e.second.dim >= type.getRank())
        return fail(llvm::formatv(
            "stage {0}: sharding of '{1}': dim {2} does not exist, the result "
            "has rank {3} (use 0 to {4}, or -1 for the contraction)",
            s, e.getKey(), e.second.dim, type.getRank(), type.getRank() - 1));
    }
  return llvm::Error::success();
}

/// Each device is the cluster's and in one stage.
llvm::Error checkDevices(const Plan &plan, const Cluster &cluster) {
  llvm::DenseMap<int, int> stageOfDevice;
  for (auto [s, stage] : llvm::enumerate(plan.stages))
    for (int id : stage.devices) {
      if (!cluster.findDevice(id))
        return fail(
            llvm::formatv("stage {0}: the cluster has no device {1}", s, id));
      auto [it, inserted] = stageOfDevice.try_emplace(id, s);
      if (inserted)
        continue;
      if (it->second == static_cast<int>(s))
        return fail(
            llvm::formatv("stage {0}: device {1} is listed twice", s, id));
      return fail(llvm::formatv("device {0} is in stages {1} and {2}", id,
                                it->second, s));
    }
  return llvm::Error::success();
}

/// Whole samples per microbatch and per replica.
llvm::Error cutBatch(const OpCatalog &table, const Plan &plan,
                     PlanPlacement &p) {
  p.batch = table.batch.samples;
  int64_t m = plan.microbatches;
  if (p.batch == 0)
    return fail("the batch (dimension 0 of the first input) is 0: there is "
                "nothing to run");
  if (p.batch % m != 0)
    return fail(llvm::formatv("{0} microbatches do not divide the batch of {1}",
                              m, p.batch));
  p.microbatchSamples = p.batch / m;
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    std::vector<double> shares = stage.batchShares;
    if (shares.empty()) {
      if (p.microbatchSamples % stage.data != 0)
        return fail(llvm::formatv("stage {0}: a microbatch of {1} samples does "
                                  "not split evenly over {2} data-parallel "
                                  "replicas; give batch_shares",
                                  s, p.microbatchSamples, stage.data));
      shares.assign(stage.data, 1.0);
    }
    double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    for (auto [r, x] : llvm::enumerate(shares)) {
      x /= sum;
      double samples = x * p.microbatchSamples;
      if (std::abs(samples - std::round(samples)) > 1e-6 ||
          std::round(samples) < 1)
        return fail(
            llvm::formatv("stage {0}: replica {1} gets {2} of a microbatch of "
                          "{3} samples; every replica needs a whole number of "
                          "samples, at least one",
                          s, r, samples, p.microbatchSamples));
    }
    p.replicaShares.push_back(std::move(shares));
  }
  return llvm::Error::success();
}

/// Each stage's data parallelism, "2/1".
std::string dataDegrees(const Plan &plan) {
  return llvm::join(
      llvm::map_range(plan.stages,
                      [](const Stage &s) { return std::to_string(s.data); }),
      "/");
}

/// A model with an op that mixes samples (in inference: or computes
/// statistics over the batch) cannot have its batch split; one with an op
/// that reads a value without the batch per sample cannot run in
/// microbatches.
llvm::Error checkBatchSplit(const OpCatalog &table, const Plan &plan) {
  bool splitsBatch =
      plan.microbatches > 1 ||
      llvm::any_of(plan.stages, [](const Stage &s) { return s.data > 1; });
  int whole = table.batch.wholeBatchOp(plan.mode == Mode::Training);
  int noMicro = table.batch.noMicrobatchesOp(plan.mode == Mode::Training);
  if (whole < 0 && noMicro >= 0 && plan.microbatches > 1)
    return fail(llvm::formatv(
        "the plan has {0} microbatches, but {1}: run it without microbatches",
        plan.microbatches, table.batch.wholeBatchReason(noMicro)));
  if (!splitsBatch || whole < 0)
    return llvm::Error::success();
  return fail(llvm::formatv(
      "the plan splits the batch ({0} microbatch(es), data parallelism {1}), "
      "but {2}: only tensor parallelism and pipeline stages without "
      "microbatches can run this model",
      plan.microbatches, dataDegrees(plan),
      table.batch.wholeBatchReason(whole)));
}

} // namespace

llvm::Expected<PlanPlacement>
placePlan(const OpCatalog &catalog, const Plan &plan, const Cluster *cluster) {
  PlanPlacement out;
  if (llvm::Error e = placeOps(catalog, plan, out))
    return std::move(e);
  if (llvm::Error e = checkShardings(catalog, plan, out))
    return std::move(e);
  if (llvm::Error e = checkStageOrder(catalog, out))
    return std::move(e);
  if (cluster)
    if (llvm::Error e = checkDevices(plan, *cluster))
      return std::move(e);
  if (llvm::Error e = cutBatch(catalog, plan, out))
    return std::move(e);
  if (llvm::Error e = checkBatchSplit(catalog, plan))
    return std::move(e);
  for (auto [s, stage] : llvm::enumerate(plan.stages))
    if (stage.recompute && plan.mode != Mode::Training)
      out.warnings.push_back(llvm::formatv(
          "stage {0}: 'recompute' has no effect in inference", s));
  return out;
}

bool stageTakesInput(BlockArgument input, int stage, int numStages,
                     llvm::function_ref<int(Operation *)> stageOfOp) {
  for (Operation *user : input.getUsers()) {
    if (user->hasTrait<OpTrait::IsTerminator>()) {
      if (stage == numStages - 1)
        return true;
    } else if (stageOfOp(user) == stage) {
      return true;
    }
  }
  return false;
}

} // namespace hetpar
