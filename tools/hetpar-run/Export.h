//===- Export.h - hetpar-run --export-onnx ---------------------*- C++ -*-===//
//
// The trained model as ONNX (docs/training.md, "Export"): the trained values
// of the parameters and buffers, from the weights of a device that holds
// them all whole, or joined from the devices' checkpoint files.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TOOLS_HETPAR_RUN_EXPORT_H
#define HETPAR_TOOLS_HETPAR_RUN_EXPORT_H

#include "hetpar/runtime/Runtime.h"

#include <map>
#include <string>

namespace hetpar::run {

/// Whole trained tensors (role param or buffer) by name.
using TrainedTensors = std::map<std::string, rt::HostTensor>;

/// Writes `file`: the source model copy `model` (relative to `outDir`) with
/// the initializer of each of `trained` replaced by its values (each must be
/// a float32 initializer of the same shape); other initializers are kept.
/// Initializers of 1 MiB or more go to FILE.data (ONNX external data). Both
/// files are written through temporaries and renamed.
rt::Status writeTrainedONNX(const std::string &outDir, const std::string &model,
                            const TrainedTensors &trained,
                            const std::string &file);

/// Whether exporting the program needs its devices' checkpoint files joined:
/// some device does not hold every parameter and buffer of the plan whole
/// (pipeline stages, tensor-parallel shards). A data-parallel plan, with or
/// without ZeRO-1, exports from the reporting device's own weights.
bool exportJoinsCheckpoint(const rt::ProgramWeights &weights);

/// Exports from the weights of `program`'s device, which holds every
/// parameter and buffer whole.
rt::Status exportONNX(rt::Program &program, const std::string &file);

/// Exports the checkpoint in `checkpointDir` of the program in `outDir`
/// (written by it or by another plan of the same model): its files of the
/// newest step joined, every parameter and buffer of the program cut whole.
/// Errors: a parameter the files do not cover (a missing file), and those of
/// rt::joinCheckpoint and writeTrainedONNX.
rt::Status exportCheckpoint(const std::string &outDir,
                            const std::string &checkpointDir,
                            const std::string &file);

} // namespace hetpar::run

#endif // HETPAR_TOOLS_HETPAR_RUN_EXPORT_H
