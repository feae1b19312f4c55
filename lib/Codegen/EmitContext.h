//===- EmitContext.h - what library-op emitters need ----------*- C++ -*-===//
//
// The services of EmitProgram.cpp's emitter that the emitters of single
// library ops in their own files (EmitGradients.cpp, EmitAttention.cpp) call.
// Private to lib/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITCONTEXT_H
#define HETPAR_LIB_CODEGEN_EMITCONTEXT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <string>

namespace hetpar::codegen {

/// Owning std::functions: the context outlives the lambdas that build it.
struct LibraryEmitContext {
  /// C expression of the pointer to a value's first element.
  std::function<std::string(mlir::Value)> ptr;
  /// C storage type of an element type under the float mode ("hp_bf16").
  std::function<std::string(mlir::Type)> storageType;
  /// C accumulator type of an element type ("float", "double").
  std::function<std::string(mlir::Type)> accType;
  /// C expression of the op's scratch bytes (char *) in the arena.
  std::function<std::string(mlir::Operation *)> scratch;
  /// Appends one statement to the host function.
  std::function<void(const llvm::Twine &)> line;
  /// The trailing arguments of a kernel that checks indices from data:
  /// "ctx->index_error, <node number>", or a null check when the program
  /// does not check them.
  std::function<std::string(mlir::Operation *)> indexCheck;
  /// Emits a copy of `n` elements of type `elt` from `src` to `dst` (C
  /// pointer expressions), counted as a library call.
  std::function<void(const std::string &src, const std::string &dst, int64_t n,
                     mlir::Type elt)>
      copy;
};

/// Elements of a static shape.
inline int64_t numel(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The static shape and element type of a ranked tensor value.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline mlir::Type eltOf(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType()).getElementType();
}
inline int64_t numelOf(mlir::Value v) { return numel(shapeOf(v)); }

/// Row-major element strides of `shape`.
inline llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    s[d - 1] = s[d] * shape[d];
  return s;
}

/// "hp_dims{{a, b, c}}" for an hp_dims argument ("hp_dims{{0}}" when empty).
inline std::string hpDims(llvm::ArrayRef<int64_t> v) {
  std::string s = "hp_dims{{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.empty() ? "0}}" : "}}");
}

/// A C array initializer: "{1, 2, 3}".
inline std::string cArray(llvm::ArrayRef<int64_t> v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITCONTEXT_H
