//===- DistReduceGradients.cpp - hetpar-dist-reduce-gradients -------------===//
//
// The training step of one data-parallel replica (Passes.td describes the
// pass; docs/training.md, "Data-parallel training"). Every replica runs the
// whole step on its rows of the batch; this pass weights its loss and
// gradients by the replica's part of the full batch's mean and sums them over
// the replicas with bucketed all-reduces, before the optimizer.
//
//===----------------------------------------------------------------------===//
#include "LossWeighting.h"
#include "hetpar/Transforms/GradientBuckets.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Plan/Simulator.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <map>

namespace hetpar {
#define GEN_PASS_DEF_DISTREDUCEGRADIENTSPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;
using train::LossWeighting;

namespace {

constexpr llvm::StringLiteral kMesh = "mesh";

/// A gradient result of the step: its return position and value.
struct Gradient {
  unsigned result;
  Value value;
  int64_t elements;
};

class ReplicaStep {
public:
  ReplicaStep(ModuleOp module, func::FuncOp func, int64_t device,
              double bucketMiB)
      : module(module), func(func), device(device), bucketMiB(bucketMiB),
        b(module.getContext()) {}
  LogicalResult run();

private:
  LogicalResult readReplica();
  LogicalResult checkBatchOps();
  Value buildWeight(const LossWeighting &how);
  /// Scales the backward pass's seed (train::kSeedAttr) by `weight`.
  LogicalResult weighSeed(Value weight);
  /// x summed over `over` (the replica's stage group when empty).
  Value allReduce(Location loc, Value x, ArrayRef<int64_t> over = {});
  FailureOr<SmallVector<Gradient>> collectGradients();
  /// The bucket's all-reduce over `over` (the stage group when empty),
  /// right after its last gradient, or before the return with `atEnd`.
  void reduceBucket(ArrayRef<Gradient> bucket, Value weight,
                    ArrayRef<int64_t> over = {}, bool atEnd = false);
  void reduceSharedParameters(SmallVectorImpl<Gradient> &grads);
  void markNormGroup(ArrayRef<Gradient> grads);
  Value weigh(GradientBuilder &g, Value x, Value weight);
  Location bucketLoc(ArrayRef<Gradient> bucket);
  /// A plan of several stages: hetpar-dist-pipeline-schedule has weighted
  /// the step already; the loss travels from the last stage to the others.
  bool pipeline() const { return plan.stages.size() > 1; }
  Value pipelineLoss(Value loss);
  void reduceGradients(ArrayRef<Gradient> grads, Value weight);
  /// ZeRO-1: each replica's elements of a gradient of `elements` (empty when
  /// the stage does not shard, or a replica's share would be empty).
  SmallVector<int64_t> zeroSizes(int64_t elements) const;
  /// ZeRO-1 and 2: the bucket's gradients, weighted, reduce-scattered so
  /// that this replica keeps its shard of each (kZeroSizesAttr).
  void scatterBucket(ArrayRef<Gradient> bucket, Value weight);
  SmallVector<Value> scatterValues(ArrayRef<Value> values,
                                   ArrayRef<SmallVector<int64_t>> sizes,
                                   Value weight, Location loc);
  /// Places the builder after the last producer of the bucket (and of
  /// `weight`), or before the return with `atEnd` or when every gradient
  /// is a constant.
  void setInsertionAfter(ArrayRef<Gradient> bucket, Value weight, bool atEnd);
  /// Whether the gradient's parameter is a tensor-parallel shard
  /// (train::kTensorShardAttr).
  bool isTensorShard(const Gradient &gr);

  ModuleOp module;
  func::FuncOp func;
  int64_t device;
  double bucketMiB;
  OpBuilder b;
  PlanAnnotation plan;
  const StageAnnotation *stage = nullptr;
  int64_t replica = -1;
  bool isLast = true;
  SmallVector<int64_t> group;
  /// Counts weighting: whether this replica counts any label (a bool
  /// scalar); null otherwise.
  Value counted;
};

LogicalResult ReplicaStep::readReplica() {
  FailureOr<PlanAnnotation> read = readPlanAnnotation(module, std::nullopt);
  if (failed(read))
    return failure();
  plan = std::move(*read);
  if (std::string why = plan.trainingProblem(); !why.empty())
    return module.emitError() << "hetpar-dist-reduce-gradients: " << why;
  int s = plan.stageOf(device);
  if (s < 0)
    return module.emitError() << "hetpar-dist-reduce-gradients: device "
                              << device << " is not in the plan";
  stage = &plan.stages[s];
  isLast = s + 1 == static_cast<int>(plan.stages.size());
  replica = stage->replicaOf(device);
  group = stage->dataGroupOf(device);
  // A pipeline stage's step covers every microbatch
  // (hetpar-dist-pipeline-schedule).
  int64_t rows = stage->rows[replica] * (pipeline() ? plan.microbatches : 1);
  return train::checkDeviceRows(func, device, rows, "the batch");
}

/// Ops whose training-mode result depends on the whole batch: one replica
/// would compute something else than one device does. (A training-mode
/// Dropout draws the masks of its replica's elements: hetpar-dist-partition
/// gives it their element_offset.)
LogicalResult ReplicaStep::checkBatchOps() {
  if (stage->data == 1)
    return success();
  WalkResult r = func.walk([&](Operation *op) {
    auto bn = llvm::dyn_cast<onnx::BatchNormalizationOp>(op);
    if (bn && bn.getTrainingMode() != 0) {
      op->emitError("training-mode BatchNormalization normalizes over the "
                    "batch, which data parallelism splits (synchronized "
                    "batch statistics are not implemented)");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

Value ReplicaStep::allReduce(Location loc, Value x, ArrayRef<int64_t> over) {
  return dist::AllReduceOp::create(
      b, loc, x.getType(), x, FlatSymbolRefAttr::get(b.getContext(), kMesh),
      b.getDenseI64ArrayAttr(over.empty() ? ArrayRef<int64_t>(group) : over),
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::Sum));
}

/// The replica's weight w_r as a float32 scalar, built at the start of the
/// function (the counts depend on the labels only).
Value ReplicaStep::buildWeight(const LossWeighting &how) {
  Location loc = func.getLoc();
  b.setInsertionPointToStart(&func.getBody().front());
  GradientBuilder g(b, loc, {});
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  auto constant = [&](double v) -> Value {
    return onnx::ConstantOp::create(
        b, loc, DenseElementsAttr::get(f32, static_cast<float>(v)));
  };
  switch (how.kind) {
  case LossWeighting::One:
    return constant(1.0);
  case LossWeighting::Rows:
    return constant(static_cast<double>(stage->rows[replica]) /
                    static_cast<double>(plan.microbatchRows));
  case LossWeighting::Counts:
    break;
  }
  // count_r = sum(labels != ignore_index); w_r = count_r / sum_r count_r.
  // Labels the step computes (a Reshape of the input): after them.
  if (Operation *def = how.labels.getDefiningOp())
    b.setInsertionPointAfter(def);
  Value count = train::countLabels(g, how.labels, how.ignoreIndex);
  Value total = allReduce(
      NameLoc::get(b.getStringAttr("the batch's counted labels"), loc), count);
  counted = train::contributes(g, count, total);
  return g.div(count, total);
}

LogicalResult ReplicaStep::weighSeed(Value weight) {
  Operation *seed = nullptr;
  func.walk([&](Operation *op) {
    if (op->hasAttr(train::kSeedAttr))
      seed = op;
  });
  if (!seed)
    return func.emitError("the step has no backward seed (hetpar.seed) to "
                          "weigh; run hetpar-onnx-differentiate first");
  Operation *w = weight.getDefiningOp();
  b.setInsertionPointAfter(w && seed->isBeforeInBlock(w) ? w : seed);
  GradientBuilder g(b, seed->getLoc(), {});
  Value scaled = g.mul(seed->getResult(0), weight);
  seed->getResult(0).replaceAllUsesExcept(scaled, scaled.getDefiningOp());
  return success();
}

FailureOr<SmallVector<Gradient>> ReplicaStep::collectGradients() {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Gradient> out;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    if (!func.getResultAttr(i, train::kGradientOfAttr))
      continue;
    Value v = ret.getOperand(i);
    auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.getElementType().isF32() || !t.hasStaticShape())
      return func.emitError() << "gradient result " << i << " is "
                              << v.getType() << ", not a static float32 tensor",
             failure();
    out.push_back({i, v, t.getNumElements()});
  }
  // The order the backward pass produces them (arguments and constants
  // first): a bucket is complete at its last producer.
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : func.getBody().front())
    position[&op] = static_cast<int64_t>(position.size());
  auto at = [&](Value v) -> int64_t {
    Operation *def = v.getDefiningOp();
    return def ? position.lookup(def) : -1;
  };
  llvm::stable_sort(out, [&](const Gradient &x, const Gradient &y) {
    return at(x.value) < at(y.value);
  });
  return out;
}

/// The name a bucket's ops carry into diagnostics (a collective that times
/// out names it): "gradients of P1, P2, ... (N)".
Location ReplicaStep::bucketLoc(ArrayRef<Gradient> bucket) {
  std::string name = "gradients of ";
  for (auto [k, gr] : llvm::enumerate(bucket)) {
    if (k == 3) {
      name += ", ...";
      break;
    }
    auto param = func.getResultAttrOfType<FlatSymbolRefAttr>(
        gr.result, train::kGradientOfAttr);
    name += (k ? ", " : "") + (param ? param.getValue().str() : "?");
  }
  name += " (" + std::to_string(bucket.size()) + ")";
  return NameLoc::get(b.getStringAttr(name), bucket.front().value.getLoc());
}

/// x times the replica's weight; zeros from a replica whose labels are all
/// ignored while others' are not (train::contributes), so that the batch's
/// loss and gradients are one device's.
Value ReplicaStep::weigh(GradientBuilder &g, Value x, Value weight) {
  if (!weight)
    return x;
  Value scaled = g.mul(x, weight);
  if (!counted)
    return scaled;
  return g
      .create<onnx::WhereOp>(1, GradientBuilder::elementType(x), counted,
                             scaled, g.scalar(0.0, x))
      ->getResult(0);
}

/// One bucket: its gradients flattened and concatenated, scaled by the
/// weight, all-reduced, cut back into the results.
void ReplicaStep::setInsertionAfter(ArrayRef<Gradient> bucket, Value weight,
                                    bool atEnd) {
  Operation *last = nullptr;
  for (const Gradient &gr : bucket)
    if (Operation *def = gr.value.getDefiningOp())
      if (!last || last->isBeforeInBlock(def))
        last = def;
  if (Operation *w = weight ? weight.getDefiningOp() : nullptr;
      w && (!last || last->isBeforeInBlock(w)))
    last = w;
  if (last && !atEnd)
    b.setInsertionPointAfter(last);
  else // every gradient is a constant (a parameter the step does not use)
    b.setInsertionPoint(func.getBody().front().getTerminator());
}

void ReplicaStep::reduceBucket(ArrayRef<Gradient> bucket, Value weight,
                               ArrayRef<int64_t> over, bool atEnd) {
  setInsertionAfter(bucket, weight, atEnd);
  Location loc = bucketLoc(bucket);
  GradientBuilder g(b, loc, {});
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (bucket.size() == 1) {
    Value sum = allReduce(loc, weigh(g, bucket.front().value, weight), over);
    ret.setOperand(bucket.front().result, sum);
    return;
  }
  SmallVector<Value> flat;
  int64_t total = 0;
  for (const Gradient &gr : bucket) {
    flat.push_back(g.reshape(gr.value, {gr.elements}));
    total += gr.elements;
  }
  Value joined = onnx::ConcatOp::create(
      b, loc, RankedTensorType::get({total}, b.getF32Type()), flat, 0);
  Value sum = allReduce(loc, weigh(g, joined, weight), over);
  int64_t at = 0;
  for (const Gradient &gr : bucket) {
    Value piece = g.make<onnx::SliceOp>(
        sum, g.i64s({at}), g.i64s({at + gr.elements}), g.i64s({0}), Value());
    auto shape = llvm::cast<RankedTensorType>(gr.value.getType()).getShape();
    ret.setOperand(gr.result, g.reshape(piece, shape));
    at += gr.elements;
  }
}

SmallVector<int64_t> ReplicaStep::zeroSizes(int64_t elements) const {
  if (stage->zeroShares.empty() || stage->data < 2)
    return {};
  // Empty when a replica would get no element: the gradient stays whole.
  std::vector<int64_t> parts = splitProportionally(elements, stage->zeroShares);
  return SmallVector<int64_t>(parts.begin(), parts.end());
}

/// Reduce-scatters `values` (one per gradient of a bucket; `sizes[k]`:
/// each replica's elements of value k) at the builder's insertion point.
/// They are laid out replica by replica (replica 0's shard of each, then
/// replica 1's, ...) and scaled by `weight`, so that one reduce-scatter
/// leaves each replica the summed shards it updates. Returns this replica's
/// shard of each value, flat.
SmallVector<Value>
ReplicaStep::scatterValues(ArrayRef<Value> values,
                           ArrayRef<SmallVector<int64_t>> sizes, Value weight,
                           Location loc) {
  GradientBuilder g(b, loc, {});
  SmallVector<Value> flat;
  for (Value v : values) {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    flat.push_back(g.reshape(v, {t.getNumElements()}));
  }
  // One value is laid out replica by replica already: no packing copy.
  Value joined = flat.front();
  SmallVector<int64_t> perReplica(sizes.front());
  if (flat.size() > 1) {
    SmallVector<Value> pieces;
    perReplica.assign(stage->data, 0);
    for (int64_t r = 0; r < stage->data; ++r)
      for (auto [k, v] : llvm::enumerate(flat)) {
        int64_t from = 0;
        for (int64_t q = 0; q < r; ++q)
          from += sizes[k][q];
        int64_t to = from + sizes[k][r];
        pieces.push_back(g.make<onnx::SliceOp>(v, g.i64s({from}), g.i64s({to}),
                                               g.i64s({0}), Value()));
        perReplica[r] += sizes[k][r];
      }
    int64_t total = 0;
    for (int64_t n : perReplica)
      total += n;
    joined = onnx::ConcatOp::create(
        b, loc, RankedTensorType::get({total}, b.getF32Type()), pieces, 0);
  }
  Value mine = dist::ReduceScatterOp::create(
      b, loc, RankedTensorType::get({perReplica[replica]}, b.getF32Type()),
      weigh(g, joined, weight), FlatSymbolRefAttr::get(b.getContext(), kMesh),
      b.getDenseI64ArrayAttr(group),
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::Sum),
      b.getI64IntegerAttr(0), b.getDenseI64ArrayAttr(perReplica));
  if (values.size() == 1)
    return {mine};
  SmallVector<Value> shards;
  int64_t at = 0;
  for (auto [k, v] : llvm::enumerate(values)) {
    int64_t n = sizes[k][replica];
    shards.push_back(g.make<onnx::SliceOp>(mine, g.i64s({at}), g.i64s({at + n}),
                                           g.i64s({0}), Value()));
    at += n;
  }
  return shards;
}

/// The terms of a pipeline's running sum over microbatches
/// (hetpar-dist-pipeline-schedule: add(add(g0, g1), g2), each add marked
/// train::kRunningSumAttr), first microbatch first; {v} for any other value.
static SmallVector<Value> runningSumTerms(Value v) {
  SmallVector<Value> terms;
  while (auto add = v.getDefiningOp<onnx::AddOp>()) {
    if (!add->hasAttr(train::kRunningSumAttr))
      break;
    terms.push_back(add.getB());
    v = add.getA();
  }
  terms.push_back(v);
  std::reverse(terms.begin(), terms.end());
  return terms;
}

/// Erases the adds of a running sum that nothing reads any more.
static void eraseDeadSum(Value v) {
  while (auto add = v.getDefiningOp<onnx::AddOp>()) {
    if (!add->hasAttr(train::kRunningSumAttr) || !add->use_empty())
      return;
    v = add.getA();
    add->erase();
  }
}

/// The bucket's gradients become this replica's shards (ZeRO-1): summed over
/// the replicas by one reduce-scatter after the last of them. ZeRO-2 in a
/// pipeline: the sums over the microbatches are cut apart, each microbatch's
/// gradients are reduce-scattered once its backward part has made them, and
/// only the shards are summed, so no whole running sum is kept.
void ReplicaStep::scatterBucket(ArrayRef<Gradient> bucket, Value weight) {
  Location loc = bucketLoc(bucket);
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<SmallVector<int64_t>> sizes;
  for (const Gradient &gr : bucket)
    sizes.push_back(zeroSizes(gr.elements));
  SmallVector<SmallVector<Value>> terms;
  bool perMicrobatch = stage->zeroStage == 2 && plan.microbatches > 1;
  for (const Gradient &gr : bucket) {
    terms.push_back(perMicrobatch ? runningSumTerms(gr.value)
                                  : SmallVector<Value>{gr.value});
    perMicrobatch &= terms.back().size() == terms.front().size();
  }
  if (!perMicrobatch)
    for (auto [k, gr] : llvm::enumerate(bucket))
      terms[k] = {gr.value};
  SmallVector<Value> sums(bucket.size());
  for (size_t j = 0; j < terms.front().size(); ++j) {
    SmallVector<Gradient> made;
    SmallVector<Value> values;
    for (auto [k, gr] : llvm::enumerate(bucket)) {
      made.push_back({gr.result, terms[k][j], gr.elements});
      values.push_back(terms[k][j]);
    }
    setInsertionAfter(made, weight, /*atEnd=*/false);
    SmallVector<Value> shards = scatterValues(values, sizes, weight, loc);
    GradientBuilder g(b, loc, {});
    for (auto [k, shard] : llvm::enumerate(shards)) {
      sums[k] = sums[k] ? g.add(sums[k], shard) : shard;
      if (j > 0)
        sums[k].getDefiningOp()->setAttr(train::kRunningSumAttr,
                                         b.getUnitAttr());
    }
  }
  for (auto [k, gr] : llvm::enumerate(bucket)) {
    ret.setOperand(gr.result, sums[k]);
    func.setResultAttr(gr.result, train::kZeroSizesAttr,
                       b.getDenseI64ArrayAttr(sizes[k]));
    eraseDeadSum(gr.value);
  }
  func.setFunctionType(
      b.getFunctionType(func.getArgumentTypes(), ret.getOperandTypes()));
  func->setAttr(train::kZeroGroupAttr, b.getDenseI64ArrayAttr(group));
}

bool ReplicaStep::isTensorShard(const Gradient &gr) {
  auto param = func.getResultAttrOfType<FlatSymbolRefAttr>(
      gr.result, train::kGradientOfAttr);
  auto global =
      param ? SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(func,
                                                                         param)
            : ml_program::GlobalOp();
  return global && global->hasAttr(train::kTensorShardAttr);
}

/// The step's loss on every device of a pipeline: the last stage's
/// replicas sum theirs (already weighted) and each sends it to some devices
/// of the earlier stages (device i of those, in mesh order, gets it from
/// replica i mod data), which return it as their result 0. `loss` is the
/// last stage's weighted loss, null elsewhere.
Value ReplicaStep::pipelineLoss(Value loss) {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  b.setInsertionPoint(ret);
  Location loc = NameLoc::get(b.getStringAttr("the step's loss"), ret.getLoc());
  const StageAnnotation &last = plan.stages.back();
  auto mesh = FlatSymbolRefAttr::get(b.getContext(), kMesh);
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  if (loss && stage->data > 1)
    loss = allReduce(loc, loss);
  int64_t i = 0;
  for (const StageAnnotation &st : ArrayRef(plan.stages).drop_back())
    for (int64_t id : st.devices) {
      int64_t from = last.devices[i++ % last.data];
      if (loss && from == device)
        dist::SendOp::create(b, loc, loss, mesh, b.getI64IntegerAttr(id),
                             b.getI64IntegerAttr(dist::kLossTag));
      if (id == device)
        loss = dist::RecvOp::create(b, loc, scalar, mesh,
                                    b.getI64IntegerAttr(from),
                                    b.getI64IntegerAttr(dist::kLossTag));
    }
  return loss;
}

/// A parameter that several stages of a pipeline read (a tied embedding, or
/// one initializer the exporter shares between layers) has a copy on each:
/// its gradient is summed over the devices of all of them (the module's
/// kSharedParamsAttr names the group), so every copy takes the same update.
/// Every member runs these all-reduces at the end of its step, one per
/// group, in the groups' order and the parameters' name order, so that the
/// members' sequences match. Removes those gradients from `grads`.
void ReplicaStep::reduceSharedParameters(SmallVectorImpl<Gradient> &grads) {
  auto shared = module->getAttrOfType<DictionaryAttr>(train::kSharedParamsAttr);
  if (!shared)
    return;
  std::map<std::vector<int64_t>, std::map<std::string, Gradient>> byGroup;
  SmallVector<Gradient> rest;
  for (const Gradient &gr : grads) {
    auto param = func.getResultAttrOfType<FlatSymbolRefAttr>(
        gr.result, train::kGradientOfAttr);
    auto devices = param ? llvm::dyn_cast_or_null<DenseI64ArrayAttr>(
                               shared.get(param.getValue()))
                         : DenseI64ArrayAttr();
    if (!devices) {
      rest.push_back(gr);
      continue;
    }
    std::vector<int64_t> key(devices.asArrayRef().begin(),
                             devices.asArrayRef().end());
    byGroup[key][param.getValue().str()] = gr;
  }
  grads.assign(rest.begin(), rest.end());
  for (auto &[devices, byName] : byGroup) {
    SmallVector<Gradient> bucket;
    for (auto &[name, gr] : byName) {
      // Another stage may reach the loss from it: every copy takes the
      // summed gradient's update.
      func.removeResultAttr(gr.result, StringAttr::get(func.getContext(),
                                                       train::kNoGradientAttr));
      bucket.push_back(gr);
    }
    reduceBucket(bucket, Value(), devices, /*atEnd=*/true);
  }
}

/// The step's gradient norm is over every device of the plan
/// (train::kNormGroupAttr), each gradient weighted by 1 over the devices
/// that hold the same values after the reductions: its stage's replicas
/// (one for a ZeRO-1 shard) times its tensor-parallel group (one for a
/// parameter shard), or every device of the stages that share it. Called
/// after the reductions, on every gradient of the step.
void ReplicaStep::markNormGroup(ArrayRef<Gradient> grads) {
  SmallVector<int64_t> all;
  for (const StageAnnotation &st : plan.stages)
    llvm::append_range(all, st.devices);
  func->setAttr(train::kNormGroupAttr, b.getDenseI64ArrayAttr(all));
  auto shared = module->getAttrOfType<DictionaryAttr>(train::kSharedParamsAttr);
  auto weightName = StringAttr::get(func.getContext(), train::kNormWeightAttr);
  for (const Gradient &gr : grads) {
    auto param = func.getResultAttrOfType<FlatSymbolRefAttr>(
        gr.result, train::kGradientOfAttr);
    bool zeroShard = bool(func.getResultAttr(gr.result, train::kZeroSizesAttr));
    int64_t copies =
        (zeroShard ? 1 : stage->data) * (isTensorShard(gr) ? 1 : stage->tensor);
    if (auto devices = shared && param
                           ? llvm::dyn_cast_or_null<DenseI64ArrayAttr>(
                                 shared.get(param.getValue()))
                           : DenseI64ArrayAttr())
      copies = devices.size();
    if (copies > 1)
      func.setResultAttr(gr.result, weightName,
                         b.getF64FloatAttr(1.0 / static_cast<double>(copies)));
    else
      func.removeResultAttr(gr.result, weightName);
  }
}

/// The gradients summed over the stage's replicas, in buckets, each
/// scaled by `weight` (null: already weighted). A parameter without a path
/// to the loss (train::kNoGradientAttr) keeps its zero gradient: the
/// optimizer does not update it.
void ReplicaStep::reduceGradients(ArrayRef<Gradient> grads, Value weight) {
  // Elements per bucket; a bucket larger than 2^60 floats (any model) is one
  // bucket for everything (the conversion of a larger double to int64_t is
  // undefined: 1e30 MiB gave buckets of one gradient).
  double elements = bucketMiB * 1024 * 1024 / sizeof(float);
  int64_t cap = elements >= 0x1p60
                    ? int64_t(1) << 60
                    : std::max<int64_t>(1, static_cast<int64_t>(elements));
  // Two kinds of bucket: all-reduced, and (ZeRO-1) reduce-scattered.
  SmallVector<Gradient> buckets[2];
  int64_t filled[2] = {0, 0};
  auto flush = [&](int kind) {
    if (buckets[kind].empty())
      return;
    if (kind)
      scatterBucket(buckets[kind], weight);
    else
      reduceBucket(buckets[kind], weight);
    buckets[kind].clear();
    filled[kind] = 0;
  };
  for (const Gradient &gr : grads) {
    if (func.getResultAttr(gr.result, train::kNoGradientAttr))
      continue;
    int kind = zeroSizes(gr.elements).empty() ? 0 : 1;
    if (!buckets[kind].empty() && filled[kind] + gr.elements > cap)
      flush(kind);
    buckets[kind].push_back(gr);
    filled[kind] += gr.elements;
  }
  flush(0);
  flush(1);
}

LogicalResult ReplicaStep::run() {
  if (failed(readReplica()) || failed(checkBatchOps()))
    return failure();
  train::markDeviceStep(module, func, device, stage->devices, stage->kinds);
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  FailureOr<SmallVector<Gradient>> grads = collectGradients();
  if (failed(grads))
    return failure();
  if (pipeline()) {
    bool hasLoss = ret.getNumOperands() > 0 &&
                   !func.getResultAttr(0, train::kGradientOfAttr);
    if (isLast != hasLoss)
      return func.emitError()
             << "a pipeline's training step returns a loss on its last "
                "stage only; device "
             << device
             << (isLast ? " is on the last stage but returns none"
                        : " is not on the last stage but returns one");
    SmallVector<Gradient> all = *grads;
    reduceSharedParameters(*grads);
    if (stage->data > 1)
      reduceGradients(*grads, Value());
    markNormGroup(all);
    Value loss = pipelineLoss(isLast ? ret.getOperand(0) : Value());
    if (isLast) {
      ret.setOperand(0, loss);
      return success();
    }
    // The loss becomes result 0 of an earlier stage's step.
    SmallVector<Value> results{loss};
    llvm::append_range(results, ret.getOperands());
    SmallVector<Type> types{loss.getType()};
    llvm::append_range(types, func.getResultTypes());
    SmallVector<DictionaryAttr> attrs{b.getDictionaryAttr(
        b.getNamedAttr("onnx.name", b.getStringAttr("loss")))};
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      attrs.push_back(func.getResultAttrDict(i));
    ret->setOperands(results);
    func.setFunctionType(b.getFunctionType(func.getArgumentTypes(), types));
    func.setAllResultAttrs(attrs);
    return success();
  }
  // Tensor parallelism or ZeRO-1: the norm adds every device's part.
  bool normGroup = stage->tensor > 1 || !stage->zeroShares.empty();
  if (stage->data == 1) {
    if (normGroup)
      markNormGroup(*grads);
    return success();
  }
  if (ret.getNumOperands() == 0)
    return func.emitError("the training step returns no loss");
  FailureOr<LossWeighting> how =
      train::detectLossWeighting(func, ret.getOperand(0));
  if (failed(how))
    return failure();
  Value weight = buildWeight(*how);
  // The loss every replica reports: the full batch's.
  b.setInsertionPoint(ret);
  {
    GradientBuilder g(b, ret.getLoc(), {});
    ret.setOperand(0, allReduce(NameLoc::get(b.getStringAttr("the step's loss"),
                                             ret.getLoc()),
                                weigh(g, ret.getOperand(0), weight)));
  }
  // A step whose backward pass sums over the replicas weighs its seed, so
  // that what each replica adds to those sums carries its weight; its
  // gradients are then summed as they are (a constant 1 keeps the guard of
  // a replica without counted labels).
  if (func->hasAttr(train::kSynchronizedAttr)) {
    if (failed(weighSeed(weight)))
      return failure();
    b.setInsertionPointToStart(&func.getBody().front());
    weight = onnx::ConstantOp::create(
        b, func.getLoc(),
        DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                               1.0f));
  }
  reduceGradients(*grads, weight);
  if (normGroup)
    markNormGroup(*grads);
  return success();
}

struct DistReduceGradientsPass
    : hetpar::impl::DistReduceGradientsPassBase<DistReduceGradientsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (std::string why = train::bucketMiBError(bucketMiB); !why.empty()) {
      module.emitError() << why;
      return signalPassFailure();
    }
    auto func = train::deviceStepFunction(module, device, getArgument());
    if (failed(func) ||
        failed(ReplicaStep(module, *func, device, bucketMiB).run()))
      signalPassFailure();
  }
};

} // namespace
