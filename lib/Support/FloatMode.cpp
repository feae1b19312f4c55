//===- FloatMode.cpp - the compute dtype of float32 tensors ---------------===//
#include "hetpar/Support/FloatMode.h"

#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace hetpar {

std::optional<FloatMode> parseFloatMode(llvm::StringRef name) {
  if (name == "float32" || name == "f32")
    return FloatMode::F32;
  if (name == "float16" || name == "f16")
    return FloatMode::F16;
  if (name == "bfloat16" || name == "bf16")
    return FloatMode::BF16;
  return std::nullopt;
}

llvm::StringRef floatModeName(FloatMode mode) {
  switch (mode) {
  case FloatMode::F32:
    return "float32";
  case FloatMode::F16:
    return "float16";
  case FloatMode::BF16:
    return "bfloat16";
  }
  return "float32";
}

void setComputeDtype(ModuleOp module, FloatMode mode) {
  module->setAttr(kComputeDtypeAttrName,
                  StringAttr::get(module.getContext(), floatModeName(mode)));
}

std::optional<FloatMode> getComputeDtype(Operation *op) {
  auto module = llvm::dyn_cast_or_null<ModuleOp>(op);
  if (!module && op)
    module = op->getParentOfType<ModuleOp>();
  if (!module)
    return FloatMode::F32;
  Attribute attr = module->getAttr(kComputeDtypeAttrName);
  if (!attr)
    return FloatMode::F32;
  auto name = llvm::dyn_cast<StringAttr>(attr);
  if (!name)
    return std::nullopt;
  return parseFloatMode(name.getValue());
}

double elementBytes(Type elementType, FloatMode mode) {
  if (elementType.isF32() && mode != FloatMode::F32)
    return 2;
  if (auto complex = llvm::dyn_cast<ComplexType>(elementType))
    return 2 * elementBytes(complex.getElementType(), FloatMode::F32);
  if (!elementType.isIntOrFloat())
    return 0;
  unsigned bits = elementType.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : bits / 8;
}

double tensorBytes(Type type, FloatMode mode) {
  auto st = llvm::dyn_cast<RankedTensorType>(type);
  if (!st)
    return 0;
  auto n = getNumElements(st.getShape());
  if (!n)
    return 0;
  return static_cast<double>(*n) * elementBytes(st.getElementType(), mode);
}

bool usesTensorCores(Type elementType, FloatMode mode) {
  return elementType.isF16() || elementType.isBF16() ||
         (elementType.isF32() && mode != FloatMode::F32);
}

} // namespace hetpar
