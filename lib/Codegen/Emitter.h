//===- Emitter.h - the device-program emitter, across its files -*- C++ -*-===//
//
// The emitter of EmitProgram.cpp (one walk over a static function that
// writes its device program), declared once for the files that define its
// parts: EmitProgram.cpp (storage, planning, helpers, the driver),
// EmitTrainingState.cpp, EmitElementwise.cpp, EmitGemmOps.cpp,
// EmitCollectives.cpp and EmitOp.cpp. Private to lib/Codegen; the names live
// in hetpar::codegen::emitter, which sees mlir's.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_LIB_CODEGEN_EMITTER_H
#define HETPAR_LIB_CODEGEN_EMITTER_H

#include "EmitAllToAll.h"
#include "EmitAttention.h"
#include "EmitGradients.h"
#include "EmitIndexing.h"
#include "TraceSpans.h"
#include "hetpar/Codegen/Codegen.h"
#include "hetpar/Codegen/MemoryPlan.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/Dist/ExchangeSteps.h"
#include "hetpar/Dialect/ONNX/ClipBounds.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Dialect/ONNX/Views.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Training.h"
#include "hetpar/device/hetpar_packed.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <tuple>

namespace hetpar::codegen::emitter {

using namespace mlir;
namespace onnx = hetpar::onnx;

inline RankedTensorType tensorType(Value v) {
  return llvm::dyn_cast<RankedTensorType>(v.getType());
}

/// `axis` of `v` counted from the front (a negative axis counts from the
/// back).
inline int64_t axisOf(Value v, int64_t axis) {
  int64_t r = static_cast<int64_t>(shapeOf(v).size());
  return axis < 0 ? axis + r : axis;
}

inline bool isFloatLike(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

/// The strides of `v`, an operand (number operandNo) of `user`, an op of an
/// elementwise group, over the dimensions of the group's result (outShape):
/// v's row-major strides right-aligned (NumPy broadcasting), 0 where v is
/// broadcast or the result's extent is 1; for BatchNormalization's
/// per-channel operands (operandNo > 0), 1 along dimension 1.
llvm::SmallVector<int64_t> leafStrides(Value v, Operation *user,
                                       unsigned operandNo,
                                       llvm::ArrayRef<int64_t> outShape);

struct Storage {
  enum Kind { None, Input, Output, Weight, Arena } kind = None;
  int64_t index = 0;  // input or output position
  int64_t offset = 0; // bytes into weights or arena
};

class Emitter {
public:
  Emitter(func::FuncOp func, const CodegenOptions &opts)
      : func(func), opts(opts) {}

  FailureOr<DeviceProgram> run();

private:
  // Types under the chosen float mode.
  std::string storageType(Type t) const {
    if (t.isF32())
      return opts.floatMode == FloatMode::F16    ? "hp_half"
             : opts.floatMode == FloatMode::BF16 ? "hp_bf16"
                                                 : "float";
    if (t.isF16())
      return "hp_half";
    if (t.isBF16())
      return "hp_bf16";
    return computeType(t); // float64, integers and bool store as computed
  }
  static std::string computeType(Type t) {
    if (isFloatLike(t))
      return "float";
    if (t.isF64())
      return "double";
    auto i = llvm::cast<IntegerType>(t);
    if (i.getWidth() == 1)
      return "bool";
    return (i.isUnsigned() ? "uint" : "int") + std::to_string(i.getWidth()) +
           "_t";
  }
  /// Accumulator of reductions and GEMM: float for 16- and 32-bit floats,
  /// double, and the 64-bit integer of the same signedness (a uint64 value
  /// at or above 2^63 does not fit an int64; sums wrap modulo 2^64 either
  /// way).
  static std::string accType(Type t) {
    if (isFloatLike(t))
      return "float";
    if (t.isF64())
      return "double";
    return t.isUnsignedInteger() ? "uint64_t" : "int64_t";
  }
  int64_t storageBytes(Type t) const {
    if (t.isF32() && opts.floatMode != FloatMode::F32)
      return 2;
    unsigned w = t.getIntOrFloatBitWidth();
    return w == 1 ? 1 : w / 8;
  }
  /// True when the value's storage type differs from the model's (float32
  /// under --dtype float16/bfloat16): graph inputs and outputs convert.
  bool converted(Type t) const {
    return t.isF32() && opts.floatMode != FloatMode::F32;
  }

  Value root(Value v) const {
    auto it = aliasOf.find(v);
    return it == aliasOf.end() ? v : it->second;
  }
  /// C expression of the pointer to v's first element.
  std::string ptr(Value v);
  /// Registers v (a constant) in weights.bin; returns its byte offset.
  FailureOr<int64_t> addWeight(Value v);
  /// Appends `bytes` to weights.bin with an index entry; returns the offset.
  int64_t appendWeight(llvm::StringRef name, Type elt,
                       llvm::ArrayRef<int64_t> shape, std::vector<char> bytes,
                       llvm::json::Object extra);
  /// Training state: every ml_program.global of the module lives in
  /// weights.bin (updated in place); loads alias it and the optimizer's
  /// results are written into it (docs/training.md).
  LogicalResult planGlobals();
  ml_program::GlobalOp globalOf(Operation *loadOrStore);
  LogicalResult emitTrainingOp(Operation *op);
  std::optional<std::string> literalOf(Value v) const;

  void planValues();
  Operation *fusionUser(Operation *op, const llvm::DenseSet<Value> &returned);
  bool emittedInPlace(Operation *op);
  void planExchangeSteps();
  LogicalResult planMemory();
  void planScratch();
  LogicalResult emitBody();
  void describeBoundary();
  void writeSource();
  LogicalResult emitOp(Operation *op);
  /// The families emitOp tries in turn: each emits `op` when it is one of
  /// its ops (the result says whether that worked), else returns none.
  std::optional<LogicalResult> tryEmitWindowed(Operation *op);
  std::optional<LogicalResult> tryEmitReduction(Operation *op);
  std::optional<LogicalResult> tryEmitNormalization(Operation *op);
  std::optional<LogicalResult> tryEmitLayout(Operation *op);
  llvm::SmallVector<Operation *> elementwiseGroupOf(Operation *rootOp);
  LogicalResult emitElementwiseGroup(Operation *rootOp);
  /// The C statements of `group` (in program order), one temporary t0, t1,
  /// ... per op, the last the group's result; `leafExpr(value, user,
  /// operand number)` gives the expression of an operand from outside.
  FailureOr<std::string> groupStatements(
      llvm::ArrayRef<Operation *> group,
      llvm::function_ref<std::string(Value, Operation *, unsigned)> leafExpr);
  /// Writes the functor of a group absorbed by `anchor` (a GEMM epilogue,
  /// a LayerNorm prologue) into the kernels: `struct <prefix><n>` after a
  /// comment naming its `role` and the group's ops, holding `members` and
  /// `HP_HD <signature>`, whose `body` (groupStatements's, after any loads)
  /// ends by returning the group's result. Returns the struct's name.
  std::string emitGroupFunctor(llvm::StringRef prefix, llvm::StringRef role,
                               Operation *anchor,
                               llvm::ArrayRef<Operation *> group,
                               llvm::StringRef members,
                               llvm::StringRef signature, llvm::StringRef body);
  /// GEMM epilogues (EmitGemmEpilogue.cpp): elementwise groups that finish a
  /// Gemm's product as the GEMM stores it.
  Operation *epilogueGroupOf(onnx::GemmOp gemm);
  void planGemmEpilogues();
  /// The functor type of `gemm`'s epilogue, written into the kernels
  /// ("hp_epi_none" without one; empty on failure, reported), and `out`,
  /// the value the GEMM writes: the group's result, or its own.
  std::string emitGemmEpilogue(Operation *gemm, Value &out);
  /// LayerNorm prologues (EmitLayerNormPrologue.cpp): elementwise groups
  /// that compute a LayerNormalization's X, row by row in its kernel.
  Operation *prologueGroupOf(onnx::LayerNormalizationOp ln);
  void planLayerNormPrologues();
  /// The functor object of `ln`'s prologue, its type written into the
  /// kernels ("hp_pro_none()" without one; empty on failure, reported).
  std::string emitLayerNormPrologue(Operation *ln);
  FailureOr<std::string> elementwiseExpr(Operation *op,
                                         llvm::ArrayRef<std::string> a);
  LogicalResult emitMatMul(Operation *op);
  LogicalResult emitGemm(onnx::GemmOp op);
  std::string convEpilogue(Operation *op);
  LogicalResult emitConv(Operation *op);
  LogicalResult emitConv2d(Operation *op, const hp_conv2d_shape &shape,
                           const std::string &epilogue);
  std::optional<std::vector<char>> packableConstant(Value w);
  std::string addPacked(Value w, llvm::StringRef layout,
                        const std::string &variant,
                        llvm::ArrayRef<int64_t> shape,
                        llvm::function_ref<std::vector<char>()> pack);
  std::string packedConvWeight(Value w, const hp_conv2d_shape &shape);
  std::string packedGemmOperand(Value b, int64_t rows, int64_t N, int64_t K,
                                bool tb);
  std::string unpackedOperand(Value w, const std::string &packed,
                              const std::string &rule);
  LogicalResult emitConvGrad(onnx::ConvGradOp op);
  LogicalResult emitPoolGrad(Operation *op);
  LogicalResult emitEinsum(onnx::EinsumOp op);
  LogicalResult emitResize(onnx::ResizeOp op, Value out);
  LogicalResult emitCollective(Operation *op);
  void emitExchange(Operation *op);
  void closeExchange(llvm::ArrayRef<Operation *> stepOps);
  LogicalResult emitPool(Operation *op, bool isMax);
  LogicalResult emitLoss(Operation *op);
  LogicalResult emitLossGrad(Operation *op);
  /// The services the emitters of EmitGradients.cpp and EmitAttention.cpp
  /// call.
  LibraryEmitContext libraryContext();
  LogicalResult emitReduce(Operation *op, Value in, Value out,
                           llvm::ArrayRef<int64_t> axes, llvm::StringRef kind);
  void emitStridedCopy(Value in, llvm::ArrayRef<int64_t> dims,
                       llvm::ArrayRef<int64_t> inStrides,
                       llvm::ArrayRef<int64_t> inMods, int64_t inOffset,
                       const std::string &outPtr,
                       llvm::ArrayRef<int64_t> outStrides, int64_t outOffset,
                       Type elt);
  void emitCopy(const std::string &src, const std::string &dst, int64_t n,
                Type elt);
  /// A contiguous copy of `n` elements of C type `cType`.
  void emitCopy(const std::string &src, const std::string &dst, int64_t n,
                llvm::StringRef cType);
  void comment(Operation *op);
  void line(const llvm::Twine &text) { body << indent << text << "\n"; }
  void call(const llvm::Twine &text) {
    body << indent << "if (" << text << ")\n" << indent << "  return 1;\n";
  }
  /// Opens / closes a C block in the host function.
  void open() {
    line("{");
    indent += "  ";
  }
  void close() {
    indent.resize(indent.size() - 2);
    line("}");
  }
  std::string indent = "  ";
  std::string scratch(Operation *op);
  /// The trailing kernel arguments of an index check for `op`: the run's
  /// error record and op's 1-based place in HP_CHECKED_NODES (registered
  /// here), or a null record without checks.
  std::string indexCheck(Operation *op);
  llvm::SmallVector<std::string> checkedNodes; // describeNode, in order
  /// HP_CHECKED_NODES: checkedNodes as C string literals, each with a comma.
  std::string checkedNodeList() const;

  func::FuncOp func;
  const CodegenOptions &opts;
  DeviceProgram program;
  llvm::SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> step;
  llvm::DenseMap<Value, Value> aliasOf;
  llvm::DenseMap<Value, Storage> storage;
  llvm::DenseMap<Operation *, Operation *> fusedInto;
  /// Elementwise groups whose code another op's kernel runs: the absorbing
  /// op (a Gemm, the group its epilogue; a LayerNormalization, the group its
  /// prologue) -> the group's ops in program order, the root last; and each
  /// such root -> its absorbing op. absorbGroup records both.
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *>> absorbedGroup;
  llvm::DenseMap<Operation *, Operation *> absorbedBy;
  void absorbGroup(Operation *by, Operation *groupRoot);
  /// The step at which `op`'s code runs, and so reads its operands: its own;
  /// for an op fused into a later one (fusedInto), that one's; for an op of
  /// an absorbed group, the later of its root's and the absorbing op's.
  int64_t runStep(Operation *op);
  llvm::DenseMap<Operation *, int64_t> scratchBytes, scratchOffset;
  llvm::DenseMap<Value, int64_t> weightOffset;
  // addPacked's copies: (constant, variant) -> offset in weights.bin, and
  // how many variants each constant has.
  std::map<std::pair<void *, std::string>, int64_t> packedWeightOffset;
  llvm::DenseMap<void *, int64_t> packedVariants;
  /// unpackedOperand left out a constant's own copy: the source refuses to
  /// build for CUDA.
  bool packedOnly = false;
  llvm::DenseMap<Operation *, int64_t> globalOffset; // global -> offset
  llvm::DenseSet<Operation *> inPlaceStores;         // stores needing no copy
  llvm::json::Array weightEntries;
  std::string kernelText, bodyText;
  llvm::raw_string_ostream kernels{kernelText};
  llvm::raw_string_ostream body{bodyText};
  int kernelCount = 0;
  bool weightError = false; // a constant's data could not be read
  /// The exchange steps (planExchangeSteps), and each send's and receive's.
  llvm::SmallVector<llvm::SmallVector<Operation *>> exchanges;
  llvm::DenseMap<Operation *, size_t> exchangeOf;
  llvm::SmallVector<std::pair<Value, int64_t>> outputCopies; // value, output
  llvm::SmallVector<std::pair<int64_t, int64_t>> inputConversions;
  /// The measured timeline of a training step (TraceSpans.h): the spans so
  /// far, each with its collectives' kinds, and HP_TRACE before each.
  void traceOp(Operation *op);
  std::string traceSpanList() const;
  std::optional<TraceSpans> trace;
  llvm::SmallVector<std::pair<TraceSpanKey, std::string>> spans;
};

//===----------------------------------------------------------------------===//
// Shared helpers (EmitProgram.cpp, EmitGemmOps.cpp)
//===----------------------------------------------------------------------===//

// Views alias their operand's storage (hetpar/Dialect/ONNX/Views.h).
using onnx::isRandomDropout;
using onnx::isView;
/// Ops the elementwise groups fuse (inference BatchNormalization included).
bool isElementwise(Operation *op);
/// An op's attribute, or `dflt` when it has none.
int64_t intAttr(Operation *op, llvm::StringRef name, int64_t dflt);
double floatAttr(Operation *op, llvm::StringRef name, double dflt);
llvm::SmallVector<int64_t> intsAttr(Operation *op, llvm::StringRef name);
std::string strAttr(Operation *op, llvm::StringRef name, llvm::StringRef dflt);
/// "{1, 2, 3}" ("{0}" when empty): a C array or aggregate initializer.
std::string braced(llvm::ArrayRef<int64_t> v);
/// A C literal of `v` (float, or double when `isDouble`), NaN and infinities
/// included.
std::string floatLiteral(double v, bool isDouble);
/// 2 or 3 when `v` is a one-element constant of that value, else none.
std::optional<int> smallIntegerExponent(Value v);
/// A C string literal of `text` (quotes, backslashes and control characters
/// escaped).
std::string cString(llvm::StringRef text);
/// binary16 / bfloat16 bits of a float, round to nearest even.
uint16_t toHalf(float f);
uint16_t toBF16(float f);

/// The sliding window of a Conv or pooling op over its spatial dims, as its
/// kernels apply it: onnx::Window's reading of the attributes (Window.h,
/// shared with shape inference) resolved for the op's static extents:
/// kernel extents, strides and dilations, begin and end padding (auto_pad
/// resolved), input and output extents.
struct Window {
  llvm::SmallVector<int64_t> kernel, stride, dilation, padBegin, padEnd;
  llvm::ArrayRef<int64_t> in, out;

  /// A 1 x ... x 1 kernel with stride 1 and no padding: the im2col matrix is
  /// the input itself (hetpar_device.h's hp_conv2d_pointwise for 2-D).
  bool pointwise() const {
    auto allEqual = [](llvm::ArrayRef<int64_t> v, int64_t e) {
      return llvm::all_of(v, [&](int64_t d) { return d == e; });
    };
    return allEqual(kernel, 1) && allEqual(stride, 1) &&
           allEqual(padBegin, 0) && allEqual(padEnd, 0);
  }
};

/// The window of an op whose input has shape `in` and result shape `out`
/// (both with the N and C axes): the gradients' forward shapes.
Window windowOf(Operation *op, llvm::ArrayRef<int64_t> kernel,
                llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);
/// The window of a Conv or pooling op from its own operand and result.
Window windowOf(Operation *op, llvm::ArrayRef<int64_t> kernel);

} // namespace hetpar::codegen::emitter

#endif // HETPAR_LIB_CODEGEN_EMITTER_H
