//===- npy.cpp - libFuzzer harness: the .npy reader -----------------------===//
//
// Any bytes as a .npy file: the header parser and the data check must return
// a Status (or accept), never crash, read out of bounds or overflow
// (AddressSanitizer, UndefinedBehaviorSanitizer). bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "../../runtime/lib/Internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hetpar::rt::detail::NpyHeader header;
  if (hetpar::rt::detail::parseNpyHeader(data, size, header).isOk())
    (void)hetpar::rt::detail::checkNpyData(header, size);
  return 0;
}
