//===- FakeProgram.cpp - ProgramABI.h by hand, for the runtime's tests ----===//
//
// What hetpar-compile would emit for `y = x + bias` with x, y float32 [2,3] and
// a weight bias float32 [3] (12 bytes of weights.bin), on the CPU: the arena
// (256 bytes) holds x + bias before it is copied to y. An input whose first
// element is -999 makes hetpar_run fail.
//
// Variants, by compile definition: FAKE_ABI_VERSION (a wrong ABI version),
// FAKE_BACKEND and FAKE_CREATE_FAILS (a "cuda" program that finds no device),
// FAKE_ARENA_BYTES=0 (no arena: hetpar_alloc(0) returns NULL, the runtime must
// still pass a non-null pointer), FAKE_NO_RUN (no hetpar_run symbol).
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/ProgramABI.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef FAKE_ABI_VERSION
#define FAKE_ABI_VERSION HETPAR_ABI_VERSION
#endif
#ifndef FAKE_ARENA_BYTES
#define FAKE_ARENA_BYTES 256
#endif
#ifndef FAKE_BACKEND
#define FAKE_BACKEND "cpu"
#endif

namespace {
struct Context {
  std::string error;
};
constexpr int kRows = 2, kCols = 3;
} // namespace

extern "C" {

int hetpar_abi_version(void) { return FAKE_ABI_VERSION; }
const char *hetpar_backend(void) { return FAKE_BACKEND; }
uint64_t hetpar_arena_bytes(void) { return FAKE_ARENA_BYTES; }
uint64_t hetpar_weights_bytes(void) { return kCols * sizeof(float); }
int hetpar_num_inputs(void) { return 1; }
int hetpar_num_outputs(void) { return 1; }
uint64_t hetpar_input_bytes(int i) {
  return i == 0 ? kRows * kCols * sizeof(float) : 0;
}
uint64_t hetpar_output_bytes(int i) {
  return i == 0 ? kRows * kCols * sizeof(float) : 0;
}

void *hetpar_create(char *err, size_t errlen) {
#ifdef FAKE_CREATE_FAILS
  std::snprintf(err, errlen, "no CUDA device");
  return nullptr;
#else
  (void)err;
  (void)errlen;
  return new Context();
#endif
}

void hetpar_destroy(void *ctx) { delete static_cast<Context *>(ctx); }

void *hetpar_alloc(void *ctx, uint64_t bytes) {
  auto *c = static_cast<Context *>(ctx);
  if (bytes == 0) {
    // Allowed by the ABI; the runtime must cope.
    c->error = "zero-byte allocation";
    return nullptr;
  }
  void *p = std::malloc(bytes);
  if (!p)
    c->error = "out of host memory";
  return p;
}

void hetpar_free(void *ctx, void *ptr) {
  (void)ctx;
  std::free(ptr);
}

int hetpar_upload(void *ctx, void *dst, const void *src, uint64_t bytes) {
  (void)ctx;
  std::memcpy(dst, src, bytes);
  return 0;
}

int hetpar_download(void *ctx, void *dst, const void *src, uint64_t bytes) {
  (void)ctx;
  std::memcpy(dst, src, bytes);
  return 0;
}

#ifndef FAKE_NO_RUN
int hetpar_run(void *ctx, void *arena, void *weights,
               const void *const *inputs, void *const *outputs) {
  auto *c = static_cast<Context *>(ctx);
  if (!arena || !weights || !inputs || !inputs[0] || !outputs || !outputs[0]) {
    c->error = "a null buffer";
    return 1;
  }
  const float *x = static_cast<const float *>(inputs[0]);
  const float *bias = static_cast<const float *>(weights);
  float *tmp = FAKE_ARENA_BYTES ? static_cast<float *>(arena)
                                : static_cast<float *>(outputs[0]);
  if (x[0] == -999.0f) {
    c->error = "the fake program was asked to fail";
    return 1;
  }
  for (int r = 0; r < kRows; ++r)
    for (int k = 0; k < kCols; ++k)
      tmp[r * kCols + k] = x[r * kCols + k] + bias[k];
  std::memcpy(outputs[0], tmp, kRows * kCols * sizeof(float));
  return 0;
}
#endif

const char *hetpar_error(void *ctx) {
  return static_cast<Context *>(ctx)->error.c_str();
}

} // extern "C"
