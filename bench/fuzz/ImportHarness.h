//===- ImportHarness.h - What the ONNX harnesses share ----------*- C++ -*-===//
//
// Import through static shapes, as `hetpar-compile` runs it before planning:
// the importer from memory (no external data read), then the
// hetpar-onnx-to-static pipeline with its static check. Diagnostics are
// swallowed: a rejected model is a normal outcome, a crash is the finding.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_BENCH_FUZZ_IMPORTHARNESS_H
#define HETPAR_BENCH_FUZZ_IMPORTHARNESS_H

#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace hetpar::fuzz {

/// The harness's context. A context keeps every type and attribute it has
/// uniqued, so a new one every 256 inputs bounds the harness's memory.
inline mlir::MLIRContext &context() {
  static std::unique_ptr<mlir::MLIRContext> ctx;
  static unsigned uses = 0;
  if (!ctx || ++uses % 256 == 0) {
    mlir::DialectRegistry registry;
    hetpar::registerImportDialects(registry);
    ctx = std::make_unique<mlir::MLIRContext>(
        registry, mlir::MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
  }
  return *ctx;
}

/// Imports `bytes` (binary ONNX) and makes the module static; null when
/// either step rejects the model.
inline mlir::OwningOpRef<mlir::ModuleOp> importToStatic(llvm::StringRef bytes) {
  mlir::MLIRContext &ctx = context();
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  hetpar::ONNXImportOptions options;
  options.loadExternalData = false;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      hetpar::importONNXModelFromBuffer(bytes, "fuzz.onnx", &ctx, options);
  if (!module)
    return nullptr;
  mlir::PassManager pm(&ctx);
  hetpar::ToStaticPipelineOptions staticOptions;
  staticOptions.verifyStatic = true;
  hetpar::buildToStaticPipeline(pm, staticOptions);
  if (mlir::failed(pm.run(*module)))
    return nullptr;
  return module;
}

} // namespace hetpar::fuzz

#endif // HETPAR_BENCH_FUZZ_IMPORTHARNESS_H
