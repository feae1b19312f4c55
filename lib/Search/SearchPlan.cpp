//===- SearchPlan.cpp - hetpar-search-plan --------------------------------===//
//
// The search as a pass: it only writes attributes (Search.h, annotateModule).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Search/Passes.h"
#include "hetpar/Search/Search.h"

#include <cmath>

namespace hetpar {
#define GEN_PASS_DEF_SEARCHPLANPASS
#include "hetpar/Search/Passes.h.inc"
} // namespace hetpar

using namespace mlir;

namespace {
struct SearchPlanPass
    : public hetpar::impl::SearchPlanPassBase<SearchPlanPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // At the module's location, without printing the module.
    auto failWith = [&](const llvm::Twine &message) {
      mlir::emitError(module.getLoc()) << "hetpar-search-plan: " << message;
      signalPassFailure();
    };
    hetpar::SearchOptions options;
    if (auto m = hetpar::dist::symbolizePlanMode(mode))
      options.mode = *m;
    else
      return failWith("mode must be 'inference' or 'training', not '" + mode +
                      "'");
    if (objective == "latency")
      options.objective = hetpar::Objective::Latency;
    else if (objective != "throughput")
      return failWith("objective must be 'throughput' or 'latency', not '" +
                      objective + "'");
    if (stages < 0)
      return failWith("stages must be 0 (any number) or more, not " +
                      llvm::Twine(stages));
    if (!(budget > 0) || !std::isfinite(budget))
      return failWith("budget must be a positive number of seconds");
    options.stages = stages;
    options.budgetSeconds = budget;
    if (!dtype.empty()) {
      auto parsed = hetpar::parseFloatMode(dtype);
      if (!parsed)
        return failWith("dtype must be 'float32', 'float16' or 'bfloat16', "
                        "not '" +
                        dtype + "'");
      hetpar::setComputeDtype(module, *parsed);
    }
    if (cluster.empty() && !hetpar::lookupDeviceKind(deviceKind))
      return failWith("unknown device kind '" + deviceKind + "'");
    llvm::Expected<hetpar::Cluster> c =
        cluster.empty() ? hetpar::Cluster::singleDevice(deviceKind)
                        : hetpar::loadCluster(cluster);
    if (!c)
      return failWith(llvm::toString(c.takeError()));
    hetpar::DefaultCostModel model(hetpar::CostParams::defaults());
    hetpar::Plan chosen;
    if (!plan.empty()) {
      auto loaded = hetpar::loadPlan(plan);
      if (!loaded)
        return failWith(llvm::toString(loaded.takeError()));
      if (!loaded->modeGiven)
        loaded->mode = options.mode;
      auto pred = hetpar::simulate(module, *c, *loaded, model);
      if (!pred)
        return failWith(plan + ": " + llvm::toString(pred.takeError()));
      chosen = std::move(*loaded);
    } else {
      auto result = hetpar::searchPlan(module, *c, model, options);
      if (!result)
        return failWith(llvm::toString(result.takeError()));
      chosen = std::move(result->best.plan);
    }
    if (llvm::Error err = hetpar::annotateModule(module, chosen, &*c))
      return failWith(llvm::toString(std::move(err)));
  }
};
} // namespace
