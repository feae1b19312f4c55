//===- Replay.cpp - Runs a fuzz harness over saved inputs
//------------------===//
//
// The libFuzzer harnesses of bench/fuzz, built without libFuzzer: each
// `hetpar-fuzz-replay-HARNESS` (built with the suite) feeds every file named
// on its command line, and every regular file in a folder named there (not
// its subfolders, as libFuzzer reads a corpus), to LLVMFuzzerTestOneInput
// once, in name order. The suite replays the seed and regression corpora this
// way through the normal build (test/Fuzz/replay.test); coverage-guided
// fuzzing is bench/fuzz/run.sh.
//
// Usage: hetpar-fuzz-replay-HARNESS PATH...
// Prints "replayed N inputs" and exits 0; a file it cannot read is an error
// (exit 1); a harness that crashes ends the process, as under libFuzzer.
//
//===----------------------------------------------------------------------===//
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc,
                                                          char ***argv);

/// libFuzzer's mutator, which a custom mutator may call; replay never
/// mutates, so this is never called.
extern "C" size_t LLVMFuzzerMutate(uint8_t *, size_t size, size_t) {
  return size;
}

namespace {

/// The files `path` names: itself, or a folder's regular files by name.
/// Returns false (with a message) when it names neither.
bool collect(llvm::StringRef path, std::vector<std::string> &files) {
  if (!llvm::sys::fs::is_directory(path)) {
    files.push_back(path.str());
    return true;
  }
  std::vector<std::string> inFolder;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::is_regular_file(it->path()))
      inFolder.push_back(it->path());
  if (ec) {
    llvm::errs() << path << ": cannot list the folder: " << ec.message()
                 << "\n";
    return false;
  }
  std::sort(inFolder.begin(), inFolder.end());
  files.insert(files.end(), inFolder.begin(), inFolder.end());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    if (!collect(argv[i], files))
      return 1;
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      llvm::errs() << file << ": cannot read: " << buffer.getError().message()
                   << "\n";
      return 1;
    }
    llvm::StringRef bytes = (*buffer)->getBuffer();
    // libFuzzer hands each input over in its own heap block, so that
    // AddressSanitizer sees a read past its end.
    std::vector<uint8_t> copy(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(copy.data(), copy.size());
  }
  llvm::outs() << "replayed " << files.size() << " inputs\n";
  return 0;
}
