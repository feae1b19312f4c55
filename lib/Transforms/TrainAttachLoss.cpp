//===- TrainAttachLoss.cpp - one scalar loss for the training step --------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/TrainingLabels.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

namespace hetpar {
#define GEN_PASS_DEF_TRAINATTACHLOSSPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
/// Builds the loss ops after the function's last op, typed by their rules.
class LossBuilder {
public:
  LossBuilder(OpBuilder &b, Location loc) : b(b), g(b, loc, {}) {}

  /// PyTorch's cross_entropy (mean, ignore_index -100) of logits [..., C]
  /// against int labels [...]: SoftmaxCrossEntropyLoss on [N, C].
  Value crossEntropy(Value logits, Value labels) {
    ArrayRef<int64_t> s = GradientBuilder::shapeOf(logits);
    int64_t c = s.back(), n = 1;
    for (int64_t d : s.drop_back())
      n *= d;
    Value flat = g.reshape(logits, {n, c});
    Value ids = g.reshape(labels, {n});
    Operation *op = g.create<onnx::SoftmaxCrossEntropyLossOp>(
        2, GradientBuilder::elementType(flat), flat, ids, Value(),
        b.getI64IntegerAttr(-100), b.getStringAttr("mean"));
    return op ? op->getResult(0) : Value();
  }

  /// PyTorch's mse_loss (mean).
  Value mse(Value out, Value target) {
    Value d = g.sub(out, target);
    return g.make<onnx::ReduceMeanOp>(g.mul(d, d), Value(), int64_t(0),
                                      int64_t(0));
  }

private:
  OpBuilder &b;
  GradientBuilder g;
};

struct TrainAttachLossPass
    : public hetpar::impl::TrainAttachLossPassBase<TrainAttachLossPass> {
  using Base::Base;

  /// Appends the labels argument of `type` (batch axis 0).
  Value addLabels(func::FuncOp func, Type type) {
    OpBuilder b(func.getContext());
    SmallVector<NamedAttribute> attrs{
        b.getNamedAttr("onnx.name", b.getStringAttr(labels)),
        b.getNamedAttr(dist::kBatchDimAttrName, b.getI64IntegerAttr(0))};
    unsigned i = func.getNumArguments();
    (void)func.insertArgument(i, type, b.getDictionaryAttr(attrs),
                              func.getLoc());
    return func.getArgument(i);
  }

  LogicalResult attach(func::FuncOp func) {
    if (loss != "output" && loss != "cross-entropy" && loss != "mse")
      return func.emitError()
             << "unknown loss '" << loss << "' (output, cross-entropy or mse)";
    // The option as a number (streamed as an Option, it prints nothing).
    unsigned index = output;
    auto ret =
        llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (index >= ret.getNumOperands())
      return func.emitError() << "the model has " << ret.getNumOperands()
                              << " outputs; there is no output " << index
                              << " to compute the loss on";
    Value out = ret.getOperand(index);
    auto t = llvm::dyn_cast<RankedTensorType>(out.getType());
    if (!t || !llvm::isa<FloatType>(t.getElementType()))
      return func.emitError() << "the loss needs a float output; output "
                              << index << " is " << out.getType();
    if (loss != "output" && !t.hasStaticShape())
      return func.emitError()
             << "the loss needs a static output shape; output " << index
             << " is " << out.getType() << " (run hetpar-onnx-to-static first)";
    // hetpar-run --train reads the labels from <data>/<name>.npy.
    if (loss != "output" &&
        (labels.empty() || labels == "." || labels == ".." ||
         StringRef(labels).find_first_of("/\\") != StringRef::npos))
      return func.emitError()
             << "the labels' name '" << labels
             << "' must be a file name (the training data holds "
                "<name>.npy): not empty, '.' or '..', and without '/' or "
                "'\\' (choose --labels)";
    for (auto [i, arg] : llvm::enumerate(func.getArguments()))
      if (auto n = func.getArgAttrOfType<StringAttr>(i, "onnx.name"))
        if (loss != "output" && n.getValue() == labels)
          return func.emitError() << "the model already has an input named '"
                                  << labels << "' (choose --labels)";
    OpBuilder b(ret);
    LossBuilder lb(b, ret.getLoc());
    Value value;
    if (loss == "output") {
      if (t.getRank() != 0 || ret.getNumOperands() != 1)
        return func.emitError()
               << "--loss output needs one scalar model output; the model "
                  "returns "
               << ret.getOperandTypes()
               << " (use --loss cross-entropy|mse --labels NAME)";
      value = out;
    } else if (loss == "cross-entropy") {
      if (t.getRank() < 2)
        return func.emitError() << "cross-entropy needs logits [batch, ..., "
                                   "classes]; output "
                                << index << " is " << out.getType();
      value = lb.crossEntropy(out, addLabels(func, labelsType(t, loss)));
    } else {
      value = lb.mse(out, addLabels(func, labelsType(t, loss)));
    }
    if (!value)
      return failure();
    ret->setOperands(value);
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getArgumentTypes(), {value.getType()}));
    SmallVector<DictionaryAttr> attrs{b.getDictionaryAttr(
        b.getNamedAttr("onnx.name", b.getStringAttr("loss")))};
    func.setAllResultAttrs(attrs);
    return success();
  }

  void runOnOperation() override {
    auto func = train::stepFunction(getOperation());
    if (failed(func) || failed(attach(*func)))
      signalPassFailure();
  }
};
} // namespace
