//===- CudaArchs.h - the GPU architectures of a CUDA build -------*- C++
//-*-===//
//
// Which sm_XX a device program's CUDA library is built for: its devices'
// kinds' compute capabilities, and which of them the nvcc at hand can build.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_CODEGEN_CUDAARCHS_H
#define HETPAR_LIB_CODEGEN_CUDAARCHS_H

#include "hetpar/Codegen/Codegen.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace hetpar::codegen {

/// The architectures (compute capability x 10, ascending, no repeats) of a
/// program that runs on devices of `kinds` (the `dist.mesh`'s kind names):
/// --cuda-arch's when given (`opts.cudaArchsGiven`), else each kind's
/// compute capability from the device catalogue, and `opts.cudaArchs` for
/// a kind the catalogue has none for (no kinds, "unknown", the CPU kind).
std::vector<int> cudaArchsForKinds(llvm::ArrayRef<std::string> kinds,
                                   const CodegenOptions &opts);

/// The architectures `nvcc` can build code for (`nvcc --list-gpu-code`:
/// CUDA 13 lists 75 and up), or empty when nvcc cannot say (then none is
/// left out). Asked once per nvcc path.
std::vector<int> nvccSupportedArchs(const std::string &nvcc);

/// The catalogue's kinds among `kinds` whose compute capability is `arch`,
/// for messages ("V100-SXM2-32GB"); "the requested" when none is.
std::string kindsOfArch(llvm::ArrayRef<std::string> kinds, int arch);

} // namespace hetpar::codegen

#endif // HETPAR_LIB_CODEGEN_CUDAARCHS_H
