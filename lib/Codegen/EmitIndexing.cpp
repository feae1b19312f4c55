//===- EmitIndexing.cpp - ops that take indices from data -----------------===//
//
// One hp_* kernel launch per op (runtime/include/hetpar/device/
// hetpar_device.h); the scatters first copy their data into the result.
//
//===----------------------------------------------------------------------===//
#include "EmitIndexing.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;
namespace onnx = hetpar::onnx;

namespace {

/// `axis` of a value of rank r, counted from 0.
int64_t normalized(Value v, int64_t axis) {
  int64_t r = static_cast<int64_t>(shapeOf(v).size());
  return axis < 0 ? axis + r : axis;
}

/// The `reduction` of ScatterND/ScatterElements as hp_scatter_combine's
/// code (0 none, 1 add, 2 mul, 3 max, 4 min; the op's verifier allows no
/// other).
int scatterReduction(llvm::StringRef reduction) {
  return llvm::StringSwitch<int>(reduction)
      .Case("add", 1)
      .Case("mul", 2)
      .Case("max", 3)
      .Case("min", 4)
      .Default(0);
}

int emitGather(onnx::GatherOp o, const LibraryEmitContext &ctx) {
  Value data = o.getData(), idx = o.getIndices(), out = o.getResult();
  llvm::ArrayRef<int64_t> s = shapeOf(data);
  int64_t axis = normalized(data, o.getAxis());
  ctx.line(llvm::formatv(
      "hp_gather_launch<{0}, {1}>(ctx, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
      "{9});",
      ctx.storageType(eltOf(data)), ctx.storageType(eltOf(idx)), numelOf(out),
      s[axis], numelOf(idx), numel(s.drop_front(axis + 1)), ctx.ptr(data),
      ctx.ptr(idx), ctx.ptr(out), ctx.indexCheck(o)));
  return 1;
}

int emitGatherElements(onnx::GatherElementsOp o,
                       const LibraryEmitContext &ctx) {
  Value data = o.getData(), idx = o.getIndices(), out = o.getResult();
  llvm::ArrayRef<int64_t> s = shapeOf(data);
  int64_t axis = normalized(data, o.getAxis());
  ctx.line(llvm::formatv(
      "hp_launch(ctx, hp_gather_elements<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
      "{7}, {8}, {9}, {10}, {11});",
      ctx.storageType(eltOf(data)), ctx.storageType(eltOf(idx)), numelOf(out),
      s.size(), axis, hpDims(shapeOf(idx)), hpDims(stridesOf(s)), s[axis],
      ctx.ptr(data), ctx.ptr(idx), ctx.ptr(out), ctx.indexCheck(o)));
  return 1;
}

int emitGatherND(onnx::GatherNDOp o, const LibraryEmitContext &ctx) {
  Value data = o.getData(), idx = o.getIndices(), out = o.getResult();
  llvm::ArrayRef<int64_t> s = shapeOf(data), is = shapeOf(idx);
  int64_t b = o.getBatchDims(), k = is.back();
  llvm::SmallVector<int64_t> st = stridesOf(s);
  int64_t groups = numel(s.take_front(b));
  ctx.line(llvm::formatv(
      "hp_launch(ctx, hp_gather_nd<{0}>, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
      "{8}, {9}, {10}, {11});",
      ctx.storageType(eltOf(data)), numelOf(out), k, hpDims(s.slice(b, k)),
      hpDims(llvm::ArrayRef(st).slice(b, k)),
      numel(is.drop_back()) / std::max<int64_t>(groups, 1),
      numel(s.drop_front(b + k)), numel(s.drop_front(b)), ctx.ptr(data),
      ctx.ptr(idx), ctx.ptr(out), ctx.indexCheck(o)));
  return 1;
}

int emitScatterND(onnx::ScatterNDOp o, const LibraryEmitContext &ctx) {
  Value data = o.getData(), idx = o.getIndices(), upd = o.getUpdates(),
        out = o.getResult();
  llvm::ArrayRef<int64_t> s = shapeOf(data), is = shapeOf(idx);
  int64_t k = is.back();
  llvm::SmallVector<int64_t> st = stridesOf(s);
  ctx.copy(ctx.ptr(data), ctx.ptr(out), numelOf(data), eltOf(data));
  ctx.line(llvm::formatv(
      "hp_launch(ctx, hp_scatter_nd<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, {7}, "
      "{8}, {9}, {10}, {11});",
      ctx.storageType(eltOf(data)), ctx.accType(eltOf(data)),
      numel(s.drop_front(k)), k, hpDims(s.take_front(k)),
      hpDims(llvm::ArrayRef(st).take_front(k)), numel(is.drop_back()),
      scatterReduction(o.getReduction()), ctx.ptr(idx), ctx.ptr(upd),
      ctx.ptr(out), ctx.indexCheck(o)));
  return 1;
}

int emitScatterElements(onnx::ScatterElementsOp o,
                        const LibraryEmitContext &ctx) {
  Value data = o.getData(), idx = o.getIndices(), upd = o.getUpdates(),
        out = o.getResult();
  llvm::ArrayRef<int64_t> s = shapeOf(data), us = shapeOf(upd);
  int64_t axis = normalized(data, o.getAxis());
  ctx.copy(ctx.ptr(data), ctx.ptr(out), numelOf(data), eltOf(data));
  if (us[axis] == 0)
    return 0;
  ctx.line(llvm::formatv(
      "hp_launch(ctx, hp_scatter_elements<{0}, {1}, {2}>, {3}, {4}, {5}, {6}, "
      "{7}, {8}, {9}, {10}, {11}, {12}, {13});",
      ctx.storageType(eltOf(data)), ctx.accType(eltOf(data)),
      ctx.storageType(eltOf(idx)), numelOf(upd) / us[axis], s.size(), axis,
      hpDims(us), hpDims(stridesOf(s)), s[axis],
      scatterReduction(o.getReduction()), ctx.ptr(idx), ctx.ptr(upd),
      ctx.ptr(out), ctx.indexCheck(o)));
  return 1;
}

/// OneHot over [outer, depth, inner] around the new axis. An index outside
/// [-depth, depth) gives off values only (ONNX's rule), so it is no index
/// error and needs no check.
int emitOneHot(onnx::OneHotOp o, const LibraryEmitContext &ctx) {
  Value idx = o.getIndices(), values = o.getValues(), out = o.getResult();
  llvm::ArrayRef<int64_t> y = shapeOf(out);
  int64_t axis = normalized(out, o.getAxis());
  ctx.line(llvm::formatv(
      "hp_launch(ctx, hp_one_hot<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, {7});",
      ctx.storageType(eltOf(values)), ctx.storageType(eltOf(idx)), numelOf(out),
      y[axis], numel(y.drop_front(axis + 1)), ctx.ptr(idx), ctx.ptr(values),
      ctx.ptr(out)));
  return 1;
}

} // namespace

bool hetpar::codegen::isIndexingOp(Operation *op) {
  return isa<onnx::GatherOp, onnx::GatherElementsOp, onnx::GatherNDOp,
             onnx::ScatterNDOp, onnx::ScatterElementsOp, onnx::OneHotOp>(op);
}

int hetpar::codegen::emitIndexingOp(Operation *op,
                                    const LibraryEmitContext &ctx) {
  return llvm::TypeSwitch<Operation *, int>(op)
      .Case([&](onnx::GatherOp o) { return emitGather(o, ctx); })
      .Case(
          [&](onnx::GatherElementsOp o) { return emitGatherElements(o, ctx); })
      .Case([&](onnx::GatherNDOp o) { return emitGatherND(o, ctx); })
      .Case([&](onnx::ScatterNDOp o) { return emitScatterND(o, ctx); })
      .Case([&](onnx::ScatterElementsOp o) {
        return emitScatterElements(o, ctx);
      })
      .Case([&](onnx::OneHotOp o) { return emitOneHot(o, ctx); })
      .Default([](Operation *) { return 0; });
}
