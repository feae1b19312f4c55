//===- TraceSpans.h - Spans of a training step's measured timeline -*- C++
//-*-===//
//
// hetpar-run --train --trace records when each span of a training step's
// generated code starts (ProgramABI.h, "Trace"). A span is a run of
// consecutive emitted ops of one category; this analysis gives each op its
// category from the step's dataflow. Private to lib/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_TRACESPANS_H
#define HETPAR_LIB_CODEGEN_TRACESPANS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <string>

namespace hetpar::codegen {

/// What a span of the timeline does.
enum class TraceCategory { Forward, Backward, Optimizer, Collective, Transfer };

llvm::StringRef traceCategoryName(TraceCategory c);

/// The span an op belongs to: its category and its pipeline microbatch
/// (train::kMicrobatchIndexAttr, or for forward and backward ops without
/// it, the latest of its operands'; -1 outside one). Transfers keep -1, so that
/// a pipeline's exchange step (the sends ending one slot and the receives
/// starting the next) stays one span, as it is one grouped exchange.
struct TraceSpanKey {
  TraceCategory category = TraceCategory::Forward;
  int64_t microbatch = -1;
  bool operator==(const TraceSpanKey &o) const {
    return category == o.category && microbatch == o.microbatch;
  }
  bool operator!=(const TraceSpanKey &o) const { return !(*this == o); }
};

/// The phases of a training step, from its dataflow:
///   - forward: what the step's results (the loss) and its forward sends
///     (dist.send tags below dist::kGradientTagOffset) are computed from;
///   - backward: the rest of what the optimizer's gradient operands, the
///     gradient sends and the collectives marked train::kBackwardAttr are
///     computed from (gradient clipping's norm included);
///   - optimizer: what reads the optimizer's state (a global of role
///     "optimizer" or "step": moments, momentum, gradient accumulation, the
///     step counter; the accumulation's microbatch counter), and everything
///     else (the stores of the new parameters and state).
/// A forward op of pipeline microbatch k placed after k's backward part
/// began (the weighted loss's running sum) counts as backward.
/// dist collectives are Collective, dist.send/recv Transfer, whatever their
/// phase. Empty (enabled() false) for a function that stores no global: an
/// inference or evaluation program.
class TraceSpans {
public:
  explicit TraceSpans(mlir::func::FuncOp func);
  bool enabled() const { return isTrainingStep; }
  TraceSpanKey keyOf(mlir::Operation *op) const;

private:
  bool isTrainingStep = false;
  int64_t microbatchOfOp(mlir::Operation *op, TraceCategory phase) const;
  llvm::DenseMap<mlir::Operation *, TraceCategory> phaseOf;
  llvm::DenseMap<mlir::Operation *, int64_t> microbatchOf;
};

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_TRACESPANS_H
