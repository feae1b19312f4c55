//===- ShapeUtils.h - shape arithmetic shared by the dialects ----*- C++
//-*-===//
//
// Small helpers over static/dynamic shapes (mlir::ShapedType::kDynamic marks an
// unknown extent) and over constant operand values.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SUPPORT_SHAPEUTILS_H
#define HETPAR_SUPPORT_SHAPEUTILS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// True when `d` is an unknown extent.
inline bool isDynamic(int64_t d) { return mlir::ShapedType::isDynamic(d); }

/// Multidirectional (numpy) broadcast of two shapes, aligned at the last
/// dimension. A dynamic extent against a static one other than 1 gives the
/// static one (the dynamic one must be equal or 1 at run time); against 1 or
/// dynamic it stays dynamic. Returns std::nullopt when two static extents
/// differ and neither is 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Unidirectional broadcast: can `from` be broadcast to `to` (numpy rules, `to`
/// unchanged)? Dynamic extents are assumed compatible.
bool isUnidirectionalBroadcastable(llvm::ArrayRef<int64_t> from,
                                   llvm::ArrayRef<int64_t> to);

/// Maps an axis in [-rank, rank) to [0, rank); std::nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Product of the extents; std::nullopt when one is dynamic or the product
/// overflows int64.
std::optional<int64_t> getNumElements(llvm::ArrayRef<int64_t> shape);

/// The most bytes one tensor may hold: 2^53 (8 PiB). Byte counts up to it are
/// exact in the cost model's doubles and leave int64 headroom for the offset
/// arithmetic of the partition and codegen; no cluster comes near it (128
/// nodes of 8 H100 80 GB hold 2^46 bytes).
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 53;

/// Whether a tensor type spans more than kMaxTensorBytes whatever its unknown
/// extents are: its element size (8 bytes for elements that are not integers
/// or floats) times its static extents, counted without overflow, an empty
/// or dynamic dimension counted as 1 (the strides of the code that indexes
/// an empty tensor multiply the other extents all the same: a [.., 0,
/// 309759729, 2^63 - 1] tensor overflowed in code generation; found by the
/// onnx-mutate fuzzer). False for other types. The one size check of the
/// importer's graph inputs and of hetpar-onnx-verify-static.
bool exceedsMaxTensorBytes(mlir::Type t);

/// Why a type that exceedsMaxTensorBytes does, for messages: "holds more
/// than 2^53 bytes (8 PiB)" and what its empty or unknown extents change,
/// then ", the most HetPar plans for one tensor".
std::string oversizeReason(mlir::Type t);

/// "2x3x?" ("scalar" for rank 0), as in MLIR's tensor type syntax.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The values of a constant integer tensor operand (any integer element type,
/// sign-extended), or std::nullopt when `v` is not produced by a constant-like
/// op.
std::optional<llvm::SmallVector<int64_t>> getConstantIntValues(mlir::Value v);

/// The constant attribute of `v` when it is produced by a constant-like op.
mlir::ElementsAttr getConstantElements(mlir::Value v);

/// The raw bytes of a constant (little-endian, bool one byte per element), or
/// failure when a dense_resource blob is missing or shorter than the type.
mlir::FailureOr<std::vector<char>> getElementsBytes(mlir::ElementsAttr attr);

/// Indices [start, start + size) of each of `outer` equal chunks of dimension
/// `dim` of a constant (a weight's shard): the result has `outer * size`
/// indices along `dim`. Fails when the range is outside the chunk or the data
/// is missing. Large results are dense_resource blobs (no uniquing cost).
mlir::FailureOr<mlir::ElementsAttr> sliceElements(mlir::ElementsAttr attr,
                                                  int dim, int64_t outer,
                                                  int64_t start, int64_t size);

/// Reads every element of an integer ElementsAttr (dense or dense_resource) as
/// int64.
std::optional<llvm::SmallVector<int64_t>>
readIntElements(mlir::ElementsAttr attr);

/// Reads every element of a floating-point or integer ElementsAttr as double.
std::optional<llvm::SmallVector<double>>
readFloatElements(mlir::ElementsAttr attr);

/// Whether a floating-point ElementsAttr (dense or dense_resource) holds an
/// infinity or a NaN, read in place (no copy of a large initializer); false
/// for other element types or a missing blob.
bool hasNonFiniteElements(mlir::ElementsAttr attr);

/// The more refined of two types known to describe the same value (static
/// extents win over dynamic ones, ranked over unranked); fails when they
/// disagree (element type, rank or a static extent).
mlir::FailureOr<mlir::Type> refineType(mlir::Type a, mlir::Type b);

/// Parses an input shape spec "NAME=2x128" (also "NAME=2,128"; "?" keeps
/// a dimension dynamic; "NAME=" is a scalar). The error names what is wrong.
llvm::Expected<std::pair<std::string, llvm::SmallVector<int64_t>>>
parseInputShapeSpec(llvm::StringRef spec);

} // namespace hetpar

#endif // HETPAR_SUPPORT_SHAPEUTILS_H
