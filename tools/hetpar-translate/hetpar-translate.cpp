//===- hetpar-translate.cpp - ONNX import, device source export ----------===//
//
// Usage: hetpar-translate --import-onnx MODEL.onnx [--input-shape NAME=2x128
//                         ...] [--no-external-data] [--emit-bytecode] [-o F]
//        hetpar-translate --emit-device-source STATIC.mlir [--dtype D]
//                         [--device N] [-o F]
//
// --import-onnx imports an ONNX model (binary .onnx, or ONNX text syntax
// .onnxtxt) into the onnx dialect. Import only: each op's shape rule runs as it
// is built, but nothing is folded (use hetpar-compile --emit=mlir for the
// static module).
//
// --emit-device-source prints the device_0.cu that hetpar-compile would
// generate for a fully static onnx-dialect module (for instance one a user's
// passes rewrote with hetpar-opt), without weights or builds.
//
// This is not built on mlirTranslateMain, which reads the whole input file into
// memory before translating: the importer streams the model itself, so that
// weights are held once.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Codegen/Codegen.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Support/Diagnostics.h"
#include "hetpar/Support/Output.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("hetpar-translate options");

static cl::opt<bool>
    importONNX("import-onnx",
               cl::desc("Import an ONNX model into the onnx dialect"),
               cl::cat(category));
static cl::opt<bool> emitDeviceSource(
    "emit-device-source",
    cl::desc("Print the device program (device_0.cu) of a static onnx-dialect "
             "module"),
    cl::cat(category));
static cl::opt<std::string>
    dtypeOption("dtype",
                cl::desc("With --emit-device-source: float32 (default), "
                         "float16 or bfloat16 storage of float32 tensors"),
                cl::init("float32"), cl::cat(category));
static cl::opt<bool> emitProgram(
    "emit-program",
    cl::desc("Compile a static onnx-dialect module into the program folder "
             "-o OUT (one device, or one program per dist.device function), "
             "built for the CPU"),
    cl::cat(category));
static cl::opt<bool> uncheckedIndices(
    "unchecked-indices",
    cl::desc("With --emit-program / --emit-device-source: no reports of "
             "indices out of range (hetpar-compile's flag)"),
    cl::cat(category));
static cl::opt<int> deviceOption(
    "device",
    cl::desc("With --emit-device-source: the function with dist.device = N "
             "(one device's program of a multi-device module); default: the "
             "first function"),
    cl::init(-1), cl::value_desc("N"), cl::cat(category));
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
static cl::opt<bool> markInitializers(
    "mark-initializers",
    cl::desc("--import-onnx: mark each initializer's constant with its name "
             "(onnx.initializer), as training needs (hetpar-train-lift-params "
             "turns the marked ones into parameters)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> emitBytecode("emit-bytecode",
                                  cl::desc("Write MLIR bytecode"),
                                  cl::init(false), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "hetpar-translate: error: " << message << "\n";
  return 1;
}

/// --emit-device-source: parse, generate, print. --emit-program: generate
/// every device's program and write the folder.
static int deviceSource(const char *argv0) {
  auto floatMode = hetpar::parseFloatMode(dtypeOption);
  if (!floatMode)
    return fail("--dtype: unknown type '" + dtypeOption +
                "' (float32, float16 or bfloat16)");
  DialectRegistry registry;
  hetpar::registerImportDialects(registry);
  registry.insert<hetpar::dist::DistDialect>();
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  hetpar::DiagnosticPrinter diagnostics(&context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(inputPath, &context);
  if (!module)
    return 1;
  func::FuncOp func;
  for (auto f : module->getOps<func::FuncOp>()) {
    if (f.isDeclaration())
      continue;
    auto id = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    if (deviceOption < 0 || (id && id.getInt() == deviceOption)) {
      func = f;
      break;
    }
  }
  if (emitProgram) {
    if (outputPath == "-")
      return fail("--emit-program needs -o OUTDIR");
    hetpar::codegen::CodegenOptions opts;
    opts.floatMode = *floatMode;
    opts.checkIndices = !uncheckedIndices;
    opts.buildCUDA = false;
    opts.toolName = "hetpar-translate";
    opts.runtimeIncludeDir = hetpar::codegen::findRuntimeIncludeDir(
        argv0, reinterpret_cast<void *>(&fail));
    std::vector<hetpar::codegen::DeviceProgram> programs;
    std::vector<int64_t> ids;
    bool partitioned = false;
    for (auto f : module->getOps<func::FuncOp>()) {
      if (f.isDeclaration())
        continue;
      auto id = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
      if (!id && !programs.empty())
        continue;
      auto program = hetpar::codegen::generateDeviceProgram(f, opts);
      if (failed(program))
        return 1;
      programs.push_back(std::move(*program));
      ids.push_back(id ? id.getInt() : 0);
      partitioned |= bool(id);
      if (!id)
        break; // a one-device module: its first function
    }
    if (programs.empty())
      return fail("'" + inputPath + "' has no function to generate code for");
    if (llvm::Error err =
            hetpar::codegen::checkOutputFolder(outputPath, {inputPath}))
      return fail(llvm::toString(std::move(err)));
    // A partitioned module's placement (microbatches, stages, kinds, the
    // device that returns the outputs), read from its IR as hetpar-compile
    // reads it.
    hetpar::codegen::PlanFiles placement;
    if (partitioned)
      hetpar::codegen::describePlacement(*module, ids, placement);
    if (llvm::Error err = hetpar::codegen::writeProgramFolder(
            programs, ids, outputPath, inputPath, opts, llvm::errs(),
            placement))
      return fail(llvm::toString(std::move(err)));
    return 0;
  }
  if (!func && deviceOption >= 0)
    return fail("'" + inputPath + "' has no function with dist.device = " +
                std::to_string(deviceOption));
  if (!func)
    return fail("'" + inputPath + "' has no function to generate code for");
  hetpar::codegen::CodegenOptions opts;
  opts.floatMode = *floatMode;
  opts.checkIndices = !uncheckedIndices;
  auto program = hetpar::codegen::generateDeviceProgram(func, opts);
  if (failed(program))
    return 1;
  if (llvm::Error err = hetpar::writeOutput(
          outputPath, [&](llvm::raw_ostream &os) { os << program->source; }))
    return fail(llvm::toString(std::move(err)));
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "HetPar translation tool\n");
  if (int(importONNX) + int(emitDeviceSource) + int(emitProgram) != 1)
    return fail("choose one translation (--import-onnx, --emit-device-source "
                "or --emit-program)");
  if (emitDeviceSource || emitProgram)
    return deviceSource(argv[0]);

  hetpar::ONNXImportOptions options;
  options.loadExternalData = !noExternalData;
  options.markInitializers = markInitializers;
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
    // With locations, as hetpar-compile --emit=mlir writes them: an op's
    // location is its ONNX node name, which plans name it by.
    if (emitBytecode)
      written = writeBytecodeToFile(*module, os);
    else
      module->print(os, OpPrintingFlags().enableDebugInfo());
  });
  if (err)
    return fail(llvm::toString(std::move(err)));
  if (failed(written))
    return fail("cannot write bytecode");
  return 0;
}
