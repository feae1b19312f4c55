//===- Manifest.h - Reading a program folder's manifest -------*- C++ -*-===//
//
// What Program::load and the checkpoint and export tools read from a
// hetpar-compile output folder before any library is opened: manifest.json
// (the device of this process, its inputs, outputs, training object) and a
// weights index (weights.json: each tensor's place, role and CRC-32).
// Errors travel as LoadError inside the runtime; public functions turn them
// into a Status naming the file and field at fault.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_RUNTIME_LIB_MANIFEST_H
#define HETPAR_RUNTIME_LIB_MANIFEST_H

#include "hetpar/runtime/Runtime.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetpar::rt::detail {

using json = nlohmann::json;

/// Load errors travel as this exception inside the runtime (Manifest.cpp,
/// Program.cpp) only; the public functions turn it into a Status.
struct LoadError {
  std::string message;
  /// The backend is unavailable here (the library does not load, or
  /// hetpar_create fails): "auto" then falls back to the CPU.
  bool unavailable = false;
};

/// Throws LoadError{message, unavailable}.
[[noreturn]] void fail(std::string message, bool unavailable = false);

/// `name` under `dir` (a `name` starting with '/' as it is).
std::string joinPath(const std::string &dir, const std::string &name);

/// Bytes of tensor `t` (0 when its shape is invalid).
uint64_t tensorBytes(const TensorInfo &t);

/// Reads and parses the JSON file at `path`; fails naming it.
json parseJsonFile(const std::string &path);

/// A tensor of a weights index with the CRC-32 of its bytes.
struct IndexedTensor {
  WeightTensor tensor;
  uint32_t crc = 0;
};

/// Checks a weights index (`index`, read from `indexPath`) against the
/// manifest entry `device`, whose data file `weightsFile` (at `binPath`)
/// holds `weightsBytes` bytes: the file it names, its size, and each
/// tensor's size, bounds and role. Checksums are checkWeightsCrc's.
std::vector<IndexedTensor>
parseWeightsIndex(const json &index, const std::string &indexPath,
                  const std::string &binPath, const std::string &weightsFile,
                  uint64_t weightsBytes, const std::string &device);

/// Fails naming the first tensor whose bytes in `data` (the weights file at
/// `binPath`, bounds checked by parseWeightsIndex) do not match its CRC-32.
void checkWeightsCrc(const std::vector<IndexedTensor> &tensors,
                     const uint8_t *data, const std::string &binPath);

/// What the manifest says about the one device we run.
struct DeviceManifest {
  size_t numDevices = 1;
  int64_t id = 0;
  int64_t microbatches = 1;
  int64_t outputDevice = -1;
  size_t index = 0; // in the manifest's devices
  std::vector<DeviceInfo> devices;
  std::string cpuLibrary, cudaLibrary; // empty when absent
  uint64_t arenaBytes = 0, weightsBytes = 0;
  std::string weights, weightsIndex;
  std::vector<TensorInfo> inputs, outputs;
  /// The manifest's "graph_inputs" (a whole step's), empty when absent.
  std::vector<TensorInfo> graphInputs;
  /// Per entry of `inputs`, its index in graphInputs (when present).
  std::vector<size_t> graphIndex;
  TrainingInfo training;
};

/// The rank a launcher gave this process (HETPAR_DEVICE,
/// OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID), if any.
std::optional<int64_t> launcherRank();

/// Reads and checks manifest.json. With `countOnly`, stops after the device
/// count (a multi-device program outside a launcher is then no error).
DeviceManifest parseManifest(const std::string &outDir, bool countOnly = false,
                             ProgramPart part = ProgramPart::Step);

} // namespace hetpar::rt::detail

#endif // HETPAR_RUNTIME_LIB_MANIFEST_H
