//===- VerifyStaticShapes.cpp - hetpar-onnx-verify-static -----------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MathExtras.h"

namespace hetpar {
#define GEN_PASS_DEF_VERIFYSTATICSHAPESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
bool isDynamicTensor(Type t) {
  auto st = llvm::dyn_cast<ShapedType>(t);
  return st && !st.hasStaticShape();
}

/// Whether a static tensor type exceedsMaxTensorBytes (ShapeUtils.h; a
/// dynamic one is this pass's other error).
bool isOversized(Type t) {
  auto st = llvm::dyn_cast<ShapedType>(t);
  return st && st.hasStaticShape() && exceedsMaxTensorBytes(t);
}

/// Reports tensors over kMaxTensorBytes: inputs by name, and among ops only
/// those where the size starts (no operand over it). Returns false if any.
bool verifyTensorSizes(ModuleOp module) {
  bool ok = true;
  module.walk([&](func::FuncOp func) {
    for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
      if (!isOversized(arg.getType()))
        continue;
      emitError(arg.getLoc())
          << "input '" << onnx::graphInputName(func, i) << "' of type "
          << arg.getType() << " " << oversizeReason(arg.getType());
      ok = false;
    }
  });
  module.walk([&](Operation *op) {
    if (llvm::none_of(op->getResultTypes(), isOversized) ||
        llvm::any_of(op->getOperandTypes(), isOversized))
      return;
    Type big = *llvm::find_if(op->getResultTypes(), isOversized);
    op->emitError() << onnx::describeNode(op) << " has a result of type " << big
                    << " that " << oversizeReason(big);
    ok = false;
  });
  return ok;
}

/// Why a shape is not static: a function argument whose *values* flow into the
/// op's shape operands, or else the first op of that computation that did not
/// fold although its operands are constants.
struct Cause {
  BlockArgument input;
  Operation *unfolded = nullptr;
};

/// The operands whose values an op's shape rule reads: all of them for ops with
/// one operand (ConstantOfShape, NonZero) and for Range; for every other op the
/// first operand is the data and the rest (Reshape's shape, Slice's
/// starts/ends, Expand's shape, TopK's K, Resize's scales) decide the shape.
SmallVector<Value> shapeOperands(Operation *op) {
  // An If's result shape depends on which branch runs.
  if (auto generic = llvm::dyn_cast<onnx::GenericOp>(op);
      generic && generic.isIf())
    return {generic.getInputs()[0]};
  if (op->getNumOperands() <= 1 || llvm::isa<onnx::RangeOp>(op))
    return SmallVector<Value>(op->getOperands());
  return SmallVector<Value>(op->getOperands().drop_front());
}

Cause findCause(Operation *op) {
  SmallVector<Value> work = shapeOperands(op);
  llvm::SmallPtrSet<Value, 16> seen;
  Cause cause;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      cause.input = arg;
      return cause;
    }
    Operation *def = v.getDefiningOp();
    // Constants end the search; Shape and Size read only their operand's shape.
    if (!def || matchPattern(v, m_Constant()) ||
        llvm::isa<onnx::ShapeOp, onnx::SizeOp>(def))
      continue;
    if (!cause.unfolded && llvm::all_of(def->getOperands(), [](Value o) {
          return matchPattern(o, m_Constant());
        }))
      cause.unfolded = def;
    llvm::append_range(work, def->getOperands());
  }
  return cause;
}

struct VerifyStaticShapesPass
    : public hetpar::impl::VerifyStaticShapesPassBase<VerifyStaticShapesPass> {
  void runOnOperation() override {
    bool ok = true;
    getOperation().walk([&](func::FuncOp func) {
      for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
        if (!isDynamicTensor(arg.getType()))
          continue;
        emitError(arg.getLoc()) << "input '" << onnx::graphInputName(func, i)
                                << "' has dynamic type " << arg.getType()
                                << "; give its shape with --input-shape";
        ok = false;
      }
    });
    if (!ok)
      return signalPassFailure();
    // Report only where dynamism starts: an op with a dynamic result whose
    // operands are all static. Ops downstream of it inherit the problem.
    getOperation().walk([&](Operation *op) {
      if (llvm::none_of(op->getResultTypes(), isDynamicTensor) ||
          llvm::any_of(op->getOperandTypes(), isDynamicTensor))
        return;
      Type dynamic = *llvm::find_if(op->getResultTypes(), isDynamicTensor);
      auto diag = op->emitError()
                  << onnx::describeNode(op) << " has a result of dynamic type "
                  << dynamic;
      auto generic = llvm::dyn_cast<onnx::GenericOp>(op);
      Cause cause = findCause(op);
      if (generic && !(generic.isIf() && cause.input)) {
        diag << ": unsupported op " << onnx::getONNXOpType(op)
             << " (HetPar cannot infer its shapes)";
      } else if (cause.input) {
        auto func =
            llvm::dyn_cast<func::FuncOp>(cause.input.getOwner()->getParentOp());
        diag << ": the shape depends on the values of input '"
             << (func ? onnx::graphInputName(func, cause.input.getArgNumber())
                      : std::string("?"))
             << "', which HetPar does not support (shapes must follow from "
                "the input shapes)";
      } else if (cause.unfolded) {
        diag << ": its shape is computed by "
             << onnx::describeNode(cause.unfolded)
             << ", which HetPar could not fold";
      }
      ok = false;
    });
    if (!ok || !verifyTensorSizes(getOperation()))
      signalPassFailure();
  }
};
} // namespace
