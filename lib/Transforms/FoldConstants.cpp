//===- FoldConstants.cpp - hetpar-onnx-fold-constants
//-----------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hetpar {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;

namespace {
struct FoldConstantsPass
    : public hetpar::impl::FoldConstantsPassBase<FoldConstantsPass> {
  void runOnOperation() override {
    // No patterns: the driver only folds (through the ops' folders), removes
    // dead ops and deduplicates constants.
    RewritePatternSet patterns(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      getOperation()->emitWarning() << "constant folding did not converge";
  }
};
} // namespace
