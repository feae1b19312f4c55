//===- hetpar-import-suite.cpp - import a folder of ONNX test models
//--------===//
//
// Usage: hetpar-import-suite DIR [--verbose] [--list-skipped] [--min-imported
// N]
//
// Imports every DIR/**/model.onnx and DIR/**/model-dynamic.onnx, runs shape
// inference with folding, and sorts each model into one of the outcomes below.
// Two layouts are understood:
//   - the ONNX backend test suite (Debian's libonnx-testdata): reference
//   outputs in
//     test_data_set_0/output_<i>.pb;
//   - HetPar's bundled models (examples/models): inputs input_<i>.npy, which
//   also give
//     the shapes of dynamic inputs, and ONNX Runtime outputs output_<i>.npy.
// Outcomes:
//   imported     every op is modeled, every tensor is static, and the output
//   shapes
//                equal those of the stored reference outputs (test_data_set_0)
//   unsupported  the model uses an op or a type HetPar does not support (named)
//   failed       anything else: an import error, a dynamic shape left, or an
//   output
//                shape that differs from the reference
// Prints the counts, the unsupported reasons by frequency, and every failure.
// Exits 1 when a model failed or fewer than N imported. A crash ends the run
// (and so fails the test that runs it).
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
#include "llvm/ADT/StringSet.h"
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
static cl::opt<int>
    minImported("min-imported",
                cl::desc("Fail unless at least this many models import"),
                cl::init(0));
static cl::opt<bool>
    listSkipped("list-skipped",
                cl::desc("Print every unsupported model and why"));

namespace {
enum class Outcome { Imported, Unsupported, Failed };

struct Result {
  Outcome outcome;
  std::string reason;
};

/// The shape in a NumPy .npy header ("{'descr': '<f4', ..., 'shape': (2, 16),
/// }").
std::optional<llvm::SmallVector<int64_t>> npyShape(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  StringRef text = (*buffer)->getBuffer();
  if (!text.starts_with("\x93NUMPY"))
    return std::nullopt;
  size_t open = text.find("'shape': (");
  if (open == StringRef::npos)
    return std::nullopt;
  StringRef rest = text.drop_front(open + strlen("'shape': ("));
  rest = rest.take_until([](char c) { return c == ')'; });
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<StringRef> parts;
  rest.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef p : parts) {
    int64_t d;
    if (p.trim().getAsInteger(10, d))
      return std::nullopt;
    shape.push_back(d);
  }
  return shape;
}

/// Shapes of DIR/<prefix>_<i>.npy for i = 0, 1, ...
std::vector<std::optional<llvm::SmallVector<int64_t>>>
npyShapes(StringRef dir, StringRef prefix) {
  std::vector<std::optional<llvm::SmallVector<int64_t>>> shapes;
  for (int i = 0;; ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, prefix + "_" + std::to_string(i) + ".npy");
    if (!llvm::sys::fs::exists(path))
      break;
    shapes.push_back(npyShape(path));
  }
  return shapes;
}

/// Reference output shapes: dims of test_data_set_0/output_<i>.pb, or of
/// output_<i>.npy in HetPar's layout.
std::vector<std::optional<llvm::SmallVector<int64_t>>>
referenceShapes(StringRef dir) {
  auto npy = npyShapes(dir, "output");
  if (!npy.empty())
    return npy;
  std::vector<std::optional<llvm::SmallVector<int64_t>>> shapes;
  for (int i = 0;; ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, "test_data_set_0",
                            "output_" + std::to_string(i) + ".pb");
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer)
      break;
    ::onnx::TensorProto t;
    if (!t.ParseFromArray((*buffer)->getBufferStart(),
                          (*buffer)->getBufferSize()) ||
        !t.has_data_type()) {
      shapes.push_back(std::nullopt);
      continue;
    }
    shapes.push_back(
        llvm::SmallVector<int64_t>(t.dims().begin(), t.dims().end()));
  }
  return shapes;
}

bool isUnsupportedMessage(StringRef msg) {
  return msg.contains("HetPar does not support") ||
         msg.contains("HetPar does not model") ||
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
  // Dynamic inputs take the shapes of the stored inputs (HetPar's layout).
  hetpar::ONNXImportOptions options;
  if (llvm::sys::path::filename(modelPath) == "model-dynamic.onnx") {
    ::onnx::ModelProto proto;
    auto buffer = llvm::MemoryBuffer::getFile(modelPath);
    if (buffer && proto.ParseFromArray((*buffer)->getBufferStart(),
                                       (*buffer)->getBufferSize())) {
      llvm::StringSet<> inits;
      for (const auto &i : proto.graph().initializer())
        inits.insert(i.name());
      auto shapes = npyShapes(dir, "input");
      size_t k = 0;
      for (const auto &in : proto.graph().input()) {
        if (inits.contains(in.name()))
          continue;
        if (k < shapes.size() && shapes[k])
          options.inputShapes[in.name()] = *shapes[k];
        ++k;
      }
    }
  }
  auto module = hetpar::importONNXModel(modelPath, &context, options);
  if (!module)
    return {isUnsupportedMessage(firstError) ? Outcome::Unsupported
                                             : Outcome::Failed,
            firstError};

  std::string unsupportedOp;
  module->walk([&](hetpar::onnx::GenericOp op) {
    if (unsupportedOp.empty())
      unsupportedOp = op.getOpType().str();
  });
  if (!unsupportedOp.empty())
    return {Outcome::Unsupported, "op " + unsupportedOp};

  PassManager pm(&context);
  hetpar::buildToStaticPipeline(pm, hetpar::ToStaticPipelineOptions());
  if (failed(pm.run(*module)))
    return {isUnsupportedMessage(firstError) ? Outcome::Unsupported
                                             : Outcome::Failed,
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
    if (!shaped.hasRank() ||
        shaped.getShape() != llvm::ArrayRef<int64_t>(*refs[i]))
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
  cl::ParseCommandLineOptions(argc, argv,
                              "Import a folder of ONNX test models\n");

  std::vector<std::string> models;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(root, ec), end;
       it != end && !ec; it.increment(ec))
    if (llvm::sys::path::filename(it->path()) == "model.onnx" ||
        llvm::sys::path::filename(it->path()) == "model-dynamic.onnx")
      models.push_back(it->path());
  if (ec || models.empty()) {
    llvm::errs() << "hetpar-import-suite: no model.onnx under '" << root
                 << "'\n";
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
    std::string test = llvm::sys::path::filename(dir).str();
    if (llvm::sys::path::filename(model) == "model-dynamic.onnx")
      test += " (dynamic)";
    if (verbose)
      llvm::outs() << (r.outcome == Outcome::Imported      ? "imported    "
                       : r.outcome == Outcome::Unsupported ? "unsupported "
                                                           : "FAILED      ")
                   << test << (r.reason.empty() ? "" : ": ") << r.reason
                   << "\n";
    if (r.outcome == Outcome::Failed)
      failures.emplace_back(test, r.reason);
    if (r.outcome == Outcome::Unsupported) {
      skipped.emplace_back(test, r.reason);
      // Group "op X" reasons; for type errors keep the tail after the last ':
      // '.
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
    llvm::outs() << "FAILED: only " << counts[0]
                 << " models imported, expected at least " << minImported
                 << "\n";
    return 1;
  }
  return failures.empty() ? 0 : 1;
}
