//===- DistPipelineSchedule.cpp - hetpar-dist-pipeline-schedule -----------===//
//
// The training step of one device of a pipeline stage over all the plan's
// microbatches, in the plan's schedule (Passes.td describes the pass;
// docs/training.md, "Pipeline training"). The step of one microbatch, as
// hetpar-onnx-differentiate made it, is cut into its forward part F and its
// backward part B; the pass lays out F(k) and B(k) for every microbatch k in
// 1F1B or GPipe order, sums the gradients over the microbatches and weights
// each microbatch's loss by its part of the step's.
//
//===----------------------------------------------------------------------===//
#include "LossWeighting.h"
#include "Recompute.h"
#include "TrainStepControl.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace hetpar {
#define GEN_PASS_DEF_DISTPIPELINESCHEDULEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// Where an op of the one-microbatch step runs. Invariant ops (constants,
/// parameter loads, what follows from them alone) run once; the others once
/// per microbatch, in its forward or its backward slot.
enum class Part { Invariant = 0, Forward = 1, Backward = 2 };

/// One slot of the schedule: the forward or backward part of microbatch k.
struct Slot {
  Part part;
  int64_t microbatch;
};

/// The slots of stage `s` of `p` over `m` microbatches. 1F1B (PipeDream-
/// Flush, Narayanan et al. 2021): min(p - s - 1, m) forward parts to fill the
/// pipeline, then one forward and one backward in turn, then the remaining
/// backward parts, so at most p - s microbatches are in flight. GPipe: every
/// forward part, then every backward part.
SmallVector<Slot> scheduleSlots(dist::PipelineSchedule schedule, int64_t s,
                                int64_t p, int64_t m) {
  SmallVector<Slot> slots;
  int64_t warmup =
      schedule == dist::PipelineSchedule::OneFOneB ? std::min(p - s - 1, m) : m;
  for (int64_t k = 0; k < warmup; ++k)
    slots.push_back({Part::Forward, k});
  for (int64_t k = 0; k < m - warmup; ++k) {
    slots.push_back({Part::Forward, warmup + k});
    slots.push_back({Part::Backward, k});
  }
  for (int64_t k = m - warmup; k < m; ++k)
    slots.push_back({Part::Backward, k});
  return slots;
}

class StageSchedule {
public:
  StageSchedule(ModuleOp module, func::FuncOp func, int64_t device,
                bool forceRecompute)
      : module(module), func(func), device(device),
        forceRecompute(forceRecompute), b(module.getContext()) {}
  LogicalResult run();

private:
  LogicalResult readStage();
  void findState();
  LogicalResult checkStateReads();
  void classify();
  void sinkIntoBackward();
  void recomputeStage();
  void markSlot(Operation *before, Operation *end, int64_t k);
  LogicalResult findWeight();
  void hoistInvariants();
  void emitSlot(const Slot &slot);
  void addToSums(int64_t k);
  void weighMicrobatch(int64_t k);
  Value guard(int64_t k, Value v);
  void beginMicrobatch(int64_t k);
  Value counterOf(int64_t k);
  void stackArguments();
  void finish();

  ModuleOp module;
  func::FuncOp func;
  int64_t device;
  bool forceRecompute;
  OpBuilder b;
  PlanAnnotation plan;
  int stage = -1;
  int64_t microbatches = 1, rows = 0;
  /// The one-microbatch step's ops (terminator excluded) and their parts.
  SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, Part> partOf;
  /// Globals the step stores before the optimizer (findState).
  llvm::DenseSet<StringAttr> state;
  /// The part after which a microbatch is done (Forward when the step has
  /// no backward transfers).
  Part lastPart = Part::Backward;
  /// The last stage: the seed of the backward pass and the weight of each
  /// microbatch's loss in the step's (w_r / m, docs/training.md).
  Operation *seedOp = nullptr;
  double weight = 1.0;
  /// A mean loss with ignore_index over a data-parallel last stage: its
  /// labels; per microbatch, the weight (a value) and whether the replica
  /// counts any label of it.
  std::optional<train::LossWeighting> counts;
  SmallVector<Value> weightOf, countedOf;
  /// Per microbatch: the clone's values, its weight, its Dropout counter.
  SmallVector<IRMapping> clones;
  SmallVector<Value> counters;
  /// The step's loss and gradients, summed as the backward parts finish.
  SmallVector<Value> sums;
};

LogicalResult StageSchedule::readStage() {
  FailureOr<PlanAnnotation> read = readPlanAnnotation(module, std::nullopt);
  if (failed(read))
    return failure();
  plan = std::move(*read);
  stage = plan.stageOf(device);
  if (stage < 0)
    return module.emitError() << "hetpar-dist-pipeline-schedule: device "
                              << device << " is not in the plan";
  const StageAnnotation &st = plan.stages[stage];
  microbatches = plan.microbatches;
  rows = st.rows[st.replicaOf(device)];
  return train::checkDeviceRows(func, device, rows, "a microbatch");
}

/// State the step writes (BatchNormalization's running statistics): each
/// microbatch reads what the one before wrote, as one device accumulating
/// the microbatches updates the statistics once per microbatch (PyTorch's
/// gradient accumulation does the same). Its loads run per microbatch, in
/// the forward part (forward parts run in microbatch order in every
/// schedule), not once; a read of such state in the backward part would see
/// a later microbatch's value and is refused.
void StageSchedule::findState() {
  for (Operation *op : ops)
    if (auto store = llvm::dyn_cast<ml_program::GlobalStoreOp>(op))
      state.insert(store.getGlobal().getLeafReference());
}

LogicalResult StageSchedule::checkStateReads() {
  for (Operation *op : ops) {
    auto load = llvm::dyn_cast<ml_program::GlobalLoadOp>(op);
    if (!load || !state.contains(load.getGlobal().getLeafReference()))
      continue;
    for (Operation *user : load->getUsers())
      if (partOf.lookup(user) == Part::Backward)
        return user->emitError()
               << "the backward pass reads global '"
               << load.getGlobal().getLeafReference().getValue()
               << "', which the forward pass writes per microbatch: a "
                  "pipeline cannot give it the value of the microbatch";
  }
  return success();
}

/// An op's part: the latest of its operands' and its own. Arguments, the
/// seed, forward transfers and collectives are forward; transfers of
/// gradients (tags from dist::kGradientTagOffset) and ops marked
/// train::kBackwardAttr are backward.
void StageSchedule::classify() {
  auto transferPart = [](int64_t tag) {
    return tag >= dist::kGradientTagOffset ? Part::Backward : Part::Forward;
  };
  for (Operation *op : ops) {
    Part part = Part::Invariant;
    if (auto recv = llvm::dyn_cast<dist::RecvOp>(op))
      part = transferPart(recv.getTag());
    if (auto send = llvm::dyn_cast<dist::SendOp>(op))
      part = transferPart(send.getTag());
    // A collective runs per microbatch on every device of its group, also
    // where its operand here is a constant (a broadcast's on a device other
    // than the root, an all-reduce of zero gradients).
    if (llvm::isa<dist::AllReduceOp, dist::AllGatherOp, dist::ReduceScatterOp,
                  dist::AllToAllOp, dist::BroadcastOp>(op))
      part = Part::Forward;
    if (op->hasAttr(train::kBackwardAttr))
      part = Part::Backward;
    if (auto load = llvm::dyn_cast<ml_program::GlobalLoadOp>(op);
        load && state.contains(load.getGlobal().getLeafReference()))
      part = Part::Forward;
    for (Value in : op->getOperands()) {
      // The seed runs once, but what it reaches is per microbatch (it is
      // scaled by the microbatch's weight).
      Part from = Part::Forward;
      if (Operation *def = in.getDefiningOp(); def && def != seedOp)
        from = partOf.lookup(def);
      part = std::max(part, from);
    }
    partOf[op] = part;
  }
}

/// Forward-part ops that only the backward part (or the step's results)
/// reads run in the backward part instead: a gradient rule's use of forward
/// values (Xᵀ for dW = Xᵀ dY, a ReLU's mask) is computed when needed, not
/// kept from the forward part with its inputs while other microbatches run.
void StageSchedule::sinkIntoBackward() {
  for (Operation *op : llvm::reverse(ops)) {
    if (partOf.lookup(op) != Part::Forward || op->getNumResults() == 0 ||
        llvm::isa<dist::RecvOp, dist::SendOp>(op) ||
        !mlir::isMemoryEffectFree(op))
      continue;
    bool onlyBackward = llvm::all_of(op->getUsers(), [&](Operation *user) {
      return llvm::isa<func::ReturnOp>(user) ||
             partOf.lookup(user) == Part::Backward;
    });
    if (onlyBackward && !op->use_empty())
      partOf[op] = Part::Backward;
  }
}

/// Activation recomputation (the plan's stage says "recompute", or the
/// pass's `recompute` forces it): the backward part reads clones of each
/// layer's forward values, rebuilt from the layer's inputs just before the
/// layer's first backward reader (Recompute.h), so that a microbatch in
/// flight keeps only its layers' inputs until its backward part. Every layer
/// is recomputed, the last one too, except on the last stage, whose backward
/// part follows its forward part at once. The clones belong to the backward
/// part and are marked train::kRecomputedAttr (else the CSE after the
/// optimizer would merge them back).
void StageSchedule::recomputeStage() {
  train::RecomputeScope scope;
  for (Operation *op : ops)
    if (partOf.lookup(op) == Part::Forward &&
        !llvm::isa<dist::DistDialect>(op->getDialect()))
      scope.forward.insert(op);
  scope.stored = state;
  scope.keepLastLayer = stage + 1 == static_cast<int>(plan.stages.size());
  scope.isBackward = [&](Operation *op) {
    return partOf.lookup(op) == Part::Backward;
  };
  Block &body = func.getBody().front();
  train::assignForwardLayers(scope, body);
  for (Operation *clone : train::recomputeLayers(scope, body)) {
    partOf[clone] = Part::Backward;
    clone->setAttr(train::kRecomputedAttr, b.getUnitAttr());
  }
  ops.clear();
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
}

/// The last stage's seed and the weight of each microbatch's loss.
LogicalResult StageSchedule::findWeight() {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  bool hasLoss = func.getNumResults() > 0 &&
                 !func.getResultAttr(0, train::kGradientOfAttr);
  if (!hasLoss)
    return success();
  if (!seedOp)
    return func.emitError("the step returns a loss but has no backward seed "
                          "(hetpar.seed): run hetpar-onnx-differentiate on "
                          "the stage's step first");
  FailureOr<train::LossWeighting> how =
      train::detectLossWeighting(func, ret.getOperand(0));
  if (failed(how))
    return failure();
  const StageAnnotation &st = plan.stages[stage];
  double m = static_cast<double>(microbatches);
  switch (how->kind) {
  case train::LossWeighting::One:
    weight = 1.0 / m;
    break;
  case train::LossWeighting::Rows:
    weight = static_cast<double>(rows) /
             static_cast<double>(plan.microbatchRows) / m;
    break;
  case train::LossWeighting::Counts:
    // Over several replicas, each microbatch's weight is also its replica's
    // count of labels over the microbatch's (weighOfMicrobatch).
    weight = 1.0 / m;
    if (st.data > 1)
      counts = *how;
    break;
  }
  return success();
}

/// Invariant ops run once, before every slot, in their order.
void StageSchedule::hoistInvariants() {
  for (Operation *op : ops)
    if (partOf.lookup(op) == Part::Invariant)
      op->moveBefore(&func.getBody().front().back());
}

/// The Dropout counter of microbatch k (train::microbatchMaskCounter), as
/// one device accumulating the plan's microbatches counts
/// (hetpar-train-optimizer), so each microbatch draws its own masks.
Value StageSchedule::counterOf(int64_t k) {
  if (!counters.empty() || microbatches == 1)
    return counters.empty() ? Value() : counters[k];
  Value step;
  for (Operation *op : ops)
    if (auto d = llvm::dyn_cast<onnx::DropoutOp>(op); d && d.getStep())
      step = d.getStep();
  if (!step)
    return {};
  GradientBuilder g(b, func.getLoc(), {});
  for (int64_t j = 0; j < microbatches; ++j) {
    Value k = g.scalar(static_cast<double>(j), step);
    counters.push_back(train::microbatchMaskCounter(g, step, microbatches, k));
  }
  return counters[k];
}

/// Microbatch k's inputs: its rows of every argument (its seed is scaled
/// by weighMicrobatch, where the seed is first read).
void StageSchedule::beginMicrobatch(int64_t k) {
  IRMapping &map = clones[k];
  GradientBuilder g(b, func.getLoc(), {});
  for (BlockArgument a : func.getArguments())
    map.map(a, microbatches == 1
                   ? Value(a)
                   : g.make<onnx::SliceOp>(a, g.i64s({k * rows}),
                                           g.i64s({(k + 1) * rows}),
                                           g.i64s({0}), Value()));
}

/// Microbatch k's weight, before the first op that reads the seed (its
/// labels are cloned by then): weight, or with counts, weight times the
/// replica's counted labels over the microbatch's (one scalar all-reduce
/// over the replicas of this device's shards: a tensor-parallel group
/// counts its labels once). The seed of microbatch k is scaled by it.
void StageSchedule::weighMicrobatch(int64_t k) {
  IRMapping &map = clones[k];
  Value seed = seedOp->getResult(0);
  GradientBuilder g(b, func.getLoc(), {});
  Value w = g.scalar(weight, seed);
  if (counts) {
    Value count = train::countLabels(g, map.lookupOrDefault(counts->labels),
                                     counts->ignoreIndex);
    const StageAnnotation &st = plan.stages[stage];
    Value total = dist::AllReduceOp::create(
        b,
        NameLoc::get(b.getStringAttr("the microbatch's counted labels"),
                     func.getLoc()),
        count.getType(), count, FlatSymbolRefAttr::get(b.getContext(), "mesh"),
        b.getDenseI64ArrayAttr(st.dataGroupOf(device)),
        dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::Sum));
    countedOf[k] = train::contributes(g, count, total);
    w = g.mul(g.div(count, total), w);
  }
  weightOf[k] = w;
  map.map(seed, g.mul(seed, w));
}

/// A replica whose labels in microbatch k are all ignored has a NaN mean
/// (0/0, as PyTorch's) but nothing to contribute: what leaves the
/// microbatch (its loss, gradients and the gradients it sends back) is
/// zero instead, so the step is one device's.
Value StageSchedule::guard(int64_t k, Value v) {
  if (!countedOf[k])
    return v;
  GradientBuilder g(b, v.getLoc(), {});
  return g
      .create<onnx::WhereOp>(1, GradientBuilder::elementType(v), countedOf[k],
                             v, g.scalar(0.0, v))
      ->getResult(0);
}

/// One slot: its receives first and its sends last, so that the sends
/// ending one slot and the receives starting the next form one exchange
/// step (Megatron's send_forward_recv_backward).
void StageSchedule::emitSlot(const Slot &slot) {
  IRMapping &map = clones[slot.microbatch];
  auto mine = [&](Operation *op) { return partOf.lookup(op) == slot.part; };
  for (Operation *op : ops)
    if (mine(op) && llvm::isa<dist::RecvOp>(op))
      b.clone(*op, map);
  if (slot.part == Part::Forward)
    beginMicrobatch(slot.microbatch);
  for (Operation *op : ops) {
    if (!mine(op) || llvm::isa<dist::RecvOp, dist::SendOp>(op))
      continue;
    if (seedOp && !map.contains(seedOp->getResult(0)) &&
        llvm::is_contained(op->getOperands(), seedOp->getResult(0)))
      weighMicrobatch(slot.microbatch);
    // The counter is built before the Dropout's clone, which reads it.
    Value counter;
    if (auto d = llvm::dyn_cast<onnx::DropoutOp>(op); d && d.getStep())
      counter = counterOf(slot.microbatch);
    Operation *copy = b.clone(*op, map);
    if (counter)
      llvm::cast<onnx::DropoutOp>(copy).getStepMutable().assign(counter);
  }
  if (slot.part == lastPart)
    addToSums(slot.microbatch);
  for (Operation *op : ops)
    if (mine(op) && llvm::isa<dist::SendOp>(op)) {
      Value sent = map.lookupOrDefault(op->getOperand(0));
      if (partOf.lookup(op) == Part::Backward)
        sent = guard(slot.microbatch, sent);
      b.clone(*op, map)->setOperand(0, sent);
    }
}

/// Marks the ops a slot emitted, after `before` and up to `end`, with the
/// slot's microbatch (train::kMicrobatchIndexAttr); constants need none.
void StageSchedule::markSlot(Operation *before, Operation *end, int64_t k) {
  Operation *op = before ? before->getNextNode() : &end->getBlock()->front();
  for (; op != end; op = op->getNextNode())
    if (!op->hasTrait<OpTrait::ConstantLike>())
      op->setAttr(train::kMicrobatchIndexAttr, b.getI64IntegerAttr(k));
}

/// A microbatch is done: its loss (weighted) and gradients join the step's.
void StageSchedule::addToSums(int64_t k) {
  IRMapping &map = clones[k];
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  GradientBuilder g(b, func.getLoc(), {});
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Operation *def = v.getDefiningOp();
    if (!def || partOf.lookup(def) == Part::Invariant)
      continue;
    Value mine = map.lookup(v);
    if (i == 0 && seedOp) {
      if (!weightOf[k])
        weighMicrobatch(k);
      mine = g.mul(mine, weightOf[k]);
    }
    mine = guard(k, mine);
    if (!sums[i]) {
      sums[i] = mine;
      continue;
    }
    sums[i] = g.add(sums[i], mine);
    if (Operation *add = sums[i].getDefiningOp())
      add->setAttr(train::kRunningSumAttr, b.getUnitAttr());
  }
}

/// The summed results replace the one-microbatch step's; its ops go.
void StageSchedule::finish() {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, s] : llvm::enumerate(sums))
    if (s)
      ret.setOperand(i, s);
  for (Operation *op : llvm::reverse(ops))
    if (partOf.lookup(op) != Part::Invariant)
      op->erase();
  if (seedOp)
    seedOp->removeAttr(train::kSeedAttr);
  func.setFunctionType(FunctionType::get(func.getContext(),
                                         func.getBody().getArgumentTypes(),
                                         func.getResultTypes()));
}

/// Each argument holds the device's rows of every microbatch, stacked (set
/// before the slices of the microbatches are built, whose types follow).
void StageSchedule::stackArguments() {
  for (BlockArgument a : func.getArguments()) {
    auto t = llvm::cast<RankedTensorType>(a.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[0] *= microbatches;
    a.setType(RankedTensorType::get(shape, t.getElementType()));
  }
}

LogicalResult StageSchedule::run() {
  if (failed(readStage()))
    return failure();
  for (Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  findState();
  for (Operation *op : ops)
    if (op->hasAttr(train::kSeedAttr))
      seedOp = op;
  classify();
  lastPart = llvm::any_of(ops,
                          [&](Operation *op) {
                            return partOf.lookup(op) == Part::Backward;
                          })
                 ? Part::Backward
                 : Part::Forward;
  if (lastPart == Part::Backward)
    sinkIntoBackward();
  if (failed(checkStateReads()))
    return failure();
  if (lastPart == Part::Backward &&
      (forceRecompute || plan.stages[stage].recompute))
    recomputeStage();
  if (failed(findWeight()))
    return failure();
  hoistInvariants();
  stackArguments();
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  b.setInsertionPoint(ret);
  clones.resize(microbatches);
  weightOf.resize(microbatches);
  countedOf.resize(microbatches);
  sums.resize(ret.getNumOperands());
  int64_t p = static_cast<int64_t>(plan.stages.size());
  for (const Slot &slot :
       scheduleSlots(plan.schedule, stage, p, microbatches)) {
    Operation *before = ret->getPrevNode();
    emitSlot(slot);
    markSlot(before, ret, slot.microbatch);
  }
  finish();
  return success();
}

struct DistPipelineSchedulePass
    : hetpar::impl::DistPipelineSchedulePassBase<DistPipelineSchedulePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = train::deviceStepFunction(module, device, getArgument());
    if (failed(func) ||
        failed(StageSchedule(module, *func, device, recompute).run()))
      signalPassFailure();
  }
};

} // namespace
