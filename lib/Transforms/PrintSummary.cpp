//===- PrintSummary.cpp - hetpar-onnx-print-summary
//-------------------------===//
#include "hetpar/Analysis/ModelSummary.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace hetpar {
#define GEN_PASS_DEF_PRINTSUMMARYPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;

namespace {
struct PrintSummaryPass
    : public hetpar::impl::PrintSummaryPassBase<PrintSummaryPass> {
  using Base::Base;

  void runOnOperation() override {
    std::string error;
    auto file = openOutputFile(output, &error);
    if (!file) {
      getOperation().emitError() << "cannot open '" << output << "': " << error;
      return signalPassFailure();
    }
    getOperation().walk([&](func::FuncOp func) {
      if (!func.isExternal())
        hetpar::printModelSummary(hetpar::summarizeFunction(func), file->os());
    });
    file->keep();
    markAllAnalysesPreserved();
  }
};
} // namespace
