//===- PlanAnnotation.cpp - the hetpar.plan module attribute --------------===//
#include "hetpar/Plan/PlanAnnotation.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseSet.h"
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

LogicalResult readStage(DictionaryAttr dict, llvm::DenseSet<int64_t> &seen,
                        int64_t microbatchRows, StageAnnotation &st,
                        llvm::function_ref<InFlightDiagnostic()> where) {
  auto devs = dict.getAs<DenseI32ArrayAttr>("devices");
  auto data = dict.getAs<IntegerAttr>("data");
  auto tensor = dict.getAs<IntegerAttr>("tensor");
  if (!devs || devs.empty() || !data || !tensor || data.getInt() < 1 ||
      tensor.getInt() < 1 ||
      data.getInt() * tensor.getInt() != static_cast<int64_t>(devs.size()))
    return where() << "needs devices, data >= 1 and tensor >= 1 with data "
                      "x tensor devices";
  st.data = data.getInt();
  st.tensor = tensor.getInt();
  for (int id : devs.asArrayRef()) {
    if (id < 0 || !seen.insert(id).second)
      return where() << "device " << id << " is negative or in the plan twice";
    st.devices.push_back(id);
  }
  auto kinds = dict.getAs<ArrayAttr>("kinds");
  for (size_t k = 0; k < st.devices.size(); ++k) {
    auto kind = kinds && k < kinds.size() ? llvm::dyn_cast<StringAttr>(kinds[k])
                                          : StringAttr();
    st.kinds.push_back(kind ? kind.str() : "unknown");
  }
  if (auto r = dict.getAs<BoolAttr>("recompute"))
    st.recompute = r.getValue();
  if (auto z = dict.getAs<DenseF64ArrayAttr>("zero_shares"); z && !z.empty()) {
    if (static_cast<int64_t>(z.size()) != st.data)
      return where() << "zero_shares has " << z.size() << " entries for "
                     << st.data << " replicas";
    if (llvm::any_of(z.asArrayRef(), [](double v) { return !(v > 0); }))
      return where() << "zero_shares must be positive";
    st.zeroShares.assign(z.asArrayRef().begin(), z.asArrayRef().end());
  }
  SmallVector<double> shares(st.data, 1.0);
  if (auto given = dict.getAs<DenseF64ArrayAttr>("batch_shares");
      given && !given.empty()) {
    if (static_cast<int64_t>(given.size()) != st.data)
      return where() << "batch_shares has " << given.size() << " entries for "
                     << st.data << " replicas";
    shares.assign(given.asArrayRef().begin(), given.asArrayRef().end());
  }
  return cutRows(st, shares, microbatchRows, where);
}

} // namespace

FailureOr<PlanAnnotation> readPlanAnnotation(ModuleOp module,
                                             std::optional<int64_t> batch) {
  auto plan = module->getAttrOfType<DictionaryAttr>(kPlanAttrName);
  if (!plan)
    return module.emitError(
        "no plan on the module: run hetpar-search-plan first (or write "
        "hetpar.plan, hetpar.stage and hetpar.sharding by hand)");
  PlanAnnotation out;
  auto mb = plan.getAs<IntegerAttr>("microbatches");
  auto list = plan.getAs<ArrayAttr>("stages");
  if (!mb || mb.getInt() < 1 || !list || list.empty())
    return module.emitError("hetpar.plan needs microbatches >= 1 and a "
                            "non-empty stages list");
  out.microbatches = mb.getInt();
  if (auto mode = plan.getAs<StringAttr>("mode"))
    out.mode = mode.str();
  if (auto schedule = plan.getAs<StringAttr>("schedule"))
    out.schedule = schedule.str();
  if (auto given = plan.getAs<IntegerAttr>("batch"))
    batch = given.getInt();
  if (!batch || *batch < 1)
    return module.emitError("hetpar.plan: no batch to split (the plan has no "
                            "'batch' and the model's first input no batch "
                            "dimension)");
  out.batch = *batch;
  if (out.batch % out.microbatches)
    return module.emitError()
           << "hetpar.plan: " << out.microbatches
           << " microbatches do not divide the batch of " << out.batch;
  out.microbatchRows = out.batch / out.microbatches;
  llvm::DenseSet<int64_t> seen;
  for (auto [s, entry] : llvm::enumerate(list)) {
    auto where = [&, s = s]() {
      return module.emitError() << "hetpar.plan stage " << s << ": ";
    };
    auto dict = llvm::dyn_cast<DictionaryAttr>(entry);
    if (!dict)
      return where() << "not a dictionary";
    StageAnnotation st;
    if (failed(readStage(dict, seen, out.microbatchRows, st, where)))
      return failure();
    out.stages.push_back(std::move(st));
  }
  return out;
}

} // namespace hetpar
