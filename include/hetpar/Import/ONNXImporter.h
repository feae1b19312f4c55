//===- ONNXImporter.h - ONNX model to onnx dialect ----------------*- C++
//-*-===//
//
// Imports an ONNX model (binary protobuf `.onnx`, or the ONNX textual syntax in
// `.onnxtxt` files) into a module holding one `func.func` per graph, with onnx
// dialect ops. Every problem with the input is reported as one diagnostic
// naming the file and the node; the importer never asserts on input.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_IMPORT_ONNXIMPORTER_H
#define HETPAR_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace hetpar {

struct ONNXImportOptions {
  /// Shapes fixed for graph inputs, by input name (`--input-shape NAME=2x128`).
  /// A dimension given as ShapedType::kDynamic keeps what the model declares. A
  /// shape must have the declared rank and agree with the declared static
  /// extents.
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// When false, external data files are not opened: weights stored outside the
  /// model become `dense_resource` attributes without data (enough for
  /// planning).
  bool loadExternalData = true;
  /// Tensors of at most this many bytes become `dense` attributes, larger ones
  /// `dense_resource` blobs that refer to the bytes without copying them.
  int64_t inlineLimitBytes = 1024;
  /// Marks the onnx.Constant of every graph initializer with its name
  /// (onnx::kInitializerAttrName), so that training can tell parameters from
  /// Constant nodes. Off for inference: the mark keeps equal initializers from
  /// being merged.
  bool markInitializers = false;

  /// When set, receives the resolved path of every external data file the
  /// import reads (so that tools can refuse to write over one).
  std::vector<std::string> *externalFilesRead = nullptr;

  /// Adds `--input-shape` specs ("NAME=2x128"); the error names the bad spec.
  llvm::Error addInputShapeSpecs(llvm::ArrayRef<std::string> specs);
};

/// Imports the model at `path`. Diagnostics go to the context's handler;
/// returns a null module on failure (after emitting at least one error).
mlir::OwningOpRef<mlir::ModuleOp>
importONNXModel(llvm::StringRef path, mlir::MLIRContext *context,
                const ONNXImportOptions &options = {});

/// Imports a model held in memory: binary protobuf, or the textual syntax
/// when `name` ends in `.onnxtxt`. `name` stands for the file in
/// diagnostics, and external data is looked for beside it (set
/// `options.loadExternalData` to false to read none). Returns a null module
/// on failure, as importONNXModel.
mlir::OwningOpRef<mlir::ModuleOp>
importONNXModelFromBuffer(llvm::StringRef bytes, llvm::StringRef name,
                          mlir::MLIRContext *context,
                          const ONNXImportOptions &options = {});

/// Registers the dialects an imported module uses (onnx, func), and installs
/// ONNX's schema inference as the onnx dialect's typing of onnx.Generic ops.
void registerImportDialects(mlir::DialectRegistry &registry);

} // namespace hetpar

#endif // HETPAR_IMPORT_ONNXIMPORTER_H
