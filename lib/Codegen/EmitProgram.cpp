//===- EmitProgram.cpp - device_0.cu from the static onnx dialect ---------===//
//
// One walk over a fully static function in program order:
//  - views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, inference Dropout)
//    alias their operand's storage and emit nothing (training-mode Dropout
//    draws its mask with hp_dropout);
//  - chains of elementwise ops with one user and the same shape fuse into one
//    generated kernel (one thread per output element, broadcast operands read
//    through per-dimension strides, scalar constants inlined as literals);
//  - MatMul, Gemm and Conv (im2col) become GEMM calls (cuBLAS / OpenBLAS);
//  - layout, gather, reduction, normalization, softmax and pooling ops launch
//    the library kernels of runtime/include/hetpar/device/hetpar_device.h;
//  - intermediates get offsets in one arena from the liveness-based planner
//    (MemoryPlan.h); a value returned by the graph is written straight into
//    the caller's output buffer.
//
//===----------------------------------------------------------------------===//

#include "EmitAllToAll.h"
#include "EmitAttention.h"
#include "EmitGradients.h"
#include "EmitIndexing.h"
#include "TraceSpans.h"
#include "hetpar/Codegen/Codegen.h"
#include "hetpar/Codegen/MemoryPlan.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ClipBounds.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Training.h"

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
#include <tuple>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;
namespace onnx = hetpar::onnx;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

static RankedTensorType tensorType(Value v) {
  return llvm::dyn_cast<RankedTensorType>(v.getType());
}

static bool isFloatLike(Type t) { return t.isF16() || t.isBF16() || t.isF32(); }

namespace {
//===----------------------------------------------------------------------===//
// The emitter
//===----------------------------------------------------------------------===//

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
  /// Accumulator of reductions and GEMM.
  static std::string accType(Type t) {
    if (isFloatLike(t))
      return "float";
    if (t.isF64())
      return "double";
    return "int64_t";
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
  std::vector<std::pair<int64_t, int64_t>> exchangeSteps();
  LogicalResult planMemory();
  LogicalResult emitOp(Operation *op);
  LogicalResult emitElementwiseGroup(Operation *rootOp);
  FailureOr<std::string> elementwiseExpr(Operation *op,
                                         llvm::ArrayRef<std::string> a);
  LogicalResult emitMatMul(Operation *op);
  LogicalResult emitGemm(onnx::GemmOp op);
  std::string convEpilogue(Operation *op);
  LogicalResult emitConv(Operation *op);
  LogicalResult emitConv2d(Operation *op, llvm::ArrayRef<int64_t> shape,
                           const std::string &epilogue);
  LogicalResult emitConvGrad(onnx::ConvGradOp op);
  LogicalResult emitPoolGrad(Operation *op);
  LogicalResult emitEinsum(onnx::EinsumOp op);
  LogicalResult emitResize(onnx::ResizeOp op, Value out);
  LogicalResult emitCollective(Operation *op);
  void closeExchange();
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
  llvm::DenseMap<Operation *, int64_t> scratchBytes, scratchOffset;
  llvm::DenseMap<Value, int64_t> weightOffset;
  llvm::DenseMap<Operation *, int64_t> globalOffset; // global -> offset
  llvm::DenseSet<Operation *> inPlaceStores;         // stores needing no copy
  llvm::json::Array weightEntries;
  std::string kernelText, bodyText;
  llvm::raw_string_ostream kernels{kernelText};
  llvm::raw_string_ostream body{bodyText};
  int kernelCount = 0;
  bool weightError = false;  // a constant's data could not be read
  std::string exchangeWhat;  // the open step's messages, for errors
  bool exchangeOpen = false; // consecutive send/recv form one exchange step
  llvm::SmallVector<std::pair<Value, int64_t>> outputCopies; // value, output
  llvm::SmallVector<std::pair<int64_t, int64_t>> inputConversions;
  /// The measured timeline of a training step (TraceSpans.h): the spans so
  /// far, each with its collectives' kinds, and HP_TRACE before each.
  void traceOp(Operation *op);
  std::string traceSpanList() const;
  std::optional<TraceSpans> trace;
  llvm::SmallVector<std::pair<TraceSpanKey, std::string>> spans;
};
} // namespace

/// A Dropout that drops at random: training_mode true (or not a constant)
/// and a ratio that is not a constant 0 (PyTorch exports F.dropout(x, 0.0)
/// so: the identity).
static bool isRandomDropout(Operation *op) {
  auto d = dyn_cast<onnx::DropoutOp>(op);
  if (!d || !d.getTrainingMode())
    return false;
  auto training = getConstantIntValues(d.getTrainingMode());
  if (training && llvm::none_of(*training, [](int64_t v) { return v; }))
    return false;
  ElementsAttr ratio =
      d.getRatio() ? getConstantElements(d.getRatio()) : ElementsAttr();
  auto values = ratio ? readFloatElements(ratio) : std::nullopt;
  return !(values && !values->empty() && (*values)[0] == 0.0);
}

static bool isView(Operation *op) {
  if (isa<onnx::ReshapeOp, onnx::FlattenOp, onnx::SqueezeOp, onnx::UnsqueezeOp,
          onnx::IdentityOp>(op))
    return true;
  return isa<onnx::DropoutOp>(op) && !isRandomDropout(op);
}

static bool isElementwise(Operation *op) {
  // In training mode it computes per-channel batch statistics first.
  if (auto bn = dyn_cast<onnx::BatchNormalizationOp>(op))
    return bn.getTrainingMode() == 0;
  return isa<
      onnx::SqrtOp, onnx::ReciprocalOp, onnx::NegOp, onnx::AbsOp, onnx::ExpOp,
      onnx::LogOp, onnx::ErfOp, onnx::TanhOp, onnx::SigmoidOp, onnx::ReluOp,
      onnx::SinOp, onnx::CosOp, onnx::TanOp, onnx::AsinOp, onnx::AcosOp,
      onnx::AtanOp, onnx::SinhOp, onnx::CoshOp, onnx::AsinhOp, onnx::AcoshOp,
      onnx::AtanhOp, onnx::FloorOp, onnx::CeilOp, onnx::RoundOp, onnx::SignOp,
      onnx::SoftplusOp, onnx::SoftsignOp, onnx::HardSwishOp, onnx::MishOp,
      onnx::NotOp, onnx::LeakyReluOp, onnx::EluOp, onnx::CeluOp, onnx::SeluOp,
      onnx::HardSigmoidOp, onnx::ThresholdedReluOp, onnx::GeluOp, onnx::IsNaNOp,
      onnx::IsInfOp, onnx::ClipOp, onnx::CastOp, onnx::CastLikeOp, onnx::AddOp,
      onnx::SubOp, onnx::MulOp, onnx::DivOp, onnx::EqualOp, onnx::LessOp,
      onnx::LessOrEqualOp, onnx::GreaterOp, onnx::GreaterOrEqualOp, onnx::AndOp,
      onnx::OrOp, onnx::XorOp, onnx::PowOp, onnx::ModOp, onnx::PReluOp,
      onnx::WhereOp, onnx::MaxOp, onnx::MinOp, onnx::SumOp, onnx::MeanOp>(op);
}

static int64_t intAttr(Operation *op, llvm::StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getValue().getSExtValue();
  return dflt;
}
static double floatAttr(Operation *op, llvm::StringRef name, double dflt) {
  if (auto a = op->getAttrOfType<FloatAttr>(name))
    return a.getValueAsDouble();
  return dflt;
}
static llvm::SmallVector<int64_t> intsAttr(Operation *op,
                                           llvm::StringRef name) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
    return llvm::SmallVector<int64_t>(a.asArrayRef());
  return {};
}
static std::string strAttr(Operation *op, llvm::StringRef name,
                           llvm::StringRef dflt) {
  if (auto a = op->getAttrOfType<StringAttr>(name))
    return a.getValue().str();
  return dflt.str();
}

/// "{1, 2, 3}" ("{0}" when empty): a C array or aggregate initializer.
static std::string braced(llvm::ArrayRef<int64_t> v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.empty() ? "0}" : "}");
}

static std::string floatLiteral(double v, bool isDouble) {
  if (std::isnan(v))
    return isDouble ? "(double)NAN" : "NAN";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + (isDouble ? "(double)" : "") +
           "INFINITY";
  std::string s = llvm::formatv(isDouble ? "{0:e16}" : "{0:e8}", v).str();
  return isDouble ? s : s + "f";
}

std::optional<std::string> Emitter::literalOf(Value v) const {
  auto type = tensorType(v);
  if (!type || numel(type.getShape()) != 1)
    return std::nullopt;
  ElementsAttr attr = getConstantElements(v);
  if (!attr)
    return std::nullopt;
  Type elt = type.getElementType();
  std::string ct = computeType(elt);
  if (elt.isF64() || isFloatLike(elt)) {
    auto vals = readFloatElements(attr);
    if (!vals)
      return std::nullopt;
    return floatLiteral((*vals)[0], elt.isF64());
  }
  auto vals = readIntElements(attr);
  if (!vals)
    return std::nullopt;
  if (ct == "bool")
    return std::string((*vals)[0] ? "true" : "false");
  if ((*vals)[0] == INT64_MIN)
    return std::string("((" + ct + ")INT64_MIN)");
  return "((" + ct + ")" + std::to_string((*vals)[0]) + "LL)";
}

/// 2 or 3 when `v` is a one-element constant of that value (a float of an
/// integral value, or an integer), else none.
static std::optional<int> smallIntegerExponent(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  ElementsAttr attr = getConstantElements(v);
  if (!type || !attr || numel(type.getShape()) != 1)
    return std::nullopt;
  double value;
  if (auto floats = readFloatElements(attr))
    value = (*floats)[0];
  else if (auto ints = readIntElements(attr))
    value = static_cast<double>((*ints)[0]);
  else
    return std::nullopt;
  if (value == 2.0 || value == 3.0)
    return static_cast<int>(value);
  return std::nullopt;
}

/// binary16 / bfloat16 bits of a float, round to nearest even (the same
/// conversions as hp_f2h / hp_f2bf in hetpar_device.h).
static uint16_t toHalf(float f) {
  llvm::APFloat a(f);
  bool lost;
  a.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return static_cast<uint16_t>(a.bitcastToAPInt().getZExtValue());
}
static uint16_t toBF16(float f) {
  llvm::APFloat a(f);
  bool lost;
  a.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(a.bitcastToAPInt().getZExtValue());
}

FailureOr<int64_t> Emitter::addWeight(Value v) {
  auto it = weightOffset.find(v);
  if (it != weightOffset.end())
    return it->second;
  ElementsAttr attr = getConstantElements(v);
  auto bytes = attr ? getElementsBytes(attr) : FailureOr<std::vector<char>>();
  if (failed(bytes))
    return v.getDefiningOp()->emitError(
        "constant data is missing (external data file not loaded?)");
  Type elt = eltOf(v);
  if (converted(elt)) {
    std::vector<char> narrow(bytes->size() / 2);
    for (size_t i = 0; i < bytes->size() / 4; ++i) {
      float f;
      std::memcpy(&f, bytes->data() + 4 * i, 4);
      uint16_t h = opts.floatMode == FloatMode::F16 ? toHalf(f) : toBF16(f);
      std::memcpy(narrow.data() + 2 * i, &h, 2);
    }
    *bytes = std::move(narrow);
  }
  std::string name;
  if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(attr))
    name = res.getRawHandle().getKey().str();
  if (name.empty())
    name = onnx::getNodeName(v.getLoc());
  if (name.empty())
    name = "constant_" + std::to_string(weightEntries.size());
  int64_t offset = appendWeight(name, elt, shapeOf(v), std::move(*bytes), {});
  weightOffset[v] = offset;
  return offset;
}

int64_t Emitter::appendWeight(llvm::StringRef name, Type elt,
                              llvm::ArrayRef<int64_t> shapeDims,
                              std::vector<char> bytes,
                              llvm::json::Object extra) {
  int64_t offset = (program.weights.size() + 255) / 256 * 256;
  program.weights.resize(offset + bytes.size());
  if (!bytes.empty()) // an empty tensor's data() may be null
    std::memcpy(program.weights.data() + offset, bytes.data(), bytes.size());
  llvm::json::Array shape;
  for (int64_t d : shapeDims)
    shape.push_back(d);
  uint32_t crc = llvm::crc32(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
  llvm::json::Object entry{{"name", name.str()},
                           {"dtype", converted(elt)
                                         ? floatModeName(opts.floatMode).str()
                                         : dtypeName(elt)},
                           {"shape", std::move(shape)},
                           {"offset", offset},
                           {"bytes", static_cast<int64_t>(bytes.size())},
                           {"crc32", static_cast<int64_t>(crc)}};
  for (auto &kv : extra)
    entry[kv.first] = std::move(kv.second);
  weightEntries.push_back(std::move(entry));
  return offset;
}

std::string Emitter::ptr(Value v) {
  Value r = root(v);
  std::string t = storageType(eltOf(r));
  const Storage &s = storage.lookup(r);
  switch (s.kind) {
  case Storage::Input:
    return "((const " + t + " *)inputs[" + std::to_string(s.index) + "])";
  case Storage::Output:
    return "((" + t + " *)outputs[" + std::to_string(s.index) + "])";
  case Storage::Arena:
    return "((" + t + " *)(arena + " + std::to_string(s.offset) + "))";
  case Storage::Weight: // a global: mutable state in weights.bin
    return "((" + t + " *)(weights + " + std::to_string(s.offset) + "))";
  case Storage::None:
    break;
  }
  // A constant: stored in weights.bin on first use.
  FailureOr<int64_t> off = addWeight(r);
  if (failed(off)) // the error is reported; run() fails at its end
    weightError = true;
  return "((const " + t + " *)(weights + " +
         std::to_string(succeeded(off) ? *off : 0) + "))";
}

//===----------------------------------------------------------------------===//
// Planning: views, fusion, storage
//===----------------------------------------------------------------------===//

void Emitter::planValues() {
  for (Operation &op : func.getBody().front())
    if (!isa<func::ReturnOp>(op)) {
      step[&op] = static_cast<int64_t>(ops.size()) + 1;
      ops.push_back(&op);
    }
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  llvm::DenseSet<Value> returned(returnOp.getOperands().begin(),
                                 returnOp.getOperands().end());
  for (Operation *op : ops) {
    if (isView(op))
      aliasOf[op->getResult(0)] = root(op->getOperand(0));
  }
  // Fusion: an elementwise op whose only use is an elementwise op of the same
  // result shape computes inside that op's kernel.
  for (Operation *op : ops)
    if (Operation *user = fusionUser(op, returned))
      fusedInto[op] = user;
}

/// The elementwise op of the same result shape that is the only user of
/// `op`'s one result (not a function result), when `op` is elementwise too;
/// else null.
Operation *Emitter::fusionUser(Operation *op,
                               const llvm::DenseSet<Value> &returned) {
  // A running sum over microbatches is computed where it stands: fused into
  // the next microbatch's add it would keep every microbatch's operand alive
  // to the last add (train::kRunningSumAttr).
  if (!isElementwise(op) || op->getNumResults() != 1 ||
      op->hasAttr(train::kRunningSumAttr))
    return nullptr;
  Value r = op->getResult(0);
  if (returned.contains(r) || !r.hasOneUse())
    return nullptr;
  Operation *user = *r.getUsers().begin();
  if (!isElementwise(user) || shapeOf(user->getResult(0)) != shapeOf(r))
    return nullptr;
  // BatchNormalization reads its statistics per channel; fuse only its X.
  if (isa<onnx::BatchNormalizationOp>(user) && user->getOperand(0) != r)
    return nullptr;
  return user;
}

/// Whether the emitter writes code for `op` where it stands: not for ops
/// fused into a later one, constants and views (whose code, if any, is their
/// root's or none).
bool Emitter::emittedInPlace(Operation *op) {
  return !fusedInto.count(op) && !op->hasTrait<OpTrait::ConstantLike>() &&
         !isView(op);
}

/// The exchange steps of the function as [first, last] steps of their send
/// and receive ops: runs of sends and receives that no emitted op
/// interrupts (emitOp closes the step at any other op).
std::vector<std::pair<int64_t, int64_t>> Emitter::exchangeSteps() {
  std::vector<std::pair<int64_t, int64_t>> out;
  bool open = false;
  for (Operation *op : ops) {
    if (isa<dist::SendOp, dist::RecvOp>(op)) {
      int64_t at = step.lookup(op);
      if (!open)
        out.push_back({at, at});
      out.back().second = at;
      open = true;
    } else if (emittedInPlace(op)) {
      open = false;
    }
  }
  return out;
}

LogicalResult Emitter::planMemory() {
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  int64_t endStep = static_cast<int64_t>(ops.size()) + 1;
  for (auto [i, arg] : llvm::enumerate(func.getArguments()))
    storage[arg] = {Storage::Input, static_cast<int64_t>(i), 0};
  if (failed(planGlobals()))
    return failure();

  // Graph outputs produced by an op (not a view, constant or input) and
  // stored in the model's dtype are written straight into the output buffer.
  for (auto [j, v] : llvm::enumerate(returnOp.getOperands())) {
    Value r = root(v);
    Operation *def = r.getDefiningOp();
    bool direct = r == v && def && !def->hasTrait<OpTrait::ConstantLike>() &&
                  !converted(eltOf(v)) && !storage.count(r);
    if (direct)
      storage[r] = {Storage::Output, static_cast<int64_t>(j), 0};
    else
      outputCopies.push_back({v, static_cast<int64_t>(j)});
  }

  // Lifetimes of arena values (roots), in steps.
  auto useStep = [&](Operation *user) -> int64_t {
    if (isa<func::ReturnOp>(user))
      return endStep;
    while (fusedInto.count(user))
      user = fusedInto.lookup(user);
    return step.lookup(user);
  };
  llvm::MapVector<Value, BufferLifetime> live;
  auto touch = [&](Value r, int64_t first, int64_t last) {
    auto [it, inserted] = live.insert({r, {0, first, last}});
    if (!inserted) {
      it->second.first = std::min(it->second.first, first);
      it->second.last = std::max(it->second.last, last);
    }
    it->second.bytes = numelOf(r) * storageBytes(eltOf(r));
  };
  for (auto [i, arg] : llvm::enumerate(func.getArguments()))
    if (converted(eltOf(arg))) {
      storage[arg] = {Storage::Arena, 0, 0};
      inputConversions.push_back({static_cast<int64_t>(i), 0});
      touch(arg, 0, 0);
    }
  for (Operation *op : ops) {
    if (fusedInto.count(op) || isView(op) ||
        op->hasTrait<OpTrait::ConstantLike>())
      continue;
    for (Value r : op->getResults()) {
      if (!tensorType(r) || storage.count(r))
        continue;
      // ConvGrad computes no result without uses (emitConvGrad), such as
      // the gradient of a graph input: it gets no buffer.
      if (r.use_empty() && isa<onnx::ConvGradOp>(op))
        continue;
      storage[r] = {Storage::Arena, 0, 0};
      touch(r, step.lookup(op), step.lookup(op));
    }
  }
  // Extend each root's lifetime to the last use of it or of any view of it.
  for (Operation *op : ops)
    for (Value v : op->getResults()) {
      Value r = root(v);
      if (!live.count(r))
        continue;
      for (Operation *user : v.getUsers())
        touch(r, live[r].first, useStep(user));
    }
  for (BlockArgument arg : func.getArguments())
    if (live.count(arg))
      for (Operation *user : arg.getUsers())
        touch(arg, 0, useStep(user));
  for (auto &[v, j] : outputCopies)
    if (live.count(root(v)))
      touch(root(v), live[root(v)].first, endStep);
  // One exchange step posts its sends and receives together and waits for
  // them at its end (hp_exchange_end): every buffer it sends from or
  // receives into is in use over the whole step, so none of them may share
  // memory with another (a receive into the buffer a send still reads).
  for (auto [first, last] : exchangeSteps())
    for (int64_t k = first; k <= last; ++k) {
      Operation *op = ops[static_cast<size_t>(k - 1)];
      auto inUse = [&](Value v) {
        Value r = root(v);
        if (live.count(r))
          touch(r, std::min(live[r].first, first),
                std::max(live[r].last, last));
      };
      if (auto send = dyn_cast<dist::SendOp>(op))
        inUse(send.getInput());
      else if (auto recv = dyn_cast<dist::RecvOp>(op))
        inUse(recv.getResult());
    }

  std::vector<BufferLifetime> buffers;
  std::vector<Value> values;
  for (auto &[v, b] : live) {
    buffers.push_back(b);
    values.push_back(v);
  }
  std::vector<Operation *> scratchOps;
  for (auto &[op, bytes] : scratchBytes) {
    buffers.push_back({bytes, step.lookup(op), step.lookup(op)});
    scratchOps.push_back(op);
  }
  ArenaLayout layout = planArena(buffers);
  for (size_t i = 0; i < values.size(); ++i)
    storage[values[i]].offset = layout.offsets[i];
  for (size_t i = 0; i < scratchOps.size(); ++i)
    scratchOffset[scratchOps[i]] = layout.offsets[values.size() + i];
  program.arenaBytes = layout.arenaBytes;
  program.arenaBytesNoReuse = layout.totalBytes;
  return success();
}

//===----------------------------------------------------------------------===//
// Training state (ml_program globals)
//===----------------------------------------------------------------------===//

ml_program::GlobalOp Emitter::globalOf(Operation *op) {
  SymbolRefAttr sym;
  if (auto l = dyn_cast<ml_program::GlobalLoadOp>(op))
    sym = l.getGlobalAttr();
  else if (auto st = dyn_cast<ml_program::GlobalStoreOp>(op))
    sym = st.getGlobalAttr();
  return sym ? SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op,
                                                                          sym)
             : nullptr;
}

/// The bytes a global starts with (its value; a splat of zeros without
/// expanding element by element).
static FailureOr<std::vector<char>> initialBytes(ml_program::GlobalOp g) {
  auto type = llvm::cast<RankedTensorType>(g.getType());
  auto dense = llvm::dyn_cast_if_present<DenseElementsAttr>(g.getValueAttr());
  if (dense && dense.isSplat()) {
    unsigned bits = type.getElementTypeBitWidth();
    std::vector<char> zeros(type.getNumElements() * (bits == 1 ? 1 : bits / 8));
    bool zero = llvm::isa<FloatType>(type.getElementType())
                    ? dense.getSplatValue<llvm::APFloat>().isZero()
                    : dense.getSplatValue<llvm::APInt>().isZero();
    if (zero)
      return zeros;
  }
  auto elements = llvm::dyn_cast_if_present<ElementsAttr>(g.getValueAttr());
  if (!elements)
    return failure();
  return getElementsBytes(elements);
}

/// weights.json's "tensor_shard" of a parameter global of `type` that holds
/// device `self`'s part of `shard` (docs/training.md, "Tensor-parallel
/// training"): {"dim", "start", "size", "shape": the whole parameter's
/// shape}.
static llvm::json::Object tensorShardJson(dist::ShardingAttr shard,
                                          int64_t self, RankedTensorType type) {
  int64_t dim = shard.getSplitDim(), start = 0, size = 0;
  for (auto [id, n] : llvm::zip(shard.getDevices(), shard.getSizes())) {
    if (id == self) {
      size = n;
      break;
    }
    start += n;
  }
  llvm::json::Array shape;
  for (auto [k, e] : llvm::enumerate(type.getShape())) {
    int64_t whole = e;
    if (static_cast<int64_t>(k) == dim) {
      whole = 0;
      for (int64_t n : shard.getSizes())
        whole += n;
    }
    shape.push_back(whole);
  }
  return llvm::json::Object{{"dim", dim},
                            {"start", start},
                            {"size", size},
                            {"shape", std::move(shape)}};
}

LogicalResult Emitter::planGlobals() {
  auto module = func->getParentOfType<ModuleOp>();
  if (!module)
    return success();
  for (auto g : module.getOps<ml_program::GlobalOp>()) {
    auto type = llvm::dyn_cast<RankedTensorType>(g.getType());
    auto bytes = type ? initialBytes(g) : FailureOr<std::vector<char>>();
    if (failed(bytes))
      return g.emitError() << "global @" << g.getSymName()
                           << ": code generation needs a static tensor with "
                              "an initial value";
    if (converted(type.getElementType()))
      return g.emitError("training state in 16-bit storage is not supported "
                         "yet (compile training with --dtype float32)");
    llvm::json::Object extra;
    llvm::StringRef role = train::roleOf(g);
    extra["role"] = role.empty() ? "constant" : role.str();
    if (auto of = g->getAttrOfType<FlatSymbolRefAttr>(train::kStateOfAttr))
      extra["of"] = of.getValue().str();
    if (auto slot = g->getAttrOfType<StringAttr>(train::kSlotAttr))
      extra["slot"] = slot.getValue().str();
    if (auto at = g->getAttrOfType<IntegerAttr>(train::kShardOffsetAttr))
      extra["shard_offset"] = at.getInt();
    if (g->hasAttr(train::kZeroBetweenStepsAttr))
      extra["zero_between_steps"] = true;
    if (auto shard =
            g->getAttrOfType<dist::ShardingAttr>(train::kTensorShardAttr)) {
      auto self = func->getAttrOfType<IntegerAttr>(dist::kDeviceAttrName);
      if (!self)
        return g.emitError() << "global @" << g.getSymName()
                             << " is a tensor-parallel shard, but the "
                                "function has no dist.device";
      extra["tensor_shard"] = tensorShardJson(shard, self.getInt(), type);
    }
    globalOffset[g] =
        appendWeight(g.getSymName(), type.getElementType(), type.getShape(),
                     std::move(*bytes), std::move(extra));
  }
  // Loads alias the global; an optimizer result whose only use stores it
  // back to the global its operand was loaded from is written in place.
  // global -> the steps that write it
  llvm::DenseMap<Operation *, llvm::SmallVector<int64_t, 1>> writeSteps;
  for (Operation *op : ops) {
    if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
      if (auto g = globalOf(op))
        storage[load.getResult()] = {Storage::Weight, 0, globalOffset[g]};
    if (!isa<onnx::AdamWOptimizerOp, onnx::SGDOptimizerOp>(op))
      continue;
    // Result i updates operand tied[i].
    llvm::SmallVector<unsigned> tied{0, 2, 3};
    for (auto [i, r] : llvm::enumerate(op->getResults())) {
      Value in = op->getOperand(tied[i]);
      auto load = in.getDefiningOp<ml_program::GlobalLoadOp>();
      if (!load || !r.hasOneUse())
        continue;
      auto store = dyn_cast<ml_program::GlobalStoreOp>(*r.getUsers().begin());
      if (!store || globalOf(store) != globalOf(load))
        continue;
      // Copied first: inserting r may rehash the map under a reference.
      Storage tiedStorage = storage.lookup(load.getResult());
      storage[r] = tiedStorage;
      inPlaceStores.insert(store);
      writeSteps[globalOf(load)].push_back(step.lookup(op));
    }
  }
  for (Operation *op : ops)
    if (isa<ml_program::GlobalStoreOp>(op) && !inPlaceStores.count(op))
      writeSteps[globalOf(op)].push_back(step.lookup(op));
  // A load's value is the global's one copy: no write may come between the
  // load and a read of its value (a load after a write reads the new value,
  // as a pipeline's next microbatch reads running statistics).
  for (Operation *op : ops)
    for (Value in : op->getOperands())
      if (auto load = root(in).getDefiningOp<ml_program::GlobalLoadOp>()) {
        int64_t loaded = step.lookup(load), read = step.lookup(op);
        bool stale =
            llvm::any_of(writeSteps.lookup(globalOf(load)),
                         [&](int64_t w) { return w > loaded && w < read; });
        if (stale && !isa<ml_program::GlobalStoreOp>(op))
          return op->emitError()
                 << "reads global @" << globalOf(load).getSymName()
                 << " after it was updated in place (code generation keeps "
                    "one copy of each global)";
      }
  return success();
}

LogicalResult Emitter::emitTrainingOp(Operation *op) {
  auto f = [&](Attribute a) {
    return floatLiteral(llvm::cast<FloatAttr>(a).getValueAsDouble(), false);
  };
  if (auto st = dyn_cast<ml_program::GlobalStoreOp>(op)) {
    if (inPlaceStores.count(op))
      return success();
    Value v = st.getValue();
    std::string dst = "((" + storageType(eltOf(v)) + " *)(weights + " +
                      std::to_string(globalOffset.lookup(globalOf(op))) + "))";
    emitCopy(ptr(v), dst, numelOf(v), eltOf(v));
    return success();
  }
  if (auto a = dyn_cast<onnx::AdamWOptimizerOp>(op)) {
    line(llvm::formatv(
        "hp_launch(ctx, hp_adamw, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
        "{9}, {10}, {11}, {12}, {13}, {14});",
        numelOf(a.getParam()), ptr(a.getParam()), ptr(a.getGrad()),
        ptr(a.getExpAvg()), ptr(a.getExpAvgSq()), ptr(op->getResult(0)),
        ptr(op->getResult(1)), ptr(op->getResult(2)), ptr(a.getLr()),
        ptr(a.getStep()), ptr(a.getGradScale()), f(a.getBeta1Attr()),
        f(a.getBeta2Attr()), f(a.getEpsilonAttr()), f(a.getWeightDecayAttr())));
    ++program.libraryCalls;
    return success();
  }
  if (auto sgd = dyn_cast<onnx::SGDOptimizerOp>(op)) {
    bool buf = bool(sgd.getMomentumBuffer());
    line(llvm::formatv(
        "hp_launch(ctx, hp_sgd, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
        "{9}, {10}, {11});",
        numelOf(sgd.getParam()), ptr(sgd.getParam()), ptr(sgd.getGrad()),
        buf ? ptr(sgd.getMomentumBuffer()) : "(const float *)0",
        ptr(op->getResult(0)), buf ? ptr(op->getResult(1)) : "(float *)0",
        ptr(sgd.getLr()), ptr(sgd.getStep()), ptr(sgd.getGradScale()),
        f(sgd.getMomentumAttr()), sgd.getNesterov(),
        f(sgd.getWeightDecayAttr())));
    ++program.libraryCalls;
    return success();
  }
  auto g = cast<onnx::GatherGradOp>(op);
  llvm::ArrayRef<int64_t> s = g.getShape();
  int64_t axis = g.getAxis() < 0 ? g.getAxis() + s.size() : g.getAxis();
  Value out = g.getResult(), idx = g.getIndices();
  std::string t = storageType(eltOf(out));
  line(llvm::formatv("hp_launch(ctx, hp_fill<{0}>, {1}, ({0})0, {2});", t,
                     numelOf(out), ptr(out)));
  line(llvm::formatv(
      "hp_launch(ctx, hp_gather_grad<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, {7}, "
      "{8}, {9});",
      t, storageType(eltOf(idx)),
      numel(s.take_front(axis)) * numel(s.drop_front(axis + 1)), s[axis],
      numelOf(idx), numel(s.drop_front(axis + 1)), ptr(g.getDY()), ptr(idx),
      ptr(out), indexCheck(op)));
  program.libraryCalls += 2;
  return success();
}

std::string Emitter::scratch(Operation *op) {
  return "(arena + " + std::to_string(scratchOffset.lookup(op)) + ")";
}

//===----------------------------------------------------------------------===//
// Emission helpers
//===----------------------------------------------------------------------===//

std::string Emitter::indexCheck(Operation *op) {
  if (!opts.checkIndices)
    return "(hp_index_error *)0, 0";
  checkedNodes.push_back(onnx::describeNode(op));
  return "ctx->index_error, " + std::to_string(checkedNodes.size());
}

void Emitter::comment(Operation *op) {
  std::string name = onnx::getNodeName(op->getLoc());
  for (char &c : name)
    if (!llvm::isPrint(c))
      c = '?';
  body << indent << "// " << op->getName().stripDialect();
  if (!name.empty())
    body << " " << name;
  body << "\n";
}

void Emitter::emitStridedCopy(Value in, llvm::ArrayRef<int64_t> d,
                              llvm::ArrayRef<int64_t> inStrides,
                              llvm::ArrayRef<int64_t> inMods, int64_t inOffset,
                              const std::string &outPtr,
                              llvm::ArrayRef<int64_t> outStrides,
                              int64_t outOffset, Type elt) {
  if (numel(d) == 0)
    return;
  line(llvm::formatv("hp_copy_launch<{0}>(ctx, {1}, {2}, {3}, {4}, "
                     "{5}, {6}, {7}, {8}, {9}, {10});",
                     storageType(elt), numel(d), d.size(), hpDims(d),
                     hpDims(inStrides), hpDims(inMods), inOffset, ptr(in),
                     hpDims(outStrides), outOffset, outPtr));
  ++program.libraryCalls;
}

void Emitter::emitCopy(const std::string &src, const std::string &dst,
                       int64_t n, Type elt) {
  emitCopy(src, dst, n, storageType(elt));
}

void Emitter::emitCopy(const std::string &src, const std::string &dst,
                       int64_t n, llvm::StringRef cType) {
  if (n == 0)
    return;
  line(llvm::formatv("hp_copy_launch<{0}>(ctx, {1}, 1, {2}, {3}, "
                     "{4}, 0, {5}, {6}, 0, {7});",
                     cType, n, hpDims({n}), hpDims({1}), hpDims({n}), src,
                     hpDims({1}), dst));
  ++program.libraryCalls;
}

//===----------------------------------------------------------------------===//
// Elementwise groups
//===----------------------------------------------------------------------===//

FailureOr<std::string> Emitter::elementwiseExpr(Operation *op,
                                                llvm::ArrayRef<std::string> a) {
  Type resElt = eltOf(op->getResult(0));
  Type inElt = op->getNumOperands() ? eltOf(op->getOperand(0)) : resElt;
  std::string ct = computeType(inElt);
  auto c = [&](double v) {
    return "((" + ct + ")" + floatLiteral(v, ct == "double") + ")";
  };
  std::string x = a.empty() ? "" : a[0];
  auto f = [&](llvm::StringRef fn) { return (fn + "(" + x + ")").str(); };
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](onnx::SqrtOp) { return f("hp_sqrt"); })
      .Case([&](onnx::ReciprocalOp) { return c(1) + " / " + x; })
      .Case([&](onnx::NegOp) { return "(" + ct + ")(-" + x + ")"; })
      .Case([&](onnx::AbsOp) { return f("hp_abs"); })
      .Case([&](onnx::ExpOp) { return f("hp_exp"); })
      .Case([&](onnx::LogOp) { return f("hp_log"); })
      .Case([&](onnx::ErfOp) { return f("hp_erf"); })
      .Case([&](onnx::TanhOp) { return f("hp_tanh"); })
      .Case([&](onnx::SigmoidOp) {
        return c(1) + " / (" + c(1) + " + hp_exp(-" + x + "))";
      })
      .Case([&](onnx::ReluOp) { // NaN stays NaN, as in PyTorch and ORT
        return "(" + x + " < (" + ct + ")0 ? (" + ct + ")0 : " + x + ")";
      })
      .Case([&](onnx::SinOp) { return f("hp_sin"); })
      .Case([&](onnx::CosOp) { return f("hp_cos"); })
      .Case([&](onnx::TanOp) { return f("hp_tan"); })
      .Case([&](onnx::AsinOp) { return f("hp_asin"); })
      .Case([&](onnx::AcosOp) { return f("hp_acos"); })
      .Case([&](onnx::AtanOp) { return f("hp_atan"); })
      .Case([&](onnx::SinhOp) { return f("hp_sinh"); })
      .Case([&](onnx::CoshOp) { return f("hp_cosh"); })
      .Case([&](onnx::AsinhOp) { return f("hp_asinh"); })
      .Case([&](onnx::AcoshOp) { return f("hp_acosh"); })
      .Case([&](onnx::AtanhOp) { return f("hp_atanh"); })
      .Case([&](onnx::FloorOp) { return f("hp_floor"); })
      .Case([&](onnx::CeilOp) { return f("hp_ceil"); })
      .Case([&](onnx::RoundOp) { return f("hp_rint"); })
      .Case([&](onnx::SignOp) { return f("hp_sign"); })
      .Case([&](onnx::SoftplusOp) {
        return "(" + x + " > " + c(0) + " ? " + x + " + hp_log1p(hp_exp(-" + x +
               ")) : hp_log1p(hp_exp(" + x + ")))";
      })
      .Case([&](onnx::SoftsignOp) {
        return x + " / (" + c(1) + " + hp_abs(" + x + "))";
      })
      .Case([&](onnx::HardSwishOp) {
        return x + " * hp_max(" + c(0) + ", hp_min(" + c(1) + ", " + x + " / " +
               c(6) + " + " + c(0.5) + "))";
      })
      .Case([&](onnx::MishOp) {
        std::string sp = "(" + x + " > " + c(0) + " ? " + x +
                         " + hp_log1p(hp_exp(-" + x + ")) : hp_log1p(hp_exp(" +
                         x + ")))";
        return x + " * hp_tanh(" + sp + ")";
      })
      .Case([&](onnx::NotOp) { return "!" + x; })
      .Case([&](onnx::LeakyReluOp o) {
        return "(" + x + " < " + c(0) + " ? " + c(floatAttr(o, "alpha", 0.01)) +
               " * " + x + " : " + x + ")";
      })
      .Case([&](onnx::EluOp o) {
        return "(" + x + " < " + c(0) + " ? " + c(floatAttr(o, "alpha", 1)) +
               " * (hp_exp(" + x + ") - " + c(1) + ") : " + x + ")";
      })
      .Case([&](onnx::CeluOp o) {
        std::string al = c(floatAttr(o, "alpha", 1));
        return "(hp_max(" + c(0) + ", " + x + ") + hp_min(" + c(0) + ", " + al +
               " * (hp_exp(" + x + " / " + al + ") - " + c(1) + ")))";
      })
      .Case([&](onnx::SeluOp o) {
        std::string al = c(floatAttr(o, "alpha", 1.67326319217681884765625));
        std::string ga = c(floatAttr(o, "gamma", 1.05070102214813232421875));
        return ga + " * (" + x + " > " + c(0) + " ? " + x + " : " + al +
               " * hp_exp(" + x + ") - " + al + ")";
      })
      .Case([&](onnx::HardSigmoidOp o) {
        return "hp_max(" + c(0) + ", hp_min(" + c(1) + ", " +
               c(floatAttr(o, "alpha", 0.2)) + " * " + x + " + " +
               c(floatAttr(o, "beta", 0.5)) + "))";
      })
      .Case([&](onnx::ThresholdedReluOp o) {
        return "(" + x + " > " + c(floatAttr(o, "alpha", 1)) + " ? " + x +
               " : " + c(0) + ")";
      })
      .Case([&](onnx::GeluOp o) -> std::string {
        if (strAttr(o, "approximate", "none") == "tanh")
          return c(0.5) + " * " + x + " * (" + c(1) + " + hp_tanh(" +
                 c(0.7978845608028654) + " * (" + x + " + " + c(0.044715) +
                 " * " + x + " * " + x + " * " + x + ")))";
        return c(0.5) + " * " + x + " * (" + c(1) + " + hp_erf(" + x + " * " +
               c(0.7071067811865476) + "))";
      })
      .Case([&](onnx::IsNaNOp) { return f("hp_isnan"); })
      .Case([&](onnx::IsInfOp o) {
        std::string pos = intAttr(o, "detect_positive", 1)
                              ? "(" + x + " == " + c(INFINITY) + ")"
                              : "false";
        std::string neg = intAttr(o, "detect_negative", 1)
                              ? "(" + x + " == " + c(-INFINITY) + ")"
                              : "false";
        return "(" + pos + " || " + neg + ")";
      })
      .Case([&](onnx::ClipOp o) {
        // A missing bound of a float type is the type's lowest or largest
        // value (ONNX: numeric_limits::lowest() and max()), so that -inf
        // and +inf are clamped too, as in ONNX Runtime.
        std::string lo, hi;
        if (llvm::isa<FloatType>(resElt)) {
          double big = onnx::clipDefaultBound(resElt);
          lo = floatLiteral(-big, resElt.isF64());
          hi = floatLiteral(big, resElt.isF64());
        }
        if (o.getMin())
          lo = a[1];
        if (o.getMax())
          hi = a[o.getMin() ? 2 : 1];
        std::string e = x;
        if (!lo.empty())
          e = "hp_max<" + ct + ">(" + e + ", " + lo + ")";
        if (!hi.empty())
          e = "hp_min<" + ct + ">(" + e + ", " + hi + ")";
        return e;
      })
      .Case<onnx::CastOp, onnx::CastLikeOp>([&](Operation *) -> std::string {
        std::string to = computeType(resElt);
        if (to == "bool")
          return "(" + x + " != (" + ct + ")0)";
        if (resElt.isF16())
          return "(float)hp_half((float)" + x + ")";
        if (resElt.isBF16())
          return "(float)hp_bf16((float)" + x + ")";
        return "(" + to + ")" + x;
      })
      .Case(
          [&](onnx::AddOp) { return "(" + ct + ")(" + x + " + " + a[1] + ")"; })
      .Case(
          [&](onnx::SubOp) { return "(" + ct + ")(" + x + " - " + a[1] + ")"; })
      .Case(
          [&](onnx::MulOp) { return "(" + ct + ")(" + x + " * " + a[1] + ")"; })
      .Case(
          [&](onnx::DivOp) { return "(" + ct + ")(" + x + " / " + a[1] + ")"; })
      .Case([&](onnx::EqualOp) { return "(" + x + " == " + a[1] + ")"; })
      .Case([&](onnx::LessOp) { return "(" + x + " < " + a[1] + ")"; })
      .Case([&](onnx::LessOrEqualOp) { return "(" + x + " <= " + a[1] + ")"; })
      .Case([&](onnx::GreaterOp) { return "(" + x + " > " + a[1] + ")"; })
      .Case(
          [&](onnx::GreaterOrEqualOp) { return "(" + x + " >= " + a[1] + ")"; })
      .Case([&](onnx::AndOp) { return "(" + x + " && " + a[1] + ")"; })
      .Case([&](onnx::OrOp) { return "(" + x + " || " + a[1] + ")"; })
      .Case([&](onnx::XorOp) { return "(" + x + " != " + a[1] + ")"; })
      .Case([&](onnx::PowOp o) -> std::string {
        Type yElt = eltOf(o->getOperand(1));
        // x^2 and x^3 as products (GELU's tanh form cubes its input):
        // powf costs about 20 ns an element.
        if (std::optional<int> n = smallIntegerExponent(o->getOperand(1)))
          return std::string(*n == 2 ? "hp_square(" : "hp_cube(") + x + ")";
        if (ct == "float" || ct == "double")
          return "hp_pow(" + x + ", (" + ct + ")" + a[1] + ")";
        if (llvm::isa<IntegerType>(yElt))
          return "hp_ipow<" + ct + ">(" + x + ", (int64_t)" + a[1] + ")";
        return "(" + ct + ")hp_pow((double)" + x + ", (double)" + a[1] + ")";
      })
      .Case([&](onnx::ModOp o) -> std::string {
        bool isFloat = ct == "float" || ct == "double";
        if (intAttr(o, "fmod", 0))
          return isFloat ? "hp_fmod(" + x + ", " + a[1] + ")"
                         : "(" + ct + ")(" + a[1] + " == 0 ? 0 : " + x + " % " +
                               a[1] + ")";
        return (isFloat ? "hp_pymod<" : "hp_imod<") + ct + ">(" + x + ", " +
               a[1] + ")";
      })
      .Case([&](onnx::PReluOp) {
        return "(" + x + " < (" + ct + ")0 ? (" + ct + ")(" + a[1] + " * " + x +
               ") : " + x + ")";
      })
      .Case([&](onnx::WhereOp) {
        return "(" + x + " ? " + a[1] + " : " + a[2] + ")";
      })
      .Case<onnx::MaxOp, onnx::MinOp>([&](Operation *o) {
        std::string fn = isa<onnx::MaxOp>(o) ? "hp_max<" : "hp_min<";
        std::string e = a[0];
        for (size_t i = 1; i < a.size(); ++i)
          e = fn + ct + ">(" + e + ", " + a[i] + ")";
        return e;
      })
      .Case<onnx::SumOp, onnx::MeanOp>([&](Operation *o) {
        std::string e = "(" + ct + ")(" + llvm::join(a, " + ") + ")";
        if (isa<onnx::MeanOp>(o))
          e = "(" + ct + ")(" + e + " / (" + ct + ")" +
              std::to_string(a.size()) + ")";
        return e;
      })
      .Case([&](onnx::BatchNormalizationOp o) {
        // Operands: X, scale, B, mean, var.
        return "(" + x + " - " + a[3] + ") / hp_sqrt(" + a[4] + " + " +
               c(floatAttr(o, "epsilon", 1e-5)) + ") * " + a[1] + " + " + a[2];
      })
      .Default([&](Operation *o) -> FailureOr<std::string> {
        return o->emitError("no elementwise expression for this op");
      });
}

LogicalResult Emitter::emitElementwiseGroup(Operation *rootOp) {
  // The group: rootOp and every op fused (transitively) into it, in program
  // order.
  llvm::SmallVector<Operation *> group;
  llvm::SmallVector<Operation *> work{rootOp};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    group.push_back(op);
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (fusedInto.lookup(def) == op)
          work.push_back(def);
  }
  llvm::sort(group, [&](Operation *a, Operation *b) {
    return step.lookup(a) < step.lookup(b);
  });
  Value out = rootOp->getResult(0);
  llvm::ArrayRef<int64_t> outShape = shapeOf(out);
  int64_t n = numel(outShape);
  int rank = static_cast<int>(outShape.size());
  std::string name = "k" + std::to_string(kernelCount++);
  for (Operation *op : llvm::ArrayRef(group).take_front(3))
    name += "_" + op->getName().stripDialect().str();
  if (group.size() > 3)
    name += "_etc";

  // Leaves: (value, strides over the output's dims) -> kernel parameter.
  struct Leaf {
    Value value;
    llvm::SmallVector<int64_t> strides;
    bool contiguous;
  };
  llvm::SmallVector<Leaf> leaves;
  llvm::SmallVector<std::string> params, args;
  bool needCoords = false;
  llvm::DenseMap<Value, std::string> exprOf;
  std::string code;
  llvm::raw_string_ostream cs(code);
  auto leafExpr = [&](Value v, Operation *user,
                      unsigned operandNo) -> std::string {
    if (auto lit = literalOf(v))
      return *lit;
    llvm::SmallVector<int64_t> strides(rank, 0);
    llvm::ArrayRef<int64_t> s = shapeOf(v);
    auto bn = dyn_cast<onnx::BatchNormalizationOp>(user);
    if (bn && operandNo > 0) {
      if (rank > 1 && s.size() == 1 && s[0] == outShape[1])
        strides[1] = 1;
    } else {
      llvm::SmallVector<int64_t> vs = stridesOf(s);
      int off = rank - static_cast<int>(s.size());
      for (int d = 0; d < static_cast<int>(s.size()); ++d)
        if (s[d] != 1 || outShape[off + d] == 1)
          strides[off + d] = vs[d];
    }
    bool contiguous = s == outShape;
    for (auto [i, leaf] : llvm::enumerate(leaves))
      if (leaf.value == v && leaf.strides == strides)
        return "v" + std::to_string(i);
    size_t idx = leaves.size();
    leaves.push_back({v, strides, contiguous});
    std::string st = storageType(eltOf(v));
    params.push_back("const " + st + " *__restrict__ in" + std::to_string(idx));
    args.push_back(ptr(v));
    std::string off;
    if (contiguous) {
      off = "i";
    } else {
      for (int d = 0; d < rank; ++d)
        if (strides[d])
          off += (off.empty() ? "" : " + ") + std::string("c") +
                 std::to_string(d) + " * " + std::to_string(strides[d]);
      if (off.empty())
        off = "0";
      else
        needCoords = true;
    }
    cs << "    const " << computeType(eltOf(v)) << " v" << idx << " = ("
       << computeType(eltOf(v)) << ")in" << idx << "[" << off << "];\n";
    return "v" + std::to_string(idx);
  };

  int tmp = 0;
  for (Operation *op : group) {
    llvm::SmallVector<std::string> a;
    for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
      auto it = exprOf.find(operand);
      a.push_back(it != exprOf.end() ? it->second : leafExpr(operand, op, k));
    }
    FailureOr<std::string> e = elementwiseExpr(op, a);
    if (failed(e))
      return failure();
    std::string t = "t" + std::to_string(tmp++);
    cs << "    const " << computeType(eltOf(op->getResult(0))) << " " << t
       << " = " << *e << ";\n";
    exprOf[op->getResult(0)] = t;
  }
  std::string outType = storageType(eltOf(out));
  params.push_back(outType + " *__restrict__ out");
  args.push_back(ptr(out));
  std::string result = exprOf[out];

  // Kernel text.
  kernels << "// " << name << ":";
  for (Operation *op : group) {
    std::string node = onnx::getNodeName(op->getLoc());
    kernels << " " << op->getName().stripDialect();
    if (!node.empty())
      kernels << " '" << node << "'";
  }
  kernels << "\nHP_KERNEL(" << name << ", " << llvm::join(params, ", ")
          << ") {\n  " << (needCoords ? "HP_FOR(i)" : "HP_FOR_SIMD(i)")
          << " {\n";
  if (needCoords) {
    // Coordinates of the output element, innermost first, as far out as a
    // broadcast operand needs them.
    int outermost = rank;
    for (const Leaf &leaf : leaves)
      for (int d = 0; d < rank; ++d)
        if (!leaf.contiguous && leaf.strides[d]) {
          outermost = std::min(outermost, d);
          break;
        }
    kernels << "    int64_t r = i;\n";
    for (int d = rank - 1; d >= outermost; --d) {
      kernels << "    const int64_t c" << d << " = r % " << outShape[d]
              << ";\n";
      if (d > outermost)
        kernels << "    r /= " << outShape[d] << ";\n";
    }
  }
  kernels << code << "    out[i] = (" << outType << ")" << result
          << ";\n  }\n}\n\n";
  body << "  // " << name << "\n";
  line("hp_launch(ctx, " + name + ", " + std::to_string(n) + ", " +
       llvm::join(args, ", ") + ");");
  ++program.kernels;
  program.fusedOps += static_cast<int>(group.size()) - 1;
  return success();
}

//===----------------------------------------------------------------------===//
// GEMM-based ops
//===----------------------------------------------------------------------===//

LogicalResult Emitter::emitMatMul(Operation *op) {
  Value A = op->getOperand(0), B = op->getOperand(1), Y = op->getResult(0);
  llvm::SmallVector<int64_t> a(shapeOf(A)), b(shapeOf(B));
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  llvm::ArrayRef<int64_t> batchA = llvm::ArrayRef(a).drop_back(2);
  llvm::ArrayRef<int64_t> batchB = llvm::ArrayRef(b).drop_back(2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return op->emitError("MatMul batch dimensions do not broadcast");
  int64_t nb = numel(*batch);
  Type elt = eltOf(Y);
  std::string st = storageType(elt), acc = accType(elt);
  std::string fn = "hp_gemm<" + st + ", " + acc + ">";
  auto uniform = [&](llvm::ArrayRef<int64_t> bd, int64_t matrix) -> int64_t {
    if (numel(bd) == 1)
      return 0;
    llvm::SmallVector<int64_t> padded(batch->size() - bd.size(), 1);
    padded.append(bd.begin(), bd.end());
    return llvm::ArrayRef<int64_t>(padded) == llvm::ArrayRef(*batch) ? matrix
                                                                     : -1;
  };
  int64_t sA = uniform(batchA, M * K), sB = uniform(batchB, K * N);
  if (sA >= 0 && sB >= 0) {
    call(
        llvm::formatv("{0}(ctx, 0, 0, {1}, {2}, {3}, 1.0f, {4}, {3}, {5}, {6}, "
                      "{2}, {7}, 0.0f, {8}, {2}, {9}, {10})",
                      fn, M, N, K, ptr(A), sA, ptr(B), sB, ptr(Y), M * N, nb));
    ++program.libraryCalls;
    return success();
  }
  // General broadcasting: one GEMM per output batch with offset tables.
  auto offsets = [&](llvm::ArrayRef<int64_t> bd, int64_t matrix) {
    llvm::SmallVector<int64_t> offs;
    int off0 = static_cast<int>(batch->size() - bd.size());
    llvm::SmallVector<int64_t> st = stridesOf(bd);
    for (int64_t i = 0; i < nb; ++i) {
      int64_t rem = i, off = 0;
      for (int d = static_cast<int>(batch->size()) - 1; d >= 0; --d) {
        int64_t c = rem % (*batch)[d];
        rem /= (*batch)[d];
        int dd = d - off0;
        if (dd >= 0 && bd[dd] != 1)
          off += c * st[dd];
      }
      offs.push_back(off * matrix);
    }
    return offs;
  };
  auto join = [](llvm::ArrayRef<int64_t> v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  };
  line("{");
  line("  static const int64_t offA[] = {" + join(offsets(batchA, M * K)) +
       "};");
  line("  static const int64_t offB[] = {" + join(offsets(batchB, K * N)) +
       "};");
  line(llvm::formatv("  for (int64_t b = 0; b < {0}; ++b)", nb));
  line(llvm::formatv(
      "    if ({0}(ctx, 0, 0, {1}, {2}, {3}, 1.0f, {4} + offA[b], "
      "{3}, 0, {5} + offB[b], {2}, 0, 0.0f, {6} + b * {7}, {2}, "
      "0, 1))",
      fn, M, N, K, ptr(A), ptr(B), ptr(Y), M * N));
  line("      return 1;");
  line("}");
  ++program.libraryCalls;
  return success();
}

LogicalResult Emitter::emitGemm(onnx::GemmOp op) {
  Value A = op->getOperand(0), B = op->getOperand(1), Y = op->getResult(0);
  int ta = intAttr(op, "transA", 0) != 0, tb = intAttr(op, "transB", 0) != 0;
  llvm::ArrayRef<int64_t> a = shapeOf(A), b = shapeOf(B), y = shapeOf(Y);
  int64_t M = y[0], N = y[1], K = ta ? a[0] : a[1];
  double alpha = floatAttr(op, "alpha", 1.0), beta = floatAttr(op, "beta", 1.0);
  Value C = op.getC();
  Type elt = eltOf(Y);
  if (C && beta != 0.0) {
    // Y = broadcast(C), then Y = alpha*A*B + beta*Y.
    llvm::ArrayRef<int64_t> c = shapeOf(C);
    llvm::SmallVector<int64_t> cs = stridesOf(c), in(2, 0);
    int off = 2 - static_cast<int>(c.size());
    for (int d = 0; d < static_cast<int>(c.size()); ++d)
      if (c[d] != 1)
        in[off + d] = cs[d];
    emitStridedCopy(C, y, in, y, 0, ptr(Y), stridesOf(y), 0, elt);
  } else {
    beta = 0.0;
  }
  call(
      llvm::formatv("hp_gemm<{0}, {1}>(ctx, {2}, {3}, {4}, {5}, {6}, {7}, {8}, "
                    "{9}, 0, {10}, {11}, 0, {12}, {13}, {5}, 0, 1)",
                    storageType(elt), accType(elt), ta, tb, M, N, K,
                    floatLiteral(alpha, false), ptr(A), a[1], ptr(B), b[1],
                    floatLiteral(beta, false), ptr(Y)));
  ++program.libraryCalls;
  return success();
}

/// The sliding window of a Conv or pooling op over its spatial dims: kernel
/// extents, strides and dilations (default 1), begin and end padding (from
/// `pads` or auto_pad and the static output size), input and output extents.
namespace {
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
} // namespace

/// The window of an op whose input has shape `in` and result shape `out`
/// (both with the N and C axes): the gradients' forward shapes.
static Window windowOf(Operation *op, llvm::ArrayRef<int64_t> kernel,
                       llvm::ArrayRef<int64_t> in,
                       llvm::ArrayRef<int64_t> out) {
  Window w;
  w.in = in.drop_front(2);
  w.out = out.drop_front(2);
  size_t n = w.in.size();
  w.kernel.assign(kernel.begin(), kernel.end());
  w.stride = intsAttr(op, "strides");
  w.dilation = intsAttr(op, "dilations");
  if (w.stride.empty())
    w.stride.assign(n, 1);
  if (w.dilation.empty())
    w.dilation.assign(n, 1);
  w.padBegin.assign(n, 0);
  w.padEnd.assign(n, 0);
  std::string autoPad = strAttr(op, "auto_pad", "NOTSET");
  llvm::SmallVector<int64_t> pads = intsAttr(op, "pads");
  for (size_t d = 0; d < n; ++d) {
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t total = std::max<int64_t>(
          0, (w.out[d] - 1) * w.stride[d] + (w.kernel[d] - 1) * w.dilation[d] +
                 1 - w.in[d]);
      w.padBegin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padEnd[d] = total - w.padBegin[d];
    } else if (autoPad == "NOTSET" && pads.size() == 2 * n) {
      w.padBegin[d] = pads[d];
      w.padEnd[d] = pads[n + d];
    }
  }
  return w;
}

static Window windowOf(Operation *op, llvm::ArrayRef<int64_t> kernel) {
  return windowOf(op, kernel, shapeOf(op->getOperand(0)),
                  shapeOf(op->getResult(0)));
}

/// The hp_conv_epilogue of a Conv (its bias) or FusedConv (its bias,
/// residual Z and activation), as a C++ expression.
std::string Emitter::convEpilogue(Operation *op) {
  std::string st = storageType(eltOf(op->getResult(0)));
  Value bias, z;
  std::string act = "HP_ACT_NONE";
  double lo = 0, hi = 0;
  if (auto conv = dyn_cast<onnx::ConvOp>(op))
    bias = conv.getB();
  if (auto fused = dyn_cast<onnx::FusedConvOp>(op)) {
    bias = fused.getB();
    z = fused.getZ();
    if (fused.getActivation() == "Relu")
      act = "HP_ACT_RELU";
    if (fused.getActivation() == "Clip") {
      act = "HP_ACT_CLIP";
      lo = (*fused.getActivationParams())[0];
      hi = (*fused.getActivationParams())[1];
    }
  }
  return "hp_conv_epilogue<" + st + ">{" + (bias ? ptr(bias) : "nullptr") +
         ", " + (z ? ptr(z) : "nullptr") + ", " + act + ", " +
         floatLiteral(lo, false) + ", " + floatLiteral(hi, false) + "}";
}

/// Conv and FusedConv: 2-D through hp_conv2d_launch; other ranks per image
/// and group as im2col plus one GEMM, then one pass of the epilogue (bias,
/// residual, activation) over the result.
LogicalResult Emitter::emitConv(Operation *op) {
  Value X = op->getOperand(0), W = op->getOperand(1), Y = op->getResult(0);
  llvm::ArrayRef<int64_t> x = shapeOf(X), w = shapeOf(W), y = shapeOf(Y);
  size_t nsp = x.size() - 2;
  int64_t N = x[0], C = x[1], M = y[1];
  int64_t G = intAttr(op, "group", 1);
  int64_t Cg = C / G, Mg = M / G;
  Window win = windowOf(op, w.drop_front(2));
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  int64_t kc = numel(k), inPlane = numel(inSp), outPlane = numel(outSp);
  Type elt = eltOf(Y);
  std::string st = storageType(elt);
  bool pointwise = win.pointwise();
  if (numel(y) == 0)
    return success();
  std::string epilogue = convEpilogue(op);
  if (nsp == 2) // hp_conv2d_shape: N, G, Cg, Mg, H, W, OH, OW, kH, kW,
                // sH, sW, pH, pW, dH, dW.
    return emitConv2d(op,
                      {N, G, Cg, Mg, inSp[0], inSp[1], outSp[0], outSp[1], k[0],
                       k[1], win.stride[0], win.stride[1], win.padBegin[0],
                       win.padBegin[1], win.dilation[0], win.dilation[1]},
                      epilogue);
  std::string cols = pointwise ? "" : "((" + st + " *)" + scratch(op) + ")";
  line(llvm::formatv("for (int64_t n = 0; n < {0}; ++n)", N));
  line(llvm::formatv("  for (int64_t g = 0; g < {0}; ++g) {{", G));
  std::string xg =
      llvm::formatv("{0} + (n * {1} + g * {2}) * {3}", ptr(X), C, Cg, inPlane);
  if (!pointwise)
    line(llvm::formatv(
        "    hp_im2col_launch<{0}>(ctx, {1}, {2}, {3}, {4}, {5}, "
        "{6}, {7}, {8}, {9}, {10}, {11}, {12}, {13});",
        st, nsp, hpDims(inSp), hpDims(outSp), hpDims(k), hpDims(win.stride),
        hpDims(win.padBegin), hpDims(win.dilation), Cg, kc, inPlane, outPlane,
        xg, cols));
  line(llvm::formatv(
      "    if (hp_gemm<{0}, {1}>(ctx, 0, 0, {2}, {3}, {4}, 1.0f, "
      "{5} + g * {6}, {4}, 0, {7}, {3}, 0, 0.0f, {8} + (n * {9} + "
      "g * {2}) * {3}, {3}, 0, 1))",
      st, accType(elt), Mg, outPlane, Cg * kc, ptr(W), Mg * Cg * kc,
      pointwise ? xg : cols, ptr(Y), M));
  line("      return 1;");
  line("  }");
  line(llvm::formatv("{{ const auto epi = {0};", epilogue));
  line("  if (hp_conv_epilogue_any(epi))");
  line(llvm::formatv("    hp_launch(ctx, hp_conv_epilogue_rows<{0}, {1}>, {2}, "
                     "epi, (int64_t){3}, (int64_t){4}, {5});",
                     st, accType(elt), numel(y), M, outPlane, ptr(Y)));
  line("}");
  program.libraryCalls += 2;
  return success();
}

/// A 2-D Conv or FusedConv: one hp_conv2d_launch, which picks the direct
/// kernel, the register-blocked kernel, the tiles or im2col plus a GEMM per
/// image and group for the backend it is built for (hetpar_device.h), and
/// finishes each output through `epilogue` (an hp_conv_epilogue).
LogicalResult Emitter::emitConv2d(Operation *op, llvm::ArrayRef<int64_t> shape,
                                  const std::string &epilogue) {
  Value X = op->getOperand(0), W = op->getOperand(1), Y = op->getResult(0);
  Type elt = eltOf(Y);
  std::string st = storageType(elt);
  line(llvm::formatv("if (hp_conv2d_launch<{0}, {1}>(ctx, hp_conv2d_shape{2}, "
                     "{3}, {4}, {5}, {6}, (({0} *){7})))",
                     st, accType(elt), braced(shape), epilogue, ptr(X), ptr(W),
                     ptr(Y), scratch(op)));
  line("  return 1;");
  ++program.libraryCalls;
  return success();
}

/// ConvGrad: dB by a sum over N and the spatial axes; dW per image and group
/// as dY x im2col(X)^T, accumulated over the batch by the GEMM (beta 1 after
/// the first image); dX per image and group as col2im(W^T x dY), col2im
/// gathering for each input element the columns that touch it. The im2col
/// scratch (as Conv's) holds the columns of one image and group. A result
/// without uses is not computed.
LogicalResult Emitter::emitConvGrad(onnx::ConvGradOp op) {
  Value dY = op.getDY(), X = op.getX(), W = op.getW();
  Value dX = op.getDX(), dW = op.getDW(), dB = op.getDB();
  llvm::ArrayRef<int64_t> x = shapeOf(X), w = shapeOf(W), y = shapeOf(dY);
  size_t nsp = x.size() - 2;
  int64_t N = x[0], C = x[1], M = w[0];
  int64_t G = intAttr(op, "group", 1);
  int64_t Cg = C / G, Mg = M / G;
  Window win = windowOf(op, w.drop_front(2), x, y);
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  int64_t kc = numel(k), inPlane = numel(inSp), outPlane = numel(outSp);
  int64_t rows = Cg * kc; // rows of the columns matrix of one group
  Type elt = eltOf(dY);
  std::string st = storageType(elt), acc = accType(elt);
  bool pointwise = win.pointwise();
  std::string cols = "((" + st + " *)" + scratch(op) + ")";
  bool empty = numel(y) == 0; // no window: every gradient is 0
  auto zero = [&](Value v) {
    line(llvm::formatv("hp_launch(ctx, hp_fill<{0}>, {1}, ({0})0, {2});", st,
                       numelOf(v), ptr(v)));
    ++program.libraryCalls;
  };
  std::string dyg = llvm::formatv("{0} + (n * {1} + g * {2}) * {3}", ptr(dY), M,
                                  Mg, outPlane);
  if (!dB.use_empty()) {
    llvm::SmallVector<int64_t> axes{0};
    for (size_t d = 2; d < y.size(); ++d)
      axes.push_back(d);
    if (empty)
      zero(dB);
    else if (failed(emitReduce(op, dY, dB, axes, "SUM")))
      return failure();
  }
  if (!dW.use_empty()) {
    if (empty) {
      zero(dW);
    } else {
      std::string xg = llvm::formatv("{0} + (n * {1} + g * {2}) * {3}", ptr(X),
                                     C, Cg, inPlane);
      line(llvm::formatv("for (int64_t n = 0; n < {0}; ++n)", N));
      line(llvm::formatv("  for (int64_t g = 0; g < {0}; ++g) {{", G));
      if (!pointwise)
        line(llvm::formatv(
            "    hp_im2col_launch<{0}>(ctx, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
            "{8}, {9}, {10}, {11}, {12}, {13});",
            st, nsp, hpDims(inSp), hpDims(outSp), hpDims(k), hpDims(win.stride),
            hpDims(win.padBegin), hpDims(win.dilation), Cg, kc, inPlane,
            outPlane, xg, cols));
      line(llvm::formatv(
          "    if (hp_gemm<{0}, {1}>(ctx, 0, 1, {2}, {3}, {4}, 1.0f, {5}, {4}, "
          "0, {6}, {4}, 0, n ? 1.0f : 0.0f, {7} + g * {8}, {3}, 0, 1))",
          st, acc, Mg, rows, outPlane, dyg, pointwise ? xg : cols, ptr(dW),
          Mg * rows));
      line("      return 1;");
      line("  }");
      program.libraryCalls += 2;
    }
  }
  if (!dX.use_empty()) {
    if (empty) {
      zero(dX);
    } else {
      std::string dxg = llvm::formatv("{0} + (n * {1} + g * {2}) * {3}",
                                      ptr(dX), C, Cg, inPlane);
      line(llvm::formatv("for (int64_t n = 0; n < {0}; ++n)", N));
      line(llvm::formatv("  for (int64_t g = 0; g < {0}; ++g) {{", G));
      line(llvm::formatv(
          "    if (hp_gemm<{0}, {1}>(ctx, 1, 0, {2}, {3}, {4}, 1.0f, {5} + g * "
          "{6}, {2}, 0, {7}, {3}, 0, 0.0f, {8}, {3}, 0, 1))",
          st, acc, rows, outPlane, Mg, ptr(W), Mg * rows, dyg,
          pointwise ? dxg : cols));
      line("      return 1;");
      if (!pointwise)
        line(llvm::formatv(
            "    hp_launch(ctx, hp_col2im<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
            "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14});",
            st, acc, Cg * inPlane, nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
            hpDims(win.stride), hpDims(win.padBegin), hpDims(win.dilation), kc,
            inPlane, outPlane, cols, dxg));
      line("  }");
      program.libraryCalls += 2;
    }
  }
  return success();
}

/// MaxPoolGrad and AveragePoolGrad: one thread per element of dX gathers dY
/// over the windows that hold it (MaxPoolGrad: whose first maximum it is).
LogicalResult Emitter::emitPoolGrad(Operation *op) {
  bool isMax = isa<onnx::MaxPoolGradOp>(op);
  Value dY = op->getOperand(0), dX = op->getResult(0);
  llvm::ArrayRef<int64_t> x = shapeOf(dX);
  size_t nsp = x.size() - 2;
  Window win = windowOf(op, intsAttr(op, "kernel_shape"), x, shapeOf(dY));
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  Type elt = eltOf(dX);
  std::string st = storageType(elt), acc = accType(elt);
  if (isMax)
    line(llvm::formatv(
        "hp_launch(ctx, hp_maxpool_grad<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
        "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15});",
        st, acc, numel(x), nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
        hpDims(win.stride), hpDims(win.padBegin), hpDims(win.dilation),
        numel(k), numel(inSp), numel(outSp), ptr(op->getOperand(1)), ptr(dY),
        ptr(dX)));
  else
    line(llvm::formatv(
        "hp_launch(ctx, hp_avgpool_grad<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
        "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16});",
        st, acc, numel(x), nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
        hpDims(win.stride), hpDims(win.padBegin), hpDims(win.padEnd),
        hpDims(win.dilation), intAttr(op, "count_include_pad", 0), numel(k),
        numel(inSp), numel(outSp), ptr(dY), ptr(dX)));
  ++program.libraryCalls;
  return success();
}

/// Einsum as one generated kernel: a thread per output element sums, over
/// every combination of the contracted axes, the product of the operands'
/// elements. Axes are letters, "..." expands to right-aligned broadcast axes;
/// a letter repeated in one term (a diagonal) adds its strides. The implicit
/// output is "..." then the letters used once, in alphabetical order.
/// Resize: the axes' geometry from the op (ResizeOp::getAxes, one answer for
/// shape inference, the support check and this) as an hp_resize_axes
/// literal. With scales or roi from data, the output extents come from the
/// static result type and the kernel reads the values (sizes need none: a
/// scale is then output over input extent). An axis is resized unless it
/// keeps its extent under a constant scale of 1 and a transform that then
/// maps every coordinate to itself (all but tf_crop_and_resize).
LogicalResult Emitter::emitResize(onnx::ResizeOp op, Value out) {
  Value x = op.getX();
  llvm::ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = static_cast<int64_t>(in.size());
  llvm::SmallVector<int64_t> axes, listPos(rank, 0);
  if (auto given = op.getAxes())
    for (int64_t a : *given)
      axes.push_back(a < 0 ? a + rank : a);
  else
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  for (auto [k, a] : llvm::enumerate(axes))
    listPos[a] = static_cast<int64_t>(k);
  llvm::SmallVector<int64_t> extents;
  llvm::SmallVector<double> scales;
  std::string reason;
  std::string scalesPtr = "(const float *)0", roiPtr = "(const float *)0";
  bool constant = succeeded(op.getAxes(extents, scales, reason));
  if (!constant) {
    extents.assign(shapeOf(out).begin(), shapeOf(out).end());
    scales.assign(rank, 1.0);
    bool fromScales =
        op.getScales() &&
        llvm::cast<ShapedType>(op.getScales().getType()).getNumElements();
    for (int64_t a : axes)
      scales[a] = static_cast<double>(extents[a]) / in[a];
    if (fromScales)
      scalesPtr = "(const float *)" + ptr(op.getScales());
  }
  StringRef transform = op.getCoordinateTransformationMode();
  bool crop = transform == "tf_crop_and_resize";
  llvm::SmallVector<double> roiStart(rank, 0.0), roiEnd(rank, 1.0);
  if (crop) {
    auto roi = readFloatElements(getConstantElements(op.getRoi()));
    if (!roi) {
      roiPtr = "(const float *)" + ptr(op.getRoi());
    } else if (roi->size() != 2 * axes.size()) {
      return op.emitError("Resize: roi needs 2 entries per resized axis");
    } else {
      for (auto [i, a] : llvm::enumerate(axes)) {
        roiStart[a] = (*roi)[i];
        roiEnd[a] = (*roi)[i + axes.size()];
      }
    }
  }
  llvm::SmallVector<int64_t> active(rank, 0);
  for (int64_t a : axes)
    active[a] = !constant || crop || extents[a] != in[a] || scales[a] != 1.0;
  auto list = [](llvm::ArrayRef<double> v) {
    std::string s;
    for (double e : v)
      s += (s.empty() ? "" : ", ") + floatLiteral(e, true);
    return "{" + (s.empty() ? std::string("0") : s) + "}";
  };
  std::string axesLiteral = "hp_resize_axes{" + braced(in) + ", " +
                            braced(extents) + ", " + braced(stridesOf(in)) +
                            ", " + braced(active) + ", " + list(scales) + ", " +
                            list(roiStart) + ", " + list(roiEnd) + "}";
  int mode = llvm::StringSwitch<int>(op.getMode())
                 .Case("linear", 1)
                 .Case("cubic", 2)
                 .Default(0);
  int nearest = llvm::StringSwitch<int>(op.getNearestMode())
                    .Case("round_prefer_ceil", 1)
                    .Case("floor", 2)
                    .Case("ceil", 3)
                    .Default(0);
  int coord = llvm::StringSwitch<int>(transform)
                  .Case("half_pixel_symmetric", 1)
                  .Case("pytorch_half_pixel", 2)
                  .Case("align_corners", 3)
                  .Case("asymmetric", 4)
                  .Case("tf_crop_and_resize", 5)
                  .Case("tf_half_pixel_for_nn", 6)
                  .Default(0);
  line(llvm::formatv(
      "hp_launch(ctx, hp_resize<{0}>, {1}, {2}, {3}, {4}, "
      "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, "
      "{15});",
      storageType(eltOf(x)), numelOf(out), rank, axesLiteral, mode, coord,
      nearest, floatLiteral(op.getCubicCoeffA(), true), op.getExcludeOutside(),
      floatLiteral(op.getExtrapolationValue(), true), scalesPtr, roiPtr,
      hpDims(listPos), axes.size(), ptr(x), ptr(out)));
  ++program.libraryCalls;
  return success();
}

LogicalResult Emitter::emitEinsum(onnx::EinsumOp op) {
  std::string eq;
  for (char c : op.getEquation())
    if (c != ' ')
      eq += c;
  auto [lhs, rhs] = llvm::StringRef(eq).split("->");
  bool explicitOutput = llvm::StringRef(eq).contains("->");
  llvm::SmallVector<llvm::StringRef> terms;
  lhs.split(terms, ',');
  auto inputs = op->getOperands();
  if (terms.size() != inputs.size())
    return op->emitError("einsum terms do not match the inputs");
  // Axis ids: letters 'a'..'z', 'A'..'Z' -> 0..51; ellipsis axis k -> 52 + k.
  auto letterId = [](char c) {
    return llvm::isLower(c) ? c - 'a' : c - 'A' + 26;
  };
  size_t ellipsisRank = 0;
  for (auto [term, v] : llvm::zip(terms, inputs)) {
    size_t named = 0;
    for (char c : term)
      named += llvm::isAlpha(c);
    if (term.contains("..."))
      ellipsisRank = std::max(ellipsisRank, shapeOf(v).size() - named);
  }
  auto expand = [&](llvm::StringRef term, size_t rank) {
    llvm::SmallVector<int> axes;
    size_t named = 0;
    for (char c : term)
      named += llvm::isAlpha(c);
    for (size_t i = 0; i < term.size();) {
      if (term.substr(i).starts_with("...")) {
        size_t e = rank - named;
        for (size_t k = ellipsisRank - e; k < ellipsisRank; ++k)
          axes.push_back(52 + static_cast<int>(k));
        i += 3;
        continue;
      }
      axes.push_back(letterId(term[i++]));
    }
    return axes;
  };
  std::map<int, int64_t> extent;
  std::map<int, int> uses;
  llvm::SmallVector<llvm::SmallVector<int>> operandAxes;
  for (auto [term, v] : llvm::zip(terms, inputs)) {
    llvm::SmallVector<int> axes = expand(term, shapeOf(v).size());
    llvm::ArrayRef<int64_t> sh = shapeOf(v);
    for (auto [k, a] : llvm::enumerate(axes)) {
      int64_t &e = extent[a];
      e = std::max(e, sh[k]);
      if (sh[k] == 0)
        e = 0;
      ++uses[a];
    }
    operandAxes.push_back(axes);
  }
  llvm::SmallVector<int> outAxes;
  if (explicitOutput) {
    outAxes = expand(rhs, ellipsisRank + llvm::count_if(rhs, llvm::isAlpha));
  } else {
    for (size_t k = 0; k < ellipsisRank; ++k)
      outAxes.push_back(52 + static_cast<int>(k));
    for (int a = 0; a < 52; ++a)
      if (uses.count(a) && uses[a] == 1)
        outAxes.push_back(a);
  }
  llvm::SmallVector<int> contracted;
  for (auto &[a, e] : extent)
    if (!llvm::is_contained(outAxes, a))
      contracted.push_back(a);
  // Strides of each operand per axis (0 for broadcast extents of 1).
  auto strideOf = [&](size_t i, int axis) {
    llvm::ArrayRef<int64_t> sh = shapeOf(inputs[i]);
    llvm::SmallVector<int64_t> st = stridesOf(sh);
    int64_t s = 0;
    for (auto [k, a] : llvm::enumerate(operandAxes[i]))
      if (a == axis && !(sh[k] == 1 && extent[axis] != 1))
        s += st[k];
    return s;
  };
  Value out = op->getResult(0);
  Type elt = eltOf(out);
  std::string ct = computeType(elt), acc = accType(elt);
  int64_t outCount = numelOf(out), redCount = 1;
  for (int a : contracted)
    redCount *= extent[a];
  std::string name = "k" + std::to_string(kernelCount++) + "_Einsum";
  llvm::SmallVector<std::string> params, args;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    params.push_back("const " + storageType(eltOf(v)) + " *__restrict__ in" +
                     std::to_string(i));
    args.push_back(ptr(v));
  }
  params.push_back(storageType(elt) + " *__restrict__ out");
  args.push_back(ptr(out));
  // Axis variables: "ax_" and the letter (never the loop variables i, c).
  auto axisName = [](int a) {
    return a < 52 ? "ax_" + std::string(1, a < 26 ? 'a' + a : 'A' + a - 26)
                  : "ax_e" + std::to_string(a - 52);
  };
  kernels << "// " << name << ": Einsum '" << onnx::getNodeName(op.getLoc())
          << "' \"" << op.getEquation() << "\"\n";
  kernels << "HP_KERNEL(" << name << ", " << llvm::join(params, ", ")
          << ") {\n  HP_FOR_W(i, " << redCount << ") {\n    int64_t r = i;\n";
  for (int k = static_cast<int>(outAxes.size()) - 1; k >= 0; --k)
    kernels << "    const int64_t " << axisName(outAxes[k]) << " = r % "
            << extent[outAxes[k]] << ";\n    r /= " << extent[outAxes[k]]
            << ";\n";
  auto offset = [&](size_t i, llvm::ArrayRef<int> axes) {
    std::string off;
    for (int a : axes)
      if (int64_t st = strideOf(i, a))
        off += (off.empty() ? "" : " + ") + axisName(a) + " * " +
               std::to_string(st);
    return off.empty() ? std::string("0") : off;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    kernels << "    const int64_t base" << i << " = " << offset(i, outAxes)
            << ";\n";
  kernels << "    " << acc << " acc = 0;\n    for (int64_t c = 0; c < "
          << redCount << "; ++c) {\n      int64_t q = c;\n";
  for (int k = static_cast<int>(contracted.size()) - 1; k >= 0; --k)
    kernels << "      const int64_t " << axisName(contracted[k]) << " = q % "
            << extent[contracted[k]]
            << ";\n      q /= " << extent[contracted[k]] << ";\n";
  std::string product;
  for (size_t i = 0; i < inputs.size(); ++i)
    product += (i ? " * " : "") + std::string("(") + acc + ")(" + ct + ")in" +
               std::to_string(i) + "[base" + std::to_string(i) + " + " +
               offset(i, contracted) + "]";
  kernels << "      acc += " << product << ";\n    }\n    out[i] = ("
          << storageType(elt) << ")(" << ct << ")acc;\n  }\n}\n\n";
  line("hp_launch(ctx, " + name + ", " + std::to_string(outCount) + ", " +
       llvm::join(args, ", ") + ");");
  ++program.kernels;
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives and point-to-point exchanges (dist local form)
//===----------------------------------------------------------------------===//

/// "{0, 1, 2}" for a C array initializer.
/// A C string literal of `text` (quotes, backslashes and control characters
/// escaped).
static std::string cString(llvm::StringRef text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char octal[8];
      std::snprintf(octal, sizeof octal, "\\%03o", static_cast<unsigned>(c));
      out += octal;
    } else
      out += c;
  }
  return out + "\"";
}

std::string Emitter::checkedNodeList() const {
  std::string list;
  for (const std::string &n : checkedNodes)
    list += cString(n) + ", ";
  return list;
}

/// A new span starts where an op's span key differs from the last op's: the
/// open exchange step ends first, so that its wait belongs to its span.
void Emitter::traceOp(Operation *op) {
  if (!trace->enabled() || isa<ml_program::GlobalLoadOp>(op))
    return; // a load aliases the global: no code
  TraceSpanKey key = trace->keyOf(op);
  if (spans.empty() || spans.back().first != key) {
    closeExchange();
    line(llvm::formatv("HP_TRACE(ctx, {0});", spans.size()));
    spans.push_back({key, ""});
  }
  if (key.category != TraceCategory::Collective &&
      key.category != TraceCategory::Transfer)
    return;
  llvm::StringRef kind = op->getName().stripDialect();
  std::string &detail = spans.back().second;
  if (!llvm::is_contained(llvm::split(detail, ' '), kind))
    detail += (detail.empty() ? "" : " ") + kind.str();
}

/// HP_TRACE_POINTS and HP_TRACE_SPANS (hetpar_trace_span's texts), or
/// nothing without spans.
std::string Emitter::traceSpanList() const {
  if (spans.empty())
    return "";
  std::string list;
  for (auto &[key, detail] : spans)
    list += cString((traceCategoryName(key.category) + "\t" +
                     llvm::Twine(key.microbatch) + "\t" + detail)
                        .str()) +
            ", ";
  return llvm::formatv("#define HP_TRACE_POINTS {0}\n#define HP_TRACE_SPANS "
                       "{1}\n",
                       spans.size(), list)
      .str();
}

static const char *reductionEnum(dist::ReductionKind r) {
  switch (r) {
  case dist::ReductionKind::Sum:
    return "HP_SUM";
  case dist::ReductionKind::Max:
    return "HP_MAX";
  case dist::ReductionKind::Min:
    return "HP_MIN";
  case dist::ReductionKind::Prod:
    return "HP_PROD";
  }
  llvm_unreachable("a reduction kind of the dist dialect");
}

/// Ends the open exchange step: every send and receive posted since it
/// began completes together (no order between the two sides can deadlock).
void Emitter::closeExchange() {
  if (!exchangeOpen)
    return;
  line("ctx->what = " + cString("exchange step:" + exchangeWhat) + ";");
  exchangeWhat.clear();
  call("hp_exchange_end(ctx, &step)");
  close();
  exchangeOpen = false;
}

/// The dist collectives call the hp_* collectives of hetpar_device.h over the
/// op's group. Gathers and scatters move contiguous blocks, so their
/// dimension must be the outermost non-unit one (others need packing, not
/// done yet).
LogicalResult Emitter::emitCollective(Operation *op) {
  program.multiDevice = true;
  if (isa<dist::SendOp, dist::RecvOp>(op)) {
    if (!exchangeOpen) {
      open();
      line("hp_exchange step{};");
      exchangeOpen = true;
    }
    if (auto send = dyn_cast<dist::SendOp>(op))
      exchangeWhat += llvm::formatv(" send to device {0} (tag {1})",
                                    send.getPeerAttr().getInt(),
                                    send.getTagAttr().getInt());
    else
      exchangeWhat +=
          llvm::formatv(" recv from device {0} (tag {1})",
                        cast<dist::RecvOp>(op).getPeerAttr().getInt(),
                        cast<dist::RecvOp>(op).getTagAttr().getInt());
    if (auto send = dyn_cast<dist::SendOp>(op))
      call(llvm::formatv("hp_exchange_send(ctx, &step, {0}, {1}, {2}, {3})",
                         ptr(send.getInput()), numelOf(send.getInput()),
                         send.getPeerAttr().getInt(),
                         send.getTagAttr().getInt()));
    else {
      auto recv = cast<dist::RecvOp>(op);
      call(llvm::formatv("hp_exchange_recv(ctx, &step, {0}, {1}, {2}, {3})",
                         ptr(recv.getResult()), numelOf(recv.getResult()),
                         recv.getPeerAttr().getInt(),
                         recv.getTagAttr().getInt()));
    }
    ++program.libraryCalls;
    return success();
  }
  auto group = op->getAttrOfType<DenseI64ArrayAttr>("devices").asArrayRef();
  Value in = op->getOperand(0), out = op->getResult(0);
  std::string T = storageType(eltOf(in));
  std::string g = "static const int64_t group[] = " + cArray(group) + ";";
  std::string n = std::to_string(group.size());
  // Elements per index of `dim`, after checking that blocks are contiguous.
  auto blockElems = [&](int64_t dim) -> FailureOr<int64_t> {
    llvm::ArrayRef<int64_t> sh = shapeOf(in);
    for (int64_t d = 0; d < dim; ++d)
      if (sh[d] != 1)
        return op->emitError()
               << "code generation of a gather or scatter along dimension "
               << dim << " behind a non-unit dimension needs packing, which "
               << "is not implemented yet";
    return numel(sh.drop_front(dim + 1));
  };
  auto counts = [&](llvm::ArrayRef<int64_t> sizes, int64_t block) {
    llvm::SmallVector<int64_t> c;
    for (int64_t sz : sizes)
      c.push_back(sz * block);
    return cArray(c);
  };
  open();
  line(g);
  // What the error messages of a timeout or a signature mismatch name.
  std::string node = onnx::getNodeName(op->getLoc());
  line("ctx->what = " +
       cString(op->getName().stripDialect().str() + " on devices " +
               cArray(group) +
               (node.empty() ? "" : " (for node '" + node + "')")) +
       ";");
  LogicalResult result = success();
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](dist::AllReduceOp o) {
        call(llvm::formatv("hp_all_reduce<{0}>(ctx, group, {1}, {2}, {3}, "
                           "{4}, {5})",
                           T, n, ptr(in), ptr(out), numelOf(in),
                           reductionEnum(o.getReduction())));
      })
      .Case<dist::AllGatherOp, dist::ReduceScatterOp>([&](Operation *o) {
        // Both move whole blocks of the split dimension: the group's sizes
        // in elements, and the reduction for reduce_scatter.
        auto dim = o->getAttrOfType<IntegerAttr>("dim").getInt();
        auto sizes = o->getAttrOfType<DenseI64ArrayAttr>("sizes");
        auto block = blockElems(dim);
        if (failed(block)) {
          result = failure();
          return;
        }
        line("static const int64_t counts[] = " +
             counts(sizes.asArrayRef(), *block) + ";");
        if (auto rs = dyn_cast<dist::ReduceScatterOp>(o))
          call(llvm::formatv("hp_reduce_scatter<{0}>(ctx, group, {1}, {2}, "
                             "{3}, counts, {4})",
                             T, n, ptr(in), ptr(out),
                             reductionEnum(rs.getReduction())));
        else
          call(llvm::formatv("hp_all_gather<{0}>(ctx, group, {1}, {2}, {3}, "
                             "counts)",
                             T, n, ptr(in), ptr(out)));
      })
      .Case([&](dist::BroadcastOp o) {
        emitCopy(ptr(in), ptr(out), numelOf(in), eltOf(in));
        call(llvm::formatv("hp_broadcast<{0}>(ctx, group, {1}, {2}, {3}, "
                           "{4})",
                           T, n, ptr(out), numelOf(out),
                           o.getRootAttr().getInt()));
      })
      .Case([&](dist::AllToAllOp o) {
        call(codegen::emitAllToAllCall(o, "group", n, libraryContext()));
      })
      .Default([&](Operation *o) {
        result = o->emitError("no code generation for this collective yet");
      });
  close();
  ++program.libraryCalls;
  return result;
}

LogicalResult Emitter::emitPool(Operation *op, bool isMax) {
  Value X = op->getOperand(0), Y = op->getResult(0);
  llvm::ArrayRef<int64_t> y = shapeOf(Y);
  size_t nsp = shapeOf(X).size() - 2;
  Window win = windowOf(op, intsAttr(op, "kernel_shape"));
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  Type elt = eltOf(Y);
  std::string indices = "(int64_t *)0";
  if (op->getNumResults() > 1 && op->getResult(1))
    indices = ptr(op->getResult(1));
  line(llvm::formatv("hp_pool_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, "
                     "{6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, "
                     "{16}, {17}, {18});",
                     storageType(elt), accType(elt), isMax ? "true" : "false",
                     numel(y), nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
                     hpDims(win.stride), hpDims(win.padBegin),
                     hpDims(win.padEnd), hpDims(win.dilation),
                     intAttr(op, "count_include_pad", 0), numel(k), numel(inSp),
                     numel(outSp), ptr(X), ptr(Y), indices));
  ++program.libraryCalls;
  return success();
}

/// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: hp_loss_rows per
/// target position, then hp_loss_reduce for "sum" and "mean".
/// The attributes the ONNX losses and their gradients share: ignore_index
/// (null when absent), and whether the reduction is "none" or "mean".
static std::tuple<IntegerAttr, bool, bool> lossAttrs(Operation *op) {
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  auto reduction = op->getAttrOfType<StringAttr>("reduction");
  bool none = reduction && reduction.getValue() == "none";
  bool mean = !reduction || reduction.getValue() == "mean";
  return {ignore, none, mean};
}

LogicalResult Emitter::emitLoss(Operation *op) {
  bool softmax = isa<onnx::SoftmaxCrossEntropyLossOp>(op);
  Value x = op->getOperand(0), labels = op->getOperand(1);
  Value weight = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  Value loss = op->getResult(0);
  Value logProb = op->getNumResults() > 1 ? op->getResult(1) : Value();
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t C = s[1], D = numel(s.drop_front(2));
  auto [ignore, none, mean] = lossAttrs(op);
  Type elt = eltOf(x);
  std::string T = storageType(elt), A = accType(elt);
  std::string rows = "((" + A + " *)" + scratch(op) + ")";
  std::string rowWeights =
      "((" + A + " *)(" + scratch(op) + " + " +
      std::to_string(numelOf(labels) * (elt.isF64() ? 8 : 4)) + "))";
  std::string nullT = "(" + T + " *)0", nullA = "(" + A + " *)0";
  line(llvm::formatv(
      "hp_launch(ctx, hp_loss_rows<{0}, {1}, {2}, {3}>, {4}, {5}, {6}, {7}, "
      "{8}LL, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16});",
      T, storageType(eltOf(labels)), A, softmax ? "true" : "false",
      numelOf(labels), C, D, ignore ? 1 : 0,
      ignore ? ignore.getValue().getSExtValue() : 0, ptr(x), ptr(labels),
      weight ? ptr(weight) : "(const " + T + " *)0",
      logProb && !logProb.use_empty() ? ptr(logProb) : nullT,
      none ? ptr(loss) : nullT, none ? nullA : rows, none ? nullA : rowWeights,
      indexCheck(op)));
  ++program.libraryCalls;
  if (!none) {
    line(llvm::formatv("hp_launch(ctx, hp_loss_reduce<{0}, {1}>, 1, {2}, "
                       "{3}, {4}, {5}, {6});",
                       T, A, numelOf(labels), mean ? 1 : 0, rows, rowWeights,
                       ptr(loss)));
    ++program.libraryCalls;
  }
  return success();
}

/// SoftmaxCrossEntropyLossGrad and NegativeLogLikelihoodLossGrad:
/// hp_loss_weight_sum for "mean", then hp_loss_grad per element.
LogicalResult Emitter::emitLossGrad(Operation *op) {
  bool softmax = isa<onnx::SoftmaxCrossEntropyLossGradOp>(op);
  Value dY = op->getOperand(0), x = op->getOperand(1),
        labels = op->getOperand(2);
  Value weight = op->getNumOperands() > 3 ? op->getOperand(3) : Value();
  Value dX = op->getResult(0);
  llvm::ArrayRef<int64_t> s = shapeOf(x);
  int64_t C = s[1], D = numel(s.drop_front(2));
  auto [ignore, none, mean] = lossAttrs(op);
  Type elt = eltOf(x);
  std::string T = storageType(elt), A = accType(elt),
              L = storageType(eltOf(labels));
  std::string norm = "((" + A + " *)" + scratch(op) + ")";
  std::string weightPtr = weight ? ptr(weight) : "(const " + T + " *)0";
  int64_t ignoreIndex = ignore ? ignore.getValue().getSExtValue() : 0;
  if (mean) {
    line(llvm::formatv("hp_launch(ctx, hp_loss_weight_sum<{0}, {1}, {2}>, 1, "
                       "{3}, {4}, {5}, {6}LL, {7}, {8}, {9});",
                       T, L, A, numelOf(labels), C, ignore ? 1 : 0, ignoreIndex,
                       ptr(labels), weightPtr, norm));
    ++program.libraryCalls;
  }
  line(llvm::formatv(
      "hp_launch(ctx, hp_loss_grad<{0}, {1}, {2}, {3}>, {4}, {5}, {6}, {7}, "
      "{8}LL, {9}, {10}, {11}, {12}, {13}, {14}, {15});",
      T, L, A, softmax ? "true" : "false", numelOf(dX), C, D, ignore ? 1 : 0,
      ignoreIndex, none ? 1 : 0, ptr(dY),
      softmax ? ptr(x) : "(const " + T + " *)0", ptr(labels), weightPtr,
      mean ? norm : "(const " + A + " *)0", ptr(dX)));
  ++program.libraryCalls;
  return success();
}

LibraryEmitContext Emitter::libraryContext() {
  return LibraryEmitContext{[&](Value v) { return ptr(v); },
                            [&](Type t) { return storageType(t); },
                            [](Type t) { return accType(t); },
                            [&](Operation *o) { return scratch(o); },
                            [&](const llvm::Twine &text) { line(text); },
                            [&](Operation *o) { return indexCheck(o); },
                            [&](const std::string &src, const std::string &dst,
                                int64_t n,
                                Type elt) { emitCopy(src, dst, n, elt); }};
}

LogicalResult Emitter::emitReduce(Operation *op, Value in, Value out,
                                  llvm::ArrayRef<int64_t> axes,
                                  llvm::StringRef kind) {
  llvm::ArrayRef<int64_t> s = shapeOf(in);
  llvm::SmallVector<int64_t> st = stridesOf(s);
  llvm::SmallVector<bool> reduced(s.size(), false);
  for (int64_t a : axes)
    reduced[a] = true;
  llvm::SmallVector<int64_t> kd, ks, rd, rs;
  for (size_t d = 0; d < s.size(); ++d) {
    if (reduced[d]) {
      rd.push_back(s[d]);
      rs.push_back(st[d]);
    } else {
      kd.push_back(s[d]);
      ks.push_back(st[d]);
    }
  }
  Type elt = eltOf(in);
  line(
      llvm::formatv("hp_launch(ctx, hp_reduce<{0}, {1}, HP_RED_{2}>, {3}, {4}, "
                    "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12});",
                    storageType(elt), accType(elt), kind, numelOf(out),
                    kd.size(), hpDims(kd), hpDims(ks), rd.size(), hpDims(rd),
                    hpDims(rs), numel(rd), ptr(in), ptr(out)));
  ++program.libraryCalls;
  return success();
}

//===----------------------------------------------------------------------===//
// One op
//===----------------------------------------------------------------------===//

static llvm::SmallVector<int64_t> constInts(Value v) {
  if (!v)
    return {};
  auto vals = getConstantIntValues(v);
  return vals ? *vals : llvm::SmallVector<int64_t>();
}

LogicalResult Emitter::emitOp(Operation *op) {
  if (!isa<dist::SendOp, dist::RecvOp>(op))
    closeExchange();
  if (op->getDialect() && op->getDialect()->getNamespace() ==
                              dist::DistDialect::getDialectNamespace()) {
    comment(op);
    return emitCollective(op);
  }
  if (isElementwise(op))
    return emitElementwiseGroup(op);
  if (isRowGradient(op)) {
    comment(op);
    program.libraryCalls += codegen::emitRowGradient(op, libraryContext());
    return success();
  }
  if (isIndexingOp(op)) {
    comment(op);
    program.libraryCalls += codegen::emitIndexingOp(op, libraryContext());
    return success();
  }
  if (isa<onnx::FusedAttentionOp>(op)) {
    comment(op);
    program.libraryCalls += codegen::emitFusedAttention(op, libraryContext());
    return success();
  }
  if (isa<ml_program::GlobalLoadOp>(op))
    return success(); // aliases the global's storage
  if (isa<ml_program::GlobalStoreOp, onnx::AdamWOptimizerOp,
          onnx::SGDOptimizerOp, onnx::GatherGradOp>(op)) {
    comment(op);
    return emitTrainingOp(op);
  }
  Value out = op->getNumResults() ? op->getResult(0) : Value();
  auto axisOf = [&](Value v, int64_t axis) {
    int64_t r = static_cast<int64_t>(shapeOf(v).size());
    return axis < 0 ? axis + r : axis;
  };
  comment(op);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<onnx::MatMulOp>([&](Operation *o) { return emitMatMul(o); })
      .Case([&](onnx::GemmOp o) { return emitGemm(o); })
      .Case<onnx::ConvOp, onnx::FusedConvOp>(
          [&](Operation *o) { return emitConv(o); })
      .Case([&](onnx::ConvGradOp o) { return emitConvGrad(o); })
      .Case<onnx::MaxPoolGradOp, onnx::AveragePoolGradOp>(
          [&](Operation *o) { return emitPoolGrad(o); })
      .Case([&](onnx::EinsumOp o) { return emitEinsum(o); })
      .Case<onnx::MaxPoolOp>([&](Operation *o) { return emitPool(o, true); })
      .Case<onnx::AveragePoolOp>(
          [&](Operation *o) { return emitPool(o, false); })
      .Case<onnx::GlobalAveragePoolOp, onnx::GlobalMaxPoolOp>(
          [&](Operation *o) {
            llvm::SmallVector<int64_t> axes;
            for (size_t d = 2; d < shapeOf(o->getOperand(0)).size(); ++d)
              axes.push_back(d);
            return emitReduce(o, o->getOperand(0), out, axes,
                              isa<onnx::GlobalMaxPoolOp>(o) ? "MAX" : "MEAN");
          })
      .Case<onnx::ReduceMeanOp, onnx::ReduceSumOp, onnx::ReduceMaxOp,
            onnx::ReduceMinOp, onnx::ReduceProdOp, onnx::ReduceL1Op,
            onnx::ReduceL2Op, onnx::ReduceSumSquareOp, onnx::ReduceLogSumExpOp>(
          [&](Operation *o) -> LogicalResult {
            Value in = o->getOperand(0);
            int64_t rank = static_cast<int64_t>(shapeOf(in).size());
            llvm::SmallVector<int64_t> axes =
                o->getNumOperands() > 1 ? constInts(o->getOperand(1))
                                        : llvm::SmallVector<int64_t>();
            if (axes.empty()) {
              if (intAttr(o, "noop_with_empty_axes", 0)) {
                emitCopy(ptr(in), ptr(out), numelOf(in), eltOf(in));
                return success();
              }
              for (int64_t d = 0; d < rank; ++d)
                axes.push_back(d);
            }
            for (int64_t &a : axes)
              a = a < 0 ? a + rank : a;
            llvm::StringRef kind =
                llvm::TypeSwitch<Operation *, llvm::StringRef>(o)
                    .Case<onnx::ReduceMeanOp>([](auto) { return "MEAN"; })
                    .Case<onnx::ReduceSumOp>([](auto) { return "SUM"; })
                    .Case<onnx::ReduceMaxOp>([](auto) { return "MAX"; })
                    .Case<onnx::ReduceMinOp>([](auto) { return "MIN"; })
                    .Case<onnx::ReduceProdOp>([](auto) { return "PROD"; })
                    .Case<onnx::ReduceL1Op>([](auto) { return "L1"; })
                    .Case<onnx::ReduceL2Op>([](auto) { return "L2"; })
                    .Case<onnx::ReduceSumSquareOp>([](auto) { return "SUMSQ"; })
                    .Default([](auto) { return "LOGSUMEXP"; });
            return emitReduce(o, in, out, axes, kind);
          })
      .Case<onnx::ArgMaxOp, onnx::ArgMinOp>([&](Operation *o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t axis = axisOf(in, intAttr(o, "axis", 0));
        int64_t inner = numel(s.drop_front(axis + 1));
        line(llvm::formatv(
            "hp_launch(ctx, hp_arg_reduce<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
            "{7});",
            storageType(eltOf(in)), isa<onnx::ArgMaxOp>(o) ? "true" : "false",
            numelOf(out), s[axis], inner, intAttr(o, "select_last_index", 0),
            ptr(in), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case<onnx::SoftmaxOp, onnx::LogSoftmaxOp>([&](Operation *o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t axis = axisOf(in, intAttr(o, "axis", -1));
        int64_t inner = numel(s.drop_front(axis + 1));
        if (numelOf(in) == 0)
          return success();
        line(llvm::formatv("hp_softmax_launch<{0}, {1}, {2}>(ctx, {3}, {4}, "
                           "{5}, {6}, {7});",
                           storageType(eltOf(in)), accType(eltOf(in)),
                           isa<onnx::LogSoftmaxOp>(o) ? "true" : "false",
                           numelOf(in) / s[axis], s[axis], inner, ptr(in),
                           ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case<onnx::SoftmaxCrossEntropyLossOp, onnx::NegativeLogLikelihoodLossOp>(
          [&](Operation *o) { return emitLoss(o); })
      .Case<onnx::SoftmaxCrossEntropyLossGradOp,
            onnx::NegativeLogLikelihoodLossGradOp>(
          [&](Operation *o) { return emitLossGrad(o); })
      .Case([&](onnx::LayerNormalizationOp o) {
        Value X = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        int64_t axis = axisOf(X, intAttr(o, "axis", -1));
        int64_t len = numel(s.drop_front(axis));
        Value scale = o->getOperand(1);
        Value bias = o.getB();
        std::string S = storageType(eltOf(scale));
        auto stat = [&](unsigned i) {
          return o->getNumResults() > i && !o->getResult(i).use_empty()
                     ? ptr(o->getResult(i))
                     : "(" + S + " *)0";
        };
        if (numelOf(X) == 0)
          return success();
        line(llvm::formatv(
            "hp_layer_norm_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, {6}, "
            "{7}, {8}, {9}, {10}, {11}, {12}, {13});",
            storageType(eltOf(X)), S, accType(eltOf(X)), numelOf(X) / len, len,
            floatLiteral(floatAttr(o, "epsilon", 1e-5), false), ptr(X),
            ptr(scale), numelOf(scale),
            bias ? ptr(bias) : "(const " + S + " *)0", bias ? numelOf(bias) : 1,
            ptr(out), stat(1), stat(2)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::BatchNormalizationOp o) {
        // Training mode (inference BatchNormalization is elementwise).
        Value X = o.getX();
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        std::string S = storageType(eltOf(o.getScale()));
        auto stat = [&](unsigned i) {
          return o.getRunningStats().size() > i ? ptr(o.getRunningStats()[i])
                                                : "(" + S + " *)0";
        };
        line(llvm::formatv(
            "hp_batch_norm_train_launch<{0}, {1}, {2}>(ctx, {3}, {4}, {5}, "
            "{6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15});",
            storageType(eltOf(X)), S, accType(eltOf(X)), s[0], s[1],
            numel(s.drop_front(2)), floatLiteral(o.getEpsilon(), false),
            floatLiteral(o.getMomentum(), false), ptr(X), ptr(o.getScale()),
            ptr(o.getB()), ptr(o.getInputMean()), ptr(o.getInputVar()),
            ptr(out), stat(0), stat(1)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::DropoutOp o) {
        // Training mode (the others are views): Philox masks.
        Value x = o.getData(), ratio = o.getRatio(), mask = o.getMask();
        Value training = o.getTrainingMode(), step = o.getStep();
        auto on = training ? getConstantIntValues(training) : std::nullopt;
        std::string R = ratio ? storageType(eltOf(ratio)) : "float";
        uint64_t seed =
            o.getSeedAttr() ? o.getSeedAttr().getValue().getZExtValue() : 0;
        // Elements [offset, offset + n) of a larger tensor (a replica's
        // rows): the groups of 4 that cover them.
        int64_t offset =
            o.getElementOffsetAttr() ? o.getElementOffsetAttr().getInt() : 0;
        int64_t groups = (offset + numelOf(x) + 3) / 4 - offset / 4;
        line(llvm::formatv(
            "hp_launch(ctx, hp_dropout<{0}, {1}, {2}>, {3}, {4}, {12}LL, "
            "{5}ULL, {6}, {7}, {8}, {9}, {10}, {11});",
            storageType(eltOf(x)), R, accType(eltOf(x)), groups, numelOf(x),
            seed, step ? ptr(step) : "(const int64_t *)0",
            ratio ? ptr(ratio) : "(const float *)0",
            on ? "(const bool *)0" : ptr(training), ptr(x), ptr(out),
            mask ? ptr(mask) : "(bool *)0", offset));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::InstanceNormalizationOp o) {
        Value X = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        int64_t len = numel(s.drop_front(2));
        line(llvm::formatv(
            "hp_launch(ctx, hp_instance_norm<{0}, {1}>, {2}, {3}, "
            "{4}, {5}, {6}, {7}, {8}, {9});",
            storageType(eltOf(X)), accType(eltOf(X)), s[0] * s[1], s[1], len,
            floatLiteral(floatAttr(o, "epsilon", 1e-5), false), ptr(X),
            ptr(o->getOperand(1)), ptr(o->getOperand(2)), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::CumSumOp o) {
        Value X = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(X);
        int64_t axis = axisOf(X, constInts(o->getOperand(1))[0]);
        int64_t inner = numel(s.drop_front(axis + 1));
        if (numelOf(X) == 0)
          return success();
        line(llvm::formatv("hp_launch(ctx, hp_cumsum<{0}, {1}>, {2}, {3}, {4}, "
                           "{5}, {6}, {7}, {8});",
                           storageType(eltOf(X)), accType(eltOf(X)),
                           numelOf(X) / s[axis], s[axis], inner,
                           intAttr(o, "exclusive", 0), intAttr(o, "reverse", 0),
                           ptr(X), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::ResizeOp o) { return emitResize(o, out); })
      .Case([&](onnx::TransposeOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        llvm::SmallVector<int64_t> perm = intsAttr(o, "perm");
        if (perm.empty())
          for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d)
            perm.push_back(d);
        llvm::SmallVector<int64_t> st = stridesOf(s), in_, mods;
        for (int64_t p : perm)
          in_.push_back(st[p]);
        llvm::ArrayRef<int64_t> y = shapeOf(out);
        emitStridedCopy(in, y, in_, y, 0, ptr(out), stridesOf(y), 0, eltOf(in));
        return success();
      })
      .Case([&](onnx::SliceOp o) -> LogicalResult {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t rank = static_cast<int64_t>(s.size());
        llvm::SmallVector<int64_t> starts = constInts(o.getStarts()),
                                   ends = constInts(o.getEnds()),
                                   axes = constInts(o.getAxes()),
                                   steps = constInts(o.getSteps());
        if (axes.empty())
          for (size_t i = 0; i < starts.size(); ++i)
            axes.push_back(static_cast<int64_t>(i));
        if (steps.empty())
          steps.assign(starts.size(), 1);
        llvm::SmallVector<int64_t> st = stridesOf(s), begin(rank, 0),
                                   step_(rank, 1);
        for (size_t i = 0; i < starts.size(); ++i) {
          int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
          int64_t n = s[a], b = starts[i], stp = steps[i];
          if (b < 0)
            b = b < -n ? 0 : b + n;
          b = stp > 0 ? std::min(b, n) : std::min(b, n - 1);
          begin[a] = b;
          step_[a] = stp;
        }
        int64_t inOff = 0;
        llvm::SmallVector<int64_t> in_;
        for (int64_t d = 0; d < rank; ++d) {
          inOff += begin[d] * st[d];
          in_.push_back(step_[d] * st[d]);
        }
        llvm::ArrayRef<int64_t> y = shapeOf(out);
        emitStridedCopy(in, y, in_, y, inOff, ptr(out), stridesOf(y), 0,
                        eltOf(in));
        return success();
      })
      .Case([&](onnx::ExpandOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in), y = shapeOf(out);
        llvm::SmallVector<int64_t> st = stridesOf(s), in_(y.size(), 0);
        int off = static_cast<int>(y.size() - s.size());
        for (int d = 0; d < static_cast<int>(s.size()); ++d)
          if (s[d] != 1)
            in_[off + d] = st[d];
        emitStridedCopy(in, y, in_, y, 0, ptr(out), stridesOf(y), 0, eltOf(in));
        return success();
      })
      .Case([&](onnx::TileOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in), y = shapeOf(out);
        emitStridedCopy(in, y, stridesOf(s), s, 0, ptr(out), stridesOf(y), 0,
                        eltOf(in));
        return success();
      })
      .Case([&](onnx::ConcatOp o) {
        llvm::ArrayRef<int64_t> y = shapeOf(out);
        int64_t axis = axisOf(out, intAttr(o, "axis", 0));
        llvm::SmallVector<int64_t> ys = stridesOf(y);
        int64_t at = 0;
        for (Value in : o->getOperands()) {
          llvm::ArrayRef<int64_t> s = shapeOf(in);
          emitStridedCopy(in, s, stridesOf(s), s, 0, ptr(out), ys,
                          at * ys[axis], eltOf(in));
          at += s[axis];
        }
        return success();
      })
      .Case([&](onnx::SplitOp o) {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        int64_t axis = axisOf(in, intAttr(o, "axis", 0));
        llvm::SmallVector<int64_t> st = stridesOf(s);
        int64_t at = 0;
        for (Value r : o->getResults()) {
          llvm::ArrayRef<int64_t> y = shapeOf(r);
          if (!r.use_empty())
            emitStridedCopy(in, y, st, y, at * st[axis], ptr(r), stridesOf(y),
                            0, eltOf(in));
          at += y[axis];
        }
        return success();
      })
      .Case([&](onnx::PadOp o) -> LogicalResult {
        Value in = o->getOperand(0);
        llvm::ArrayRef<int64_t> s = shapeOf(in), y = shapeOf(out);
        int64_t rank = static_cast<int64_t>(s.size());
        llvm::SmallVector<int64_t> pads = constInts(o.getPads());
        llvm::SmallVector<int64_t> axes = constInts(o.getAxes());
        if (axes.empty())
          for (int64_t d = 0; d < rank; ++d)
            axes.push_back(d);
        llvm::SmallVector<int64_t> begin(rank, 0);
        for (size_t i = 0; i < axes.size(); ++i)
          begin[axes[i] < 0 ? axes[i] + rank : axes[i]] = pads[i];
        std::string mode = strAttr(o, "mode", "constant");
        int m = mode == "reflect" ? 1
                : mode == "edge"  ? 2
                : mode == "wrap"  ? 3
                                  : 0;
        Value cv = o.getConstantValue();
        std::string st = storageType(eltOf(in));
        line(llvm::formatv(
            "hp_launch(ctx, hp_pad<{0}>, {1}, {2}, {3}, {4}, {5}, "
            "{6}, {7}, {8}, {9});",
            st, numel(y), rank, m, hpDims(y), hpDims(s), hpDims(begin), ptr(in),
            cv && numelOf(cv) ? ptr(cv) : "(const " + st + " *)0", ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Case([&](onnx::TriluOp o) {
        Value in = o->getOperand(0), k = o.getK();
        llvm::ArrayRef<int64_t> s = shapeOf(in);
        llvm::SmallVector<int64_t> kv = constInts(k);
        // A constant k is a literal; a k computed at run time is read by
        // the kernel from device memory.
        bool runtimeK = k && kv.empty();
        std::string kType = k ? storageType(eltOf(k)) : "int64_t";
        line(llvm::formatv("hp_launch(ctx, hp_trilu<{0}, {1}>, {2}, {3}, {4}, "
                           "{5}, {6}, {7}, {8}, {9});",
                           storageType(eltOf(in)), kType, numelOf(in),
                           s[s.size() - 2], s.back(), kv.empty() ? 0 : kv[0],
                           runtimeK ? ptr(k) : "(const " + kType + " *)0",
                           intAttr(o, "upper", 1), ptr(in), ptr(out)));
        ++program.libraryCalls;
        return success();
      })
      .Default([&](Operation *o) {
        return o->emitError("no code generation for this op");
      });
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// "b0, b1, " : the byte sizes of graph inputs or outputs in the model's
/// dtypes (what the caller's buffers hold).
static std::string boundaryBytes(TypeRange types) {
  std::string s;
  for (Type t : types) {
    auto tt = llvm::cast<RankedTensorType>(t);
    unsigned bits = tt.getElementType().getIntOrFloatBitWidth();
    s += std::to_string(numel(tt.getShape()) * (bits == 1 ? 1 : bits / 8)) +
         "ULL, ";
  }
  return s;
}

/// The device ids of the meshes of `func`'s module, in order: a device's
/// process rank is its place here (the partition makes one mesh in plan
/// order). Several mean `func` is one device's program of a multi-device
/// module: each is built with MPI and joins it, also one with no collective
/// of its own (the others' MPI_Init waits for it).
static llvm::SetVector<int64_t> meshDeviceIds(func::FuncOp func) {
  llvm::SetVector<int64_t> ids;
  if (auto module = func->getParentOfType<ModuleOp>())
    for (auto mesh : module.getOps<dist::MeshOp>())
      for (Attribute a : mesh.getDevices())
        ids.insert(llvm::cast<dist::DeviceAttr>(a).getId());
  return ids;
}

FailureOr<DeviceProgram> Emitter::run() {
  trace.emplace(func);
  program.multiDevice = meshDeviceIds(func).size() > 1;
  planValues();
  // Conv's and ConvGrad's im2col scratch (the columns of one image and
  // group), sized before the arena is planned.
  for (Operation *op : ops)
    if (int64_t elements = onnx::im2colElements(op))
      scratchBytes[op] = elements * storageBytes(eltOf(op->getResult(0)));
  // The losses' scratch: per-position loss and weight for "sum" and "mean",
  // the weight sum of a "mean" gradient.
  for (Operation *op : ops) {
    if (!isa<onnx::SoftmaxCrossEntropyLossOp, onnx::NegativeLogLikelihoodLossOp,
             onnx::SoftmaxCrossEntropyLossGradOp,
             onnx::NegativeLogLikelihoodLossGradOp>(op))
      continue;
    auto reduction = op->getAttrOfType<StringAttr>("reduction");
    llvm::StringRef red = reduction ? reduction.getValue() : "mean";
    bool grad = isa<onnx::SoftmaxCrossEntropyLossGradOp,
                    onnx::NegativeLogLikelihoodLossGradOp>(op);
    int64_t acc = eltOf(op->getResult(0)).isF64() ? 8 : 4;
    Value labels = op->getOperand(grad ? 2 : 1);
    if (!grad && red != "none")
      scratchBytes[op] = 2 * numelOf(labels) * acc;
    else if (grad && red == "mean")
      scratchBytes[op] = acc;
  }
  for (Operation *op : ops)
    if (int64_t bytes = rowGradientScratchBytes(op))
      scratchBytes[op] = bytes;
  for (Operation *op : ops)
    if (auto a2a = dyn_cast<dist::AllToAllOp>(op))
      if (int64_t elements = codegen::allToAllStaging(a2a).total())
        scratchBytes[op] = elements * storageBytes(eltOf(a2a.getInput()));
  if (failed(planMemory()))
    return failure();

  for (auto [i, unused] : inputConversions) {
    BlockArgument arg = func.getArgument(i);
    line(llvm::formatv(
        "hp_launch(ctx, hp_convert<{0}, float>, {1}, (const float "
        "*)inputs[{2}], {3});",
        storageType(eltOf(arg)), numelOf(arg), i, ptr(arg)));
  }
  for (Operation *op : ops) {
    if (fusedInto.count(op) || op->hasTrait<OpTrait::ConstantLike>())
      continue;
    if (isa<onnx::DropoutOp>(op) && isView(op)) {
      // Inference: the data passes through; a mask, when used, is all true.
      if (op->getNumResults() > 1 && !op->getResult(1).use_empty()) {
        comment(op);
        line(llvm::formatv("hp_launch(ctx, hp_fill<bool>, {0}, true, {1});",
                           numelOf(op->getResult(1)), ptr(op->getResult(1))));
      }
      continue;
    }
    if (isView(op))
      continue;
    traceOp(op);
    if (failed(emitOp(op)))
      return failure();
  }
  closeExchange();
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [v, j] : outputCopies) {
    Type elt = eltOf(v);
    std::string dst =
        "((" + (converted(elt) ? std::string("float") : storageType(elt)) +
        " *)outputs[" + std::to_string(j) + "])";
    body << "  // graph output " << j << "\n";
    // A graph input returned as it is (or through views) keeps its float32
    // values, not its 16-bit copy's.
    auto arg = llvm::dyn_cast<BlockArgument>(root(v));
    if (converted(elt) && arg && arg.getOwner() == &func.getBody().front()) {
      emitCopy("((const float *)inputs[" + std::to_string(arg.getArgNumber()) +
                   "])",
               dst, numelOf(v), "float");
      continue;
    }
    if (converted(elt)) {
      line(llvm::formatv(
          "hp_launch(ctx, hp_convert<float, {0}>, {1}, {2}, {3});",
          storageType(elt), numelOf(v), ptr(v), dst));
      continue;
    }
    emitCopy(ptr(v), dst, numelOf(v), elt);
  }
  if (!spans.empty())
    line(llvm::formatv("HP_TRACE(ctx, {0});", spans.size()));
  if (weightError)
    return failure();

  // Boundary descriptions.
  auto desc = [&](Value v, DictionaryAttr attrs, size_t i,
                  llvm::StringRef kind) {
    TensorDesc d;
    if (attrs)
      if (auto n = attrs.getAs<StringAttr>("onnx.name"))
        d.name = n.getValue().str();
    if (d.name.empty())
      d.name = (kind + std::to_string(i)).str();
    d.dtype = dtypeName(eltOf(v));
    d.shape.assign(shapeOf(v).begin(), shapeOf(v).end());
    if (attrs)
      if (auto b = attrs.getAs<IntegerAttr>(dist::kBatchDimAttrName);
          b && b.getInt() != dist::kNoBatchDim)
        d.batchDim = b.getInt();
    if (attrs)
      if (auto w = attrs.getAs<StringAttr>(train::kEvalBindAttr))
        d.boundWeight = w.getValue().str();
    return d;
  };
  for (auto [i, arg] : llvm::enumerate(func.getArguments()))
    program.inputs.push_back(desc(arg, func.getArgAttrDict(i), i, "input_"));
  for (auto [j, v] : llvm::enumerate(returnOp.getOperands()))
    program.outputs.push_back(desc(v, func.getResultAttrDict(j), j, "output_"));

  program.weightsBytes = static_cast<int64_t>(program.weights.size());
  llvm::json::Object index{{"file", "weights.bin"},
                           {"bytes", program.weightsBytes},
                           {"tensors", std::move(weightEntries)}};
  llvm::raw_string_ostream(program.weightsIndex)
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))) << "\n";

  // The process rank of each device id (meshDeviceIds).
  std::string meshDevices;
  if (program.multiDevice) {
    for (auto [k, id] : llvm::enumerate(meshDeviceIds(func)))
      meshDevices +=
          (k ? ", " : "#define HETPAR_MESH_DEVICES ") + std::to_string(id);
    meshDevices += "\n";
  }
  llvm::raw_string_ostream src(program.source);
  src << "// Generated by hetpar-compile: one device program (single source).\n"
      << "// Float mode: " << floatModeName(opts.floatMode) << ". Arena "
      << program.arenaBytes << " bytes (" << program.arenaBytesNoReuse
      << " without reuse), weights " << program.weightsBytes << " bytes.\n"
      << "// Build: see the header of include/hetpar/device/hetpar_device.h.\n"
      << (program.multiDevice
              ? "// One device of a multi-device program: MPI collectives.\n"
                "#define HETPAR_MULTI_DEVICE\n"
              : "")
      << meshDevices << "#include \"hetpar/device/hetpar_device.h\"\n\n"
      << "#define HP_ARENA_BYTES " << program.arenaBytes << "ULL\n"
      << "#define HP_WEIGHTS_BYTES " << program.weightsBytes << "ULL\n"
      << "#define HP_NUM_INPUTS " << func.getNumArguments() << "\n"
      << "#define HP_NUM_OUTPUTS " << returnOp.getNumOperands() << "\n"
      << "#define HP_INPUT_BYTES " << boundaryBytes(func.getArgumentTypes())
      << "\n"
      << "#define HP_OUTPUT_BYTES " << boundaryBytes(returnOp.getOperandTypes())
      << "\n"
      << "#define HP_CHECKED_NODES " << checkedNodeList() << "\n"
      << traceSpanList() << "#define HETPAR_DEFINE_ABI\n"
      << "#include \"hetpar/device/hetpar_device.h\"\n\n"
      << kernelText
      << "static int hp_program_run(hp_ctx *ctx, char *arena, char "
         "*weights,\n                          const void *const *inputs, void "
         "*const *outputs) {\n"
      << "  (void)arena;\n  (void)weights;\n  (void)inputs;\n  (void)outputs;\n"
      << bodyText << "  return 0;\n}\n";
  return std::move(program);
}

FailureOr<DeviceProgram>
hetpar::codegen::generateDeviceProgram(func::FuncOp func,
                                       const CodegenOptions &opts) {
  if (failed(checkCodegenSupport(func)))
    return failure();
  Emitter emitter(func, opts);
  return emitter.run();
}
