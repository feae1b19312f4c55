//===- PlanStages.cpp - a plan's mesh and stages in the IR ----------------===//
//
// What the dist passes read of a plan placed in the IR, one reading for
// hetpar-dist-introduce-transfers, hetpar-dist-apply-plan and
// hetpar-dist-localize: the plan's mesh, each op's pipeline stage
// (dist.stage_id), and the two stages a dist.transfer joins. Partitioner.h
// declares them.
//
//===----------------------------------------------------------------------===//

#include "Partitioner.h"

#include <set>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::partition;

dist::MeshOp
hetpar::partition::getOrCreatePlanMesh(ModuleOp module,
                                       const PlanAnnotation &plan) {
  if (auto mesh = module.lookupSymbol<dist::MeshOp>(kMesh))
    return mesh;
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<Attribute> devices;
  for (const StageAnnotation &st : plan.stages)
    for (auto [id, kind] : llvm::zip(st.devices, st.kinds))
      devices.push_back(dist::DeviceAttr::get(ctx, id, b.getStringAttr(kind)));
  return dist::MeshOp::create(b, module.getLoc(), kMesh,
                              b.getArrayAttr(devices));
}

/// The op that computes `v`, seen through a dist.transfer (null for a graph
/// input).
static Operation *producerThroughTransfer(Value v) {
  if (auto t = v.getDefiningOp<dist::TransferOp>())
    v = t.getInput();
  return v.getDefiningOp();
}

FailureOr<StageAssignment>
hetpar::partition::readStageAssignment(func::FuncOp func, size_t numStages) {
  StageAssignment a;
  a.ops.resize(numStages);
  for (Operation &op : func.getBody().front()) {
    // Constants are copied into every stage that reads them.
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        isa<onnx::ConstantOp, onnx::NoValueOp, dist::TransferOp>(op))
      continue;
    auto s = op.getAttrOfType<IntegerAttr>(dist::kStageIdAttrName);
    if (!s || s.getInt() < 0 || s.getInt() >= static_cast<int64_t>(numStages))
      return op.emitError() << "op " << describeOp(&op)
                            << (s ? " names a stage the plan does not have"
                                  : " has no dist.stage_id");
    if (op.getNumRegions())
      return op.emitError() << "op " << describeOp(&op)
                            << " has regions, which the partition does not "
                               "split";
    for (Value operand : op.getOperands())
      if (Operation *def = producerThroughTransfer(operand))
        if (auto it = a.stageOf.find(def);
            it != a.stageOf.end() && it->second > s.getInt())
          return op.emitError() << "op " << describeOp(&op) << " in stage "
                                << s.getInt() << " uses a value of stage "
                                << it->second << ", which runs later";
    a.stageOf[&op] = s.getInt();
    a.ops[s.getInt()].push_back(&op);
  }
  return a;
}

FailureOr<std::pair<int, int>> hetpar::partition::transferStages(
    dist::TransferOp t,
    llvm::function_ref<std::optional<int>(Operation *)> stageOf) {
  std::optional<int> from;
  if (Operation *def = t.getInput().getDefiningOp())
    from = stageOf(def);
  bool inStages = from && !t->use_empty();
  std::set<int> to; // the users' stages, in order
  for (Operation *u : t->getUsers()) {
    std::optional<int> s = stageOf(u);
    inStages &= s.has_value();
    if (s)
      to.insert(*s);
  }
  if (to.size() > 1)
    return t.emitError() << "dist.transfer: its users lie in stages "
                         << *to.begin() << " and " << *std::next(to.begin())
                         << "; one transfer per receiving stage";
  if (!inStages)
    return t.emitError() << "dist.transfer: its input must be computed in a "
                            "stage and each of its users must be an op of a "
                            "stage";
  int target = *to.begin();
  if (target <= *from)
    return t.emitError() << "dist.transfer: it moves a value of stage " << *from
                         << " to stage " << target
                         << ", which does not run later";
  return std::make_pair(*from, target);
}
