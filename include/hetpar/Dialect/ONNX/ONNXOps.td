//===- ONNXOps.td - onnx dialect operations ----------------------*- tablegen -*-===//
//
// One op per ONNX operator, with the semantics of the newest opset HetPar knows.
// Each description ends with the op's constraints; the shape rule (verifier)
// implements them (dialects/onnx/ShapeInference.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_DIALECT_ONNX_ONNXOPS_TD
#define HETPAR_DIALECT_ONNX_ONNXOPS_TD

include "hetpar/Dialect/ONNX/ONNXBase.td"
include "mlir/IR/RegionKindInterface.td"

//===----------------------------------------------------------------------===//
// Constants and the generic op
//===----------------------------------------------------------------------===//

def ONNX_ConstantOp : ONNX_Op<"Constant", [ConstantLike, Pure]> {
  let summary = "ONNX Constant and graph initializers";
  let description = [{
    A constant tensor: an ONNX `Constant` node or a graph initializer. Large
    initializers hold a `dense_resource` blob that refers to the model's bytes (or to a
    memory-mapped external data file) without copying them.

    Constraints: the result type equals the type of `value`.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let hasCustomAssemblyFormat = 1;
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
    build($_builder, $_state, value.getType(), value);
  }]>];
}

def ONNX_GenericOp : ONNX_Op<"Generic", [RecursiveMemoryEffects]> {
  let summary = "An ONNX operator HetPar does not model (yet)";
  let description = [{
    Keeps an ONNX node whose operator is not an op of this dialect: its `op_type`, its
    `domain` (empty for the default domain), the opset `version` of that domain in the
    model, its attributes (`attrs`, by ONNX attribute name) and its operands. Absent
    optional inputs are values of `none` type (from `onnx.NoValue`). Graph-valued
    attributes (If, Loop, Scan bodies) become regions, named in `region_names`; a
    region's block arguments are the subgraph's inputs and it ends with `onnx.Yield`.

    Result types come from ONNX's own type and shape inference for the op's schema
    where the ONNX library knows it, else from the model's `value_info`.

    Passes that need to understand an op fail on this one with
    "unsupported op <op_type> (node <name>)".

    Constraints: `region_names` has one name per region.
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, StrAttr:$op_type, StrAttr:$domain,
                   ONNX_IntAttr:$version, DictionaryAttr:$attrs,
                   DefaultValuedAttr<StrArrayAttr, "{}">:$region_names);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region VariadicRegion<AnyRegion>:$bodies);
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// True for an If of the default domain with its two branches.
    bool isIf();
    /// The types an If yields: equal branch types stay, tensors of one element
    /// type and rank keep the extents both branches agree on. Fails when the
    /// branches yield different counts or element types (`reason` says which).
    ::llvm::LogicalResult inferIfResultTypes(
        ::llvm::SmallVectorImpl<::mlir::Type> &types, std::string &reason);
    /// Replaces an If whose condition is a constant by its taken branch. With
    /// `allowRefinement`, the branch may yield more refined types than the If's
    /// results (the caller updates users); otherwise they must be equal.
    ::llvm::LogicalResult inlineConstantIf(::mlir::RewriterBase &rewriter,
                                           bool allowRefinement);
  }];
  let assemblyFormat = [{
    $op_type `(` $inputs `)` attr-dict-with-keyword (`bodies` $bodies^)?
    `:` functional-type($inputs, $outputs)
  }];
}

def ONNX_NoValueOp : Op<ONNX_Dialect, "NoValue", [Pure, ConstantLike]> {
  let summary = "An absent optional input of an onnx.Generic op";
  let description = [{
    Produces the `none` value that stands for an ONNX input left empty ("") in the
    operand list of `onnx.Generic`.
  }];
  let results = (outs NoneType:$none);
  let hasFolder = 1;
  let assemblyFormat = "attr-dict";
}

def ONNX_YieldOp : Op<ONNX_Dialect, "Yield", [Pure, Terminator,
                                             HasParent<"GenericOp">]> {
  let summary = "Returns the outputs of an ONNX subgraph";
  let description = [{
    Terminates a region of `onnx.Generic` (an If/Loop/Scan body); its operands are the
    subgraph's outputs.
  }];
  let arguments = (ins Variadic<AnyType>:$outputs);
  let assemblyFormat = "attr-dict ($outputs^ `:` type($outputs))?";
}

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

def ONNX_SqrtOp : ONNX_UnaryOp<"Sqrt", "y = sqrt(x)", ONNX_FloatTensor> { let hasFolder = 1; }
def ONNX_ReciprocalOp : ONNX_UnaryOp<"Reciprocal", "y = 1 / x", ONNX_FloatTensor>;
def ONNX_NegOp : ONNX_UnaryOp<"Neg", "y = -x"> { let hasFolder = 1; }
def ONNX_AbsOp : ONNX_UnaryOp<"Abs", "y = |x|"> { let hasFolder = 1; }
def ONNX_ExpOp : ONNX_UnaryOp<"Exp", "y = exp(x)", ONNX_FloatTensor>;
def ONNX_LogOp : ONNX_UnaryOp<"Log", "y = ln(x)", ONNX_FloatTensor>;
def ONNX_ErfOp : ONNX_UnaryOp<"Erf", "y = erf(x)">;
def ONNX_TanhOp : ONNX_UnaryOp<"Tanh", "y = tanh(x)", ONNX_FloatTensor>;
def ONNX_SigmoidOp : ONNX_UnaryOp<"Sigmoid", "y = 1 / (1 + exp(-x))", ONNX_FloatTensor>;
def ONNX_ReluOp : ONNX_UnaryOp<"Relu", "y = max(x, 0)">;
def ONNX_SinOp : ONNX_UnaryOp<"Sin", "y = sin(x)", ONNX_FloatTensor>;
def ONNX_CosOp : ONNX_UnaryOp<"Cos", "y = cos(x)", ONNX_FloatTensor>;
def ONNX_TanOp : ONNX_UnaryOp<"Tan", "y = tan(x)", ONNX_FloatTensor>;
def ONNX_AsinOp : ONNX_UnaryOp<"Asin", "y = asin(x)", ONNX_FloatTensor>;
def ONNX_AcosOp : ONNX_UnaryOp<"Acos", "y = acos(x)", ONNX_FloatTensor>;
def ONNX_AtanOp : ONNX_UnaryOp<"Atan", "y = atan(x)", ONNX_FloatTensor>;
def ONNX_SinhOp : ONNX_UnaryOp<"Sinh", "y = sinh(x)", ONNX_FloatTensor>;
def ONNX_CoshOp : ONNX_UnaryOp<"Cosh", "y = cosh(x)", ONNX_FloatTensor>;
def ONNX_AsinhOp : ONNX_UnaryOp<"Asinh", "y = asinh(x)", ONNX_FloatTensor>;
def ONNX_AcoshOp : ONNX_UnaryOp<"Acosh", "y = acosh(x)", ONNX_FloatTensor>;
def ONNX_AtanhOp : ONNX_UnaryOp<"Atanh", "y = atanh(x)", ONNX_FloatTensor>;
def ONNX_FloorOp : ONNX_UnaryOp<"Floor", "y = floor(x)", ONNX_FloatTensor> { let hasFolder = 1; }
def ONNX_CeilOp : ONNX_UnaryOp<"Ceil", "y = ceil(x)", ONNX_FloatTensor> { let hasFolder = 1; }
def ONNX_RoundOp : ONNX_UnaryOp<"Round", "y = round half to even(x)", ONNX_FloatTensor>;
def ONNX_SignOp : ONNX_UnaryOp<"Sign", "y = sign(x) (-1, 0 or 1)">;
def ONNX_SoftplusOp : ONNX_UnaryOp<"Softplus", "y = ln(exp(x) + 1)", ONNX_FloatTensor>;
def ONNX_SoftsignOp : ONNX_UnaryOp<"Softsign", "y = x / (1 + |x|)", ONNX_FloatTensor>;
def ONNX_HardSwishOp : ONNX_UnaryOp<"HardSwish", "y = x * max(0, min(1, x/6 + 1/2))",
                                    ONNX_FloatTensor>;
def ONNX_MishOp : ONNX_UnaryOp<"Mish", "y = x * tanh(softplus(x))", ONNX_FloatTensor>;
def ONNX_NotOp : ONNX_UnaryOp<"Not", "y = !x", ONNX_BoolTensor> { let hasFolder = 1; }
def ONNX_IdentityOp : ONNX_UnaryOp<"Identity", "y = x", ONNX_Tensor> {
  let hasFolder = 1;
}

// Unary ops with attributes.
class ONNX_UnaryAttrOp<string mnemonic, string onnxDoc, dag attrs>
    : ONNX_UnaryOp<mnemonic, onnxDoc, ONNX_FloatTensor> {
  let arguments = !con((ins ONNX_FloatTensor:$X), attrs);
}

def ONNX_LeakyReluOp : ONNX_UnaryAttrOp<"LeakyRelu", "y = x < 0 ? alpha * x : x",
    (ins DefaultValuedAttr<ONNX_FloatAttr, "0.01f">:$alpha)>;
def ONNX_EluOp : ONNX_UnaryAttrOp<"Elu", "y = x < 0 ? alpha * (exp(x) - 1) : x",
    (ins DefaultValuedAttr<ONNX_FloatAttr, "1.0f">:$alpha)>;
def ONNX_CeluOp : ONNX_UnaryAttrOp<"Celu",
    "y = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))",
    (ins DefaultValuedAttr<ONNX_FloatAttr, "1.0f">:$alpha)>;
// Selu defaults are the constants of Klambauer et al., "Self-Normalizing Neural
// Networks", NeurIPS 2017, as given in the ONNX Selu-6 schema.
def ONNX_SeluOp : ONNX_UnaryAttrOp<"Selu",
    "y = gamma * (x <= 0 ? alpha * (exp(x) - 1) : x)",
    (ins DefaultValuedAttr<ONNX_FloatAttr, "1.67326319217681884765625f">:$alpha,
         DefaultValuedAttr<ONNX_FloatAttr, "1.05070102214813232421875f">:$gamma)>;
def ONNX_HardSigmoidOp : ONNX_UnaryAttrOp<"HardSigmoid",
    "y = max(0, min(1, alpha * x + beta))",
    (ins DefaultValuedAttr<ONNX_FloatAttr, "0.2f">:$alpha,
         DefaultValuedAttr<ONNX_FloatAttr, "0.5f">:$beta)>;
def ONNX_ThresholdedReluOp : ONNX_UnaryAttrOp<"ThresholdedRelu",
    "y = x > alpha ? x : 0",
    (ins DefaultValuedAttr<ONNX_FloatAttr, "1.0f">:$alpha)>;
def ONNX_GeluOp : ONNX_UnaryAttrOp<"Gelu",
    "y = 0.5 * x * (1 + erf(x / sqrt(2))), or its tanh approximation",
    (ins DefaultValuedStrAttr<StrAttr, "none">:$approximate)> {
  let description = [{
    Gaussian error linear unit (opset 20). `approximate` = "none" computes
    0.5 * x * (1 + erf(x / sqrt(2))); "tanh" computes
    0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

    Constraints: `approximate` is "none" or "tanh".
  }];
}

def ONNX_IsNaNOp : ONNX_Op<"IsNaN", [Pure]> {
  let summary = "ONNX IsNaN: elementwise test for NaN";
  let description = [{ Constraints: the result is bool with the operand's shape. }];
  let arguments = (ins ONNX_FloatTensor:$X);
  let results = (outs ONNX_BoolTensor:$Y);
  let assemblyFormat = "`(` $X `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_IsInfOp : ONNX_Op<"IsInf", [Pure]> {
  let summary = "ONNX IsInf: elementwise test for infinity";
  let description = [{
    True where x is +inf (when `detect_positive`) or -inf (when `detect_negative`).

    Constraints: the result is bool with the operand's shape.
  }];
  let arguments = (ins ONNX_FloatTensor:$X,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$detect_negative,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$detect_positive);
  let results = (outs ONNX_BoolTensor:$Y);
  let assemblyFormat = "`(` $X `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ClipOp : ONNX_Op<"Clip", [Pure, AttrSizedOperandSegments]> {
  let summary = "ONNX Clip: y = min(max(x, min), max)";
  let description = [{
    Clamps `input` to [min, max]; an absent bound is no bound. Before opset 11 the
    bounds were attributes; the importer turns them into constant operands.

    Constraints: `min` and `max`, when present, are scalars (rank 0, or one element)
    of the input's element type.
  }];
  let arguments = (ins ONNX_NumericTensor:$input, Optional<ONNX_NumericTensor>:$min,
                   Optional<ONNX_NumericTensor>:$max);
  let results = (outs ONNX_NumericTensor:$output);
  let assemblyFormat = [{
    `(` $input `)` (`min` `(` $min^ `)`)? (`max` `(` $max^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def ONNX_CastOp : ONNX_Op<"Cast", [Pure]> {
  let summary = "ONNX Cast: elementwise type conversion";
  let description = [{
    Converts each element to the element type `to` (float to int truncates toward zero;
    to bool is x != 0). `saturate` only matters for float8 targets, which HetPar does
    not support.

    Constraints: the result has element type `to` and the operand's shape; `to` is an
    ONNX element type HetPar supports.
  }];
  let arguments = (ins ONNX_Tensor:$input, TypeAttr:$to,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$saturate);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` $input `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_CastLikeOp : ONNX_Op<"CastLike", [Pure]> {
  let summary = "ONNX CastLike: cast to the element type of a second tensor";
  let description = [{
    Constraints: the result has `target_type`'s element type and `input`'s shape.
  }];
  let arguments = (ins ONNX_Tensor:$input, ONNX_Tensor:$target_type,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$saturate);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_DropoutOp : ONNX_Op<"Dropout", [AttrSizedOperandSegments]> {
  let summary = "ONNX Dropout";
  let description = [{
    In training mode (`training_mode` true) zeroes each element with probability
    `ratio` (default 0.5) and scales the rest by 1/(1-ratio): output = data * mask /
    (1 - ratio); otherwise (absent or false `training_mode`) it is the identity
    and the optional `mask` is all true. The `hetpar-onnx-erase-identity` pass
    removes the inference form.

    The mask is drawn from Philox4x32-10 (hetpar_device.h, `hp_dropout`): element
    i is dropped when word i % 4 of Philox(counter = (i / 4, `step`), key =
    `seed`) is below ratio * 2^32, so it depends on the seed, the step and the
    element index only, and is the same on every backend. `step` is a HetPar
    extension (not an ONNX input): the training step the mask is drawn for,
    which `hetpar-train-dropout` connects to the step counter; absent, it is 0.
    Without `seed` the key is 0 (`hetpar-train-dropout` gives every training
    Dropout one). `element_offset` (a HetPar extension, 0 by default) is the
    index of this tensor's first element in a larger one it is a part of: a
    data-parallel replica's rows of the batch (hetpar-dist-partition sets it),
    so that element i draws the mask of element element_offset + i and every
    replica drops what one device would.

    Constraints: `ratio` is a float scalar, `training_mode` a bool scalar, `step`
    an int64 scalar; `output` has the input's type; `mask` is bool with the
    input's shape; `element_offset` is not negative.
  }];
  let arguments = (ins ONNX_FloatTensor:$data, Optional<ONNX_FloatTensor>:$ratio,
                   Optional<ONNX_BoolTensor>:$training_mode,
                   Optional<ONNX_I64Tensor>:$step,
                   OptionalAttr<ONNX_IntAttr>:$seed,
                   OptionalAttr<ONNX_IntAttr>:$element_offset);
  let results = (outs ONNX_FloatTensor:$output, Optional<ONNX_BoolTensor>:$mask);
  let assemblyFormat = [{
    `(` $data `)` (`ratio` `(` $ratio^ `)`)? (`training_mode` `(` $training_mode^ `)`)?
    (`step` `(` $step^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise binary, ternary and variadic
//===----------------------------------------------------------------------===//

def ONNX_AddOp : ONNX_BinaryOp<"Add", "c = a + b"> { let hasFolder = 1; }
def ONNX_SubOp : ONNX_BinaryOp<"Sub", "c = a - b"> { let hasFolder = 1; }
def ONNX_MulOp : ONNX_BinaryOp<"Mul", "c = a * b"> { let hasFolder = 1; }
def ONNX_DivOp : ONNX_BinaryOp<"Div", "c = a / b (integer division truncates)"> {
  let hasFolder = 1;
}
def ONNX_EqualOp : ONNX_BinaryOp<"Equal", "c = (a == b)", ONNX_Tensor, ONNX_BoolTensor> {
  let hasFolder = 1;
}
def ONNX_LessOp : ONNX_BinaryOp<"Less", "c = (a < b)", ONNX_NumericTensor,
                                ONNX_BoolTensor> { let hasFolder = 1; }
def ONNX_LessOrEqualOp : ONNX_BinaryOp<"LessOrEqual", "c = (a <= b)", ONNX_NumericTensor,
                                       ONNX_BoolTensor> { let hasFolder = 1; }
def ONNX_GreaterOp : ONNX_BinaryOp<"Greater", "c = (a > b)", ONNX_NumericTensor,
                                   ONNX_BoolTensor> { let hasFolder = 1; }
def ONNX_GreaterOrEqualOp : ONNX_BinaryOp<"GreaterOrEqual", "c = (a >= b)",
                                          ONNX_NumericTensor, ONNX_BoolTensor> {
  let hasFolder = 1;
}
def ONNX_AndOp : ONNX_BinaryOp<"And", "c = a && b", ONNX_BoolTensor> { let hasFolder = 1; }
def ONNX_OrOp : ONNX_BinaryOp<"Or", "c = a || b", ONNX_BoolTensor> { let hasFolder = 1; }
def ONNX_XorOp : ONNX_BinaryOp<"Xor", "c = a != b", ONNX_BoolTensor>;

def ONNX_PowOp : ONNX_Op<"Pow", [Pure]> {
  let summary = "ONNX Pow: z = x ^ y with broadcasting";
  let description = [{
    Elementwise power with multidirectional broadcasting. The exponent may have another
    numeric element type than the base (Pow-12 and later).

    Constraints: the shapes broadcast; the result has the base's element type.
  }];
  let arguments = (ins ONNX_NumericTensor:$X, ONNX_NumericTensor:$Y);
  let results = (outs ONNX_NumericTensor:$Z);
  let assemblyFormat = "`(` $X `,` $Y `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ModOp : ONNX_Op<"Mod", [Pure, SameOperandsElementType]> {
  let summary = "ONNX Mod: elementwise remainder with broadcasting";
  let description = [{
    With `fmod` = 0 (integers only) the remainder has the sign of the divisor (Python
    `%`); with `fmod` = 1 it has the sign of the dividend (C `fmod`).

    Constraints: the shapes broadcast; `fmod` is 0 or 1 and must be 1 for floating-point
    operands.
  }];
  let arguments = (ins ONNX_NumericTensor:$A, ONNX_NumericTensor:$B,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$fmod);
  let results = (outs ONNX_NumericTensor:$C);
  let hasFolder = 1;
  let assemblyFormat = "`(` $A `,` $B `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_PReluOp : ONNX_Op<"PRelu", [Pure, SameOperandsElementType]> {
  let summary = "ONNX PRelu: y = x < 0 ? slope * x : x";
  let description = [{
    Constraints: `slope` broadcasts to X (unidirectionally); the result has X's type.
  }];
  let arguments = (ins ONNX_NumericTensor:$X, ONNX_NumericTensor:$slope);
  let results = (outs ONNX_NumericTensor:$Y);
  let assemblyFormat = "`(` $X `,` $slope `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_WhereOp : ONNX_Op<"Where", [Pure]> {
  let summary = "ONNX Where: out = condition ? X : Y with broadcasting";
  let description = [{
    Constraints: `condition` is bool; X and Y have the same element type; the three
    shapes broadcast; the result has X's element type and the broadcast shape.
  }];
  let arguments = (ins ONNX_BoolTensor:$condition, ONNX_Tensor:$X, ONNX_Tensor:$Y);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

class ONNX_VariadicOp<string mnemonic, string onnxDoc>
    : ONNX_Op<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX " # mnemonic # ": elementwise " # onnxDoc # " of N inputs";
  let description = [{
    Elementwise `}] # onnxDoc # [{` over one or more inputs with multidirectional
    broadcasting.

    Constraints: at least one input; all inputs have one element type; their shapes
    broadcast.
  }];
  let arguments = (ins Variadic<ONNX_NumericTensor>:$data_0);
  let results = (outs ONNX_NumericTensor:$result);
  let assemblyFormat = "`(` $data_0 `)` attr-dict `:` functional-type(operands, results)";
}
def ONNX_MaxOp : ONNX_VariadicOp<"Max", "maximum"> { let hasFolder = 1; }
def ONNX_MinOp : ONNX_VariadicOp<"Min", "minimum"> { let hasFolder = 1; }
def ONNX_SumOp : ONNX_VariadicOp<"Sum", "sum">;
def ONNX_MeanOp : ONNX_VariadicOp<"Mean", "mean">;

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, normalization, pooling
//===----------------------------------------------------------------------===//

def ONNX_EinsumOp : ONNX_Op<"Einsum", [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX Einsum: Einstein summation";
  let description = [{
    Evaluates `equation` ("bsd,btd->bst"): each input term names its axes with
    letters, "..." stands for broadcast leading axes, and the output term (after
    "->") lists the kept axes; letters missing from it are summed. Without "->",
    the output is the broadcast "..." axes followed by the letters that appear
    once, in alphabetical order.

    Constraints: one term per input; a term has as many axes as its input's rank
    (letters plus the "..." axes); a letter has one extent across inputs; the
    "..." axes broadcast; output letters appear in the inputs and at most once.
  }];
  let arguments = (ins Variadic<ONNX_NumericTensor>:$Inputs, StrAttr:$equation);
  let results = (outs ONNX_NumericTensor:$Output);
  let assemblyFormat = "`(` $Inputs `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_MatMulOp : ONNX_Op<"MatMul", [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX MatMul: numpy.matmul";
  let description = [{
    Matrix product with numpy semantics: a 1-D A is a row vector (its dimension removed
    from the result), a 1-D B a column vector; leading (batch) dimensions broadcast.
    (2,3) x (4,3,5) gives (4,2,5).

    Constraints: both operands have rank >= 1; the contracted dimensions are equal
    (K of A is its last dimension, K of B its second to last, or only, dimension); the
    batch dimensions broadcast.
  }];
  let arguments = (ins ONNX_NumericTensor:$A, ONNX_NumericTensor:$B);
  let results = (outs ONNX_NumericTensor:$Y);
  let assemblyFormat = "`(` $A `,` $B `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_GemmOp : ONNX_Op<"Gemm", [Pure]> {
  let summary = "ONNX Gemm: Y = alpha * op(A) * op(B) + beta * C";
  let description = [{
    General matrix multiply on 2-D operands, op(X) = X^T when `transA`/`transB` is 1.
    C is optional and broadcasts (unidirectionally) to (M, N). The `broadcast`
    attribute of Gemm before opset 7 is dropped at import: unidirectional broadcasting
    covers it.

    Constraints: A and B have rank 2; their contracted dimensions are equal; C, when
    present, broadcasts to (M, N); transA and transB are 0 or 1.
  }];
  let arguments = (ins ONNX_NumericTensor:$A, ONNX_NumericTensor:$B,
                   Optional<ONNX_NumericTensor>:$C,
                   DefaultValuedAttr<ONNX_FloatAttr, "1.0f">:$alpha,
                   DefaultValuedAttr<ONNX_FloatAttr, "1.0f">:$beta,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$transA,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$transB);
  let results = (outs ONNX_NumericTensor:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ConvOp : ONNX_Op<"Conv", [Pure]> {
  let summary = "ONNX Conv: N-D convolution (cross-correlation)";
  let description = [{
    X is (N, C, D1, ..., Dn), W is (M, C/group, k1, ..., kn), B is (M). Output extent
    per spatial axis: floor((D + pad_begin + pad_end - dilation*(k-1) - 1) / stride) + 1.
    `auto_pad` SAME_UPPER/SAME_LOWER pad so the output is ceil(D / stride)
    (the extra pad at the end or at the beginning); VALID pads nothing.

    Constraints: X and W have the same rank >= 3; C equals W's dimension 1 times
    `group`; M is divisible by `group`; B has shape (M); `kernel_shape`, `strides` and
    `dilations` have one positive entry per spatial axis and `pads` two (all begins,
    then all ends), non-negative; `auto_pad` is NOTSET, SAME_UPPER, SAME_LOWER or VALID,
    and `pads` is not given with a non-NOTSET `auto_pad`.
  }];
  let arguments = (ins ONNX_FloatTensor:$X, ONNX_FloatTensor:$W,
                   Optional<ONNX_FloatTensor>:$B,
                   DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                   OptionalAttr<ONNX_IntsAttr>:$dilations,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$group,
                   OptionalAttr<ONNX_IntsAttr>:$kernel_shape,
                   OptionalAttr<ONNX_IntsAttr>:$pads,
                   OptionalAttr<ONNX_IntsAttr>:$strides);
  let results = (outs ONNX_FloatTensor:$Y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_FusedConvOp
    : ONNX_Op<"FusedConv", [Pure, AttrSizedOperandSegments]> {
  let summary = "Conv with its residual Add and activation (a HetPar op)";
  let description = [{
    Not an ONNX operator: hetpar-onnx-fuse-conv forms it from a Conv whose
    only user is an Add of a residual Z and/or an activation, as ONNX
    Runtime's com.microsoft FusedConv does:

    Y = activation(Conv(X, W, B) + Z)

    with X, W, B and the attributes `auto_pad` ... `strides` as Conv's, Z
    optional, and `activation` one of `none`, `Relu` (max(v, 0), NaN stays
    NaN) or `Clip` (to [`activation_params`[0], `activation_params`[1]];
    hetpar-onnx-fuse-conv writes a missing bound as the element type's
    lowest or largest value, as ONNX defines it). Code generation applies the
    bias, Z and the activation to each output as its sum is finished, where
    the unfused graph made a pass over the result for each.

    Constraints: those of Conv on X, W, B and the attributes; Z, when
    present, has Y's shape and element type; `activation` is none, Relu or
    Clip; `activation_params` holds two values (lower <= upper, neither NaN)
    with Clip and is absent otherwise.
  }];
  let arguments = (ins ONNX_FloatTensor:$X, ONNX_FloatTensor:$W,
                   Optional<ONNX_FloatTensor>:$B,
                   Optional<ONNX_FloatTensor>:$Z,
                   DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                   OptionalAttr<ONNX_IntsAttr>:$dilations,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$group,
                   OptionalAttr<ONNX_IntsAttr>:$kernel_shape,
                   OptionalAttr<ONNX_IntsAttr>:$pads,
                   OptionalAttr<ONNX_IntsAttr>:$strides,
                   DefaultValuedStrAttr<StrAttr, "none">:$activation,
                   OptionalAttr<ONNX_FloatsAttr>:$activation_params);
  let results = (outs ONNX_FloatTensor:$Y);
  let assemblyFormat = [{
    `(` $X `,` $W `)` (`bias` `(` $B^ `)`)? (`residual` `(` $Z^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def ONNX_BatchNormalizationOp : ONNX_Op<"BatchNormalization", [Pure]> {
  let summary = "ONNX BatchNormalization";
  let description = [{
    Y = scale * (X - mean) / sqrt(var + epsilon) + B over channel axis 1. In
    inference mode (`training_mode` 0) mean and var are the operands input_mean and
    input_var. In training mode (ONNX opset 15) they are the batch statistics of X
    over every axis but 1: mean = ReduceMean(X), var = the population variance
    ReduceMean((X - mean)^2) (divided by N * spatial size, as the ONNX reference
    and its node tests; PyTorch's running_var uses the unbiased variance instead);
    the optional results running_mean and running_var are
    input_mean * momentum + mean * (1 - momentum) and
    input_var * momentum + var * (1 - momentum). `hetpar-train-lift-params`
    stores them into the running-statistics globals of a training program.

    Constraints: X has rank >= 2; scale, B, input_mean and input_var have shape (C);
    there is 1 result, or 3 in training mode (the extra two of shape (C)).
  }];
  let arguments = (ins ONNX_FloatTensor:$X, ONNX_FloatTensor:$scale, ONNX_FloatTensor:$B,
                   ONNX_FloatTensor:$input_mean, ONNX_FloatTensor:$input_var,
                   DefaultValuedAttr<ONNX_FloatAttr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.9f">:$momentum,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$training_mode);
  let results = (outs ONNX_FloatTensor:$Y, Variadic<ONNX_FloatTensor>:$running_stats);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_InstanceNormalizationOp : ONNX_Op<"InstanceNormalization", [Pure]> {
  let summary = "ONNX InstanceNormalization";
  let description = [{
    y = scale * (x - mean) / sqrt(variance + epsilon) + B, statistics per instance and
    channel over the spatial axes.

    Constraints: input has rank >= 3; scale and B have shape (C).
  }];
  let arguments = (ins ONNX_FloatTensor:$input, ONNX_FloatTensor:$scale,
                   ONNX_FloatTensor:$B,
                   DefaultValuedAttr<ONNX_FloatAttr, "1e-5f">:$epsilon);
  let results = (outs ONNX_FloatTensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_LayerNormalizationOp : ONNX_Op<"LayerNormalization", [Pure]> {
  let summary = "ONNX LayerNormalization";
  let description = [{
    Normalizes X over the axes [axis, rank): Y = (X - mean) / sqrt(var + epsilon) *
    Scale + B. Optional extra results are Mean and InvStdDev, shaped like X with the
    normalized axes set to 1, in the `stash_type` precision (1 = float).

    Constraints: `axis` is in [-rank, rank); Scale and B broadcast (unidirectionally)
    to the normalized shape; at most two extra results.
  }];
  let arguments = (ins ONNX_FloatTensor:$X, ONNX_FloatTensor:$Scale,
                   Optional<ONNX_FloatTensor>:$B,
                   DefaultValuedAttr<ONNX_IntAttr, "-1">:$axis,
                   DefaultValuedAttr<ONNX_FloatAttr, "1e-5f">:$epsilon,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$stash_type);
  let results = (outs ONNX_FloatTensor:$Y, Variadic<ONNX_FloatTensor>:$statistics);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

class ONNX_PoolOp<string mnemonic, string onnxDoc, dag extraAttrs, dag resultsDag>
    : ONNX_Op<mnemonic, [Pure]> {
  let summary = "ONNX " # mnemonic # ": " # onnxDoc;
  let description = [{
    `}] # onnxDoc # [{` over windows of `kernel_shape` on the spatial axes of X
    (N, C, D1, ..., Dn). Output extent per axis: floor or, with `ceil_mode`, ceil of
    (D + pad_begin + pad_end - dilation*(k-1) - 1) / stride, plus 1; with ceil_mode a
    window that would start in the end padding is dropped. `auto_pad` as for Conv.

    Constraints: X has rank >= 3; `kernel_shape` is given with one positive entry per
    spatial axis; `strides` and `dilations` likewise when given; `pads` has two
    non-negative entries per spatial axis.
  }];
  let arguments = !con((ins ONNX_NumericTensor:$X,
                        DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                        DefaultValuedAttr<ONNX_IntAttr, "0">:$ceil_mode,
                        OptionalAttr<ONNX_IntsAttr>:$dilations,
                        ONNX_IntsAttr:$kernel_shape,
                        OptionalAttr<ONNX_IntsAttr>:$pads,
                        OptionalAttr<ONNX_IntsAttr>:$strides), extraAttrs);
  let results = resultsDag;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_MaxPoolOp : ONNX_PoolOp<"MaxPool", "maximum",
    (ins DefaultValuedAttr<ONNX_IntAttr, "0">:$storage_order),
    (outs ONNX_NumericTensor:$Y, Optional<ONNX_I64Tensor>:$Indices)>;
def ONNX_AveragePoolOp : ONNX_PoolOp<"AveragePool", "average",
    (ins DefaultValuedAttr<ONNX_IntAttr, "0">:$count_include_pad),
    (outs ONNX_NumericTensor:$Y)>;

def ONNX_GlobalAveragePoolOp : ONNX_Op<"GlobalAveragePool", [Pure,
                                       SameOperandsAndResultElementType]> {
  let summary = "ONNX GlobalAveragePool: mean over all spatial axes";
  let description = [{
    Constraints: X has rank >= 3; the result is (N, C, 1, ..., 1).
  }];
  let arguments = (ins ONNX_FloatTensor:$X);
  let results = (outs ONNX_FloatTensor:$Y);
  let assemblyFormat = "`(` $X `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_GlobalMaxPoolOp : ONNX_Op<"GlobalMaxPool", [Pure,
                                   SameOperandsAndResultElementType]> {
  let summary = "ONNX GlobalMaxPool: maximum over all spatial axes";
  let description = [{
    Constraints: X has rank >= 3; the result is (N, C, 1, ..., 1).
  }];
  let arguments = (ins ONNX_FloatTensor:$X);
  let results = (outs ONNX_FloatTensor:$Y);
  let assemblyFormat = "`(` $X `)` attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

class ONNX_SoftmaxLikeOp<string mnemonic, string onnxDoc>
    : ONNX_Op<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX " # mnemonic # " (opset 13 semantics)";
  let description = [{
    `}] # onnxDoc # [{` along the single axis `axis` (opset 13 and later). Before opset
    13 the operator normalized over the flattened 2-D view [d0*..*d(axis-1),
    d(axis)*..*d(n-1)]; the importer rewrites that form as Flatten, this op with
    axis 1, and a Reshape back.

    Constraints: `axis` is in [-rank, rank); the result has the input's type.
  }];
  let arguments = (ins ONNX_FloatTensor:$input,
                   DefaultValuedAttr<ONNX_IntAttr, "-1">:$axis);
  let results = (outs ONNX_FloatTensor:$output);
  let assemblyFormat = "`(` $input `)` attr-dict `:` functional-type(operands, results)";
}
def ONNX_SoftmaxOp : ONNX_SoftmaxLikeOp<"Softmax", "exp(x) / sum(exp(x))">;
def ONNX_LogSoftmaxOp : ONNX_SoftmaxLikeOp<"LogSoftmax", "x - log(sum(exp(x)))">;

def ONNX_FusedAttentionOp
    : ONNX_Op<"FusedAttention", [Pure, AttrSizedOperandSegments]> {
  let summary = "Scaled dot-product attention in one kernel (a HetPar op)";
  let description = [{
    Not an ONNX operator: hetpar-onnx-fuse-attention forms it from the
    exported pattern `MatMul(Softmax(mask(scale(MatMul(Q, KT)))), V)`, and code
    generation runs it without materializing the score matrix (the online
    softmax of FlashAttention-2, Dao 2023). With S = Q KT, shapes
    Q [..., Lq, D], KT [..., D, Lk], V [..., Lk, Dv] and Y [..., Lq, Dv]:

    - `scale`, when present: S = S * scale, or S = S / scale with `divide` 1
      (the exporter's Mul or Div, kept as written so that rounding matches);
    - `mask` of Q's element type: S = S + mask (an additive mask);
    - `mask` of i1 with `fill`: S = mask ? S : fill with `keep` 1, and
      S = mask ? fill : S with `keep` 0 (the exporter's Where);
    - Y = Softmax(S, last axis) V.

    The mask broadcasts to [..., Lq, Lk] as ONNX broadcasts. Rows whose every
    score is -inf give NaN, as the unfused Softmax does.

    Grouped-query attention: with `kv_repeat` g > 1, KT and V have g times
    fewer heads than Q (their dimension r - 3, as the op reads them, is Q's
    divided by g), and Q's head h reads their head floor(h / g), as Hugging
    Face's `repeat_kv` lays out its copies. hetpar-onnx-fuse-attention folds
    that repeat (Unsqueeze, Expand, Reshape) into it, so K and V are read in
    place instead of copied g times.

    Layouts: with `q_perm`, the Q above is Transpose(operand Q, q_perm), and
    likewise `kt_perm` for KT and `v_perm` for V; with `y_perm` the result is
    Transpose(Y, y_perm). hetpar-onnx-fuse-attention folds the exporters'
    head transposes ([N, L, H, D] <-> [N, H, L, D]) into them, so that the
    kernels read and write those layouts through strides instead of copies.

    Constraints: Q, KT, V and Y have one floating-point element type and rank
    r >= 2, with equal leading r - 2 dimensions; Q's last dimension equals
    KT's dimension r - 2, KT's last equals V's dimension r - 2; `scale` and
    `fill` hold one element (of any rank) of that type; a float `mask` has that
    type; `fill` is present exactly when `mask` is i1; the mask's shape
    broadcasts to [..., Lq, Lk] without changing it; `divide` and `keep` are
    0 or 1; each perm is a permutation of [0, r); `q_perm`, `kt_perm` and
    `v_perm` keep one of their matrix's dimensions contiguous (one of the
    last two maps to the operand's last dimension), and `y_perm` keeps Y's
    last dimension last; `kv_repeat` is at least 1, and above 1 needs r >= 3
    and KT's and V's dimension r - 3 times `kv_repeat` equal to Q's (their
    other leading dimensions equal Q's).
  }];
  let arguments = (ins ONNX_FloatTensor:$Q, ONNX_FloatTensor:$KT,
                   ONNX_FloatTensor:$V,
                   Optional<ONNX_FloatTensor>:$scale,
                   Optional<ONNX_Tensor>:$mask,
                   Optional<ONNX_FloatTensor>:$fill,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$divide,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$keep,
                   OptionalAttr<ONNX_IntsAttr>:$q_perm,
                   OptionalAttr<ONNX_IntsAttr>:$kt_perm,
                   OptionalAttr<ONNX_IntsAttr>:$v_perm,
                   OptionalAttr<ONNX_IntsAttr>:$y_perm,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$kv_repeat);
  let results = (outs ONNX_FloatTensor:$Y);
  let extraClassDeclaration = [{
    /// The shape of the operand or result the op reads as Q, KT, V or
    /// writes as Y after its perm: `stored` permuted by `perm` (Q, KT, V),
    /// or by its inverse (Y, `inverse` true). Identity without a perm.
    static llvm::SmallVector<int64_t> permuted(llvm::ArrayRef<int64_t> stored,
                                               std::optional<llvm::ArrayRef<int64_t>> perm,
                                               bool inverse = false);
    /// Whether the permutation `perm` keeps a matrix dimension contiguous,
    /// as the op's perms must: for an operand (Q, KT, V) the stored last
    /// dimension lands on one of the two matrix dimensions; for the result
    /// (`result` true) Y's last dimension stays last. The one answer of the
    /// verifier and of hetpar-onnx-fuse-attention.
    static bool keepsMatrixContiguous(llvm::ArrayRef<int64_t> perm,
                                      bool result);
  }];
  let assemblyFormat = [{
    `(` $Q `,` $KT `,` $V `)` (`scale` `(` $scale^ `)`)?
    (`mask` `(` $mask^ `)`)? (`fill` `(` $fill^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def ONNX_SoftmaxCrossEntropyLossOp
    : ONNX_Op<"SoftmaxCrossEntropyLoss", [Pure]> {
  let summary = "ONNX SoftmaxCrossEntropyLoss (opsets 12 and 13)";
  let description = [{
    Cross entropy of `scores` [N, C, d1, ..., dk] (the class axis is 1) against
    integer `labels` [N, d1, ..., dk]: log_prob = LogSoftmax(scores, axis 1), then
    NegativeLogLikelihoodLoss(log_prob, labels, weights). Per target position the loss
    is -weights[label] * log_prob[n, label, d...] (`weights` defaults to all ones); a
    position whose label equals `ignore_index` (when given) contributes 0 and has
    weight 0. `reduction` "none" returns the losses [N, d1, ..., dk], "sum" their sum,
    "mean" their sum divided by the sum of the weights of the positions not ignored
    (0/0 = NaN when every position is ignored, as in PyTorch and ONNX's reference).
    The optional second result is log_prob. A label outside [0, C) that is not
    `ignore_index` is undefined in ONNX; code generation reads the nearest class.
    Opsets 12 and 13 differ only in the element types they admit.

    Constraints: scores has rank >= 2; labels has the shape of scores without axis
    1; weights is 1-D of extent C; weights, the loss and log_prob have the element
    type of scores; `reduction` is "none", "sum" or "mean"; the loss has the shape
    of labels for "none", else rank 0; log_prob has the shape of scores.
  }];
  let arguments = (ins ONNX_FloatTensor:$scores, ONNX_IndexTensor:$labels,
                   Optional<ONNX_FloatTensor>:$weights,
                   OptionalAttr<ONNX_IntAttr>:$ignore_index,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction);
  let results = (outs ONNX_FloatTensor:$output,
                      Optional<ONNX_FloatTensor>:$log_prob);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_NegativeLogLikelihoodLossOp
    : ONNX_Op<"NegativeLogLikelihoodLoss", [Pure]> {
  let summary = "ONNX NegativeLogLikelihoodLoss (opsets 12 and 13)";
  let description = [{
    Negative log likelihood of `input` [N, C, d1, ..., dk] (log-probabilities, the
    class axis is 1) at integer `target` [N, d1, ..., dk]: per target position
    -weight[target] * input[n, target, d...] (`weight` defaults to all ones); a
    position whose target equals `ignore_index` (when given) contributes 0 and has
    weight 0. `reduction` "none" returns the losses [N, d1, ..., dk], "sum" their sum,
    "mean" their sum divided by the sum of the weights of the positions not ignored
    (0/0 = NaN when every position is ignored). A target outside [0, C) that is not
    `ignore_index` is undefined in ONNX; code generation reads the nearest class.
    Opsets 12 and 13 differ only in the element types they admit.

    Constraints: input has rank >= 2; target has the shape of input without axis
    1; weight is 1-D of extent C; weight and the loss have the element type of
    input; `reduction` is "none", "sum" or "mean"; the loss has the shape of target
    for "none", else rank 0.
  }];
  let arguments = (ins ONNX_FloatTensor:$input, ONNX_IndexTensor:$target,
                   Optional<ONNX_FloatTensor>:$weight,
                   OptionalAttr<ONNX_IntAttr>:$ignore_index,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction);
  let results = (outs ONNX_FloatTensor:$loss);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def ONNX_ReduceMeanOp : ONNX_ReduceOp<"ReduceMean", "mean">;
def ONNX_ReduceSumOp : ONNX_ReduceOp<"ReduceSum", "sum">;
def ONNX_ReduceMaxOp : ONNX_ReduceOp<"ReduceMax", "maximum">;
def ONNX_ReduceMinOp : ONNX_ReduceOp<"ReduceMin", "minimum">;
def ONNX_ReduceProdOp : ONNX_ReduceOp<"ReduceProd", "product">;
def ONNX_ReduceL1Op : ONNX_ReduceOp<"ReduceL1", "sum of absolute values">;
def ONNX_ReduceL2Op : ONNX_ReduceOp<"ReduceL2", "square root of the sum of squares">;
def ONNX_ReduceSumSquareOp : ONNX_ReduceOp<"ReduceSumSquare", "sum of squares">;
def ONNX_ReduceLogSumExpOp : ONNX_ReduceOp<"ReduceLogSumExp", "log of the sum of exp">;

class ONNX_ArgOp<string mnemonic, string onnxDoc> : ONNX_Op<mnemonic, [Pure]> {
  let summary = "ONNX " # mnemonic # ": index of the " # onnxDoc # " along an axis";
  let description = [{
    Constraints: `axis` is in [-rank, rank); keepdims and select_last_index are 0 or 1;
    the result is int64.
  }];
  let arguments = (ins ONNX_NumericTensor:$data,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$axis,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$keepdims,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$select_last_index);
  let results = (outs ONNX_I64Tensor:$reduced);
  let assemblyFormat = "`(` $data `)` attr-dict `:` functional-type(operands, results)";
}
def ONNX_ArgMaxOp : ONNX_ArgOp<"ArgMax", "maximum">;
def ONNX_ArgMinOp : ONNX_ArgOp<"ArgMin", "minimum">;

def ONNX_CumSumOp : ONNX_Op<"CumSum", [Pure]> {
  let summary = "ONNX CumSum: cumulative sum along an axis";
  let description = [{
    Constraints: `axis` is a scalar int32/int64 in [-rank, rank); exclusive and reverse
    are 0 or 1; the result has the input's type.
  }];
  let arguments = (ins ONNX_NumericTensor:$x, ONNX_IndexTensor:$axis,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$exclusive,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$reverse);
  let results = (outs ONNX_NumericTensor:$y);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Shape and layout
//===----------------------------------------------------------------------===//

def ONNX_ShapeOp : ONNX_Op<"Shape", [Pure]> {
  let summary = "ONNX Shape: the shape of a tensor as a 1-D int64 tensor";
  let description = [{
    Returns dimensions [start, end) of the input's shape (opset 15; negative `start`
    and `end` count from the back and are clamped to [0, rank]).

    Constraints: the result is a 1-D int64 tensor of length max(0, end - start).
  }];
  let arguments = (ins ONNX_Tensor:$data, OptionalAttr<ONNX_IntAttr>:$end,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$start);
  let results = (outs ONNX_I64Tensor:$shape);
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The dimensions [first, second) it returns for an input of `rank`, after
    /// counting negative `start`/`end` from the back and clamping to [0, rank].
    std::pair<int64_t, int64_t> getDimRange(int64_t rank);
  }];
  let assemblyFormat = "`(` $data `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_SizeOp : ONNX_Op<"Size", [Pure]> {
  let summary = "ONNX Size: number of elements as an int64 scalar";
  let description = [{ Constraints: the result is a rank-0 int64 tensor. }];
  let arguments = (ins ONNX_Tensor:$data);
  let results = (outs ONNX_I64Tensor:$size);
  let hasFolder = 1;
  let assemblyFormat = "`(` $data `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ReshapeOp : ONNX_Op<"Reshape", [Pure]> {
  let summary = "ONNX Reshape";
  let description = [{
    Reshapes `data` to `shape` (a 1-D int64 tensor). A -1 entry is inferred from the
    element count. A 0 entry copies the input's dimension at that index, unless
    `allowzero` is 1 (opset 14), in which case it is a real zero: [0,3,4] to [3,4,0]
    with allowzero gives shape [3,4,0].

    Constraints: `shape` is 1-D int64; at most one -1; no entry below -1; with
    allowzero, -1 and 0 do not appear together; a 0 entry (without allowzero) has a
    matching input dimension; the element counts agree.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_I64Tensor:$shape,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$allowzero);
  let results = (outs ONNX_Tensor:$reshaped);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_FlattenOp : ONNX_Op<"Flatten", [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX Flatten: reshape to 2-D at an axis";
  let description = [{
    Output is (d0*...*d(axis-1), d(axis)*...*d(n-1)).

    Constraints: `axis` is in [-rank, rank].
  }];
  let arguments = (ins ONNX_Tensor:$input, DefaultValuedAttr<ONNX_IntAttr, "1">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` $input `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_TransposeOp : ONNX_Op<"Transpose", [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX Transpose: permute dimensions";
  let description = [{
    Output dimension i is input dimension perm[i]; the default perm reverses the
    dimensions.

    Constraints: `perm` is a permutation of [0, rank).
  }];
  let arguments = (ins ONNX_Tensor:$data, OptionalAttr<ONNX_IntsAttr>:$perm);
  let results = (outs ONNX_Tensor:$transposed);
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// `perm`, or the reversal of [0, rank) when it is absent.
    ::llvm::SmallVector<int64_t> getPermutation(int64_t rank);
  }];
  let assemblyFormat = "`(` $data `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_SqueezeOp : ONNX_Op<"Squeeze", [Pure]> {
  let summary = "ONNX Squeeze: remove dimensions of extent 1";
  let description = [{
    Removes the dimensions listed in `axes` (1-D int64, opset 13 input; an attribute
    before 13, turned into an operand at import), or every dimension of extent 1 when
    `axes` is absent. Opset 11 Squeeze with axes=[2] on [1,C,1,W] gives [1,C,W].

    Constraints: axes are in [-rank, rank), distinct, and name dimensions of extent 1.
  }];
  let arguments = (ins ONNX_Tensor:$data, Optional<ONNX_I64Tensor>:$axes);
  let results = (outs ONNX_Tensor:$squeezed);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_UnsqueezeOp : ONNX_Op<"Unsqueeze", [Pure]> {
  let summary = "ONNX Unsqueeze: insert dimensions of extent 1";
  let description = [{
    Inserts dimensions of extent 1 at the positions `axes` of the output (1-D int64;
    an attribute before opset 13, turned into an operand at import).

    Constraints: axes are in [-r, r) for the output rank r = rank + len(axes), and
    distinct.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_I64Tensor:$axes);
  let results = (outs ONNX_Tensor:$expanded);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ConcatOp : ONNX_Op<"Concat", [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX Concat: join tensors along an axis";
  let description = [{
    Constraints: at least one input; all inputs have one rank and element type; `axis`
    is in [-rank, rank); all dimensions but `axis` are equal. Inputs with extent 0
    along `axis` contribute nothing: [0] and [1,2] give [1,2].
  }];
  let arguments = (ins Variadic<ONNX_Tensor>:$inputs, ONNX_IntAttr:$axis);
  let results = (outs ONNX_Tensor:$concat_result);
  let hasFolder = 1;
  let assemblyFormat = "`(` $inputs `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_SplitOp : ONNX_Op<"Split", [Pure]> {
  let summary = "ONNX Split (opset 18 semantics)";
  let description = [{
    Splits `input` along `axis` into the results. `split` (1-D int64) gives the sizes;
    without it, `num_outputs` (opset 18) gives ceil(n / num_outputs) per part with a
    smaller last part (10 elements into 4 gives [3,3,3,1]); with neither, the extent is
    split into equal parts, one per result.

    Constraints: `axis` is in [-rank, rank); `split`, when present, has one
    non-negative entry per result summing to the axis extent; `num_outputs`, when
    present, equals the number of results; without `split` and `num_outputs` the
    extent is divisible by the number of results.
  }];
  let arguments = (ins ONNX_Tensor:$input, Optional<ONNX_I64Tensor>:$split,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$axis,
                   OptionalAttr<ONNX_IntAttr>:$num_outputs);
  let results = (outs Variadic<ONNX_Tensor>:$outputs);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_SliceOp : ONNX_Op<"Slice", [Pure, AttrSizedOperandSegments]> {
  let summary = "ONNX Slice";
  let description = [{
    Takes data[starts:ends:steps] on the axes `axes` (default all, in order). Starts
    and ends are clamped as in numpy: with a positive step to [0, dim], with a negative
    step to [-1, dim-1] after adding dim to negative values. Slice of [1,2,3,4] with
    start -1, step -1 and end INT_MAX is empty; with end INT_MIN it is [4,3,2,1].

    Constraints: starts, ends, axes and steps are 1-D of one length and one index
    type; axes are in [-rank, rank) and distinct; no step is 0.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_IndexTensor:$starts,
                   ONNX_IndexTensor:$ends, Optional<ONNX_IndexTensor>:$axes,
                   Optional<ONNX_IndexTensor>:$steps);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = [{
    `(` $data `,` $starts `,` $ends `)` (`axes` `(` $axes^ `)`)? (`steps` `(` $steps^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def ONNX_GatherOp : ONNX_Op<"Gather", [Pure]> {
  let summary = "ONNX Gather: take entries along an axis";
  let description = [{
    out[i0..i(axis-1), j.., i(axis+1)..] = data[i0.., indices[j..], ...]. Negative
    indices count from the back: indices [0,-1] on a 3x4 matrix with axis 0 take rows
    0 and 2. The result shape is data.shape[:axis] + indices.shape +
    data.shape[axis+1:].

    Constraints: data has rank >= 1; `axis` is in [-rank, rank); indices are int32 or
    int64; constant indices are in [-dim, dim).
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_IndexTensor:$indices,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_GatherElementsOp : ONNX_Op<"GatherElements", [Pure]> {
  let summary = "ONNX GatherElements";
  let description = [{
    out[i][j]... = data[index along `axis` from indices][...]; the result has the
    indices' shape.

    Constraints: data and indices have the same rank >= 1; `axis` is in [-rank, rank).
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_IndexTensor:$indices,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_GatherNDOp : ONNX_Op<"GatherND", [Pure]> {
  let summary = "ONNX GatherND: slices of data at index tuples";
  let description = [{
    With b = `batch_dims`, data [B..., D...] and indices [B..., M..., k] (B the b
    shared batch axes): out[B..., M...] is the slice data[B..., i_1, ..., i_k, ...] for
    the index tuple (i_1 .. i_k) at indices[B..., M..., :]; the result is
    [B..., M..., D_(b+k)...]. Negative indices count from the end.

    Constraints: indices have rank >= 1, b < min(rank of data, rank of indices),
    1 <= k <= rank(data) - b, the first b extents of data and indices agree; a
    constant index lies in [-extent, extent) of its axis.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_I64Tensor:$indices,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$batch_dims);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ScatterNDOp : ONNX_Op<"ScatterND", [Pure]> {
  let summary = "ONNX ScatterND: data with slices replaced or combined at index tuples";
  let description = [{
    data [D...], indices [M..., k], updates [M..., D_k...]: the output is data with,
    for each index tuple (i_1 .. i_k) at indices[M..., :], the slice
    data[i_1, ..., i_k, ...] replaced by (`reduction` none) or combined with (add,
    mul, max, min) updates[M..., ...]. Updates apply in the indices' row-major
    order, so a repeated tuple keeps its last update (none) or combines them all.
    Negative indices count from the end.

    Constraints: 1 <= k <= rank(data); updates have shape [M..., D_k...];
    `reduction` is none, add, mul, max or min; a constant index lies in
    [-extent, extent) of its axis.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_I64Tensor:$indices, ONNX_Tensor:$updates,
                   DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ScatterElementsOp : ONNX_Op<"ScatterElements", [Pure]> {
  let summary = "ONNX ScatterElements: data with elements replaced or combined";
  let description = [{
    The output is data with, for each element u of updates at position p, the
    element at p with p[axis] replaced by indices[p] replaced by u (`reduction`
    none) or combined with it (add, mul, max, min). Updates apply in row-major order
    along `axis`, so a repeated index keeps its last update (none) or combines them
    all. Negative indices count from the end.

    Constraints: data, indices and updates have the same rank >= 1; indices and
    updates have the same shape, no larger than data's in any axis; `axis` is in
    [-rank, rank); `reduction` is none, add, mul, max or min; a constant index lies
    in [-extent, extent) of `axis`.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_IndexTensor:$indices, ONNX_Tensor:$updates,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$axis,
                   DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_ResizeOp : ONNX_Op<"Resize", [Pure, AttrSizedOperandSegments]> {
  let summary = "ONNX Resize: nearest, linear or cubic interpolation";
  let description = [{
    Resizes X to the extents `sizes` gives, or floor(extent * scale) with `scales`
    (for the axes `axes`, default all). Each output coordinate maps back to an input
    coordinate by `coordinate_transformation_mode` (half_pixel, half_pixel_symmetric,
    pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize with `roi`),
    and the value is the nearest input element (`nearest_mode`), the N-linear
    interpolation, or the cubic one (coefficient `cubic_coeff_a`, `exclude_outside`);
    coordinates outside the input read its edge, or `extrapolation_value` under
    tf_crop_and_resize.

    Constraints: exactly one of `scales` (float32, positive) and `sizes` (int64,
    positive) per resized axis; `mode` is nearest, linear or cubic; the modes and
    policies are ONNX's (opset 19).
  }];
  let arguments = (ins ONNX_Tensor:$X, Optional<ONNX_Tensor>:$roi,
                   Optional<ONNX_Tensor>:$scales, Optional<ONNX_I64Tensor>:$sizes,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$antialias,
                   OptionalAttr<DenseI64ArrayAttr>:$axes,
                   DefaultValuedStrAttr<StrAttr, "half_pixel">:$coordinate_transformation_mode,
                   DefaultValuedAttr<ONNX_FloatAttr, "-0.75">:$cubic_coeff_a,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$exclude_outside,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.0">:$extrapolation_value,
                   DefaultValuedStrAttr<StrAttr, "stretch">:$keep_aspect_ratio_policy,
                   DefaultValuedStrAttr<StrAttr, "nearest">:$mode,
                   DefaultValuedStrAttr<StrAttr, "round_prefer_floor">:$nearest_mode);
  let results = (outs ONNX_Tensor:$Y);
  let assemblyFormat = [{
    `(` $X `)` (`roi` `(` $roi^ `)`)? (`scales` `(` $scales^ `)`)? (`sizes` `(` $sizes^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Per axis of X (static extents): the output extent and the scale the
    /// coordinate transforms use (`scales`' entry, or output over input
    /// extent with `sizes`); axes not resized keep their extent and scale 1.
    /// Fails, with the reason, when scales/sizes are not constants or
    /// break the constraints.
    ::llvm::LogicalResult getAxes(::llvm::SmallVectorImpl<int64_t> &extents,
                                  ::llvm::SmallVectorImpl<double> &scales,
                                  std::string &reason);
  }];
}

def ONNX_ExpandOp : ONNX_Op<"Expand", [Pure]> {
  let summary = "ONNX Expand: broadcast to a shape";
  let description = [{
    Broadcasts `input` with `shape` multidirectionally: the result shape is the
    broadcast of the two, so it may be larger than `shape`. Expand of [2,2] to [1,2]
    gives [2,2]; to [2,1,1] gives [2,2,2].

    Constraints: `shape` is 1-D int64 with non-negative entries that broadcast with
    the input's shape.
  }];
  let arguments = (ins ONNX_Tensor:$input, ONNX_I64Tensor:$shape);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_NonZeroOp : ONNX_Op<"NonZero", [Pure]> {
  let summary = "ONNX NonZero: indices of the non-zero elements";
  let description = [{
    Returns a (rank, n) int64 tensor whose columns are the indices of the n
    non-zero elements in row-major order. n depends on the values, so the result
    is static only when the input is a constant (as in PyTorch's opset-9 and -10
    export of arange), where the op folds.

    Constraints: the result is an int64 matrix with one row per input axis.
  }];
  let arguments = (ins ONNX_Tensor:$X);
  let results = (outs ONNX_I64Tensor:$Y);
  let hasFolder = 1;
  let assemblyFormat = "`(` $X `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_TileOp : ONNX_Op<"Tile", [Pure]> {
  let summary = "ONNX Tile: repeat a tensor along each axis";
  let description = [{
    Constraints: `repeats` is 1-D int64 with one non-negative entry per input axis.
  }];
  let arguments = (ins ONNX_Tensor:$input, ONNX_I64Tensor:$repeats);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_PadOp : ONNX_Op<"Pad", [Pure, AttrSizedOperandSegments]> {
  let summary = "ONNX Pad";
  let description = [{
    Pads `data` by `pads` (1-D int64: all begins, then all ends, for the axes `axes`,
    default all; negative values crop) with `mode` constant (with `constant_value`,
    default 0), reflect, edge or wrap.

    Constraints: `pads` has 2 entries per padded axis; `mode` is constant, reflect, edge
    or wrap; every output extent is non-negative.
  }];
  let arguments = (ins ONNX_Tensor:$data, ONNX_I64Tensor:$pads,
                   Optional<ONNX_Tensor>:$constant_value, Optional<ONNX_IndexTensor>:$axes,
                   DefaultValuedStrAttr<StrAttr, "constant">:$mode);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = [{
    `(` $data `,` $pads `)` (`value` `(` $constant_value^ `)`)? (`axes` `(` $axes^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def ONNX_ConstantOfShapeOp : ONNX_Op<"ConstantOfShape", [Pure]> {
  let summary = "ONNX ConstantOfShape: a tensor of a shape filled with one value";
  let description = [{
    Constraints: `input` is 1-D int64 with non-negative entries; `value`, when given,
    has one element (default: float 0); the result has `value`'s element type.
  }];
  let arguments = (ins ONNX_I64Tensor:$input, OptionalAttr<ElementsAttr>:$value);
  let results = (outs ONNX_Tensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` $input `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_RangeOp : ONNX_Op<"Range", [Pure, SameOperandsAndResultElementType]> {
  let summary = "ONNX Range: start, start+delta, ... below limit";
  let description = [{
    Produces max(ceil((limit - start) / delta), 0) elements.

    Constraints: start, limit and delta are scalars of one numeric type; delta is not
    0 when constant.
  }];
  let arguments = (ins ONNX_NumericTensor:$start, ONNX_NumericTensor:$limit,
                   ONNX_NumericTensor:$delta);
  let results = (outs ONNX_NumericTensor:$output);
  let hasFolder = 1;
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_TriluOp : ONNX_Op<"Trilu", [Pure]> {
  let summary = "ONNX Trilu: upper or lower triangle of the last two axes";
  let description = [{
    Keeps the elements on and above (`upper` 1) or on and below (`upper` 0) the k-th
    diagonal of the last two axes and zeroes the rest.

    Constraints: input has rank >= 2; k is an int64 scalar; upper is 0 or 1.
  }];
  let arguments = (ins ONNX_Tensor:$input, Optional<ONNX_I64Tensor>:$k,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$upper);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_OneHotOp : ONNX_Op<"OneHot", [Pure]> {
  let summary = "ONNX OneHot: one-hot vectors of indices, along a new axis";
  let description = [{
    The result is `indices`' shape with an axis of `depth` entries inserted
    at `axis`: entry d of the vector at an index i is `values[1]` when
    i == d, or i + depth == d for a negative i, and `values[0]` otherwise.
    An index outside [-depth, depth) gives a vector of `values[0]` only (the
    ONNX specification's rule: not an error). Non-integer indices and depth
    are truncated toward zero, as ONNX Runtime casts them.

    Constraints: `depth` is a scalar or a 1-element tensor, positive when
    constant; `values` has 2 elements ([off, on]); `axis` is in
    [-(r + 1), r] for indices of rank r.
  }];
  let arguments = (ins ONNX_NumericTensor:$indices, ONNX_NumericTensor:$depth,
                   ONNX_Tensor:$values,
                   DefaultValuedAttr<ONNX_IntAttr, "-1">:$axis);
  let results = (outs ONNX_Tensor:$output);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Training ops (ONNX Runtime's com.microsoft training ops). Produced by the
// training passes (hetpar-onnx-differentiate, hetpar-train-optimizer), never
// imported.
//===----------------------------------------------------------------------===//

def ONNX_GatherGradOp : ONNX_Op<"GatherGrad", [Pure]> {
  let summary = "Gradient of Gather: scatter-add of dY into zeros of the data shape";
  let description = [{
    dX = zeros(shape); for every position p of `indices`, the slice of `dY` at p is
    added into the slice of dX at index indices[p] along `axis` (negative indices
    count from the end). Repeated indices accumulate (the gradient of an embedding
    table). The data shape is the `shape` attribute.

    Constraints: `axis` is in [-rank, rank) of `shape`; dY has the shape
    shape[:axis] + shape(indices) + shape[axis+1:]; the result has shape `shape`
    and dY's element type.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_IndexTensor:$indices,
                   ONNX_IntsAttr:$shape,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$axis);
  let results = (outs ONNX_FloatTensor:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

// The gradients of the windowed ops (Conv, MaxPool, AveragePool), in the form
// of ONNX Runtime's training contrib ops.

def ONNX_ConvGradOp : ONNX_Op<"ConvGrad", [Pure]> {
  let summary = "Gradient of Conv with respect to X, W and B";
  let description = [{
    ONNX Runtime's com.microsoft ConvGrad (not an ONNX operator: passes produce
    it, the importer never does). Given the gradient `dY` of Conv's result, its
    input `X` (N, C, D1, ..., Dn) and weight `W` (M, C/group, k1, ..., kn), with
    the attributes of the forward Conv, returns dX (the transposed convolution of
    dY by W), dW (the correlation of X with dY, summed over the batch) and dB (dY
    summed over N and the spatial axes). Code generation computes dW per image
    and group as dY x im2col(X)^T accumulated over the batch, and dX as
    col2im(W^T x dY), col2im gathering per input element the columns that touch
    it (no atomics: the same result on every backend); a result without uses is
    not computed.

    Constraints: X, W and the attributes satisfy Conv's constraints; dY has the
    shape of the Conv's result; dY, X and W have one element type; dX, dW and dB
    have the shapes of X, W and (M) and that element type.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_FloatTensor:$X,
                   ONNX_FloatTensor:$W,
                   DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                   OptionalAttr<ONNX_IntsAttr>:$dilations,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$group,
                   OptionalAttr<ONNX_IntsAttr>:$kernel_shape,
                   OptionalAttr<ONNX_IntsAttr>:$pads,
                   OptionalAttr<ONNX_IntsAttr>:$strides);
  let results = (outs ONNX_FloatTensor:$dX, ONNX_FloatTensor:$dW,
                 ONNX_FloatTensor:$dB);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_MaxPoolGradOp : ONNX_Op<"MaxPoolGrad", [Pure]> {
  let summary = "Gradient of MaxPool's first result with respect to X";
  let description = [{
    A training op in the style of ONNX Runtime's com.microsoft gradient ops (not
    an ONNX operator). Given the gradient `dY` of MaxPool's result and its input
    `X`, with the forward MaxPool's attributes, returns dX: each window's dY goes
    to the window's first maximum (in the window's row-major order, as MaxPool's
    Indices and PyTorch pick it), the rest get 0. The maxima are recomputed from
    X (no Indices operand); code generation runs one thread per element of X
    summing dY over the windows whose first maximum it is (no atomics).

    Constraints: X and the attributes satisfy MaxPool's constraints; dY has the
    shape of MaxPool's result; dY and X have one element type; dX has X's type.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_FloatTensor:$X,
                   DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$ceil_mode,
                   OptionalAttr<ONNX_IntsAttr>:$dilations,
                   ONNX_IntsAttr:$kernel_shape,
                   OptionalAttr<ONNX_IntsAttr>:$pads,
                   OptionalAttr<ONNX_IntsAttr>:$strides);
  let results = (outs ONNX_FloatTensor:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_AveragePoolGradOp : ONNX_Op<"AveragePoolGrad", [Pure]> {
  let summary = "Gradient of AveragePool with respect to X";
  let description = [{
    A training op in the style of ONNX Runtime's com.microsoft AveragePoolGrad
    (not an ONNX operator). Given the gradient `dY` of AveragePool's result, the
    input shape `shape` (N, C, D1, ..., Dn) and the forward AveragePool's
    attributes, returns dX: each element of X receives dY / count of every window
    it lies in, count being the window's elements inside X, or inside the padded
    extent with `count_include_pad` 1 (as AveragePool divides). Code generation
    runs one thread per element of dX (no atomics).

    Constraints: `shape` and the attributes satisfy AveragePool's constraints
    (rank >= 3, non-negative extents); `count_include_pad` is 0 or 1; dY has the
    shape of AveragePool's result on `shape`; dX has shape `shape` and dY's
    element type.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_IntsAttr:$shape,
                   DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$ceil_mode,
                   OptionalAttr<ONNX_IntsAttr>:$dilations,
                   ONNX_IntsAttr:$kernel_shape,
                   OptionalAttr<ONNX_IntsAttr>:$pads,
                   OptionalAttr<ONNX_IntsAttr>:$strides,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$count_include_pad);
  let results = (outs ONNX_FloatTensor:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_AdamWOptimizerOp : ONNX_Op<"AdamWOptimizer", [Pure]> {
  let summary = "One AdamW step of one parameter (torch.optim.AdamW semantics)";
  let description = [{
    With g = grad * grad_scale, t = step (the step number after this update,
    starting at 1) and the learning rate lr:

        param' = param * (1 - lr * weight_decay)
        exp_avg' = beta1 * exp_avg + (1 - beta1) * g
        exp_avg_sq' = beta2 * exp_avg_sq + (1 - beta2) * g * g
        param'' = param' - lr / (1 - beta1^t) * exp_avg'
                  / (sqrt(exp_avg_sq') / sqrt(1 - beta2^t) + epsilon)

    as `torch.optim.AdamW` (Loshchilov & Hutter, "Decoupled Weight Decay
    Regularization", ICLR 2019, with Adam's bias correction). `grad_scale` carries
    gradient clipping (and loss scaling); when it is not finite the step is
    skipped: every result equals its operand. Code generation updates the
    parameter and its state in place, one thread per element.

    Constraints: param, grad, exp_avg and exp_avg_sq have one type (float32);
    lr and grad_scale are float32 scalars; step is an int64 scalar; beta1 and
    beta2 are in [0, 1); the results have the types of param, exp_avg,
    exp_avg_sq.
  }];
  let arguments = (ins ONNX_FloatTensor:$param, ONNX_FloatTensor:$grad,
                   ONNX_FloatTensor:$exp_avg, ONNX_FloatTensor:$exp_avg_sq,
                   ONNX_FloatTensor:$lr, ONNX_I64Tensor:$step,
                   ONNX_FloatTensor:$grad_scale,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.9f">:$beta1,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.999f">:$beta2,
                   DefaultValuedAttr<ONNX_FloatAttr, "1e-8f">:$epsilon,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.01f">:$weight_decay);
  let results = (outs ONNX_FloatTensor:$param_out, ONNX_FloatTensor:$exp_avg_out,
                 ONNX_FloatTensor:$exp_avg_sq_out);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_SGDOptimizerOp : ONNX_Op<"SGDOptimizer", [Pure]> {
  let summary = "One SGD step of one parameter (torch.optim.SGD semantics)";
  let description = [{
    With g = grad * grad_scale + weight_decay * param:

        momentum 0:  param' = param - lr * g            (no buffer operand)
        otherwise:   buf' = momentum * buf + g   (buf' = g on step 1)
                     d = nesterov ? g + momentum * buf' : buf'
                     param' = param - lr * d

    as `torch.optim.SGD` with dampening 0. `step` is the step number after this
    update (1 on the first step). When grad_scale is not finite the step is
    skipped. Updated in place by code generation.

    Constraints: param, grad and momentum_buffer (present exactly when momentum
    is not 0) have one type; lr and grad_scale are float32 scalars; step is an
    int64 scalar; nesterov needs momentum > 0; one result per updated tensor
    (param, then the buffer when present).
  }];
  let arguments = (ins ONNX_FloatTensor:$param, ONNX_FloatTensor:$grad,
                   Optional<ONNX_FloatTensor>:$momentum_buffer,
                   ONNX_FloatTensor:$lr, ONNX_I64Tensor:$step,
                   ONNX_FloatTensor:$grad_scale,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.0f">:$momentum,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$nesterov,
                   DefaultValuedAttr<ONNX_FloatAttr, "0.0f">:$weight_decay);
  let results = (outs ONNX_FloatTensor:$param_out,
                 Variadic<ONNX_FloatTensor>:$momentum_buffer_out);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

// The gradients of the losses, in the form of ONNX Runtime's training contrib
// ops.

def ONNX_SoftmaxCrossEntropyLossGradOp
    : ONNX_Op<"SoftmaxCrossEntropyLossGrad", [Pure]> {
  let summary = "Gradient of SoftmaxCrossEntropyLoss with respect to its scores";
  let description = [{
    ONNX Runtime's com.microsoft SoftmaxCrossEntropyLossGrad (not an ONNX
    operator: passes produce it, the importer never does). Given the gradient
    `dY` of the loss, the forward op's `log_prob` [N, C, d1, ..., dk], its `label`
    [N, d1, ..., dk] and optional `weight` [C], returns
    dX[n, c, d...] = g * (exp(log_prob[n, c, d...]) - (c == label)) * weight[label]
    with g = dY[n, d...] for `reduction` "none", dY for "sum" and dY / W for "mean",
    W being the sum of the weights of the positions not ignored; positions whose
    label equals `ignore_index` get 0. A label outside [0, C) that is not
    `ignore_index` is read as the nearest class, as the forward op does.

    Constraints: log_prob has rank >= 2; label has the shape of log_prob without
    axis 1; weight is 1-D of extent C; dY has the shape of label for "none" and is
    a scalar (one element) otherwise; dY, weight and dX have the element type of
    log_prob; `reduction` is "none", "sum" or "mean"; dX has the shape of log_prob.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_FloatTensor:$log_prob,
                   ONNX_IndexTensor:$label, Optional<ONNX_FloatTensor>:$weight,
                   OptionalAttr<ONNX_IntAttr>:$ignore_index,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction);
  let results = (outs ONNX_FloatTensor:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

def ONNX_NegativeLogLikelihoodLossGradOp
    : ONNX_Op<"NegativeLogLikelihoodLossGrad", [Pure]> {
  let summary = "Gradient of NegativeLogLikelihoodLoss with respect to its input";
  let description = [{
    A training op in the style of ONNX Runtime's com.microsoft gradient ops (not
    an ONNX operator: passes produce it, the importer never does). Given the
    gradient `dY` of the loss, the forward op's `input` [N, C, d1, ..., dk] (read
    for its type only: its values are not used), its `target` [N, d1, ..., dk] and
    optional `weight` [C], returns dInput, zero except
    dInput[n, target, d...] = -g * weight[target], with g = dY[n, d...] for
    `reduction` "none", dY for "sum" and dY / W for "mean", W being the sum of the
    weights of the positions not ignored; positions whose target equals
    `ignore_index` get 0. A target outside [0, C) that is not `ignore_index` is
    read as the nearest class, as the forward op does.

    Constraints: input has rank >= 2; target has the shape of input without axis
    1; weight is 1-D of extent C; dY has the shape of target for "none" and is a
    scalar (one element) otherwise; dY, weight and dInput have the element type of
    input; `reduction` is "none", "sum" or "mean"; dInput has the shape of input.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_FloatTensor:$input,
                   ONNX_IndexTensor:$target, Optional<ONNX_FloatTensor>:$weight,
                   OptionalAttr<ONNX_IntAttr>:$ignore_index,
                   DefaultValuedStrAttr<StrAttr, "mean">:$reduction);
  let results = (outs ONNX_FloatTensor:$dInput);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

// The gradients of the row-wise normalizations (Softmax, LogSoftmax,
// LayerNormalization), in the form of ONNX Runtime's training contrib ops:
// one kernel per op instead of the composite's four to ten.

class ONNX_SoftmaxLikeGradOp<string mnemonic, string forward, string formula>
    : ONNX_Op<mnemonic, [Pure]> {
  let summary = "Gradient of " # forward # " from its result";
  let description = [{
    ONNX Runtime's com.microsoft }] # mnemonic # [{_13 (not an ONNX operator:
    passes produce it, the importer never does). Given the gradient `dY` of }]
    # forward # [{'s result and that result `Y` (not its input), returns, along
    the single axis `axis` (opset 13 semantics),

        }] # formula # [{

    the sum running over `axis` (the Jacobian-vector product of }] # forward #
    [{; e.g. Goodfellow, Bengio and Courville, "Deep Learning", section 6.2.2.3,
    and ONNX Runtime's orttraining/core/graph/gradient_builder.cc). Code
    generation runs one pass per row (the elements along `axis`), accumulating
    in float32 (float64 for float64) and rounding once on the store.

    Constraints: `axis` is in [-rank, rank) of Y; dY has Y's shape and element
    type; dX has Y's type.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_FloatTensor:$Y,
                   DefaultValuedAttr<ONNX_IntAttr, "-1">:$axis);
  let results = (outs ONNX_FloatTensor:$dX);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}
def ONNX_SoftmaxGradOp : ONNX_SoftmaxLikeGradOp<"SoftmaxGrad", "Softmax",
    "dX = Y * (dY - sum(dY * Y))">;
def ONNX_LogSoftmaxGradOp : ONNX_SoftmaxLikeGradOp<"LogSoftmaxGrad",
    "LogSoftmax", "dX = dY - exp(Y) * sum(dY)">;

def ONNX_LayerNormalizationGradOp
    : ONNX_Op<"LayerNormalizationGrad", [Pure]> {
  let summary = "Gradient of LayerNormalization with respect to X, Scale and B";
  let description = [{
    In the style of ONNX Runtime's com.microsoft LayerNormalizationGrad (not an
    ONNX operator: passes produce it, the importer never does), except that the
    statistics are recomputed from X rather than read from the forward op's
    Mean and InvStdDev results. Given the gradient `dY` of LayerNormalization's
    Y, its input `X` and its `Scale` expanded to the normalized shape
    X.shape[axis:], with the forward op's `axis` and `epsilon`, per row r (the
    n = prod(X.shape[axis:]) elements of the normalized axes):

        mean = sum(x) / n,  inv = 1 / sqrt(sum((x - mean)^2) / n + epsilon)
        xhat = (x - mean) * inv,  g = dY * Scale
        dX = inv * (g - sum(g) / n - xhat * sum(g * xhat) / n)
        dScale = sum over rows of dY * xhat,  dB = sum over rows of dY

    (the standard LayerNorm backward: Ba, Kiros and Hinton, "Layer
    Normalization", 2016, differentiated as in PyTorch's
    aten/src/ATen/native/cpu/layer_norm_kernel.cpp). The statistics are
    recomputed as the forward kernel computes them (two passes, float32
    accumulation): saving them would mean rewriting the forward op to return
    them and keeping two [rows] tensors alive from the forward to the backward
    pass, which activation recomputation would have to carry too; recomputing
    costs one extra read of the row the kernel reads anyway. Code generation
    runs one pass per row for dX (writing the row's mean and inv to scratch
    when dScale or dB is used) and one deterministic pass per column for
    dScale and dB (no atomics); a result without uses is not computed.

    Constraints: `axis` is in [-rank, rank) of X; dY has X's shape; Scale has
    the normalized shape X.shape[axis:]; dY, X and Scale have one element type;
    dX has X's type, dScale and dB have Scale's type.
  }];
  let arguments = (ins ONNX_FloatTensor:$dY, ONNX_FloatTensor:$X,
                   ONNX_FloatTensor:$Scale,
                   DefaultValuedAttr<ONNX_IntAttr, "-1">:$axis,
                   DefaultValuedAttr<ONNX_FloatAttr, "1e-5f">:$epsilon);
  let results = (outs ONNX_FloatTensor:$dX, ONNX_FloatTensor:$dScale,
                 ONNX_FloatTensor:$dB);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

#endif // HETPAR_DIALECT_ONNX_ONNXOPS_TD
