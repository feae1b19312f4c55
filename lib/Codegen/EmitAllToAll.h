//===- EmitAllToAll.h - dist.all_to_all ------------------------*- C++ -*-===//
//
// Code generation of dist.all_to_all: one hp_all_to_all_along call, which
// packs the pieces of the operand and unpacks those of the result where they
// are not contiguous. Private to lib/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITALLTOALL_H
#define HETPAR_LIB_CODEGEN_EMITALLTOALL_H

#include "EmitContext.h"

#include "hetpar/Dialect/Dist/DistOps.h"

namespace hetpar::codegen {

/// The operand seen as [outer, extent, inner] around its split dimension and
/// the result around its concat dimension (element counts), and the
/// elements of arena staging each side needs: none where the outer extent
/// is 1 (every device's piece is contiguous already).
struct AllToAllStaging {
  int64_t inOuter, inExtent, inInner;
  int64_t outOuter, outExtent, outInner;
  int64_t sendElements() const {
    return inOuter > 1 ? inOuter * inExtent * inInner : 0;
  }
  int64_t recvElements() const {
    return outOuter > 1 ? outOuter * outExtent * outInner : 0;
  }
  int64_t total() const { return sendElements() + recvElements(); }
};

/// The staging of a verified all_to_all with static shapes.
AllToAllStaging allToAllStaging(dist::AllToAllOp op);

/// Declares the op's piece sizes (in C, through ctx.line) and returns the
/// call expression of hp_all_to_all_along over the group `group` of `n`
/// devices (C expressions already declared), its staging in the op's
/// arena scratch (ctx.scratch, allToAllStaging(op).total() elements).
std::string emitAllToAllCall(dist::AllToAllOp op, llvm::StringRef group,
                             llvm::StringRef n, const LibraryEmitContext &ctx);

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITALLTOALL_H
