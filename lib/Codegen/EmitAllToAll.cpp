//===- EmitAllToAll.cpp - dist.all_to_all ---------------------------------===//
//
// dist.all_to_all runs as hp_all_to_all_along (hetpar_device.h): the
// operand's piece for device j is [inOuter, splitSizes[j], inInner], the
// result's piece from device j is [outOuter, concatSizes[j], outInner], and
// a side whose outer extent is above 1 goes through arena staging.
//
//===----------------------------------------------------------------------===//

#include "EmitAllToAll.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace hetpar;
using namespace hetpar::codegen;

AllToAllStaging hetpar::codegen::allToAllStaging(dist::AllToAllOp op) {
  ArrayRef<int64_t> in = op.getInput().getType().getShape();
  ArrayRef<int64_t> out = op.getResult().getType().getShape();
  int64_t s = static_cast<int64_t>(op.getSplitDim());
  int64_t c = static_cast<int64_t>(op.getConcatDim());
  return AllToAllStaging{
      numel(in.take_front(s)),  in[s],  numel(in.drop_front(s + 1)),
      numel(out.take_front(c)), out[c], numel(out.drop_front(c + 1))};
}

std::string hetpar::codegen::emitAllToAllCall(dist::AllToAllOp op,
                                              llvm::StringRef group,
                                              llvm::StringRef n,
                                              const LibraryEmitContext &ctx) {
  AllToAllStaging st = allToAllStaging(op);
  std::string T = ctx.storageType(op.getInput().getType().getElementType());
  ctx.line("static const int64_t splitSizes[] = " + cArray(op.getSplitSizes()) +
           ";");
  ctx.line("static const int64_t concatSizes[] = " +
           cArray(op.getConcatSizes()) + ";");
  std::string base = "((" + T + " *)" + ctx.scratch(op.getOperation()) + ")";
  std::string send = st.sendElements() ? base : "(" + T + " *)0";
  std::string recv =
      st.recvElements()
          ? "(" + base + " + " + std::to_string(st.sendElements()) + ")"
          : "(" + T + " *)0";
  return llvm::formatv("hp_all_to_all_along<{0}>(ctx, {1}, {2}, {3}, {4}, {5}, "
                       "{6}, splitSizes, {7}, {8}, {9}, {10}, concatSizes, "
                       "{11}, {12})",
                       T, group, n, ctx.ptr(op.getInput()), st.inOuter,
                       st.inExtent, st.inInner, ctx.ptr(op.getResult()),
                       st.outOuter, st.outExtent, st.outInner, send, recv);
}
