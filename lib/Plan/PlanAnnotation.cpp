//===- PlanAnnotation.cpp - the plan the module carries -------------------===//
#include "hetpar/Plan/PlanAnnotation.h"

#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace hetpar {

int64_t StageAnnotation::replicaOf(int64_t id) const {
  for (auto [k, d] : llvm::enumerate(devices))
    if (d == id)
      return static_cast<int64_t>(k) / tensor;
  return -1;
}

llvm::SmallVector<int64_t> StageAnnotation::dataGroupOf(int64_t id) const {
  llvm::SmallVector<int64_t> group;
  const auto *it = llvm::find(devices, id);
  if (it == devices.end())
    return group;
  int64_t rank = (it - devices.begin()) % tensor;
  for (int64_t r = 0; r < data; ++r)
    group.push_back(devices[r * tensor + rank]);
  return group;
}

int PlanAnnotation::stageOf(int64_t id) const {
  for (auto [s, st] : llvm::enumerate(stages))
    if (st.replicaOf(id) >= 0)
      return static_cast<int>(s);
  return -1;
}

std::string trainingPlanProblem(llvm::ArrayRef<int64_t> tensorOfStage,
                                bool sixteenBit) {
  if (!sixteenBit)
    return "";
  if (tensorOfStage.size() > 1)
    return "16-bit training (--dtype bfloat16 or float16) of a pipeline plan "
           "is not supported yet (16-bit stages and their transfers); train "
           "it in float32";
  for (auto [s, tensor] : llvm::enumerate(tensorOfStage))
    if (tensor != 1)
      return llvm::formatv("16-bit training (--dtype bfloat16 or float16) of "
                           "a tensor-parallel plan is not supported yet (stage "
                           "{0} has tensor parallelism of {1}); train it in "
                           "float32",
                           s, tensor)
          .str();
  return "";
}

std::string PlanAnnotation::trainingProblem(bool sixteenBit) const {
  llvm::SmallVector<int64_t> tensors;
  for (const StageAnnotation &st : stages)
    tensors.push_back(st.tensor);
  return trainingPlanProblem(tensors, sixteenBit);
}

namespace {

/// The replicas' rows of a microbatch of `rows` samples, cut by `shares`.
LogicalResult cutRows(StageAnnotation &st, ArrayRef<double> shares,
                      int64_t rows,
                      llvm::function_ref<InFlightDiagnostic()> where) {
  double total = std::accumulate(shares.begin(), shares.end(), 0.0);
  int64_t at = 0;
  for (double share : shares) {
    double exact = share / total * rows;
    int64_t mine = static_cast<int64_t>(std::llround(exact));
    if (!(share > 0) || mine < 1 || std::abs(exact - mine) > 1e-6)
      return where() << "a replica's share of a microbatch of " << rows
                     << " samples is " << llvm::formatv("{0:F2}", exact)
                     << ", not a positive whole number";
    st.offsets.push_back(at);
    st.rows.push_back(mine);
    at += mine;
  }
  return success();
}

/// One stage of the plan (the attribute's verifier has checked its
/// structure), with its replicas' rows of a microbatch.
LogicalResult readStage(dist::StagePlanAttr attr, int64_t microbatchRows,
                        StageAnnotation &st,
                        llvm::function_ref<InFlightDiagnostic()> where) {
  st.data = attr.getData();
  st.tensor = attr.getTensor();
  llvm::append_range(st.devices, attr.getDevices().asArrayRef());
  for (size_t k = 0; k < st.devices.size(); ++k) {
    auto kind = attr.getKinds() ? llvm::cast<StringAttr>(attr.getKinds()[k])
                                : StringAttr();
    st.kinds.push_back(kind ? kind.str() : "unknown");
  }
  st.recompute = attr.recomputes();
  if (auto z = attr.getZeroShares())
    st.zeroShares.assign(z.asArrayRef().begin(), z.asArrayRef().end());
  st.zeroStage = attr.getZeroStage();
  SmallVector<double> shares(st.data, 1.0);
  if (auto given = attr.getBatchShares())
    shares.assign(given.asArrayRef().begin(), given.asArrayRef().end());
  return cutRows(st, shares, microbatchRows, where);
}

} // namespace

FailureOr<PlanAnnotation> readPlanAnnotation(ModuleOp module,
                                             std::optional<int64_t> batch) {
  auto plan = module->getAttrOfType<dist::PlanAttr>(dist::kPlanAttrName);
  if (!plan)
    return module.emitError()
           << "no plan on the module: run hetpar-search-plan first (or write "
              "'"
           << dist::kPlanAttrName << "', '" << dist::kStageIdAttrName
           << "' and '" << dist::kOpShardingAttrName << "' by hand)";
  PlanAnnotation out;
  out.microbatches = plan.getMicrobatches();
  out.mode = plan.getMode();
  out.schedule = plan.getSchedule();
  if (plan.getBatch())
    batch = *plan.getBatch();
  if (!batch || *batch < 1)
    return module.emitError()
           << dist::kPlanAttrName
           << ": no batch to split (the plan has no 'batch' and the model's "
              "first input no batch dimension)";
  out.batch = *batch;
  if (out.batch % out.microbatches)
    return module.emitError()
           << dist::kPlanAttrName << ": " << out.microbatches
           << " microbatches do not divide the batch of " << out.batch;
  out.microbatchRows = out.batch / out.microbatches;
  for (auto [s, stage] : llvm::enumerate(plan.getStagePlans())) {
    auto where = [&, s = s]() {
      return module.emitError()
             << dist::kPlanAttrName << " stage " << s << ": ";
    };
    StageAnnotation st;
    if (failed(readStage(stage, out.microbatchRows, st, where)))
      return failure();
    out.stages.push_back(std::move(st));
  }
  return out;
}

} // namespace hetpar
