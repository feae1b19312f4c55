//===- profile.cpp - libFuzzer harness: the profile reader ----------------===//
//
// Any bytes as a profile (`hetpar-compile --profile P.json`, written by
// hetpar-profile): parseProfile must apply it or return one error, never
// crash, read out of bounds or overflow (AddressSanitizer,
// UndefinedBehaviorSanitizer). An accepted profile's kernel curves are then
// read as the cost model reads them. bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "hetpar/CostModel/CostModel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  hetpar::CostParams params = hetpar::CostParams::defaults();
  if (auto err = hetpar::parseProfile(text, "fuzz.json", params)) {
    llvm::consumeError(std::move(err));
    return 0;
  }
  for (auto &kind : params.measured)
    for (auto &curve : kind.second.curves)
      if (!curve.empty())
        (void)hetpar::interpolateKernelTime(curve, 1e9);
  return 0;
}
