//===- onnx.cpp - libFuzzer harness: the ONNX importer --------------------===//
//
// Any bytes as an ONNX model (`hetpar-compile MODEL.onnx`): the importer and
// the static-shape pipeline (shape inference, folding, canonicalization, the
// static check) must accept it or report errors, never crash, hang, read out
// of bounds or overflow (AddressSanitizer, UndefinedBehaviorSanitizer). The
// seeds are the test models and the ONNX backend test suite's.
// bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "ImportHarness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)hetpar::fuzz::importToStatic(
      llvm::StringRef(reinterpret_cast<const char *>(data), size));
  return 0;
}
