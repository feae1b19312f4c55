//===- PartitionDevice.cpp - one device's program -------------------------===//
//
// One device's function of hetpar-dist-localize (Partitioner.h): its
// inputs, what it receives from earlier stages, its stage's ops, what it
// sends on, and its outputs.
//
//===----------------------------------------------------------------------===//
#include "Partitioner.h"

#include "hetpar/Plan/PlanPlacement.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

//===----------------------------------------------------------------------===//
// Transfers between stages
//===----------------------------------------------------------------------===//

SmallVector<Partitioner::Piece> Partitioner::piecesTo(Value global, int s,
                                                      int64_t to, int64_t tag,
                                                      bool everyRank) {
  const Device &dst = *deviceById[to];
  const StageInfo &from = stages[s];
  bool hasBatch = splitBatchOf(global).has_value();
  int64_t lo = 0, hi = microbatchRows;
  if (hasBatch && dst.stage >= 0) {
    lo = offsetOf(dst);
    hi = lo + rowsOf(dst);
  }
  // Training: the first device of each receiving replica receives and
  // broadcasts to its tensor-parallel group (receiveInGroup), so that one
  // gradient travels back.
  const StageInfo &toStage = stages[dst.stage];
  if (training && dst.rank != 0 && !everyRank)
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

SmallVector<Partitioner::Piece> Partitioner::splitPiecesTo(Value global,
                                                           int64_t to) {
  const Device &dst = *deviceById[to];
  // The transfer's layouts (readTransfer: split along one dimension at both
  // ends, in indices): each sending device's part of the split (checked
  // against what its program leaves, partitionDevice) and each receiving
  // device's.
  const Local *want = &splitExits.find(global)->second.target;
  const Local &have = splitExits.find(global)->second.source;
  int64_t lo = want->starts[dst.rank] * want->granule;
  int64_t hi = lo + want->sizes[dst.rank] * want->granule;
  const StageInfo &from = stages[stageOfValue(global)];
  SmallVector<Piece> out;
  for (const Piece &rows : piecesTo(global, stageOfValue(global), to,
                                    exitTag.lookup(global), true)) {
    const Device &sender = *deviceById[rows.from];
    for (int64_t k = 0; k < from.tensor; ++k) {
      int64_t a = have.starts[k] * have.granule;
      int64_t e = a + have.sizes[k] * have.granule;
      if (std::max(a, lo) >= std::min(e, hi))
        continue;
      Piece p = rows;
      p.from = from.devices[sender.replica * from.tensor + k];
      p.dlo = std::max(a, lo);
      p.dhi = std::min(e, hi);
      out.push_back(p);
    }
  }
  return out;
}

dist::ExchangePieceAttr Partitioner::pieceOf(const Device &d, Value global,
                                             const Piece &p, int64_t peer,
                                             const Local *split) {
  int64_t batchDim = -1, outer = 1, start = 0, size = 0;
  if (auto bd = splitBatchOf(global); bd && p.hi > p.lo) {
    batchDim = bd->dim;
    outer = bd->outer;
    start = (p.lo - offsetOf(d)) * bd->granule;
    size = (p.hi - p.lo) * bd->granule;
  }
  int64_t splitDim = -1, splitStart = 0, splitSize = 0;
  if (split && p.dhi > p.dlo) {
    splitDim = split->dim;
    splitStart = p.dlo - split->starts[d.rank] * split->granule;
    splitSize = p.dhi - p.dlo;
  }
  return dist::ExchangePieceAttr::get(ctx, peer, p.tag, batchDim, outer, start,
                                      size, splitDim, splitStart, splitSize);
}

Value Partitioner::recvPieces(Location loc, Type type,
                              ArrayRef<Attribute> pieces) {
  return dist::RecvPiecesOp::create(
      b, loc, type, FlatSymbolRefAttr::get(ctx, kMesh), b.getArrayAttr(pieces));
}

SmallVector<int64_t> Partitioner::outputSenders(Value v, size_t j) {
  const StageInfo &from = stages[stageOfValue(v)];
  bool hasBatch = splitBatchOf(v).has_value();
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
  // A graph input or a constant returned as it is belongs to no stage: the
  // last stage takes it (stageTakesInput) and returns it.
  for (auto [j, v] : llvm::enumerate(ret.getOperands()))
    if (int s = stageOfValue(v); last > 0 && s >= 0 && s != last)
      return func.emitError()
             << "partition: a pipeline's training step (local-io over "
             << stages.size()
             << " stages) returns what the last stage computes, where the "
                "loss attaches; graph output "
             << j << " is computed by stage " << s;
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
    if (auto name = func.getResultAttr(j, onnx::kNameAttrName))
      d.fn.setResultAttr(j, onnx::kNameAttrName, name);
    if (auto bd = d.values.lookup(v).batch)
      d.fn.setResultAttr(j, dist::kBatchDimAttrName,
                         b.getI64IntegerAttr(bd->dim));
  }
  return success();
}

/// The device's function, with the graph inputs its stage takes
/// (stageTakesInput), in graph order, at microbatch size (the replica's rows
/// with local-io), each under its graph input's name: `argTypes` gets their
/// types.
void Partitioner::createFunction(Device &d, SmallVectorImpl<Type> &argTypes) {
  Location loc = func.getLoc();
  SmallVector<BlockArgument> taken;
  for (BlockArgument a : func.getArguments())
    if (stageTakesInput(a, d.stage, static_cast<int>(stages.size()),
                        [&](Operation *op) {
                          auto it = stageOf.find(op);
                          return it == stageOf.end() ? -1 : it->second;
                        }))
      taken.push_back(a);
  for (BlockArgument a : taken) {
    auto t = llvm::cast<RankedTensorType>(a.getType());
    SmallVector<int64_t> shape(t.getShape());
    if (auto bd = splitBatchOf(a))
      shape[bd->dim] = localIO ? rowsOf(d) : microbatchRows;
    argTypes.push_back(RankedTensorType::get(shape, t.getElementType()));
  }
  b.setInsertionPointToEnd(module.getBody());
  d.fn = func::FuncOp::create(b, loc, ("device_" + llvm::Twine(d.id)).str(),
                              b.getFunctionType(argTypes, {}));
  d.fn->setAttr(dist::kDeviceAttrName, b.getI64IntegerAttr(d.id));
  d.fn->setAttr(dist::kStageIdAttrName, b.getI64IntegerAttr(d.stage));
  Block *entry = d.fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [k, a] : llvm::enumerate(taken)) {
    d.fn.setArgAttr(k, onnx::kNameAttrName, b.getStringAttr(graphInputName(a)));
    Local l;
    l.value = d.args[a] = entry->getArgument(k);
    if (auto bd = splitBatchOf(a)) {
      int dim = bd->dim;
      d.fn.setArgAttr(k, dist::kBatchDimAttrName, b.getI64IntegerAttr(dim));
      if (!localIO)
        l.value = slice(loc, l.value, dim, 1, offsetOf(d), rowsOf(d));
      l.batch = BatchDim{dim, 1, 1};
    }
    d.values[a] = l;
  }
}

/// Graph input `a`'s name (onnx::graphInputName of the model function).
std::string Partitioner::graphInputName(BlockArgument a) {
  return onnx::graphInputName(func, a.getArgNumber());
}

/// The module's `dist.graph_inputs`: every graph input in graph order, its
/// name, its type (a whole step's) and where its batch is; for a training
/// plan, then the labels its loss adds (hetpar.training_labels), which the
/// last stage's step takes.
void Partitioner::recordGraphInputs() {
  SmallVector<Attribute> inputs;
  for (BlockArgument a : func.getArguments()) {
    auto bd = splitBatchOf(a);
    inputs.push_back(dist::GraphInputAttr::get(
        b.getContext(), b.getStringAttr(graphInputName(a)),
        llvm::cast<RankedTensorType>(a.getType()),
        bd ? bd->dim : dist::kNoBatchDim));
  }
  // A graph input of the labels' name is hetpar-train-attach-loss's error
  // to report (choose --labels), after the partition.
  std::optional<dist::GraphInputAttr> labels = getTrainingLabels(module);
  if (training && labels && *labels &&
      llvm::none_of(func.getArguments(), [&](BlockArgument a) {
        return graphInputName(a) == labels->getName().getValue();
      }))
    inputs.push_back(*labels);
  module->setAttr(dist::kGraphInputsAttrName, b.getArrayAttr(inputs));
}

/// Receives what earlier stages computed for this stage's ops, in tag
/// order, as the senders send (each pair of devices matches its messages in
/// order), one dist.recv_pieces per value. A value that travels split
/// arrives in the split its first user needs, in pieces from the sending
/// devices that hold them.
LogicalResult Partitioner::receiveFromEarlierStages(Device &d) {
  Location loc = func.getLoc();
  const StageInfo &st = stages[d.stage];
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
    bool split = splitExits.count(v);
    Local l;
    if (split)
      l = splitExits.find(v)->second.target; // without the batch
    l.batch = splitBatchOf(v);
    SmallVector<Attribute> pieces;
    for (const Piece &p :
         split ? splitPiecesTo(v, d.id)
               : piecesTo(v, stageOfValue(v), d.id, exitTag.lookup(v)))
      pieces.push_back(pieceOf(d, v, p, p.from, split ? &l : nullptr));
    // In training, only the first device of a replica receives what does
    // not travel split (receiveInGroup broadcasts it).
    if (!pieces.empty())
      l.value = recvPieces(loc, localType(d, v, l), pieces);
    d.values[v] = l;
  }
  if (training && d.group.size() > 1)
    for (Value v : needed)
      if (!splitExits.count(v))
        d.values[v].value = receiveInGroup(d, loc, v, d.values[v]);
  return success();
}

/// Every piece in which exit `v` leaves its stage for the devices of later
/// stages that use it, in device order (each split piece where it travels
/// split: splitExits).
SmallVector<Partitioner::Piece> Partitioner::exitPieces(Value v) {
  int s = stageOfValue(v);
  SmallVector<Piece> all;
  for (const Device &other : devices) {
    if (other.stage <= s || !usedByStage(v, other.stage))
      continue;
    SmallVector<Piece> pieces =
        splitExits.count(v) ? splitPiecesTo(v, other.id)
                            : piecesTo(v, s, other.id, exitTag.lookup(v));
    all.append(pieces.begin(), pieces.end());
  }
  return all;
}

/// Every device of a group that holds a sender of a value leaving the stage
/// whole makes it whole here, at one point of every group member's
/// collective order: a value left split or partial by its op needs the whole
/// group's all-gather or all-reduce, not only the sender's (without the
/// others, the sender's collective waits for them forever). First the
/// outputs computed in the stage (without local-io: the root and
/// outputSenders), then what later stages take whole (exits that do not
/// travel split), in exit order. The sender reuses the value.
LogicalResult Partitioner::replicateSentWhole(Device &d) {
  auto groupHolds = [&](int64_t sender) {
    return llvm::is_contained(d.group, sender);
  };
  SmallVector<Value> whole;
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!localIO)
    for (auto [j, v] : llvm::enumerate(ret.getOperands()))
      if (stageOfValue(v) == d.stage &&
          llvm::any_of(outputSenders(v, j), groupHolds))
        whole.push_back(v);
  if (d.group.size() > 1)
    for (Value v : exits)
      if (stageOfValue(v) == d.stage && !splitExits.count(v) &&
          llvm::any_of(exitPieces(v),
                       [&](const Piece &p) { return groupHolds(p.from); }))
        whole.push_back(v);
  for (Value v : whole)
    if (failed(makeReplicated(d, v)))
      return failure();
  return success();
}

/// Sends what later stages (and, without local-io, the root's outputs)
/// need, replicated in the replica, all values first and then the sends back
/// to back (one exchange step).
LogicalResult Partitioner::sendToLaterStages(Device &d) {
  Location loc = func.getLoc();
  int last = static_cast<int>(stages.size()) - 1;
  int64_t root = stages[last].devices.front();
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  // Send what later stages and the outputs need, replicated in the replica.
  // Each piece: the value it cuts from and the piece (an output's holds the
  // whole value, rows 0..0).
  SmallVector<std::pair<Value, Piece>> sends;
  for (Value v : exits) {
    if (stageOfValue(v) != d.stage)
      continue;
    for (const Piece &p : exitPieces(v))
      if (p.from == d.id)
        sends.push_back({v, p});
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
          !usedByLaterStage(v, d.stage) || splitExits.count(v))
        continue;
      auto whole = makeReplicated(d, v);
      if (failed(whole))
        return failure();
      leaving[v] = enterGroup(d, loc, *whole);
    }
  // All values first (their collectives), then one dist.send_pieces per
  // value and tag back to back: the lowering cuts all blocks and then sends
  // them back to back (one exchange step).
  SmallVector<std::pair<Value, dist::ExchangePieceAttr>> ready;
  for (auto &[v, p] : sends) {
    if (p.dhi > p.dlo) {
      // Travels split: the part of this device's split.
      const Local &mine = d.values[v];
      ready.push_back({mine.value, pieceOf(d, v, p, p.to, &mine)});
      continue;
    }
    auto whole = makeReplicated(d, v);
    if (failed(whole))
      return failure();
    Value value = leaving.lookup(v) ? leaving.lookup(v) : *whole;
    ready.push_back({value, pieceOf(d, v, p, p.to)});
  }
  for (size_t k = 0; k < ready.size();) {
    auto [value, first] = ready[k];
    SmallVector<Attribute> pieces;
    for (; k < ready.size() && ready[k].first == value &&
           ready[k].second.getTag() == first.getTag();
         ++k)
      pieces.push_back(ready[k].second);
    dist::SendPiecesOp::create(b, loc, value,
                               FlatSymbolRefAttr::get(ctx, kMesh),
                               b.getArrayAttr(pieces));
  }
  return success();
}

/// The root's outputs: its own values and what the other devices send,
/// joined along the batch; sets the function's type.
LogicalResult Partitioner::joinOutputsAtRoot(Device &d, ArrayRef<Type> argTypes,
                                             SmallVectorImpl<Value> &results) {
  Location loc = func.getLoc();
  auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
  int64_t outputTag = static_cast<int64_t>(exits.size());
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
        whole = d.args.lookup(a);
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
        // The sender's whole value (its replica's rows of the batch).
        Local shape;
        shape.batch = splitBatchOf(v);
        SmallVector<int64_t> dims(localType(d, v, shape).getShape());
        if (shape.batch)
          dims[shape.batch->dim] =
              shape.batch->outer * stages[s].rows[r] * shape.batch->granule;
        Piece whole{sender, d.id, 0, 0, outputTag + static_cast<int64_t>(j)};
        parts.push_back(recvPieces(
            loc, RankedTensorType::get(dims, getElementTypeOrSelf(v.getType())),
            {pieceOf(d, v, whole, sender)}));
      }
    }
    pending.push_back({static_cast<unsigned>(j), parts});
  }
  SmallVector<Type> resultTypes;
  for (auto &[j, parts] : pending) {
    Value v = ret.getOperand(j);
    auto bd =
        stageOfValue(v) >= 0 ? splitBatchOf(v) : std::optional<BatchDim>();
    Value whole = bd ? concat(loc, parts, bd->dim, bd->outer) : parts.front();
    results.push_back(whole);
    resultTypes.push_back(whole.getType());
  }
  d.fn.setType(b.getFunctionType(argTypes, resultTypes));
  for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
    if (auto name = func.getResultAttr(j, onnx::kNameAttrName))
      d.fn.setResultAttr(j, onnx::kNameAttrName, name);
    std::optional<BatchDim> bd;
    if (stageOfValue(v) >= 0 || llvm::isa<BlockArgument>(v))
      bd = splitBatchOf(v);
    if (bd && bd->outer != 1)
      return ret.emitError()
             << "partition: output " << j
             << " holds the batch in chunks of a merged dimension; the "
                "runtime joins microbatches along one whole dimension";
    if (bd)
      d.fn.setResultAttr(j, dist::kBatchDimAttrName,
                         b.getI64IntegerAttr(bd->dim));
  }
  return success();
}

LogicalResult Partitioner::partitionDevice(Device &d) {
  int last = static_cast<int>(stages.size()) - 1;
  bool isRoot = d.id == stages[last].devices.front();
  SmallVector<Type> argTypes;
  createFunction(d, argTypes);
  if (failed(receiveFromEarlierStages(d)))
    return failure();
  // The stage's ops.
  for (Operation *op : stages[d.stage].ops) {
    SmallVector<Local> results;
    if (failed(partitionOp(d, op, results)))
      return failure();
    for (auto [k, r] : llvm::enumerate(op->getResults())) {
      if (k == 0 && failed(applyCollective(d, op, results[k], r)))
        return failure();
      d.values[r] = results[k];
    }
  }
  // What leaves the stage is where the receivers read it: the batch where
  // the batch analysis puts it, a split transfer's parts in its source
  // layout.
  for (Value v : exits)
    if (stageOfValue(v) == d.stage) {
      if (d.values[v].batch != splitBatchOf(v))
        return v.getDefiningOp()->emitError()
               << "internal error: partition: a result of op "
               << describeOp(v.getDefiningOp())
               << " leaves its stage with the batch elsewhere than the batch "
                  "analysis says";
      if (auto it = splitExits.find(v);
          it != splitExits.end() && !it->second.source.sameSplit(d.values[v]))
        return v.getDefiningOp()->emitError()
               << "partition: the dist.transfer of a result of op "
               << describeOp(v.getDefiningOp())
               << " leaves split otherwise than the op's sharding leaves it";
    }
  if (failed(replicateSentWhole(d)) || failed(sendToLaterStages(d)))
    return failure();
  SmallVector<Value> results;
  if (localIO) {
    if (failed(localResults(d, argTypes, results)))
      return failure();
  } else if (isRoot && failed(joinOutputsAtRoot(d, argTypes, results))) {
    return failure();
  }
  Location loc = func.getLoc();
  Block *entry = &d.fn.getBody().front();
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
