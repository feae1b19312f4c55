//===- Diagnostics.cpp
//------------------------------------------------------===//
#include "hetpar/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/Regex.h"

using namespace mlir;

namespace hetpar {

std::string DiagnosticPrinter::message(Diagnostic &diag) {
  std::string msg = diag.str();
  // "'onnx.MatMul' op cannot ..." -> "cannot ..."
  static const llvm::Regex opPrefix("^'[A-Za-z0-9_.]+' op ");
  if (opPrefix.match(msg))
    msg = opPrefix.sub("", msg);
  return msg;
}

static const char *severityName(DiagnosticSeverity s) {
  switch (s) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Note:
    return "note";
  case DiagnosticSeverity::Remark:
    return "remark";
  }
  return "error";
}

/// Splits a location into "where" (file or file:line:col) and an ONNX node
/// name.
static void describe(Location loc, std::string &where, std::string &node) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc)) {
    if (node.empty())
      node = name.getName().str();
    describe(name.getChildLoc(), where, node);
    return;
  }
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc)) {
    where = file.getFilename().str();
    if (file.getLine() != 0)
      where += ":" + std::to_string(file.getLine()) + ":" +
               std::to_string(file.getColumn());
    return;
  }
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations()) {
      describe(inner, where, node);
      if (!where.empty())
        return;
    }
    return;
  }
  if (auto callsite = llvm::dyn_cast<CallSiteLoc>(loc))
    describe(callsite.getCallee(), where, node);
}

std::string DiagnosticPrinter::format(Diagnostic &diag) {
  std::string where, node;
  describe(diag.getLocation(), where, node);
  std::string msg = message(diag);
  std::string out = where.empty() ? std::string() : where + ": ";
  out += severityName(diag.getSeverity());
  out += ": ";
  // Importer messages already name the node ("node 'x' (Op): ...").
  if (!node.empty() && msg.find("'" + node + "'") == std::string::npos)
    out += "node '" + node + "': ";
  return out + msg;
}

DiagnosticPrinter::DiagnosticPrinter(MLIRContext *ctx, llvm::raw_ostream &os)
    : ScopedDiagnosticHandler(ctx, [&os](Diagnostic &diag) {
        os << format(diag) << "\n";
        for (Diagnostic &note : diag.getNotes())
          os << "  " << format(note) << "\n";
        os.flush();
        return success();
      }) {}

} // namespace hetpar
