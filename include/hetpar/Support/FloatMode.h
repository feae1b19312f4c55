//===- FloatMode.h - the compute dtype of float32 tensors ---------*- C++
//-*-===//
//
// One choice, made once (hetpar-compile's --dtype, hetpar-search-plan's
// `dtype`), says in which type a model's float32 tensors are stored and
// multiplied: float32, or 16 bits (float16, bfloat16) with float32
// accumulation. Code generation stores them so (CodegenOptions::floatMode);
// the planner reads the same choice from the module attribute
// `hetpar.compute_dtype`, so the search, the simulator and the cost model see
// one fact: GEMMs on tensor cores, 2 bytes per element for activations,
// weights, gradients and every transfer and collective.
//
// Units: bytes.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SUPPORT_FLOATMODE_H
#define HETPAR_SUPPORT_FLOATMODE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace hetpar {

/// Storage and compute type of a model's float32 tensors. Tensors of other
/// types (integers, float16 already, float64) keep theirs.
enum class FloatMode { F32, F16, BF16 };

/// Parses "float32" / "float16" / "bfloat16" (also f32, f16, bf16).
std::optional<FloatMode> parseFloatMode(llvm::StringRef name);
/// "float32", "float16" or "bfloat16".
llvm::StringRef floatModeName(FloatMode mode);

/// The module attribute holding the compute dtype as a string
/// (floatModeName); float32 when absent.
inline constexpr llvm::StringLiteral kComputeDtypeAttrName =
    "hetpar.compute_dtype";

/// Writes `mode` onto `module` as its compute dtype.
void setComputeDtype(mlir::ModuleOp module, FloatMode mode);

/// The compute dtype of the module that is or holds `op`: float32 when the
/// attribute is absent (or `op` is in no module); std::nullopt when the
/// attribute is there but not one of floatModeName's strings.
std::optional<FloatMode> getComputeDtype(mlir::Operation *op);

/// Bytes one element of `elementType` takes when float32 tensors are held in
/// `mode`: 2 for float32 under F16 or BF16, otherwise the type's width (a
/// bool, i1, takes one byte, as ONNX and the generated code store it).
double elementBytes(mlir::Type elementType, FloatMode mode);

/// Bytes of a value of `type` in `mode`: elements times elementBytes for a
/// ranked tensor of static shape, 0 for anything else.
double tensorBytes(mlir::Type type, FloatMode mode);

/// Whether a matrix product with operands of `elementType` runs on tensor
/// cores (the device's tensorFlops, not fp32Flops): float16 and bfloat16
/// operands, and float32 ones held in 16 bits by `mode`.
bool usesTensorCores(mlir::Type elementType, FloatMode mode);

} // namespace hetpar

#endif // HETPAR_SUPPORT_FLOATMODE_H
