//===- Training.cpp - helpers shared by the training passes ---------------===//
#include "hetpar/Transforms/Training.h"
#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;

FailureOr<func::FuncOp> hetpar::train::stepFunction(ModuleOp module) {
  func::FuncOp found;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isExternal() || f.isPrivate())
      continue;
    if (found)
      return module.emitError("training needs one function; found @")
             << found.getName() << " and @" << f.getName();
    found = f;
  }
  if (!found)
    return module.emitError("the module has no function to train");
  return found;
}

FailureOr<func::FuncOp> hetpar::train::deviceStepFunction(ModuleOp module,
                                                          int64_t device,
                                                          StringRef pass) {
  auto func = stepFunction(module);
  if (failed(func))
    return failure();
  if (device < 0)
    return module.emitError()
           << pass
           << " needs device=<id>, the plan's device whose step this is";
  return func;
}

void hetpar::train::markDeviceStep(ModuleOp module, func::FuncOp func,
                                   int64_t device,
                                   ArrayRef<int64_t> stageDevices,
                                   ArrayRef<std::string> kinds) {
  OpBuilder b(module.getContext());
  func->setAttr(dist::kDeviceAttrName, b.getI64IntegerAttr(device));
  if (module.lookupSymbol("mesh"))
    return;
  b.setInsertionPointToStart(module.getBody());
  SmallVector<Attribute> devices;
  for (auto [id, kind] : llvm::zip(stageDevices, kinds))
    devices.push_back(
        dist::DeviceAttr::get(b.getContext(), id, b.getStringAttr(kind)));
  dist::MeshOp::create(b, module.getLoc(), "mesh", b.getArrayAttr(devices));
}

LogicalResult hetpar::train::checkDeviceRows(func::FuncOp func, int64_t device,
                                             int64_t rows, StringRef what) {
  for (BlockArgument a : func.getArguments()) {
    auto t = llvm::dyn_cast<RankedTensorType>(a.getType());
    if (!t || t.getRank() == 0 || t.getDimSize(0) != rows)
      return func.emitError()
             << "input " << a.getArgNumber() << " has type " << a.getType()
             << ", not device " << device << "'s " << rows << " rows of "
             << what << " on axis 0";
  }
  return success();
}

ml_program::GlobalOp hetpar::train::getOrCreateStepGlobal(ModuleOp module,
                                                          func::FuncOp func) {
  for (auto g : module.getOps<ml_program::GlobalOp>())
    if (roleOf(g) == "step")
      return g;
  OpBuilder top(func);
  auto type = RankedTensorType::get({}, top.getI64Type());
  auto value = DenseElementsAttr::get(type, top.getZeroAttr(top.getI64Type()));
  auto g = ml_program::GlobalOp::create(top, func.getLoc(), kStepGlobal, type,
                                        /*is_mutable=*/true, value,
                                        top.getStringAttr("private"));
  g->setAttr(kRoleAttr, top.getStringAttr("step"));
  SymbolTable(module).insert(g); // renames on a clash with another symbol
  return g;
}

llvm::Expected<llvm::Regex> hetpar::train::freezeRegex(StringRef pattern) {
  llvm::Regex re(("^(" + pattern + ")$").str());
  std::string err;
  if (!re.isValid(err))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--freeze '" + pattern + "' is not a valid regular expression: " + err);
  return std::move(re);
}

std::string hetpar::train::freezeMatchesNothing(StringRef pattern) {
  return ("--freeze '" + pattern +
          "' matches no float initializer of the model")
      .str();
}

hetpar::onnx::ConstantOp hetpar::train::floatInitializer(Value v) {
  auto c = v.getDefiningOp<hetpar::onnx::ConstantOp>();
  if (!c || !c->hasAttr(hetpar::onnx::kInitializerAttrName) ||
      !llvm::isa<FloatType>(c.getType().getElementType()))
    return nullptr;
  return c;
}
