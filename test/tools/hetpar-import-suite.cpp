//===- hetpar-import-suite.cpp - import a folder of ONNX test models --------===//
//
// Usage: hetpar-import-suite DIR [--verbose] [--list-skipped] [--min-imported N]
//
// Imports every DIR/**/model.onnx (the layout of the ONNX backend test suite and of
// Debian's libonnx-testdata), runs shape inference with folding, and sorts each model
// into one of:
//   imported     every op is modeled, every tensor is static, and the output shapes
//                equal those of the stored reference outputs (test_data_set_0)
//   unsupported  the model uses an op or a type HetPar does not support (named)
//   failed       anything else: an import error, a dynamic shape left, or an output
//                shape that differs from the reference
// Prints the counts, the unsupported reasons by frequency, and every failure. Exits
// 1 when a model failed or fewer than N imported. A crash ends the run (and so
// fails the test that runs it).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Support/Diagnostics.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <vector>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> root(cl::Positional, cl::desc("<test data folder>"),
                                 cl::Required);
static cl::opt<bool> verbose("verbose", cl::desc("Print one line per model"));
static cl::opt<int> minImported(
    "min-imported", cl::desc("Fail unless at least this many models import"),
    cl::init(0));
static cl::opt<bool> listSkipped("list-skipped",
                                 cl::desc("Print every unsupported model and why"));

namespace {
enum class Outcome { Imported, Unsupported, Failed };

struct Result {
  Outcome outcome;
  std::string reason;
};

/// Reference output shapes: dims of test_data_set_0/output_<i>.pb.
std::vector<std::optional<llvm::SmallVector<int64_t>>> referenceShapes(StringRef dir) {
  std::vector<std::optional<llvm::SmallVector<int64_t>>> shapes;
  for (int i = 0;; ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, "test_data_set_0", "output_" + std::to_string(i) + ".pb");
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer)
      break;
    ::onnx::TensorProto t;
    if (!t.ParseFromArray((*buffer)->getBufferStart(), (*buffer)->getBufferSize()) ||
        !t.has_data_type()) {
      shapes.push_back(std::nullopt);
      continue;
    }
    shapes.push_back(llvm::SmallVector<int64_t>(t.dims().begin(), t.dims().end()));
  }
  return shapes;
}

bool isUnsupportedMessage(StringRef msg) {
  return msg.contains("HetPar does not support") || msg.contains("HetPar does not model") ||
         msg.contains("is not supported");
}

Result runOne(StringRef dir, StringRef modelPath) {
  DialectRegistry registry;
  hetpar::registerImportDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  std::string firstError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty())
      firstError = hetpar::DiagnosticPrinter::format(diag);
    return success();
  });
  auto module = hetpar::importONNXModel(modelPath, &context);
  if (!module)
    return {isUnsupportedMessage(firstError) ? Outcome::Unsupported : Outcome::Failed,
            firstError};

  std::string unsupportedOp;
  module->walk([&](hetpar::onnx::GenericOp op) {
    if (unsupportedOp.empty())
      unsupportedOp = op.getOpType().str();
  });
  if (!unsupportedOp.empty())
    return {Outcome::Unsupported, "op " + unsupportedOp};

  PassManager pm(&context);
  hetpar::ToStaticPipelineOptions options;
  hetpar::buildToStaticPipeline(pm, options);
  if (failed(pm.run(*module)))
    return {isUnsupportedMessage(firstError) ? Outcome::Unsupported : Outcome::Failed,
            firstError};

  auto funcs = module->getOps<func::FuncOp>();
  if (funcs.empty())
    return {Outcome::Failed, "no function"};
  func::FuncOp func = *funcs.begin();
  auto refs = referenceShapes(dir);
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    if (i >= refs.size() || !refs[i])
      continue;
    auto shaped = llvm::cast<ShapedType>(type);
    if (!shaped.hasRank() || shaped.getShape() != llvm::ArrayRef<int64_t>(*refs[i]))
      return {Outcome::Failed, "output " + std::to_string(i) + " has shape " +
                                   hetpar::formatShape(shaped.getShape()) +
                                   " but the reference output has " +
                                   hetpar::formatShape(*refs[i])};
  }
  return {Outcome::Imported, ""};
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "Import a folder of ONNX test models\n");

  std::vector<std::string> models;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::filename(it->path()) == "model.onnx")
      models.push_back(it->path());
  if (ec || models.empty()) {
    llvm::errs() << "hetpar-import-suite: no model.onnx under '" << root << "'\n";
    return 1;
  }
  std::sort(models.begin(), models.end());

  int counts[3] = {0, 0, 0};
  std::map<std::string, int> reasons;
  std::vector<std::pair<std::string, std::string>> failures, skipped;
  for (const std::string &model : models) {
    llvm::SmallString<256> dir(model);
    llvm::sys::path::remove_filename(dir);
    Result r = runOne(dir, model);
    ++counts[static_cast<int>(r.outcome)];
    StringRef test = llvm::sys::path::filename(dir);
    if (verbose)
      llvm::outs() << (r.outcome == Outcome::Imported      ? "imported    "
                       : r.outcome == Outcome::Unsupported ? "unsupported "
                                                           : "FAILED      ")
                   << test << (r.reason.empty() ? "" : ": ") << r.reason << "\n";
    if (r.outcome == Outcome::Failed)
      failures.emplace_back(test.str(), r.reason);
    if (r.outcome == Outcome::Unsupported) {
      skipped.emplace_back(test.str(), r.reason);
      // Group "op X" reasons; for type errors keep the tail after the last ': '.
      std::string key = r.reason;
      if (!StringRef(key).starts_with("op ")) {
        size_t pos = key.rfind(": ");
        key = pos == std::string::npos ? key : key.substr(pos + 2);
      }
      ++reasons[key];
    }
  }

  llvm::outs() << "models: " << models.size() << "\n";
  llvm::outs() << "imported: " << counts[0] << "\n";
  llvm::outs() << "unsupported: " << counts[1] << "\n";
  llvm::outs() << "failed: " << counts[2] << "\n";
  std::vector<std::pair<int, std::string>> byCount;
  for (const auto &[reason, n] : reasons)
    byCount.emplace_back(-n, reason);
  std::sort(byCount.begin(), byCount.end());
  llvm::outs() << "unsupported because of:\n";
  for (const auto &[n, reason] : byCount)
    llvm::outs() << "  " << -n << "  " << reason << "\n";
  if (listSkipped)
    for (const auto &[test, reason] : skipped)
      llvm::outs() << "skipped " << test << ": " << reason << "\n";
  for (const auto &[test, reason] : failures)
    llvm::outs() << "FAILED " << test << ": " << reason << "\n";
  if (counts[0] < minImported) {
    llvm::outs() << "FAILED: only " << counts[0] << " models imported, expected at least "
                 << minImported << "\n";
    return 1;
  }
  return failures.empty() ? 0 : 1;
}
