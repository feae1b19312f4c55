//===- Training.cpp - helpers shared by the training passes ---------------===//
#include "hetpar/Transforms/Training.h"

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
