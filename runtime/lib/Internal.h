//===- Internal.h - Helpers shared by the runtime's sources -----*- C++ -*-===//
#ifndef HETPAR_RUNTIME_LIB_INTERNAL_H
#define HETPAR_RUNTIME_LIB_INTERNAL_H

#include "hetpar/runtime/Runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hetpar::rt::detail {

/// Reads the whole file at `path` into `out`. Errors: "cannot read 'PATH':
/// REASON" (missing file, a directory, I/O error).
Status readFile(const std::string &path, std::vector<uint8_t> &out);

/// Reads exactly `bytes` bytes from the start of the file at `path` into
/// `dst`. Errors: "cannot read 'PATH': REASON", also when the file is shorter.
Status readFileInto(const std::string &path, void *dst, uint64_t bytes);

} // namespace hetpar::rt::detail

#endif // HETPAR_RUNTIME_LIB_INTERNAL_H
