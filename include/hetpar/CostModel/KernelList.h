//===- KernelList.h - the kernels of a model, for calibration -----*- C++
//-*-===//
//
// Lists the kernels a static function runs, one line per op, in a form that
// hetpar-profile can run without MLIR (on a GPU machine that has only the CUDA
// toolkit), each with the time the cost model predicts for it on one device.
// Comparing the two (scripts/compare-kernels.py) gives the cost model's error.
//
// Format (docs/cost-model.md), fields separated by one space, the op's name
// last:
//   gemm M N K BATCH ELEMENT_BYTES PREDICTED_S NAME
//   elementwise N ELEMENT_BYTES INPUTS N_1 .. N_INPUTS PREDICTED_S NAME
//   reduce ROWS COLS ELEMENT_BYTES PREDICTED_S NAME
//   softmax ROWS COLS ELEMENT_BYTES PREDICTED_S NAME
//   layernorm ROWS COLS ELEMENT_BYTES PREDICTED_S NAME
//   copy BYTES PREDICTED_S NAME
// and "# ..." lines for ops that have no runnable equivalent (skipped).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_COSTMODEL_KERNELLIST_H
#define HETPAR_COSTMODEL_KERNELLIST_H

#include "hetpar/CostModel/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

namespace hetpar {

/// Writes the kernel list of `func` with the times `model` predicts on
/// `device`. Ops without kernels (views, constants) are left out.
void writeKernelList(mlir::func::FuncOp func, const CostModel &model,
                     const Device &device, llvm::raw_ostream &os);

} // namespace hetpar

#endif // HETPAR_COSTMODEL_KERNELLIST_H
