//===- PartitionLayouts.cpp - local values of hetpar-dist-localize -------===//
//
// The layout conversions of hetpar-dist-localize
// (Partitioner.h): a value's local form on a device, and the slices and
// collectives that bring it to the layout an op needs.
//
//===----------------------------------------------------------------------===//
#include "Partitioner.h"

#include "hetpar/Support/ShapeUtils.h"

#include <numeric>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

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

Value Partitioner::transpose(Location loc, Value x, ArrayRef<int64_t> perm) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return onnx::TransposeOp::create(
      b, loc, RankedTensorType::get(shape, t.getElementType()), x,
      b.getDenseI64ArrayAttr(perm));
}

Value Partitioner::collectiveAlong(
    Location loc, Value x, int dim, int64_t outer,
    llvm::function_ref<Value(Value, int64_t)> make) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  Value in = outer > 1
                 ? reshape(loc, x, blocks::chunked(t.getShape(), dim, outer))
                 : x;
  int at = outer > 1 ? dim + 1 : dim;
  auto inType = llvm::cast<RankedTensorType>(in.getType());
  // The collective moves the outermost dimension that is not 1 (contiguous
  // blocks per device); move `at` there first.
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
  Value out = make(in, g);
  int64_t extent = llvm::cast<RankedTensorType>(out.getType()).getDimSize(g);
  if (!leading)
    out = transpose(loc, out, inverse);
  SmallVector<int64_t> merged(t.getShape());
  merged[dim] = outer * extent;
  return reshape(loc, out, merged);
}

Value Partitioner::allGather(Location loc, Device &d, Value x, int dim,
                             int64_t outer, ArrayRef<int64_t> sizes) {
  return collectiveAlong(loc, x, dim, outer, [&](Value in, int64_t g) {
    auto t = llvm::cast<RankedTensorType>(in.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[g] = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
    return dist::AllGatherOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), in,
        FlatSymbolRefAttr::get(ctx, kMesh), b.getDenseI64ArrayAttr(d.group),
        b.getI64IntegerAttr(g), b.getDenseI64ArrayAttr(sizes));
  });
}

/// `value` (this device's block of a result split as `tp` says) plus its
/// block of `addend`, which broadcasts to the whole result as ONNX does. In
/// training the whole addend enters the group (each device's backward
/// reaches only its block of it).
Value Partitioner::addBlockOf(Location loc, Device &d, Value value,
                              Value addend, const Local &tp) {
  auto vt = llvm::cast<RankedTensorType>(value.getType());
  auto at = llvm::cast<RankedTensorType>(addend.getType());
  int64_t dim = tp.dim - (vt.getRank() - at.getRank());
  if (dim >= 0 && at.getDimSize(dim) != 1) {
    if (training)
      addend = enterGroup(d, loc, addend);
    addend = slice(loc, addend, dim, tp.outer, tp.starts[d.rank] * tp.granule,
                   tp.sizes[d.rank] * tp.granule);
  }
  return onnx::AddOp::create(b, loc, vt, value, addend);
}

/// Each device of the group keeps its reduced block of `sizes` along `dim`
/// (in `outer` chunks): what an all-reduce and a slice give, moving
/// (p - 1) / p of the bytes once instead of twice.
Value Partitioner::reduceScatter(Location loc, Device &d, Value x, int dim,
                                 int64_t outer, ArrayRef<int64_t> sizes,
                                 dist::ReductionKind kind) {
  return collectiveAlong(loc, x, dim, outer, [&](Value in, int64_t g) {
    auto t = llvm::cast<RankedTensorType>(in.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[g] = sizes[d.rank];
    return dist::ReduceScatterOp::create(
        b, loc, RankedTensorType::get(shape, t.getElementType()), in,
        FlatSymbolRefAttr::get(ctx, kMesh), b.getDenseI64ArrayAttr(d.group),
        dist::ReductionKindAttr::get(ctx, kind), b.getI64IntegerAttr(g),
        b.getDenseI64ArrayAttr(sizes));
  });
}

Value Partitioner::allToAll(Location loc, Device &d, Value x, const Local &from,
                            const Local &to) {
  auto t = llvm::cast<RankedTensorType>(x.getType());
  // Each split dimension as [outer, extent]: the all-to-all concatenates
  // along `from`'s extent and cuts along `to`'s.
  SmallVector<int64_t> shape;
  int concatDim = -1, splitDim = -1;
  for (auto [k, e] : llvm::enumerate(t.getShape())) {
    int dim = static_cast<int>(k);
    int64_t outer = dim == from.dim ? from.outer : dim == to.dim ? to.outer : 1;
    if (outer > 1)
      shape.push_back(outer);
    if (dim == from.dim)
      concatDim = static_cast<int>(shape.size());
    if (dim == to.dim)
      splitDim = static_cast<int>(shape.size());
    shape.push_back(e / outer);
  }
  SmallVector<int64_t> splitSizes, concatSizes;
  for (int64_t s : to.sizes)
    splitSizes.push_back(s * to.granule);
  for (int64_t s : from.sizes)
    concatSizes.push_back(s * from.granule);
  SmallVector<int64_t> outShape(shape);
  outShape[splitDim] = splitSizes[d.rank];
  outShape[concatDim] =
      std::accumulate(concatSizes.begin(), concatSizes.end(), int64_t(0));
  Value out = dist::AllToAllOp::create(
      b, loc, RankedTensorType::get(outShape, t.getElementType()),
      reshape(loc, x, shape), FlatSymbolRefAttr::get(ctx, kMesh),
      b.getDenseI64ArrayAttr(d.group), b.getI64IntegerAttr(splitDim),
      b.getDenseI64ArrayAttr(splitSizes), b.getI64IntegerAttr(concatDim),
      b.getDenseI64ArrayAttr(concatSizes));
  SmallVector<int64_t> merged(t.getShape());
  merged[from.dim] = from.outer * outShape[concatDim];
  merged[to.dim] = to.outer * splitSizes[d.rank];
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
    // constant of batch size, an input marked as holding none): only the
    // whole batch runs at once (placePlan refuses such a plan first).
    if (microbatches > 1)
      return user->emitError()
             << "partition: operand " << operand << " of op "
             << describeOp(user)
             << " carries no batch but is read per sample of the batch, so "
                "the step cannot be split into microbatches";
    cur.value = slice(loc, cur.value, batch->dim, batch->outer,
                      offsetOf(d) * batch->granule, rowsOf(d) * batch->granule);
    cur.batch = batch;
  }
  if (cur.sameSplit(tp))
    return cur;
  // Partial results that the op wants split: one reduce-scatter, then the
  // device's block of the addend (a bias added after the reduction).
  if (cur.kind == Local::Partial && tp.kind == Local::Split) {
    SmallVector<int64_t> sizes;
    for (int64_t s : tp.sizes)
      sizes.push_back(s * tp.granule);
    Local out = tp;
    out.value = reduceScatter(loc, d, cur.value, tp.dim, tp.outer, sizes,
                              cur.reduction);
    if (cur.addend)
      out.value = addBlockOf(loc, d, out.value, cur.addend, tp);
    out.batch = cur.batch;
    // The value is split from here on: its other users convert from the
    // split (a second reduce-scatter would reduce the partial sums again).
    d.values[global] = out;
    return out;
  }
  // A split along one dimension that the op wants along another: one
  // all-to-all.
  if (cur.kind == Local::Split && tp.kind == Local::Split &&
      cur.dim != tp.dim) {
    SmallVector<Local, 1> &done = d.resplit[global];
    for (const Local &l : done)
      if (l.sameSplit(tp) && l.batch == cur.batch)
        return l;
    Local out = tp;
    out.value = allToAll(loc, d, cur.value, cur, tp);
    out.batch = cur.batch;
    done.push_back(out);
    return out;
  }
  // Tensor parallelism: first to replicated (once per value: its other
  // users reuse the collective's result), then to the split wanted.
  auto known = d.values.find(global);
  bool canonical = cur.kind != Local::Replicated && known != d.values.end() &&
                   known->second.value == cur.value;
  if (Value whole = canonical ? d.replicated.lookup(global) : Value()) {
    cur.value = whole;
    cur.addend = Value();
    cur.kind = Local::Replicated;
  } else if (cur.kind == Local::Partial) {
    cur.value = dist::AllReduceOp::create(
        b, loc, cur.value.getType(), cur.value,
        FlatSymbolRefAttr::get(ctx, kMesh), b.getDenseI64ArrayAttr(d.group),
        dist::ReductionKindAttr::get(ctx, cur.reduction));
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
  if (canonical)
    d.replicated[global] = cur.value;
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
