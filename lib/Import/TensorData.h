//===- TensorData.h - ONNX tensors and types to MLIR -------------*- C++
//-*-===//
//
// Internal to the importer: element types, tensor types, and the conversion of
// TensorProto data (raw bytes, typed fields, external files) to ElementsAttr
// without copying large buffers.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_IMPORT_TENSORDATA_H
#define HETPAR_LIB_IMPORT_TENSORDATA_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringRef.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace hetpar::import {

/// ONNX TensorProto.DataType code to an MLIR element type; null for the types
/// HetPar does not support (string, complex, float8, int4).
mlir::Type getElementType(mlir::MLIRContext *ctx, int32_t onnxType);

/// Inverse of getElementType; 0 (UNDEFINED) for a type ONNX does not have.
int32_t getONNXElementType(mlir::Type type);

/// The ONNX name of a data type code ("FLOAT", "STRING", ...).
std::string getONNXTypeName(int32_t onnxType);

/// Bytes per element in ONNX raw data (bool is one byte).
int64_t getElementByteSize(mlir::Type type);

/// Where tensor data lives and how it may be read.
struct TensorSource {
  mlir::MLIRContext *context;
  /// Folder of the model file; external data must resolve inside it.
  std::string modelDir;
  bool loadExternalData = true;
  int64_t inlineLimitBytes = 1024;
  /// Receives the resolved path of each external data file read, when set.
  std::vector<std::string> *externalFilesRead = nullptr;
};

/// Converts `tensor` to an ElementsAttr. Raw data is moved out of the proto (no
/// copy); external data is memory-mapped. `what` names the tensor in errors
/// ("initializer 'w'"). Emits an error at `loc` and fails on a bad tensor: an
/// unsupported type, a negative dimension, an element count that overflows,
/// data shorter or longer than the shape says, or external data that is
/// missing, outside the model folder, or shorter than offset + length.
mlir::FailureOr<mlir::ElementsAttr> importTensor(::onnx::TensorProto &tensor,
                                                 const TensorSource &source,
                                                 mlir::Location loc,
                                                 llvm::StringRef what);

} // namespace hetpar::import

#endif // HETPAR_LIB_IMPORT_TENSORDATA_H
