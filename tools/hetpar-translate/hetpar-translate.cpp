//===- hetpar-translate.cpp - ONNX import -------------------------------===//
//
// Usage: hetpar-translate --import-onnx MODEL.onnx [--input-shape NAME=2x128
// ...]
//                         [--no-external-data] [--emit-bytecode] [-o OUT.mlir]
//
// Imports an ONNX model (binary .onnx, or ONNX text syntax .onnxtxt) into the
// onnx dialect. Import only: each op's shape rule runs as it is built, but
// nothing is folded (use hetpar-compile --emit=mlir for the static module).
//
// This is not built on mlirTranslateMain, which reads the whole input file into
// memory before translating: the importer streams the model itself, so that
// weights are held once.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Support/Diagnostics.h"
#include "hetpar/Support/Output.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("hetpar-translate options");

static cl::opt<bool>
    importONNX("import-onnx",
               cl::desc("Import an ONNX model into the onnx dialect"),
               cl::cat(category));
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string>
    outputPath("o", cl::desc("Output file (default: stdout)"),
               cl::value_desc("path"), cl::init("-"), cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fix the shape of a graph input: NAME=2x128 (repeatable)"),
    cl::value_desc("NAME=DxD..."), cl::cat(category));
static cl::opt<bool> noExternalData(
    "no-external-data",
    cl::desc(
        "Do not read external data files (weights become data-less resources)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> emitBytecode("emit-bytecode",
                                  cl::desc("Write MLIR bytecode"),
                                  cl::init(false), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "hetpar-translate: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "HetPar translation tool\n");
  if (!importONNX)
    return fail("choose a translation (--import-onnx)");

  hetpar::ONNXImportOptions options;
  options.loadExternalData = !noExternalData;
  // The model and its external data files are inputs: never overwritten.
  std::vector<std::string> inputsRead{inputPath};
  options.externalFilesRead = &inputsRead;
  if (llvm::Error err = hetpar::checkNotAnInput(outputPath, {inputPath})) {
    return fail(llvm::toString(std::move(err)));
  }
  if (llvm::Error err = options.addInputShapeSpecs(inputShapes)) {
    return fail(llvm::toString(std::move(err)));
  }

  DialectRegistry registry;
  hetpar::registerImportDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  hetpar::DiagnosticPrinter diagnostics(&context);
  auto module = hetpar::importONNXModel(inputPath, &context, options);
  if (!module)
    return 1;

  if (llvm::Error err = hetpar::checkNotAnInput(outputPath, inputsRead)) {
    return fail(llvm::toString(std::move(err)));
  }
  // Written only after a successful import, complete or not at all.
  LogicalResult written = success();
  llvm::Error err = hetpar::writeOutput(outputPath, [&](llvm::raw_ostream &os) {
    if (emitBytecode)
      written = writeBytecodeToFile(*module, os);
    else
      module->print(os);
  });
  if (err)
    return fail(llvm::toString(std::move(err)));
  if (failed(written))
    return fail("cannot write bytecode");
  return 0;
}
