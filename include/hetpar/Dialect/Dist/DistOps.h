//===- DistOps.h - the dist dialect -------------------------------*- C++
//-*-===//
//
// Device meshes with device identity, uneven shardings, collectives over
// explicit device groups, pipeline stages and transfers (DistOps.td).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_DIST_DISTOPS_H
#define HETPAR_DIALECT_DIST_DISTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "hetpar/Dialect/Dist/DistDialect.h.inc"
#include "hetpar/Dialect/Dist/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "hetpar/Dialect/Dist/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "hetpar/Dialect/Dist/DistOps.h.inc"

namespace hetpar::dist {
/// Module attribute: the plan (#dist.plan) that hetpar-dist-partition
/// applies.
inline constexpr llvm::StringLiteral kPlanAttrName = "dist.plan";
/// Op attribute of a planned module: the index of the op's pipeline stage in
/// the plan (a non-negative integer).
inline constexpr llvm::StringLiteral kStageIdAttrName = "dist.stage_id";
/// Op attribute of a planned module: the op's tensor-parallel split
/// (#dist.op_sharding).
inline constexpr llvm::StringLiteral kOpShardingAttrName = "dist.op_sharding";
/// The name of the function attribute that marks a per-device function
/// (local form) with its device id.
inline constexpr llvm::StringLiteral kDeviceAttrName = "dist.device";
/// Module attribute: microbatches per step (the runtime runs each device's
/// function once per microbatch).
inline constexpr llvm::StringLiteral kMicrobatchesAttrName =
    "dist.microbatches";
/// Module attribute of a partitioned module: the graph's inputs in graph
/// order, an array of #dist.graph_input (the manifest's "graph_inputs").
inline constexpr llvm::StringLiteral kGraphInputsAttrName = "dist.graph_inputs";
/// Argument / result attribute of a per-device function: the dimension of
/// the batch (microbatches are cut and joined along it).
inline constexpr llvm::StringLiteral kBatchDimAttrName = "dist.batch_dim";
/// dist.batch_dim on an argument of the model function (hetpar-compile
/// --batch-dim NAME=none): the input holds no batch, whatever its extents
/// (a table every sample reads), so every device takes it whole.
inline constexpr int64_t kNoBatchDim = -1;
/// The tag of the message that carries a transfer's gradient back (the
/// backward of a pipeline's `dist.send`/`dist.recv` of tag t) is t plus this
/// offset; forward tags stay below it. 2^14 keeps every tag within 32767,
/// the least MPI_TAG_UB the MPI standard allows.
inline constexpr int64_t kGradientTagOffset = int64_t(1) << 14;
/// The tag of the message that brings the step's loss from the last stage of
/// a pipeline to the devices of earlier stages (hetpar-dist-reduce-gradients);
/// the partition's forward tags stay below it.
inline constexpr int64_t kLossTag = kGradientTagOffset - 1;
/// The default largest bucket of gradients that one data-parallel collective
/// reduces, in MiB: PyTorch DistributedDataParallel's bucket_cap_mb (25).
/// hetpar-dist-reduce-gradients' bucket-mib and hetpar-compile's --bucket-mib
/// default to it; the simulator counts ZeRO-2's packing buffer with it.
inline constexpr double kGradientBucketMiB = 25.0;
/// The largest tag a dist.send or dist.recv may carry: 32767, the least
/// MPI_TAG_UB the MPI standard allows (MPI 4.0, section 3.2.3).
inline constexpr int64_t kMaxTag = (int64_t(1) << 15) - 1;

/// The runs of `pieces` (a dist.recv_pieces's, in order): consecutive
/// pieces of one batch_start, which lie side by side along split_dim; the
/// runs lie one after another along batch_dim. The one reading of the
/// tiling for the op's verifier and hetpar-dist-lower-exchanges' joins.
llvm::SmallVector<llvm::ArrayRef<ExchangePieceAttr>>
pieceRuns(llvm::ArrayRef<ExchangePieceAttr> pieces);

} // namespace hetpar::dist

#endif // HETPAR_DIALECT_DIST_DISTOPS_H
