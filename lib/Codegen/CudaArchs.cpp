//===- CudaArchs.cpp - the GPU architectures of a CUDA build --------------===//
//
// A mixed cluster's device programs each get their own GPU's architecture:
// a T4's program is built for sm_75, an H100's for sm_90. One list for all
// (the former default, sm_80 and sm_90) left a T4 with a library it could
// not load ("no kernel image is available").
//
//===----------------------------------------------------------------------===//

#include "CudaArchs.h"

#include "hetpar/Cluster/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <map>
#include <mutex>
#include <set>

namespace hetpar::codegen {

std::vector<int> cudaArchsForKinds(llvm::ArrayRef<std::string> kinds,
                                   const CodegenOptions &opts) {
  if (opts.cudaArchsGiven) {
    std::set<int> given(opts.cudaArchs.begin(), opts.cudaArchs.end());
    return {given.begin(), given.end()};
  }
  std::set<int> archs;
  bool fallback = kinds.empty();
  for (const std::string &k : kinds) {
    const DeviceKind *kind = lookupDeviceKind(k);
    if (kind && kind->computeCapability > 0)
      archs.insert(kind->computeCapability);
    else
      fallback = true;
  }
  if (fallback)
    archs.insert(opts.cudaArchs.begin(), opts.cudaArchs.end());
  return {archs.begin(), archs.end()};
}

/// Runs `nvcc --list-gpu-code` and reads its sm_XX lines.
static std::vector<int> askNvcc(const std::string &nvcc) {
  llvm::SmallString<128> out;
  if (llvm::sys::fs::createTemporaryFile("hetpar-nvcc-archs", "txt", out))
    return {};
  std::string file(out);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, file,
                                                llvm::StringRef("")};
  int rc = llvm::sys::ExecuteAndWait(nvcc, {nvcc, "--list-gpu-code"},
                                     std::nullopt, redirects);
  auto text = llvm::MemoryBuffer::getFile(file);
  llvm::sys::fs::remove(file);
  if (rc != 0 || !text)
    return {};
  std::set<int> archs;
  llvm::SmallVector<llvm::StringRef> lines;
  (*text)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    int v = 0;
    line = line.trim();
    if (line.consume_front("sm_") && !line.getAsInteger(10, v) && v > 0)
      archs.insert(v);
  }
  return {archs.begin(), archs.end()};
}

std::vector<int> nvccSupportedArchs(const std::string &nvcc) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<int>> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(nvcc);
  if (it == known.end())
    it = known.emplace(nvcc, askNvcc(nvcc)).first;
  return it->second;
}

std::string kindsOfArch(llvm::ArrayRef<std::string> kinds, int arch) {
  std::set<std::string> names;
  for (const std::string &k : kinds)
    if (const DeviceKind *kind = lookupDeviceKind(k);
        kind && kind->computeCapability == arch)
      names.insert(kind->name);
  if (names.empty())
    return "the requested";
  return llvm::join(names, ", ");
}

} // namespace hetpar::codegen
