//===- ONNXInterfaces.td - shape inference, FLOPs, sharding rules -*- tablegen -*-===//

#ifndef HETPAR_DIALECT_ONNX_ONNXINTERFACES_TD
#define HETPAR_DIALECT_ONNX_ONNXINTERFACES_TD

include "mlir/IR/OpBase.td"

def InferShapesOpInterface : OpInterface<"InferShapesOpInterface"> {
  let cppNamespace = "::hetpar::onnx";
  let description = [{
    The shape rule of an op: result types from operand types, attribute values and
    the values of constant operands (for example Reshape's `shape`). Dimensions that
    cannot be known yet are dynamic; an operand of unknown rank gives results of
    unknown rank where the rule needs the rank.

    The rule is also the op's verifier: an op whose declared result types disagree
    with the rule (a static dimension that differs, another element type) is invalid.
    Rules emit one error at the op and fail when operands or attributes break the op's
    constraints (MatMul of 2x3 by 4x5, an axis out of range, Reshape with two -1).

    Ops of other dialects can join HetPar's shape inference by implementing this
    interface.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends one type per result to `resultTypes`. Fails (after emitting an error
        at the op) when the op breaks its constraints.
      }],
      "::llvm::LogicalResult", "inferResultTypes",
      (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$resultTypes)>,
  ];
  let verify = [{ return ::hetpar::onnx::verifyInferredResultTypes($_op); }];
}

def FlopCountOpInterface : OpInterface<"FlopCountOpInterface"> {
  let cppNamespace = "::hetpar::onnx";
  let description = [{
    Floating-point operations one execution of the op performs, counted from its
    static shapes: a multiply-add is 2 FLOP (MatMul of MxK by KxN is 2*M*N*K), an
    elementwise arithmetic or transcendental op is 1 FLOP per output element, data
    movement ops (Reshape, Transpose, Gather, ...) are 0. The counts follow the usual
    convention of roofline models (Williams, Waterman, Patterson, CACM 2009) and of
    the MLPerf/PaLM MFU accounting (matmul FLOPs dominate; elementwise ops are
    counted once per element).
  }];
  let methods = [
    InterfaceMethod<[{
        FLOP count of the op, or std::nullopt when a shape it needs is not static.
      }],
      "std::optional<int64_t>", "getFlopCount", (ins)>,
  ];
}

def ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::hetpar";
  let description = [{
    How the op's work splits over the devices of a tensor-parallel group: its
    iteration factors, each parallel, reduction or whole, and the factors that make
    up every dimension of every operand and result (hetpar/Dialect/ONNX/ShardingRule.h;
    the form of Shardy's `OpShardingRuleAttr`). MatMul [b,m,k] x [b,k,n] -> [b,m,n]:
    b, m, n parallel, k reduction. The sharding search derives the legal shardings
    of an op and the collective each implies from its rule: splitting a parallel
    factor splits the result, splitting a reduction factor leaves partial sums for
    an all-reduce, a whole factor is never split.

    The onnx dialect attaches rules to its ops (dialects/onnx/ShardingRules.cpp). Ops
    of a user's own dialect join the search by implementing this interface; an op
    without it is only ever replicated (or split along the batch by data
    parallelism).
  }];
  let methods = [
    InterfaceMethod<[{
        The op's sharding rule, or failure when the op's shapes are not static
        (the search runs on the static module).
      }],
      "::mlir::FailureOr<::hetpar::ShardingRule>", "getShardingRule", (ins)>,
    InterfaceMethod<[{
        The operand the op adds once to a sum over its reduction factors
        (Gemm's C, Conv's bias), or none. With a reduction factor split,
        hetpar-dist-partition drops it from each device's op and adds
        `buildAddedTerm` after the partial sums combine, so that it is added
        once, not once per device.
      }],
      "std::optional<unsigned>", "getAddedOperand", (ins), "",
      [{ return std::nullopt; }]>,
    InterfaceMethod<[{
        The term that operand `c` (getAddedOperand) contributes to the op's
        first result, broadcastable to it: Gemm's beta x C, Conv's bias [M] as
        [1, M, 1, ...]. Built at `builder`'s insertion point.
      }],
      "::mlir::Value", "buildAddedTerm",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Value":$c), "",
      [{ return c; }]>,
    InterfaceMethod<[{
        After hetpar-dist-partition gave a copy of the op its local (per-device)
        operand and result types, rewrites what the op states about shapes so
        that it computes those types: Reshape's and Expand's shape operand,
        Split's sizes, Resize's sizes, a grouped Conv's group (a device with
        some of the groups). New operands are built at `builder`'s insertion
        point. Ops whose shapes follow from their operands need nothing (the
        default). The partition then checks the op's shape inference against
        the local types.
      }],
      "void", "adaptToLocalShapes", (ins "::mlir::OpBuilder &":$builder), "",
      [{}]>,
  ];
}

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::hetpar";
  let description = [{
    The op's reverse-mode (vector-Jacobian product) rule: given the gradient of the
    loss with respect to each result, build the gradient with respect to each
    operand, as ordinary ops (of the onnx dialect or any other) through a
    `GradientBuilder` (hetpar/Dialect/ONNX/Gradient.h), which places them in the
    backward part of the step and types them by their shape rules. The backward
    ops therefore get shape inference, FLOP counts, sharding rules, the cost model
    and code generation like any forward op.

    `hetpar-onnx-differentiate` calls the rule of every op on a path from a
    trainable parameter to the loss, in reverse program order. Rules read forward
    values (saved activations) directly: they are explicit SSA values, so the
    memory plan and the recomputation rewrite see them.

    Constraints: `operandGrads` gets exactly one entry per operand, with the
    operand's type, or a null value where the operand needs no gradient
    (`builder.needsGradient(i)` is false: not on a path from a parameter, or an
    integer or bool operand). An operand that was broadcast gets its gradient
    summed over the broadcast axes (`GradientBuilder::sumToShape`).

    The onnx dialect attaches rules to its ops (dialects/onnx/GradientRules.cpp).
    Ops of a user's own dialect join training by implementing this interface.
  }];
  let methods = [
    InterfaceMethod<[{
        Appends one gradient per operand to `operandGrads` (null where none is
        needed), given `resultGrads`: one per result, null where the loss does
        not depend on that result. Fails, after an error at the op, when the op
        has no derivative in the form given (for example a non-constant exponent
        of Pow where the exponent needs a gradient).
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::hetpar::GradientBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // HETPAR_DIALECT_ONNX_ONNXINTERFACES_TD
