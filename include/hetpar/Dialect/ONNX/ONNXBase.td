//===- ONNXBase.td - onnx dialect, types, attributes, base op ----*- tablegen -*-===//
//
// The `onnx` dialect: ONNX operators with the semantics of the newest opset HetPar
// knows (opset 22 of the default domain). The importer rewrites older forms (Softmax
// before 13, Split before 13 and 18, attribute-style axes, ...) into these.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_DIALECT_ONNX_ONNXBASE_TD
#define HETPAR_DIALECT_ONNX_ONNXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "hetpar/Dialect/ONNX/ONNXInterfaces.td"

def ONNX_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::hetpar::onnx";
  let summary = "ONNX operators with static-shape-friendly, opset-normalized semantics";
  let description = [{
    Each op of this dialect is one ONNX operator of the default domain (`ai.onnx`), with
    the semantics of the newest opset HetPar supports. The importer normalizes older opsets:
    attributes that later opsets turned into inputs (Squeeze/Unsqueeze/Reduce* `axes`, Clip
    `min`/`max`, Slice `starts`/`ends`, Split `split`) become operands, and operators whose
    meaning changed (Softmax/LogSoftmax before 13) are rewritten to ops with today's meaning.

    Types are builtin tensors. ONNX element types map to: float16 `f16`, bfloat16 `bf16`,
    float `f32`, double `f64`, bool `i1`, int8..int64 signless `i8`..`i64`, uint8..uint64
    `ui8`..`ui64`. Dimensions unknown at import (`dim_param`, -1) are dynamic (`?`).

    Operators HetPar does not model yet import as `onnx.Generic`, which keeps the op type,
    domain, attributes and operands, so that such a model still imports and fails later
    with "unsupported op X (node Y)" where an op must be understood.

    Every op with a shape rule implements `InferShapesOpInterface`; its verifier checks
    that the declared result types agree with the rule.
  }];
  let hasConstantMaterializer = 1;
  // The sharding rules use dist's reduction kinds and give dist.transfer its
  // identity rule (ShardingRules.cpp).
  let dependentDialects = ["::hetpar::dist::DistDialect"];
  let extraClassDeclaration = [{
    /// Infers the result types of an onnx.Generic op: appends one type per
    /// result, null where nothing is known. The importer library installs ONNX's
    /// own schema inference here (registerImportDialects); passes use it to refine
    /// the types of ops the dialect does not model once their inputs are static.
    using GenericTypeInference = std::function<void(
        ::mlir::Operation *, ::llvm::SmallVectorImpl<::mlir::Type> &)>;
    void setGenericTypeInference(GenericTypeInference fn) {
      genericTypeInference = std::move(fn);
    }
    const GenericTypeInference &getGenericTypeInference() const {
      return genericTypeInference;
    }

  private:
    GenericTypeInference genericTypeInference;

  public:
  }];
  let useDefaultAttributePrinterParser = 0;
  let usePropertiesForAttributes = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def ONNX_AnyElementType : AnyTypeOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64,
                                      UI8, UI16, UI32, UI64]>;
def ONNX_Tensor : TensorOf<[F16, BF16, F32, F64, I1, I8, I16, I32, I64,
                            UI8, UI16, UI32, UI64]>;
def ONNX_NumericTensor : TensorOf<[F16, BF16, F32, F64, I8, I16, I32, I64,
                                   UI8, UI16, UI32, UI64]>;
def ONNX_FloatTensor : TensorOf<[F16, BF16, F32, F64]>;
def ONNX_BoolTensor : TensorOf<[I1]>;
def ONNX_I64Tensor : TensorOf<[I64]>;
def ONNX_IndexTensor : TensorOf<[I32, I64]>;

//===----------------------------------------------------------------------===//
// Attribute constraints. ONNX INT is a signed 64-bit value; the upstream I64Attr
// getter returns it zero-extended, so a negative axis would read as a huge number.
//===----------------------------------------------------------------------===//

def ONNX_IntAttr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                                "64-bit signed integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}
def ONNX_FloatAttr : TypedAttrBase<F32, "FloatAttr",
    And<[CPred<"::llvm::isa<::mlir::FloatAttr>($_self)">,
         CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getType().isF32()">]>,
    "32-bit float attribute"> {
  let storageType = [{ ::mlir::FloatAttr }];
  let returnType = [{ float }];
  let convertFromStorage = "static_cast<float>($_self.getValueAsDouble())";
  let constBuilderCall = "$_builder.getF32FloatAttr($0)";
}
defvar ONNX_IntsAttr = DenseI64ArrayAttr;
defvar ONNX_FloatsAttr = DenseF32ArrayAttr;

//===----------------------------------------------------------------------===//
// Base op classes
//===----------------------------------------------------------------------===//

// Every onnx op: pure unless it says otherwise, shape rule through the interface.
class ONNX_Op<string mnemonic, list<Trait> traits = []>
    : Op<ONNX_Dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<InferShapesOpInterface>,
                              DeclareOpInterfaceMethods<FlopCountOpInterface>])>;

// y = f(x), same type in and out.
class ONNX_UnaryOp<string mnemonic, string onnxDoc, Type T = ONNX_NumericTensor,
                   list<Trait> traits = []>
    : ONNX_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultElementType])> {
  let summary = "ONNX " # mnemonic # ": elementwise " # onnxDoc;
  let description = [{
    Elementwise `}] # onnxDoc # [{`.

    Constraints: the result has the operand's element type and shape.
  }];
  let arguments = (ins T:$X);
  let results = (outs T:$Y);
  let assemblyFormat = "`(` $X `)` attr-dict `:` functional-type(operands, results)";
}

// C = A op B with ONNX multidirectional (numpy-style) broadcasting.
class ONNX_BinaryOp<string mnemonic, string onnxDoc, Type T = ONNX_NumericTensor,
                    Type R = T, list<Trait> traits = []>
    : ONNX_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsElementType])> {
  let summary = "ONNX " # mnemonic # ": elementwise " # onnxDoc # " with broadcasting";
  let description = [{
    Elementwise `}] # onnxDoc # [{` with multidirectional broadcasting: shapes are
    aligned at their last dimension and each pair of dimensions must be equal or one
    of them 1.

    Constraints: both operands have the same element type; their shapes broadcast;
    the result shape is the broadcast shape.
  }];
  let arguments = (ins T:$A, T:$B);
  let results = (outs R:$C);
  let assemblyFormat = "`(` $A `,` $B `)` attr-dict `:` functional-type(operands, results)";
}

// Y = op over a set of axes (optional `axes` operand; keepdims; noop_with_empty_axes).
class ONNX_ReduceOp<string mnemonic, string onnxDoc>
    : ONNX_Op<mnemonic, [Pure]> {
  let summary = "ONNX " # mnemonic # ": " # onnxDoc # " over axes";
  let description = [{
    Reduces `data` with `}] # onnxDoc # [{` over `axes` (an optional 1-D int64 operand;
    negative axes count from the back). Without axes it reduces all dimensions, unless
    `noop_with_empty_axes` is 1, in which case it returns its input. `keepdims` keeps the
    reduced dimensions with extent 1.

    Constraints: axes are in [-rank, rank) and distinct; keepdims and
    noop_with_empty_axes are 0 or 1.
  }];
  let arguments = (ins ONNX_NumericTensor:$data, Optional<ONNX_I64Tensor>:$axes,
                   DefaultValuedAttr<ONNX_IntAttr, "1">:$keepdims,
                   DefaultValuedAttr<ONNX_IntAttr, "0">:$noop_with_empty_axes);
  let results = (outs ONNX_NumericTensor:$reduced);
  let assemblyFormat = "`(` operands `)` attr-dict `:` functional-type(operands, results)";
}

#endif // HETPAR_DIALECT_ONNX_ONNXBASE_TD
