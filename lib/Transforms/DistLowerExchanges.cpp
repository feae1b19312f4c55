//===- DistLowerExchanges.cpp - hetpar-dist-lower-exchanges ---------------===//
//
// Turns dist.send_pieces and dist.recv_pieces (hetpar-dist-localize's
// messages, Passes.td describes the pass) into the slices, dist.send,
// dist.recv and joins the runtime executes. Each run of consecutive ops of
// one kind is one exchange step: its messages back to back.
//
//===----------------------------------------------------------------------===//
#include "BlockOps.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace hetpar {
#define GEN_PASS_DEF_DISTLOWEREXCHANGESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;
using namespace hetpar::blocks;

namespace {

/// A piece's block of `x`: its split range, then its batch range (in
/// chunks).
Value cutPiece(OpBuilder &b, Location loc, Value x,
               dist::ExchangePieceAttr piece) {
  if (piece.getSplitDim() >= 0)
    x = sliceBlock(b, loc, x, piece.getSplitDim(), 1, piece.getSplitStart(),
                   piece.getSplitSize());
  if (piece.getBatchDim() >= 0)
    x = sliceBlock(b, loc, x, piece.getBatchDim(), piece.getBatchOuter(),
                   piece.getBatchStart(), piece.getBatchSize());
  return x;
}

/// Received blocks joined as dist.recv_pieces orders them (dist::pieceRuns):
/// each run's pieces along split_dim, the runs along batch_dim.
Value joinPieces(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                 ArrayRef<dist::ExchangePieceAttr> pieces) {
  SmallVector<Value> runs;
  size_t at = 0;
  for (ArrayRef<dist::ExchangePieceAttr> run : dist::pieceRuns(pieces)) {
    ArrayRef<Value> blocks = parts.slice(at, run.size());
    at += run.size();
    runs.push_back(
        blocks.size() == 1
            ? blocks.front()
            : concatBlocks(b, loc, blocks, run.front().getSplitDim(), 1));
  }
  if (runs.size() == 1)
    return runs.front();
  return concatBlocks(b, loc, runs, pieces.front().getBatchDim(),
                      pieces.front().getBatchOuter());
}

/// One exchange step of sends: every block cut first, then the sends back
/// to back, where the run begins.
void lowerSends(OpBuilder &b, MutableArrayRef<dist::SendPiecesOp> run) {
  b.setInsertionPoint(run.front());
  SmallVector<std::tuple<Value, dist::ExchangePieceAttr, Location>> blocks;
  for (dist::SendPiecesOp op : run)
    for (auto piece : op.getPieces().getAsRange<dist::ExchangePieceAttr>())
      blocks.push_back(
          {cutPiece(b, op.getLoc(), op.getInput(), piece), piece, op.getLoc()});
  for (auto &[block, piece, loc] : blocks)
    dist::SendOp::create(b, loc, block, run.front().getMeshAttr(),
                         b.getI64IntegerAttr(piece.getPeer()),
                         b.getI64IntegerAttr(piece.getTag()));
  // A constant sent only in blocks (sliced above) leaves the program.
  llvm::SetVector<Operation *> sources;
  for (dist::SendPiecesOp op : run) {
    if (Operation *def = op.getInput().getDefiningOp())
      sources.insert(def);
    op.erase();
  }
  for (Operation *def : sources)
    if (isOpTriviallyDead(def))
      def->erase();
}

/// One exchange step of receives: the receives back to back where the run
/// begins, then each op's joined value (none for a value nothing reads: its
/// messages are still received).
void lowerRecvs(OpBuilder &b, MutableArrayRef<dist::RecvPiecesOp> run) {
  b.setInsertionPoint(run.front());
  SmallVector<SmallVector<Value>> parts;
  for (dist::RecvPiecesOp op : run) {
    auto type = llvm::cast<RankedTensorType>(op.getType());
    parts.emplace_back();
    for (auto piece : op.getPieces().getAsRange<dist::ExchangePieceAttr>())
      parts.back().push_back(dist::RecvOp::create(
          b, op.getLoc(),
          RankedTensorType::get(piece.blockShape(type.getShape()),
                                type.getElementType()),
          op.getMeshAttr(), b.getI64IntegerAttr(piece.getPeer()),
          b.getI64IntegerAttr(piece.getTag())));
  }
  for (size_t k = 0; k < run.size(); ++k) {
    dist::RecvPiecesOp op = run[k];
    if (op->use_empty())
      continue;
    auto pieces =
        llvm::to_vector(op.getPieces().getAsRange<dist::ExchangePieceAttr>());
    op.replaceAllUsesWith(joinPieces(b, op.getLoc(), parts[k], pieces));
  }
  for (dist::RecvPiecesOp op : run)
    op.erase();
}

/// The maximal runs of consecutive `OpT` in `block`.
template <typename OpT> SmallVector<SmallVector<OpT>> runsOf(Block &block) {
  SmallVector<SmallVector<OpT>> runs;
  bool open = false;
  for (Operation &op : block) {
    auto typed = llvm::dyn_cast<OpT>(op);
    if (typed && !open)
      runs.emplace_back();
    if (typed)
      runs.back().push_back(typed);
    open = static_cast<bool>(typed);
  }
  return runs;
}

/// Whether onnx.Slice and onnx.Concat take tensors of `type`'s elements:
/// ONNX_Tensor's element types (ONNXBase.td).
bool isONNXElementType(Type type) {
  Type e = llvm::cast<ShapedType>(type).getElementType();
  if (llvm::isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(e))
    return true;
  auto i = llvm::dyn_cast<IntegerType>(e);
  if (!i || i.isSigned())
    return false;
  unsigned w = i.getWidth();
  return i.isUnsigned() ? (w == 8 || w == 16 || w == 32 || w == 64)
                        : (w == 1 || w == 8 || w == 16 || w == 32 || w == 64);
}

struct DistLowerExchangesPass
    : hetpar::impl::DistLowerExchangesPassBase<DistLowerExchangesPass> {
  void runOnOperation() override {
    // The blocks are cut and joined by ONNX ops.
    WalkResult checked = getOperation().walk([&](Operation *op) {
      Type type;
      if (auto send = llvm::dyn_cast<dist::SendPiecesOp>(op))
        type = send.getInput().getType();
      else if (auto recv = llvm::dyn_cast<dist::RecvPiecesOp>(op))
        type = recv.getType();
      if (!type || isONNXElementType(type))
        return WalkResult::advance();
      op->emitOpError() << "exchanges " << type
                        << ", whose elements onnx.Slice and onnx.Concat do not "
                           "take (blocks are cut and joined with them)";
      return WalkResult::interrupt();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();
    OpBuilder b(&getContext());
    getOperation().walk([&](Block *block) {
      for (auto &run : runsOf<dist::SendPiecesOp>(*block))
        lowerSends(b, run);
      for (auto &run : runsOf<dist::RecvPiecesOp>(*block))
        lowerRecvs(b, run);
    });
  }
};

} // namespace
