//===- Internal.h - Helpers shared by the runtime's sources -----*- C++ -*-===//
#ifndef HETPAR_RUNTIME_LIB_INTERNAL_H
#define HETPAR_RUNTIME_LIB_INTERNAL_H

#include "hetpar/runtime/Runtime.h"
#include "hetpar/runtime/Training.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hetpar::rt::detail {

/// Reads the whole file at `path` into `out`. Errors: "cannot read 'PATH':
/// REASON" (missing file, a directory, I/O error).
Status readFile(const std::string &path, std::vector<uint8_t> &out);

/// Reads exactly `bytes` bytes from the start of the file at `path` into
/// `dst`. Errors: "cannot read 'PATH': REASON", also when the file is shorter.
Status readFileInto(const std::string &path, void *dst, uint64_t bytes);

/// The header of a NumPy .npy file: the element type, the shape and where the
/// data starts.
struct NpyHeader {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  size_t dataOffset = 0;  // bytes from the start of the file
  uint64_t dataBytes = 0; // elements * dtypeSize(dtype)
};

/// Parses the header at the start of `bytes` (`size` bytes of the file, at
/// least the header; the data need not be there). Errors (without the file
/// name): bad magic, unsupported version, malformed header, fortran_order,
/// unsupported or big-endian descr, a shape too large for memory.
Status parseNpyHeader(const uint8_t *bytes, size_t size, NpyHeader &out);

/// Errors with "truncated data: ..." unless a file of `fileBytes` bytes holds
/// all of `header`'s data.
Status checkNpyData(const NpyHeader &header, uint64_t fileBytes);

/// Parses the bytes of a safetensors file (readSafetensors without the
/// read; `name` goes into the messages). Never throws: a JSON or allocation
/// failure is an error Status. The fuzzing entry point (bench/fuzz).
Status parseSafetensors(const std::string &name, const uint8_t *bytes,
                        size_t size, SafetensorsFile &out);

/// Checks the text of a manifest.json as hetpar-run reads it (the device of
/// the launcher's rank, or device 0, and the evaluation entry of a training
/// program), without opening any file it names. Never throws. The fuzzing
/// entry point (bench/fuzz/manifest.cpp).
Status checkManifestText(const uint8_t *bytes, size_t size);

/// Checks the text of a weights.json against a weights.bin of `weightsBytes`
/// bytes at `weights`: fields, sizes, bounds, roles and CRC-32s. Never
/// throws. The fuzzing entry point (bench/fuzz/weights-index.cpp).
Status checkWeightsIndexText(const uint8_t *text, size_t size,
                             const uint8_t *weights, uint64_t weightsBytes);

/// The string values of the `__metadata__` of the safetensors file at
/// `path`, from its header only; empty when the file or header cannot be
/// read (the caller's reading of the whole file names what is wrong).
std::map<std::string, std::string> headerMetadata(const std::string &path);

/// The checkpoint files of `dir` (checkpoint*.safetensors), sorted.
std::vector<std::string> checkpointFiles(const std::string &dir);

} // namespace hetpar::rt::detail

#endif // HETPAR_RUNTIME_LIB_INTERNAL_H
