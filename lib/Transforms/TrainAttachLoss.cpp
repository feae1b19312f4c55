//===- TrainAttachLoss.cpp - one scalar loss for the training step --------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
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

  /// PyTorch's cross_entropy (mean) of logits [..., C] against int labels
  /// [...]: -mean(sum(log_softmax(logits) * onehot(labels), class axis)).
  Value crossEntropy(Value logits, Value labels) {
    ArrayRef<int64_t> s = GradientBuilder::shapeOf(logits);
    int64_t c = s.back(), n = 1;
    for (int64_t d : s.drop_back())
      n *= d;
    Value flat = g.reshape(logits, {n, c});
    Value lsm = g.make<onnx::LogSoftmaxOp>(flat, int64_t(-1));
    SmallVector<int64_t> range;
    for (int64_t i = 0; i < c; ++i)
      range.push_back(i);
    Value ids = g.cast(g.reshape(labels, {n, 1}), b.getI64Type());
    Operation *eq = g.create<onnx::EqualOp>(1, b.getI1Type(), ids,
                                            g.i64s(range));
    if (!eq)
      return {};
    Value onehot = g.cast(eq->getResult(0), GradientBuilder::elementType(lsm));
    Value picked = g.make<onnx::ReduceSumOp>(g.mul(lsm, onehot), g.i64s({1}),
                                             int64_t(0), int64_t(0));
    return g.neg(
        g.make<onnx::ReduceMeanOp>(picked, Value(), int64_t(0), int64_t(0)));
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
    auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (output >= ret.getNumOperands())
      return func.emitError() << "the model has " << ret.getNumOperands()
                              << " outputs; there is no output " << output
                              << " to compute the loss on";
    Value out = ret.getOperand(output);
    auto t = llvm::dyn_cast<RankedTensorType>(out.getType());
    if (!t || !llvm::isa<FloatType>(t.getElementType()))
      return func.emitError() << "the loss needs a float output; output "
                              << output << " is " << out.getType();
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
                                << output << " is " << out.getType();
      auto lt = RankedTensorType::get(t.getShape().drop_back(),
                                      b.getI64Type());
      value = lb.crossEntropy(out, addLabels(func, lt));
    } else if (loss == "mse") {
      value = lb.mse(out, addLabels(func, t));
    } else {
      return func.emitError() << "unknown loss '" << loss
                              << "' (output, cross-entropy or mse)";
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
