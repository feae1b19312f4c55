//===- ModelSummary.cpp
//-----------------------------------------------------===//
#include "hetpar/Analysis/ModelSummary.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Support/ShapeUtils.h"

#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Format.h"

using namespace mlir;

namespace hetpar {

ModelSummary summarizeFunction(func::FuncOp func) {
  ModelSummary s;
  s.function = func.getSymName().str();
  for (auto [i, t] : llvm::enumerate(func.getArgumentTypes()))
    s.inputs.push_back({onnx::graphInputName(func, i), t});
  for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
    s.outputs.push_back({onnx::graphOutputName(func, i), t});
  func.walk([&](Operation *op) {
    if (op->getDialect() == nullptr ||
        op->getDialect()->getNamespace() !=
            onnx::ONNXDialect::getDialectNamespace() ||
        llvm::isa<onnx::NoValueOp, onnx::YieldOp>(op))
      return;
    if (auto c = llvm::dyn_cast<onnx::ConstantOp>(op)) {
      auto type = llvm::cast<ShapedType>(c.getType());
      int64_t n = getNumElements(type.getShape()).value_or(0);
      unsigned bits = type.getElementTypeBitWidth();
      s.constantBytes += n * (bits == 1 ? 1 : bits / 8);
      // Scalars are constants of the computation (epsilon, 0.5, sqrt(2)), not
      // weights.
      if (llvm::isa<FloatType>(type.getElementType()) && n > 1)
        s.parameters += n;
      return;
    }
    std::string kind = onnx::getONNXOpType(op);
    auto &entry = s.ops[kind];
    ++entry.count;
    ++s.numOps;
    if (llvm::isa<onnx::GenericOp>(op) &&
        !llvm::is_contained(s.unsupported, kind))
      s.unsupported.push_back(kind);
    std::optional<int64_t> f;
    if (auto iface = llvm::dyn_cast<onnx::FlopCountOpInterface>(op))
      f = iface.getFlopCount();
    auto add = [&](std::optional<int64_t> &acc) {
      acc = f && acc ? llvm::checkedAdd(*acc, *f) : std::nullopt;
    };
    add(entry.flops);
    add(s.flops);
    if (!f && !llvm::is_contained(s.uncounted, kind))
      s.uncounted.push_back(kind);
  });
  return s;
}

/// 1234567 with unit "FLOP" -> "1.23 MFLOP"; 12 -> "12 FLOP"; unit "" -> "1.23
/// M".
static std::string withPrefix(double v, StringRef unit) {
  const char *prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000.0 && i < 6) {
    v /= 1000.0;
    ++i;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format(i == 0 ? "%.0f" : "%.2f", v);
  if (i != 0 || !unit.empty())
    os << " " << prefixes[i] << unit;
  return out;
}

static std::string typeString(Type t) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (auto st = llvm::dyn_cast<ShapedType>(t)) {
    os << (st.hasRank() ? formatShape(st.getShape()) : std::string("*")) << " "
       << st.getElementType();
  } else {
    os << t;
  }
  return out;
}

void printModelSummary(const ModelSummary &s, llvm::raw_ostream &os) {
  os << "function @" << s.function << "\n";
  for (const auto &in : s.inputs)
    os << "  input  " << in.name << ": " << typeString(in.type) << "\n";
  for (const auto &out : s.outputs)
    os << "  output " << out.name << ": " << typeString(out.type) << "\n";
  os << "  ops: " << s.numOps << " in " << s.ops.size() << " kinds\n";
  os << llvm::format("    %-24s %7s %20s\n", "op", "count", "FLOP");
  for (const auto &[kind, entry] : s.ops) {
    std::string f =
        entry.flops ? std::to_string(*entry.flops) : std::string("?");
    os << llvm::format("    %-24s %7lld %20s\n", kind.c_str(),
                       (long long)entry.count, f.c_str());
  }
  os << "  parameters: " << s.parameters << " (" << withPrefix(s.parameters, "")
     << ")\n";
  os << "  constant bytes: " << s.constantBytes << " ("
     << withPrefix(s.constantBytes, "B") << ")\n";
  if (s.flops) {
    os << "  FLOP per run: " << *s.flops << " (" << withPrefix(*s.flops, "FLOP")
       << ")\n";
  } else {
    os << "  FLOP per run: unknown (no count for:";
    for (const auto &k : s.uncounted)
      os << " " << k;
    os << ")\n";
  }
  if (!s.unsupported.empty()) {
    os << "  unsupported ops:";
    for (const auto &u : s.unsupported)
      os << " " << u;
    os << "\n";
  }
}

} // namespace hetpar
