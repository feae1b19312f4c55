//===- IntraOp.cpp - sharding search on one tensor-parallel group ---------===//
//
// Each op of a segment picks one choice: replication or the split of one
// factor of its sharding rule (shardingForFactor). The cost of an assignment
// is what timeReplica charges: every op's time on its slowest device, plus the
// reshards between a producer's layout and each layout its users need (each
// (value, layout) paid once), plus the gathers of values that leave the
// segment; doubled for the mirrored collectives of the backward pass in
// training. This is the integer linear program of Alpa (Zheng et al., OSDI
// 2022, section 4) with the reshard paid once per needed layout rather than
// per edge:
//   x[i,c] in {0,1}, sum_c x[i,c] = 1                   (one choice per op)
//   n[v,q] >= x[i,c]   for every use of v by a choice c that needs layout q
//   w[v,q,c'] <= x[j,c'], sum_c' w[v,q,c'] = n[v,q]     (v made by op j)
//   minimize sum x[i,c] * node(i,c) + sum w[v,q,c'] * reshard(layout(j,c'), q)
// (w is x[j,c'] * n[v,q] in the disaggregated form, whose LP relaxation is far
// tighter than McCormick's w >= x + n - 1).
// solved by CBC (COIN-OR branch and cut) within the time budget. A greedy
// assignment (ops in order, each taking its cheapest choice given its
// producers) and full replication are scored too; the cheapest of the three
// wins, so a solver that fails or times out never makes the plan worse.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Search/Search.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <coin/Cbc_C_Interface.h>
#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <limits>

using namespace mlir;

namespace hetpar {

namespace {

/// Relative speed of each device of `group` on op `i` (1 / its time).
std::vector<double> speeds(const OpCatalog &catalog, int i,
                           llvm::ArrayRef<int> group, double batchShare,
                           const Cluster &cluster, const CostModel &model) {
  std::vector<double> w;
  for (int id : group) {
    double t = catalog.work[i] ? model.computeTime(*catalog.work[i],
                                                   *cluster.findDevice(id),
                                                   batchShare, 1.0, false)
                               : 0;
    w.push_back(t > 0 ? 1.0 / t : 1.0);
  }
  return w;
}

bool isHomogeneous(llvm::ArrayRef<int> group, const Cluster &cluster) {
  const Device *first = cluster.findDevice(group.front());
  return llvm::all_of(group, [&](int id) {
    const Device *d = cluster.findDevice(id);
    return d->kind == first->kind && d->slowdown == first->slowdown &&
           d->fp32Flops == first->fp32Flops &&
           d->tensorFlops == first->tensorFlops &&
           d->memoryBandwidth == first->memoryBandwidth;
  });
}

struct Choice {
  std::optional<OpSharding> sharding;
  ResolvedSharding resolved;
  double node = 0; ///< compute (and gathers of values leaving the segment)
};

} // namespace

std::vector<std::optional<OpSharding>>
shardingChoices(const OpCatalog &catalog, int i, llvm::ArrayRef<int> group,
                double batchShare, bool training, const Cluster &cluster,
                const CostModel &model) {
  std::vector<std::optional<OpSharding>> out{std::nullopt};
  if (group.size() < 2 || !catalog.rules[i])
    return out;
  // In training, a split that leaves a parameter whole (a sequence split of a
  // matrix product) leaves each device a partial gradient of it, to be summed
  // over the group every step: only factors every parameter contains.
  Operation *op = catalog.ops[i];
  auto inEveryParameter = [&](int f) {
    for (auto [k, v] : llvm::enumerate(op->getOperands())) {
      if (parameterCount(v) == 0)
        continue;
      if (k >= catalog.rules[i]->operands.size() ||
          !ShardingRule::placement(catalog.rules[i]->operands[k], f,
                                   catalog.rules[i]->factors))
        return false;
    }
    return true;
  };
  std::vector<double> w = speeds(catalog, i, group, batchShare, cluster, model);
  bool homogeneous = isHomogeneous(group, cluster);
  for (size_t f = 0; f < catalog.rules[i]->factors.size(); ++f) {
    if (training && !inEveryParameter(f))
      continue;
    auto s = shardingForFactor(catalog, i, f, w, homogeneous);
    if (!s)
      continue;
    bool seen = llvm::any_of(out, [&](const std::optional<OpSharding> &o) {
      return o && o->dim == s->dim && o->parts == s->parts;
    });
    if (!seen)
      out.push_back(std::move(s));
  }
  return out;
}

llvm::Expected<ShardingSolution>
solveShardings(const OpCatalog &catalog, llvm::ArrayRef<int> ops,
               llvm::ArrayRef<int> group, double batchShare, bool training,
               const Cluster &cluster, const CostModel &model,
               double budgetSeconds, ShardingSolver solver) {
  int t = group.size();
  double mult = training ? 2.0 : 1.0;
  auto evaluate = [&](const llvm::StringMap<OpSharding> &shardings)
      -> llvm::Expected<double> {
    auto r = timeReplica(catalog, ops, shardings, group, batchShare, training,
                         nullptr, cluster, model);
    if (!r)
      return r.takeError();
    return r->forward + r->backward;
  };
  ShardingSolution best;
  best.method = "replicated";
  {
    auto time = evaluate(best.shardings);
    if (!time)
      return time.takeError();
    best.time = *time;
  }
  if (t < 2)
    return best;

  // --- Choices and their costs ---
  std::vector<const Device *> devices;
  for (int id : group)
    devices.push_back(cluster.findDevice(id));
  llvm::DenseMap<int, int> position; // catalog index -> position in ops
  for (auto [k, i] : llvm::enumerate(ops))
    position[i] = k;
  std::vector<std::vector<Choice>> choices(ops.size());
  for (auto [k, i] : llvm::enumerate(ops)) {
    for (auto &s : shardingChoices(catalog, i, group, batchShare, training,
                                   cluster, model)) {
      auto r = resolveSharding(catalog, i, s ? &*s : nullptr, t);
      if (!r)
        return r.takeError();
      Choice c{s, std::move(*r), 0};
      double tf = 0, tb = 0;
      for (int d = 0; d < t; ++d) {
        tf = std::max(tf, model.computeTime(*catalog.work[i], *devices[d],
                                            batchShare, c.resolved.shares[d],
                                            false));
        if (training)
          tb = std::max(tb, model.computeTime(*catalog.work[i], *devices[d],
                                              batchShare, c.resolved.shares[d],
                                              true));
      }
      c.node = tf + tb;
      // Results that leave the segment leave replicated.
      for (auto [r, v] : llvm::enumerate(catalog.ops[i]->getResults())) {
        bool leaves = llvm::any_of(v.getUsers(), [&](Operation *u) {
          auto it = catalog.index.find(u);
          return it == catalog.index.end() || !position.count(it->second);
        });
        if (leaves)
          c.node +=
              mult * reshardTime(c.resolved.results[r], Layout(),
                                 catalog.bytesOf(v.getType()) * batchShare,
                                 group, cluster, model);
      }
      choices[k].push_back(std::move(c));
    }
  }
  // The uses inside the segment: (producer position, result, consumer
  // position, operand).
  struct Use {
    int producer, result, consumer, operand;
  };
  std::vector<Use> uses;
  for (auto [k, i] : llvm::enumerate(ops))
    for (auto [o, v] : llvm::enumerate(catalog.ops[i]->getOperands())) {
      if (isConstant(v))
        continue;
      auto res = llvm::dyn_cast<OpResult>(v);
      if (!res)
        continue;
      auto it = catalog.index.find(res.getOwner());
      if (it == catalog.index.end() || !position.count(it->second))
        continue;
      uses.push_back({position[it->second],
                      static_cast<int>(res.getResultNumber()),
                      static_cast<int>(k), static_cast<int>(o)});
    }
  auto edgeCost = [&](const Use &u, const Choice &from, const Layout &to) {
    const Layout &l = from.resolved.results[u.result];
    if (from.resolved.flexibleResult && l.kind == Layout::Split &&
        to.kind == Layout::Split && l.dim == to.dim)
      return 0.0;
    Value v = catalog.ops[ops[u.producer]]->getResult(u.result);
    return mult * reshardTime(l, to, catalog.bytesOf(v.getType()) * batchShare,
                              group, cluster, model);
  };
  auto toShardings = [&](llvm::ArrayRef<int> pick) {
    llvm::StringMap<OpSharding> out;
    for (auto [k, c] : llvm::enumerate(pick))
      if (choices[k][c].sharding)
        out[catalog.names[ops[k]]] = *choices[k][c].sharding;
    return out;
  };
  auto consider = [&](llvm::ArrayRef<int> pick, llvm::StringRef method,
                      bool optimal) -> llvm::Error {
    auto shardings = toShardings(pick);
    auto time = evaluate(shardings);
    if (!time)
      return time.takeError();
    // The solver's answer wins ties: "greedy" or "replicated" means the
    // solver did worse (or gave no answer).
    if (*time < best.time * (1 - 1e-12) ||
        (method == "ilp" && *time <= best.time * (1 + 1e-12))) {
      best.shardings = std::move(shardings);
      best.time = *time;
      best.method = method.str();
    }
    // The program's cost is the assignment's time, so its proven optimum
    // bounds every assignment: the best one found is optimal too.
    if (optimal)
      best.optimal = true;
    return llvm::Error::success();
  };

  // --- Greedy: each op its cheapest choice given its producers' ---
  // (Lean: the choice that leaves the least weight bytes on any device first,
  // then the cheapest.)
  bool lean = solver == ShardingSolver::Lean;
  auto weightBytes = [&](size_t k, const Choice &choice) {
    double most = 0;
    for (int d = 0; d < t; ++d) {
      double bytes = 0;
      for (auto [o, v] : llvm::enumerate(catalog.ops[ops[k]]->getOperands()))
        if (isConstant(v))
          bytes += catalog.bytesOf(v.getType()) *
                   choice.resolved.operandShares[o][d];
      most = std::max(most, bytes);
    }
    return most;
  };
  {
    std::vector<int> pick(ops.size(), 0);
    for (size_t k = 0; k < ops.size(); ++k) {
      double bestCost = std::numeric_limits<double>::infinity();
      for (auto [c, choice] : llvm::enumerate(choices[k])) {
        double cost = choice.node + (lean ? weightBytes(k, choice) : 0);
        for (const Use &u : uses)
          if (u.consumer == static_cast<int>(k))
            cost += edgeCost(u, choices[u.producer][pick[u.producer]],
                             choice.resolved.operands[u.operand]);
        if (cost < bestCost) {
          bestCost = cost;
          pick[k] = c;
        }
      }
    }
    if (lean) {
      auto shardings = toShardings(pick);
      auto time = evaluate(shardings);
      if (!time)
        return time.takeError();
      return ShardingSolution{std::move(shardings), *time, false, "lean"};
    }
    if (llvm::Error err = consider(pick, "greedy", false))
      return std::move(err);
  }

  // --- ILP ---
  // CBC's LP solver (Clp) calls LAPACK, here OpenBLAS, whose idle worker
  // threads spin in sched_yield between the many small solves: one thread
  // (measured: 4.3 s of system time per GPT-3 search on mixed-1024 without).
  static bool singleThreaded = [] {
    if (auto *set = reinterpret_cast<void (*)(int)>(
            dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
      set(1);
    return true;
  }();
  (void)singleThreaded;
  // Costs in microseconds keep CBC's tolerances meaningful.
  const double scale = 1e6;
  Cbc_Model *ilp = Cbc_newModel();
  Cbc_setLogLevel(ilp, 0);
  // With the disaggregated form the relaxation is nearly integral: branch and
  // cut without the primal heuristics, without the Gomory, probing and
  // mixed-integer-rounding cuts and without preprocessing, which cost more
  // than they prune here (measured on a 5-GPU mixed node: 13.1 s with CBC's
  // defaults and the McCormick form, 2.9 s with this form, 1.9 s without the
  // cuts; bench/search: preprocessing off halves the solver's time).
  Cbc_setParameter(ilp, "heur", "off");
  for (const char *cut : {"gomory", "probing", "mixed"})
    Cbc_setParameter(ilp, cut, "off");
  Cbc_setParameter(ilp, "preprocess", "off");
  int columns = 0;
  std::vector<std::vector<int>> x(ops.size());
  for (size_t k = 0; k < ops.size(); ++k)
    for (const Choice &c : choices[k]) {
      x[k].push_back(columns++);
      Cbc_addCol(ilp, "", 0, 1, c.node * scale, 1, 0, nullptr, nullptr);
    }
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<double> ones(x[k].size(), 1.0);
    Cbc_addRow(ilp, "", x[k].size(), x[k].data(), ones.data(), 'E', 1.0);
  }
  // Needed layouts per produced value.
  struct Need {
    int producer, result;
    Layout layout;
    int column;
  };
  std::vector<Need> needs;
  for (const Use &u : uses)
    for (auto [c, choice] : llvm::enumerate(choices[u.consumer])) {
      const Layout &q = choice.resolved.operands[u.operand];
      // Needing what every producer choice can give for free costs nothing.
      bool free = llvm::all_of(choices[u.producer], [&](const Choice &p) {
        return edgeCost(u, p, q) == 0;
      });
      if (free)
        continue;
      auto it = llvm::find_if(needs, [&](const Need &n) {
        return n.producer == u.producer && n.result == u.result &&
               n.layout == q;
      });
      int column;
      if (it == needs.end()) {
        column = columns++;
        Cbc_addCol(ilp, "", 0, 1, 0, 1, 0, nullptr, nullptr);
        needs.push_back({u.producer, u.result, q, column});
        // w[v, q, c'] = x[j, c'] * n[v, q] in the disaggregated form, whose
        // relaxation is much tighter than McCormick's z >= x + n - 1:
        // w <= x[j, c'], sum_c' w = n[v, q]; paid reshard(c' -> q) each.
        std::vector<int> sumCols{column};
        std::vector<double> sumCoefs{-1.0};
        for (auto [pc, p] : llvm::enumerate(choices[u.producer])) {
          int w = columns++;
          Cbc_addCol(ilp, "", 0, 1, edgeCost(u, p, q) * scale, 0, 0, nullptr,
                     nullptr);
          int cols[2] = {w, x[u.producer][pc]};
          double coefs[2] = {1, -1};
          Cbc_addRow(ilp, "", 2, cols, coefs, 'L', 0.0);
          sumCols.push_back(w);
          sumCoefs.push_back(1.0);
        }
        Cbc_addRow(ilp, "", sumCols.size(), sumCols.data(), sumCoefs.data(),
                   'E', 0.0);
      } else {
        column = it->column;
      }
      int cols[2] = {column, x[u.consumer][c]};
      double coefs[2] = {1, -1};
      Cbc_addRow(ilp, "", 2, cols, coefs, 'G', 0.0);
    }
  Cbc_solve(ilp);
  const double *solution = Cbc_getColSolution(ilp);
  bool optimal = Cbc_isProvenOptimal(ilp);
  if (solution && Cbc_numberSavedSolutions(ilp) >= 0) {
    std::vector<int> pick(ops.size(), 0);
    bool complete = true;
    for (size_t k = 0; k < ops.size(); ++k) {
      int chosen = -1;
      for (auto [c, col] : llvm::enumerate(x[k]))
        if (solution[col] > 0.5)
          chosen = c;
      complete &= chosen >= 0;
      pick[k] = std::max(chosen, 0);
    }
    if (complete)
      if (llvm::Error err = consider(pick, "ilp", optimal)) {
        Cbc_deleteModel(ilp);
        return std::move(err);
      }
  }
  Cbc_deleteModel(ilp);
  return best;
}

} // namespace hetpar
