//===- DiagnosticsTest.cpp
//--------------------------------------------------===//
#include "hetpar/Support/Diagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
std::string formatError(MLIRContext &ctx, Location loc, StringRef text) {
  std::string out;
  ScopedDiagnosticHandler h(&ctx, [&](Diagnostic &d) {
    out = hetpar::DiagnosticPrinter::format(d);
    return success();
  });
  emitError(loc) << text;
  return out;
}

TEST(Diagnostics, NodeLocationsNameTheNode) {
  MLIRContext ctx;
  Location file = FileLineColLoc::get(&ctx, "model.onnx", 0, 0);
  Location node = NameLoc::get(StringAttr::get(&ctx, "MatMul_3"), file);
  EXPECT_EQ(
      formatError(ctx, node, "'onnx.MatMul' op cannot multiply 2x3 by 4x5"),
      "model.onnx: error: node 'MatMul_3': cannot multiply 2x3 by 4x5");
  // A message that already names the node is not prefixed twice.
  EXPECT_EQ(formatError(ctx, node, "node 'MatMul_3' (MatMul): bad"),
            "model.onnx: error: node 'MatMul_3' (MatMul): bad");
}

TEST(Diagnostics, TextLocationsKeepLineAndColumn) {
  MLIRContext ctx;
  Location loc = FileLineColLoc::get(&ctx, "in.mlir", 7, 3);
  EXPECT_EQ(formatError(ctx, loc, "oops"), "in.mlir:7:3: error: oops");
}
} // namespace
