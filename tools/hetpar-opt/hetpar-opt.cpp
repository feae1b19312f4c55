//===- hetpar-opt.cpp - mlir-opt with every HetPar dialect and pass -------===//
//
// Usage: hetpar-opt [options] input.mlir
// Runs passes and pipelines (e.g. --hetpar-onnx-to-static) over MLIR files.
// Users' own passes load with --load-pass-plugin=libMyPasses.so.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXDialect.h"
#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Search/Passes.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  hetpar::registerImportDialects(registry);
  registry.insert<hetpar::dist::DistDialect>();
  mlir::registerTransformsPasses();
  hetpar::registerAllHetParPasses();
  // Policy (the search) apart from mechanism: its own library and registry.
  hetpar::registerHetParSearchPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "HetPar optimizer driver\n", registry));
}
