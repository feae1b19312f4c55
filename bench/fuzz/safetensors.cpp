//===- safetensors.cpp - libFuzzer harness: the checkpoint reader ---------===//
//
// Any bytes as a safetensors file (a checkpoint): the parser must return a
// Status (or the tensors), never crash, read out of bounds or overflow
// (AddressSanitizer, UndefinedBehaviorSanitizer). bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "../../runtime/lib/Internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hetpar::rt::SafetensorsFile file;
  (void)hetpar::rt::detail::parseSafetensors("fuzz", data, size, file);
  return 0;
}
