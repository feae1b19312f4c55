//===- FuseConv.cpp - hetpar-onnx-fuse-conv -------------------------------===//
//
// A Conv followed by its residual Add and/or its activation becomes one
// onnx.FusedConv, whose code applies the bias, the residual and the
// activation to each output as its sum is finished (Passes.td has the
// rules). Two match helpers peel the optional steps off the Conv's result.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ClipBounds.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

namespace hetpar {
#define GEN_PASS_DEF_FUSECONVPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// What follows a Conv: the ops to fold into it, in order.
struct ConvMatch {
  onnx::ConvOp conv;
  Value residual;
  StringRef activation = "none";
  SmallVector<float, 2> params;
  /// The matched ops after the Conv, in program order.
  SmallVector<Operation *> tail;

  Value result() {
    return tail.empty() ? Value(conv.getY()) : tail.back()->getResult(0);
  }
};

/// The only user of `v`, when it has exactly one use.
Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// The one float value of a constant scalar bound, or `absent` without one;
/// std::nullopt when the bound is not a constant scalar.
std::optional<float> constantBound(Value v, float absent) {
  if (!v)
    return absent;
  ElementsAttr e = getConstantElements(v);
  if (!e || e.getNumElements() != 1 ||
      !llvm::isa<FloatType>(e.getElementType()))
    return std::nullopt;
  float f =
      static_cast<float>((*e.getValues<APFloat>().begin()).convertToDouble());
  if (std::isnan(f))
    return std::nullopt;
  return f;
}

/// Add(Y, Z) or Add(Z, Y) with Z of Y's exact static type: Z becomes the
/// residual. (Two equal dynamic types may still broadcast at run time.)
void matchResidual(ConvMatch &m) {
  Value y = m.result();
  auto add = llvm::dyn_cast_or_null<onnx::AddOp>(soleUser(y));
  auto type = llvm::dyn_cast<RankedTensorType>(y.getType());
  if (!add || !type || !type.hasStaticShape() ||
      add.getC().getType() != y.getType())
    return;
  Value z = add.getA() == y ? add.getB() : add.getA();
  if (z.getType() != y.getType())
    return;
  m.residual = z;
  m.tail.push_back(add);
}

/// The bounds of Clip(Y, min, max) when they are constant scalars, a
/// missing one the largest float of Y's element type (ONNX:
/// numeric_limits::lowest() and max(); infinity for wider types).
std::optional<std::pair<float, float>> clipBounds(onnx::ClipOp clip) {
  // float: wider types' largest value is infinity here.
  float largest = static_cast<float>(onnx::clipDefaultBound(
      llvm::cast<ShapedType>(clip.getType()).getElementType()));
  std::optional<float> lo = constantBound(clip.getMin(), -largest);
  std::optional<float> hi = constantBound(clip.getMax(), largest);
  if (!lo || !hi || *lo > *hi)
    return std::nullopt;
  return std::make_pair(*lo, *hi);
}

/// Relu(Y), Clip(Y, min, max) with constant scalar bounds, or Relu then such
/// a Clip (PyTorch 1.13 exports ReLU6 so): Clip(Relu(v), lo, hi) is
/// Clip(v, max(lo, 0), hi), NaN and -0 included (hp_max gives +0 for
/// max(-0, 0) either way).
void matchActivation(ConvMatch &m) {
  Operation *user = soleUser(m.result());
  bool relu = false;
  if (auto r = llvm::dyn_cast_or_null<onnx::ReluOp>(user)) {
    m.activation = "Relu";
    m.tail.push_back(r);
    relu = true;
    user = soleUser(r.getY());
  }
  auto clip = llvm::dyn_cast_or_null<onnx::ClipOp>(user);
  if (!clip || clip.getInput() != m.result())
    return;
  auto bounds = clipBounds(clip);
  if (!bounds || (relu && bounds->second < 0.0f))
    return;
  float lo = relu ? std::max(bounds->first, 0.0f) : bounds->first;
  m.activation = "Clip";
  m.params = {lo, bounds->second};
  m.tail.push_back(clip);
}

/// Replaces the Conv and its tail by one FusedConv where the tail ended.
void fuse(ConvMatch &m) {
  Operation *last = m.tail.back();
  OpBuilder b(last);
  onnx::ConvOp c = m.conv;
  auto fused = onnx::FusedConvOp::create(
      b, c.getLoc(), m.result().getType(), c.getX(), c.getW(), c.getB(),
      m.residual, c.getAutoPadAttr(), c.getDilationsAttr(), c.getGroupAttr(),
      c.getKernelShapeAttr(), c.getPadsAttr(), c.getStridesAttr(),
      b.getStringAttr(m.activation),
      m.params.empty() ? DenseF32ArrayAttr()
                       : b.getDenseF32ArrayAttr(m.params));
  last->getResult(0).replaceAllUsesWith(fused.getY());
  for (Operation *op : llvm::reverse(m.tail))
    op->erase();
  c->erase();
}

struct FuseConvPass : public hetpar::impl::FuseConvPassBase<FuseConvPass> {
  void runOnOperation() override {
    SmallVector<onnx::ConvOp> convs;
    getOperation().walk([&](onnx::ConvOp op) { convs.push_back(op); });
    for (onnx::ConvOp conv : convs) {
      ConvMatch m{conv};
      matchResidual(m);
      matchActivation(m);
      if (!m.tail.empty())
        fuse(m);
    }
  }
};

} // namespace
