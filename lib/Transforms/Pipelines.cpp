//===- Pipelines.cpp - pass pipelines and registration
//---------------------===//
#include "hetpar/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void hetpar::buildToStaticPipeline(OpPassManager &pm,
                                   const ToStaticPipelineOptions &options) {
  if (!options.inputShapes.empty()) {
    SetInputShapesPassOptions shapes;
    shapes.shapes = llvm::to_vector(options.inputShapes);
    pm.addPass(createSetInputShapesPass(shapes));
  }
  pm.addNestedPass<func::FuncOp>(createInferShapesPass());
  pm.addNestedPass<func::FuncOp>(createDecomposeRecurrencePass());
  pm.addNestedPass<func::FuncOp>(createEraseIdentityPass());
  GreedyRewriteConfig config;
  // Keeping initializers: no folding either (a Transpose of a weight would
  // become an unnamed constant); hetpar-onnx-infer-shapes folds the rest.
  config.enableConstantCSE(!options.keepInitializers);
  config.enableFolding(!options.keepInitializers);
  pm.addPass(createCanonicalizerPass(config));
  // Canonicalization can expose more folding; a second sweep settles the types.
  pm.addNestedPass<func::FuncOp>(createInferShapesPass());
  pm.addPass(createSymbolDCEPass());
  if (options.verifyStatic)
    pm.addPass(createVerifyStaticShapesPass());
}

void hetpar::buildGlobalFormPipeline(OpPassManager &pm) {
  pm.addPass(createDistIntroduceTransfersPass());
  pm.addPass(createDistApplyPlanPass());
}

void hetpar::buildPartitionPipeline(OpPassManager &pm,
                                    const PartitionPipelineOptions &options) {
  DistLocalizePassOptions localize;
  localize.localIo = options.localIo;
  pm.addPass(createDistLocalizePass(localize));
  pm.addPass(createDistLowerExchangesPass());
}

void hetpar::registerAllHetParPasses() {
  registerHetParPasses();
  PassPipelineRegistration<ToStaticPipelineOptions>(
      "hetpar-onnx-to-static",
      "Make an imported model fully static: input shapes, shape inference with "
      "folding, LSTM/GRU/RNN unrolling, Identity/Dropout removal, "
      "canonicalization, static check",
      buildToStaticPipeline);
  PassPipelineRegistration<>(
      "hetpar-dist-global-form",
      "Put a model annotated with a plan into the dist dialect's global form: "
      "a dist.transfer per value between stages, a dist.stage per stage",
      buildGlobalFormPipeline);
  PassPipelineRegistration<PartitionPipelineOptions>(
      "hetpar-dist-partition",
      "Split a model in the global form into one function per device (dist "
      "local form): hetpar-dist-localize, then hetpar-dist-lower-exchanges",
      buildPartitionPipeline);
}
