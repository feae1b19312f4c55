//===- BlockOps.h - blocks of local tensors: slice and join ----*- C++ -*-===//
//
// The ONNX ops that cut a block out of a tensor and join blocks back, along
// one dimension viewed as `outer` equal chunks (a batch that is the outer
// factor of a merged dimension, such as N*H). Shared by hetpar-dist-localize
// (PartitionLayouts.cpp) and hetpar-dist-lower-exchanges. Private to
// lib/Transforms.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_TRANSFORMS_BLOCKOPS_H
#define HETPAR_LIB_TRANSFORMS_BLOCKOPS_H

#include "mlir/IR/Builders.h"

namespace hetpar::blocks {

/// An int64 vector constant (onnx.Constant): shapes, starts, axes.
mlir::Value i64Constant(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::ArrayRef<int64_t> values);

/// `x` reshaped to `shape` (x itself when it has that shape).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      llvm::ArrayRef<int64_t> shape);

/// `shape` with dimension `dim` cut into `outer` chunks: [.., outer,
/// n / outer, ..].
llvm::SmallVector<int64_t> chunked(llvm::ArrayRef<int64_t> shape, int dim,
                                   int64_t outer);

/// Indices [start, start + size) of every one of the `outer` chunks of
/// dimension `dim` of `x` (a static tensor whose extent `outer` divides):
/// `x` itself when that is all of it, a sliced constant when `x` is one
/// (each device's program holds only its shard), else onnx.Slice (through a
/// Reshape when outer > 1). Result extent along `dim`: outer * size.
mlir::Value sliceBlock(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       int dim, int64_t outer, int64_t start, int64_t size);

/// `pieces` (same type but along `dim`) joined along `dim`, chunk by chunk:
/// chunk c of the result is chunk c of each piece in order. One piece is
/// returned as it is.
mlir::Value concatBlocks(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::ArrayRef<mlir::Value> pieces, int dim,
                         int64_t outer);

} // namespace hetpar::blocks

#endif // HETPAR_LIB_TRANSFORMS_BLOCKOPS_H
