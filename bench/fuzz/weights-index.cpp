//===- weights-index.cpp - libFuzzer harness: weights.json ----------------===//
//
// Any bytes as a program's weights index, read against a 64-byte weights.bin
// of the bytes 0..63: the runtime's checks (detail::checkWeightsIndexText:
// the file it names, its size, each tensor's shape, bytes, bounds, role and
// CRC-32) must accept it or return one error, never crash, read out of
// bounds or overflow (AddressSanitizer, UndefinedBehaviorSanitizer).
// bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "../../runtime/lib/Internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t weights[64];
  for (int i = 0; i < 64; ++i)
    weights[i] = uint8_t(i);
  (void)hetpar::rt::detail::checkWeightsIndexText(data, size, weights,
                                                  sizeof(weights));
  return 0;
}
