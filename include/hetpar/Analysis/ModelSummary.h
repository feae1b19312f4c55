//===- ModelSummary.h - ops, parameters and FLOPs of a model -----*- C++
//-*-===//
#ifndef HETPAR_ANALYSIS_MODELSUMMARY_H
#define HETPAR_ANALYSIS_MODELSUMMARY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// What one function (one ONNX graph) holds, counted from its static shapes.
struct ModelSummary {
  struct Value {
    std::string name; ///< ONNX name of the input/output
    mlir::Type type;
  };
  struct OpKind {
    int64_t count = 0;
    /// FLOP of all ops of this kind; std::nullopt when one of them has a shape
    /// that is not static.
    std::optional<int64_t> flops = 0;
  };
  std::string function;
  std::vector<Value> inputs, outputs;
  /// Op kinds by ONNX op type, in order of first appearance.
  llvm::MapVector<std::string, OpKind, std::map<std::string, unsigned>> ops;
  int64_t numOps = 0;
  /// Unsupported op types (onnx.Generic) present.
  std::vector<std::string> unsupported;
  /// Op kinds whose FLOPs are unknown (no count for the op, a shape that is not
  /// static, or a count beyond int64).
  std::vector<std::string> uncounted;
  /// Elements of floating-point constants with more than one element (weights,
  /// biases, norms' scales; scalars such as epsilon are not counted).
  int64_t parameters = 0;
  /// Bytes of all constants.
  int64_t constantBytes = 0;
  /// Sum of op FLOPs (multiply-add = 2); std::nullopt when a shape is not
  /// static.
  std::optional<int64_t> flops = 0;
};

/// Summarizes `func`.
ModelSummary summarizeFunction(mlir::func::FuncOp func);

/// Prints a human-readable table: inputs, outputs, ops by kind with FLOPs,
/// parameters, and totals. FLOPs are printed exactly and with an SI prefix.
void printModelSummary(const ModelSummary &summary, llvm::raw_ostream &os);

} // namespace hetpar

#endif // HETPAR_ANALYSIS_MODELSUMMARY_H
