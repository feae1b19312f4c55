//===- EmitGradients.cpp - the fused row-wise gradient ops ---------------===//
//
// SoftmaxGrad / LogSoftmaxGrad: hp_softmax_grad_launch over [outer, len,
// inner] (len the extent of `axis`); LayerNormalizationGrad:
// hp_layer_norm_grad_launch over rows of len = prod(X.shape[axis:]), its
// (mean, inv) pairs in the op's arena scratch. A result without uses gets a
// null pointer and is not computed.
//
//===----------------------------------------------------------------------===//

#include "EmitGradients.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;
namespace onnx = hetpar::onnx;

namespace {

int64_t normalizedAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// A float literal for the kernels' `float eps` (finite by construction:
/// the ODS default or an imported attribute).
std::string floatArg(double v) {
  if (!std::isfinite(v))
    return std::isnan(v) ? "NAN" : (v < 0 ? "-INFINITY" : "INFINITY");
  return llvm::formatv("{0:e8}f", v).str();
}

/// `ptr(v)` when v has uses, else a null pointer of storage type `type`.
std::string resultPtr(Value v, const std::string &type,
                      const LibraryEmitContext &ctx) {
  return v.use_empty() ? "(" + type + " *)0" : ctx.ptr(v);
}

bool layerNormStatsUsed(onnx::LayerNormalizationGradOp op) {
  return !op.getDScale().use_empty() || !op.getDB().use_empty();
}

int emitSoftmaxGrad(Operation *op, Value dY, Value y, int64_t axisAttr,
                    bool log, const LibraryEmitContext &ctx) {
  ArrayRef<int64_t> s = shapeOf(y);
  int64_t axis = normalizedAxis(axisAttr, static_cast<int64_t>(s.size()));
  int64_t total = numel(s);
  if (total == 0)
    return 0;
  int64_t inner = numel(s.drop_front(axis + 1));
  Type elt = eltOf(y);
  ctx.line(llvm::formatv(
      "hp_softmax_grad_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, {6}, {7}, "
      "{8});",
      ctx.storageType(elt), ctx.accType(elt), log ? "true" : "false",
      total / s[axis], s[axis], inner, ctx.ptr(dY), ctx.ptr(y),
      ctx.ptr(op->getResult(0))));
  return 1;
}

int emitLayerNormGrad(onnx::LayerNormalizationGradOp op,
                      const LibraryEmitContext &ctx) {
  Value x = op.getX();
  ArrayRef<int64_t> s = shapeOf(x);
  int64_t axis = normalizedAxis(op.getAxis(), static_cast<int64_t>(s.size()));
  int64_t len = numel(s.drop_front(axis));
  int64_t rows = numel(s.take_front(axis));
  std::string T = ctx.storageType(eltOf(x));
  std::string S = ctx.storageType(eltOf(op.getScale()));
  std::string A = ctx.accType(eltOf(x));
  std::string stats = layerNormStatsUsed(op)
                          ? "((" + A + " *)" + ctx.scratch(op) + ")"
                          : "(" + A + " *)0";
  ctx.line(llvm::formatv(
      "hp_layer_norm_grad_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, {6}, {7}, "
      "{8}, {9}, {10}, {11}, {12});",
      T, S, A, rows, len, floatArg(static_cast<double>(op.getEpsilon())),
      ctx.ptr(op.getDY()), ctx.ptr(x), ctx.ptr(op.getScale()),
      resultPtr(op.getDX(), T, ctx), resultPtr(op.getDScale(), S, ctx),
      resultPtr(op.getDB(), S, ctx), stats));
  return 1;
}

} // namespace

bool hetpar::codegen::isRowGradient(Operation *op) {
  return isa<onnx::SoftmaxGradOp, onnx::LogSoftmaxGradOp,
             onnx::LayerNormalizationGradOp>(op);
}

int64_t hetpar::codegen::rowGradientScratchBytes(Operation *op) {
  auto ln = dyn_cast<onnx::LayerNormalizationGradOp>(op);
  if (!ln || !layerNormStatsUsed(ln))
    return 0;
  ArrayRef<int64_t> s = shapeOf(ln.getX());
  int64_t axis = normalizedAxis(ln.getAxis(), static_cast<int64_t>(s.size()));
  int64_t acc = eltOf(ln.getX()).isF64() ? 8 : 4;
  return 2 * numel(s.take_front(axis)) * acc;
}

int hetpar::codegen::emitRowGradient(Operation *op,
                                     const LibraryEmitContext &ctx) {
  if (auto g = dyn_cast<onnx::SoftmaxGradOp>(op))
    return emitSoftmaxGrad(op, g.getDY(), g.getY(), g.getAxis(), false, ctx);
  if (auto g = dyn_cast<onnx::LogSoftmaxGradOp>(op))
    return emitSoftmaxGrad(op, g.getDY(), g.getY(), g.getAxis(), true, ctx);
  return emitLayerNormGrad(cast<onnx::LayerNormalizationGradOp>(op), ctx);
}
