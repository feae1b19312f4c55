//===- ONNXOps.cpp - onnx dialect operations
//-------------------------------===//
//
// Custom assembly and the generated op definitions. Shape rules live in
// ShapeInference.cpp, folders in Folding.cpp, FLOP counts in FlopCount.cpp.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include "hetpar/Support/ShapeUtils.h"

using namespace mlir;
using namespace hetpar::onnx;

#include "hetpar/Dialect/ONNX/ONNXInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// ConstantOp: `onnx.Constant {attrs} dense<...> : tensor<...>`; the result type
// is the type of the value.
//===----------------------------------------------------------------------===//

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  ElementsAttr value;
  if (parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseAttribute(value, "value", result.attributes))
    return failure();
  result.addTypes(value.getType());
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p.printOptionalAttrDict((*this)->getAttrs(), /*elidedAttrs=*/{"value"});
  p << ' ';
  p.printAttribute(getValue());
}

//===----------------------------------------------------------------------===//
// Attribute helpers shared by shape rules and folders
//===----------------------------------------------------------------------===//

SmallVector<int64_t> TransposeOp::getPermutation(int64_t rank) {
  if (auto perm = getPerm())
    return SmallVector<int64_t>(perm->begin(), perm->end());
  SmallVector<int64_t> reversed;
  for (int64_t i = rank - 1; i >= 0; --i)
    reversed.push_back(i);
  return reversed;
}

std::pair<int64_t, int64_t> ShapeOp::getDimRange(int64_t rank) {
  auto clampIdx = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  return {clampIdx(getStart()), getEnd() ? clampIdx(*getEnd()) : rank};
}

//===----------------------------------------------------------------------===//
// If (an onnx.Generic with two branches)
//===----------------------------------------------------------------------===//

bool GenericOp::isIf() {
  return getOpType() == "If" &&
         (getDomain().empty() || getDomain() == "ai.onnx") &&
         getNumRegions() == 2 && getRegionNames().size() == 2 &&
         !getInputs().empty();
}

/// The region of an If named `name` (then_branch / else_branch).
static Region *ifBranch(GenericOp op, StringRef name) {
  for (auto [attr, region] : llvm::zip(op.getRegionNames(), op->getRegions()))
    if (llvm::cast<StringAttr>(attr).getValue() == name)
      return &region;
  return nullptr;
}

LogicalResult GenericOp::inferIfResultTypes(SmallVectorImpl<Type> &types,
                                            std::string &reason) {
  Region *thenRegion = ifBranch(*this, "then_branch");
  Region *elseRegion = ifBranch(*this, "else_branch");
  if (!isIf() || !thenRegion || !elseRegion || thenRegion->empty() ||
      elseRegion->empty()) {
    reason = "not an If with then_branch and else_branch";
    return failure();
  }
  auto yielded = [](Region *r) {
    return r->back().getTerminator()->getOperandTypes();
  };
  auto a = yielded(thenRegion), b = yielded(elseRegion);
  if (a.size() != getNumResults() || b.size() != getNumResults()) {
    reason = "the branches yield " + std::to_string(a.size()) + " and " +
             std::to_string(b.size()) + " values for " +
             std::to_string(getNumResults()) + " outputs";
    return failure();
  }
  for (auto [ta, tb] : llvm::zip(a, b)) {
    if (ta == tb) {
      types.push_back(ta);
      continue;
    }
    auto sa = llvm::dyn_cast<TensorType>(ta),
         sb = llvm::dyn_cast<TensorType>(tb);
    if (!sa || !sb || sa.getElementType() != sb.getElementType()) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "the branches yield " << ta << " and " << tb;
      reason = text;
      return failure();
    }
    if (!sa.hasRank() || !sb.hasRank() || sa.getRank() != sb.getRank()) {
      types.push_back(UnrankedTensorType::get(sa.getElementType()));
      continue;
    }
    SmallVector<int64_t> shape;
    for (auto [x, y] : llvm::zip(sa.getShape(), sb.getShape()))
      shape.push_back(x == y ? x : ShapedType::kDynamic);
    types.push_back(RankedTensorType::get(shape, sa.getElementType()));
  }
  return success();
}

LogicalResult GenericOp::inlineConstantIf(RewriterBase &rewriter,
                                          bool allowRefinement) {
  if (!isIf())
    return failure();
  auto cond = readIntElements(getConstantElements(getInputs()[0]));
  if (!cond || cond->size() != 1)
    return failure();
  Region *taken = ifBranch(*this, (*cond)[0] ? "then_branch" : "else_branch");
  if (!taken || !llvm::hasSingleElement(*taken) ||
      taken->front().getNumArguments() != 0)
    return failure();
  Block *block = &taken->front();
  Operation *yield = block->getTerminator();
  if (yield->getNumOperands() != getNumResults())
    return failure();
  for (auto [yielded, result] :
       llvm::zip(yield->getOperandTypes(), getResultTypes()))
    if (allowRefinement ? failed(verifyCompatibleShape(yielded, result))
                        : yielded != result)
      return failure();
  SmallVector<Value> values(yield->getOperands());
  rewriter.inlineBlockBefore(block, *this);
  rewriter.eraseOp(yield);
  rewriter.replaceOp(*this, values);
  return success();
}

namespace {
struct InlineConstantIf : public OpRewritePattern<GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GenericOp op,
                                PatternRewriter &rewriter) const override {
    // Users keep seeing the types they were built for.
    return op.inlineConstantIf(rewriter, /*allowRefinement=*/false);
  }
};
} // namespace

void GenericOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<InlineConstantIf>(context);
}

//===----------------------------------------------------------------------===//
// Names for messages
//===----------------------------------------------------------------------===//

std::string hetpar::onnx::getONNXOpType(Operation *op) {
  if (auto generic = llvm::dyn_cast<GenericOp>(op))
    return generic.getOpType().str();
  StringRef name = op->getName().getStringRef();
  name.consume_front("onnx.");
  return name.str();
}

std::string hetpar::onnx::graphInputName(FunctionOpInterface func, unsigned i) {
  if (auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttrName))
    return name.getValue().str();
  return "input_" + std::to_string(i);
}

std::string hetpar::onnx::graphOutputName(FunctionOpInterface func,
                                          unsigned j) {
  if (auto name = func.getResultAttrOfType<StringAttr>(j, kNameAttrName))
    return name.getValue().str();
  return "output_" + std::to_string(j);
}

std::string hetpar::onnx::getNodeName(Location loc) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = getNodeName(inner); !n.empty())
        return n;
  return "";
}

std::string hetpar::onnx::describeNode(Operation *op) {
  std::string name = getNodeName(op->getLoc());
  if (name.empty())
    return "op " + getONNXOpType(op);
  return "node '" + name + "' (" + getONNXOpType(op) + ")";
}

int64_t hetpar::onnx::im2colElements(Operation *op) {
  if (!llvm::isa<ConvOp, FusedConvOp, ConvGradOp>(op))
    return 0;
  bool grad = llvm::isa<ConvGradOp>(op);
  auto w =
      llvm::dyn_cast<RankedTensorType>(op->getOperand(grad ? 2 : 1).getType());
  auto y = llvm::dyn_cast<RankedTensorType>(
      (grad ? op->getOperand(0) : op->getResult(0)).getType());
  if (!w || !y || !w.hasStaticShape() || !y.hasStaticShape() ||
      w.getRank() < 2 || y.getRank() < 2)
    return 0;
  int64_t elements = w.getDimSize(1);
  for (int64_t d : w.getShape().drop_front(2))
    elements *= d;
  for (int64_t d : y.getShape().drop_front(2))
    elements *= d;
  return elements;
}

#define GET_OP_CLASSES
#include "hetpar/Dialect/ONNX/ONNXOps.cpp.inc"
