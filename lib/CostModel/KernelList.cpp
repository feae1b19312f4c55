//===- KernelList.cpp - the kernels of a model, for calibration
//------------===//

#include "hetpar/CostModel/KernelList.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "llvm/Support/FormatVariadic.h"

#include <numeric>

using namespace mlir;

namespace hetpar {

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t{1},
                         std::multiplies<>());
}

RankedTensorType typeOf(Value v) {
  return llvm::dyn_cast<RankedTensorType>(v.getType());
}

/// The kernel's fields (without the predicted time and the name), with float32
/// elements held in `dtype`, or an empty string when hetpar-profile has
/// nothing like this op.
std::string describe(Operation *op, const OpWork &work, FloatMode dtype) {
  auto result =
      op->getNumResults() ? typeOf(op->getResult(0)) : RankedTensorType();
  if (!result)
    return "";
  auto bytes =
      static_cast<unsigned>(elementBytes(result.getElementType(), dtype));
  auto shape = result.getShape();
  switch (work.cls) {
  case OpClass::MatMul: {
    auto a = typeOf(op->getOperand(0)), b = typeOf(op->getOperand(1));
    if (!a || !b || a.getRank() < 2 || b.getRank() < 1 || result.getRank() < 2)
      return "";
    if (auto gemm = llvm::dyn_cast<onnx::GemmOp>(op)) {
      int64_t k = gemm.getTransA() ? a.getDimSize(0) : a.getDimSize(1);
      return llvm::formatv("gemm {0} {1} {2} 1 {3}", shape[0], shape[1], k,
                           bytes);
    }
    if (!llvm::isa<onnx::MatMulOp>(op) || b.getRank() < 2)
      return "";
    int64_t k = a.getShape().back(), n = shape.back();
    int64_t m = shape[shape.size() - 2];
    // A weight matrix shared by every batch: one GEMM with the rows stacked.
    if (b.getRank() == 2)
      return llvm::formatv("gemm {0} {1} {2} 1 {3}", product(shape.drop_back()),
                           n, k, bytes);
    return llvm::formatv("gemm {0} {1} {2} {3} {4}", m, n, k,
                         product(shape.drop_back(2)), bytes);
  }
  case OpClass::Elementwise: {
    std::string inputs;
    unsigned count = 0;
    for (Value v : op->getOperands())
      if (auto t = typeOf(v)) {
        inputs += " " + std::to_string(product(t.getShape()));
        ++count;
      }
    if (count == 0 || count > 3)
      return "";
    return llvm::formatv("elementwise {0} {1} {2}{3}", product(shape), bytes,
                         count, inputs);
  }
  case OpClass::Reduction: {
    auto in = typeOf(op->getOperand(0));
    int64_t rows = product(shape), total = in ? product(in.getShape()) : 0;
    if (!in || rows == 0 || total % rows)
      return "";
    return llvm::formatv(
        "reduce {0} {1} {2}", rows, total / rows,
        static_cast<unsigned>(elementBytes(in.getElementType(), dtype)));
  }
  case OpClass::Softmax: {
    int64_t cols = shape.empty() ? 1 : shape.back();
    return llvm::formatv("softmax {0} {1} {2}", product(shape) / cols, cols,
                         bytes);
  }
  case OpClass::Normalization: {
    auto ln = llvm::dyn_cast<onnx::LayerNormalizationOp>(op);
    if (!ln)
      return "";
    int64_t axis = ln.getAxis();
    if (axis < 0)
      axis += shape.size();
    if (axis < 0 || axis > static_cast<int64_t>(shape.size()))
      return "";
    return llvm::formatv("layernorm {0} {1} {2}",
                         product(shape.take_front(axis)),
                         product(shape.drop_front(axis)), bytes);
  }
  case OpClass::DataMovement:
    return llvm::formatv("copy {0}", static_cast<int64_t>(work.activationBytes +
                                                          work.weightBytes));
  case OpClass::Other:
    return "";
  }
  return "";
}

} // namespace

void writeKernelList(func::FuncOp func, const CostModel &model,
                     const Device &device, llvm::raw_ostream &os) {
  os << "# kernels of @" << func.getSymName() << ", times predicted for "
     << device.kind << " by the '" << model.name() << "' cost model\n";
  FloatMode dtype = getComputeDtype(func).value_or(FloatMode::F32);
  func.walk([&](Operation *op) {
    if (op->getParentOp() != func.getOperation())
      return;
    auto work = measureOp(op, dtype);
    if (!work || work->kernels == 0 || op->hasTrait<OpTrait::IsTerminator>())
      return;
    std::string name = onnx::getNodeName(op->getLoc());
    if (name.empty())
      name = op->getName().getStringRef().str();
    std::string fields = describe(op, *work, dtype);
    if (fields.empty()) {
      os << "# skipped (no equivalent kernel): " << onnx::describeNode(op)
         << "\n";
      return;
    }
    os << fields
       << llvm::formatv(" {0:e}", model.computeTime(*work, device, 1, 1, false))
       << " " << name << "\n";
  });
}

} // namespace hetpar
