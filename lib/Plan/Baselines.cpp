//===- Baselines.cpp - the reference plans
//---------------------------------===//
//
// Three plans that every chosen plan is compared against (plan.json
// "baselines"), each built the way a user would set it up by hand on a
// heterogeneous cluster:
//  - data_parallel: one stage on every device, each device a replica whose
//  share
//    of the batch is proportional to its speed on this model;
//  - pipeline: one stage per device (in cluster order, so that neighbours share
//  a
//    node), op ranges balanced so that each stage takes about the same time on
//    its device, 1F1B, the microbatch count the simulator finds fastest among
//    the divisors of the batch up to 4 x stages (simulated in the order of an
//    estimate, until three plans that fit have been simulated);
//  - tensor_parallel: one stage, every MatMul/Gemm/Conv with a constant weight
//    split along its output features in proportion to device speed and
//    all-gathered (the other ops replicated).
// A baseline that cannot be built (a batch smaller than the replica count,
// fewer ops than stages) says why instead.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Plan/Simulator.h"

#include "hetpar/Plan/Sharding.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <tuple>

using namespace mlir;

namespace hetpar {

std::vector<int64_t> splitProportionally(int64_t total,
                                         llvm::ArrayRef<double> weights) {
  std::vector<int64_t> parts(weights.size(), 0);
  if (weights.empty() || total < static_cast<int64_t>(weights.size()))
    return {};
  double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (!(sum > 0) || !std::isfinite(sum) ||
      llvm::any_of(weights, [](double w) { return !(w >= 0); }))
    return {};
  // Everyone gets one, the rest goes by largest remainder.
  int64_t rest = total - static_cast<int64_t>(weights.size());
  std::vector<std::pair<double, size_t>> remainders;
  int64_t given = 0;
  for (auto [i, w] : llvm::enumerate(weights)) {
    double exact = static_cast<double>(rest) * (w / sum);
    parts[i] = 1 + static_cast<int64_t>(std::floor(exact));
    given += parts[i] - 1;
    remainders.push_back({exact - std::floor(exact), i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](auto &a, auto &b) { return a.first > b.first; });
  for (size_t k = 0; given < rest; ++k, ++given)
    ++parts[remainders[k % remainders.size()].second];
  return parts;
}

std::vector<double> zeroStateShares(const Stage &stage,
                                    const Cluster *cluster) {
  if (!stage.zero)
    return {};
  if (!stage.zeroShares.empty())
    return stage.zeroShares;
  std::vector<double> shares;
  for (int r = 0; r < stage.data; ++r) {
    const Device *d = cluster
                          ? cluster->findDevice(stage.devices[r * stage.tensor])
                          : nullptr;
    shares.push_back(d ? d->memoryBytes : 1.0);
  }
  return shares;
}

std::optional<std::pair<Plan, Prediction>>
shardStateIfNeeded(const OpCatalog &catalog, mlir::func::FuncOp func,
                   const Cluster &cluster, const Plan &plan,
                   const Prediction &pred, const CostModel &model) {
  if (plan.mode != Mode::Training || pred.memoryProblems.empty())
    return std::nullopt;
  // ZeRO-1 first; ZeRO-2 (which adds a reduce-scatter per microbatch) only
  // where that does not fit and a stage sums several microbatches.
  for (int zero : {1, 2}) {
    if (zero == 2 && plan.microbatches == 1)
      break;
    Plan sharded = plan;
    bool any = false;
    for (Stage &st : sharded.stages)
      if (st.data > 1 && st.zero < zero) {
        st.zero = zero;
        any = true;
      }
    if (!any)
      continue;
    auto p = simulate(catalog, func, cluster, sharded, model, false);
    if (!p) {
      llvm::consumeError(p.takeError());
      return std::nullopt;
    }
    if (p->memoryProblems.empty())
      return std::make_pair(std::move(sharded), std::move(*p));
  }
  return std::nullopt;
}

namespace {

struct ModelOps {
  std::vector<size_t> index; // in the catalog
  std::vector<Operation *> ops;
  std::vector<std::string> names;
  std::vector<OpWork> work;
};

ModelOps collect(const OpCatalog &catalog) {
  ModelOps m;
  for (size_t i = 0; i < catalog.size(); ++i) {
    if (!catalog.work[i])
      continue;
    m.index.push_back(i);
    m.ops.push_back(catalog.ops[i]);
    m.names.push_back(catalog.names[i]);
    m.work.push_back(*catalog.work[i]);
  }
  return m;
}

/// The weight of a matrix product: its constant B (MatMul, Gemm) or W (Conv),
/// also through a Transpose (torch.onnx's nn.Linear in training mode:
/// MatMul(x, Wᵀ)); null when it is not a constant.
Value productWeight(Operation *op, onnx::TransposeOp &transpose) {
  Value weight = op->getOperand(1);
  transpose = weight.getDefiningOp<onnx::TransposeOp>();
  if (transpose)
    weight = transpose->getOperand(0);
  return matchPattern(weight, m_Constant()) ? weight : Value();
}

/// Whether `op` reads its B as is: a MatMul, or a Gemm without transB.
bool readsB(Operation *op) {
  auto transB = op->getAttrOfType<IntegerAttr>("transB");
  return llvm::isa<onnx::MatMulOp>(op) ||
         (llvm::isa<onnx::GemmOp>(op) && (!transB || !transB.getInt()));
}

/// The parallel factor that a sharding of result dimension `dim` of catalog
/// op `index` splits (the dimension's outermost factor: a grouped Conv's
/// groups), or null when the op's rule keeps it whole.
const ShardingFactor *splitFactor(const OpCatalog &catalog, int index,
                                  int64_t dim) {
  const std::optional<ShardingRule> &rule = catalog.rules[index];
  if (!rule || rule->results.empty() ||
      static_cast<int64_t>(rule->results[0].size()) <= dim ||
      rule->results[0][dim].empty())
    return nullptr;
  const ShardingFactor &f = rule->factors[rule->results[0][dim].front()];
  return f.kind == FactorKind::Parallel ? &f : nullptr;
}

/// Whether a sharding of result dimension `dim` of catalog op `index` splits
/// all of it, `size` (not an outer factor only).
bool splitsResultDim(const OpCatalog &catalog, int index, int64_t dim,
                     int64_t size) {
  const ShardingFactor *f = splitFactor(catalog, index, dim);
  return f && f->size == size;
}

/// The Transpose of a split product's weight (Transpose(W) read as B) split
/// along result dimension `dim` with the product, so that the partition
/// slices W itself into a parameter shard per device rather than keeping
/// all of W on each. Not when it has other users (a tied weight), no name,
/// or is not 2-D.
void shardTransposedWeight(const OpCatalog &catalog, Operation *op,
                           onnx::TransposeOp transpose, int64_t dim,
                           llvm::ArrayRef<int64_t> parts,
                           llvm::StringMap<OpSharding> &shardings) {
  if (!transpose || !readsB(op) || !transpose->hasOneUse())
    return;
  auto it = catalog.index.find(transpose);
  auto type = llvm::dyn_cast<RankedTensorType>(transpose.getType());
  if (it == catalog.index.end() || catalog.names[it->second].empty() || !type ||
      type.getRank() != 2)
    return;
  OpSharding sh;
  sh.dim = dim;
  sh.parts.assign(parts.begin(), parts.end());
  sh.collective = std::nullopt;
  shardings[catalog.names[it->second]] = std::move(sh);
}

/// Megatron's pairing (Shoeybi et al., "Megatron-LM", 2019, section 3: the
/// MLP's first GEMM split by columns, the second by rows, no communication
/// between them): from column-parallel product `a`, the elementwise ops its
/// output flows through (bias, GELU's Erf composite, ReLU; each splitting
/// the same last dimension, every other operand a constant) up to one
/// product with a constant weight that reads the result as its activation
/// and contracts over the split dimension. No value of the set may leave it
/// otherwise. Empty when there is no such partner: `a` then gathers its
/// output.
struct RowPartner {
  Operation *product = nullptr;
  llvm::SetVector<Operation *> between;
};
std::optional<RowPartner> findRowPartner(const OpCatalog &catalog,
                                         Operation *a) {
  auto out = llvm::cast<RankedTensorType>(a->getResult(0).getType());
  int64_t dim = out.getRank() - 1, size = out.getShape()[dim];
  RowPartner p;
  llvm::SmallVector<Value> work{a->getResult(0)};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (user == p.product || p.between.contains(user))
        continue;
      auto it = catalog.index.find(user);
      if (it == catalog.index.end() || !catalog.work[it->second])
        return std::nullopt;
      onnx::TransposeOp t;
      if (catalog.work[it->second]->cls == OpClass::MatMul) {
        if (p.product || user->getOperand(0) != v ||
            llvm::isa<onnx::ConvOp>(user) || !productWeight(user, t))
          return std::nullopt;
        p.product = user;
        continue;
      }
      auto type =
          user->getNumResults() == 1
              ? llvm::dyn_cast<RankedTensorType>(user->getResult(0).getType())
              : nullptr;
      if (catalog.work[it->second]->cls != OpClass::Elementwise || !type ||
          type != out || !splitsResultDim(catalog, it->second, dim, size) ||
          p.between.size() >= 32)
        return std::nullopt;
      p.between.insert(user);
      work.push_back(user->getResult(0));
    }
  }
  if (!p.product)
    return std::nullopt;
  // Every operand inside the set comes from `a`, the set, or a constant.
  for (Operation *op : p.between)
    for (Value in : op->getOperands())
      if (in.getDefiningOp() != a && !p.between.contains(in.getDefiningOp()) &&
          !matchPattern(in, m_Constant()))
        return std::nullopt;
  return p;
}

/// The tensor-parallel baseline's shardings: each matrix product with a
/// constant weight split along its output features (or a Conv's channels)
/// in proportion to device speed, its output gathered; where Megatron's
/// pairing applies (findRowPartner), the output stays split through the
/// elementwise ops, and the partner product is split by rows (its
/// contraction) and all-reduced instead.
llvm::StringMap<OpSharding>
tensorParallelShardings(const OpCatalog &catalog, const ModelOps &m,
                        llvm::ArrayRef<double> speed) {
  llvm::StringMap<OpSharding> shardings;
  llvm::DenseSet<Operation *> rowParallel;
  auto nameOf = [&](Operation *op) {
    return catalog.names[catalog.index.lookup(op)];
  };
  for (auto [i, op] : llvm::enumerate(m.ops)) {
    if (m.work[i].cls != OpClass::MatMul || op->getNumOperands() < 2 ||
        op->getNumResults() != 1 || rowParallel.contains(op))
      continue;
    onnx::TransposeOp transpose;
    if (!productWeight(op, transpose))
      continue;
    auto result = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!result || result.getRank() < 2)
      continue;
    int64_t dim = llvm::isa<onnx::ConvOp>(op) ? 1 : result.getRank() - 1;
    const ShardingFactor *factor = splitFactor(catalog, m.index[i], dim);
    if (!factor)
      continue;
    std::vector<int64_t> columns = splitProportionally(factor->size, speed);
    if (columns.empty())
      continue;
    OpSharding sh;
    sh.dim = dim;
    sh.parts.assign(columns.begin(), columns.end());
    sh.collective = Collective::AllGather;
    std::optional<RowPartner> partner;
    if (!llvm::isa<onnx::ConvOp>(op) && factor->size == result.getShape()[dim])
      partner = findRowPartner(catalog, op);
    if (partner) {
      sh.collective = std::nullopt;
      for (Operation *e : partner->between) {
        OpSharding es;
        es.dim = dim;
        es.parts = sh.parts;
        shardings[nameOf(e)] = std::move(es);
      }
      OpSharding row;
      row.dim = -1;
      row.parts = sh.parts;
      row.collective = Collective::AllReduce;
      shardings[nameOf(partner->product)] = std::move(row);
      rowParallel.insert(partner->product);
      onnx::TransposeOp rowTranspose;
      productWeight(partner->product, rowTranspose);
      shardTransposedWeight(catalog, partner->product, rowTranspose, 0, columns,
                            shardings);
    }
    shardings[m.names[i]] = std::move(sh);
    shardTransposedWeight(catalog, op, transpose, 1, columns, shardings);
  }
  return shardings;
}

/// Seconds for `device` to run ops [from, to) on `batchShare` of the batch,
/// forward plus backward in training.
double rangeTime(const ModelOps &m, size_t from, size_t to,
                 const Device &device, double batchShare, bool training,
                 const CostModel &model) {
  double t = 0;
  for (size_t i = from; i < to; ++i) {
    t += model.computeTime(m.work[i], device, batchShare, 1.0, false);
    if (training)
      t += model.computeTime(m.work[i], device, batchShare, 1.0, true);
  }
  return t;
}

/// Contiguous op ranges, one per device in order, so that the slowest stage is
/// as fast as possible (binary search on the stage time with a greedy fill).
/// Devices left without ops are dropped; returns the first op of each stage.
std::vector<size_t> balanceStages(const ModelOps &m,
                                  llvm::ArrayRef<const Device *> devices,
                                  double batchShare, bool training,
                                  const CostModel &model) {
  size_t n = m.ops.size();
  // times[d][i]: op i on device d.
  // Devices of one kind, rates and slowdown time alike: each such class once.
  std::vector<std::vector<double>> times(devices.size());
  std::map<std::tuple<std::string, double, double, double, double>, size_t>
      first;
  double hi = 0;
  for (auto [d, dev] : llvm::enumerate(devices)) {
    auto [it, inserted] =
        first.try_emplace({dev->kind, dev->slowdown, dev->fp32Flops,
                           dev->tensorFlops, dev->memoryBandwidth},
                          d);
    if (!inserted) {
      times[d] = times[it->second];
    } else {
      times[d].resize(n);
      for (size_t i = 0; i < n; ++i)
        times[d][i] = rangeTime(m, i, i + 1, *dev, batchShare, training, model);
    }
    hi = std::max(hi, std::accumulate(times[d].begin(), times[d].end(), 0.0));
  }
  auto fill = [&](double limit, std::vector<size_t> *starts) {
    size_t i = 0;
    for (size_t d = 0; d < devices.size() && i < n; ++d) {
      double t = 0;
      size_t first = i;
      while (i < n && (i == first || t + times[d][i] <= limit))
        t += times[d][i++];
      if (starts)
        starts->push_back(first);
    }
    return i == n;
  };
  double lo = 0;
  for (int iter = 0; iter < 60; ++iter) {
    double mid = (lo + hi) / 2;
    (fill(mid, nullptr) ? hi : lo) = mid;
  }
  std::vector<size_t> starts;
  fill(hi, &starts);
  return starts;
}

/// The forward time of the whole model on one device: its speed is the inverse.
double modelTime(const ModelOps &m, const Device &device, bool training,
                 const CostModel &model) {
  return rangeTime(m, 0, m.ops.size(), device, 1.0, training, model);
}

} // namespace

std::vector<Baseline> makeBaselines(ModuleOp module, const Cluster &cluster,
                                    Mode mode, const CostModel &model) {
  std::vector<Baseline> out;
  auto funcs = module.getOps<func::FuncOp>();
  if (funcs.empty())
    return out;
  func::FuncOp func = *funcs.begin();
  OpCatalog catalog(func);
  ModelOps m = collect(catalog);
  bool training = mode == Mode::Training;
  int64_t batch = catalog.batch.samples;
  std::vector<int> ids;
  std::vector<const Device *> devices;
  std::vector<double> speed;
  for (const Device &d : cluster.devices) {
    ids.push_back(d.id);
    devices.push_back(&d);
    double t = modelTime(m, d, training, model);
    speed.push_back(t > 0 ? 1.0 / t : 1.0);
  }
  int n = ids.size();
  if (n == 0 || m.ops.empty())
    return out;

  // --- Data parallelism ---
  {
    Baseline b{"data_parallel", {}, std::nullopt, {}};
    std::vector<int64_t> samples = splitProportionally(batch, speed);
    if (samples.empty()) {
      b.notApplicable = llvm::formatv(
          "the batch ({0}) is smaller than the {1} devices", batch, n);
    } else {
      Stage s;
      s.devices = ids;
      s.data = n;
      s.firstOp = m.names.front();
      s.lastOp = m.names.back();
      for (int64_t k : samples)
        s.batchShares.push_back(k);
      b.plan.stages.push_back(std::move(s));
      b.plan.mode = mode;
      b.plan.origin = "baseline: data parallel";
    }
    out.push_back(std::move(b));
  }

  // --- Pipeline parallelism ---
  {
    Baseline b{"pipeline", {}, std::nullopt, {}};
    int p = std::min<int>(n, m.ops.size());
    // Every divisor of the batch up to 4p microbatches, estimated as
    // sum_s t_s + (m - 1) max_s t_s (Alpa, OSDI 2022, eq. 2); the estimates
    // are simulated best first, and the fastest plan that fits memory among
    // the first three that fit wins (the fastest of all when none fits).
    struct Option {
      double estimate;
      Plan plan;
    };
    std::vector<Option> options;
    int64_t most = catalog.batch.unchosenMicrobatchesOp(training) >= 0
                       ? 1
                       : std::min<int64_t>(batch, 4 * p);
    for (int64_t mb = 1; mb <= most; ++mb) {
      if (batch % mb)
        continue;
      std::vector<size_t> starts = balanceStages(
          m, llvm::ArrayRef(devices).take_front(p), 1.0 / mb, training, model);
      Plan plan;
      double sum = 0, slowest = 0;
      for (auto [k, first] : llvm::enumerate(starts)) {
        size_t last =
            k + 1 < starts.size() ? starts[k + 1] - 1 : m.ops.size() - 1;
        double t = rangeTime(m, first, last + 1, *devices[k], 1.0 / mb,
                             training, model);
        sum += t;
        slowest = std::max(slowest, t);
        Stage s;
        s.devices = {ids[k]};
        s.firstOp = m.names[first];
        s.lastOp = m.names[last];
        plan.stages.push_back(std::move(s));
      }
      plan.microbatches = mb;
      plan.schedule = Schedule::OneFOneB;
      plan.mode = mode;
      plan.origin = "baseline: pipeline";
      options.push_back({sum + (mb - 1) * slowest, std::move(plan)});
    }
    std::stable_sort(options.begin(), options.end(),
                     [](const Option &a, const Option &c) {
                       return a.estimate < c.estimate;
                     });
    int fitting = 0;
    for (Option &o : options) {
      if (fitting == 3)
        break;
      auto pred = simulate(catalog, func, cluster, o.plan, model, false);
      if (!pred) {
        llvm::consumeError(pred.takeError());
        continue;
      }
      bool fits = pred->memoryProblems.empty();
      fitting += fits;
      if (!b.prediction || (fits && !b.fits()) ||
          (fits == b.fits() && pred->stepTime < b.prediction->stepTime)) {
        b.plan = std::move(o.plan);
        b.prediction = std::move(*pred);
      }
    }
    if (!b.prediction)
      b.notApplicable = "no pipeline could be built";
    out.push_back(std::move(b));
  }

  // --- Tensor parallelism ---
  {
    Baseline b{"tensor_parallel", {}, std::nullopt, {}};
    Stage s;
    s.devices = ids;
    s.tensor = n;
    s.firstOp = m.names.front();
    s.lastOp = m.names.back();
    s.shardings = tensorParallelShardings(catalog, m, speed);
    if (s.shardings.empty()) {
      b.notApplicable =
          llvm::formatv("no matrix product has a constant weight with at "
                        "least as many output features as the {0} "
                        "devices",
                        n);
    } else {
      b.plan.stages.push_back(std::move(s));
      b.plan.mode = mode;
      b.plan.origin = "baseline: tensor parallel";
    }
    out.push_back(std::move(b));
  }

  // Evaluate data and tensor parallelism (the pipeline was evaluated above).
  for (Baseline &b : out) {
    if (b.prediction || !b.notApplicable.empty())
      continue;
    auto pred = simulate(catalog, func, cluster, b.plan, model, false);
    if (!pred) {
      b.notApplicable = llvm::toString(pred.takeError());
      continue;
    }
    b.prediction = std::move(*pred);
    // Training replicas whose optimizer state does not fit shard it.
    if (auto zero = shardStateIfNeeded(catalog, func, cluster, b.plan,
                                       *b.prediction, model)) {
      b.plan = std::move(zero->first);
      b.plan.origin += zeroOriginTag(b.plan);
      b.prediction = std::move(zero->second);
    }
  }
  return out;
}

llvm::json::Object baselinesToJSON(llvm::ArrayRef<Baseline> baselines) {
  llvm::json::Object out;
  for (const Baseline &b : baselines) {
    llvm::json::Object o;
    if (!b.prediction) {
      o["applicable"] = false;
      o["reason"] = b.notApplicable;
    } else {
      const Prediction &p = *b.prediction;
      o["applicable"] = true;
      o["fits"] = b.fits();
      o["predicted_step_time_s"] = p.stepTime;
      o["predicted_throughput"] = p.throughput;
      o["stages"] = static_cast<int64_t>(b.plan.stages.size());
      o["microbatches"] = b.plan.microbatches;
      double peak = 0;
      for (const DevicePrediction &d : p.devices)
        peak = std::max(peak, d.memory.total());
      o["max_peak_memory_bytes"] = peak;
      if (!b.fits())
        o["memory_problems"] = llvm::json::Array(p.memoryProblems);
    }
    out[b.name] = std::move(o);
  }
  return out;
}

} // namespace hetpar
