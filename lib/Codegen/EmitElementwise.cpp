//===- EmitElementwise.cpp - fused elementwise kernels --------------------===//
//
// Chains of elementwise ops with one user and one shape become one
// generated kernel: each op's C expression (elementwiseExpr), broadcast
// operands read through per-dimension strides.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

namespace hetpar::codegen::emitter {

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
      .Case([&](onnx::DivOp) -> std::string {
        // Integers: hp_idiv (no trap on a divisor of 0 or INT_MIN / -1).
        if (llvm::isa<IntegerType>(inElt))
          return "hp_idiv<" + ct + ">(" + x + ", " + a[1] + ")";
        return "(" + ct + ")(" + x + " / " + a[1] + ")";
      })
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
        // powf costs about 20 ns an element. Integers go through hp_ipow,
        // which wraps where a signed product would overflow.
        std::optional<int> n = smallIntegerExponent(o->getOperand(1));
        if (n && !llvm::isa<IntegerType>(eltOf(o->getOperand(0))))
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
                         : "hp_ifmod<" + ct + ">(" + x + ", " + a[1] + ")";
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

llvm::SmallVector<int64_t> leafStrides(Value v, Operation *user,
                                       unsigned operandNo,
                                       llvm::ArrayRef<int64_t> outShape) {
  int rank = static_cast<int>(outShape.size());
  llvm::SmallVector<int64_t> strides(rank, 0);
  llvm::ArrayRef<int64_t> s = shapeOf(v);
  if (isa<onnx::BatchNormalizationOp>(user) && operandNo > 0) {
    if (rank > 1 && s.size() == 1 && s[0] == outShape[1])
      strides[1] = 1;
  } else {
    llvm::SmallVector<int64_t> vs = stridesOf(s);
    int off = rank - static_cast<int>(s.size());
    for (int d = 0; d < static_cast<int>(s.size()); ++d)
      if (s[d] != 1)
        strides[off + d] = vs[d];
  }
  for (int d = 0; d < rank; ++d) // the coordinate is always 0 there
    if (outShape[d] == 1)
      strides[d] = 0;
  return strides;
}

namespace {

/// A value a fused elementwise kernel reads: its strides over the output's
/// dimensions (0 where it is broadcast) and whether it has the output's
/// shape (read at the output's own index).
struct ElementwiseLeaf {
  Value value;
  llvm::SmallVector<int64_t> strides;
  bool contiguous;
  std::string type; // the compute type its element is converted to
};

/// The smallest p such that, over the output dimensions [p, rank), every
/// leaf is either laid out as the output (its strides equal the output's
/// row-major strides) or broadcast (stride 0): the kernel then walks rows of
/// numel(outShape[p:]) contiguous elements, with the leaves' row offsets
/// computed once per row. Dimensions of extent 1 fit either way.
int rowDimsStart(llvm::ArrayRef<ElementwiseLeaf> leaves,
                 llvm::ArrayRef<int64_t> outShape) {
  int rank = static_cast<int>(outShape.size());
  llvm::SmallVector<int64_t> outStrides = stridesOf(outShape);
  enum Kind { Unknown, Laid, Broadcast };
  llvm::SmallVector<Kind> kind(leaves.size(), Unknown);
  for (int d = rank - 1; d >= 0; --d) {
    if (outShape[d] == 1)
      continue;
    for (auto [k, leaf] : llvm::enumerate(leaves)) {
      Kind here = leaf.strides[d] == 0               ? Broadcast
                  : leaf.strides[d] == outStrides[d] ? Laid
                                                     : Unknown;
      if (here == Unknown || (kind[k] != Unknown && kind[k] != here))
        return d + 1;
      kind[k] = here;
    }
  }
  return 0;
}

/// Whether leaf reads the same element for every position of a row that
/// starts at output dimension p.
bool broadcastInRow(const ElementwiseLeaf &leaf, int p) {
  return llvm::all_of(llvm::ArrayRef(leaf.strides).drop_front(p),
                      [](int64_t s) { return s == 0; });
}

/// "c0 * 64 + c2 * 1" over dims [0, end), or "0".
std::string offsetOf(const ElementwiseLeaf &leaf, int end) {
  std::string off;
  for (int d = 0; d < end; ++d)
    if (leaf.strides[d])
      off += (off.empty() ? "" : " + ") + std::string("c") + std::to_string(d) +
             " * " + std::to_string(leaf.strides[d]);
  return off.empty() ? "0" : off;
}

/// Declarations of the coordinates c[outermost, end) of the output element
/// from `index`, an index over the dims [0, end).
std::string coordinates(llvm::ArrayRef<int64_t> outShape, int outermost,
                        int end, llvm::StringRef index) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "    int64_t r = " << index << ";\n";
  for (int d = end - 1; d >= outermost; --d) {
    os << "    const int64_t c" << d << " = r % " << outShape[d] << ";\n";
    if (d > outermost)
      os << "    r /= " << outShape[d] << ";\n";
  }
  return s;
}

/// The outermost output dimension below end that some leaf's offset reads.
int outermostCoordinate(llvm::ArrayRef<ElementwiseLeaf> leaves, int end) {
  int outermost = end;
  for (const ElementwiseLeaf &leaf : leaves)
    for (int d = 0; d < end; ++d)
      if (!leaf.contiguous && leaf.strides[d]) {
        outermost = std::min(outermost, d);
        break;
      }
  return outermost;
}

std::string loadOf(const ElementwiseLeaf &leaf, size_t k,
                   llvm::StringRef index) {
  return "    const " + leaf.type + " v" + std::to_string(k) + " = (" +
         leaf.type + ")in" + std::to_string(k) + "[" + index.str() + "];\n";
}

/// The loop of a fused elementwise kernel over an output of outShape. `ops`
/// computes `result` from the loads v<k>; the store converts it to outType.
/// Three forms:
///  - every leaf has the output's shape or is a scalar: one SIMD loop;
///  - the output splits into rows of >= 8 elements over which every leaf is
///    laid out as the output or broadcast (rowDimsStart): on the CPU, a
///    parallel loop over rows that reads the broadcast leaves once and runs
///    the row as SIMD lanes; on the GPU, a thread per element;
///  - else a thread or iteration per element that computes its coordinates.
std::string elementwiseLoop(llvm::ArrayRef<ElementwiseLeaf> leaves,
                            llvm::ArrayRef<int64_t> outShape,
                            llvm::StringRef ops, llvm::StringRef result,
                            llvm::StringRef outType) {
  int rank = static_cast<int>(outShape.size());
  std::string store =
      "    out[i] = (" + outType.str() + ")" + result.str() + ";\n";
  auto flatLoads = [&](int end) {
    std::string s;
    for (auto [k, leaf] : llvm::enumerate(leaves))
      s += loadOf(leaf, k, leaf.contiguous ? "i" : offsetOf(leaf, end));
    return s;
  };
  int outermost = outermostCoordinate(leaves, rank);
  if (outermost == rank)
    return "  HP_FOR_SIMD(i) {\n" + flatLoads(rank) + ops.str() + store +
           "  }\n";
  int p = rowDimsStart(leaves, outShape);
  int64_t width = numel(outShape.drop_front(p));
  if (width < 8)
    return "  HP_FOR(i) {\n" + coordinates(outShape, outermost, rank, "i") +
           flatLoads(rank) + ops.str() + store + "  }\n";

  // Rows of `width` elements: offsets from the row's coordinates.
  std::string w = std::to_string(width);
  int rowOuter = outermostCoordinate(leaves, p);
  std::string rowCoords =
      rowOuter < p ? coordinates(outShape, rowOuter, p, "row") : "";
  std::string rowLoads, laneLoads;
  for (auto [k, leaf] : llvm::enumerate(leaves)) {
    if (leaf.contiguous)
      laneLoads += loadOf(leaf, k, "i");
    else if (broadcastInRow(leaf, p))
      rowLoads += loadOf(leaf, k, offsetOf(leaf, p));
    else if (std::string off = offsetOf(leaf, p); off == "0")
      laneLoads += loadOf(leaf, k, "j");
    else
      laneLoads += loadOf(leaf, k, "(" + off + ") + j");
  }
  // The lane's statements, indented inside the CPU's row loop.
  std::string lane = laneLoads + ops.str() + store;
  std::string nested;
  for (llvm::StringRef l : llvm::split(llvm::StringRef(lane).rtrim('\n'), '\n'))
    nested += "  " + l.str() + "\n";
  std::string s = "#if HP_CUDA\n  HP_FOR(i) {\n    const int64_t row = i / " +
                  w + ", j = i % " + w + ";\n    (void)row;\n    (void)j;\n" +
                  rowCoords + rowLoads + lane + "  }\n#else\n";
  s += "  HP_FOR_ROWS(row, " + w + ") {\n" + rowCoords + rowLoads +
       "    HP_SIMD for (int64_t j = 0; j < " + w +
       "; ++j) {\n      const int64_t i = row * " + w + " + j;\n" + nested +
       "    }\n  }\n#endif\n";
  return s;
}

} // namespace

/// The group of rootOp: it and every op fused (transitively) into it, in
/// program order.
llvm::SmallVector<Operation *> Emitter::elementwiseGroupOf(Operation *rootOp) {
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
  return group;
}

FailureOr<std::string> Emitter::groupStatements(
    llvm::ArrayRef<Operation *> group,
    llvm::function_ref<std::string(Value, Operation *, unsigned)> leafExpr) {
  llvm::DenseMap<Value, std::string> exprOf;
  std::string ops;
  for (Operation *op : group) {
    llvm::SmallVector<std::string> a;
    for (auto [k, operand] : llvm::enumerate(op->getOperands())) {
      // CastLike's target gives the type alone: no value of it is read (its
      // shape need not broadcast: a [7, 4, 2^20] target of a [3, 4] input
      // indexed strides out of range; found by the onnx-mutate fuzzer).
      if (isa<onnx::CastLikeOp>(op) && k == 1) {
        a.push_back("");
        continue;
      }
      auto it = exprOf.find(operand);
      a.push_back(it != exprOf.end() ? it->second : leafExpr(operand, op, k));
    }
    FailureOr<std::string> e = elementwiseExpr(op, a);
    if (failed(e))
      return failure();
    std::string t = "t" + std::to_string(exprOf.size());
    ops += "    const " + computeType(eltOf(op->getResult(0))) + " " + t +
           " = " + *e + ";\n";
    exprOf[op->getResult(0)] = t;
  }
  return ops;
}

std::string Emitter::emitGroupFunctor(llvm::StringRef prefix,
                                      llvm::StringRef role, Operation *anchor,
                                      llvm::ArrayRef<Operation *> group,
                                      llvm::StringRef members,
                                      llvm::StringRef signature,
                                      llvm::StringRef body) {
  std::string name = (prefix + llvm::Twine(kernelCount++)).str();
  kernels << "// " << name << ": the " << role << " of "
          << onnx::describeNode(anchor) << ":";
  for (Operation *op : group)
    kernels << " " << op->getName().stripDialect();
  kernels << "\nstruct " << name << " {\n"
          << members << "  HP_HD " << signature << " {\n"
          << body << "    return t" << group.size() - 1 << ";\n  }\n};\n\n";
  return name;
}

LogicalResult Emitter::emitElementwiseGroup(Operation *rootOp) {
  llvm::SmallVector<Operation *> group = elementwiseGroupOf(rootOp);
  Value out = rootOp->getResult(0);
  llvm::ArrayRef<int64_t> outShape = shapeOf(out);
  int64_t n = numel(outShape);
  std::string name = "k" + std::to_string(kernelCount++);
  for (Operation *op : llvm::ArrayRef(group).take_front(3))
    name += "_" + op->getName().stripDialect().str();
  if (group.size() > 3)
    name += "_etc";

  // Leaves: (value, strides over the output's dims) -> kernel parameter.
  llvm::SmallVector<ElementwiseLeaf> leaves;
  llvm::SmallVector<std::string> params, args;
  auto leafExpr = [&](Value v, Operation *user,
                      unsigned operandNo) -> std::string {
    if (auto lit = literalOf(v))
      return *lit;
    llvm::SmallVector<int64_t> strides =
        leafStrides(v, user, operandNo, outShape);
    llvm::ArrayRef<int64_t> s = shapeOf(v);
    for (auto [i, leaf] : llvm::enumerate(leaves))
      if (leaf.value == v && leaf.strides == strides)
        return "v" + std::to_string(i);
    size_t idx = leaves.size();
    leaves.push_back({v, strides, s == outShape, computeType(eltOf(v))});
    params.push_back("const " + storageType(eltOf(v)) + " *__restrict__ in" +
                     std::to_string(idx));
    args.push_back(ptr(v));
    return "v" + std::to_string(idx);
  };

  FailureOr<std::string> ops = groupStatements(group, leafExpr);
  if (failed(ops))
    return failure();
  std::string outType = storageType(eltOf(out));
  params.push_back(outType + " *__restrict__ out");
  args.push_back(ptr(out));

  // Kernel text.
  kernels << "// " << name << ":";
  for (Operation *op : group) {
    std::string node = onnx::getNodeName(op->getLoc());
    kernels << " " << op->getName().stripDialect();
    if (!node.empty())
      kernels << " '" << node << "'";
  }
  kernels << "\nHP_KERNEL(" << name << ", " << llvm::join(params, ", ")
          << ") {\n"
          << elementwiseLoop(leaves, outShape, *ops,
                             "t" + std::to_string(group.size() - 1), outType)
          << "}\n\n";
  body << "  // " << name << "\n";
  line("hp_launch(ctx, " + name + ", " + std::to_string(n) + ", " +
       llvm::join(args, ", ") + ");");
  ++program.kernels;
  program.fusedOps += static_cast<int>(group.size()) - 1;
  return success();
}

} // namespace hetpar::codegen::emitter
