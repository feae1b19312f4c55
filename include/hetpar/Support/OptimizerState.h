//===- OptimizerState.h - the optimizer's state per parameter --*- C++ -*-===//
//
// One choice, made once (hetpar-compile's --optimizer and --momentum), says
// how much state a training step keeps per parameter element: AdamW's first
// and second moments (2 float32 slots), SGD's momentum buffer (1 slot, only
// with --momentum > 0), none for plain SGD or --optimizer none. The training
// passes create those slots (hetpar-train-optimizer); the planner reads the
// same choice from the module attribute `hetpar.optimizer_state_slots`, so
// the search and the simulator count the memory the programs hold.
//
// Units: bytes.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SUPPORT_OPTIMIZERSTATE_H
#define HETPAR_SUPPORT_OPTIMIZERSTATE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>

namespace hetpar {

/// The module attribute holding the number of float32 state slots per
/// parameter element (an i64 from 0 to kMaxOptimizerStateSlots); AdamW's 2
/// when absent, the training default.
inline constexpr llvm::StringLiteral kOptimizerStateSlotsAttrName =
    "hetpar.optimizer_state_slots";
/// AdamW's two moments: the most any optimizer of hetpar-train-optimizer
/// keeps, and the default.
inline constexpr int64_t kMaxOptimizerStateSlots = 2;
/// Bytes of one slot per parameter element: the state is float32 in every
/// compute dtype (hetpar-train-optimizer; mixed precision keeps it so), as in
/// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
/// Parameter Models" (SC 2020), section 3.1.
inline constexpr double kOptimizerSlotBytes = 4;
/// Bytes of the float32 master copy of a parameter held in a 16-bit type (the
/// same section), which float32 parameters do not need: they are their own
/// master copy, as in the programs hetpar-compile writes. With AdamW, a
/// parameter takes 2 + 2 + 8 + 4 = 16 bytes with a 16-bit dtype (ZeRO's
/// mixed-precision Adam, K = 12) and 4 + 4 + 8 = 16 in float32, counting the
/// weight and its gradient in the compute dtype.
inline constexpr double kMasterCopyBytes = 4;

/// The slots of `optimizer` ("adamw", "sgd", "none") with SGD momentum
/// `momentum`: 2, 1 (sgd with momentum > 0) or 0; std::nullopt for another
/// name.
std::optional<int64_t> optimizerStateSlots(llvm::StringRef optimizer,
                                           double momentum);

/// Writes `slots` onto `module`.
void setOptimizerStateSlots(mlir::ModuleOp module, int64_t slots);

/// The slots of the module that is or holds `op`: kMaxOptimizerStateSlots
/// when the attribute is absent (or `op` is in no module); std::nullopt when
/// it is there but not an integer from 0 to kMaxOptimizerStateSlots.
std::optional<int64_t> getOptimizerStateSlots(mlir::Operation *op);

} // namespace hetpar

#endif // HETPAR_SUPPORT_OPTIMIZERSTATE_H
