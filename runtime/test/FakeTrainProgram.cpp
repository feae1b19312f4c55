//===- FakeTrainProgram.cpp - A training program by hand, for tests -------===//
//
// What hetpar-compile --mode training would emit for linear regression
// pred = x . w with an mse loss and SGD with momentum (docs/training.md), on
// the CPU: inputs x float32 [2,D] and labels float32 [2], output loss float32
// [] (before the update). One hetpar_run is one optimizer step, in place on
// the weights buffer:
//
//   err_i = x_i . w - labels_i          loss = mean(err_i^2)
//   g = (2/B) sum_i err_i x_i           m = 0.9 m + g
//   w = w - lr m                        hetpar.step += 1
//
// weights.bin (8D + 12 bytes): w float32 [D] (role param) at 0,
// w.momentum_buffer float32 [D] (optimizer) at 4D, hetpar.step int64 [] (step)
// at 8D, lr float32 [] (constant) at 8D + 8. D is FAKE_TRAIN_DIM (2 by
// default). runtime/test/make_fake_train.py writes the matching folder.
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/ProgramABI.h"

#include <cstdlib>
#include <cstring>
#include <string>

#ifndef FAKE_TRAIN_DIM
#define FAKE_TRAIN_DIM 2
#endif

namespace {
struct Context {
  std::string error;
};
constexpr uint64_t kDim = FAKE_TRAIN_DIM, kBatch = 2;
constexpr float kMomentum = 0.9f;
} // namespace

extern "C" {

int hetpar_abi_version(void) { return HETPAR_ABI_VERSION; }
const char *hetpar_backend(void) { return "cpu"; }
uint64_t hetpar_arena_bytes(void) { return 256; }
uint64_t hetpar_weights_bytes(void) { return 8 * kDim + 12; }
int hetpar_num_inputs(void) { return 2; }
int hetpar_num_outputs(void) { return 1; }
uint64_t hetpar_input_bytes(int i) {
  return i == 0 ? kBatch * kDim * 4 : i == 1 ? kBatch * 4 : 0;
}
uint64_t hetpar_output_bytes(int i) { return i == 0 ? 4 : 0; }

void *hetpar_create(char *, size_t) { return new Context(); }
void hetpar_destroy(void *ctx) { delete static_cast<Context *>(ctx); }
void *hetpar_alloc(void *, uint64_t bytes) { return std::malloc(bytes); }
void hetpar_free(void *, void *ptr) { std::free(ptr); }
int hetpar_upload(void *, void *dst, const void *src, uint64_t bytes) {
  std::memcpy(dst, src, bytes);
  return 0;
}
int hetpar_download(void *, void *dst, const void *src, uint64_t bytes) {
  std::memcpy(dst, src, bytes);
  return 0;
}

int hetpar_run(void *ctx, void *arena, void *weights, const void *const *inputs,
               void *const *outputs) {
  (void)ctx;
  auto *base = static_cast<uint8_t *>(weights);
  float *w = reinterpret_cast<float *>(base);
  float *m = reinterpret_cast<float *>(base + 4 * kDim);
  int64_t *step = reinterpret_cast<int64_t *>(base + 8 * kDim);
  float lr;
  std::memcpy(&lr, base + 8 * kDim + 8, 4);
  const float *x = static_cast<const float *>(inputs[0]);
  const float *y = static_cast<const float *>(inputs[1]);
  float *err = static_cast<float *>(arena);
  float loss = 0;
  for (uint64_t i = 0; i < kBatch; ++i) {
    float pred = 0;
    for (uint64_t k = 0; k < kDim; ++k)
      pred += x[i * kDim + k] * w[k];
    err[i] = pred - y[i];
    loss += err[i] * err[i];
  }
  loss /= float(kBatch);
  for (uint64_t k = 0; k < kDim; ++k) {
    float g = 0;
    for (uint64_t i = 0; i < kBatch; ++i)
      g += err[i] * x[i * kDim + k];
    g *= 2.0f / float(kBatch);
    m[k] = kMomentum * m[k] + g;
    w[k] -= lr * m[k];
  }
  *step += 1;
  std::memcpy(outputs[0], &loss, 4);
  return 0;
}

const char *hetpar_error(void *ctx) {
  return static_cast<Context *>(ctx)->error.c_str();
}

} // extern "C"
