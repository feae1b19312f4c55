//===- ExchangeSteps.h - what one exchange step of a program is -*- C++ -*-===//
//
// The one definition of an exchange step: the dist.send and dist.recv ops of
// a per-device function that the runtime posts together and then waits for
// together (hp_exchange_send / hp_exchange_recv ... hp_exchange_end). The
// code generator emits its steps from it, plans buffer lifetimes with it, and
// hetpar-dist-verify-exchanges checks the steps it gives for deadlocks.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_DIST_EXCHANGESTEPS_H
#define HETPAR_DIALECT_DIST_EXCHANGESTEPS_H

#include "hetpar/Dialect/Dist/DistOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace hetpar::dist {

/// The exchange steps of `ops` (one function's ops in program order), each
/// the sends and receives of one step in program order; every send and
/// receive of `ops` is in exactly one step. A step is a run of dist.send and
/// dist.recv ops with no op between them that runs code where it stands,
/// except that a send of a buffer one of the run's receives fills begins a
/// new step (posted in the same step, it would read the buffer before the
/// receive has filled it).
///
/// `runsInPlace(op)`: whether op runs code where it stands (a constant does
/// not; nor, in the code generator, a view, which aliases its input, or an op
/// fused into a later one). `buffer(v)`: the value whose buffer holds v (v,
/// or the value a view of v aliases).
///
/// The code generator passes its views, fusions and aliases;
/// hetpar-dist-verify-exchanges passes "every op but a constant or a view
/// (onnx::isView) runs in place, a view's buffer is its root's". The
/// verifier's steps are then the code generator's or finer (finer where an
/// op fuses into a later one), never coarser. A finer step posts no message
/// earlier, so a program the verifier finds free of deadlocks stays free of
/// them as generated.
llvm::SmallVector<llvm::SmallVector<mlir::Operation *>>
exchangeSteps(llvm::ArrayRef<mlir::Operation *> ops,
              llvm::function_ref<bool(mlir::Operation *)> runsInPlace,
              llvm::function_ref<mlir::Value(mlir::Value)> buffer);

} // namespace hetpar::dist

#endif // HETPAR_DIALECT_DIST_EXCHANGESTEPS_H
