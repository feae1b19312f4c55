//===- DistPartition.cpp - hetpar-dist-partition --------------------------===//
//
// Applies a plan written onto the IR (hetpar.plan, hetpar.stage,
// hetpar.sharding: Search.h's annotateModule, or a user's pass) and splits the
// model into one function per device in the local form of the dist dialect
// (Passes.td describes the result). Mechanism only: every decision comes from
// the annotations; the sharding rules (ShardingRuleOpInterface) say how an
// op's work splits.
//
// Each device function runs one microbatch of its data-parallel replica. Two
// kinds of split are tracked per value and device:
//  * the batch: every value that carries the batch holds the replica's rows of
//    the microbatch; where the batch lies in a value (dimension, elements per
//    sample, outer chunks) follows from the graph inputs' first dimension
//    through the ops' rules, so Reshapes that merge batch and sequence keep
//    working;
//  * tensor parallelism over the replica's devices: a value is replicated,
//    split along one dimension (uneven extents per device) or partial sums.
// Where an op needs another layout than its operand has, the pass inserts
// the conversion: a local slice (weights are sliced at compile time), an
// all-gather, an all-reduce. Values that leave a stage leave replicated within
// the replica and travel by send/recv, cut and joined along the batch where
// the replicas of the two stages split the microbatch differently.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Plan/Simulator.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <numeric>
#include <optional>

namespace hetpar {
#define GEN_PASS_DEF_DISTPARTITIONPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

constexpr llvm::StringLiteral kMesh = "mesh";

/// One pipeline stage of the plan, with each replica's rows of a microbatch.
struct StageInfo : StageAnnotation {
  std::vector<Operation *> ops;
  StageInfo(StageAnnotation st) : StageAnnotation(std::move(st)) {}
};

/// A value on one device: its local SSA value and its layouts.
struct Local {
  Value value;
  std::optional<BatchDim> batch;
  enum Kind { Replicated, Split, Partial } kind = Replicated;
  // Split: dimension `dim` in `outer` chunks; rank t holds factor units
  // [starts[t], starts[t] + sizes[t]) of each, `granule` indices per unit.
  int dim = -1;
  int64_t granule = 1, outer = 1;
  SmallVector<int64_t> starts, sizes;
  std::string reduction; // Partial: sum, max, min, prod
  // Partial: what the op adds once to the sum (addedOperand), added after
  // the all-reduce by every device; null when nothing.
  Value addend;
  bool sameSplit(const Local &o) const {
    if (kind != o.kind)
      return false;
    if (kind != Split)
      return true;
    if (dim != o.dim || outer != o.outer || starts.size() != o.starts.size())
      return false;
    for (size_t t = 0; t < starts.size(); ++t)
      if (starts[t] * granule != o.starts[t] * o.granule ||
          sizes[t] * granule != o.sizes[t] * o.granule)
        return false;
    return true;
  }
};

/// An op's tensor-parallel split: the factor of its sharding rule that its
/// hetpar.sharding splits (-1: none), and each device's units of it.
struct TensorSplit {
  int factor = -1;
  SmallVector<int64_t> starts, sizes;
};

std::string describeOp(Operation *op) {
  std::string name = onnx::getNodeName(op->getLoc());
  return "'" + onnx::getONNXOpType(op) + "'" +
         (name.empty() ? std::string() : " node '" + name + "'");
}

/// The reduction that combines partial results of `op` split along a
/// reduction factor, or "" when partial results do not combine elementwise.
std::string reductionOf(Operation *op) {
  std::string type = onnx::getONNXOpType(op);
  if (type == "MatMul" || type == "Gemm" || type == "Einsum" ||
      type == "Conv" || type == "ReduceSum" ||
      type == "LayerNormalizationGrad") // dScale and dB
    return "sum";
  if (type == "ReduceMax")
    return "max";
  if (type == "ReduceMin")
    return "min";
  if (type == "ReduceProd")
    return "prod";
  return "";
}

/// The operand an op adds once to a sum (Gemm's C, Conv's bias): with the
/// contraction split, every device computes the sum's part without it and
/// adds it after the all-reduce (Local::addend), so that the devices' graphs
/// (and their backward passes) have one shape.
std::optional<unsigned> addedOperand(Operation *op) {
  std::string type = onnx::getONNXOpType(op);
  if ((type == "Gemm" || type == "Conv") && op->getNumOperands() == 3)
    return 2u;
  return std::nullopt;
}

class Partitioner {
public:
  Partitioner(ModuleOp module, func::FuncOp func, bool localIO)
      : module(module), func(func), ctx(module.getContext()), b(ctx),
        localIO(localIO) {}

  LogicalResult run();

private:
  // --- the plan ---------------------------------------------------------
  LogicalResult readPlan();
  InFlightDiagnostic error(Operation *at) { return at->emitError(); }

  // --- one device -------------------------------------------------------
  struct Device {
    int64_t id;
    int stage, replica, rank;
    SmallVector<int64_t> group; // the replica's devices
    func::FuncOp fn;
    DenseMap<Value, Local> values;
    DenseMap<Value, Value> replicated; // cache of makeReplicated
    // Training: the dist.grad_all_reduce of a local value, and the shard of
    // a parameter (an initializer) that this device holds.
    DenseMap<Value, Value> entered, paramShards;
  };
  LogicalResult partitionDevice(Device &d);
  LogicalResult localResults(Device &d, ArrayRef<Type> argTypes,
                             SmallVectorImpl<Value> &results);
  FailureOr<Local> lookup(Device &d, Value global);
  FailureOr<Local> convert(Device &d, Value global, Local cur,
                           std::optional<BatchDim> batch, const Local &tp,
                           Operation *user, unsigned operand);
  LogicalResult partitionOp(Device &d, Operation *op,
                            SmallVectorImpl<Local> &results);
  FailureOr<TensorSplit> tensorSplit(Operation *op, int64_t t);
  /// Operand `c` that `op` adds once to its sum (addedOperand), as a value
  /// to add to the all-reduced result: Gemm's C times beta, Conv's bias
  /// [M] as [1, M, 1, ...].
  Value prepareAddend(Operation *op, Value c);
  FailureOr<Value> makeReplicated(Device &d, Value global);
  LogicalResult applyCollective(Device &d, Operation *op, Local &result,
                                Value global);
  LogicalResult placeDropout(Device &d, Operation *op, onnx::DropoutOp local,
                             const Local &out);

  // --- training (a plan of mode "training") ------------------------------
  /// Parameters that stay whole on every device of a stage: read with two
  /// tensor-parallel layouts, in chunks, or by several stages.
  void findWholeParameters();
  /// `local` through a dist.grad_all_reduce over the device's group (once per
  /// value): where a replicated value enters per-device work, its gradient
  /// is summed over the group.
  Value enterGroup(Device &d, Location loc, Value local);
  /// Whether `global` may need a gradient: a float value that is not a
  /// constant other than an initializer.
  bool mayNeedGradient(Value global) const;
  /// Device `d`'s shard of parameter `global` in layout `tp`, sliced now and
  /// still named as the initializer (train::kTensorShardAttr), or null when
  /// `global` is not a parameter that training shards.
  Value parameterShard(Device &d, Value global, const Local &tp);
  /// `global` as it arrives from an earlier stage (`l`: its batch layout,
  /// and on the replica's first device the received value), broadcast from
  /// that device to the group (dist.broadcast: the gradient goes back from
  /// there alone).
  Value receiveInGroup(Device &d, Location loc, Value global, const Local &l);
  bool usedByStage(Value v, int stage) const;
  bool usedByLaterStage(Value v, int stage) const;

  // --- IR helpers -------------------------------------------------------
  RankedTensorType localType(Device &d, Value global, const Local &l);
  Value i64Const(Location loc, ArrayRef<int64_t> values);
  Value slice(Location loc, Value x, int dim, int64_t outer, int64_t start,
              int64_t size);
  Value concat(Location loc, ArrayRef<Value> pieces, int dim, int64_t outer);
  Value reshape(Location loc, Value x, ArrayRef<int64_t> shape);
  Value transpose(Location loc, Value x, ArrayRef<int64_t> perm);
  Value allGather(Location loc, Device &d, Value x, int dim, int64_t outer,
                  ArrayRef<int64_t> sizes);
  int64_t rowsOf(const Device &d) const {
    return stages[d.stage].rows[d.replica];
  }
  int64_t offsetOf(const Device &d) const {
    return stages[d.stage].offsets[d.replica];
  }

  // --- transfers --------------------------------------------------------
  struct Piece {
    int64_t from, to; // device ids
    int64_t lo, hi;   // rows of the microbatch (all when no batch)
    int64_t tag;
  };
  /// A dist.recv of `global` as it leaves its stage (replicated in the
  /// replica), with `rows` samples of the batch when it carries one.
  Value recv(Location loc, Device &d, Value global, int64_t rows, int64_t from,
             int64_t tag);
  /// The devices that send graph output `j` (value `v`) to the root: one per
  /// replica of its stage when it carries the batch (in replica order), else
  /// one; spread over the ranks of each replica.
  SmallVector<int64_t> outputSenders(Value v, size_t j);
  /// The pieces that carry `global` (produced in stage `s`) to device `to`.
  SmallVector<Piece> piecesTo(Value global, int s, int64_t to, int64_t tag);
  int stageOfValue(Value v) const;

  ModuleOp module;
  func::FuncOp func;
  MLIRContext *ctx;
  OpBuilder b;
  /// Inputs of the replica's rows, local outputs (the local-io option).
  bool localIO;
  std::vector<StageInfo> stages;
  int64_t microbatches = 1, batch = 0, microbatchRows = 0;
  /// Microbatches or data parallelism: the batch is split.
  bool splitsBatch = false;
  DenseMap<Operation *, int> stageOf;
  /// The ops' sharding rules and their resolution, shared with the
  /// simulator (Sharding.h).
  std::optional<OpCatalog> catalog;
  std::vector<Device> devices;
  DenseMap<int64_t, Device *> deviceById;
  /// Values that leave their stage: where the batch lies, and their tag.
  DenseMap<Value, std::optional<BatchDim>> exitBatch;
  DenseMap<Value, int64_t> exitTag;
  SmallVector<Value> exits; // in tag order
  bool isBatchInput(BlockArgument a) const;
  /// A training plan: gradients must be able to flow back (markers, named
  /// parameter shards).
  bool training = false;
  /// findWholeParameters: per stage, the parameters kept whole.
  llvm::DenseSet<std::pair<int, Value>> wholeParams;
};

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::readPlan() {
  // The batch: the first input's first dimension (docs/plan-format.md),
  // unless the annotation names it.
  std::optional<int64_t> firstDim;
  if (func.getNumArguments())
    if (auto first =
            llvm::dyn_cast<RankedTensorType>(func.getArgument(0).getType());
        first && first.getRank() && first.hasStaticShape())
      firstDim = first.getDimSize(0);
  FailureOr<PlanAnnotation> plan = readPlanAnnotation(module, firstDim);
  if (failed(plan))
    return failure();
  // A training plan's forward graph is partitioned with local-io; its
  // training step is built per device from there (docs/training.md).
  if (plan->mode != "inference" && !localIO)
    return module.emitError()
           << "the partition makes inference programs; the plan's mode is '"
           << plan->mode
           << "' (a training plan's devices are partitioned with local-io "
              "and trained with hetpar-dist-reduce-gradients, "
              "docs/training.md)";
  training = plan->mode == "training";
  microbatches = plan->microbatches;
  batch = plan->batch;
  microbatchRows = plan->microbatchRows;
  for (StageAnnotation &st : plan->stages) {
    splitsBatch |= st.data > 1;
    stages.push_back(std::move(st));
  }
  splitsBatch |= microbatches > 1;

  // Ops to stages, in the function's order.
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        isa<onnx::ConstantOp, onnx::NoValueOp>(op))
      continue;
    auto s = op.getAttrOfType<IntegerAttr>("hetpar.stage");
    if (!s || s.getInt() < 0 ||
        s.getInt() >= static_cast<int64_t>(stages.size()))
      return op.emitError() << "op " << describeOp(&op)
                            << (s ? " names a stage the plan does not have"
                                  : " has no hetpar.stage");
    if (op.getNumRegions())
      return op.emitError() << "op " << describeOp(&op)
                            << " has regions, which the partition does not "
                               "split";
    for (Value operand : op.getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (auto it = stageOf.find(def);
            it != stageOf.end() && it->second > s.getInt())
          return op.emitError() << "op " << describeOp(&op) << " in stage "
                                << s.getInt() << " uses a value of stage "
                                << it->second << ", which runs later";
    stageOf[&op] = s.getInt();
    stages[s.getInt()].ops.push_back(&op);
  }
  return success();
}

bool Partitioner::isBatchInput(BlockArgument a) const {
  // The batch is followed only where the plan splits it (a batch of one
  // sample never is); the batch analysis seeds the same inputs.
  return splitsBatch && catalog->batch.of(a).has_value();
}

int Partitioner::stageOfValue(Value v) const {
  if (Operation *def = v.getDefiningOp())
    if (auto it = stageOf.find(def); it != stageOf.end())
      return it->second;
  return -1;
}

//===----------------------------------------------------------------------===//
// IR helpers
//===----------------------------------------------------------------------===//

RankedTensorType Partitioner::localType(Device &d, Value global,
                                        const Local &l) {
  auto t = llvm::cast<RankedTensorType>(global.getType());
  SmallVector<int64_t> shape(t.getShape());
  if (l.batch)
    shape[l.batch->dim] = l.batch->outer * rowsOf(d) * l.batch->granule;
  if (l.kind == Local::Split)
    shape[l.dim] = l.outer * l.sizes[d.rank] * l.granule;
  return RankedTensorType::get(shape, t.getElementType());
}

Value Partitioner::i64Const(Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    b.getI64Type());
  return onnx::ConstantOp::create(b, loc,
                                  DenseIntElementsAttr::get(type, values));
}

Value Partitioner::reshape(Location loc, Value x, ArrayRef<int64_t> shape) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  return onnx::ReshapeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), x,
      i64Const(loc, shape));
}

Value Partitioner::transpose(Location loc, Value x, ArrayRef<int64_t> perm) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return onnx::TransposeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), x,
      b.getDenseI64ArrayAttr(perm));
}

/// `shape` with dimension `dim` cut into `outer` chunks: [.., outer, n/outer,
/// ..].
static SmallVector<int64_t> chunked(ArrayRef<int64_t> shape, int dim,
                                    int64_t outer) {
  SmallVector<int64_t> out(shape.begin(), shape.begin() + dim);
  out.push_back(outer);
  out.push_back(shape[dim] / outer);
  out.append(shape.begin() + dim + 1, shape.end());
  return out;
}

Value Partitioner::slice(Location loc, Value x, int dim, int64_t outer,
                         int64_t start, int64_t size) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  if (start == 0 && outer * size == t.getDimSize(dim))
    return x;
  // A constant is sliced now: each device's program holds its shard only.
  if (ElementsAttr attr = getConstantElements(x)) {
    auto sliced = sliceElements(attr, dim, outer, start, size);
    if (succeeded(sliced))
      return onnx::ConstantOp::create(b, x.getLoc(), *sliced);
  }
  Value in = outer > 1 ? reshape(loc, x, chunked(t.getShape(), dim, outer)) : x;
  int at = outer > 1 ? dim + 1 : dim;
  auto inType = llvm::cast<RankedTensorType>(in.getType());
  SmallVector<int64_t> shape(inType.getShape());
  shape[at] = size;
  // One statement each: the order of the constants must not depend on the
  // compiler's order of evaluating arguments.
  Value begin = i64Const(loc, {start});
  Value end = i64Const(loc, {start + size});
  Value axes = i64Const(loc, {at});
  Value out = onnx::SliceOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), in, begin, end,
      axes, Value());
  SmallVector<int64_t> merged(t.getShape());
  merged[dim] = outer * size;
  return reshape(loc, out, merged);
}

Value Partitioner::concat(Location loc, ArrayRef<Value> pieces, int dim,
                          int64_t outer) {
  if (pieces.size() == 1)
    return pieces.front();
  SmallVector<Value> in;
  int64_t total = 0;
  for (Value p : pieces) {
    auto t = llvm::cast<RankedTensorType>(p.getType());
    total += t.getDimSize(dim);
    in.push_back(outer > 1 ? reshape(loc, p, chunked(t.getShape(), dim, outer))
                           : p);
  }
  auto t0 = llvm::cast<RankedTensorType>(in.front().getType());
  int at = outer > 1 ? dim + 1 : dim;
  SmallVector<int64_t> shape(t0.getShape());
  shape[at] = total / outer;
  Value out = onnx::ConcatOp::create(
      b, loc, RankedTensorType::get(shape, t0.getElementType()), in, at);
  SmallVector<int64_t> merged(
      llvm::cast<RankedTensorType>(pieces.front().getType()).getShape());
  merged[dim] = total;
  return reshape(loc, out, merged);
}

Value Partitioner::allGather(Location loc, Device &d, Value x, int dim,
                             int64_t outer, ArrayRef<int64_t> sizes) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  Value in = outer > 1 ? reshape(loc, x, chunked(t.getShape(), dim, outer)) : x;
  int at = outer > 1 ? dim + 1 : dim;
  auto inType = llvm::cast<RankedTensorType>(in.getType());
  // The collective gathers along the outermost dimension that is not 1
  // (contiguous blocks per device); move `at` there first.
  bool leading = llvm::all_of(inType.getShape().take_front(at),
                              [](int64_t e) { return e == 1; });
  SmallVector<int64_t> perm, inverse(inType.getRank());
  if (!leading) {
    perm.push_back(at);
    for (int64_t k = 0; k < inType.getRank(); ++k)
      if (k != at)
        perm.push_back(k);
    for (auto [k, p] : llvm::enumerate(perm))
      inverse[p] = k;
    in = transpose(loc, in, perm);
  }
  int g = leading ? at : 0;
  auto gt = llvm::cast<RankedTensorType>(in.getType());
  SmallVector<int64_t> shape(gt.getShape());
  shape[g] = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
  Value out = dist::AllGatherOp::create(
      b, loc, RankedTensorType::get(shape, gt.getElementType()), in,
      FlatSymbolRefAttr::get(ctx, kMesh), b.getDenseI64ArrayAttr(d.group),
      b.getI64IntegerAttr(g), b.getDenseI64ArrayAttr(sizes));
  if (!leading)
    out = transpose(loc, out, inverse);
  SmallVector<int64_t> merged(t.getShape());
  merged[dim] = outer * shape[g];
  return reshape(loc, out, merged);
}

//===----------------------------------------------------------------------===//
// Values and layouts
//===----------------------------------------------------------------------===//

FailureOr<Local> Partitioner::lookup(Device &d, Value global) {
  if (auto it = d.values.find(global); it != d.values.end())
    return it->second;
  Operation *def = global.getDefiningOp();
  if (def && isa<onnx::ConstantOp, onnx::NoValueOp>(def)) {
    Local l;
    l.value = b.clone(*def)->getResult(0);
    // Constants go first in the function: slices of them fold at compile
    // time, and every later user finds them.
    d.values[global] = l;
    return l;
  }
  return func.emitError() << "internal error: device " << d.id
                          << " has no local value for an operand";
}

/// Brings `cur` (the local form of `global`) to the layouts an op needs: the
/// batch where `batch` says (or none), and the tensor-parallel layout of
/// `tp`.
FailureOr<Local> Partitioner::convert(Device &d, Value global, Local cur,
                                      std::optional<BatchDim> batch,
                                      const Local &tp, Operation *user,
                                      unsigned operand) {
  Location loc = user->getLoc();
  if (!llvm::isa<RankedTensorType>(global.getType()))
    return cur;
  // The batch.
  if (cur.batch != batch) {
    if (cur.batch)
      return user->emitError()
             << "partition: op " << describeOp(user) << " reads operand "
             << operand << " with its batch in another dimension than the "
             << "operand has it (or not at all), which no collective fixes";
    // A value without the batch that the op reads along the batch (a
    // constant of batch size): only the whole batch runs at once.
    if (microbatches > 1)
      return user->emitError()
             << "partition: operand " << operand << " of op "
             << describeOp(user)
             << " has the batch size in a dimension but does not come from "
                "the inputs, so it cannot be split into microbatches";
    cur.value = slice(loc, cur.value, batch->dim, batch->outer,
                      offsetOf(d) * batch->granule, rowsOf(d) * batch->granule);
    cur.batch = batch;
  }
  if (cur.sameSplit(tp))
    return cur;
  // Tensor parallelism: first to replicated, then to the split wanted.
  if (cur.kind == Local::Partial) {
    cur.value = dist::AllReduceOp::create(
        b, loc, cur.value.getType(), cur.value,
        FlatSymbolRefAttr::get(ctx, kMesh), b.getDenseI64ArrayAttr(d.group),
        b.getStringAttr(cur.reduction));
    if (cur.addend)
      cur.value = onnx::AddOp::create(b, loc, cur.value.getType(), cur.value,
                                      cur.addend);
    cur.addend = Value();
    cur.kind = Local::Replicated;
  } else if (cur.kind == Local::Split) {
    SmallVector<int64_t> sizes;
    for (int64_t s : cur.sizes)
      sizes.push_back(s * cur.granule);
    cur.value = allGather(loc, d, cur.value, cur.dim, cur.outer, sizes);
    cur.kind = Local::Replicated;
  }
  if (tp.kind == Local::Split) {
    if (Value shard = parameterShard(d, global, tp)) {
      Local out = tp;
      out.value = shard;
      out.batch = cur.batch;
      return out;
    }
    if (training && mayNeedGradient(global))
      cur.value = enterGroup(d, loc, cur.value);
    cur.value =
        slice(loc, cur.value, tp.dim, tp.outer, tp.starts[d.rank] * tp.granule,
              tp.sizes[d.rank] * tp.granule);
    Local out = tp;
    out.value = cur.value;
    out.batch = cur.batch;
    return out;
  }
  return cur;
}

FailureOr<Value> Partitioner::makeReplicated(Device &d, Value global) {
  if (auto it = d.replicated.find(global); it != d.replicated.end())
    return it->second;
  auto cur = lookup(d, global);
  if (failed(cur))
    return failure();
  Local want;
  Operation *at =
      global.getDefiningOp() ? global.getDefiningOp() : func.getOperation();
  auto out = convert(d, global, *cur, cur->batch, want, at, 0);
  if (failed(out))
    return failure();
  d.replicated[global] = out->value;
  return out->value;
}

/// The tensor-parallel layout of an operand or result whose dimensions
/// hold `dims` of `rule`'s factors: split where the split factor lies,
/// replicated when it holds none of it.
static Local tensorLayout(const ShardingRule &rule, const DimFactors &dims,
                          const TensorSplit &split) {
  Local out;
  if (split.factor < 0)
    return out;
  if (auto p = ShardingRule::placement(dims, split.factor, rule.factors)) {
    out.kind = Local::Split;
    out.dim = p->dim;
    out.granule = p->granule;
    out.outer = p->outer;
    out.starts = split.starts;
    out.sizes = split.sizes;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Training: where gradients are summed over the group, parameter shards
//===----------------------------------------------------------------------===//

/// The float initializer `v` is, or null.
static onnx::ConstantOp floatInitializer(Value v) {
  auto c = v.getDefiningOp<onnx::ConstantOp>();
  if (!c || !c->hasAttr(onnx::kInitializerAttrName) ||
      !llvm::isa<FloatType>(c.getType().getElementType()))
    return nullptr;
  return c;
}

void Partitioner::findWholeParameters() {
  DenseMap<Value, int> readBy; // parameter -> its stage, -1 for several
  DenseMap<std::pair<int, Value>, Local> layoutOf;
  for (auto [s, st] : llvm::enumerate(stages))
    for (Operation *op : st.ops) {
      int index = catalog->index.lookup(op);
      const std::optional<ShardingRule> &rule = catalog->rules[index];
      FailureOr<TensorSplit> split = TensorSplit();
      if (st.tensor > 1)
        split = tensorSplit(op, st.tensor); // errors again in partitionOp
      for (auto [k, v] : llvm::enumerate(op->getOperands())) {
        if (!floatInitializer(v))
          continue;
        auto [stage, fresh] = readBy.try_emplace(v, static_cast<int>(s));
        if (!fresh && stage->second != static_cast<int>(s))
          stage->second = -1;
        Local want;
        if (succeeded(split) && rule && k < rule->operands.size())
          want = tensorLayout(*rule, rule->operands[k], *split);
        auto key = std::make_pair(static_cast<int>(s), v);
        auto [seen, first] = layoutOf.try_emplace(key, want);
        if ((!first && !seen->second.sameSplit(want)) || want.outer > 1)
          wholeParams.insert(key);
      }
    }
  for (auto [v, stage] : readBy)
    if (stage < 0)
      for (int s = 0; s < static_cast<int>(stages.size()); ++s)
        wholeParams.insert({s, v});
}

Value Partitioner::enterGroup(Device &d, Location loc, Value local) {
  if (d.group.size() < 2)
    return local;
  auto [it, fresh] = d.entered.try_emplace(local, Value());
  if (!fresh)
    return it->second;
  it->second = dist::GradAllReduceOp::create(b, loc, local.getType(), local,
                                             FlatSymbolRefAttr::get(ctx, kMesh),
                                             b.getDenseI64ArrayAttr(d.group));
  return it->second;
}

bool Partitioner::mayNeedGradient(Value global) const {
  auto t = llvm::dyn_cast<RankedTensorType>(global.getType());
  if (!t || !llvm::isa<FloatType>(t.getElementType()))
    return false;
  auto c = global.getDefiningOp<onnx::ConstantOp>();
  return !c || c->hasAttr(onnx::kInitializerAttrName);
}

Value Partitioner::parameterShard(Device &d, Value global, const Local &tp) {
  onnx::ConstantOp param = floatInitializer(global);
  if (!training || !param || tp.outer != 1 ||
      wholeParams.contains({d.stage, global}))
    return Value();
  if (Value shard = d.paramShards.lookup(global))
    return shard;
  auto sliced =
      sliceElements(param.getValue(), tp.dim, 1, tp.starts[d.rank] * tp.granule,
                    tp.sizes[d.rank] * tp.granule);
  if (failed(sliced))
    return Value();
  SmallVector<int64_t> sizes;
  for (int64_t n : tp.sizes)
    sizes.push_back(n * tp.granule);
  auto shard = onnx::ConstantOp::create(b, param.getLoc(), *sliced);
  shard->setAttr(onnx::kInitializerAttrName,
                 param->getAttr(onnx::kInitializerAttrName));
  shard->setAttr(train::kTensorShardAttr,
                 dist::ShardingAttr::get(ctx,
                                         FlatSymbolRefAttr::get(ctx, kMesh),
                                         d.group, tp.dim, sizes, StringAttr()));
  d.paramShards[global] = shard;
  return shard;
}

Value Partitioner::receiveInGroup(Device &d, Location loc, Value global,
                                  const Local &l) {
  Value mine = l.value;
  if (!mine) {
    RankedTensorType t = localType(d, global, l);
    mine = onnx::ConstantOp::create(
        b, loc, DenseElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
  }
  return dist::BroadcastOp::create(
      b, loc, mine.getType(), mine, FlatSymbolRefAttr::get(ctx, kMesh),
      b.getDenseI64ArrayAttr(d.group), b.getI64IntegerAttr(d.group.front()));
}

bool Partitioner::usedByStage(Value v, int stage) const {
  return llvm::any_of(stages[stage].ops, [&](Operation *op) {
    return llvm::is_contained(op->getOperands(), v);
  });
}

bool Partitioner::usedByLaterStage(Value v, int stage) const {
  for (int s = stage + 1; s < static_cast<int>(stages.size()); ++s)
    if (usedByStage(v, s))
      return true;
  return false;
}

//===----------------------------------------------------------------------===//
// One op on one device
//===----------------------------------------------------------------------===//

/// A training-mode Dropout on a part of its tensor draws the masks of that
/// part's elements (element_offset): the replica's rows of the batch, one
/// block of the tensor when the batch is its outermost non-unit dimension.
/// Any other part would draw other masks than one device does.
LogicalResult Partitioner::placeDropout(Device &d, Operation *op,
                                        onnx::DropoutOp local,
                                        const Local &out) {
  if (!local.getTrainingMode())
    return success();
  auto where = [&]() {
    return op->emitError() << "partition: training-mode Dropout "
                           << describeOp(op) << " ";
  };
  if (out.kind != Local::Replicated)
    return where() << "is split by tensor parallelism; its masks would "
                      "differ from one device's (not supported)";
  if (!out.batch)
    return success();
  ArrayRef<int64_t> shape =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getShape();
  const BatchDim &bd = *out.batch;
  bool block = bd.outer == 1 && llvm::all_of(shape.take_front(bd.dim),
                                             [](int64_t e) { return e == 1; });
  if (!block)
    return where() << "holds the batch inside dimension " << bd.dim << " of "
                   << op->getResult(0).getType()
                   << ", so a replica's rows are not one block of it and "
                      "their masks would differ from one device's";
  int64_t inner = 1;
  for (int64_t e : shape.drop_front(bd.dim + 1))
    inner *= e;
  local.setElementOffsetAttr(
      b.getI64IntegerAttr(offsetOf(d) * bd.granule * inner));
  return success();
}

Value Partitioner::prepareAddend(Operation *op, Value c) {
  Location loc = op->getLoc();
  auto ct = llvm::cast<RankedTensorType>(c.getType());
  if (auto conv = llvm::dyn_cast<onnx::ConvOp>(op)) {
    int64_t rank =
        llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    SmallVector<int64_t> shape(rank, 1);
    shape[1] = ct.getDimSize(0);
    return reshape(loc, c, shape);
  }
  auto beta = op->getAttrOfType<FloatAttr>("beta");
  if (!beta || beta.getValueAsDouble() == 1.0)
    return c;
  Value scale = onnx::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          RankedTensorType::get({}, ct.getElementType()),
          b.getFloatAttr(ct.getElementType(), beta.getValueAsDouble())));
  return onnx::MulOp::create(b, loc, ct, c, scale);
}

/// The tensor-parallel split that `op`'s hetpar.sharding names (none
/// without one), checked against its sharding rule and a group of `t`.
FailureOr<TensorSplit> Partitioner::tensorSplit(Operation *op, int64_t t) {
  int index = catalog->index.lookup(op);
  const std::optional<ShardingRule> &rule = catalog->rules[index];
  auto sharding = op->getAttrOfType<DictionaryAttr>("hetpar.sharding");
  TensorSplit split;
  if (!sharding)
    return split;
  auto dimAttr = sharding.getAs<IntegerAttr>("dim");
  auto parts = sharding.getAs<DenseI64ArrayAttr>("parts");
  if (!dimAttr || !parts || static_cast<int64_t>(parts.size()) != t)
    return op->emitError()
           << "partition: hetpar.sharding of op " << describeOp(op)
           << " needs dim and one part per device of its group of " << t;
  if (!rule)
    return op->emitError() << "partition: op " << describeOp(op)
                           << " is sharded but has no sharding rule";
  // The factor the sharding names, as the simulator resolves it.
  OpSharding named;
  named.dim = dimAttr.getInt();
  named.parts.assign(parts.asArrayRef().begin(), parts.asArrayRef().end());
  auto resolved = resolveSharding(*catalog, index, &named, t);
  if (!resolved)
    return op->emitError() << "partition: "
                           << llvm::toString(resolved.takeError());
  split.factor = resolved->factor;
  int64_t at = 0;
  for (int64_t p : parts.asArrayRef()) {
    if (p < 1)
      return op->emitError() << "partition: hetpar.sharding of op "
                             << describeOp(op) << " has a part < 1";
    split.starts.push_back(at);
    split.sizes.push_back(p);
    at += p;
  }
  const auto &factor = rule->factors[split.factor];
  if (at != factor.size)
    return op->emitError() << "partition: the parts of op " << describeOp(op)
                           << " add up to " << at
                           << " but the factor they split has " << factor.size;
  if (factor.kind == FactorKind::Reduction && reductionOf(op).empty())
    return op->emitError() << "partition: the partial results of op "
                           << describeOp(op)
                           << " split along its reduction do not combine "
                              "by an elementwise sum, max, min or product";
  return split;
}

LogicalResult Partitioner::partitionOp(Device &d, Operation *op,
                                       SmallVectorImpl<Local> &results) {
  int index = catalog->index.lookup(op);
  const std::optional<ShardingRule> &rule = catalog->rules[index];
  int64_t t = d.group.size();

  // The batch factor: the batch analysis's (Batch.h), which the operands'
  // batch layouts must match.
  SmallVector<Local> operands;
  const OpBatch &opBatch = catalog->batch.ops[index];
  int fb = -1;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    auto l = lookup(d, v);
    if (failed(l))
      return failure();
    operands.push_back(*l);
    if (!l->batch)
      continue;
    if (!opBatch.error.empty())
      return op->emitError()
             << "partition: " << opBatch.error
             << ", so the batch cannot be split over replicas or microbatches";
    if (catalog->batch.of(v) != l->batch)
      return op->emitError()
             << "partition: operand " << k << " of op " << describeOp(op)
             << " holds the batch elsewhere than the batch analysis says";
    fb = opBatch.factor;
  }
  int64_t perSample = opBatch.units, within = opBatch.within;

  // The tensor-parallel factor, as resolveSharding names it.
  FailureOr<TensorSplit> split = tensorSplit(op, t);
  if (failed(split))
    return failure();
  int ft = split->factor;
  auto layoutIn = [&](const DimFactors &dims, Local &out) {
    out = tensorLayout(*rule, dims, *split);
    if (fb >= 0)
      if (auto p = ShardingRule::placement(dims, fb, rule->factors))
        out.batch = BatchDim{p->dim, perSample * p->granule, within * p->outer};
  };

  bool reductionSplit =
      ft >= 0 && rule->factors[ft].kind == FactorKind::Reduction;
  std::optional<unsigned> added =
      reductionSplit ? addedOperand(op) : std::nullopt;

  // Operands in the layouts the op needs.
  IRMapping mapping;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    Local want;
    if (rule && k < rule->operands.size())
      layoutIn(rule->operands[k], want);
    if (want.batch && want.kind == Local::Split && want.dim == want.batch->dim)
      return op->emitError()
             << "partition: op " << describeOp(op) << " splits operand " << k
             << "'s batch dimension by tensor parallelism";
    auto got = convert(d, v, operands[k], want.batch, want, op, k);
    if (failed(got))
      return failure();
    // A replicated operand of work split over the group: each device's
    // backward gives only its part of the operand's gradient.
    Value value = got->value;
    if (training && ft >= 0 && t > 1 && want.kind != Local::Split &&
        !(added && k == *added) && mayNeedGradient(v))
      value = enterGroup(d, op->getLoc(), value);
    mapping.map(v, value);
  }

  // The local op.
  Operation *local = b.clone(*op, mapping);
  for (llvm::StringRef name : {"hetpar.stage", "hetpar.sharding"})
    local->removeAttr(name);
  Value addend;
  if (added) {
    addend = prepareAddend(op, local->getOperand(*added));
    local->eraseOperand(*added);
  }
  for (auto [k, r] : llvm::enumerate(op->getResults())) {
    Local l;
    if (rule && k < rule->results.size())
      layoutIn(rule->results[k], l);
    if (fb >= 0 && !l.batch)
      return op->emitError()
             << "partition: result " << k << " of op " << describeOp(op)
             << " drops the batch its operands carry";
    if (reductionSplit && l.kind != Local::Split) {
      l.kind = Local::Partial;
      l.reduction = reductionOf(op);
      if (k == 0)
        l.addend = addend;
    }
    if (auto rt = llvm::dyn_cast<RankedTensorType>(r.getType()))
      local->getResult(k).setType(localType(d, r, l));
    l.value = local->getResult(k);
    results.push_back(l);
  }
  if (auto dropout = llvm::dyn_cast<onnx::DropoutOp>(local))
    if (failed(placeDropout(d, op, dropout, results.front())))
      return failure();
  // Operands that hold a shape: the local result's.
  std::string type = onnx::getONNXOpType(op);
  auto localShape = [&](unsigned k) {
    return SmallVector<int64_t>(
        llvm::cast<RankedTensorType>(local->getResult(k).getType()).getShape());
  };
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(local);
  if ((type == "Reshape" || type == "Expand") && local->getNumOperands() > 1)
    local->setOperand(1, i64Const(op->getLoc(), localShape(0)));
  if (type == "ConstantOfShape")
    local->setOperand(0, i64Const(op->getLoc(), localShape(0)));
  if (type == "Split" && local->getNumOperands() > 1 &&
      llvm::isa<RankedTensorType>(local->getOperand(1).getType())) {
    auto axisAttr = local->getAttrOfType<IntegerAttr>("axis");
    int64_t rank =
        llvm::cast<RankedTensorType>(local->getOperand(0).getType()).getRank();
    auto axis = normalizeAxis(axisAttr ? axisAttr.getInt() : 0, rank);
    SmallVector<int64_t> split;
    for (unsigned k = 0; axis && k < local->getNumResults(); ++k)
      split.push_back(localShape(k)[*axis]);
    local->setOperand(1, i64Const(op->getLoc(), split));
  }
  // A grouped Conv with some of the groups: C = group * W[1] locally too.
  if (auto conv = llvm::dyn_cast<onnx::ConvOp>(local);
      conv && conv.getGroup() != 1) {
    int64_t c = llvm::cast<RankedTensorType>(conv->getOperand(0).getType())
                    .getDimSize(1);
    int64_t perGroup =
        llvm::cast<RankedTensorType>(conv->getOperand(1).getType())
            .getDimSize(1);
    if (perGroup > 0 && c % perGroup == 0)
      conv.setGroup(c / perGroup);
  }
  // The op's own shape rule must agree with the local types.
  if (auto iface = llvm::dyn_cast<onnx::InferShapesOpInterface>(local)) {
    SmallVector<Type> inferred;
    if (failed(iface.inferResultTypes(inferred)))
      return failure();
    for (auto [k, r] : llvm::enumerate(local->getResults()))
      if (k < inferred.size() && failed(refineType(r.getType(), inferred[k])))
        return op->emitError()
               << "partition: on device " << d.id << " result " << k
               << " of op " << describeOp(op) << " would be " << r.getType()
               << " but the op computes " << inferred[k]
               << " from its local operands";
  }
  return success();
}

LogicalResult Partitioner::applyCollective(Device &d, Operation *op,
                                           Local &result, Value global) {
  auto sharding = op->getAttrOfType<DictionaryAttr>("hetpar.sharding");
  auto c = sharding ? sharding.getAs<StringAttr>("collective") : StringAttr();
  if (!c || c.getValue() == "none")
    return success();
  if (c.getValue() != "all_reduce" && c.getValue() != "all_gather" &&
      c.getValue() != "reduce_scatter")
    return op->emitError() << "partition: unknown collective '" << c.getValue()
                           << "' after op " << describeOp(op);
  // all_reduce and all_gather rebuild the whole value; reduce_scatter is
  // done as an all-reduce here (a user that wants a split slices it).
  Local want;
  auto out = convert(d, global, result, result.batch, want, op, 0);
  if (failed(out))
    return failure();
  result = *out;
  return success();
}

//===----------------------------------------------------------------------===//
// Transfers between stages
//===----------------------------------------------------------------------===//

SmallVector<Partitioner::Piece> Partitioner::piecesTo(Value global, int s,
                                                      int64_t to, int64_t tag) {
  const Device &dst = *deviceById[to];
  const StageInfo &from = stages[s];
  bool hasBatch = exitBatch.lookup(global).has_value();
  int64_t lo = 0, hi = microbatchRows;
  if (hasBatch && dst.stage >= 0) {
    lo = offsetOf(dst);
    hi = lo + rowsOf(dst);
  }
  // Training: the first device of each receiving replica receives and
  // broadcasts to its tensor-parallel group (receiveInGroup), so that one
  // gradient travels back.
  const StageInfo &toStage = stages[dst.stage];
  if (training && dst.rank != 0)
    return {};
  // Spread the senders over the ranks of each replica.
  int64_t index = llvm::find(toStage.devices, to) - toStage.devices.begin();
  SmallVector<Piece> out;
  for (int64_t r = 0; r < from.data; ++r) {
    int64_t a = hasBatch ? from.offsets[r] : 0;
    int64_t e = hasBatch ? a + from.rows[r] : microbatchRows;
    int64_t plo = std::max(lo, a), phi = std::min(hi, e);
    if (plo >= phi)
      continue;
    int64_t sender = from.devices[r * from.tensor + index % from.tensor];
    out.push_back({sender, to, plo, phi, tag});
    if (!hasBatch)
      break;
  }
  return out;
}

Value Partitioner::recv(Location loc, Device &d, Value global, int64_t rows,
                        int64_t from, int64_t tag) {
  Local shape;
  shape.batch = exitBatch.lookup(global);
  RankedTensorType t = localType(d, global, shape);
  SmallVector<int64_t> dims(t.getShape());
  if (shape.batch)
    dims[shape.batch->dim] = shape.batch->outer * rows * shape.batch->granule;
  return dist::RecvOp::create(
      b, loc, RankedTensorType::get(dims, t.getElementType()),
      FlatSymbolRefAttr::get(ctx, kMesh), b.getI64IntegerAttr(from),
      b.getI64IntegerAttr(tag));
}

SmallVector<int64_t> Partitioner::outputSenders(Value v, size_t j) {
  const StageInfo &from = stages[stageOfValue(v)];
  bool hasBatch = exitBatch.lookup(v).has_value();
  SmallVector<int64_t> out;
  for (int64_t r = 0; r < (hasBatch ? from.data : 1); ++r)
    out.push_back(from.devices[r * from.tensor + j % from.tensor]);
  return out;
}

//===----------------------------------------------------------------------===//
// One device's program
//===----------------------------------------------------------------------===//

/// local-io: a device of the last stage returns its own value of every graph
/// output, its replica's rows where the output carries the batch, replicated
/// over the replica's tensor-parallel devices; a device of an earlier stage
/// returns nothing. Error: an output computed before the last stage (a
/// pipeline's training step attaches its loss to the last stage's outputs).
LogicalResult Partitioner::localResults(Device &d, ArrayRef<Type> argTypes,
                                        SmallVectorImpl<Value> &results) {
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  int last = static_cast<int>(stages.size()) - 1;
  for (auto [j, v] : llvm::enumerate(ret.getOperands()))
    if (last > 0 && stageOfValue(v) != last)
      return func.emitError()
             << "partition: local-io over " << stages.size()
             << " stages needs every graph output computed by the last stage; "
                "output "
             << j << " is computed by "
             << (stageOfValue(v) < 0
                     ? std::string("no stage (an input or a "
                                   "constant)")
                     : "stage " + std::to_string(stageOfValue(v)));
  SmallVector<Type> types;
  if (d.stage != last) {
    d.fn.setType(b.getFunctionType(argTypes, types));
    return success();
  }
  for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
    auto whole = makeReplicated(d, v);
    if (failed(whole))
      return failure();
    results.push_back(*whole);
    types.push_back(whole->getType());
  }
  d.fn.setType(b.getFunctionType(argTypes, types));
  for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
    if (auto name = func.getResultAttr(j, "onnx.name"))
      d.fn.setResultAttr(j, "onnx.name", name);
    if (auto bd = d.values.lookup(v).batch)
      d.fn.setResultAttr(j, "dist.batch_dim", b.getI64IntegerAttr(bd->dim));
  }
  return success();
}

LogicalResult Partitioner::partitionDevice(Device &d) {
  Location loc = func.getLoc();
  const StageInfo &st = stages[d.stage];
  int last = static_cast<int>(stages.size()) - 1;
  int64_t root = stages[last].devices.front();
  bool isRoot = d.id == root;
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());

  // The signature: every graph input at microbatch size; the outputs on the
  // root device only.
  SmallVector<Type> argTypes;
  for (BlockArgument a : func.getArguments()) {
    auto t = llvm::cast<RankedTensorType>(a.getType());
    SmallVector<int64_t> shape(t.getShape());
    if (isBatchInput(a))
      shape[0] = localIO ? rowsOf(d) : microbatchRows;
    argTypes.push_back(RankedTensorType::get(shape, t.getElementType()));
  }
  b.setInsertionPointToEnd(module.getBody());
  d.fn = func::FuncOp::create(b, loc, ("device_" + llvm::Twine(d.id)).str(),
                              b.getFunctionType(argTypes, {}));
  d.fn->setAttr(dist::kDeviceAttrName, b.getI64IntegerAttr(d.id));
  Block *entry = d.fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [k, a] : llvm::enumerate(func.getArguments())) {
    if (auto name = func.getArgAttr(k, "onnx.name"))
      d.fn.setArgAttr(k, "onnx.name", name);
    Local l;
    l.value = entry->getArgument(k);
    if (isBatchInput(a)) {
      d.fn.setArgAttr(k, "dist.batch_dim", b.getI64IntegerAttr(0));
      if (!localIO)
        l.value = slice(loc, l.value, 0, 1, offsetOf(d), rowsOf(d));
      l.batch = BatchDim{0, 1, 1};
    }
    d.values[a] = l;
  }

  // Receive what earlier stages computed for this stage's ops.
  // In tag order, as the senders send (each pair of devices matches its
  // messages in order).
  SmallVector<std::pair<Value, SmallVector<Value>>> received;
  llvm::DenseSet<Value> neededSet;
  SmallVector<Value> needed;
  for (Operation *op : st.ops)
    for (Value v : op->getOperands())
      if (int s = stageOfValue(v);
          s >= 0 && s < d.stage && neededSet.insert(v).second)
        needed.push_back(v);
  llvm::sort(needed, [&](Value x, Value y) {
    return exitTag.lookup(x) < exitTag.lookup(y);
  });
  for (Value v : needed) {
    SmallVector<Value> parts;
    for (const Piece &p : piecesTo(v, stageOfValue(v), d.id, exitTag.lookup(v)))
      parts.push_back(recv(loc, d, v, p.hi - p.lo, p.from, p.tag));
    received.push_back({v, parts});
  }
  for (auto &[v, parts] : received) {
    Local l;
    l.batch = exitBatch.lookup(v);
    if (!parts.empty())
      l.value = l.batch ? concat(loc, parts, l.batch->dim, l.batch->outer)
                        : parts.front();
    if (training && d.group.size() > 1)
      l.value = receiveInGroup(d, loc, v, l);
    d.values[v] = l;
  }

  // The stage's ops.
  for (Operation *op : st.ops) {
    SmallVector<Local> results;
    if (failed(partitionOp(d, op, results)))
      return failure();
    for (auto [k, r] : llvm::enumerate(op->getResults())) {
      if (k == 0 && failed(applyCollective(d, op, results[k], r)))
        return failure();
      d.values[r] = results[k];
    }
  }
  // Where the batch lies in what leaves the stage (the same on every device
  // of the stage): the receivers' types need it.
  for (Value v : exits)
    if (stageOfValue(v) == d.stage)
      exitBatch[v] = d.values[v].batch;

  // Send what later stages and the outputs need, replicated in the replica.
  // Each piece: the value it cuts from and the piece (an output's holds the
  // whole value, rows 0..0).
  SmallVector<std::pair<Value, Piece>> sends;
  for (Value v : exits) {
    int s = stageOfValue(v);
    if (s != d.stage)
      continue;
    for (const Device &other : devices) {
      if (other.stage <= d.stage || !usedByStage(v, other.stage))
        continue;
      for (const Piece &p : piecesTo(v, s, other.id, exitTag.lookup(v)))
        if (p.from == d.id)
          sends.push_back({v, p});
    }
  }
  // Outputs computed here go to the root (a tag per output after the
  // exits').
  int64_t outputTag = static_cast<int64_t>(exits.size());
  for (auto [j, v] : llvm::enumerate(ret.getOperands()))
    if (!localIO && stageOfValue(v) == d.stage && d.id != root &&
        llvm::is_contained(outputSenders(v, j), d.id))
      sends.push_back(
          {v, Piece{d.id, root, 0, 0, outputTag + static_cast<int64_t>(j)}});
  // Training: every device of the group passes what leaves the stage
  // through dist.grad_all_reduce, so that the gradient that comes back to
  // the device that sends it reaches the whole group.
  DenseMap<Value, Value> leaving;
  if (training && d.group.size() > 1)
    for (Value v : exits) {
      if (stageOfValue(v) != d.stage || !mayNeedGradient(v) ||
          !usedByLaterStage(v, d.stage))
        continue;
      auto whole = makeReplicated(d, v);
      if (failed(whole))
        return failure();
      leaving[v] = enterGroup(d, loc, *whole);
    }
  // All values first, then the sends back to back (one exchange step).
  SmallVector<std::pair<Value, Piece>> ready;
  for (auto &[v, p] : sends) {
    auto whole = makeReplicated(d, v);
    if (failed(whole))
      return failure();
    Value piece = leaving.lookup(v) ? leaving.lookup(v) : *whole;
    if (auto bd = exitBatch.lookup(v); bd && p.hi > p.lo)
      piece = slice(loc, piece, bd->dim, bd->outer,
                    (p.lo - offsetOf(d)) * bd->granule,
                    (p.hi - p.lo) * bd->granule);
    ready.push_back({piece, p});
  }
  for (auto &[piece, p] : ready)
    dist::SendOp::create(b, loc, piece, FlatSymbolRefAttr::get(ctx, kMesh),
                         b.getI64IntegerAttr(p.to), b.getI64IntegerAttr(p.tag));

  // The root joins the outputs.
  SmallVector<Value> results;
  if (localIO) {
    if (failed(localResults(d, argTypes, results)))
      return failure();
  } else if (isRoot) {
    SmallVector<std::pair<unsigned, SmallVector<Value>>> pending;
    for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
      int s = stageOfValue(v);
      SmallVector<Value> parts;
      if (s < 0) {
        // A graph input or a constant returned as is.
        auto l = lookup(d, v);
        if (failed(l))
          return failure();
        Value whole = l->value;
        if (auto a = llvm::dyn_cast<BlockArgument>(v))
          whole = entry->getArgument(a.getArgNumber());
        parts.push_back(whole);
      } else {
        SmallVector<int64_t> senders = outputSenders(v, j);
        for (auto [r, sender] : llvm::enumerate(senders)) {
          if (sender == d.id) {
            auto rv = makeReplicated(d, v);
            if (failed(rv))
              return failure();
            parts.push_back(*rv);
            continue;
          }
          parts.push_back(recv(loc, d, v, stages[s].rows[r], sender,
                               outputTag + static_cast<int64_t>(j)));
        }
      }
      pending.push_back({static_cast<unsigned>(j), parts});
    }
    SmallVector<Type> resultTypes;
    for (auto &[j, parts] : pending) {
      Value v = ret.getOperand(j);
      auto bd = stageOfValue(v) >= 0 ? exitBatch.lookup(v)
                                     : std::optional<BatchDim>();
      Value whole = bd ? concat(loc, parts, bd->dim, bd->outer) : parts.front();
      results.push_back(whole);
      resultTypes.push_back(whole.getType());
    }
    d.fn.setType(b.getFunctionType(argTypes, resultTypes));
    for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
      if (auto name = func.getResultAttr(j, "onnx.name"))
        d.fn.setResultAttr(j, "onnx.name", name);
      std::optional<BatchDim> bd;
      if (stageOfValue(v) >= 0)
        bd = exitBatch.lookup(v);
      else if (auto a = llvm::dyn_cast<BlockArgument>(v); a && isBatchInput(a))
        bd = BatchDim{0, 1, 1};
      if (bd && bd->outer != 1)
        return ret.emitError()
               << "partition: output " << j
               << " holds the batch in chunks of a merged dimension; the "
                  "runtime joins microbatches along one whole dimension";
      if (bd)
        d.fn.setResultAttr(j, "dist.batch_dim", b.getI64IntegerAttr(bd->dim));
    }
  }
  func::ReturnOp::create(b, loc, results);
  // Constants cloned before they were sliced, slices nothing read.
  SmallVector<Operation *> ops;
  for (Operation &op : *entry)
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
  return success();
}

//===----------------------------------------------------------------------===//
// The whole module
//===----------------------------------------------------------------------===//

LogicalResult Partitioner::run() {
  if (failed(readPlan()))
    return failure();
  catalog.emplace(func);
  if (training)
    findWholeParameters();
  // Devices in plan order (the mesh order, so the process ranks).
  for (auto [s, st] : llvm::enumerate(stages))
    for (auto [k, id] : llvm::enumerate(st.devices)) {
      Device d;
      d.id = id;
      d.stage = s;
      d.replica = k / st.tensor;
      d.rank = k % st.tensor;
      for (int64_t j = 0; j < st.tensor; ++j)
        d.group.push_back(st.devices[d.replica * st.tensor + j]);
      devices.push_back(std::move(d));
    }
  for (Device &d : devices)
    deviceById[d.id] = &d;

  // Values that leave their stage, in a fixed order: their tags.
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [s, st] : llvm::enumerate(stages))
    for (Operation *op : st.ops)
      for (Value r : op->getResults()) {
        bool leaves = llvm::is_contained(ret.getOperands(), r);
        for (Operation *user : r.getUsers())
          if (auto it = stageOf.find(user);
              it != stageOf.end() && it->second != static_cast<int>(s))
            leaves = true;
        if (leaves) {
          exitTag[r] = exits.size();
          exits.push_back(r);
        }
      }

  // Stage by stage: a later stage's receives need the batch layout of the
  // values an earlier one sends.
  for (Device &d : devices)
    if (failed(partitionDevice(d)))
      return failure();

  // The mesh, first in the module; the annotated graph goes.
  b.setInsertionPointToStart(module.getBody());
  SmallVector<Attribute> meshDevices;
  for (const StageInfo &st : stages)
    for (auto [id, kind] : llvm::zip(st.devices, st.kinds))
      meshDevices.push_back(
          dist::DeviceAttr::get(ctx, id, b.getStringAttr(kind)));
  dist::MeshOp::create(b, func.getLoc(), kMesh, b.getArrayAttr(meshDevices));
  module->setAttr("dist.microbatches", b.getI64IntegerAttr(microbatches));
  module->removeAttr("hetpar.plan");
  func.erase();
  return success();
}

struct DistPartitionPass
    : hetpar::impl::DistPartitionPassBase<DistPartitionPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (!f.isDeclaration() && !f->hasAttr(dist::kDeviceAttrName))
        funcs.push_back(f);
    if (funcs.size() != 1) {
      module.emitError() << "partition: expected one model function, found "
                         << funcs.size();
      return signalPassFailure();
    }
    Partitioner p(module, funcs.front(), localIo);
    if (failed(p.run()))
      signalPassFailure();
  }
};

} // namespace
