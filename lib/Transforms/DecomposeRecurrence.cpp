//===- DecomposeRecurrence.cpp - hetpar-onnx-decompose-rnn ----------------===//
//
// Unrolls ONNX's recurrent ops (LSTM, GRU, RNN; kept as onnx.Generic by the
// importer) over their static sequence into the ops they are made of: one
// MatMul of the whole input sequence by W, then per time step a MatMul of the
// hidden state by R, the gates (Slice), their activations and the state
// update. Everything downstream (sharding rules, the batch analysis, code
// generation, gradients) then handles recurrent models through ops it
// already knows. The equations are ONNX's operator definitions (Operators.md,
// LSTM/GRU/RNN, opset 14).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "mlir/IR/BuiltinTypes.h"

namespace hetpar {
#define GEN_PASS_DEF_DECOMPOSERECURRENCEPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// One recurrent op's configuration, read from its ONNX attributes.
struct Recurrence {
  StringRef kind; ///< LSTM, GRU or RNN
  int64_t gates;  ///< 4 (i, o, f, c), 3 (z, r, h) or 1
  int64_t hidden; ///< hidden_size
  int64_t directions = 1;
  bool reverseOnly = false;
  bool batchFirst = false;        ///< layout 1: X [B, T, I], Y [B, T, D, H]
  bool linearBeforeReset = false; ///< GRU
  std::optional<double> clip;
  /// Per direction: f, g, h (LSTM), f, g (GRU) or f (RNN).
  SmallVector<StringRef> activations;
};

/// ONNX's default activations per direction.
SmallVector<StringRef> defaultActivations(StringRef kind) {
  if (kind == "LSTM")
    return {"Sigmoid", "Tanh", "Tanh"};
  if (kind == "GRU")
    return {"Sigmoid", "Tanh"};
  return {"Tanh"};
}

/// Reads and checks `op`'s attributes; an error names what is not supported.
FailureOr<Recurrence> readRecurrence(onnx::GenericOp op) {
  Recurrence r;
  r.kind = op.getOpType();
  r.gates = r.kind == "LSTM" ? 4 : r.kind == "GRU" ? 3 : 1;
  DictionaryAttr attrs = op.getAttrs();
  auto fail = [&](const Twine &what, StringRef hint = "") {
    return op.emitError() << r.kind << " " << what << " is not supported"
                          << hint;
  };
  auto hidden = attrs.getAs<IntegerAttr>("hidden_size");
  if (!hidden || hidden.getInt() < 1)
    return op.emitError() << r.kind << " needs a positive hidden_size";
  r.hidden = hidden.getInt();
  if (auto dir = attrs.getAs<StringAttr>("direction")) {
    if (dir.getValue() == "bidirectional")
      r.directions = 2;
    else if (dir.getValue() == "reverse")
      r.reverseOnly = true;
    else if (dir.getValue() != "forward")
      return fail("direction '" + dir.getValue() + "'");
  }
  if (auto layout = attrs.getAs<IntegerAttr>("layout"))
    r.batchFirst = layout.getInt() == 1;
  if (auto lbr = attrs.getAs<IntegerAttr>("linear_before_reset"))
    r.linearBeforeReset = lbr.getInt() != 0;
  if (auto clip = attrs.getAs<FloatAttr>("clip"))
    r.clip = clip.getValueAsDouble();
  if (auto f = attrs.getAs<IntegerAttr>("input_forget"); f && f.getInt())
    return fail("with input_forget");
  if (attrs.get("activation_alpha") || attrs.get("activation_beta"))
    return fail("with activation_alpha/activation_beta");
  SmallVector<StringRef> defaults = defaultActivations(r.kind);
  if (auto list = attrs.getAs<ArrayAttr>("activations")) {
    for (Attribute a : list) {
      auto name = llvm::dyn_cast<StringAttr>(a);
      if (!name ||
          !llvm::is_contained({"Sigmoid", "Tanh", "Relu"}, name.getValue()))
        return fail("with activation " +
                        (name ? name.getValue() : StringRef("?")),
                    " (Sigmoid, Tanh and Relu are)");
      r.activations.push_back(name.getValue());
    }
    if (r.activations.size() != defaults.size() * r.directions)
      return op.emitError()
             << r.kind << " has " << r.activations.size()
             << " activations, not " << defaults.size() * r.directions;
  } else {
    for (int64_t d = 0; d < r.directions; ++d)
      r.activations.append(defaults);
  }
  return r;
}

/// Builds the unrolled recurrence of one op.
class Unroller {
public:
  Unroller(OpBuilder &b, onnx::GenericOp op, const Recurrence &r)
      : g(b, op.getLoc(), {}), op(op), r(r) {}

  /// Replaces the op; failure after an error.
  LogicalResult run();

private:
  /// Checks the operands' shapes against ONNX's (X [T, B, I], W [D, G H,
  /// I], R [D, G H, H], B [D, 2 G H], sequence_lens [B], initial_h and
  /// initial_c [D, B, H], P [D, 3 H]; batch first: X [B, T, I], the states
  /// [B, D, H]): the unrolled ops' own shape checks would otherwise fail
  /// midway. An error names the operand and the shape it needs.
  LogicalResult checkShapes();
  Value operand(unsigned i) {
    if (i >= op->getNumOperands() ||
        llvm::isa<NoneType>(op->getOperand(i).getType()))
      return Value();
    return op->getOperand(i);
  }
  Value slice(Value x, int64_t axis, int64_t start, int64_t end) {
    return g.make<onnx::SliceOp>(x, g.i64s({start}), g.i64s({end}),
                                 g.i64s({axis}), Value());
  }
  /// x[d] of an array per direction, without its leading axis.
  Value direction(Value x, int64_t d) {
    return g.make<onnx::SqueezeOp>(slice(x, 0, d, d + 1), g.i64s({0}));
  }
  Value unsqueeze(Value x, int64_t axis) {
    return g.make<onnx::UnsqueezeOp>(x, g.i64s({axis}));
  }
  Value concat(ArrayRef<Value> parts, int64_t axis) {
    if (parts.size() == 1)
      return parts.front();
    Operation *c =
        g.create<onnx::ConcatOp>(1, GradientBuilder::elementType(parts.front()),
                                 ValueRange(parts), axis);
    return c ? c->getResult(0) : Value();
  }
  Value matmul(Value a, Value b) { return g.make<onnx::MatMulOp>(a, b); }
  /// Gate k of `x` [B, gates * H].
  Value gate(Value x, int64_t k) {
    return slice(x, 1, k * r.hidden, (k + 1) * r.hidden);
  }
  Value activate(StringRef name, Value x);
  /// The state update of one time step; `c` is LSTM's cell state.
  Value step(int64_t d, Value xw, Value h, Value &c);
  /// Runs direction d over the sequence: Y [T, B, H] and the last states.
  LogicalResult runDirection(int64_t d, Value &y, Value &lastH, Value &lastC);
  /// The state where a sample's sequence has ended keeps its old value.
  Value keepEnded(int64_t t, Value updated, Value old);

  GradientBuilder g;
  onnx::GenericOp op;
  const Recurrence &r;
  Value x, w, rw, bias, lengths, initH, initC, peep;
  int64_t steps = 0, batch = 0;
  // Per direction d: R transposed [H, gates * H], R's bias, peepholes.
  Value rT, rBias, peepI, peepO, peepF, rhT, rhBias;
};

Value Unroller::activate(StringRef name, Value x) {
  if (name == "Sigmoid")
    return g.make<onnx::SigmoidOp>(x);
  if (name == "Relu")
    return g.make<onnx::ReluOp>(x);
  return g.make<onnx::TanhOp>(x);
}

Value Unroller::keepEnded(int64_t t, Value updated, Value old) {
  if (!lengths)
    return updated;
  // lengths [B] > t: the sample is still running at step t.
  Value running = g.make<onnx::LessOp>(
      g.cast(g.i64s({t}), g.elementType(lengths)), lengths);
  Operation *where =
      g.create<onnx::WhereOp>(1, GradientBuilder::elementType(updated),
                              unsqueeze(running, 1), updated, old);
  return where ? where->getResult(0) : Value();
}

Value Unroller::step(int64_t d, Value xw, Value h, Value &c) {
  ArrayRef<StringRef> act = ArrayRef<StringRef>(r.activations)
                                .slice(d * defaultActivations(r.kind).size(),
                                       defaultActivations(r.kind).size());
  auto clip = [&](Value v) {
    if (!r.clip)
      return v;
    Value lo = g.scalar(-*r.clip, v), hi = g.scalar(*r.clip, v);
    return g.make<onnx::ClipOp>(v, lo, hi);
  };
  Value hr = matmul(h, rT);
  if (rBias)
    hr = g.add(hr, rBias);
  if (r.kind == "RNN")
    return activate(act[0], clip(g.add(xw, hr)));
  if (r.kind == "GRU") {
    Value z = activate(act[0], clip(g.add(gate(xw, 0), gate(hr, 0))));
    Value rs = activate(act[0], clip(g.add(gate(xw, 1), gate(hr, 1))));
    Value hh;
    if (r.linearBeforeReset) {
      hh = g.mul(rs, gate(hr, 2));
    } else {
      hh = matmul(g.mul(rs, h), rhT);
      if (rhBias)
        hh = g.add(hh, rhBias);
    }
    Value cand = activate(act[1], clip(g.add(gate(xw, 2), hh)));
    // (1 - z) * cand + z * h
    return g.add(cand, g.mul(z, g.sub(h, cand)));
  }
  // LSTM, gates i, o, f, c.
  Value gates = g.add(xw, hr);
  Value i = gate(gates, 0), o = gate(gates, 1), f = gate(gates, 2),
        cc = gate(gates, 3);
  if (peepI) {
    i = g.add(i, g.mul(peepI, c));
    f = g.add(f, g.mul(peepF, c));
  }
  i = activate(act[0], clip(i));
  f = activate(act[0], clip(f));
  cc = activate(act[1], clip(cc));
  Value keptC = g.mul(f, c);
  c = g.add(keptC, g.mul(i, cc));
  if (peepO)
    o = g.add(o, g.mul(peepO, c));
  o = activate(act[0], clip(o));
  return g.mul(o, activate(act[2], c));
}

LogicalResult Unroller::runDirection(int64_t d, Value &y, Value &lastH,
                                     Value &lastC) {
  int64_t gh = r.gates * r.hidden;
  Value wT = g.transpose(direction(w, d), {1, 0});
  rT = g.transpose(direction(rw, d), {1, 0});
  rhT = r.kind == "GRU" ? slice(rT, 1, 2 * r.hidden, gh) : Value();
  Value xw = matmul(x, wT); // [T, B, gates * H]
  rBias = rhBias = Value();
  if (bias) {
    Value bd = direction(bias, d);
    xw = g.add(xw, slice(bd, 0, 0, gh));
    rBias = slice(bd, 0, gh, 2 * gh);
    if (r.kind == "GRU" && !r.linearBeforeReset) {
      // The h gate's R bias is added after the reset gate's product.
      rhBias = slice(rBias, 0, 2 * r.hidden, gh);
      Value zr = slice(rBias, 0, 0, 2 * r.hidden);
      rBias = concat(
          {zr, g.zeros(RankedTensorType::get({r.hidden}, g.elementType(zr)))},
          0);
    }
  }
  peepI = peepO = peepF = Value();
  if (peep && r.kind == "LSTM") {
    Value pd = direction(peep, d);
    peepI = slice(pd, 0, 0, r.hidden);
    peepO = slice(pd, 0, r.hidden, 2 * r.hidden);
    peepF = slice(pd, 0, 2 * r.hidden, 3 * r.hidden);
  }
  auto stateType = RankedTensorType::get({batch, r.hidden}, g.elementType(x));
  Value h = initH ? direction(initH, d) : g.zeros(stateType);
  Value c = initC ? direction(initC, d) : g.zeros(stateType);
  bool reverse = r.reverseOnly || d == 1;
  SmallVector<Value> outputs(steps);
  for (int64_t k = 0; k < steps; ++k) {
    int64_t t = reverse ? steps - 1 - k : k;
    Value xt = g.make<onnx::SqueezeOp>(slice(xw, 0, t, t + 1), g.i64s({0}));
    Value oldC = c;
    Value hNew = step(d, xt, h, c);
    if (!hNew || !c)
      return failure();
    outputs[t] = unsqueeze(keepEnded(t, hNew, g.zeros(stateType)),
                           0); // Y is 0 past the end
    h = keepEnded(t, hNew, h);
    if (r.kind == "LSTM")
      c = keepEnded(t, c, oldC);
  }
  y = concat(outputs, 0);
  lastH = h;
  lastC = c;
  return success(y && lastH);
}

/// The longest sequence a recurrence is unrolled over: 65536 steps, each a
/// few tens of ops (about 2 million ops; sequences of real exports are
/// hundreds to thousands of steps).
static constexpr int64_t kMaxUnrolledSteps = 65536;

LogicalResult Unroller::checkShapes() {
  Value xv = operand(0);
  if (!xv) // required; ONNX's schema check runs only for the opsets it knows
    return op.emitError() << r.kind << " needs input 0 ('X'), which the node "
                          << "does not give";
  auto xs = llvm::dyn_cast<RankedTensorType>(xv.getType());
  if (!xs || !xs.hasStaticShape() || xs.getRank() != 3)
    return op.emitError() << r.kind << " needs an input X of rank 3 with a "
                          << "static shape";
  // ONNX's T is a float type, shared by every input but sequence_lens (a
  // boolean X was unrolled into ops that failed their type checks, and the
  // unrolling went on with their missing results; found by the onnx fuzzer).
  Type elt = xs.getElementType();
  if (!llvm::isa<FloatType>(elt))
    return op.emitError() << r.kind << " needs a floating-point X, not " << xs;
  int64_t B = xs.getDimSize(r.batchFirst ? 0 : 1), I = xs.getDimSize(2),
          D = r.directions, H = r.hidden, G = r.gates;
  if (xs.getDimSize(r.batchFirst ? 1 : 0) < 1)
    return op.emitError() << r.kind << " needs a sequence of at least one "
                          << "step, not X of type " << xs;
  // Each step becomes a few tens of ops: a sequence of 620 million steps
  // (found by the onnx-mutate fuzzer) asked for gigabytes before any check.
  if (xs.getDimSize(r.batchFirst ? 1 : 0) > kMaxUnrolledSteps)
    return op.emitError() << r.kind << " over "
                          << xs.getDimSize(r.batchFirst ? 1 : 0)
                          << " steps: recurrences are unrolled step by step, "
                          << "at most " << kMaxUnrolledSteps << " steps";
  SmallVector<int64_t> state = r.batchFirst ? SmallVector<int64_t>{B, D, H}
                                            : SmallVector<int64_t>{D, B, H};
  struct Expected {
    unsigned index;
    const char *name;
    SmallVector<int64_t> shape;
  } expected[] = {{1, "W", {D, G * H, I}},  {2, "R", {D, G * H, H}},
                  {3, "B", {D, 2 * G * H}}, {4, "sequence_lens", {B}},
                  {5, "initial_h", state},  {6, "initial_c", state},
                  {7, "P", {D, 3 * H}}};
  for (const Expected &e : expected) {
    if (r.kind != "LSTM" && e.index >= 6)
      continue;
    Value v = operand(e.index);
    // W and R are required (ONNX's schema says so, but a node that fails
    // the schema's check is typed from the model's value_info instead).
    if (!v && e.index <= 2)
      return op.emitError() << r.kind << " needs input " << e.index << " ('"
                            << e.name << "'), which the node does not give";
    if (!v)
      continue;
    auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
    bool lengths = e.index == 4;
    if (t && t.hasStaticShape() && t.getShape() == ArrayRef(e.shape) &&
        (lengths ? t.getElementType().isInteger(32)
                 : t.getElementType() == elt))
      continue;
    Type want = RankedTensorType::get(
        e.shape, lengths ? IntegerType::get(op->getContext(), 32) : elt);
    return op.emitError() << r.kind << " input " << e.index << " ('" << e.name
                          << "') needs the type " << want << ", not "
                          << v.getType();
  }
  return success();
}

LogicalResult Unroller::run() {
  if (failed(checkShapes()))
    return failure();
  x = operand(0), w = operand(1), rw = operand(2), bias = operand(3);
  lengths = operand(4), initH = operand(5);
  initC = r.kind == "LSTM" ? operand(6) : Value();
  peep = r.kind == "LSTM" ? operand(7) : Value();
  if (r.batchFirst) {
    x = g.transpose(x, {1, 0, 2});
    if (initH)
      initH = g.transpose(initH, {1, 0, 2});
    if (initC)
      initC = g.transpose(initC, {1, 0, 2});
  }
  steps = GradientBuilder::shapeOf(x)[0];
  batch = GradientBuilder::shapeOf(x)[1];
  if (lengths) {
    auto values = getConstantIntValues(lengths);
    bool full =
        values && llvm::all_of(*values, [&](int64_t v) { return v == steps; });
    if (full)
      lengths = Value();
    else if (r.reverseOnly || r.directions == 2)
      return op.emitError()
             << r.kind
             << " runs backwards with sequence_lens that may be shorter than "
                "the sequence, which is not supported (pad every sample to "
                "the full length)";
  }
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < r.directions; ++d) {
    Value y, h, c;
    if (failed(runDirection(d, y, h, c)))
      return failure();
    ys.push_back(unsqueeze(y, 1));
    hs.push_back(unsqueeze(h, 0));
    cs.push_back(c ? unsqueeze(c, 0) : Value());
  }
  Value y = concat(ys, 1), yh = concat(hs, 0);
  Value yc = r.kind == "LSTM" ? concat(cs, 0) : Value();
  if (r.batchFirst) {
    y = g.transpose(y, {2, 0, 1, 3});
    yh = g.transpose(yh, {1, 0, 2});
    if (yc)
      yc = g.transpose(yc, {1, 0, 2});
  }
  Value results[] = {y, yh, yc};
  for (auto [k, res] : llvm::enumerate(op->getResults())) {
    if (res.use_empty())
      continue;
    Value v = k < 3 ? results[k] : Value();
    if (!v || v.getType() != res.getType())
      return op.emitError()
             << r.kind << " output " << k << " would be "
             << (v ? v.getType() : Type()) << ", not " << res.getType();
    res.replaceAllUsesWith(v);
  }
  op->erase();
  return success();
}

/// A recurrent op with static input shapes (the unrolling needs the
/// sequence length and the batch).
bool isUnrollable(onnx::GenericOp op) {
  if (!op.getDomain().empty() ||
      !llvm::is_contained({"LSTM", "GRU", "RNN"}, op.getOpType()))
    return false;
  return llvm::all_of(op->getOperands(), [](Value v) {
    auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
    return llvm::isa<NoneType>(v.getType()) || (t && t.hasStaticShape());
  });
}

struct DecomposeRecurrencePass
    : public hetpar::impl::DecomposeRecurrencePassBase<
          DecomposeRecurrencePass> {
  void runOnOperation() override {
    SmallVector<onnx::GenericOp> ops;
    getOperation().walk([&](onnx::GenericOp op) {
      if (isUnrollable(op))
        ops.push_back(op);
    });
    for (onnx::GenericOp op : ops) {
      FailureOr<Recurrence> r = readRecurrence(op);
      OpBuilder b(op);
      if (failed(r) || failed(Unroller(b, op, *r).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
