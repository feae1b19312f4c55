//===- hetpar-translate.cpp - ONNX import -------------------------------===//
//
// Usage: hetpar-translate --import-onnx MODEL.onnx [--input-shape NAME=2x128 ...]
//                         [-o OUT.mlir]
// Imports an ONNX model (binary .onnx, or ONNX text syntax .onnxtxt) into the onnx
// dialect. Import only: no shape inference beyond the ops' own rules, no folding.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

static llvm::cl::list<std::string>
    inputShapes("input-shape",
                llvm::cl::desc("Fix the shape of a graph input: NAME=2x128 (repeatable)"),
                llvm::cl::value_desc("NAME=DxD..."));

static llvm::cl::opt<bool> noExternalData(
    "no-external-data",
    llvm::cl::desc("Do not read external data files (weights become data-less resources)"),
    llvm::cl::init(false));

static OwningOpRef<Operation *> importFromSourceMgr(llvm::SourceMgr &sourceMgr,
                                                    MLIRContext *context) {
  StringRef path = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBufferIdentifier();
  if (path == "<stdin>" || path == "-") {
    emitError(UnknownLoc::get(context)) << "--import-onnx reads a model file, not stdin "
                                           "(external data resolves next to the file)";
    return nullptr;
  }
  hetpar::ONNXImportOptions options;
  options.loadExternalData = !noExternalData;
  for (const std::string &spec : inputShapes) {
    auto parsed = hetpar::parseInputShapeSpec(spec);
    if (!parsed) {
      emitError(UnknownLoc::get(context)) << llvm::toString(parsed.takeError());
      return nullptr;
    }
    options.inputShapes[parsed->first] = parsed->second;
  }
  auto module = hetpar::importONNXModel(path, context, options);
  if (!module)
    return nullptr;
  return OwningOpRef<Operation *>(module.release());
}

int main(int argc, char **argv) {
  TranslateToMLIRRegistration importONNX(
      "import-onnx", "Import an ONNX model into the onnx dialect", importFromSourceMgr,
      [](DialectRegistry &registry) { hetpar::registerImportDialects(registry); });
  return failed(mlirTranslateMain(argc, argv, "HetPar translation tool\n"));
}
