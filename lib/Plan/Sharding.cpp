//===- Sharding.cpp - layouts, resharding and per-op timing ---------------===//
//
// See Sharding.h. The reshard costs are those of the collective that does the
// conversion (docs/cost-model.md): split -> replicated is an all-gather of the
// whole value, partial -> replicated an all-reduce, partial -> split a
// reduce-scatter, split -> split along another dimension an all-to-all of each
// device's part; replicated -> anything is a local slice (free).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Plan/Sharding.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/Simulator.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace hetpar {

namespace {
llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int64_t lcm(int64_t a, int64_t b) { return a / std::gcd(a, b) * b; }

/// Every (value, dimension, granule, outer) where factor `f` of `rule` lies.
struct Place {
  Value value;
  int dim;
  int64_t granule, outer;
  bool constant;
};
std::vector<Place> placesOf(Operation *op, const ShardingRule &rule, int f) {
  std::vector<Place> out;
  auto visit = [&](Value v, const DimFactors &dims) {
    if (auto p = ShardingRule::placement(dims, f, rule.factors))
      out.push_back({v, p->dim, p->granule, p->outer, isConstant(v)});
  };
  for (auto [k, v] : llvm::enumerate(op->getOperands()))
    if (k < rule.operands.size())
      visit(v, rule.operands[k]);
  for (auto [k, v] : llvm::enumerate(op->getResults()))
    if (k < rule.results.size())
      visit(v, rule.results[k]);
  return out;
}

/// Whether two factors' places have a dimension of a value in common.
bool sharesDimension(llvm::ArrayRef<Place> a, llvm::ArrayRef<Place> b) {
  return llvm::any_of(a, [&](const Place &p) {
    return llvm::any_of(b, [&](const Place &q) {
      return p.value == q.value && p.dim == q.dim;
    });
  });
}
} // namespace

bool isConstant(Value v) { return matchPattern(v, m_Constant()); }

double parameterCount(Value v) {
  auto st = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!isConstant(v) || !st || !llvm::isa<FloatType>(st.getElementType()))
    return 0;
  auto n = getNumElements(st.getShape());
  return n && *n > 1 ? static_cast<double>(*n) : 0;
}

llvm::Error checkPlanningAttributes(ModuleOp module) {
  auto printed = [&](llvm::StringRef name) {
    std::string value;
    llvm::raw_string_ostream(value) << module->getAttr(name);
    return value;
  };
  if (!getComputeDtype(module))
    return fail(
        llvm::formatv("the module's {0} is {1}; it must be \"float32\", "
                      "\"float16\" or \"bfloat16\"",
                      kComputeDtypeAttrName, printed(kComputeDtypeAttrName)));
  if (!getOptimizerStateSlots(module))
    return fail(llvm::formatv("the module's {0} is {1}; it must be an i64 "
                              "from 0 to {2} (float32 state slots per "
                              "parameter element)",
                              kOptimizerStateSlotsAttrName,
                              printed(kOptimizerStateSlotsAttrName),
                              kMaxOptimizerStateSlots));
  if (!getTrainingLabels(module))
    return fail(llvm::formatv("the module's {0} is {1}; it must be the labels "
                              "input, a #dist.graph_input with batch_dim = 0",
                              kTrainingLabelsAttrName,
                              printed(kTrainingLabelsAttrName)));
  return llvm::Error::success();
}

bool Layout::operator==(const Layout &o) const {
  if (kind != o.kind)
    return false;
  if (kind != Split)
    return true;
  if (dim != o.dim || outer != o.outer ||
      fractions.size() != o.fractions.size())
    return false;
  for (size_t k = 0; k < fractions.size(); ++k)
    if (std::abs(fractions[k] - o.fractions[k]) > 1e-9)
      return false;
  return true;
}

std::string Layout::str() const {
  switch (kind) {
  case Replicated:
    return "replicated";
  case Partial:
    return "partial";
  case Split:
    return llvm::formatv("split dim {0}{1}", dim,
                         outer > 1 ? " in " + std::to_string(outer) + " chunks"
                                   : std::string());
  }
  return "";
}

std::string layerOf(llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> parts;
  name.split(parts, '/');
  auto isNumber = [](llvm::StringRef s) {
    return !s.empty() && llvm::all_of(s, llvm::isDigit);
  };
  std::string prefix;
  for (llvm::StringRef p : parts) {
    if (p.empty())
      continue;
    prefix += "/" + p.str();
    auto [head, tail] = p.rsplit('.');
    if (isNumber(p) || (p.contains('.') && !head.empty() && isNumber(tail)))
      return prefix;
  }
  return "";
}

std::vector<int> assignLayers(llvm::ArrayRef<std::string> names) {
  // A new layer where an op names another layer; ops without a layer name
  // join the one before them.
  std::vector<int> layers;
  layers.reserve(names.size());
  std::string current;
  int next = -1;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string key = layerOf(names[i]);
    if (i == 0 || (!key.empty() && key != current)) {
      ++next;
      if (!key.empty())
        current = key;
    }
    layers.push_back(next);
  }
  return layers;
}

OpCatalog::OpCatalog(func::FuncOp func)
    : dtype(getComputeDtype(func).value_or(FloatMode::F32)),
      optimizerSlots(
          getOptimizerStateSlots(func).value_or(kMaxOptimizerStateSlots)),
      labels(trainingLabelsType(func)) {
  for (auto &[op, name] : listPlanOps(func)) {
    index[op] = ops.size();
    byName[name] = ops.size();
    ops.push_back(op);
    names.push_back(name);
    work.push_back(measureOp(op, dtype));
    std::optional<ShardingRule> rule;
    if (auto iface = llvm::dyn_cast<ShardingRuleOpInterface>(op))
      if (auto r = iface.getShardingRule(); succeeded(r))
        rule = std::move(*r);
    rules.push_back(std::move(rule));
  }
  readByGradient = valuesReadByGradients(ops, &withGradient);
  layer = assignLayers(names);
  batch = analyzeBatch(func, ops, rules);
  // Alignment of each (value, dimension) in elements, to a fixpoint: a factor
  // placed with granule g where the dimension is aligned to A needs units of
  // lcm(A, g) / g; every dimension it touches is then aligned to unit * g.
  llvm::DenseMap<std::pair<Value, int>, int64_t> align;
  factorUnit.resize(ops.size());
  blockFactor.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i)
    if (rules[i]) {
      factorUnit[i].assign(rules[i]->factors.size(), 1);
      blockFactor[i].assign(rules[i]->factors.size(), false);
    }
  for (int sweep = 0; sweep < 16; ++sweep) {
    bool changed = false;
    for (size_t n = 0; n < 2 * ops.size(); ++n) {
      // Forward then backward through the ops.
      size_t i = n < ops.size() ? n : 2 * ops.size() - 1 - n;
      if (!rules[i])
        continue;
      const ShardingRule &rule = *rules[i];
      for (size_t f = 0; f < rule.factors.size(); ++f) {
        if (factorUnit[i][f] == 0)
          continue;
        int64_t unit = factorUnit[i][f];
        auto places = placesOf(ops[i], rule, f);
        for (const Place &p : places) {
          int64_t a = align.lookup({p.value, p.dim});
          if (a > 1)
            unit = lcm(unit, lcm(a, p.granule) / p.granule);
          if (p.granule > 1 || p.outer > 1)
            blockFactor[i][f] = true;
        }
        if (unit > rule.factors[f].size || rule.factors[f].size % unit) {
          factorUnit[i][f] = 0;
          changed = true;
          continue;
        }
        if (unit != factorUnit[i][f]) {
          factorUnit[i][f] = unit;
          changed = true;
        }
        if (unit > 1)
          blockFactor[i][f] = true;
        for (const Place &p : places) {
          int64_t &a = align[{p.value, p.dim}];
          int64_t want = lcm(std::max<int64_t>(a, 1), unit * p.granule);
          if (want != a) {
            a = want;
            changed = true;
          }
        }
      }
    }
    if (!changed)
      break;
  }
}

std::optional<OpSharding> shardingForFactor(const OpCatalog &catalog, int i,
                                            int f,
                                            llvm::ArrayRef<double> weights,
                                            bool homogeneous) {
  const auto &rule = catalog.rules[i];
  if (!rule || f < 0 || f >= static_cast<int>(rule->factors.size()))
    return std::nullopt;
  const ShardingFactor &factor = rule->factors[f];
  if (factor.kind == FactorKind::Whole || catalog.factorUnit[i][f] == 0)
    return std::nullopt;
  Operation *op = catalog.ops[i];
  // Data parallelism owns the batch (Batch.h). Where the analysis does not
  // follow the batch (past an op that mixes it), dimension 0 of activations
  // of rank 2 or more is taken to be it.
  const OpBatch &batch = catalog.batch.ops[i];
  if (f == batch.factor)
    return std::nullopt;
  auto places = placesOf(op, *rule, f);
  // ... and the dimensions that hold it: a factor beside the batch in one
  // dimension ([L*N] rows of a sequence-first attention, L outer) leaves a
  // replica's or a microbatch's rows no block of its parts
  // (hetpar-dist-localize refuses it).
  if (batch.factor >= 0 &&
      sharesDimension(places, placesOf(op, *rule, batch.factor)))
    return std::nullopt;
  int resultDim = -1;
  for (const Place &p : places) {
    auto rank = llvm::cast<ShapedType>(p.value.getType()).getRank();
    if (batch.factor < 0 && !p.constant && p.dim == 0 && rank >= 2)
      return std::nullopt;
    if (p.value.getDefiningOp() == op && p.value == op->getResult(0))
      resultDim = p.dim;
  }
  if (factor.kind == FactorKind::Parallel && resultDim < 0)
    return std::nullopt;
  if (factor.kind == FactorKind::Parallel) {
    // plan.json names a parallel factor by its result dimension: it must be
    // that dimension's outermost factor.
    const DimFactors &dims = rule->results[0];
    if (dims[resultDim].empty() || dims[resultDim].front() != f)
      return std::nullopt;
  } else {
    // ... and a reduction factor by -1: the largest reduction factor.
    for (auto [g, other] : llvm::enumerate(rule->factors))
      if (other.kind == FactorKind::Reduction &&
          (other.size > factor.size ||
           (other.size == factor.size && static_cast<int>(g) < f)))
        return std::nullopt;
  }
  int64_t unit = catalog.factorUnit[i][f];
  int64_t units = factor.size / unit;
  int t = weights.size();
  if (units < t)
    return std::nullopt; // never silently onto fewer devices
  if (homogeneous && catalog.blockFactor[i][f] && units % t)
    return std::nullopt; // heads split evenly on devices of one kind
  std::vector<double> even(t, 1.0);
  std::vector<int64_t> parts =
      splitProportionally(units, homogeneous ? llvm::ArrayRef(even) : weights);
  if (parts.empty())
    return std::nullopt;
  OpSharding s;
  s.dim = factor.kind == FactorKind::Parallel ? resultDim : -1;
  for (int64_t p : parts)
    s.parts.push_back(static_cast<double>(p * unit));
  return s;
}

llvm::Expected<ResolvedSharding>
resolveSharding(const OpCatalog &catalog, int i, const OpSharding *s, int t) {
  Operation *op = catalog.ops[i];
  ResolvedSharding r;
  size_t nOperands = op->getNumOperands(), nResults = op->getNumResults();
  r.operands.assign(nOperands, Layout());
  r.results.assign(nResults, Layout());
  r.shares.assign(t, 1.0);
  r.operandShares.assign(nOperands, std::vector<double>(t, 1.0));
  if (!s)
    return r;
  if (static_cast<int>(s->parts.size()) != t)
    return fail(llvm::formatv("sharding of '{0}' has {1} parts for a group "
                              "of {2} devices",
                              catalog.names[i], s->parts.size(), t));
  double total = std::accumulate(s->parts.begin(), s->parts.end(), 0.0);
  std::vector<double> fractions;
  for (double p : s->parts)
    fractions.push_back(p / total);
  r.shares = fractions;
  const auto &rule = catalog.rules[i];
  if (!rule) {
    // No rule: the op's work is split as given; its operands are read whole.
    for (size_t k = 0; k < nOperands; ++k)
      if (isConstant(op->getOperand(k)))
        r.operandShares[k] = fractions;
    for (Layout &l : r.results) {
      if (s->dim >= 0)
        l = Layout{Layout::Split, static_cast<int>(s->dim), 1, fractions};
      else
        l.kind = Layout::Partial;
    }
    return r;
  }
  // The factor the sharding names.
  int f = -1;
  if (s->dim >= 0) {
    if (nResults == 0 || rule->results.empty() ||
        s->dim >= static_cast<int64_t>(rule->results[0].size()))
      return fail(llvm::formatv("sharding of '{0}': the result has no "
                                "dimension {1}",
                                catalog.names[i], s->dim));
    const auto &list = rule->results[0][s->dim];
    if (list.empty() ||
        rule->factors[list.front()].kind != FactorKind::Parallel)
      return fail(llvm::formatv(
          "sharding of '{0}': dimension {1} of its result cannot be split "
          "({2} op's rule: {3})",
          catalog.names[i], s->dim, onnx::getONNXOpType(op), rule->str()));
    f = list.front();
    if (f == catalog.batch.ops[i].factor)
      return fail(llvm::formatv(
          "sharding of '{0}': dimension {1} of its result holds the batch, "
          "which data parallelism splits, not tensor parallelism",
          catalog.names[i], s->dim));
  } else {
    for (auto [g, factor] : llvm::enumerate(rule->factors))
      if (factor.kind == FactorKind::Reduction &&
          (f < 0 || factor.size > rule->factors[f].size))
        f = g;
    if (f < 0)
      return fail(llvm::formatv(
          "sharding of '{0}': dim -1 splits a contraction, but the op has "
          "none ({1} op's rule: {2})",
          catalog.names[i], onnx::getONNXOpType(op), rule->str()));
  }
  r.factor = f;
  bool inConstant = false, inActivation = false;
  auto layoutFor = [&](Value v, const DimFactors &dims, Layout &layout,
                       std::vector<double> *share) {
    if (auto p = ShardingRule::placement(dims, f, rule->factors)) {
      layout = Layout{Layout::Split, p->dim, p->outer, fractions};
      if (share)
        *share = fractions;
      (isConstant(v) ? inConstant : inActivation) = true;
    }
  };
  for (size_t k = 0; k < nOperands && k < rule->operands.size(); ++k)
    layoutFor(op->getOperand(k), rule->operands[k], r.operands[k],
              &r.operandShares[k]);
  bool reduction = rule->factors[f].kind == FactorKind::Reduction;
  // A result that keeps a split reduction factor (LayerNormalizationGrad's
  // dX) is split by it; the others hold partial results (as the partitioner
  // lays them out).
  for (size_t k = 0; k < nResults && k < rule->results.size(); ++k) {
    bool keeps =
        ShardingRule::placement(rule->results[k], f, rule->factors).has_value();
    if (reduction && !keeps)
      r.results[k].kind = Layout::Partial;
    else
      layoutFor(op->getResult(k), rule->results[k], r.results[k], nullptr);
  }
  r.flexibleResult = !reduction && inConstant && !inActivation;
  return r;
}

double reshardTime(const Layout &from, const Layout &to, double bytes,
                   llvm::ArrayRef<int> group, const Cluster &cluster,
                   const CostModel &model, Collective *used) {
  if (from == to || from.kind == Layout::Replicated ||
      to.kind == Layout::Partial || group.size() < 2)
    return 0;
  Collective kind;
  double perRank = bytes;
  if (from.kind == Layout::Partial)
    kind = to.kind == Layout::Replicated ? Collective::AllReduce
                                         : Collective::ReduceScatter;
  else if (to.kind == Layout::Replicated)
    kind = Collective::AllGather;
  else {
    kind = Collective::AllToAll;
    perRank = bytes / group.size();
  }
  if (used)
    *used = kind;
  return model.collectiveTime(kind, perRank, group, cluster);
}

Layout afterCollective(const Layout &layout,
                       std::optional<Collective> collective, Type type,
                       llvm::ArrayRef<double> shares) {
  if (collective == Collective::AllGather ||
      collective == Collective::AllReduce)
    return Layout();
  if (collective == Collective::ReduceScatter &&
      layout.kind == Layout::Partial) {
    auto t = llvm::dyn_cast<RankedTensorType>(type);
    if (!t || t.getRank() == 0 ||
        t.getShape().back() < static_cast<int64_t>(shares.size()))
      return Layout(); // too few indices to split: all-reduced
    Layout l;
    l.kind = Layout::Split;
    l.dim = static_cast<int>(t.getRank() - 1);
    l.fractions.assign(shares.begin(), shares.end());
    return l;
  }
  return layout;
}

std::optional<ExitSplit>
exitSplit(const OpCatalog &catalog, OpResult value,
          llvm::function_ref<const ResolvedSharding *(int)> resolved,
          llvm::function_ref<std::optional<Collective>(int)> collectiveOf,
          llvm::function_ref<int(int)> stageOf) {
  auto producer = catalog.index.find(value.getOwner());
  if (producer == catalog.index.end())
    return std::nullopt;
  int p = producer->second, home = stageOf(p);
  const ResolvedSharding *made = resolved(p);
  auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
  if (!made || !type)
    return std::nullopt;
  Layout from = afterCollective(made->results[value.getResultNumber()],
                                collectiveOf(p), type, made->shares);
  if (from.kind != Layout::Split || from.outer != 1)
    return std::nullopt;
  // The users outside the stage: in one later stage, each needing the same
  // split (so that the received value serves them all as it arrives).
  std::optional<ExitSplit> out;
  for (OpOperand &use : value.getUses()) {
    auto it = catalog.index.find(use.getOwner());
    if (it == catalog.index.end())
      return std::nullopt; // a graph output
    int u = it->second, s = stageOf(u);
    if (s == home)
      continue;
    const ResolvedSharding *user = resolved(u);
    unsigned k = use.getOperandNumber();
    if (s < home || (out && out->stage != s) || !user ||
        k >= user->operands.size())
      return std::nullopt;
    const Layout &to = user->operands[k];
    if (to.kind != Layout::Split || to.dim != from.dim || to.outer != 1 ||
        (out && out->to != to))
      return std::nullopt;
    if (!out || u < out->user)
      out = ExitSplit{s, u, k, from, to};
  }
  return out;
}

llvm::Expected<ReplicaTime>
timeReplica(const OpCatalog &catalog, llvm::ArrayRef<int> ops,
            const llvm::StringMap<OpSharding> &shardings,
            llvm::ArrayRef<int> group, double batchShare, bool training,
            const llvm::DenseSet<int> *recomputed, const Cluster &cluster,
            const CostModel &model, const llvm::DenseSet<Value> *leaveSplit) {
  int t = group.size();
  ReplicaTime out;
  out.ownForward.assign(t, 0.0);
  out.ownBackward.assign(t, 0.0);
  llvm::DenseMap<Value, Layout> layoutOf; // values produced in the stage
  llvm::DenseSet<int> inStage(ops.begin(), ops.end());
  std::vector<const Device *> devices;
  for (int id : group)
    devices.push_back(cluster.findDevice(id));
  // Reshards already paid for, per value and target layout.
  llvm::DenseMap<Value, std::vector<Layout>> done;
  auto reshard = [&](Value v, const Layout &to, bool flexibleFrom) -> double {
    auto it = layoutOf.find(v);
    if (it == layoutOf.end())
      return 0; // from outside the stage: replicated
    const Layout &from = it->second;
    if (flexibleFrom && from.kind == Layout::Split &&
        to.kind == Layout::Split && from.dim == to.dim)
      return 0;
    auto &paid = done[v];
    if (llvm::is_contained(paid, to))
      return 0;
    double c = reshardTime(from, to, catalog.bytesOf(v.getType()) * batchShare,
                           group, cluster, model);
    paid.push_back(to);
    return c;
  };
  llvm::DenseMap<Value, bool> flexible;
  for (int i : ops) {
    Operation *op = catalog.ops[i];
    if (!catalog.work[i])
      return fail(llvm::formatv("op '{0}' has a shape that is not static; "
                                "run the static pipeline first",
                                catalog.names[i]));
    const OpWork &work = *catalog.work[i];
    auto sIt = shardings.find(catalog.names[i]);
    const OpSharding *s = sIt == shardings.end() ? nullptr : &sIt->second;
    auto resolved = resolveSharding(catalog, i, s, t);
    if (!resolved)
      return resolved.takeError();
    // Reshard the operands produced in this stage to what the op needs.
    double c = 0;
    for (auto [k, v] : llvm::enumerate(op->getOperands()))
      if (!isConstant(v))
        c += reshard(v, resolved->operands[k], flexible.lookup(v));
    double tf = 0, tb = 0;
    const bool again = recomputed && recomputed->contains(i);
    for (int d = 0; d < t; ++d) {
      double of = model.computeTime(work, *devices[d], batchShare,
                                    resolved->shares[d], false);
      double ob = training ? model.computeTime(work, *devices[d], batchShare,
                                               resolved->shares[d], true) +
                                 (again ? of : 0)
                           : 0;
      out.ownForward[d] += of;
      out.ownBackward[d] += ob;
      tf = std::max(tf, of);
      tb = std::max(tb, ob);
    }
    // The op's own collective, as plan.json names it.
    if (s && s->collective && t > 1) {
      double bytes = 0;
      for (Value v : op->getResults())
        bytes += catalog.bytesOf(v.getType()) * batchShare;
      c += model.collectiveTime(*s->collective, bytes, group, cluster);
    }
    for (auto [k, v] : llvm::enumerate(op->getResults())) {
      layoutOf[v] = s ? afterCollective(resolved->results[k], s->collective,
                                        v.getType(), resolved->shares)
                      : resolved->results[k];
      flexible[v] = resolved->flexibleResult && (!s || !s->collective);
    }
    out.forward += tf + c;
    out.collectives += c;
    // Backward: the mirrored collectives on the gradients.
    if (training)
      out.backward += tb + c;
  }
  // Values that leave the stage (to a later stage or the function's results)
  // leave replicated.
  double leave = 0;
  for (int i : ops)
    for (Value v : catalog.ops[i]->getResults()) {
      bool leaves = llvm::any_of(v.getUsers(), [&](Operation *u) {
        auto it = catalog.index.find(u);
        return it == catalog.index.end() || !inStage.count(it->second);
      });
      if (leaves && !(leaveSplit && leaveSplit->contains(v)))
        leave += reshard(v, Layout(), false);
    }
  out.forward += leave;
  out.collectives += leave;
  if (training)
    out.backward += leave;
  return out;
}

double keptShare(const OpCatalog &catalog,
                 llvm::function_ref<const ResolvedSharding *(int)> resolved,
                 OpResult value, std::optional<Collective> collective,
                 const llvm::DenseSet<int> &inStage, int t) {
  const ResolvedSharding *producer =
      resolved(catalog.index.lookup(value.getOwner()));
  if (!producer)
    return 1.0;
  Layout l = afterCollective(producer->results[value.getResultNumber()],
                             collective, value.getType(), producer->shares);
  if (l.kind != Layout::Split)
    return 1.0;
  for (OpOperand &use : value.getUses()) {
    auto it = catalog.index.find(use.getOwner());
    const ResolvedSharding *user =
        it == catalog.index.end() || !inStage.count(it->second)
            ? nullptr
            : resolved(it->second);
    if (!user || user->operands[use.getOperandNumber()].kind != Layout::Split)
      return 1.0;
  }
  return t >= 0 && t < static_cast<int>(l.fractions.size()) ? l.fractions[t]
                                                            : 1.0;
}

} // namespace hetpar
