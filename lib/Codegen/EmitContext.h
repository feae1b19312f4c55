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

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_EMITCONTEXT_H
