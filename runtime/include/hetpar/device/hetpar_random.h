//===- hetpar_random.h - Philox4x32-10 and Dropout --------------*- C++ -*-===//
//
// Counter-based random numbers (Philox4x32-10) and Dropout.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_RANDOM_H
#define HETPAR_DEVICE_RANDOM_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Random numbers: Philox4x32-10 and Dropout
//===----------------------------------------------------------------------===//

/// Four 32-bit words of a counter-based generator's output.
struct hp_u32x4 {
  uint32_t v[4];
};

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
/// easy as 1, 2, 3", SC 2011; Random123's philox4x32 with 10 rounds, the
/// generator of cuRAND's curand_Philox4x32_10 and PyTorch's CUDA dropout):
/// the 4 words for a 128-bit counter `ctr` and a 64-bit key (k0, k1). A pure
/// function of its arguments, compiled from this one definition for the CPU
/// and the GPU, so both backends draw the same numbers. Known answers
/// (Random123's tests/kat_vectors): counter 0, key 0 gives 6627e8d5 e169c58d
/// bc57ac4c 9b00dbd8.
HP_HD hp_u32x4 hp_philox4x32_10(hp_u32x4 ctr, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round) { // the Weyl key schedule, before rounds 2..10
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = (uint64_t)0xD2511F53u * ctr.v[0];
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * ctr.v[2];
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    hp_u32x4 next = {{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    ctr = next;
  }
  return ctr;
}

/// The random words of Dropout: element i of a tensor takes word i % 4 of
/// hp_philox4x32_10(counter {g, g >> 32, step, step >> 32}, key {seed,
/// seed >> 32}) with g = i / 4, so the mask depends on the seed, the training
/// step and the element index only.
HP_HD hp_u32x4 hp_dropout_words(uint64_t seed, uint64_t step, uint64_t g) {
  hp_u32x4 ctr = {{(uint32_t)g, (uint32_t)(g >> 32), (uint32_t)step,
                   (uint32_t)(step >> 32)}};
  return hp_philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/// The drop threshold of a ratio: an element is dropped when its word is
/// below ratio * 2^32 (exact in float, truncated), so it is dropped with
/// probability floor(ratio * 2^32) / 2^32; ratio <= 0 drops nothing and
/// ratio >= 1 everything.
HP_HD uint64_t hp_dropout_threshold(float ratio) {
  if (!(ratio > 0.0f))
    return 0;
  if (ratio >= 1.0f)
    return (uint64_t)1 << 32;
  return (uint64_t)(ratio * 4294967296.0f);
}

/// Dropout of n elements in training mode, one iteration per group of 4
/// elements (one Philox call): kept elements are y = x / (1 - ratio), dropped
/// ones 0, and mask (when not null) is true where kept. `step` (int64 device
/// scalar; null for 0) is the training step, `ratio` a device scalar (null
/// for ONNX's default 0.5) and `training` a device bool (null for true;
/// false makes y = x and the mask all true). The division is in Acc (float,
/// or double for double data), rounded once. The n elements are elements
/// [offset, offset + n) of a larger tensor (a data-parallel replica's rows;
/// 0 otherwise): element i takes the word of element offset + i, and the
/// iterations are the groups of 4 that cover them, from group offset / 4.
template <typename T, typename R, typename Acc>
HP_KERNEL(hp_dropout, int64_t n, int64_t offset, uint64_t seed,
          const int64_t *step, const R *ratio, const bool *training, const T *x,
          T *y, bool *mask) {
  HP_FOR(t) {
    const int64_t g = offset / 4 + (int64_t)t;
    const bool on = training ? *training : true;
    const float r = on ? (ratio ? (float)*ratio : 0.5f) : 0.0f;
    const uint64_t threshold = hp_dropout_threshold(r);
    const Acc keep = (Acc)(1.0f - r);
    const hp_u32x4 w =
        hp_dropout_words(seed, step ? (uint64_t)*step : 0, (uint64_t)g);
    for (int k = 0; k < 4; ++k) {
      const int64_t i = 4 * g + k - offset;
      if (i < 0)
        continue;
      if (i >= n)
        break;
      const bool kept = (uint64_t)w.v[k] >= threshold;
      y[i] = !on ? x[i] : (kept ? (T)((Acc)x[i] / keep) : (T)Acc(0));
      if (mask)
        mask[i] = kept;
    }
  }
}

#endif // HETPAR_DEVICE_RANDOM_H
