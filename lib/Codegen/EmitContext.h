//===- EmitContext.h - what library-op emitters need ----------*- C++ -*-===//
//
// The services of EmitProgram.cpp's emitter that the emitters of single
// library ops in their own files (EmitGradients.cpp, EmitAttention.cpp) call.
// Private to lib/Codegen.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITCONTEXT_H
#define HETPAR_LIB_CODEGEN_EMITCONTEXT_H

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
};

/// Elements of a static shape.
inline int64_t numel(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
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
