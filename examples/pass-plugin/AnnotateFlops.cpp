//===- AnnotateFlops.cpp - an example of a user's own HetPar pass ---------===//
//
// `example-annotate-flops` (in hetpar-opt's --pass-pipeline) attaches
// `example.flops = N : i64` to every op whose FLOP count is known, reading it
// through HetPar's FlopCountOpInterface, and an `example.total_flops` to each
// function. It shows the three pieces of a plugin: a pass over HetPar's
// dialect, its registration, and the plugin entry point, which also registers a
// cost model (CongestedNetwork.cpp) that hetpar-compile --load-pass-plugin ...
// --cost-model example-congested uses.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

namespace {
struct AnnotateFlopsPass
    : public PassWrapper<AnnotateFlopsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AnnotateFlopsPass)

  StringRef getArgument() const final { return "example-annotate-flops"; }
  StringRef getDescription() const final {
    return "Annotate each op with its FLOP count (example plugin)";
  }

  void runOnOperation() override {
    Builder b(&getContext());
    int64_t total = 0;
    getOperation().walk([&](hetpar::onnx::FlopCountOpInterface op) {
      if (std::optional<int64_t> flops = op.getFlopCount()) {
        op->setAttr("example.flops", b.getI64IntegerAttr(*flops));
        total += *flops;
      }
    });
    getOperation()->setAttr("example.total_flops", b.getI64IntegerAttr(total));
  }
};
} // namespace

void registerExampleCostModel(); // CongestedNetwork.cpp

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "HetParExamplePlugin", LLVM_VERSION_STRING,
          []() {
            PassRegistration<AnnotateFlopsPass>();
            registerExampleCostModel();
          }};
}
