//===- EmitCollectives.cpp - collectives, exchanges -----------------------===//
//
// The dist local form's collectives (all-reduce, all-gather,
// reduce-scatter, all-to-all, broadcast) and the send/recv of consecutive
// exchanges, each step posted as one group (hp_exchange_*).
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

namespace hetpar::codegen::emitter {

//===----------------------------------------------------------------------===//
// Collectives and point-to-point exchanges (dist local form)
//===----------------------------------------------------------------------===//

static const char *reductionEnum(dist::ReductionKind r) {
  switch (r) {
  case dist::ReductionKind::Sum:
    return "HP_SUM";
  case dist::ReductionKind::Max:
    return "HP_MAX";
  case dist::ReductionKind::Min:
    return "HP_MIN";
  case dist::ReductionKind::Prod:
    return "HP_PROD";
  }
  llvm_unreachable("a reduction kind of the dist dialect");
}

/// Ends the exchange step `stepOps`: every send and receive posted since it
/// began completes together (no order between the two sides can deadlock).
/// A timeout names the step's messages.
void Emitter::closeExchange(ArrayRef<Operation *> stepOps) {
  std::string what = "exchange step:";
  for (Operation *op : stepOps) {
    if (auto send = dyn_cast<dist::SendOp>(op))
      what += llvm::formatv(" send to device {0} (tag {1})",
                            send.getPeerAttr().getInt(),
                            send.getTagAttr().getInt());
    else
      what += llvm::formatv(" recv from device {0} (tag {1})",
                            cast<dist::RecvOp>(op).getPeerAttr().getInt(),
                            cast<dist::RecvOp>(op).getTagAttr().getInt());
  }
  line("ctx->what = " + cString(what) + ";");
  call("hp_exchange_end(ctx, &step)");
  close();
}

/// One send or receive of an exchange step (planExchangeSteps): its first
/// opens the step, its last waits for all of them.
void Emitter::emitExchange(Operation *op) {
  ArrayRef<Operation *> stepOps = exchanges[exchangeOf.at(op)];
  if (op == stepOps.front()) {
    open();
    line("hp_exchange step{};");
  }
  if (auto send = dyn_cast<dist::SendOp>(op))
    call(llvm::formatv("hp_exchange_send(ctx, &step, {0}, {1}, {2}, {3})",
                       ptr(send.getInput()), numelOf(send.getInput()),
                       send.getPeerAttr().getInt(),
                       send.getTagAttr().getInt()));
  else {
    auto recv = cast<dist::RecvOp>(op);
    call(llvm::formatv("hp_exchange_recv(ctx, &step, {0}, {1}, {2}, {3})",
                       ptr(recv.getResult()), numelOf(recv.getResult()),
                       recv.getPeerAttr().getInt(),
                       recv.getTagAttr().getInt()));
  }
  ++program.libraryCalls;
  if (op == stepOps.back())
    closeExchange(stepOps);
}

/// The dist collectives call the hp_* collectives of hetpar_device.h over the
/// op's group. Gathers and scatters move contiguous blocks, so their
/// dimension must be the outermost non-unit one (others need packing, not
/// done yet).
LogicalResult Emitter::emitCollective(Operation *op) {
  program.multiDevice = true;
  if (isa<dist::SendOp, dist::RecvOp>(op)) {
    emitExchange(op);
    return success();
  }
  auto group = op->getAttrOfType<DenseI64ArrayAttr>("devices").asArrayRef();
  Value in = op->getOperand(0), out = op->getResult(0);
  std::string T = storageType(eltOf(in));
  std::string g = "static const int64_t group[] = " + cArray(group) + ";";
  std::string n = std::to_string(group.size());
  // Elements per index of `dim`, after checking that blocks are contiguous.
  auto blockElems = [&](int64_t dim) -> FailureOr<int64_t> {
    llvm::ArrayRef<int64_t> sh = shapeOf(in);
    for (int64_t d = 0; d < dim; ++d)
      if (sh[d] != 1)
        return op->emitError()
               << "code generation of a gather or scatter along dimension "
               << dim << " behind a non-unit dimension needs packing, which "
               << "is not implemented yet";
    return numel(sh.drop_front(dim + 1));
  };
  auto counts = [&](llvm::ArrayRef<int64_t> sizes, int64_t block) {
    llvm::SmallVector<int64_t> c;
    for (int64_t sz : sizes)
      c.push_back(sz * block);
    return cArray(c);
  };
  open();
  line(g);
  // What the error messages of a timeout or a signature mismatch name.
  std::string node = onnx::getNodeName(op->getLoc());
  line("ctx->what = " +
       cString(op->getName().stripDialect().str() + " on devices " +
               cArray(group) +
               (node.empty() ? "" : " (for node '" + node + "')")) +
       ";");
  LogicalResult result = success();
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](dist::AllReduceOp o) {
        call(llvm::formatv("hp_all_reduce<{0}>(ctx, group, {1}, {2}, {3}, "
                           "{4}, {5})",
                           T, n, ptr(in), ptr(out), numelOf(in),
                           reductionEnum(o.getReduction())));
      })
      .Case<dist::AllGatherOp, dist::ReduceScatterOp>([&](Operation *o) {
        // Both move whole blocks of the split dimension: the group's sizes
        // in elements, and the reduction for reduce_scatter.
        auto dim = o->getAttrOfType<IntegerAttr>("dim").getInt();
        auto sizes = o->getAttrOfType<DenseI64ArrayAttr>("sizes");
        auto block = blockElems(dim);
        if (failed(block)) {
          result = failure();
          return;
        }
        line("static const int64_t counts[] = " +
             counts(sizes.asArrayRef(), *block) + ";");
        if (auto rs = dyn_cast<dist::ReduceScatterOp>(o))
          call(llvm::formatv("hp_reduce_scatter<{0}>(ctx, group, {1}, {2}, "
                             "{3}, counts, {4})",
                             T, n, ptr(in), ptr(out),
                             reductionEnum(rs.getReduction())));
        else
          call(llvm::formatv("hp_all_gather<{0}>(ctx, group, {1}, {2}, {3}, "
                             "counts)",
                             T, n, ptr(in), ptr(out)));
      })
      .Case([&](dist::BroadcastOp o) {
        emitCopy(ptr(in), ptr(out), numelOf(in), eltOf(in));
        call(llvm::formatv("hp_broadcast<{0}>(ctx, group, {1}, {2}, {3}, "
                           "{4})",
                           T, n, ptr(out), numelOf(out),
                           o.getRootAttr().getInt()));
      })
      .Case([&](dist::AllToAllOp o) {
        call(codegen::emitAllToAllCall(o, "group", n, libraryContext()));
      })
      .Default([&](Operation *o) {
        result = o->emitError("no code generation for this collective yet");
      });
  close();
  ++program.libraryCalls;
  return result;
}

} // namespace hetpar::codegen::emitter
