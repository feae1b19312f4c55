//===- SetInputShapes.cpp - hetpar-onnx-set-input-shapes
//--------------------===//
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "llvm/ADT/StringSet.h"

namespace hetpar {
#define GEN_PASS_DEF_SETINPUTSHAPESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {
struct SetInputShapesPass
    : public hetpar::impl::SetInputShapesPassBase<SetInputShapesPass> {
  using Base::Base;

  void runOnOperation() override {
    llvm::StringMap<SmallVector<int64_t>> requested;
    for (const std::string &spec : shapes) {
      auto parsed = parseInputShapeSpec(spec);
      if (!parsed) {
        getOperation().emitError() << llvm::toString(parsed.takeError());
        return signalPassFailure();
      }
      requested[parsed->first] = parsed->second;
    }
    llvm::StringSet<> used;
    SmallVector<std::string> names;
    bool ok = true;
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      SmallVector<Type> argTypes(func.getArgumentTypes());
      for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
        auto name = func.getArgAttrOfType<StringAttr>(i, "onnx.name");
        if (!name)
          continue;
        names.push_back(name.str());
        auto it = requested.find(name.getValue());
        if (it == requested.end())
          continue;
        used.insert(name.getValue());
        auto st = llvm::dyn_cast<ShapedType>(arg.getType());
        if (!st) {
          emitError(arg.getLoc())
              << "input '" << name.getValue() << "' is not a tensor";
          ok = false;
          continue;
        }
        auto want = RankedTensorType::get(it->second, st.getElementType());
        auto refined = refineType(arg.getType(), want);
        if (failed(refined)) {
          emitError(arg.getLoc())
              << "input shape " << name.getValue() << "="
              << formatShape(it->second) << " does not match the input's "
              << arg.getType();
          ok = false;
          continue;
        }
        if (exceedsMaxTensorBytes(*refined)) {
          emitError(arg.getLoc())
              << "input shape " << name.getValue() << "="
              << formatShape(it->second) << " gives a tensor that "
              << oversizeReason(*refined);
          ok = false;
          continue;
        }
        arg.setType(*refined);
        argTypes[i] = *refined;
      }
      func.setType(
          FunctionType::get(&getContext(), argTypes, func.getResultTypes()));
    });
    for (const auto &entry : requested) {
      if (used.contains(entry.getKey()))
        continue;
      auto diag = getOperation().emitError()
                  << "input shape given for '" << entry.getKey()
                  << "', which is not an input; the inputs are:";
      for (const std::string &n : names)
        diag << " " << n;
      ok = false;
    }
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
