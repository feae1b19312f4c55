//===- ONNXDialect.h - the onnx dialect ---------------------------*- C++
//-*-===//
#ifndef HETPAR_DIALECT_ONNX_ONNXDIALECT_H
#define HETPAR_DIALECT_ONNX_ONNXDIALECT_H

#include "mlir/IR/Dialect.h"

#include <functional>

#include "hetpar/Dialect/ONNX/ONNXDialect.h.inc"

#endif // HETPAR_DIALECT_ONNX_ONNXDIALECT_H
