//===- hetpar_cumsum.h - CumSum ---------------------------------*- C++ -*-===//
//
// CumSum.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_CUMSUM_H
#define HETPAR_DEVICE_CUMSUM_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// CumSum along the middle axis of [outer, len, inner].
template <typename T, typename Acc>
HP_KERNEL(hp_cumsum, int64_t len, int64_t inner, int exclusive, int reverse,
          const T *in, T *out) {
  HP_FOR_W(r, len) {
    int64_t base = (r / inner) * len * inner + r % inner;
    Acc acc = 0;
    for (int64_t s = 0; s < len; ++s) {
      int64_t k = reverse ? len - 1 - s : s;
      Acc x = (Acc)in[base + k * inner];
      if (exclusive) {
        out[base + k * inner] = (T)acc;
        acc += x;
      } else {
        acc += x;
        out[base + k * inner] = (T)acc;
      }
    }
  }
}

#if HP_CUDA
/// hp_cumsum with one warp per row, for rows of at least 32 elements on the
/// GPU: iteration i is lane i % 32 of row i / 32; the warp takes the row 32
/// elements at a time (in the scan's order, from the end with `reverse`),
/// scans them with shuffles (Hillis-Steele) and adds the running total of
/// the chunks before. A thread per row ran the whole row alone (a position
/// ids CumSum over 2048 tokens: 2048 dependent additions). The sums are
/// grouped otherwise than the sequential loop's, so floating results may
/// differ from it in the last bits.
template <typename T, typename Acc>
HP_KERNEL(hp_cumsum_warp, int64_t len, int64_t inner, int exclusive,
          int reverse, const T *in, T *out) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc carry = 0;
    for (int64_t c = 0; c < len; c += 32) {
      const int64_t s = c + lane, k = reverse ? len - 1 - s : s;
      const Acc x = s < len ? (Acc)in[base + k * inner] : Acc(0);
      Acc scan = x;
      for (int o = 1; o < 32; o <<= 1) {
        const Acc up = __shfl_up_sync(0xffffffffu, scan, o);
        if (lane >= o)
          scan += up;
      }
      Acc before = __shfl_up_sync(0xffffffffu, scan, 1);
      if (lane == 0)
        before = 0;
      if (s < len)
        out[base + k * inner] = (T)(carry + (exclusive ? before : scan));
      carry += __shfl_sync(0xffffffffu, scan, 31);
    }
  }
}
#endif

/// CumSum along the middle axis of [outer, len, inner]: hp_cumsum, or on the
/// GPU hp_cumsum_warp for rows of at least 32 elements.
template <typename T, typename Acc>
static void hp_cumsum_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                             int64_t inner, int exclusive, int reverse,
                             const T *in, T *out) {
#if HP_CUDA
  if (len >= 32) {
    hp_launch(ctx, hp_cumsum_warp<T, Acc>, rows * 32, len, inner, exclusive,
              reverse, in, out);
    return;
  }
#endif
  hp_launch(ctx, hp_cumsum<T, Acc>, rows, len, inner, exclusive, reverse, in,
            out);
}

#endif // HETPAR_DEVICE_CUMSUM_H
