//===- Gradient.h - building backward ops for GradientOpInterface -*- C++
//-*-===//
//
// GradientBuilder is what a gradient rule (GradientOpInterface::buildGradients)
// builds its backward ops with: onnx ops typed by their own shape rules,
// constants, and the reductions that undo broadcasting. It also tells a rule
// which operands need a gradient at all.
//
// Each call inserts an op, so a call whose arguments are two or more such
// calls (`g.sub(g.scalar(..), g.mul(..))`) orders its ops by the C++
// compiler's argument evaluation order, which gcc and clang choose
// differently. Build at most one op-creating argument per call, naming the
// others first, so that the IR is the same under every compiler.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_ONNX_GRADIENT_H
#define HETPAR_DIALECT_ONNX_GRADIENT_H

#include "mlir/IR/Builders.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace hetpar {

class GradientBuilder {
public:
  /// Builds at `b`'s insertion point; `needed[i]` says whether operand i of the
  /// op being differentiated needs a gradient. Backward ops take `loc`.
  GradientBuilder(mlir::OpBuilder &b, mlir::Location loc,
                  llvm::ArrayRef<bool> needed)
      : b(b), loc(loc), needed(needed) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location getLoc() const { return loc; }
  /// True when operand i is on a path from a parameter and is a float tensor.
  bool needsGradient(unsigned i) const {
    return i < needed.size() && needed[i];
  }

  /// Creates op `OpT` with `args` (operands and attributes, as OpT::create
  /// takes them after the result types) and sets its result types by its shape
  /// rule. Returns null after an error when the rule fails.
  template <typename OpT, typename... Args>
  mlir::Operation *create(unsigned numResults, mlir::Type elt, Args &&...args) {
    llvm::SmallVector<mlir::Type> types(numResults, placeholder(elt));
    auto op = OpT::create(b, loc, mlir::TypeRange(types),
                          std::forward<Args>(args)...);
    return infer(op.getOperation());
  }
  /// The same for a one-result op; the result's element type is the first
  /// operand's.
  template <typename OpT, typename... Args>
  mlir::Value make(mlir::Value first, Args &&...rest) {
    mlir::Operation *op =
        create<OpT>(1, elementType(first), first, std::forward<Args>(rest)...);
    return op ? op->getResult(0) : mlir::Value();
  }

  // Elementwise arithmetic with ONNX broadcasting.
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  /// A scalar (rank-0) constant of `like`'s element type.
  mlir::Value scalar(double v, mlir::Value like);
  /// An int64 vector constant (shapes, axes).
  mlir::Value i64s(llvm::ArrayRef<int64_t> values);
  /// Zeros of `type`'s shape and element type (a splat constant).
  mlir::Value zeros(mlir::Type type);
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  /// ReduceSum over `axes` (none: no-op), keeping or dropping them.
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> axes,
                        bool keepDims);
  /// Sums the gradient `grad` of a broadcast result down to `target`'s shape:
  /// over the leading axes `target` lacks and the axes where it has extent 1.
  mlir::Value sumToShape(mlir::Value grad, mlir::Type target);
  /// Broadcasts x to `shape` (Expand).
  mlir::Value expand(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// Casts x to the element type `elt` (Cast), or returns x when it has it.
  mlir::Value cast(mlir::Value x, mlir::Type elt);

  static mlir::Type elementType(mlir::Value v);
  static llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);

private:
  static mlir::Type placeholder(mlir::Type elt);
  /// Runs the op's shape rule and sets its result types; null on failure.
  mlir::Operation *infer(mlir::Operation *op);

  mlir::OpBuilder &b;
  mlir::Location loc;
  llvm::ArrayRef<bool> needed;
};

} // namespace hetpar

#endif // HETPAR_DIALECT_ONNX_GRADIENT_H
