//===- plan.cpp - libFuzzer harness: the plan reader ----------------------===//
//
// Any bytes as a plan file (`hetpar-compile --plan plan.json`): parsePlan
// must return a plan or one error, never crash, read out of bounds or
// overflow (AddressSanitizer, UndefinedBehaviorSanitizer). A plan it accepts
// is written back as JSON, so that every field it stored is read.
// bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "hetpar/Plan/Plan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto plan = hetpar::parsePlan(text, "fuzz.json");
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return 0;
  }
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(hetpar::planToJSON(*plan));
  return 0;
}
