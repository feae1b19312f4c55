//===- Passes.h - HetPar passes on the onnx dialect ---------------*- C++
//-*-===//
#ifndef HETPAR_TRANSFORMS_PASSES_H
#define HETPAR_TRANSFORMS_PASSES_H

#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <memory>
#include <string>
#include <vector>

namespace hetpar {

#define GEN_PASS_DECL
#include "hetpar/Transforms/Passes.h.inc"

/// Options of the `hetpar-onnx-to-static` pipeline.
struct ToStaticPipelineOptions
    : public mlir::PassPipelineOptions<ToStaticPipelineOptions> {
  ListOption<std::string> inputShapes{
      *this, "input-shapes",
      llvm::cl::desc("Input shapes as NAME=DxDx... (comma-separated list)")};
  Option<bool> verifyStatic{
      *this, "verify-static",
      llvm::cl::desc("Fail unless every tensor ends up static"),
      llvm::cl::init(true)};
  Option<bool> keepInitializers{
      *this, "keep-initializers",
      llvm::cl::desc("Keep initializers of equal value apart (no constant "
                     "CSE): each stays the parameter it is when a training "
                     "step is built from the static model"),
      llvm::cl::init(false)};
};

/// The pipeline that makes an imported model fully static: set input shapes,
/// infer shapes while folding shape computations, remove Identity/inference
/// Dropout, canonicalize, infer again, and (optionally) verify that no dynamic
/// tensor is left.
void buildToStaticPipeline(mlir::OpPassManager &pm,
                           const ToStaticPipelineOptions &options);

/// The `hetpar-dist-global-form` pipeline: a model annotated with a plan
/// into the dist dialect's global form (hetpar-dist-introduce-transfers, then
/// hetpar-dist-apply-plan), which hetpar-dist-partition takes.
void buildGlobalFormPipeline(mlir::OpPassManager &pm);

/// Options of the `hetpar-dist-partition` pipeline (hetpar-dist-localize's).
struct PartitionPipelineOptions
    : public mlir::PassPipelineOptions<PartitionPipelineOptions> {
  Option<bool> localIo{
      *this, "local-io",
      llvm::cl::desc("Each device's inputs are its replica's rows of the "
                     "microbatch and it returns its own values of the "
                     "outputs (no gather at a root): the per-device form a "
                     "training step is built from"),
      llvm::cl::init(false)};
};

/// The `hetpar-dist-partition` pipeline: a model in the global form into one
/// function per device in the local form (hetpar-dist-localize, then
/// hetpar-dist-lower-exchanges).
void buildPartitionPipeline(mlir::OpPassManager &pm,
                            const PartitionPipelineOptions &options);

/// What is wrong with hetpar-train-optimizer's options (an unknown optimizer
/// or schedule, a learning rate, betas, eps, momentum, clipping, warm-up or
/// accumulation out of range), as "unknown optimizer 'x' (adamw, sgd,
/// none)"; "" when they are valid. The pass and hetpar-compile's planner
/// (which reads the optimizer's state) check with it.
std::string trainOptimizerOptionsError(const TrainOptimizerPassOptions &o);

/// Registers every mechanism pass and pipeline of this library with the
/// global registry (for hetpar-opt and plugins); the search's passes register
/// with hetpar::registerHetParSearchPasses (hetpar/Search/Passes.h).
void registerAllHetParPasses();

#define GEN_PASS_REGISTRATION
#include "hetpar/Transforms/Passes.h.inc"

} // namespace hetpar

#endif // HETPAR_TRANSFORMS_PASSES_H
