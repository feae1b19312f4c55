//===- ExchangeSteps.cpp - what one exchange step of a program is ---------===//
//
// ExchangeSteps.h has the definition.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/Dist/ExchangeSteps.h"

using namespace mlir;
using namespace hetpar::dist;

/// Whether `send` sends a buffer that one of `receives` fills.
static bool sendsReceivedBuffer(SendOp send, ArrayRef<RecvOp> receives,
                                function_ref<Value(Value)> buffer) {
  Value sent = buffer(send.getInput());
  return llvm::any_of(
      receives, [&](RecvOp recv) { return buffer(recv.getResult()) == sent; });
}

SmallVector<SmallVector<Operation *>>
hetpar::dist::exchangeSteps(ArrayRef<Operation *> ops,
                            function_ref<bool(Operation *)> runsInPlace,
                            function_ref<Value(Value)> buffer) {
  SmallVector<SmallVector<Operation *>> steps;
  bool open = false;
  SmallVector<RecvOp> receives; // the open step's
  for (Operation *op : ops) {
    if (!isa<SendOp, RecvOp>(op)) {
      if (runsInPlace(op))
        open = false;
      continue;
    }
    auto send = dyn_cast<SendOp>(op);
    if (open && send && sendsReceivedBuffer(send, receives, buffer))
      open = false;
    if (!open) {
      steps.emplace_back();
      receives.clear();
      open = true;
    }
    steps.back().push_back(op);
    if (auto recv = dyn_cast<RecvOp>(op))
      receives.push_back(recv);
  }
  return steps;
}
