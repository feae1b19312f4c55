//===- manifest.cpp - libFuzzer harness: the program manifest -------------===//
//
// Any bytes as a program folder's manifest.json: the runtime's checks
// (detail::checkManifestText: devices, libraries, sizes, inputs, outputs, the
// training object) must accept it or return one error, never crash, read out
// of bounds or overflow (AddressSanitizer, UndefinedBehaviorSanitizer).
// Multi-device manifests are read as rank 0 (HETPAR_DEVICE=0).
// bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "../../runtime/lib/Internal.h"

#include <cstdlib>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  setenv("HETPAR_DEVICE", "0", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)hetpar::rt::detail::checkManifestText(data, size);
  return 0;
}
