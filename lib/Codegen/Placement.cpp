//===- Placement.cpp - the manifest's placement, read from the IR ---------===//
//
// What manifest.json says about where each device program runs (its stage,
// its kind, the microbatches, the device that returns the outputs, the
// graph inputs the devices share out) comes from the partitioned module
// alone, as every other input of code generation does: the partition wrote
// it there from the plan.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Codegen/Codegen.h"
#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace hetpar::codegen {

void describePlacement(ModuleOp module, llvm::ArrayRef<int64_t> deviceIds,
                       PlanFiles &files) {
  if (auto mb = module->getAttrOfType<IntegerAttr>(dist::kMicrobatchesAttrName))
    files.microbatches = mb.getInt();
  dist::MeshOp mesh;
  for (auto m : module.getOps<dist::MeshOp>())
    mesh = m;
  llvm::DenseMap<int64_t, func::FuncOp> byDevice;
  for (auto f : module.getOps<func::FuncOp>())
    if (auto id = f->getAttrOfType<IntegerAttr>(dist::kDeviceAttrName))
      byDevice[id.getInt()] = f;
  files.stages.clear();
  files.kinds.clear();
  files.outputDevice = -1;
  int returning = 0;
  for (int64_t id : deviceIds) {
    func::FuncOp f = byDevice.lookup(id);
    auto stage =
        f ? f->getAttrOfType<IntegerAttr>(dist::kStageIdAttrName) : nullptr;
    files.stages.push_back(stage ? stage.getInt() : -1);
    std::optional<llvm::StringRef> kind;
    if (mesh)
      kind = mesh.kindOf(id);
    files.kinds.push_back(kind ? kind->str() : "unknown");
    if (f && f.getNumResults() > 0) {
      files.outputDevice = id;
      ++returning;
    }
  }
  if (returning != 1)
    files.outputDevice = -1;
  describeGraphInputs(module, files);
}

void describeGraphInputs(ModuleOp module, PlanFiles &files) {
  files.graphInputs.clear();
  auto list = module->getAttrOfType<ArrayAttr>(dist::kGraphInputsAttrName);
  if (!list)
    return;
  // The dialect's verifier checked that each entry is a #dist.graph_input.
  for (auto in : list.getAsRange<dist::GraphInputAttr>()) {
    TensorDesc d;
    d.name = in.getName().getValue().str();
    d.dtype = dtypeName(in.getType().getElementType());
    d.shape.assign(in.getType().getShape().begin(),
                   in.getType().getShape().end());
    d.batchDim = in.getBatchDim();
    files.graphInputs.push_back(std::move(d));
  }
}

} // namespace hetpar::codegen
