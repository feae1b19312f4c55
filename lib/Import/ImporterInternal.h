//===- ImporterInternal.h - shared state of the ONNX importer ----*- C++
//-*-===//
#ifndef HETPAR_LIB_IMPORT_IMPORTERINTERNAL_H
#define HETPAR_LIB_IMPORT_IMPORTERINTERNAL_H

#include "TensorData.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <optional>

namespace hetpar::import {

class GraphImporter;

/// `s` with control characters, backslashes and bytes outside printable ASCII
/// escaped as \xNN, for names from the model that end up in messages.
std::string printable(llvm::StringRef s);

/// One ONNX node being imported: its resolved inputs, attributes, opset
/// version, location and helpers to build ops at that location.
class NodeContext {
public:
  NodeContext(GraphImporter &graph, ::onnx::NodeProto &node, int64_t version,
              mlir::Location loc, llvm::SmallVector<mlir::Value> inputs,
              std::string displayName);

  ::onnx::NodeProto &node;
  int64_t version;
  mlir::Location loc;
  /// Inputs in ONNX order; a null Value for an omitted ("") optional input.
  llvm::SmallVector<mlir::Value> inputs;
  /// "node 'name' (OpType)" for messages.
  std::string displayName;

  mlir::OpBuilder &builder();
  mlir::MLIRContext *context();
  /// Where the model's tensor data lives.
  const TensorSource &source();

  mlir::Value input(unsigned i) const {
    return i < inputs.size() ? inputs[i] : mlir::Value();
  }
  /// Number of outputs up to the last non-empty output name.
  unsigned numOutputs() const;
  const ::onnx::AttributeProto *attr(llvm::StringRef name) const;
  std::optional<int64_t> intAttr(llvm::StringRef name) const;
  std::optional<float> floatAttr(llvm::StringRef name) const;
  std::optional<llvm::SmallVector<int64_t>>
  intsAttr(llvm::StringRef name) const;

  /// Emits "<file>: node 'X' (Op): " followed by the message, at the node.
  mlir::InFlightDiagnostic error();

  /// A 1-D (or rank-0 when `scalar`) int64 onnx.Constant.
  mlir::Value constI64(llvm::ArrayRef<int64_t> values, bool scalar = false);
  /// A rank-0 constant of element type `elt` holding `value`.
  mlir::Value constScalar(mlir::Type elt, double value);

  /// Converts an ONNX attribute to an MLIR attribute (INT: i64, FLOAT: f32,
  /// STRING: string, INTS/FLOATS: dense arrays, TENSOR: elements, ...).
  mlir::FailureOr<mlir::Attribute>
  convertAttribute(::onnx::AttributeProto &attr);

  /// Builds native op `opName` (e.g. "Add") from `operands` (null = omitted
  /// optional input) and `attrs` (ONNX attribute names; attributes in `drop`
  /// are ignored), infers its result types and verifies it. Returns the op or
  /// fails with an error at the node.
  mlir::FailureOr<mlir::Operation *>
  buildNative(llvm::StringRef opName, llvm::ArrayRef<mlir::Value> operands,
              llvm::ArrayRef<mlir::NamedAttribute> attrs, unsigned numResults);

  /// buildNative with the node's own inputs and attributes (minus `drop`).
  mlir::FailureOr<mlir::Operation *>
  buildDefault(llvm::StringRef opName,
               llvm::ArrayRef<llvm::StringRef> drop = {});

  /// Converts all node attributes except those in `drop`.
  mlir::FailureOr<llvm::SmallVector<mlir::NamedAttribute>>
  convertAttributes(llvm::ArrayRef<llvm::StringRef> drop);

  GraphImporter &graph;
};

/// An op-specific importer (opset normalization). Returns the values of the
/// node's outputs in order (null for absent optional outputs), or failure after
/// an error.
using NodeImportFn =
    std::function<mlir::FailureOr<llvm::SmallVector<mlir::Value>>(
        NodeContext &)>;

/// The op-specific importers, by ONNX op type (OpImporters.cpp).
const llvm::StringMap<NodeImportFn> &getSpecialImporters();

/// What must hold of a node before ONNX's inference runs on it, because the
/// inference assumes it (SchemaInference.cpp): window and block attributes
/// in range, the ranks that Conv-like, pooling, recurrent and STFT nodes
/// index, Scan's count of scan inputs. The reason, or "" when it holds. A
/// node that fails it is invalid whether or not ONNX could type it.
std::string checkBeforeONNXInference(const ::onnx::NodeProto &node,
                                     llvm::ArrayRef<mlir::Value> inputs);

/// Result types of a node of an operator the dialect does not model, from
/// ONNX's own type inference for the op schema (SchemaInference.cpp), given the
/// node's inputs (null for omitted ones; small int32, int64 and float constants
/// are passed as data). An entry is null when ONNX could not tell; `error`
/// receives ONNX's message when its inference rejected the node.
llvm::SmallVector<mlir::Type>
inferTypesWithONNXSchema(::onnx::NodeProto &node, int64_t version,
                         llvm::ArrayRef<mlir::Value> inputs,
                         mlir::MLIRContext *ctx, std::string *error = nullptr);

/// ONNX's schema inference for an existing onnx.Generic op (attributes
/// converted back to ONNX); installed in the dialect by registerImportDialects.
void inferGenericOpTypes(mlir::Operation *op,
                         llvm::SmallVectorImpl<mlir::Type> &out);

/// Converts an MLIR tensor type to an ONNX TypeProto (for ONNX's type
/// inference).
void toTypeProto(mlir::Type type, ::onnx::TypeProto &out);

/// Converts an ONNX TypeProto to an MLIR tensor type; null for non-tensor or
/// unsupported element types (`why` explains).
mlir::Type fromTypeProto(const ::onnx::TypeProto &type, mlir::MLIRContext *ctx,
                         std::string *why = nullptr);

} // namespace hetpar::import

#endif // HETPAR_LIB_IMPORT_IMPORTERINTERNAL_H
