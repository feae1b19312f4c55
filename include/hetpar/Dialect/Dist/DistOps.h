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

#define GET_ATTRDEF_CLASSES
#include "hetpar/Dialect/Dist/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "hetpar/Dialect/Dist/DistOps.h.inc"

namespace hetpar::dist {
/// The name of the function attribute that marks a per-device function
/// (local form) with its device id.
inline constexpr llvm::StringLiteral kDeviceAttrName = "dist.device";
/// Module attribute: microbatches per step (the runtime runs each device's
/// function once per microbatch).
inline constexpr llvm::StringLiteral kMicrobatchesAttrName =
    "dist.microbatches";
/// Argument / result attribute of a per-device function: the dimension of
/// the batch (microbatches are cut and joined along it).
inline constexpr llvm::StringLiteral kBatchDimAttrName = "dist.batch_dim";
} // namespace hetpar::dist

#endif // HETPAR_DIALECT_DIST_DISTOPS_H
