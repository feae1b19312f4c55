//===- Simulator.cpp - evaluate a plan on a cluster
//-------------------------===//
//
// The model (formulas in docs/cost-model.md):
//  - a stage's time per microbatch is that of its slowest data-parallel
//  replica;
//    a replica runs the stage's ops in order, each taking the time of its
//    slowest tensor-parallel device, followed by the op's collective;
//  - stages pass the values that cross each stage boundary by send/recv;
//  - the schedule (GPipe, 1F1B) orders forward and backward tasks; a task
//  starts
//    when its stage is free and its input has arrived;
//  - in training, each stage's data-parallel replicas all-reduce their
//    gradients after their last backward task.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Plan/Simulator.h"

#include "hetpar/Plan/PlanPlacement.h"
#include "hetpar/Plan/Sharding.h"

#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Dialect/ONNX/Views.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

using namespace mlir;

namespace hetpar {

std::string formatBytes(double bytes) {
  const char *units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  return llvm::formatv(u == 0 ? "{0:F0} {1}" : "{0:F2} {1}", bytes, units[u])
      .str();
}

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Devices that time alike in a group: each device's kind, rates and node
/// link, and whether it sits on the first device's node and rack.
std::string groupSignature(const Cluster &cluster, llvm::ArrayRef<int> group) {
  std::string key;
  const Device *first = cluster.findDevice(group.front());
  for (int id : group) {
    const Device *d = cluster.findDevice(id);
    key += llvm::formatv(
        "{0}/{1}/{2}/{3}/{4}/{5}/{6}{7};", d->kind, d->slowdown, d->fp32Flops,
        d->tensorFlops, d->memoryBandwidth, cluster.nodes[d->node].intra.kind,
        d->node == first->node ? "" : "n",
        cluster.nodes[d->node].group == cluster.nodes[first->node].group ? ""
                                                                         : "g");
  }
  return key;
}

/// Whether `v` has a gradient buffer of its own: a value the backward pass
/// differentiates (OpCatalog::withGradient) that is not a view (onnx::isView:
/// its gradient shares the operand's buffer, as its value does).
bool hasOwnGradient(const OpCatalog &table, Value v) {
  if (!table.withGradient.contains(v))
    return false;
  Operation *def = v.getDefiningOp();
  return !def || !onnx::isView(def);
}

/// The bytes of activation gradients live while the backward pass
/// differentiates the op at each position of a stage (`ops`, table indices
/// in order; `inStage` their set). The gradient of a value exists from the
/// differentiation of its last use in the stage until that of its producer
/// (or, for a value read from an earlier stage, of its first use, after
/// which it is sent back); a value a later stage reads has its gradient from
/// the start of the backward pass (the received one), and the gradient of
/// what the loss reads is the loss's buffer, counted with the activations.
/// Differentiating an op also writes its operands' gradients, one at a time
/// as the generated code does: the largest is counted. Function arguments
/// (the data) get none. `valueBytes` gives a value's bytes on the device.
std::vector<double>
activationGradients(const OpCatalog &table, llvm::ArrayRef<int> ops,
                    const llvm::DenseSet<int> &inStage,
                    llvm::function_ref<double(Value)> valueBytes) {
  int n = static_cast<int>(ops.size());
  llvm::DenseMap<int, int> posOf;
  for (auto [pos, i] : llvm::enumerate(ops))
    posOf[i] = static_cast<int>(pos);
  // Differences: +bytes at the first position, -bytes after the last.
  std::vector<double> flowing(n + 1, 0), written(n, 0);
  auto liveBetween = [&](int from, int to, double bytes) {
    if (from > to)
      return;
    flowing[from] += bytes;
    flowing[to + 1] -= bytes;
  };
  llvm::DenseMap<Value, int> lastUse;
  llvm::DenseMap<Value, int> received; // its first use
  for (auto [pos, i] : llvm::enumerate(ops))
    for (Value v : table.ops[i]->getOperands()) {
      if (!hasOwnGradient(table, v))
        continue;
      lastUse[v] = static_cast<int>(pos);
      auto r = llvm::dyn_cast<OpResult>(v);
      auto it = r ? table.index.find(r.getOwner()) : table.index.end();
      if (it != table.index.end() && !inStage.count(it->second))
        received.try_emplace(v, static_cast<int>(pos));
    }
  for (auto [pos, i] : llvm::enumerate(ops))
    for (Value v : table.ops[i]->getResults()) {
      if (!hasOwnGradient(table, v))
        continue;
      // The loss's gradient of what the function returns is in the loss's
      // buffer (kept with the activations); a later stage's arrives.
      bool out = llvm::any_of(v.getUsers(), [&](Operation *u) {
        auto it = table.index.find(u);
        return !llvm::isa<func::ReturnOp>(u) &&
               (it == table.index.end() || !inStage.count(it->second));
      });
      int last = out ? n : lastUse.lookup(v);
      liveBetween(static_cast<int>(pos), last - 1, valueBytes(v));
    }
  for (auto &[v, first] : received)
    liveBetween(first, lastUse.lookup(v) - 1, valueBytes(v));
  for (auto &[v, last] : lastUse)
    written[last] = std::max(written[last], valueBytes(v));
  for (int k = 1; k <= n; ++k)
    flowing[k] += flowing[k - 1];
  flowing.pop_back();
  for (int k = 0; k < n; ++k)
    flowing[k] += written[k];
  return flowing;
}

/// The bytes of the scratch buffer op `i` of `table` takes while it runs,
/// forward or differentiated: the im2col columns of a convolution
/// (onnx::im2colElements, as the generated code sizes them; ConvGrad's
/// equal its Conv's), in the compute dtype.
double scratchBytes(const OpCatalog &table, int i) {
  Operation *op = table.ops[i];
  int64_t elements = onnx::im2colElements(op);
  if (!elements)
    return 0;
  auto y = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  return table.bytesOf(y) / static_cast<double>(y.getNumElements()) *
         static_cast<double>(elements);
}

/// Per position of a stage's ops (`ops`, table indices in order; one more
/// entry, 0, at the end): the bytes of the parameter gradients live while the
/// backward pass differentiates the op there, each from the last use of its
/// parameter until the optimizer step. `share` gives the device's share of a
/// parameter.
std::vector<double>
parameterGradientsFrom(const OpCatalog &table, llvm::ArrayRef<int> ops,
                       llvm::function_ref<double(Value)> share) {
  int n = static_cast<int>(ops.size());
  llvm::DenseMap<Value, int> lastUse;
  for (auto [pos, i] : llvm::enumerate(ops))
    for (Value v : table.ops[i]->getOperands())
      if (parameterCount(v) > 0)
        lastUse[v] = static_cast<int>(pos);
  std::vector<double> grads(n + 1, 0);
  for (auto &[v, pos] : lastUse)
    grads[pos] += table.bytesOf(v.getType()) * share(v);
  for (int k = n - 1; k >= 0; --k)
    grads[k] += grads[k + 1];
  return grads;
}

/// The layer of a stage (`ops`, catalog indices) whose values layer-by-layer
/// recomputation keeps instead of rebuilding: on the last stage
/// (`keepLastLayer`) its last layer, whose backward pass runs right after its
/// forward pass (Recompute.h); else none.
static std::optional<int> keptLayerOf(const OpCatalog &table,
                                      llvm::ArrayRef<int> ops,
                                      bool keepLastLayer) {
  if (!keepLastLayer || ops.empty())
    return std::nullopt;
  return table.layer[ops.back()];
}

/// Layer-by-layer recomputation as the program does it (Recompute.h): of the
/// values `saved` for the backward pass (value -> position of its first
/// reader, bytes), a microbatch keeps each layer's inputs (values produced
/// outside the layer, or outside the stage) from its forward part, and
/// rebuilds each layer's own values when the backward pass reaches the
/// layer's last op; they live until their first reader is differentiated
/// (added to `transient`, per position). On the last stage
/// (`keepLastLayer`) the last layer's values are kept, as the program does.
/// Returns the kept values, with their first readers' positions and bytes.
llvm::DenseMap<Value, std::pair<int, double>>
recomputeKept(const OpCatalog &table, llvm::ArrayRef<int> ops,
              const llvm::DenseSet<int> &inStage,
              const llvm::DenseMap<Value, std::pair<int, double>> &saved,
              bool keepLastLayer, llvm::function_ref<double(Value)> valueBytes,
              std::vector<double> &transient) {
  auto layerOf = [&](Value v) {
    auto r = llvm::dyn_cast<OpResult>(v);
    auto it = r ? table.index.find(r.getOwner()) : table.index.end();
    return it == table.index.end() || !inStage.count(it->second)
               ? -1
               : table.layer[it->second];
  };
  llvm::DenseMap<int, int> layerEnd;
  for (auto [pos, i] : llvm::enumerate(ops))
    layerEnd[table.layer[i]] = static_cast<int>(pos);
  std::optional<int> keptLayer = keptLayerOf(table, ops, keepLastLayer);
  llvm::DenseMap<Value, std::pair<int, double>> kept;
  for (auto [pos, i] : llvm::enumerate(ops))
    for (Value v : table.ops[i]->getOperands()) {
      v = onnx::viewRoot(v);
      if (matchPattern(v, m_Constant()) || llvm::isa<BlockArgument>(v) ||
          layerOf(v) == table.layer[i])
        continue;
      auto [it, inserted] =
          kept.try_emplace(v, static_cast<int>(pos), valueBytes(v));
      it->second.first = std::min(it->second.first, static_cast<int>(pos));
    }
  for (auto &[v, at] : saved) {
    int L = layerOf(v);
    if (kept.count(v) || L < 0 || L == keptLayer) {
      kept.try_emplace(v, at);
      continue;
    }
    for (int k = at.first; k <= layerEnd.lookup(L); ++k)
      transient[k] += at.second;
  }
  return kept;
}

/// The ops of a stage (`ops`, catalog indices) whose forward the backward
/// pass runs again under layer-by-layer recomputation (Recompute.h): every
/// op, but on the last stage (`keepLastLayer`) not those of its last layer,
/// whose values recomputeKept keeps, as the program does. An upper bound
/// within a layer: the program clones only the ops that rebuild values the
/// backward pass reads and does not keep (a block's last GEMM, whose result
/// only the next layer reads, is not run again).
static llvm::DenseSet<int> recomputedOps(const OpCatalog &table,
                                         llvm::ArrayRef<int> ops,
                                         bool keepLastLayer) {
  std::optional<int> keptLayer = keptLayerOf(table, ops, keepLastLayer);
  llvm::DenseSet<int> out;
  for (int i : ops)
    if (table.layer[i] != keptLayer)
      out.insert(i);
  return out;
}

/// The backward pass of one microbatch differentiates a stage's ops last to
/// first: while it differentiates the op at position k, the `kept` values
/// whose first reader is at k or before are live (an entry read at position
/// n lives only to the end of the forward part), and the bytes at position
/// k that live only there (`transient`: the op's scratch, recomputed
/// values), of parameter gradients (`grads`) and of activation gradients
/// (`flowing`). The peak is there or at the end of the forward part (every
/// kept value, no gradient). Returns {activations, gradients} at the peak.
std::pair<double, double>
backwardPeak(const llvm::DenseMap<Value, std::pair<int, double>> &kept,
             llvm::ArrayRef<double> transient, llvm::ArrayRef<double> grads,
             llvm::ArrayRef<double> flowing) {
  int n = static_cast<int>(transient.size());
  std::vector<double> freedAfter(n + 1, 0);
  double live = 0;
  for (auto &[v, at] : kept) {
    freedAfter[at.first] += at.second;
    live += at.second;
  }
  double acts = live, atPeak = 0;
  for (int k = n - 1; k >= 0; --k) {
    live -= freedAfter[k + 1];
    double here = live + transient[k];
    if (here + grads[k] + flowing[k] > acts + atPeak) {
      acts = here;
      atPeak = grads[k] + flowing[k];
    }
  }
  return {acts, atPeak};
}
} // namespace

std::vector<std::pair<Operation *, std::string>>
listPlanOps(func::FuncOp func) {
  std::vector<std::pair<Operation *, std::string>> out;
  llvm::StringSet<> used;
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        llvm::isa<onnx::ConstantOp, onnx::NoValueOp>(op))
      continue;
    std::string base = onnx::getNodeName(op.getLoc());
    if (base.empty())
      base =
          op.getName().stripDialect().str() + "#" + std::to_string(out.size());
    std::string name = base;
    for (int k = 2; used.contains(name); ++k)
      name = base + "#" + std::to_string(k);
    used.insert(name);
    out.push_back({&op, name});
  }
  return out;
}

std::vector<llvm::SmallVector<Value>>
valuesReadByGradients(llvm::ArrayRef<Operation *> ops,
                      llvm::DenseSet<Value> *activeOut) {
  std::vector<llvm::SmallVector<Value>> reads(ops.size());
  if (ops.empty())
    return reads;
  // Float values on a path from a parameter: those whose gradient the backward
  // pass computes (hetpar-onnx-differentiate's `active`, forward half).
  llvm::DenseSet<Value> active;
  auto isActive = [&](Value v) {
    return active.contains(v) || parameterCount(v) > 0;
  };
  // A rule that cannot differentiate this form reports an error: not ours.
  ScopedDiagnosticHandler quiet(ops.front()->getContext(),
                                [](Diagnostic &) { return success(); });
  Block scratch;
  OpBuilder b(ops.front()->getContext());
  for (auto [i, op] : llvm::enumerate(ops)) {
    SmallVector<bool> needed;
    for (Value in : op->getOperands())
      needed.push_back(isActive(in));
    if (llvm::none_of(needed, [](bool n) { return n; }))
      continue;
    for (Value r : op->getResults())
      if (auto t = llvm::dyn_cast<RankedTensorType>(r.getType());
          t && llvm::isa<FloatType>(t.getElementType()))
        active.insert(r);
    auto rule = llvm::dyn_cast<GradientOpInterface>(op);
    if (!rule)
      continue; // training refuses such a model anyway
    b.setInsertionPointToEnd(&scratch);
    SmallVector<Value> dY;
    for (Value r : op->getResults())
      dY.push_back(scratch.addArgument(r.getType(), op->getLoc()));
    GradientBuilder g(b, op->getLoc(), needed);
    SmallVector<Value> dX;
    bool ok = succeeded(rule.buildGradients(g, dY, dX));
    llvm::SmallDenseSet<Value> seen;
    auto visit = [&](Value v) {
      bool readHere = llvm::any_of(v.getUsers(), [&](Operation *u) {
        return u->getBlock() == &scratch;
      });
      if ((!ok || readHere) && seen.insert(v).second)
        reads[i].push_back(v);
    };
    for (Value v : op->getOperands())
      visit(v);
    for (Value v : op->getResults())
      visit(v);
    for (Operation &o : llvm::make_early_inc_range(llvm::reverse(scratch))) {
      o.dropAllUses();
      o.erase();
    }
    scratch.eraseArguments(0, scratch.getNumArguments());
  }
  if (activeOut)
    *activeOut = std::move(active);
  return reads;
}

double bubbleFraction(llvm::ArrayRef<ScheduledTask> tasks, int stages) {
  double first = std::numeric_limits<double>::infinity(), last = 0, busy = 0;
  for (const ScheduledTask &t : tasks) {
    first = std::min(first, t.start);
    last = std::max(last, t.end);
    busy += t.end - t.start;
  }
  double span = last - (tasks.empty() ? 0 : first);
  return span > 0 && stages > 0 ? 1.0 - busy / (stages * span) : 0;
}

int inFlightMicrobatches(int stage, int stages, int microbatches,
                         Schedule schedule, bool training) {
  if (!training)
    return 1;
  if (schedule == Schedule::GPipe)
    return microbatches;
  return std::min(stages - stage, microbatches);
}

std::vector<ScheduledTask> schedulePipeline(int p, int m, Schedule schedule,
                                            bool training,
                                            llvm::ArrayRef<double> fwd,
                                            llvm::ArrayRef<double> bwd,
                                            llvm::ArrayRef<double> transfer) {
  // Each stage's task list: (microbatch, backward?) in execution order.
  std::vector<std::vector<std::pair<int, bool>>> order(p);
  for (int s = 0; s < p; ++s) {
    auto &o = order[s];
    if (!training) {
      for (int j = 0; j < m; ++j)
        o.push_back({j, false});
    } else if (schedule == Schedule::GPipe) {
      for (int j = 0; j < m; ++j)
        o.push_back({j, false});
      for (int j = m - 1; j >= 0; --j)
        o.push_back({j, true});
    } else { // 1F1B (PipeDream-Flush): warm-up forwards, then one of each
      int warm = std::min(p - s - 1, m);
      for (int j = 0; j < warm; ++j)
        o.push_back({j, false});
      for (int j = 0; j < m - warm; ++j) {
        o.push_back({warm + j, false});
        o.push_back({j, true});
      }
      for (int j = m - warm; j < m; ++j)
        o.push_back({j, true});
    }
  }
  // end[s][j][b]: when the task finished, -1 while not scheduled.
  // arrive[s][j][b]: when task (s, j, b)'s output has reached the stage that
  // needs it (its end when no transfer follows), -1 while not scheduled.
  std::vector<std::vector<std::array<double, 2>>> arrive(
      p, std::vector<std::array<double, 2>>(m, {-1.0, -1.0}));
  std::vector<size_t> next(p, 0);
  std::vector<double> free(p, 0.0);
  // linkFree[s][0]: link s -> s + 1 (activations); [1]: s + 1 -> s (gradients).
  std::vector<std::array<double, 2>> linkFree(std::max(p - 1, 0), {0.0, 0.0});
  std::vector<ScheduledTask> tasks;
  size_t total = 0;
  for (auto &o : order)
    total += o.size();
  while (tasks.size() < total) {
    bool progress = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < order[s].size()) {
        auto [j, back] = order[s][next[s]];
        double ready;
        if (!back) {
          if (s == 0)
            ready = 0;
          else if (arrive[s - 1][j][0] < 0)
            break;
          else
            ready = arrive[s - 1][j][0];
        } else {
          if (s == p - 1)
            ready = arrive[s][j][0];
          else if (arrive[s + 1][j][1] < 0)
            break;
          else
            ready = arrive[s + 1][j][1];
        }
        double start = std::max(free[s], ready);
        double stop = start + (back ? bwd[s] : fwd[s]);
        ScheduledTask task{s, j, back, start, stop};
        free[s] = stop;
        arrive[s][j][back] = stop;
        // Forward outputs go to s + 1 over link s; gradients to s - 1 over
        // link s - 1 (the same link, the other direction).
        int link = back ? s - 1 : s;
        if (link >= 0 && link < p - 1) {
          task.sendStart = std::max(stop, linkFree[link][back]);
          task.sendEnd = task.sendStart + transfer[link];
          linkFree[link][back] = task.sendEnd;
          arrive[s][j][back] = task.sendEnd;
        }
        tasks.push_back(task);
        ++next[s];
        progress = true;
      }
    }
    if (!progress)
      break; // cannot happen for the orders above
  }
  return tasks;
}

llvm::Expected<Prediction> simulate(ModuleOp module, const Cluster &cluster,
                                    const Plan &plan, const CostModel &model) {
  auto funcs = module.getOps<func::FuncOp>();
  if (funcs.empty())
    return fail("the module has no function");
  if (llvm::Error err = checkPlanningAttributes(module))
    return std::move(err);
  OpCatalog catalog(*funcs.begin());
  return simulate(catalog, *funcs.begin(), cluster, plan, model);
}

llvm::Expected<Prediction> simulate(const OpCatalog &table, func::FuncOp func,
                                    const Cluster &cluster, const Plan &plan,
                                    const CostModel &model, bool withTrace) {
  bool training = plan.mode == Mode::Training;
  int p = plan.stages.size(), m = plan.microbatches;
  auto placed = placePlan(table, plan, &cluster);
  if (!placed)
    return placed.takeError();
  const std::vector<int> &stageOf = placed->stageOf;
  const std::vector<std::vector<int>> &stageOps = placed->stageOps;
  const std::vector<std::vector<double>> &replicaShare = placed->replicaShares;

  Prediction pred;
  pred.warnings = std::move(placed->warnings);
  pred.batch = table.batch.samples;
  pred.dtype = table.dtype;

  // --- Work of each op ---
  std::vector<OpWork> work(table.ops.size());
  for (auto [i, op] : llvm::enumerate(table.ops)) {
    const auto &w = table.work[i];
    if (!w)
      return fail(
          llvm::formatv("op '{0}' has a shape that is not static; run the "
                        "static pipeline first",
                        table.names[i]));
    work[i] = *w;
    double bf = training
                    ? model.getParams().backwardFactor[static_cast<int>(w->cls)]
                    : 0;
    pred.flopsPerStep += w->flops * (1 + bf);
  }

  // Each op's resolved sharding on its stage's group (shares of constants and
  // results per tensor-parallel index). One that does not resolve stays
  // empty: timeReplica reports it, naming the stage.
  std::vector<std::optional<ResolvedSharding>> resolved(table.ops.size());
  auto shardingOf = [&](int i) -> const OpSharding * {
    const Stage &stage = plan.stages[stageOf[i]];
    auto it = stage.shardings.find(table.names[i]);
    return it == stage.shardings.end() ? nullptr : &it->second;
  };
  for (auto [s, stage] : llvm::enumerate(plan.stages))
    for (int i : stageOps[s]) {
      auto r = resolveSharding(table, i, shardingOf(i), stage.tensor);
      if (r)
        resolved[i] = std::move(*r);
      else
        llvm::consumeError(r.takeError());
    }
  // Values that travel to the next stage split (exitSplit), and their bytes
  // per boundary: each receiving device gets its part.
  llvm::DenseSet<Value> leaveSplit;
  std::vector<double> splitBytes(std::max(p - 1, 0), 0.0);
  for (auto [i, op] : llvm::enumerate(table.ops))
    for (OpResult r : op->getResults()) {
      auto exit = exitSplit(
          table, r,
          [&](int k) { return resolved[k] ? &*resolved[k] : nullptr; },
          [&](int k) {
            const OpSharding *sh = shardingOf(k);
            return sh ? sh->collective : std::nullopt;
          },
          [&](int k) { return stageOf[k]; });
      if (!exit)
        continue;
      leaveSplit.insert(r);
      for (int s = stageOf[i]; s < exit->stage; ++s)
        splitBytes[s] += table.bytesOf(r.getType()) / m;
    }

  // --- Stage times (per microbatch) ---
  // A stage's time is that of its slowest replica; inside a replica each op
  // waits for its slowest tensor-parallel device, then runs its collective.
  // ownForward/ownBackward: the compute each device itself does (the rest of
  // the stage's time it waits), for the trace and busy fractions.
  llvm::DenseMap<int, double> ownForward, ownBackward;
  pred.stages.resize(p);
  std::vector<double> fwd(p), bwd(p), transfer(std::max(p - 1, 0), 0.0);
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    auto &sp = pred.stages[s];
    for (int i : stageOps[s])
      sp.ops.push_back(table.names[i]);
    std::map<std::string, ReplicaTime> replicaMemo;
    std::optional<llvm::DenseSet<int>> recomputed;
    if (training && stage.recompute)
      recomputed =
          recomputedOps(table, stageOps[s],
                        /*keepLastLayer=*/static_cast<int>(s) + 1 == p);
    for (int r = 0; r < stage.data; ++r) {
      double batchShare = replicaShare[s][r] / m;
      llvm::ArrayRef<int> group(stage.devices.data() + r * stage.tensor,
                                stage.tensor);
      // Replicas on alike devices with the same share time alike.
      std::string key = groupSignature(cluster, group) +
                        llvm::formatv("|{0:e}", batchShare).str();
      auto memo = replicaMemo.find(key);
      if (memo == replicaMemo.end()) {
        auto timed = timeReplica(
            table, stageOps[s], stage.shardings, group, batchShare, training,
            recomputed ? &*recomputed : nullptr, cluster, model, &leaveSplit);
        if (!timed)
          return fail(llvm::formatv("stage {0}: {1}", s,
                                    llvm::toString(timed.takeError())));
        memo = replicaMemo.emplace(key, std::move(*timed)).first;
      }
      const ReplicaTime *timed = &memo->second;
      for (int t = 0; t < stage.tensor; ++t) {
        ownForward[group[t]] += timed->ownForward[t];
        ownBackward[group[t]] += timed->ownBackward[t];
      }
      double f = timed->forward, b = timed->backward, coll = timed->collectives;
      if (f > sp.forward) {
        sp.forward = f;
        sp.forwardCollectives = coll;
      }
      sp.backward = std::max(sp.backward, b);
    }
    fwd[s] = sp.forward;
    bwd[s] = sp.backward;
  }

  // --- Transfers: the values that cross each boundary, per microbatch ---
  // Replica r of stage s sends its part to replica r mod data' of stage s + 1
  // (from and to the first device of each replica, or in parts between
  // their devices for a value that travels split); pairs run in parallel.
  for (int s = 0; s + 1 < p; ++s) {
    double bytes = 0;
    llvm::DenseSet<Value> counted;
    for (auto [i, op] : llvm::enumerate(table.ops)) {
      if (stageOf[i] > s)
        continue;
      for (Value r : op->getResults()) {
        bool crosses = llvm::any_of(r.getUsers(), [&](Operation *user) {
          auto it = table.index.find(user);
          return it == table.index.end() ? false : stageOf[it->second] > s;
        });
        if (crosses && counted.insert(r).second)
          bytes += table.bytesOf(r.getType()) / m;
      }
    }
    const Stage &from = plan.stages[s], &to = plan.stages[s + 1];
    // A value that travels split moves in parts between the groups' devices
    // at once: the busiest device moves 1 / min(tensor, tensor') of it.
    bytes += splitBytes[s] / std::min(from.tensor, to.tensor) - splitBytes[s];
    int pairs = std::max(from.data, to.data);
    for (int r = 0; r < pairs; ++r) {
      int src = from.devices[(r % from.data) * from.tensor];
      int dst = to.devices[(r % to.data) * to.tensor];
      transfer[s] = std::max(
          transfer[s], model.collectiveTime(Collective::SendRecv, bytes / pairs,
                                            {src, dst}, cluster));
    }
    pred.stages[s].transferOut = transfer[s];
  }

  // --- Schedule ---
  std::vector<ScheduledTask> tasks =
      schedulePipeline(p, m, plan.schedule, training, fwd, bwd, transfer);
  std::vector<double> lastEnd(p, 0.0);
  llvm::DenseMap<int, double> deviceBusy;
  for (const ScheduledTask &t : tasks) {
    lastEnd[t.stage] = std::max(lastEnd[t.stage], t.end);
    const Stage &stage = plan.stages[t.stage];
    const auto &sp = pred.stages[t.stage];
    std::string name = (t.backward ? "B" : "F") + std::to_string(t.microbatch) +
                       " stage " + std::to_string(t.stage);
    double comm = t.backward ? 0 : sp.forwardCollectives;
    for (int id : stage.devices) {
      // Each device computes for its own time (per microbatch), then waits for
      // the slowest device of the stage.
      double own = std::min((t.backward ? ownBackward : ownForward).lookup(id),
                            t.end - t.start - comm);
      deviceBusy[id] += own;
      if (withTrace)
        pred.trace.push_back(
            {name, t.backward ? "backward" : "forward", id, 0, t.start, own});
      if (withTrace && comm > 0)
        pred.trace.push_back(
            {name + " collectives", "collective", id, 1, t.end - comm, comm});
      if (withTrace && t.sendEnd > t.sendStart && id == stage.devices.front())
        pred.trace.push_back(
            {(t.backward ? "send B" : "send F") + std::to_string(t.microbatch),
             "transfer", id, t.backward ? 3 : 2, t.sendStart,
             t.sendEnd - t.sendStart});
    }
  }

  auto operandShare = [&](int i, unsigned k, int t) {
    return resolved[i]->operandShares[k][t];
  };

  // --- Gradient synchronisation across data-parallel replicas ---
  // ZeRO-2 differs from ZeRO-1 only where a stage sums microbatches.
  auto zero2 = [&](const Stage &stage) {
    return training && stage.zero == 2 && stage.data > 1 && m > 1;
  };
  double stepTime = 0;
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    double sync = 0;
    if (training && stage.data > 1) {
      // Device t of every replica holds the same shard: one all-reduce per t.
      for (int t = 0; t < stage.tensor; ++t) {
        double bytes = 0;
        llvm::DenseSet<Value> seen;
        for (int i : stageOps[s])
          for (auto [k, v] : llvm::enumerate(table.ops[i]->getOperands()))
            if (parameterCount(v) > 0 && seen.insert(v).second)
              bytes += table.bytesOf(v.getType()) * operandShare(i, k, t);
        std::vector<int> group;
        for (int r = 0; r < stage.data; ++r)
          group.push_back(stage.devices[r * stage.tensor + t]);
        double time =
            model.collectiveTime(Collective::AllReduce, bytes, group, cluster);
        // ZeRO-2: each earlier microbatch's gradients are reduce-scattered
        // as well (hetpar-dist-reduce-gradients), in the stage's schedule;
        // counted here, after its last backward task.
        if (zero2(stage))
          time += (m - 1) * model.collectiveTime(Collective::ReduceScatter,
                                                 bytes, group, cluster);
        sync = std::max(sync, time);
      }
      for (int id : stage.devices)
        if (withTrace)
          pred.trace.push_back(
              {"gradient all-reduce stage " + std::to_string(s), "sync", id, 1,
               lastEnd[s], sync});
    }
    pred.stages[s].gradientSync = sync;
    stepTime = std::max(stepTime, lastEnd[s] + sync);
  }
  pred.stepTime = stepTime;
  pred.throughput = stepTime > 0 ? pred.batch / stepTime : 0;
  // Gradient synchronisation is not part of the bubble.
  pred.bubbleFraction = bubbleFraction(tasks, p);

  // --- Memory per device ---
  // ZeRO-1: replica r holds its share of the stage's optimizer state (the
  // gradients stay whole). The all-reduce above stands for ZeRO's
  // reduce-scatter and all-gather, which move the same bytes in a ring.
  auto zeroShare = [&](const Stage &stage, int r) {
    std::vector<double> shares = zeroStateShares(stage, &cluster);
    if (shares.empty())
      return 1.0;
    double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    return shares[r] / sum;
  };
  auto addDevice = [&](DevicePrediction &dp, const Device &d, size_t s) {
    if (dp.memory.total() > d.memoryBytes)
      pred.memoryProblems.push_back(llvm::formatv(
          "device {0} ({1}, stage {2}) needs {3} bytes ({4}: weights {5}, "
          "activations {6}, gradients {7}, optimizer {8}, inputs {11}) but "
          "has {9} bytes ({10})",
          dp.id, d.kind, s,
          llvm::formatv("{0:F0}", std::ceil(dp.memory.total())),
          formatBytes(dp.memory.total()), formatBytes(dp.memory.weights),
          formatBytes(dp.memory.activations), formatBytes(dp.memory.gradients),
          formatBytes(dp.memory.optimizer),
          llvm::formatv("{0:F0}", d.memoryBytes), formatBytes(d.memoryBytes),
          formatBytes(dp.memory.inputs)));
    pred.devices.push_back(dp);
  };
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    std::map<std::tuple<int, double, int>, DeviceMemory> memoryMemo;
    int inFlight = inFlightMicrobatches(s, p, m, plan.schedule, training);
    llvm::DenseSet<int> inStage(stageOps[s].begin(), stageOps[s].end());
    for (int r = 0; r < stage.data; ++r) {
      double batchShare = replicaShare[s][r] / m;
      for (int t = 0; t < stage.tensor; ++t) {
        int id = stage.devices[r * stage.tensor + t];
        const Device &d = *cluster.findDevice(id);
        DevicePrediction dp{id, d.kind,        static_cast<int>(s),
                            {}, d.memoryBytes, deviceBusy.lookup(id)};
        // Devices at one tensor index with one share hold alike.
        // (ZeRO-2: and one replica, whose share of the summed gradients
        // is its own.)
        auto memoKey = std::make_tuple(t, batchShare, zero2(stage) ? r : -1);
        if (auto it = memoryMemo.find(memoKey); it != memoryMemo.end()) {
          dp.memory = it->second;
          dp.memory.optimizer =
              std::ceil(dp.memory.optimizer * zeroShare(stage, r));
          addDevice(dp, d, s);
          continue;
        }
        // Weights (and, in training, their gradients and the optimizer's
        // state: its float32 slots, and a float32 master copy of parameters
        // held in a narrower type: a 16-bit compute dtype or a 16-bit
        // model), weights and gradients in the compute dtype.
        llvm::DenseMap<Value, double> weightShare;
        for (int i : stageOps[s]) {
          for (auto [k, v] : llvm::enumerate(table.ops[i]->getOperands()))
            if (matchPattern(v, m_Constant())) {
              double share = operandShare(i, k, t);
              auto [it, inserted] = weightShare.try_emplace(v, share);
              if (!inserted)
                it->second = std::max(it->second, share);
            }
        }
        double params = 0, paramBytes = 0, narrowParams = 0;
        for (auto [v, share] : weightShare) {
          dp.memory.weights += table.bytesOf(v.getType()) * share;
          params += parameterCount(v) * share;
          if (parameterCount(v) > 0) {
            double bytes = table.bytesOf(v.getType());
            paramBytes += bytes * share;
            if (bytes < 4 * parameterCount(v))
              narrowParams += parameterCount(v) * share;
          }
        }
        // The inputs the stage takes (stageTakesInput): one without the
        // batch (a scale, a table) whole, a batch input at the device's rows.
        int numStages = static_cast<int>(plan.stages.size());
        for (BlockArgument a : func.getArguments())
          if (stageTakesInput(
                  a, static_cast<int>(s), numStages, [&](Operation *op) {
                    auto it = table.index.find(op);
                    return it == table.index.end() ? -1 : stageOf[it->second];
                  }))
            dp.memory.inputs += tensorBytes(a.getType(), FloatMode::F32) *
                                (!table.batch.of(a) ? 1.0
                                 : training         ? batchShare * m
                                                    : 1.0 / m);
        // The labels the loss adds: the last stage's, at the replica's rows.
        if (training && table.labels && static_cast<int>(s) == numStages - 1)
          dp.memory.inputs +=
              tensorBytes(table.labels, FloatMode::F32) * batchShare * m;
        if (training) {
          // A gradient per parameter, in the parameter's compute dtype (all at
          // once; without recomputation, those live at the peak: below).
          dp.memory.gradients = paramBytes;
          dp.memory.optimizer =
              kOptimizerSlotBytes * table.optimizerSlots * params +
              kMasterCopyBytes * narrowParams;
        }
        // Activations: in inference the peak of the live values of one
        // microbatch; in training the values the backward pass reads (those
        // the stage's gradient rules read, and the stage's results the loss
        // reads), for each microbatch in flight (with recomputation, each
        // layer's inputs, plus one layer being rebuilt: recomputeKept). A view
        // (onnx::isView) shares the buffer of its operand, as in the generated
        // programs.
        // A result takes the device's share while it and every use of it
        // stay split; a value some use needs whole (gathered, reduced) is kept
        // whole.
        auto valueBytes = [&](Value v) {
          double b = table.bytesOf(v.getType()) * batchShare;
          auto r = llvm::dyn_cast<OpResult>(v);
          if (!r)
            return b;
          auto it = table.index.find(r.getOwner());
          if (it == table.index.end() || !inStage.count(it->second))
            return b;
          auto sh = stage.shardings.find(table.names[it->second]);
          return b * keptShare(
                         table,
                         [&](int i) -> const ResolvedSharding * {
                           return resolved[i] ? &*resolved[i] : nullptr;
                         },
                         r,
                         sh == stage.shardings.end() ? std::nullopt
                                                     : sh->second.collective,
                         inStage, t);
        };
        double live = 0, peak = 0;
        llvm::DenseMap<Value, int> lastUse;
        for (int i : stageOps[s])
          for (Value v : table.ops[i]->getOperands())
            if (!matchPattern(v, m_Constant()))
              lastUse[v] = i;
        llvm::DenseSet<Value> liveSet;
        for (int i : stageOps[s]) {
          for (Value v : table.ops[i]->getOperands()) {
            // A graph input is in the program's input buffer (inputs).
            if (matchPattern(v, m_Constant()) || llvm::isa<BlockArgument>(v) ||
                liveSet.count(v))
              continue;
            // A value from an earlier stage.
            liveSet.insert(v);
            live += valueBytes(v);
          }
          for (Value v : table.ops[i]->getResults()) {
            live += valueBytes(v);
            liveSet.insert(v);
          }
          peak = std::max(peak, live + scratchBytes(table, i));
          // Values whose last use in this stage was this op, and that no later
          // stage or the function result needs, are freed.
          for (Value v : table.ops[i]->getOperands()) {
            if (!liveSet.count(v) || lastUse.lookup(v) != i)
              continue;
            bool neededLater = llvm::any_of(v.getUsers(), [&](Operation *u) {
              auto it = table.index.find(u);
              return it == table.index.end() || !inStage.count(it->second);
            });
            if (!neededLater) {
              live -= valueBytes(v);
              liveSet.erase(v);
            }
          }
        }
        // The values kept for the backward pass (and the position
        // in the stage of the first op that reads each: the last to be
        // differentiated, after which it is freed). The loss, differentiated
        // first of all, reads the function's results and keeps one buffer of
        // their size (the log-probabilities of cross-entropy, the difference
        // of mean squared error).
        llvm::DenseMap<Value, std::pair<int, double>> keptAt;
        double lossState = 0;
        if (training) {
          auto keep = [&](int pos, Value v) {
            v = onnx::viewRoot(v);
            if (matchPattern(v, m_Constant()) || llvm::isa<BlockArgument>(v))
              return;
            auto [it, inserted] = keptAt.try_emplace(v, pos, valueBytes(v));
            it->second.first = std::min(it->second.first, pos);
          };
          int n = static_cast<int>(stageOps[s].size());
          for (auto [pos, i] : llvm::enumerate(stageOps[s])) {
            for (Value v : table.readByGradient[i])
              keep(static_cast<int>(pos), v);
            for (Value v : table.ops[i]->getResults())
              if (llvm::any_of(v.getUsers(), [](Operation *u) {
                    return llvm::isa<func::ReturnOp>(u);
                  })) {
                keep(n, v);
                lossState += valueBytes(v);
              }
          }
        }
        if (!training) {
          dp.memory.activations = peak;
        } else {
          int n = static_cast<int>(stageOps[s].size());
          // Per microbatch: the values kept from its forward part (each
          // until the backward pass differentiates its first reader), and
          // per position what lives only there: the op's scratch and the
          // recomputed values.
          llvm::DenseMap<Value, std::pair<int, double>> kept = keptAt;
          std::vector<double> transient(n, 0);
          for (auto [pos, i] : llvm::enumerate(stageOps[s]))
            transient[pos] = scratchBytes(table, i);
          if (stage.recompute)
            kept = recomputeKept(table, stageOps[s], inStage, keptAt,
                                 /*keepLastLayer=*/static_cast<int>(s) + 1 == p,
                                 valueBytes, transient);
          kept[Value()] = {n, lossState};
          double perMicrobatch = 0;
          for (auto &[v, at] : kept)
            perMicrobatch += at.second;
          std::vector<double> grads =
              parameterGradientsFrom(table, stageOps[s], [&](Value v) {
                return weightShare.lookup(v);
              });
          std::vector<double> flowing =
              activationGradients(table, stageOps[s], inStage, valueBytes);
          auto [acts, atPeak] = backwardPeak(kept, transient, grads, flowing);
          dp.memory.activations = perMicrobatch * (inFlight - 1) + acts;
          // Over several microbatches the earlier ones' gradients are summed
          // (hetpar-dist-pipeline-schedule): a whole set beside the current
          // microbatch's.
          dp.memory.gradients = atPeak + (m > 1 ? paramBytes : 0);
          // ZeRO-2 sums only the replica's shards. After a microbatch's
          // backward part its whole gradients are packed, one bucket
          // (kGradientBucketBytes) at a time, for their reduce-scatter: a
          // moment when its own activations are gone, the peak when that
          // is more than the backward pass's.
          double packing =
              paramBytes + std::min(paramBytes, kGradientBucketBytes);
          if (zero2(stage)) {
            dp.memory.gradients = std::max(atPeak, packing - acts) +
                                  paramBytes * zeroShare(stage, r);
          } else if (stage.data > 1) {
            // Data parallelism (ZeRO-1 too): the gradients are all-reduced
            // (reduce-scattered) a bucket at a time, each packed into a
            // scaled copy beside the whole set (hetpar-dist-reduce-gradients:
            // concatenated, scaled, reduced, cut back): after the backward
            // part, when the activations are gone.
            dp.memory.gradients = std::max(dp.memory.gradients, packing - acts);
          }
        }
        // Whole bytes (a replica's share of a microbatch can make fractions).
        for (double *part :
             {&dp.memory.weights, &dp.memory.activations, &dp.memory.gradients,
              &dp.memory.optimizer, &dp.memory.inputs})
          *part = std::ceil(*part);
        memoryMemo[memoKey] = dp.memory;
        dp.memory.optimizer =
            std::ceil(dp.memory.optimizer * zeroShare(stage, r));
        addDevice(dp, d, s);
      }
    }
  }
  std::sort(pred.devices.begin(), pred.devices.end(),
            [](const DevicePrediction &a, const DevicePrediction &b) {
              return a.id < b.id;
            });
  return pred;
}

llvm::json::Object predictionToJSON(const Plan &plan, const Prediction &p,
                                    const Cluster &cluster) {
  llvm::json::Object out = planToJSON(plan);
  out["predicted_step_time_s"] = p.stepTime;
  out["predicted_throughput"] = p.throughput;
  out["flops_per_step"] = p.flopsPerStep;
  out["compute_dtype"] = floatModeName(p.dtype);
  out["bubble_fraction"] = p.bubbleFraction;
  out["batch"] = p.batch;
  out["memory_fits"] = p.memoryProblems.empty();
  if (!p.warnings.empty())
    out["warnings"] = llvm::json::Array(p.warnings);
  llvm::json::Array devices;
  for (const DevicePrediction &d : p.devices)
    devices.push_back(llvm::json::Object{
        {"id", d.id},
        {"kind", d.kind},
        {"node", cluster.nodes[cluster.findDevice(d.id)->node].name},
        {"stage", d.stage},
        {"peak_memory_bytes", d.memory.total()},
        {"memory_capacity_bytes", d.capacity},
        {"memory", llvm::json::Object{{"weights", d.memory.weights},
                                      {"activations", d.memory.activations},
                                      {"gradients", d.memory.gradients},
                                      {"optimizer", d.memory.optimizer},
                                      {"inputs", d.memory.inputs}}},
        {"busy_fraction", p.stepTime > 0 ? d.busy / p.stepTime : 0.0}});
  out["devices"] = std::move(devices);
  // Stage outputs next to the stage inputs.
  if (auto *stages = out.getArray("stages"))
    for (auto [s, v] : llvm::enumerate(*stages)) {
      auto *o = v.getAsObject();
      o->insert({"forward_time_s", p.stages[s].forward});
      if (plan.mode == Mode::Training)
        o->insert({"backward_time_s", p.stages[s].backward});
      (*o)["ops"] = llvm::json::Array(p.stages[s].ops);
    }
  out["cluster"] = cluster.name;
  return out;
}

void writeTraceJSON(llvm::raw_ostream &os, const Prediction &p,
                    const Cluster &cluster) {
  // Streamed: a long pipeline has millions of spans.
  llvm::json::OStream j(os);
  j.objectBegin();
  j.attributeBegin("traceEvents");
  j.arrayBegin();
  llvm::DenseSet<int> named;
  for (const DevicePrediction &d : p.devices) {
    if (!named.insert(d.id).second)
      continue;
    std::string label =
        llvm::formatv("device {0} ({1}, {2})", d.id, d.kind,
                      cluster.nodes[cluster.findDevice(d.id)->node].name);
    j.value(llvm::json::Object{{"name", "process_name"},
                               {"ph", "M"},
                               {"pid", d.id},
                               {"args", llvm::json::Object{{"name", label}}}});
    j.value(
        llvm::json::Object{{"name", "process_sort_index"},
                           {"ph", "M"},
                           {"pid", d.id},
                           {"args", llvm::json::Object{{"sort_index", d.id}}}});
    for (auto [tid, name] : {std::pair<int, const char *>{0, "compute"},
                             {1, "collectives"},
                             {2, "send activations"},
                             {3, "send gradients"}})
      j.value(llvm::json::Object{{"name", "thread_name"},
                                 {"ph", "M"},
                                 {"pid", d.id},
                                 {"tid", tid},
                                 {"args", llvm::json::Object{{"name", name}}}});
  }
  for (const TraceSpan &s : p.trace) {
    if (s.duration <= 0)
      continue;
    j.object([&] {
      j.attribute("name", s.name);
      j.attribute("cat", s.category);
      j.attribute("ph", "X");
      j.attribute("pid", s.device);
      j.attribute("tid", s.lane);
      j.attribute("ts", s.start * 1e6);
      j.attribute("dur", s.duration * 1e6);
    });
  }
  j.arrayEnd();
  j.attributeEnd();
  j.attribute("displayTimeUnit", "ms");
  j.attribute("otherData",
              llvm::json::Object{{"predicted_step_time_s", p.stepTime},
                                 {"bubble_fraction", p.bubbleFraction}});
  j.objectEnd();
}

} // namespace hetpar
