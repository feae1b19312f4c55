//===- hetpar-compile.cpp - the HetPar compiler driver
//----------------------===//
//
// Usage:
//   hetpar-compile MODEL.onnx [--input-shape NAME=2x128 ...] --emit=mlir -o
//   OUT.mlir hetpar-compile MODEL.onnx [--input-shape NAME=2x128 ...]
//   --emit=summary [-o FILE]
//
// Imports the model, makes it fully static (hetpar-onnx-to-static) and writes
// the static module (--emit=mlir, or --emit=mlirbc for MLIR bytecode) or prints
// a summary of its ops, parameters and FLOPs (--emit=summary). Output files are
// written atomically: a failed compile leaves nothing behind. Exit status 0 on
// success, 1 on any error (with one diagnostic naming the file and node).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Analysis/ModelSummary.h"
#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Support/Diagnostics.h"
#include "hetpar/Support/Output.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("hetpar-compile options");

static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"),
                                       cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fix the shape of a graph input: NAME=2x128 (repeatable)"),
    cl::value_desc("NAME=DxD..."), cl::cat(category));

enum class EmitKind { None, MLIR, MLIRBytecode, Summary };
static cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::None),
    cl::values(
        clEnumValN(EmitKind::MLIR, "mlir",
                   "the static onnx-dialect module (after shape inference and "
                   "folding) as MLIR text"),
        clEnumValN(EmitKind::MLIRBytecode, "mlirbc",
                   "the same module as MLIR bytecode"),
        clEnumValN(EmitKind::Summary, "summary",
                   "a summary: inputs, outputs, ops, parameters, FLOPs")),
    cl::cat(category));

static cl::opt<bool> allowDynamic(
    "allow-dynamic",
    cl::desc(
        "Do not fail when some tensor keeps a dynamic shape (inputs without "
        "--input-shape)"),
    cl::init(false), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "hetpar-compile: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // Only this tool's options in --help (MLIR's printing and pass-manager
  // options still work; --help-hidden lists them).
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "HetPar compiler driver\n");

  if (emit == EmitKind::None)
    return fail(
        "choose what to emit: --emit=mlir, --emit=mlirbc or --emit=summary "
        "(code generation for devices is not implemented yet)");
  if (emit == EmitKind::MLIR && outputPath.empty())
    return fail("--emit=mlir needs -o OUT.mlir");
  if (emit == EmitKind::MLIRBytecode && outputPath.empty())
    return fail("--emit=mlirbc needs -o OUT.mlirbc");
  if (modelPath.empty())
    return fail("no model file given");
  if (StringRef(modelPath).ends_with(".mlir") ||
      StringRef(modelPath).ends_with(".mlirbc"))
    return fail("'" + modelPath +
                "' is MLIR; hetpar-compile reads ONNX models (run passes on "
                "MLIR with hetpar-opt)");

  hetpar::ONNXImportOptions options;
  if (llvm::Error err = options.addInputShapeSpecs(inputShapes))
    return fail(llvm::toString(std::move(err)));
  // The model and its external data files are inputs: never overwritten.
  std::vector<std::string> inputsRead{modelPath};
  options.externalFilesRead = &inputsRead;
  if (llvm::Error err = hetpar::checkNotAnInput(outputPath, {modelPath}))
    return fail(llvm::toString(std::move(err)));

  DialectRegistry registry;
  hetpar::registerImportDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  // Diagnostics print as "model.onnx: error: node 'x': message".
  hetpar::DiagnosticPrinter diagnostics(&context);
  auto module = hetpar::importONNXModel(modelPath, &context, options);
  if (!module)
    return 1;

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  hetpar::ToStaticPipelineOptions pipeline;
  pipeline.verifyStatic = !allowDynamic;
  hetpar::buildToStaticPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    return 1;

  // Complete or absent: see hetpar::writeOutput.
  auto write = [&](llvm::function_ref<void(llvm::raw_ostream &)> body) -> int {
    if (llvm::Error err = hetpar::checkNotAnInput(
            outputPath.empty() ? StringRef("-") : StringRef(outputPath),
            inputsRead))
      return fail(llvm::toString(std::move(err)));
    if (llvm::Error err = hetpar::writeOutput(
            outputPath.empty() ? StringRef("-") : StringRef(outputPath), body))
      return fail(llvm::toString(std::move(err)));
    return 0;
  };

  switch (emit) {
  case EmitKind::MLIR:
    return write([&](llvm::raw_ostream &os) { module->print(os); });
  case EmitKind::MLIRBytecode: {
    LogicalResult ok = success();
    int rc = write(
        [&](llvm::raw_ostream &os) { ok = writeBytecodeToFile(*module, os); });
    return rc ? rc : (failed(ok) ? fail("cannot write bytecode") : 0);
  }
  case EmitKind::Summary:
    return write([&](llvm::raw_ostream &os) {
      os << "model " << modelPath << "\n";
      module->walk([&](func::FuncOp func) {
        hetpar::printModelSummary(hetpar::summarizeFunction(func), os);
      });
    });
  case EmitKind::None:
    break;
  }
  return 0;
}
