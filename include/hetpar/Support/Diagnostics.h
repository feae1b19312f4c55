//===- Diagnostics.h - diagnostics in ONNX terms ------------------*- C++
//-*-===//
#ifndef HETPAR_SUPPORT_DIAGNOSTICS_H
#define HETPAR_SUPPORT_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

namespace hetpar {

/// Prints diagnostics for users of the driver: a location made by the ONNX
/// importer (a node name around the model file) prints as
///   model.onnx: error: node 'MatMul_3': cannot multiply 2x3 by 4x5: ...
/// other locations as file:line:col. The "'onnx.X' op" prefix of op errors is
/// dropped (the node name says more), and notes are printed indented.
class DiagnosticPrinter : public mlir::ScopedDiagnosticHandler {
public:
  DiagnosticPrinter(mlir::MLIRContext *ctx,
                    llvm::raw_ostream &os = llvm::errs());

  /// Formats one diagnostic (without its notes) as described above.
  static std::string format(mlir::Diagnostic &diag);

  /// The message of `diag` without the "'dialect.op' op " prefix of op errors.
  static std::string message(mlir::Diagnostic &diag);
};

} // namespace hetpar

#endif // HETPAR_SUPPORT_DIAGNOSTICS_H
