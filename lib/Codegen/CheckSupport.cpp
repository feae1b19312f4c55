//===- CheckSupport.cpp - which ops code generation handles ---------------===//
//
// Runs before anything is generated or written, so that an unsupported op
// stops hetpar-compile with an error naming op and node and no output.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Codegen/Codegen.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hetpar;
namespace onnx = hetpar::onnx;

/// Element types a device program stores: the float types, bool and 8- to
/// 64-bit integers.
static bool supportedElementType(Type t) {
  if (t.isF32() || t.isF16() || t.isBF16() || t.isF64())
    return true;
  if (auto i = llvm::dyn_cast<IntegerType>(t))
    return llvm::is_contained({1u, 8u, 16u, 32u, 64u}, i.getWidth());
  return false;
}

static bool isConstant(Value v) { return !v || getConstantElements(v); }

/// Why `op` cannot be generated, or an empty string.
static std::string unsupportedReason(Operation *op) {
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults())) {
    if (llvm::isa<NoneType>(v.getType()))
      continue;
    auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
    if (!t || !t.hasStaticShape())
      return "a tensor without a static shape";
    if (!supportedElementType(t.getElementType())) {
      std::string s;
      llvm::raw_string_ostream(s) << "element type " << t.getElementType();
      return s;
    }
    if (t.getRank() > 8)
      return "rank " + std::to_string(t.getRank()) + " (at most 8)";
  }
  if (op->getDialect() && op->getDialect()->getNamespace() == "dist") {
    if (!op->getParentOfType<func::FuncOp>()->hasAttr(dist::kDeviceAttrName))
      return "only per-device functions (dist.device) have code generation "
             "for dist ops";
    return "";
  }
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([](onnx::GenericOp) { return "no code generation for this op"; })
      .Case<onnx::NonZeroOp>([](Operation *) {
        return "its result shape depends on the input values";
      })
      .Case<onnx::ShapeOp, onnx::SizeOp, onnx::ConstantOfShapeOp,
            onnx::RangeOp>(
          [](Operation *) { return "its result was not folded to a constant"; })
      .Case([](onnx::BatchNormalizationOp o) -> std::string {
        // Training mode: one storage type for the per-channel operands
        // (hp_batch_norm_train); inference is elementwise.
        if (o.getTrainingMode() == 0)
          return "";
        Type s =
            llvm::cast<ShapedType>(o.getScale().getType()).getElementType();
        for (Value v : {o.getB(), o.getInputMean(), o.getInputVar()})
          if (llvm::cast<ShapedType>(v.getType()).getElementType() != s)
            return "scale, B, mean and var of different element types";
        return "";
      })
      .Case([](onnx::PadOp o) -> std::string {
        llvm::StringRef m = o.getMode();
        if (m != "constant" && m != "reflect" && m != "edge" && m != "wrap")
          return ("mode '" + m + "'").str();
        if (!isConstant(o.getPads()) || !isConstant(o.getAxes()))
          return "pads or axes that are not constants";
        return "";
      })
      .Case([](onnx::ResizeOp o) -> std::string {
        if (o.getAntialias())
          return "antialias";
        if (o.getKeepAspectRatioPolicy() != "stretch")
          return ("keep_aspect_ratio_policy '" + o.getKeepAspectRatioPolicy() +
                  "'")
              .str();
        auto isF32 = [](Value v) {
          return llvm::cast<ShapedType>(v.getType()).getElementType().isF32();
        };
        if (o.getCoordinateTransformationMode() == "tf_crop_and_resize" &&
            (!o.getRoi() ||
             (!getConstantElements(o.getRoi()) && !isF32(o.getRoi()))))
          return "tf_crop_and_resize without a float32 or constant roi";
        if (!llvm::is_contained({"half_pixel", "half_pixel_symmetric",
                                 "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_crop_and_resize",
                                 "tf_half_pixel_for_nn"},
                                o.getCoordinateTransformationMode()))
          return ("coordinate_transformation_mode '" +
                  o.getCoordinateTransformationMode() + "'")
              .str();
        if (!llvm::is_contained(
                {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
                o.getNearestMode()))
          return ("nearest_mode '" + o.getNearestMode() + "'").str();
        llvm::SmallVector<int64_t> extents;
        llvm::SmallVector<double> scales;
        std::string reason;
        // Scales or sizes from data: the static result type gives the
        // extents, the kernel reads float32 scales (sizes need no values).
        if (failed(o.getAxes(extents, scales, reason)) &&
            !(StringRef(reason).ends_with("are not constants") &&
              (!o.getScales() || isF32(o.getScales()))))
          return reason;
        return "";
      })
      .Case([](onnx::SliceOp o) -> std::string {
        if (!isConstant(o.getStarts()) || !isConstant(o.getEnds()) ||
            !isConstant(o.getAxes()) || !isConstant(o.getSteps()))
          return "starts, ends, axes or steps that are not constants";
        return "";
      })
      .Case([](onnx::CumSumOp o) -> std::string {
        return isConstant(o->getOperand(1)) ? ""
                                            : "an axis that is not a constant";
      })
      .Case<onnx::ReduceMeanOp, onnx::ReduceSumOp, onnx::ReduceMaxOp,
            onnx::ReduceMinOp, onnx::ReduceProdOp, onnx::ReduceL1Op,
            onnx::ReduceL2Op, onnx::ReduceSumSquareOp, onnx::ReduceLogSumExpOp>(
          [](Operation *o) -> std::string {
            if (o->getNumOperands() > 1 && !isConstant(o->getOperand(1)))
              return "axes that are not constants";
            return "";
          })
      .Case([](onnx::MaxPoolOp o) -> std::string {
        if (o->getNumResults() > 1 && o->getResult(1) &&
            !o->getResult(1).use_empty() && o.getStorageOrder() != 0)
          return "Indices in column-major storage order";
        return "";
      })
      .Case([](onnx::LayerNormalizationOp o) -> std::string {
        Type s =
            llvm::cast<ShapedType>(o->getOperand(1).getType()).getElementType();
        for (Value r : o->getResults().drop_front())
          if (llvm::cast<ShapedType>(r.getType()).getElementType() != s)
            return "Mean/InvStdDev of a type other than Scale's";
        return "";
      })
      .Case<onnx::SoftmaxCrossEntropyLossOp, onnx::NegativeLogLikelihoodLossOp,
            onnx::SoftmaxCrossEntropyLossGradOp,
            onnx::NegativeLogLikelihoodLossGradOp>(
          [](Operation *o) -> std::string {
            // A label must name one of C classes: with C = 0 there is none
            // to read (and ONNX gives no meaning to such a loss).
            Value x = o->getOperand(isa<onnx::SoftmaxCrossEntropyLossOp,
                                        onnx::NegativeLogLikelihoodLossOp>(o)
                                        ? 0
                                        : 1);
            auto s = llvm::cast<RankedTensorType>(x.getType()).getShape();
            int64_t positions = s[0];
            for (int64_t d : s.drop_front(2))
              positions *= d;
            if (s[1] == 0 && positions != 0)
              return "an empty class axis (C = 0)";
            return "";
          })
      .Default([](Operation *) { return ""; });
}

LogicalResult hetpar::codegen::checkCodegenSupport(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("code generation needs a function of one block");
  // A module that is not static at all gets one error, not one per op.
  for (BlockArgument arg : func.getArguments()) {
    auto t = llvm::dyn_cast<RankedTensorType>(arg.getType());
    if (!t || !t.hasStaticShape())
      return func.emitError()
             << "input " << arg.getArgNumber() << " has type " << arg.getType()
             << ": code generation needs a fully static module (fix the input "
                "shapes: hetpar-compile --input-shape, or hetpar-opt "
                "--hetpar-onnx-to-static)";
  }
  bool ok = true;
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op) || op.hasTrait<OpTrait::ConstantLike>())
      continue;
    std::string reason = unsupportedReason(&op);
    if (reason.empty())
      continue;
    std::string name = op.getName().stripDialect().str();
    if (auto g = dyn_cast<onnx::GenericOp>(op))
      name = g.getOpType().str();
    op.emitError() << "unsupported op " << name << ": " << reason;
    ok = false;
  }
  return success(ok);
}
