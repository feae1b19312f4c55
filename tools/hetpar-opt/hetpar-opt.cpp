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
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/StringSaver.h"
#include "llvm/Support/raw_ostream.h"

/// Loads every --load-pass-plugin / --load-dialect-plugin of the command
/// line (response files included) once, so that one that cannot load is an
/// error: MlirOptMain prints "Request ignored" and goes on with exit status 0
/// (a pipeline naming the plugin's passes would then fail with a less clear
/// message, and one that does not would silently run without them). Returns
/// false after printing the reason.
static bool checkPlugins(int argc, char **argv) {
  // As MlirOptMain will see them: @file response files expanded (an
  // expansion error is left for it to report).
  llvm::BumpPtrAllocator alloc;
  llvm::StringSaver saver(alloc);
  llvm::SmallVector<const char *> args(argv, argv + argc);
  (void)llvm::cl::ExpandResponseFiles(saver, llvm::cl::TokenizeGNUCommandLine,
                                      args);
  for (size_t i = 1; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    bool dialect = arg.consume_front("--load-dialect-plugin") ||
                   arg.consume_front("-load-dialect-plugin");
    if (!dialect && !arg.consume_front("--load-pass-plugin") &&
        !arg.consume_front("-load-pass-plugin"))
      continue;
    std::string path;
    if (arg.consume_front("="))
      path = arg.str();
    else if (arg.empty() && i + 1 < args.size())
      path = args[++i];
    else
      continue; // another option with this prefix: MlirOptMain reports it
    llvm::Error err = dialect ? mlir::DialectPlugin::load(path).takeError()
                              : mlir::PassPlugin::load(path).takeError();
    if (err) {
      llvm::errs() << "hetpar-opt: error: cannot load "
                   << (dialect ? "dialect" : "pass") << " plugin '" << path
                   << "': " << llvm::toString(std::move(err)) << "\n";
      return false;
    }
  }
  return true;
}

int main(int argc, char **argv) {
  if (!checkPlugins(argc, argv))
    return 1;
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
