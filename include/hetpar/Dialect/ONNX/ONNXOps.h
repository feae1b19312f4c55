//===- ONNXOps.h - onnx dialect operations ------------------------*- C++
//-*-===//
#ifndef HETPAR_DIALECT_ONNX_ONNXOPS_H
#define HETPAR_DIALECT_ONNX_ONNXOPS_H

#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXDialect.h"
#include "hetpar/Dialect/ONNX/ShardingRule.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace hetpar::onnx {
/// Discardable attribute the importer puts on the onnx.Constant of each graph
/// initializer: its ONNX name (Constant nodes and folded values have none).
inline constexpr llvm::StringLiteral kInitializerAttrName = "onnx.initializer";

/// Argument and result attribute of a graph function: the ONNX name of a
/// graph input or output (the importer's; passes that add an input or an
/// output, such as the labels or the loss, name it too).
inline constexpr llvm::StringLiteral kNameAttrName = "onnx.name";

/// The most elements an op's folder writes into a constant: 2^16 (512 KiB of
/// int64), enough for any shape computation and for attention masks of
/// sequences up to 256 tokens. A larger constant is data in every program's
/// weights.bin, so larger results stay computed at run time.
inline constexpr int64_t kMaxFoldElements = int64_t(1) << 16;

/// The name of graph input `i` of `func`: its `onnx.name`, else
/// "input_<i>". The one rule for an unnamed input, shared by the partition's
/// device signatures, code generation's manifest and the diagnostics.
std::string graphInputName(mlir::FunctionOpInterface func, unsigned i);

/// The name of graph output `j` of `func`: its `onnx.name`, else
/// "output_<j>".
std::string graphOutputName(mlir::FunctionOpInterface func, unsigned j);

/// Verifier of InferShapesOpInterface: the op's declared result types must be
/// compatible with (no less refined where they disagree is an error) the types
/// its shape rule infers. Emits an error at the op on mismatch.
llvm::LogicalResult verifyInferredResultTypes(mlir::Operation *op);

/// The ONNX operator of `op`: the `op_type` of onnx.Generic, else the op name
/// without the dialect prefix ("MatMul").
std::string getONNXOpType(mlir::Operation *op);

/// The ONNX node (or initializer, or graph input) name the importer put in
/// `op`'s location, or "" when there is none.
std::string getNodeName(mlir::Location loc);

/// "node 'name' (OpType)" for messages; "op OpType" when the op has no node
/// name.
std::string describeNode(mlir::Operation *op);

/// The elements of the im2col columns that a Conv, FusedConv or ConvGrad
/// unfolds for one image and one group: C / group x kernel size x output
/// plane (from the weight [M, C/group, k...] and the output, for ConvGrad
/// its gradient operand 0). The generated code's scratch buffer for the op
/// and the simulator's count of it (docs/codegen.md); 0 for any other op
/// or a shape that is not static.
int64_t im2colElements(mlir::Operation *op);
/// Attaches ShardingRuleOpInterface to the onnx ops that have a rule
/// (ShardingRules.cpp); called when the dialect is loaded.
void attachShardingRules(mlir::MLIRContext *context);
/// Attaches GradientOpInterface to the onnx ops that have a gradient rule
/// (GradientRules.cpp); called when the dialect is loaded.
void attachGradientRules(mlir::MLIRContext *context);
} // namespace hetpar::onnx

#include "hetpar/Dialect/ONNX/ONNXInterfaces.h.inc"

#define GET_OP_CLASSES
#include "hetpar/Dialect/ONNX/ONNXOps.h.inc"

#endif // HETPAR_DIALECT_ONNX_ONNXOPS_H
