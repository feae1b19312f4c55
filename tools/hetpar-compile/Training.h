//===- Training.h - hetpar-compile --mode training ----------------*- C++
//-*-===//
#ifndef HETPAR_TOOLS_COMPILE_TRAINING_H
#define HETPAR_TOOLS_COMPILE_TRAINING_H

#include "hetpar/Codegen/Codegen.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace hetpar::tools {

/// Adds the passes that turn the imported module (initializers marked) into
/// one training step, per the --loss/--optimizer/... flags: lift parameters,
/// make static (`toStatic`), attach the loss, 16-bit compute when `dtype` is
/// F16 or BF16 (float32 master weights), differentiate, apply the optimizer,
/// clean up.
void buildTrainingPipeline(
    mlir::OpPassManager &pm, codegen::FloatMode dtype,
    const std::function<void(mlir::OpPassManager &)> &toStatic);

/// The category of the training flags (--loss, --optimizer, ...), shown by
/// --help next to hetpar-compile's own.
llvm::cl::OptionCategory &trainingOptionCategory();

/// Whether --eval-program (on by default) asks for the evaluation step.
bool wantEvalProgram();

/// Adds the passes that turn the same imported module into the evaluation
/// step of the training program (`hetpar-run --eval-data`): the same
/// parameters, static shapes and loss as buildTrainingPipeline, then
/// hetpar-train-eval-mode (float32 compute on the master weights).
void buildEvalPipeline(
    mlir::OpPassManager &pm,
    const std::function<void(mlir::OpPassManager &)> &toStatic);

/// The manifest's "training" object (docs/training.md) for the compiled step
/// function of `module` in compute dtype `dtype`, as JSON text.
std::string trainingManifest(mlir::ModuleOp module, codegen::FloatMode dtype);

} // namespace hetpar::tools

#endif // HETPAR_TOOLS_COMPILE_TRAINING_H
