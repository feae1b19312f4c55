//===- cluster.cpp - libFuzzer harness: the cluster YAML parser -----------===//
//
// Any bytes as a cluster description (`hetpar-compile --cluster C.yaml`):
// parseCluster must return a cluster or one error, never crash, read out of
// bounds or overflow (AddressSanitizer, UndefinedBehaviorSanitizer). A
// cluster it accepts is printed back, so that every field it stored is read.
// bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Cluster/Cluster.h"

#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto cluster = hetpar::parseCluster(text, "fuzz.yaml");
  if (!cluster) {
    llvm::consumeError(cluster.takeError());
    return 0;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  hetpar::printCluster(*cluster, os);
  return 0;
}
