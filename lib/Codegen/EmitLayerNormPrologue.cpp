//===- EmitLayerNormPrologue.cpp - elementwise groups as LayerNorm input --===//
//
// An elementwise group (EmitElementwise.cpp) that computes a
// LayerNormalization's X, typically a transformer's residual Add (x + attn,
// or x + (product + bias)), runs in the LayerNorm's kernel: a functor that
// gives X's element at a flat index, which the kernel stores row by row
// before it computes the row's statistics (hp_layer_norm's `Pro`). The
// group's own kernel, its parallel loop and its second pass over memory go;
// X is still stored, for its other readers (the next residual Add of a
// pre-norm block). ONNX Runtime's SkipLayerNormalization fuses the same.
//
// Planned with the other fusions (planValues), before memory planning, which
// keeps the group's operands alive to the LayerNorm; emitted by the
// LayerNorm's case in EmitOp.cpp.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

namespace hetpar::codegen::emitter {

namespace {

/// How a prologue reads an operand with `strides` over the dimensions of X
/// (`shape`, normalized from `axis` on): "i" (laid out as X), "k" (one of
/// X's rows, broadcast to every row), "0" (one element), or empty (another
/// broadcast, which a prologue does not take).
std::string prologueIndex(llvm::ArrayRef<int64_t> strides,
                          llvm::ArrayRef<int64_t> shape, int64_t axis) {
  llvm::SmallVector<int64_t> own = stridesOf(shape);
  bool laid = true, inRow = true, scalar = true;
  for (auto [d, s] : llvm::enumerate(strides)) {
    if (shape[d] == 1)
      continue;
    laid &= s == own[d];
    scalar &= s == 0;
    inRow &= static_cast<int64_t>(d) < axis ? s == 0 : s == own[d];
  }
  return laid ? "i" : scalar ? "0" : inRow ? "k" : "";
}

} // namespace

/// The root of the elementwise group that can compute `ln`'s X in the
/// LayerNorm's kernel, or null: the LayerNorm is X's first reader; every
/// operand from outside the group is a scalar constant, or laid out as X, as
/// one of X's rows or as one element; no op between the group and the LayerNorm
/// writes a global (whose old value the group may read): no global store, no
/// optimizer (planGlobals updates its global in place).
Operation *Emitter::prologueGroupOf(onnx::LayerNormalizationOp ln) {
  Value x = ln->getOperand(0);
  Operation *groupRoot = x.getDefiningOp();
  if (!groupRoot || !isElementwise(groupRoot) || fusedInto.count(groupRoot) ||
      absorbedBy.count(groupRoot) || numelOf(x) == 0)
    return nullptr;
  std::string ct = computeType(eltOf(x));
  if (ct != "float" && ct != "double")
    return nullptr;
  int64_t lnStep = step.lookup(ln);
  llvm::SmallVector<Value> readers{x};
  while (!readers.empty())
    for (Operation *user : readers.pop_back_val().getUsers()) {
      if (user != ln.getOperation() && !isa<func::ReturnOp>(user) &&
          step.lookup(user) <= lnStep)
        return nullptr;
      if (isView(user))
        readers.push_back(user->getResult(0));
    }
  // A global store, or an optimizer, which updates its global in place
  // (planGlobals), between the group and the LayerNorm.
  for (int64_t k = step.lookup(groupRoot) + 1; k < lnStep; ++k)
    if (isa<ml_program::GlobalStoreOp, onnx::AdamWOptimizerOp,
            onnx::SGDOptimizerOp>(ops[static_cast<size_t>(k - 1)]))
      return nullptr;
  llvm::ArrayRef<int64_t> shape = shapeOf(x);
  int64_t axis = axisOf(x, intAttr(ln, "axis", -1));
  llvm::SmallVector<Operation *> group = elementwiseGroupOf(groupRoot);
  llvm::SmallPtrSet<Operation *, 8> members(group.begin(), group.end());
  for (Operation *op : group) {
    if (isa<onnx::BatchNormalizationOp>(op))
      return nullptr;
    for (auto [k, operand] : llvm::enumerate(op->getOperands()))
      if (!members.contains(operand.getDefiningOp()) && !literalOf(operand) &&
          prologueIndex(leafStrides(operand, op, k, shape), shape, axis)
              .empty())
        return nullptr;
  }
  return groupRoot;
}

void Emitter::planLayerNormPrologues() {
  for (Operation *op : ops)
    if (auto ln = dyn_cast<onnx::LayerNormalizationOp>(op))
      if (Operation *groupRoot = prologueGroupOf(ln))
        absorbGroup(op, groupRoot);
}

std::string Emitter::emitLayerNormPrologue(Operation *ln) {
  auto it = absorbedGroup.find(ln);
  if (it == absorbedGroup.end())
    return "hp_pro_none()";
  llvm::ArrayRef<Operation *> group = it->second;
  Value x = ln->getOperand(0);
  llvm::ArrayRef<int64_t> shape = shapeOf(x);
  int64_t axis = axisOf(x, intAttr(ln, "axis", -1));
  // Each operand from outside: a member in<n> of the functor, loaded once
  // into v<n> at the index prologueIndex gives.
  llvm::SmallVector<std::pair<Value, std::string>> leaves;
  std::string members, loads;
  llvm::SmallVector<std::string> args;
  FailureOr<std::string> statements = groupStatements(
      group, [&](Value v, Operation *user, unsigned operandNo) -> std::string {
        if (std::optional<std::string> lit = literalOf(v))
          return *lit;
        std::string index =
            prologueIndex(leafStrides(v, user, operandNo, shape), shape, axis);
        for (auto [n, leaf] : llvm::enumerate(leaves))
          if (leaf.first == v && leaf.second == index)
            return "v" + std::to_string(n);
        std::string n = std::to_string(leaves.size());
        leaves.push_back({v, index});
        members += "  const " + storageType(eltOf(v)) + " *in" + n + ";\n";
        loads += "    const " + computeType(eltOf(v)) + " v" + n + " = (" +
                 computeType(eltOf(v)) + ")in" + n + "[" + index + "];\n";
        args.push_back(ptr(v));
        return "v" + n;
      });
  if (failed(statements))
    return "";
  program.prologueOps += static_cast<int>(group.size());
  std::string name = emitGroupFunctor(
      "hp_pro_", "prologue", ln, group,
      "  static const bool any = true;\n" + members,
      computeType(eltOf(x)) + " operator()(int64_t i, int64_t k) const",
      "    (void)i;\n    (void)k;\n" + loads + *statements);
  return name + "{" + llvm::join(args, ", ") + "}";
}

} // namespace hetpar::codegen::emitter
