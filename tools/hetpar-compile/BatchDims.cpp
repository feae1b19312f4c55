//===- BatchDims.cpp - hetpar-compile --batch-dim -------------------------===//

#include "BatchDims.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Plan/Batch.h"
#include "hetpar/Plan/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The argument of `fn` whose `onnx.name` is `name`, or -1.
int findInput(func::FuncOp fn, StringRef name) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto n = fn.getArgAttrOfType<StringAttr>(i, "onnx.name");
        n && n.getValue() == name)
      return static_cast<int>(i);
  return -1;
}

/// "'a', 'b'": the inputs of `fn`, for messages.
std::string inputList(func::FuncOp fn) {
  std::string out;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto n = fn.getArgAttrOfType<StringAttr>(i, "onnx.name"))
      out += (out.empty() ? "'" : ", '") + n.str() + "'";
  return out.empty() ? "none" : out;
}

/// The one refusal of an input marked as holding no batch in training,
/// after `where` ("--batch-dim NAME=none: ").
llvm::Error noBatchInTraining(const std::string &where) {
  return error(where + "training reads every input in batches along "
                       "dimension 0 (hetpar-run --data); an input without "
                       "the batch would be cut into rows as well");
}

/// Whether input `arg` may be marked as holding no batch: not the first
/// input, where the batch is seeded, and not in training, whose data
/// (hetpar-run --data) gives every input a batch along dimension 0.
llvm::Error checkNoBatch(const std::string &where, int arg, bool training) {
  if (arg == 0)
    return error(where + "the batch is seeded at the first input; give the "
                         "dimension that holds it, or reorder the inputs");
  if (training)
    return noBatchInTraining(where);
  return llvm::Error::success();
}

/// The `onnx.name` of argument `i` of `fn`, or its position.
std::string inputName(func::FuncOp fn, unsigned i) {
  if (auto n = fn.getArgAttrOfType<StringAttr>(i, "onnx.name"))
    return n.str();
  return std::to_string(i);
}

func::FuncOp modelFunction(ModuleOp module) {
  auto funcs = module.getOps<func::FuncOp>();
  return funcs.empty() ? func::FuncOp() : *funcs.begin();
}

} // namespace

llvm::Error hetpar::tools::applyBatchDims(ModuleOp module,
                                          const std::vector<std::string> &specs,
                                          bool training) {
  func::FuncOp fn = modelFunction(module);
  llvm::StringSet<> seen;
  for (const std::string &spec : specs) {
    auto where = "--batch-dim " + spec + ": ";
    auto [name, axisText] = StringRef(spec).rsplit('=');
    int64_t axis = dist::kNoBatchDim;
    bool none = axisText == "none";
    if (name.empty() || (!none && axisText.getAsInteger(10, axis)))
      return error(where + "expected NAME=AXIS or NAME=none, as " +
                   (fn && fn.getNumArguments() ? inputName(fn, 0) : "x") +
                   "=0 (the model's first input, batch in dimension 0)");
    int arg = fn ? findInput(fn, name) : -1;
    if (arg < 0)
      return error(where + "the model has no input '" + name +
                   "' (inputs: " + (fn ? inputList(fn) : "none") + ")");
    if (!seen.insert(name).second)
      return error(where + "input '" + name + "' is given twice");
    if (none) {
      if (llvm::Error err = checkNoBatch(where, arg, training))
        return err;
      fn.setArgAttr(arg, dist::kBatchDimAttrName,
                    IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                                     dist::kNoBatchDim));
      continue;
    }
    auto type = llvm::dyn_cast<RankedTensorType>(fn.getArgument(arg).getType());
    int64_t rank = type ? type.getRank() : 0;
    if (axis < -rank || axis >= rank)
      return error(where + "input '" + name + "' has rank " +
                   llvm::Twine(rank) + ", so AXIS must lie in [" +
                   llvm::Twine(-rank) + ", " + llvm::Twine(rank - 1) + "]");
    if (axis < 0)
      axis += rank;
    if (training && axis != 0)
      return error(where +
                   "training reads its batches along dimension 0 of every "
                   "input (hetpar-run --data); export the model batch-first");
    fn.setArgAttr(
        arg, dist::kBatchDimAttrName,
        IntegerAttr::get(IntegerType::get(module.getContext(), 64), axis));
  }
  return llvm::Error::success();
}

llvm::Error hetpar::tools::checkTrainingBatchDim(ModuleOp module) {
  func::FuncOp fn = modelFunction(module);
  if (!fn)
    return llvm::Error::success();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto bd = fn.getArgAttrOfType<IntegerAttr>(i, dist::kBatchDimAttrName);
        bd && bd.getInt() == dist::kNoBatchDim)
      return noBatchInTraining("--batch-dim " + inputName(fn, i) + "=none: ");
  OpCatalog catalog(fn);
  if (catalog.batch.size == 0 || catalog.batch.seedDim == 0)
    return llvm::Error::success();
  return error("the batch lies in " + describeBatchSeed(fn, catalog.batch) +
               " (a sequence-first export), but training reads its batches "
               "along dimension 0 of every input (hetpar-run --data); export "
               "the model batch-first");
}
