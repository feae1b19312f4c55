//===- EmitGemmEpilogue.cpp - elementwise chains as GEMM epilogues --------===//
//
// An elementwise group (EmitElementwise.cpp) whose only tensor operand is a
// Gemm's product, in the product's shape, with scalar constants beside it
// (an activation: Relu, GELU in its erf or tanh form, SiLU, a scale) runs
// as that GEMM's epilogue: a functor the GEMM applies to each sum as it
// stores it (hp_gemm_panels on the CPU), or in one pass over its output
// after the GEMM (hp_gemm_epilogue: OpenBLAS, cuBLAS, cuBLASLt). The
// product is then never stored: the GEMM writes the group's result, which
// saves the group's pass over memory and the product's buffer.
//
// Planned with the other fusions (planValues), before memory planning, which
// starts the group result's lifetime at the Gemm; emitted by emitGemm.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

namespace hetpar::codegen::emitter {

/// The root of the elementwise group that can finish `gemm`'s product, or
/// null: every user of the product (through views) is an op of one group,
/// and every operand of the group's ops is the product in the group's
/// shape (directly or through a view), a scalar constant, or another op of
/// the group; float32 throughout.
Operation *Emitter::epilogueGroupOf(onnx::GemmOp gemm) {
  Value y = gemm.getY();
  if (!eltOf(y).isF32() || converted(eltOf(y)))
    return nullptr;
  Operation *groupRoot = nullptr;
  llvm::SmallVector<Value> work{y};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (isView(user) && root(user->getResult(0)) == y) {
        work.push_back(user->getResult(0));
        continue;
      }
      if (!isElementwise(user))
        return nullptr;
      Operation *r = user;
      while (fusedInto.count(r))
        r = fusedInto.lookup(r);
      if (groupRoot && groupRoot != r)
        return nullptr;
      groupRoot = r;
    }
  }
  if (!groupRoot || !eltOf(groupRoot->getResult(0)).isF32())
    return nullptr;
  llvm::ArrayRef<int64_t> shape = shapeOf(groupRoot->getResult(0));
  llvm::SmallVector<Operation *> group = elementwiseGroupOf(groupRoot);
  llvm::SmallPtrSet<Operation *, 8> members(group.begin(), group.end());
  for (Operation *op : group) {
    if (isa<onnx::BatchNormalizationOp>(op))
      return nullptr;
    for (Value operand : op->getOperands()) {
      if (members.contains(operand.getDefiningOp()) || literalOf(operand))
        continue;
      if (root(operand) != y || shapeOf(operand) != shape)
        return nullptr;
    }
  }
  return groupRoot;
}

void Emitter::planGemmEpilogues() {
  for (Operation *op : ops)
    if (auto gemm = dyn_cast<onnx::GemmOp>(op))
      if (Operation *groupRoot = epilogueGroupOf(gemm))
        absorbGroup(op, groupRoot);
}

/// The hp_lt_act that cuBLASLt's epilogue can apply instead of `group`, a
/// GEMM epilogue: a group of one Relu, or one Gelu of the tanh form
/// (cuBLASLt's GELU is that approximation); else HP_LT_ACT_NONE.
static llvm::StringRef cublasLtActivation(llvm::ArrayRef<Operation *> group) {
  if (group.size() != 1)
    return "HP_LT_ACT_NONE";
  if (isa<onnx::ReluOp>(group[0]))
    return "HP_LT_ACT_RELU";
  if (isa<onnx::GeluOp>(group[0]) &&
      strAttr(group[0], "approximate", "none") == "tanh")
    return "HP_LT_ACT_GELU_TANH";
  return "HP_LT_ACT_NONE";
}

std::string Emitter::emitGemmEpilogue(Operation *gemm, Value &out) {
  out = gemm->getResult(0);
  auto it = absorbedGroup.find(gemm);
  if (it == absorbedGroup.end())
    return "hp_epi_none";
  llvm::ArrayRef<Operation *> group = it->second;
  Operation *groupRoot = group.back();
  // Every tensor leaf is the product: the functor's argument.
  FailureOr<std::string> statements =
      groupStatements(group, [&](Value v, Operation *, unsigned) {
        std::optional<std::string> lit = literalOf(v);
        return lit ? *lit : std::string("v");
      });
  if (failed(statements))
    return "";
  out = groupRoot->getResult(0);
  program.epilogueOps += static_cast<int>(group.size());
  return emitGroupFunctor(
      "hp_epi_", "epilogue", gemm, group,
      ("  static const int lt_act = " + cublasLtActivation(group) + ";\n")
          .str(),
      "float operator()(float v) const", *statements);
}

} // namespace hetpar::codegen::emitter
