//===- Search.cpp - pipeline stages, device blocks, data parallelism ------===//
//
// The inter-op search (see Search.h and docs/search.md):
//  1. Units: runs of ops of one layer (layerOf); ops without a layer name join
//     the unit before them (the ones before any layer form their own unit).
//     Stage boundaries fall between units, so layers stay whole.
//  2. Device blocks: for a stage count p, the devices in cluster order (nodes
//     stay together) cut into p contiguous blocks of near-equal size. A block
//     runs as data x tensor with its tensor groups inside one node.
//  3. Unit times: each unit on each tensor group, its shardings from
//     solveShardings (cached for units of one signature on groups of one
//     composition and similar batch shares), timed per replica with the
//     replica's batch share (shares in proportion to replica speed).
//  4. For every (p, microbatch count): a dynamic program over (stage, last
//     unit) that minimizes the slowest stage's time per microbatch, each
//     stage's configuration (tensor degree, recomputation) the fastest that
//     fits its devices' memory; the pipeline's step time is then estimated as
//     sum_s t_s + (m - 1) max_s t_s + max_s sync_s (Alpa, OSDI 2022, eq. 2).
//  5. The best estimates, and the baselines, are simulated; the fastest that
//     fits wins.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Search/Search.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Plan/PlanPlacement.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

using namespace mlir;

namespace hetpar {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kInf = std::numeric_limits<double>::infinity();

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

struct Unit {
  int first, last; ///< op indices, inclusive
  std::vector<int> ops;
  int signature; ///< units of one signature have the same ops and shapes
};

/// Ops of the function cut into units (layers).
std::vector<Unit> makeUnits(const OpCatalog &catalog) {
  std::vector<Unit> units;
  for (size_t i = 0; i < catalog.size(); ++i) {
    if (units.empty() || catalog.layer[i] != catalog.layer[i - 1])
      units.push_back({static_cast<int>(i), static_cast<int>(i), {}, 0});
    units.back().last = i;
    units.back().ops.push_back(i);
  }
  // Signatures: op types, result types and where operands come from.
  std::map<std::string, int> signatures;
  for (Unit &u : units) {
    std::string sig;
    llvm::raw_string_ostream os(sig);
    llvm::DenseMap<Operation *, int> local;
    for (int i : u.ops) {
      Operation *op = catalog.ops[i];
      local[op] = local.size();
      os << op->getName() << "(";
      for (Value v : op->getOperands()) {
        if (auto r = llvm::dyn_cast<OpResult>(v);
            r && local.count(r.getOwner()))
          os << "%" << local[r.getOwner()] << "." << r.getResultNumber();
        else
          os << (isConstant(v) ? "c:" : "x:") << v.getType();
        os << ",";
      }
      os << ")->";
      for (Type t : op->getResultTypes())
        os << t << ",";
      op->getAttrDictionary().print(os);
      os << ";";
    }
    u.signature = signatures.try_emplace(sig, signatures.size()).first->second;
  }
  return units;
}

/// Memory of one unit on one device, per microbatch where it scales.
struct UnitMemory {
  double weights = 0, params = 0, paramBytes = 0;
  double activations = 0; ///< results kept for the backward pass
  double peak = 0;        ///< largest op (operands + results), inference
  double inputs = 0;      ///< values from outside the unit
};

/// A unit on one replica's tensor group at one batch share.
struct UnitTime {
  double forward = 0, backward = 0;
  std::vector<UnitMemory> memory; ///< per tensor-parallel index
};

/// A contiguous block of devices run as data x tensor.
struct BlockConfig {
  int tensor = 1, data = 1;
  std::vector<int> devices;
  std::vector<int64_t> samples; ///< per replica, of one microbatch
};

class Searcher {
public:
  Searcher(func::FuncOp func, const OpCatalog &catalog, const Cluster &cluster,
           const CostModel &model, const SearchOptions &options,
           Clock::time_point start)
      : func(func), catalog(catalog), cluster(cluster), model(model),
        options(options), start(start), units(makeUnits(catalog)) {
    training = options.mode == Mode::Training;
    batch = catalog.batch.samples;
    // Devices node by node, the fastest nodes first (a node's speed: that of
    // its slowest device on this model); nodes of equal speed keep the
    // cluster's order, so racks stay together.
    auto speed = [&](const Device &d) { return deviceSpeed(d.id); };
    std::vector<int> nodes(cluster.nodes.size());
    std::iota(nodes.begin(), nodes.end(), 0);
    std::vector<double> nodeSpeed(cluster.nodes.size(), kInf);
    for (const Device &d : cluster.devices)
      nodeSpeed[d.node] = std::min(nodeSpeed[d.node], speed(d));
    std::stable_sort(nodes.begin(), nodes.end(),
                     [&](int a, int b) { return nodeSpeed[a] > nodeSpeed[b]; });
    for (int node : nodes)
      for (int id : cluster.nodes[node].devices)
        order.push_back(id);
    // Boundary bytes: a value counts at every boundary between its producer's
    // unit and its last user's.
    std::vector<int> unitOf(catalog.size());
    for (auto [u, unit] : llvm::enumerate(units))
      for (int i : unit.ops)
        unitOf[i] = u;
    crossBytes.assign(units.size() + 1, 0.0);
    for (size_t i = 0; i < catalog.size(); ++i)
      for (Value v : catalog.ops[i]->getResults()) {
        int last = unitOf[i];
        for (Operation *user : v.getUsers())
          if (auto it = catalog.index.find(user); it != catalog.index.end())
            last = std::max(last, unitOf[it->second]);
        for (int b = unitOf[i] + 1; b <= last; ++b)
          crossBytes[b] += catalog.bytesOf(v.getType());
      }
  }

  llvm::Expected<std::vector<Candidate>> run(SearchStats &stats);

  double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

private:
  func::FuncOp func;
  const OpCatalog &catalog;
  const Cluster &cluster;
  const CostModel &model;
  const SearchOptions &options;
  Clock::time_point start;
  std::vector<Unit> units;
  std::vector<int> order; ///< devices, fastest nodes first
  /// crossBytes[b]: bytes (whole batch) of the values made by units before b
  /// and used by units from b on: what a stage boundary at b sends.
  std::vector<double> crossBytes;
  bool training = false;
  int64_t batch = 1;
  SearchStats *stats = nullptr;

  /// Solved shardings: (signature, group composition, share bucket) ->
  /// shardings of the unit's ops by position.
  std::map<std::string, std::vector<std::optional<OpSharding>>> solved;
  std::map<std::string, UnitTime> timed;
  struct Prefix {
    std::vector<double> fwd, bwd, weights, params, paramBytes, acts, peak,
        inputs; ///< prefix sums (peak: prefix maximum)
    /// actMax[k][u]: the largest unit activations among units u .. u + 2^k
    /// (a sparse table: the range maximum in O(1)).
    std::vector<std::vector<double>> actMax;
    double maxActivations(int a, int b) const {
      int k = 0;
      while ((2 << k) <= b - a)
        ++k;
      return std::max(actMax[k][a], actMax[k][b - (1 << k)]);
    }
    double sync1MB = 0, syncPerByte = 0;
  };
  std::map<std::string, Prefix> prefixCache;
  /// A block's make-up: its devices' classes in order, with node and rack
  /// boundaries, run-length encoded.
  std::string layoutKey(llvm::ArrayRef<int> block) {
    std::vector<std::string> items;
    for (size_t k = 0; k < block.size(); ++k) {
      std::string item = groupKey({block[k]});
      if (k > 0) {
        const Device *a = cluster.findDevice(block[k - 1]),
                     *b = cluster.findDevice(block[k]);
        if (a->node != b->node)
          item = (cluster.nodes[a->node].group != cluster.nodes[b->node].group
                      ? "||"
                      : "|") +
                 item;
      }
      items.push_back(std::move(item));
    }
    std::string key;
    for (size_t k = 0; k < items.size();) {
      size_t run = 1;
      while (k + run < items.size() && items[k + run] == items[k])
        ++run;
      key += items[k] + "x" + std::to_string(run) + ";";
      k += run;
    }
    return key;
  }

  std::map<std::string, double> speeds;
  /// 1 / the seconds `id` takes to run the whole model forward alone.
  double deviceSpeed(int id) {
    std::string key = groupKey({id});
    auto it = speeds.find(key);
    if (it != speeds.end())
      return it->second;
    double t = 0;
    for (const auto &w : catalog.work)
      if (w)
        t += model.computeTime(*w, *cluster.findDevice(id), 1.0, 1.0, false);
    return speeds[key] = t > 0 ? 1.0 / t : 1.0;
  }

  /// Devices that time alike (kind, slowdown, rates, the node's link) share
  /// a class; a group's key is its devices' classes.
  llvm::DenseMap<int, int> deviceClass;
  std::string groupKey(llvm::ArrayRef<int> group) {
    if (deviceClass.empty()) {
      std::map<std::string, int> classes;
      for (const Device &d : cluster.devices) {
        std::string key =
            llvm::formatv("{0}@{1}/{2}/{3}/{4}/{5}/{6}", d.kind, d.slowdown,
                          d.fp32Flops, d.tensorFlops, d.memoryBandwidth,
                          d.memoryBytes, cluster.nodes[d.node].intra.kind);
        deviceClass[d.id] =
            classes.try_emplace(key, classes.size()).first->second;
      }
    }
    std::string key;
    for (int id : group)
      key += std::to_string(deviceClass.lookup(id)) + ",";
    return key;
  }

  llvm::Expected<const std::vector<std::optional<OpSharding>> *>
  shardingsFor(const Unit &u, llvm::ArrayRef<int> group, double batchShare,
               bool lean);
  llvm::Expected<const UnitTime *> unitTime(const Unit &u,
                                            llvm::ArrayRef<int> shardGroup,
                                            llvm::ArrayRef<int> group,
                                            double batchShare, bool lean);
  std::vector<BlockConfig> configs(llvm::ArrayRef<int> block,
                                   int64_t microbatch);
  void nameCollectives(Stage &stage, int u0, int u1);
  llvm::Expected<Plan> toPlan(const std::vector<int> &cuts,
                              const std::vector<BlockConfig> &blocks,
                              const std::vector<bool> &recompute,
                              const std::vector<bool> &lean, int m);
};

llvm::Expected<const std::vector<std::optional<OpSharding>> *>
Searcher::shardingsFor(const Unit &u, llvm::ArrayRef<int> group,
                       double batchShare, bool lean) {
  // Shardings change little with the batch: solve once per power of 16 in
  // samples (measured: the same plans as per power of 4 on bench/search, in
  // two thirds of the time).
  int bucket = static_cast<int>(
      std::floor(std::log(std::max(batchShare * batch, 1e-9)) / std::log(16)));
  std::string key = std::to_string(u.signature) + "|" + groupKey(group) + "|" +
                    std::to_string(bucket) + (lean ? "|lean" : "");
  auto it = solved.find(key);
  if (it != solved.end())
    return &it->second;
  double left = options.budgetSeconds - elapsed();
  auto solution =
      solveShardings(catalog, u.ops, group, batchShare, training, cluster,
                     model, std::clamp(left / 20, 0.05, 2.0),
                     lean ? ShardingSolver::Lean : ShardingSolver::Auto);
  if (!solution)
    return solution.takeError();
  if (!lean && group.size() > 1) {
    ++stats->shardingProblems;
    stats->shardingOptimal += solution->optimal;
    stats->shardingFallbacks += solution->method != "ilp";
  }
  std::vector<std::optional<OpSharding>> byPosition;
  for (int i : u.ops) {
    auto s = solution->shardings.find(catalog.names[i]);
    byPosition.push_back(s == solution->shardings.end()
                             ? std::nullopt
                             : std::optional<OpSharding>(s->second));
  }
  return &solved.emplace(key, std::move(byPosition)).first->second;
}

llvm::Expected<const UnitTime *>
Searcher::unitTime(const Unit &u, llvm::ArrayRef<int> shardGroup,
                   llvm::ArrayRef<int> group, double batchShare, bool lean) {
  auto shardings = shardingsFor(u, shardGroup, batchShare, lean);
  if (!shardings)
    return shardings.takeError();
  std::string key = std::to_string(u.signature) + "|" + groupKey(shardGroup) +
                    "|" + groupKey(group) + "|" +
                    llvm::formatv("{0:e}", batchShare).str() +
                    (lean ? "|lean" : "");
  auto it = timed.find(key);
  if (it != timed.end())
    return &it->second;
  llvm::StringMap<OpSharding> map;
  for (auto [k, i] : llvm::enumerate(u.ops))
    if ((**shardings)[k])
      map[catalog.names[i]] = *(**shardings)[k];
  auto r = timeReplica(catalog, u.ops, map, group, batchShare, training,
                       nullptr, cluster, model);
  if (!r)
    return r.takeError();
  UnitTime out;
  out.forward = r->forward;
  out.backward = r->backward;
  int t = group.size();
  out.memory.resize(t);
  llvm::DenseSet<int> inUnit(u.ops.begin(), u.ops.end());
  llvm::DenseMap<int, ResolvedSharding> resolvedOps;
  for (auto [k, i] : llvm::enumerate(u.ops)) {
    auto r = resolveSharding(
        catalog, i, (**shardings)[k] ? &*(**shardings)[k] : nullptr, t);
    if (!r)
      return r.takeError();
    resolvedOps.try_emplace(i, std::move(*r));
  }
  auto lookup = [&](int i) -> const ResolvedSharding * {
    auto it = resolvedOps.find(i);
    return it == resolvedOps.end() ? nullptr : &it->second;
  };
  for (int i : u.ops) {
    const ResolvedSharding *resolved = lookup(i);
    Operation *op = catalog.ops[i];
    for (int d = 0; d < t; ++d) {
      UnitMemory &m = out.memory[d];
      double opBytes = 0;
      for (auto [o, v] : llvm::enumerate(op->getOperands())) {
        double bytes = catalog.bytesOf(v.getType());
        if (isConstant(v)) {
          double share = resolved->operandShares[o][d];
          m.weights += bytes * share;
          if (double n = parameterCount(v)) {
            m.params += n * share;
            m.paramBytes += bytes * share;
          }
          continue;
        }
        opBytes += bytes * batchShare;
        auto res = llvm::dyn_cast<OpResult>(v);
        if (!res || !catalog.index.count(res.getOwner()) ||
            !inUnit.count(catalog.index.lookup(res.getOwner())))
          m.inputs += bytes * batchShare;
      }
      for (OpResult v : op->getResults()) {
        // As the simulator keeps it (keptShare; uses outside the unit need
        // it whole).
        double bytes = catalog.bytesOf(v.getType()) * batchShare *
                       keptShare(catalog, lookup, v, std::nullopt, inUnit, d);
        m.activations += bytes;
        opBytes += bytes;
      }
      m.peak = std::max(m.peak, opBytes);
    }
  }
  return &timed.emplace(key, std::move(out)).first->second;
}

/// Where the search withheld microbatches that a plan may still ask for (a
/// training-mode BatchNormalization, BatchAnalysis::unchosenMicrobatchesOp):
/// a sentence for "no plan fits", else "".
static std::string unchosenMicrobatchesNote(const OpCatalog &catalog,
                                            bool training) {
  const BatchAnalysis &batch = catalog.batch;
  llvm::ArrayRef<Operation *> ops = catalog.ops;
  int k = batch.unchosenMicrobatchesOp(training);
  if (k < 0 || batch.noMicrobatchesOp(training) >= 0)
    return "";
  return "\n(the search plans no microbatches for this model: " +
         onnx::describeNode(ops[k]) +
         " computes statistics over the batch in training mode, and each "
         "microbatch would normalize by its own; a --plan with microbatches "
         "may fit)";
}

/// Tensor degrees whose groups lie inside one node, and the replicas' whole
/// samples of a microbatch in proportion to their speed.
std::vector<BlockConfig> Searcher::configs(llvm::ArrayRef<int> block,
                                           int64_t microbatch) {
  std::vector<BlockConfig> out;
  int n = block.size();
  for (int t = 1; t <= n; ++t) {
    if (n % t)
      continue;
    if (n / t > 1 && catalog.batch.wholeBatchOp(training) >= 0)
      continue; // an op cannot split the batch (Batch.h)
    bool inNode = true;
    for (int r = 0; r < n / t && inNode; ++r)
      for (int k = 1; k < t; ++k)
        inNode &= cluster.findDevice(block[r * t + k])->node ==
                  cluster.findDevice(block[r * t])->node;
    if (!inNode)
      continue;
    BlockConfig c;
    c.tensor = t;
    c.data = n / t;
    c.devices = block;
    // Replica speed: the sum of its devices' speeds on this model.
    std::vector<double> speed;
    for (int r = 0; r < c.data; ++r) {
      double s = 0;
      for (int k = 0; k < t; ++k)
        s += deviceSpeed(block[r * t + k]);
      speed.push_back(s);
    }
    c.samples = splitProportionally(microbatch, speed);
    if (c.samples.empty())
      continue; // fewer samples than replicas
    out.push_back(std::move(c));
  }
  return out;
}

llvm::Expected<Plan> Searcher::toPlan(const std::vector<int> &cuts,
                                      const std::vector<BlockConfig> &blocks,
                                      const std::vector<bool> &recompute,
                                      const std::vector<bool> &lean, int m) {
  Plan plan;
  plan.mode = options.mode;
  plan.microbatches = m;
  plan.schedule = Schedule::OneFOneB;
  plan.origin = "search";
  for (size_t s = 0; s < blocks.size(); ++s) {
    Stage stage;
    int u0 = cuts[s], u1 = cuts[s + 1];
    stage.firstOp = catalog.names[units[u0].first];
    stage.lastOp = catalog.names[units[u1 - 1].last];
    const BlockConfig &c = blocks[s];
    stage.devices = c.devices;
    stage.data = c.data;
    stage.tensor = c.tensor;
    if (c.data > 1)
      for (int64_t k : c.samples)
        stage.batchShares.push_back(k);
    stage.recompute = recompute[s];
    if (c.tensor > 1) {
      llvm::ArrayRef<int> group(c.devices.data(), c.tensor);
      double share = static_cast<double>(c.samples[0]) / batch;
      for (int u = u0; u < u1; ++u) {
        auto sh = shardingsFor(units[u], group, share, lean[s]);
        if (!sh)
          return sh.takeError();
        for (auto [k, i] : llvm::enumerate(units[u].ops))
          if ((**sh)[k])
            stage.shardings[catalog.names[i]] = *(**sh)[k];
      }
    }
    nameCollectives(stage, u0, u1);
    plan.stages.push_back(std::move(stage));
  }
  return plan;
}

void Searcher::nameCollectives(Stage &stage, int u0, int u1) {
  // The reshards the simulator charges where a user needs another layout are
  // named on the producer when every user needs the value whole: all_reduce
  // after a split contraction, all_gather after a split result (the time is
  // the same; plan.json then says what the partition inserts).
  llvm::DenseMap<int, ResolvedSharding> resolved;
  auto resolve = [&](int i) -> const ResolvedSharding * {
    auto it = resolved.find(i);
    if (it != resolved.end())
      return &it->second;
    auto s = stage.shardings.find(catalog.names[i]);
    auto r = resolveSharding(catalog, i,
                             s == stage.shardings.end() ? nullptr : &s->second,
                             stage.tensor);
    if (!r) {
      llvm::consumeError(r.takeError());
      return nullptr;
    }
    return &resolved.try_emplace(i, std::move(*r)).first->second;
  };
  int first = units[u0].first, last = units[u1 - 1].last;
  for (auto &e : stage.shardings) {
    int i = catalog.byName.lookup(e.getKey());
    Operation *op = catalog.ops[i];
    const ResolvedSharding *r = resolve(i);
    if (!r || op->getNumResults() != 1)
      continue;
    const Layout &out = r->results[0];
    bool wholeEverywhere = true;
    for (OpOperand &use : op->getResult(0).getUses()) {
      auto it = catalog.index.find(use.getOwner());
      if (it == catalog.index.end() || it->second < first || it->second > last)
        continue; // leaves the stage: replicated anyway
      const ResolvedSharding *u = resolve(it->second);
      if (!u || u->operands[use.getOperandNumber()].kind != Layout::Replicated)
        wholeEverywhere = false;
    }
    if (!wholeEverywhere)
      continue;
    if (out.kind == Layout::Partial)
      e.getValue().collective = Collective::AllReduce;
    else if (out.kind == Layout::Split)
      e.getValue().collective = Collective::AllGather;
  }
}

llvm::Expected<std::vector<Candidate>> Searcher::run(SearchStats &st) {
  stats = &st;
  std::vector<Candidate> out;
  int U = units.size(), n = order.size();
  if (U == 0 || n == 0)
    return out;
  // Stage counts: all up to 16, then a geometric ladder.
  std::vector<int> stageCounts;
  for (int p = 1; p <= std::min(U, n); p = p < 16 ? p + 1 : p * 3 / 2)
    stageCounts.push_back(p);
  if (options.stages > 0) {
    if (options.stages > std::min(U, n))
      return fail(llvm::formatv(
          "{0} stages asked for, but the model has {1} layer(s) and the "
          "cluster {2} device(s)",
          options.stages, U, n));
    stageCounts = {options.stages};
  }
  // Microbatch counts: divisors of the batch (one for latency).
  std::vector<int64_t> microCounts;
  for (int64_t m = 1; m <= batch; ++m)
    if (batch % m == 0 &&
        (options.objective == Objective::Throughput || m == 1))
      microCounts.push_back(m);
  if (catalog.batch.unchosenMicrobatchesOp(training) >= 0)
    microCounts = {1};

  struct Estimate {
    double time;
    std::vector<int> cuts;
    std::vector<BlockConfig> blocks;
    std::vector<bool> recompute, lean;
    int m;
  };
  // Device counts: all devices, and the first nodes' devices halving down
  // to one (a small batch or a model that gains nothing from more devices
  // leaves the slowest ones idle); every count on up to 8 devices, down to
  // an eighth on more than 64.
  std::vector<int> deviceCounts{n};
  for (int k = n - 1; k >= 1; --k)
    if (n <= 8 || ((k & (k - 1)) == 0 && (n <= 64 || k >= n / 8)))
      deviceCounts.push_back(k);
  // Block sizes for `used` devices in `p` stages: on up to 8 devices every
  // composition; on more, near-equal blocks, blocks of whole nodes, and one
  // block per run of one device kind when there are p runs.
  auto partitions = [&](int used, int p) {
    std::vector<std::vector<int>> out;
    if (used <= 8) {
      std::vector<int> sizes(p, 1);
      std::function<void(int, int)> rec = [&](int s, int left) {
        if (s == p - 1) {
          sizes[s] = left;
          out.push_back(sizes);
          return;
        }
        for (int k = 1; k <= left - (p - 1 - s); ++k) {
          sizes[s] = k;
          rec(s + 1, left - k);
        }
      };
      rec(0, used);
      return out;
    }
    std::vector<int> even;
    for (int s = 0; s < p; ++s)
      even.push_back(used / p + (s < used % p ? 1 : 0));
    out.push_back(even);
    // Runs of devices on one node, and of one kind, in order.
    auto runs = [&](auto sameRun) {
      std::vector<int> r;
      for (int k = 0; k < used; ++k)
        if (k == 0 || !sameRun(order[k - 1], order[k]))
          r.push_back(1);
        else
          ++r.back();
      return r;
    };
    auto byNode = runs([&](int a, int b) {
      return cluster.findDevice(a)->node == cluster.findDevice(b)->node;
    });
    if (static_cast<int>(byNode.size()) >= p) {
      std::vector<int> sizes;
      int nodesLeft = byNode.size(), at = 0;
      for (int s = 0; s < p; ++s) {
        int take = nodesLeft / (p - s) + 0;
        int size = 0;
        for (int k = 0; k < take; ++k)
          size += byNode[at++];
        nodesLeft -= take;
        sizes.push_back(size);
      }
      if (sizes != even)
        out.push_back(sizes);
    }
    // Blocks of equal speed (Metis's device groups): whole nodes while
    // there are at least as many nodes as stages, devices otherwise.
    {
      bool nodeWise = static_cast<int>(byNode.size()) >= p;
      std::vector<int> unitSize = nodeWise ? byNode : std::vector<int>(used, 1);
      std::vector<double> unitSpeed;
      double total = 0;
      for (int k = 0, at = 0; k < static_cast<int>(unitSize.size()); ++k) {
        double x = 0;
        for (int j = 0; j < unitSize[k]; ++j)
          x += deviceSpeed(order[at + j]);
        at += unitSize[k];
        unitSpeed.push_back(x);
        total += x;
      }
      std::vector<int> sizes;
      double acc = 0;
      int size = 0, left = unitSize.size();
      for (size_t k = 0; k < unitSize.size(); ++k) {
        acc += unitSpeed[k];
        size += unitSize[k];
        --left;
        int stagesLeft = p - static_cast<int>(sizes.size()) - 1;
        // Cut when this block has its share, or when the rest is just
        // enough for the stages after it.
        if (stagesLeft > 0 && (acc >= total * (sizes.size() + 1) / p - 1e-12 ||
                               left == stagesLeft)) {
          sizes.push_back(size);
          size = 0;
        }
      }
      sizes.push_back(size);
      if (static_cast<int>(sizes.size()) == p && size > 0 &&
          llvm::find(out, sizes) == out.end())
        out.push_back(sizes);
    }
    auto byKind = runs([&](int a, int b) {
      return cluster.findDevice(a)->kind == cluster.findDevice(b)->kind;
    });
    if (static_cast<int>(byKind.size()) == p &&
        llvm::find(out, byKind) == out.end())
      out.push_back(byKind);
    return out;
  };
  std::vector<Estimate> estimates;
  // Progress: (device count, stage count) pairs done, and the share of the
  // current pair's partitions and microbatch counts.
  size_t pairs = 0, pairIndex = 0;
  for (int used : deviceCounts)
    for (int p : stageCounts)
      pairs += p <= used;
  for (int used : deviceCounts)
    for (int p : stageCounts) {
      if (p > used || st.budgetExhausted)
        continue;
      auto blockSizes = partitions(used, p);
      for (auto [partIndex, sizes] : llvm::enumerate(blockSizes)) {
        if (options.progress)
          options.progress(
              0.9 *
              (pairIndex + static_cast<double>(partIndex) / blockSizes.size()) /
              pairs);
        std::vector<std::vector<int>> blocks;
        for (int s = 0, at = 0; s < p; ++s) {
          blocks.emplace_back(order.begin() + at,
                              order.begin() + at + sizes[s]);
          at += sizes[s];
        }
        for (int64_t m : microCounts) {
          // Fewer microbatches than stages leave most of the pipeline idle
          // (a bubble above 1/2): skipped when the batch allows four per
          // stage (small batches keep every count).
          if (p > 1 && m < p && batch >= 4 * p &&
              options.objective == Objective::Throughput)
            continue;
          if (elapsed() > options.budgetSeconds) {
            st.budgetExhausted = true;
            break;
          }
          int64_t mb = batch / m;
          // cost[s][a][b]: best (time per microbatch, config, recompute) of
          // units [a, b) on block s.
          struct StageChoice {
            double time = kInf, sync = 0;
            int config = -1;
            bool recompute = false, lean = false;
          };
          std::vector<std::vector<BlockConfig>> blockConfigs(p);
          for (int s = 0; s < p; ++s)
            blockConfigs[s] = configs(blocks[s], mb);
          bool feasible =
              llvm::all_of(blockConfigs, [](auto &c) { return !c.empty(); });
          if (!feasible)
            continue;
          // Per block, config and sharding variant (index 2 * config + lean):
          // prefix sums over units of the slowest replica's forward and
          // backward time, and of the memory of the worst device. Blocks of one
          // make-up (device classes, node and rack boundaries, samples) share
          // them.
          std::vector<std::vector<const Prefix *>> prefix(p);
          for (int s = 0; s < p; ++s) {
            std::string blockKey = layoutKey(blocks[s]);
            for (const BlockConfig &c : blockConfigs[s])
              for (bool lean : {false, true}) {
                if (lean && c.tensor == 1) {
                  prefix[s].push_back(prefix[s].back()); // nothing to shard
                  continue;
                }
                std::string key = blockKey + "|t" + std::to_string(c.tensor) +
                                  (lean ? "|lean|" : "|");
                for (int64_t k : c.samples)
                  key += std::to_string(k) + ",";
                auto cached = prefixCache.find(key);
                if (cached != prefixCache.end()) {
                  prefix[s].push_back(&cached->second);
                  continue;
                }
                Prefix pf;
                for (auto *v : {&pf.fwd, &pf.bwd, &pf.weights, &pf.params,
                                &pf.paramBytes, &pf.acts, &pf.peak, &pf.inputs})
                  v->assign(U + 1, 0.0);
                llvm::ArrayRef<int> shardGroup(c.devices.data(), c.tensor);
                // Replicas that time alike (same device classes, same samples)
                // are timed once.
                std::vector<int> distinct;
                {
                  std::set<std::pair<std::string, int64_t>> seen;
                  for (int r = 0; r < c.data; ++r)
                    if (seen.insert({groupKey(llvm::ArrayRef<int>(
                                         c.devices.data() + r * c.tensor,
                                         c.tensor)),
                                     c.samples[r]})
                            .second)
                      distinct.push_back(r);
                }
                // Units of one signature time alike.
                std::map<int, std::pair<std::pair<double, double>, UnitMemory>>
                    bySignature;
                for (int u = 0; u < U; ++u) {
                  double f = 0, b = 0;
                  UnitMemory worst;
                  auto known = bySignature.find(units[u].signature);
                  if (known != bySignature.end()) {
                    std::tie(f, b) = known->second.first;
                    worst = known->second.second;
                  } else {
                    for (int r : distinct) {
                      llvm::ArrayRef<int> group(c.devices.data() + r * c.tensor,
                                                c.tensor);
                      double share = static_cast<double>(c.samples[r]) / batch;
                      auto ut =
                          unitTime(units[u], shardGroup, group, share, lean);
                      if (!ut)
                        return ut.takeError();
                      if ((*ut)->forward + (*ut)->backward > f + b) {
                        f = (*ut)->forward;
                        b = (*ut)->backward;
                      }
                      for (const UnitMemory &mem : (*ut)->memory) {
                        worst.weights = std::max(worst.weights, mem.weights);
                        worst.params = std::max(worst.params, mem.params);
                        worst.paramBytes =
                            std::max(worst.paramBytes, mem.paramBytes);
                        worst.activations =
                            std::max(worst.activations, mem.activations);
                        worst.peak = std::max(worst.peak, mem.peak);
                        worst.inputs = std::max(worst.inputs, mem.inputs);
                      }
                    }
                    bySignature[units[u].signature] = {{f, b}, worst};
                  }
                  pf.fwd[u + 1] = pf.fwd[u] + f;
                  pf.bwd[u + 1] = pf.bwd[u] + b;
                  pf.weights[u + 1] = pf.weights[u] + worst.weights;
                  pf.params[u + 1] = pf.params[u] + worst.params;
                  pf.paramBytes[u + 1] = pf.paramBytes[u] + worst.paramBytes;
                  pf.acts[u + 1] = pf.acts[u] + worst.activations;
                  pf.peak[u + 1] = std::max(pf.peak[u], worst.peak);
                  pf.inputs[u + 1] = pf.inputs[u] + worst.inputs;
                }
                pf.actMax.emplace_back(U);
                for (int u = 0; u < U; ++u)
                  pf.actMax[0][u] = pf.acts[u + 1] - pf.acts[u];
                for (int k = 1; (1 << k) <= U; ++k) {
                  pf.actMax.emplace_back(U, 0.0);
                  for (int u = 0; u + (1 << k) <= U; ++u)
                    pf.actMax[k][u] =
                        std::max(pf.actMax[k - 1][u],
                                 pf.actMax[k - 1][u + (1 << (k - 1))]);
                }
                // Gradient all-reduce across the replicas: alpha-beta, so
                // linear in the bytes above 1 MB; two points give the line.
                if (c.data > 1) {
                  std::vector<int> replicas;
                  for (int r = 0; r < c.data; ++r)
                    replicas.push_back(c.devices[r * c.tensor]);
                  pf.sync1MB = model.collectiveTime(Collective::AllReduce, 1e6,
                                                    replicas, cluster);
                  pf.syncPerByte =
                      (model.collectiveTime(Collective::AllReduce, 1e9,
                                            replicas, cluster) -
                       pf.sync1MB) /
                      (1e9 - 1e6);
                }
                prefix[s].push_back(
                    &prefixCache.emplace(key, std::move(pf)).first->second);
              }
          }
          std::vector<double> blockCapacity(p, kInf);
          for (int s = 0; s < p; ++s)
            for (int id : blocks[s])
              blockCapacity[s] = std::min(blockCapacity[s],
                                          cluster.findDevice(id)->memoryBytes);
          auto stageChoice = [&](int s, int a, int b) {
            StageChoice best;
            int inFlight =
                inFlightMicrobatches(s, p, m, Schedule::OneFOneB, training);
            for (size_t variant = 0; variant < prefix[s].size(); ++variant) {
              size_t ci = variant / 2;
              bool lean = variant % 2;
              const BlockConfig &c = blockConfigs[s][ci];
              if (lean && c.tensor == 1)
                continue;
              const Prefix &pf = *prefix[s][variant];
              double f = pf.fwd[b] - pf.fwd[a], bw = pf.bwd[b] - pf.bwd[a];
              double weights = pf.weights[b] - pf.weights[a];
              double params = pf.params[b] - pf.params[a];
              double paramBytes = pf.paramBytes[b] - pf.paramBytes[a];
              double acts = pf.acts[b] - pf.acts[a];
              double fixed =
                  weights +
                  (training
                       ? paramBytes + catalog.stateBytesPerParameter() * params
                       : 0);
              double sync = 0;
              if (training && c.data > 1)
                sync = pf.sync1MB +
                       std::max(paramBytes - 1e6, 0.0) * pf.syncPerByte;
              for (bool rc : {false, true}) {
                if (rc && !training)
                  continue;
                double mem;
                if (!training)
                  mem = fixed + pf.peak[b];
                else if (rc)
                  // The better of checkpointing the stage's input or each
                  // layer's (as the simulator counts it).
                  mem = fixed +
                        std::min((pf.inputs[a + 1] - pf.inputs[a]) * inFlight +
                                     acts,
                                 (pf.inputs[b] - pf.inputs[a]) * inFlight +
                                     pf.maxActivations(a, b));
                else
                  mem = fixed + acts * inFlight;
                if (mem > blockCapacity[s])
                  continue;
                double time = f + bw + (rc ? f : 0);
                // A stage's share of the step: its m microbatches and its sync.
                if (best.config < 0 ||
                    m * time + sync < m * best.time + best.sync) {
                  best = {time, sync, static_cast<int>(ci), rc, lean};
                }
              }
            }
            return best;
          };
          // dp[s][b]: the smallest slowest-stage time with stages 0..s covering
          // units [0, b).
          std::vector<std::vector<double>> dp(p,
                                              std::vector<double>(U + 1, kInf));
          std::vector<std::vector<int>> from(p, std::vector<int>(U + 1, -1));
          for (int b = 1; b <= U; ++b) {
            StageChoice c = stageChoice(0, 0, b);
            dp[0][b] = c.time;
          }
          for (int s = 1; s < p; ++s)
            for (int b = s + 1; b <= U - (p - 1 - s); ++b)
              for (int a = s; a < b; ++a) {
                if (dp[s - 1][a] == kInf)
                  continue;
                StageChoice c = stageChoice(s, a, b);
                double v = std::max(dp[s - 1][a], c.time);
                if (v < dp[s][b]) {
                  dp[s][b] = v;
                  from[s][b] = a;
                }
              }
          ++st.candidatesEstimated;
          if (dp[p - 1][U] == kInf)
            continue;
          std::vector<int> cuts(p + 1);
          cuts[p] = U;
          for (int s = p - 1; s > 0; --s)
            cuts[s] = from[s][cuts[s + 1]];
          cuts[0] = 0;
          Estimate e;
          e.cuts = cuts;
          e.m = m;
          double sum = 0, worst = 0, sync = 0;
          for (int s = 0; s < p; ++s) {
            StageChoice c = stageChoice(s, cuts[s], cuts[s + 1]);
            sum += c.time;
            worst = std::max(worst, c.time);
            sync = std::max(sync, c.sync);
            e.blocks.push_back(blockConfigs[s][c.config]);
            e.recompute.push_back(c.recompute);
            e.lean.push_back(c.lean);
          }
          // Boundary transfers as pipeline stages of their own (replica r
          // sends to replica r mod data' of the next stage, as the
          // simulator has it): a slow link can be the bottleneck.
          for (int s = 0; s + 1 < p; ++s) {
            const BlockConfig &from = e.blocks[s], &to = e.blocks[s + 1];
            int pairs = std::max(from.data, to.data);
            double bytes = crossBytes[cuts[s + 1]] / m / pairs;
            double x = model.collectiveTime(
                Collective::SendRecv, bytes,
                {from.devices.front(), to.devices.front()}, cluster);
            sum += x;
            worst = std::max(worst, x);
          }
          e.time = sum + (m - 1) * worst + sync;
          estimates.push_back(std::move(e));
        }
        if (st.budgetExhausted)
          break;
      }
      ++pairIndex;
    }
  // Simulate the best estimates; keep the ones that fit. The estimate leaves
  // out transfers and the schedule's details, so the simulated candidates are
  // spread: the best estimate of each (stage count, microbatch count) first.
  // Near-equal estimates: fewer devices first (a millionth per device).
  auto devicesIn = [](const Estimate &e) {
    size_t n = 0;
    for (const BlockConfig &c : e.blocks)
      n += c.devices.size();
    return static_cast<double>(n);
  };
  std::stable_sort(estimates.begin(), estimates.end(),
                   [&](const Estimate &a, const Estimate &b) {
                     return a.time * (1 + 1e-6 * devicesIn(a)) <
                            b.time * (1 + 1e-6 * devicesIn(b));
                   });
  {
    std::vector<Estimate> spread, rest;
    std::set<std::pair<size_t, int>> seen;
    for (Estimate &e : estimates)
      (seen.insert({e.blocks.size(), e.m}).second ? spread : rest)
          .push_back(std::move(e));
    for (Estimate &e : rest)
      spread.push_back(std::move(e));
    estimates = std::move(spread);
  }
  const size_t kSimulated = 12;
  for (size_t k = 0; k < estimates.size() && k < kSimulated; ++k) {
    if (options.progress)
      options.progress(0.9 + 0.1 * k / std::min(estimates.size(), kSimulated));
    const Estimate &e = estimates[k];
    auto plan = toPlan(e.cuts, e.blocks, e.recompute, e.lean, e.m);
    if (!plan)
      return plan.takeError();
    auto pred = simulate(catalog, func, cluster, *plan, model, false);
    ++st.candidatesSimulated;
    if (!pred)
      return pred.takeError();
    Candidate c{std::move(*plan), std::move(*pred), ""};
    // Training replicas whose optimizer state does not fit shard it.
    if (auto zero = shardStateIfNeeded(catalog, func, cluster, c.plan,
                                       c.prediction, model)) {
      c.plan = std::move(zero->first);
      c.plan.origin += zeroOriginTag(c.plan);
      c.prediction = std::move(zero->second);
    }
    std::string shape;
    for (auto [s, stage] : llvm::enumerate(c.plan.stages))
      shape += llvm::formatv("{0}{1}x{2}{3}{4}", s ? " | " : "", stage.data,
                             stage.tensor, stage.recompute ? " rc" : "",
                             stage.zero ? " zero" + std::to_string(stage.zero)
                                        : std::string());
    c.description = llvm::formatv("{0} stage(s) [{1}], {2} microbatch(es)",
                                  c.plan.stages.size(), shape, e.m);
    out.push_back(std::move(c));
  }
  return out;
}

/// Bytes the model needs at the least (weights, and in training gradients and
/// optimizer state) against the bytes all devices have.
std::string memoryNeed(const OpCatalog &catalog, const Cluster &cluster,
                       bool training) {
  double weights = 0, params = 0;
  llvm::DenseSet<Value> seen;
  for (Operation *op : catalog.ops)
    for (Value v : op->getOperands())
      if (isConstant(v) && seen.insert(v).second) {
        weights += catalog.bytesOf(v.getType());
        params += parameterCount(v);
      }
  double need =
      weights +
      (training ? weights + catalog.stateBytesPerParameter() * params : 0);
  double have = 0;
  for (const Device &d : cluster.devices)
    have += d.memoryBytes;
  return llvm::formatv(
      "the model needs at least {0} bytes ({1}: weights {2}"
      "{3}) before activations; the {4} devices have {5} "
      "bytes ({6}) in all",
      static_cast<int64_t>(need), formatBytes(need), formatBytes(weights),
      training ? ", gradients " + formatBytes(weights) + ", optimizer state " +
                     formatBytes(catalog.stateBytesPerParameter() * params)
               : std::string(),
      cluster.devices.size(), static_cast<int64_t>(have), formatBytes(have));
}

} // namespace

llvm::Expected<SearchResult> searchPlan(ModuleOp module, const Cluster &cluster,
                                        const CostModel &model,
                                        const SearchOptions &options) {
  auto start = Clock::now();
  auto funcs = module.getOps<func::FuncOp>();
  if (funcs.empty())
    return fail("the module has no function");
  func::FuncOp func = *funcs.begin();
  if (llvm::Error err = checkPlanningAttributes(module))
    return std::move(err);
  OpCatalog catalog(func);
  if (catalog.size() == 0)
    return fail("the model has no ops to place (its outputs are inputs or "
                "constants)");
  if (catalog.batch.samples == 0)
    return fail("the batch (" + describeBatchSeed(func, catalog.batch) +
                ") is 0: there is nothing to plan");
  for (size_t i = 0; i < catalog.size(); ++i)
    if (!catalog.work[i])
      return fail(llvm::formatv("op '{0}' has a shape that is not static; "
                                "run the static pipeline first",
                                catalog.names[i]));
  bool training = options.mode == Mode::Training;
  if (int i = catalog.batch.wholeBatchOp(training); i >= 0)
    mlir::emitWarning(catalog.ops[i]->getLoc())
        << catalog.batch.wholeBatchReason(i)
        << ": the search keeps the batch whole (no data parallelism, no "
           "microbatches); tensor parallelism and pipeline stages remain";
  SearchResult result;
  Searcher searcher(func, catalog, cluster, model, options, start);
  auto candidates = searcher.run(result.stats);
  if (!candidates)
    return candidates.takeError();
  // The baselines compete too.
  result.baselines = makeBaselines(module, cluster, options.mode, model);
  for (const Baseline &b : result.baselines)
    if (b.prediction &&
        (options.objective == Objective::Throughput ||
         b.plan.microbatches == 1) &&
        (options.stages == 0 ||
         static_cast<int>(b.plan.stages.size()) == options.stages))
      candidates->push_back({b.plan, *b.prediction, "baseline " + b.name});
  std::vector<Candidate> fitting;
  for (Candidate &c : *candidates)
    if (c.fits())
      fitting.push_back(std::move(c));
  // Fastest first; within 0.1%, the plan with fewer devices (the same time
  // from fewer devices leaves the others free).
  auto devicesOf = [](const Candidate &c) {
    size_t n = 0;
    for (const Stage &s : c.plan.stages)
      n += s.devices.size();
    return n;
  };
  std::stable_sort(fitting.begin(), fitting.end(),
                   [&](const Candidate &a, const Candidate &b) {
                     double ta = a.prediction.stepTime,
                            tb = b.prediction.stepTime;
                     if (std::abs(ta - tb) <= 1e-3 * std::min(ta, tb))
                       return devicesOf(a) < devicesOf(b);
                     return ta < tb;
                   });
  result.stats.seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  if (options.progress)
    options.progress(1.0);
  if (fitting.empty()) {
    std::string lines;
    int shown = 0;
    for (const Candidate &c : *candidates) {
      if (shown++ == 3)
        break;
      lines += "\n  " + c.description + ": " +
               (c.prediction.memoryProblems.empty()
                    ? std::string("?")
                    : c.prediction.memoryProblems.front());
    }
    return fail(
        llvm::formatv("no plan fits this cluster's memory: {0}{1}{2}{3}",
                      memoryNeed(catalog, cluster, training),
                      candidates->empty() ? "" : "; closest plans:", lines,
                      unchosenMicrobatchesNote(catalog, training)));
  }
  result.best = std::move(fitting.front());
  // The winner's timeline (candidates are simulated without one).
  {
    auto traced = simulate(catalog, func, cluster, result.best.plan, model);
    if (!traced)
      return traced.takeError();
    result.best.prediction = std::move(*traced);
  }
  for (size_t k = 1; k < fitting.size() && k <= 5; ++k)
    result.alternatives.push_back(std::move(fitting[k]));

  // --- Why the winner won ---
  const Prediction &p = result.best.prediction;
  auto &why = result.explanation;
  why.push_back(llvm::formatv("chosen: {0}: {1:F6} s per step, bubble {2:P}",
                              result.best.description, p.stepTime,
                              p.bubbleFraction));
  double coll = 0, compute = 0, sync = 0;
  for (const StagePrediction &s : p.stages) {
    coll = std::max(coll, s.forwardCollectives);
    compute = std::max(compute, s.forward + s.backward);
    sync = std::max(sync, s.gradientSync);
  }
  why.push_back(llvm::formatv(
      "slowest stage: {0:F6} s per microbatch ({1:F6} s of it tensor-parallel "
      "collectives in the forward pass); gradient all-reduce {2:F6} s",
      compute, coll, sync));
  for (const Candidate &c : result.alternatives)
    why.push_back(llvm::formatv(
        "alternative: {0}: {1:F6} s ({2:+F1}% slower), bubble {3:P}",
        c.description, c.prediction.stepTime,
        100 * (c.prediction.stepTime / p.stepTime - 1),
        c.prediction.bubbleFraction));
  for (const Baseline &b : result.baselines) {
    if (!b.prediction) {
      why.push_back("baseline " + b.name + ": not applicable (" +
                    b.notApplicable + ")");
      continue;
    }
    why.push_back(llvm::formatv(
        "baseline {0}: {1:F6} s{2}", b.name, b.prediction->stepTime,
        b.fits() ? llvm::formatv(" ({0:F2}x the chosen plan's time)",
                                 b.prediction->stepTime / p.stepTime)
                       .str()
                 : std::string(" (does not fit in memory)")));
  }
  return result;
}

llvm::Error annotateModule(ModuleOp module, const Plan &plan,
                           const Cluster *cluster) {
  auto funcs = module.getOps<func::FuncOp>();
  if (funcs.empty())
    return fail("the module has no function");
  func::FuncOp func = *funcs.begin();
  OpCatalog catalog(func);
  module.getContext()->getOrLoadDialect<dist::DistDialect>();
  Builder b(module.getContext());
  auto placed = placePlan(catalog, plan, cluster);
  if (!placed)
    return placed.takeError();
  SmallVector<Attribute> stages;
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    for (int i : placed->stageOps[s])
      catalog.ops[i]->setAttr(dist::kStageIdAttrName, b.getI64IntegerAttr(s));
    for (auto &e : stage.shardings) {
      int i = catalog.byName.lookup(e.getKey());
      const OpSharding &sh = e.getValue();
      // The annotation holds whole elements of the factor it splits: parts
      // given as relative sizes ([5, 3], [1, 1]) are scaled to them in units
      // that keep the factor's alignment (whole heads).
      auto r =
          resolveSharding(catalog, i, &sh, static_cast<int>(sh.parts.size()));
      if (!r)
        return r.takeError();
      SmallVector<int64_t> parts;
      int64_t given = 0;
      bool whole = true;
      for (double p : sh.parts) {
        parts.push_back(static_cast<int64_t>(std::llround(p)));
        given += parts.back();
        whole &= std::abs(p - std::llround(p)) < 1e-9;
      }
      if (r->factor >= 0 && catalog.rules[i]) {
        int64_t size = catalog.rules[i]->factors[r->factor].size;
        if (!whole || given != size) {
          int64_t unit = std::max<int64_t>(1, catalog.factorUnit[i][r->factor]);
          std::vector<int64_t> units =
              splitProportionally(size / unit, sh.parts);
          if (units.empty() || size % unit)
            return fail(llvm::formatv(
                "sharding of '{0}': {1} parts do not fit a dimension of {2} "
                "(in units of {3})",
                e.getKey(), sh.parts.size(), size, unit));
          parts.clear();
          for (int64_t u : units)
            parts.push_back(u * unit);
        }
      }
      catalog.ops[i]->setAttr(
          dist::kOpShardingAttrName,
          dist::OpShardingAttr::get(b.getContext(), sh.dim,
                                    b.getDenseI64ArrayAttr(parts),
                                    sh.collective));
    }
    // Shares are relative ([3, 1] or [0.75, 0.25]): kept as given.
    SmallVector<double> shares(stage.batchShares.begin(),
                               stage.batchShares.end());
    if (shares.empty())
      shares.assign(stage.data, 1.0);
    DenseF64ArrayAttr zero;
    if (stage.zero)
      zero = b.getDenseF64ArrayAttr(zeroStateShares(stage, cluster));
    ArrayAttr kinds;
    if (cluster) {
      SmallVector<Attribute> names;
      for (int id : stage.devices) {
        const Device *d = cluster->findDevice(id);
        names.push_back(b.getStringAttr(d ? d->kind : "unknown"));
      }
      kinds = b.getArrayAttr(names);
    }
    SmallVector<int64_t> devices(stage.devices.begin(), stage.devices.end());
    stages.push_back(dist::StagePlanAttr::get(
        b.getContext(), b.getDenseI64ArrayAttr(devices), stage.data,
        stage.tensor, b.getDenseF64ArrayAttr(shares),
        b.getBoolAttr(stage.recompute), zero, kinds,
        zero && stage.zero == 2 ? 2 : 1));
  }
  // The batch the rows are cut from, so that a pass on a module with
  // another batch (a data-parallel replica's training step) cuts the same.
  std::optional<int64_t> batch;
  if (catalog.batch.size > 0)
    batch = catalog.batch.size;
  auto planAttr = dist::PlanAttr::getChecked(
      [&] { return module.emitError(); }, b.getContext(), plan.mode,
      plan.schedule, static_cast<int64_t>(plan.microbatches), batch,
      b.getArrayAttr(stages));
  if (!planAttr)
    return fail("the plan does not make a valid #dist.plan");
  module->setAttr(dist::kPlanAttrName, planAttr);
  return llvm::Error::success();
}

} // namespace hetpar
