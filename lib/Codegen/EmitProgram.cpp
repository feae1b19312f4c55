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

#include "Emitter.h"

#include "hetpar/Codegen/MemoryPlan.h"

namespace hetpar::codegen::emitter {

bool isElementwise(Operation *op) {
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

int64_t intAttr(Operation *op, llvm::StringRef name, int64_t dflt) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getValue().getSExtValue();
  return dflt;
}
double floatAttr(Operation *op, llvm::StringRef name, double dflt) {
  if (auto a = op->getAttrOfType<FloatAttr>(name))
    return a.getValueAsDouble();
  return dflt;
}
llvm::SmallVector<int64_t> intsAttr(Operation *op, llvm::StringRef name) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
    return llvm::SmallVector<int64_t>(a.asArrayRef());
  return {};
}
std::string strAttr(Operation *op, llvm::StringRef name, llvm::StringRef dflt) {
  if (auto a = op->getAttrOfType<StringAttr>(name))
    return a.getValue().str();
  return dflt.str();
}

/// "{1, 2, 3}" ("{0}" when empty): a C array or aggregate initializer.
std::string braced(llvm::ArrayRef<int64_t> v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.empty() ? "0}" : "}");
}

std::string floatLiteral(double v, bool isDouble) {
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
std::optional<int> smallIntegerExponent(Value v) {
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
uint16_t toHalf(float f) {
  llvm::APFloat a(f);
  bool lost;
  a.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return static_cast<uint16_t>(a.bitcastToAPInt().getZExtValue());
}
uint16_t toBF16(float f) {
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
  if (opts.fuseEpilogues) {
    planGemmEpilogues();
    planLayerNormPrologues();
  }
}

int64_t Emitter::runStep(Operation *op) {
  while (fusedInto.count(op))
    op = fusedInto.lookup(op);
  // A LayerNorm prologue reads its group's operands at the LayerNorm; a GEMM
  // epilogue's only operand, the product, is never stored.
  if (Operation *by = absorbedBy.lookup(op))
    return std::max(step.lookup(op), step.lookup(by));
  return step.lookup(op);
}

void Emitter::absorbGroup(Operation *by, Operation *groupRoot) {
  absorbedGroup[by] = elementwiseGroupOf(groupRoot);
  absorbedBy[groupRoot] = by;
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
  return !fusedInto.count(op) && !absorbedBy.count(op) &&
         !op->hasTrait<OpTrait::ConstantLike>() && !isView(op);
}

/// The function's exchange steps (dist::exchangeSteps with this emitter's
/// views, fusions and buffers), computed once: planMemory keeps their
/// buffers in use over each step, emitCollective opens and closes them.
void Emitter::planExchangeSteps() {
  exchanges = dist::exchangeSteps(
      ops, [&](Operation *op) { return emittedInPlace(op); },
      [&](Value v) { return root(v); });
  for (auto [i, stepOps] : llvm::enumerate(exchanges))
    for (Operation *op : stepOps)
      exchangeOf[op] = i;
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
    return isa<func::ReturnOp>(user) ? endStep : runStep(user);
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
    if (fusedInto.count(op) || op->hasTrait<OpTrait::ConstantLike>())
      continue;
    if (isView(op)) {
      // A Dropout that drops nothing: its used mask is filled where it stands.
      auto dropout = dyn_cast<onnx::DropoutOp>(op);
      if (Value mask = dropout ? dropout.getMask() : Value();
          mask && !mask.use_empty() && !storage.count(mask)) {
        storage[mask] = {Storage::Arena, 0, 0};
        touch(mask, step.lookup(op), step.lookup(op));
      }
      continue;
    }
    // A GEMM with an epilogue writes its group's result, not its product
    // (never stored): that result lives from the GEMM on.
    auto absorbed = absorbedGroup.find(op);
    if (isa<onnx::GemmOp>(op) && absorbed != absorbedGroup.end()) {
      Value r = absorbed->second.back()->getResult(0);
      if (!storage.count(r))
        storage[r] = {Storage::Arena, 0, 0};
      if (storage[r].kind == Storage::Arena)
        touch(r, step.lookup(op), step.lookup(op));
      continue;
    }
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
  for (auto &stepOps : exchanges) {
    int64_t first = step.lookup(stepOps.front());
    int64_t last = step.lookup(stepOps.back());
    for (Operation *op : stepOps) {
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
// Collectives and point-to-point exchanges (dist local form)
//===----------------------------------------------------------------------===//

/// A C string literal of `text` (quotes, backslashes and control characters
/// escaped).
std::string cString(llvm::StringRef text) {
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

/// A new span starts where an op's span key differs from the last op's (an
/// exchange step lies in one span: its sends and receives share a key, and
/// closes at its last one).
void Emitter::traceOp(Operation *op) {
  if (!trace->enabled() || isa<ml_program::GlobalLoadOp>(op))
    return; // a load aliases the global: no code
  TraceSpanKey key = trace->keyOf(op);
  if (spans.empty() || spans.back().first != key) {
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

/// The scratch bytes of the ops that need some beside their results, sized
/// before the arena is planned.
void Emitter::planScratch() {
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
}

/// The host function's statements: input conversions, every op in order,
/// the output copies.
LogicalResult Emitter::emitBody() {
  for (auto [i, unused] : inputConversions) {
    BlockArgument arg = func.getArgument(i);
    line(llvm::formatv(
        "hp_launch(ctx, hp_convert<{0}, float>, {1}, (const float "
        "*)inputs[{2}], {3});",
        storageType(eltOf(arg)), numelOf(arg), i, ptr(arg)));
  }
  for (Operation *op : ops) {
    if (fusedInto.count(op) || absorbedBy.count(op) ||
        op->hasTrait<OpTrait::ConstantLike>())
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
  return success();
}

/// The manifest's inputs and outputs and weights.json.
void Emitter::describeBoundary() {
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  auto desc = [&](Value v, DictionaryAttr attrs, std::string name) {
    TensorDesc d;
    d.name = std::move(name);
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
    program.inputs.push_back(
        desc(arg, func.getArgAttrDict(i), onnx::graphInputName(func, i)));
  for (auto [j, v] : llvm::enumerate(returnOp.getOperands()))
    program.outputs.push_back(
        desc(v, func.getResultAttrDict(j), onnx::graphOutputName(func, j)));

  program.weightsBytes = static_cast<int64_t>(program.weights.size());
  llvm::json::Object index{{"file", "weights.bin"},
                           {"bytes", program.weightsBytes},
                           {"tensors", std::move(weightEntries)}};
  llvm::raw_string_ostream(program.weightsIndex)
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(index))) << "\n";
}

/// device_<id>.cu: the defines, the kernels and the host function.
void Emitter::writeSource() {
  auto returnOp = cast<func::ReturnOp>(func.getBody().front().getTerminator());
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
      << "// Float mode: " << floatModeName(opts.floatMode)
      << (opts.allowTF32 ? ", float32 GEMMs in TF32 on the GPU (--allow-tf32)"
                         : "")
      << ". Arena " << program.arenaBytes << " bytes ("
      << program.arenaBytesNoReuse << " without reuse), weights "
      << program.weightsBytes << " bytes.\n"
      << "// Build: see the header of include/hetpar/device/hetpar_device.h.\n"
      << (program.multiDevice
              ? "// One device of a multi-device program: MPI collectives.\n"
                "#define HETPAR_MULTI_DEVICE\n"
              : "")
      << meshDevices << (opts.allowTF32 ? "#define HP_ALLOW_TF32 1\n" : "")
      << (opts.checkIndices ? "" : "#define HP_UNCHECKED_INDICES 1\n")
      << "#include \"hetpar/device/hetpar_device.h\"\n\n"
      << (packedOnly ? "#if HP_CUDA\n#error \"generated for the CPU only "
                       "(--targets=cpu): weights.bin holds some constants only "
                       "in the CPU kernels' packed layouts\"\n#endif\n"
                     : "")
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
}

FailureOr<DeviceProgram> Emitter::run() {
  trace.emplace(func);
  program.multiDevice = meshDeviceIds(func).size() > 1;
  planValues();
  planScratch();
  planExchangeSteps();
  if (failed(planMemory()) || failed(emitBody()) || weightError)
    return failure();
  describeBoundary();
  writeSource();
  return std::move(program);
}

} // namespace hetpar::codegen::emitter

mlir::FailureOr<hetpar::codegen::DeviceProgram>
hetpar::codegen::generateDeviceProgram(mlir::func::FuncOp func,
                                       const CodegenOptions &opts) {
  if (mlir::failed(checkCodegenSupport(func)))
    return mlir::failure();
  emitter::Emitter emitter(func, opts);
  return emitter.run();
}
