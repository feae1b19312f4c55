//===- hetpar_conv.h - convolution ------------------------------*- C++ -*-===//
//
// Convolution: direct, blocked, channel-vectorized and im2col paths.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_CONV_H
#define HETPAR_DEVICE_CONV_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Two-dimensional convolution: direct where im2col plus GEMM loses
// (depthwise), im2col plus GEMM otherwise.
//===----------------------------------------------------------------------===//

// hp_conv2d_shape, and which convolutions get packed weights:
// hetpar_packed.h (shared with the code generator).

/// What a convolution does to each output element after its sum (the
/// epilogue of onnx.Conv and onnx.FusedConv, as ONNX Runtime's FusedConv):
/// y = act(sum + bias[m] + z[i]) for output channel m and element i of y.
/// `bias` ([M], one per output channel) and `z` (shaped as y: a residual
/// input) are optional (null); `act` is HP_ACT_NONE, HP_ACT_RELU (v < 0 ? 0
/// : v, NaN stays NaN as in the unfused Relu) or HP_ACT_CLIP (to [lo, hi],
/// as the unfused Clip's hp_max/hp_min). The sum, the bias and z add in that
/// order, as the unfused Conv (bias broadcast, then the products added) and
/// Add did, so float32 results are bitwise those of the unfused graph.
enum { HP_ACT_NONE = 0, HP_ACT_RELU = 1, HP_ACT_CLIP = 2 };
template <typename T> struct hp_conv_epilogue {
  const T *bias;
  const T *z;
  int act;
  float lo, hi;
};

/// Element i (output channel m) of a convolution's result from its sum v.
template <typename T, typename Acc>
HP_HD T hp_conv_finish(const hp_conv_epilogue<T> &e, Acc v, int64_t m,
                       int64_t i) {
  if (e.bias)
    v = (Acc)e.bias[m] + v;
  if (e.z)
    v = v + (Acc)e.z[i];
  if (e.act == HP_ACT_RELU)
    v = v < Acc(0) ? Acc(0) : v;
  else if (e.act == HP_ACT_CLIP)
    v = hp_min<Acc>(hp_max<Acc>(v, (Acc)e.lo), (Acc)e.hi);
  return (T)v;
}

/// Whether the epilogue changes anything (else a convolution just stores
/// its sums).
template <typename T>
HP_HD bool hp_conv_epilogue_any(const hp_conv_epilogue<T> &e) {
  return e.bias || e.z || e.act != HP_ACT_NONE;
}

/// The epilogue over y [N, M, P] (P elements per output channel), in place:
/// after the GEMMs of the whole-image path and of N-D convolutions.
template <typename T, typename Acc>
HP_KERNEL(hp_conv_epilogue_rows, hp_conv_epilogue<T> e, int64_t M, int64_t P,
          T *y) {
  HP_FOR(i) { y[i] = hp_conv_finish<T, Acc>(e, (Acc)y[i], i / P % M, i); }
}

/// Output channels and output columns of one iteration of
/// hp_conv2d_direct_rows: 8 x 64 accumulators (2 KiB of float) stay in L1.
#define HP_CONV_MB 8
#define HP_CONV_OWT 64

/// Direct 2-D convolution on the CPU. One iteration computes HP_CONV_MB
/// output channels of one group over up to HP_CONV_OWT columns of one output
/// row: for each input channel, kernel row and kernel column, every channel's
/// weight times a run of the input row (a vector loop; stride 1 and 2 read
/// with constant steps). No im2col matrix is written, and the group loop is
/// the task index, so depthwise and grouped convolutions copy nothing. The
/// epilogue finishes each output.
template <typename T, typename Acc>
HP_KERNEL(hp_conv2d_direct_rows, hp_conv2d_shape s, hp_conv_epilogue<T> epi,
          const T *x, const T *w, T *y) {
  const int64_t mBlocks = (s.Mg + HP_CONV_MB - 1) / HP_CONV_MB;
  const int64_t tiles = (s.OW + HP_CONV_OWT - 1) / HP_CONV_OWT;
  HP_FOR_W(task, HP_CONV_MB * HP_CONV_OWT * s.Cg * s.kH * s.kW) {
    int64_t r = task;
    const int64_t tile = r % tiles;
    r /= tiles;
    const int64_t oh = r % s.OH;
    r /= s.OH;
    const int64_t m0 = (r % mBlocks) * HP_CONV_MB;
    const int64_t ng = r / mBlocks; // n * G + g
    const int64_t g = ng % s.G;
    const int64_t mCount = s.Mg - m0 < HP_CONV_MB ? s.Mg - m0 : HP_CONV_MB;
    const int64_t ow0 = tile * HP_CONV_OWT;
    const int64_t cols = s.OW - ow0 < HP_CONV_OWT ? s.OW - ow0 : HP_CONV_OWT;
    Acc acc[HP_CONV_MB][HP_CONV_OWT];
    const int64_t yOff = ((ng * s.Mg + m0) * s.OH + oh) * s.OW + ow0;
    for (int64_t m = 0; m < mCount; ++m)
      for (int64_t ow = 0; ow < cols; ++ow)
        acc[m][ow] = Acc(0);
    for (int64_t c = 0; c < s.Cg; ++c) {
      const T *xPlane = x + (ng * s.Cg + c) * s.H * s.W;
      const T *wc = w + ((g * s.Mg + m0) * s.Cg + c) * s.kH * s.kW;
      for (int64_t kh = 0; kh < s.kH; ++kh) {
        const int64_t ih = oh * s.sH - s.pH + kh * s.dH;
        if (ih < 0 || ih >= s.H)
          continue;
        const T *xRow = xPlane + ih * s.W;
        for (int64_t kw = 0; kw < s.kW; ++kw) {
          // Column ow reads xRow[start + ow * sW]; [lo, hi) stay inside.
          const int64_t start = ow0 * s.sW - s.pW + kw * s.dW;
          int64_t lo = start >= 0 ? 0 : (s.sW - 1 - start) / s.sW;
          int64_t hi = start >= s.W ? 0 : (s.W - start + s.sW - 1) / s.sW;
          hi = hi < cols ? hi : cols;
          if (lo >= hi)
            continue;
          const T *in = xRow + start;
          for (int64_t m = 0; m < mCount; ++m) {
            const Acc wv = (Acc)wc[(m * s.Cg * s.kH + kh) * s.kW + kw];
            Acc *a = acc[m];
            if (s.sW == 1) {
              HP_SIMD
              for (int64_t ow = lo; ow < hi; ++ow)
                a[ow] += wv * (Acc)in[ow];
            } else if (s.sW == 2) {
              HP_SIMD
              for (int64_t ow = lo; ow < hi; ++ow)
                a[ow] += wv * (Acc)in[2 * ow];
            } else {
              for (int64_t ow = lo; ow < hi; ++ow)
                a[ow] += wv * (Acc)in[ow * s.sW];
            }
          }
        }
      }
    }
    for (int64_t m = 0; m < mCount; ++m) {
      const int64_t channel = g * s.Mg + m0 + m, row = yOff + m * s.OH * s.OW;
      for (int64_t ow = 0; ow < cols; ++ow)
        y[row + ow] =
            hp_conv_finish<T, Acc>(epi, acc[m][ow], channel, row + ow);
    }
  }
}

/// Direct 2-D convolution on the GPU: one thread per output element sums
/// over its group's input channels and the kernel window (depthwise
/// convolutions, where im2col plus a GEMM per group is G launches of a
/// one-row GEMM).
template <typename T, typename Acc>
HP_KERNEL(hp_conv2d_direct, hp_conv2d_shape s, hp_conv_epilogue<T> epi,
          const T *x, const T *w, T *y) {
  HP_FOR(i) {
    int64_t r = i;
    const int64_t ow = r % s.OW;
    r /= s.OW;
    const int64_t oh = r % s.OH;
    r /= s.OH;
    const int64_t m = r % (s.G * s.Mg), n = r / (s.G * s.Mg);
    const int64_t g = m / s.Mg;
    Acc acc = Acc(0);
    for (int64_t c = 0; c < s.Cg; ++c) {
      const T *xPlane = x + ((n * s.G + g) * s.Cg + c) * s.H * s.W;
      const T *wc = w + (m * s.Cg + c) * s.kH * s.kW;
      for (int64_t kh = 0; kh < s.kH; ++kh) {
        const int64_t ih = oh * s.sH - s.pH + kh * s.dH;
        if (ih < 0 || ih >= s.H)
          continue;
        for (int64_t kw = 0; kw < s.kW; ++kw) {
          const int64_t iw = ow * s.sW - s.pW + kw * s.dW;
          if (iw >= 0 && iw < s.W)
            acc += (Acc)wc[kh * s.kW + kw] * (Acc)xPlane[ih * s.W + iw];
        }
      }
    }
    y[i] = hp_conv_finish<T, Acc>(epi, acc, m, i);
  }
}

/// Whether the direct kernel beats im2col plus GEMM: depthwise convolutions
/// (one input channel per group), on both backends. There im2col plus GEMM
/// is one GEMM with a single input row per channel and image: MobileNetV3-
/// small at 2 x 3 x 64 x 64 on one core ran 16.4 ms that way and 9.2 ms
/// direct. Where a group has more channels the GEMM wins on the CPU: every
/// other rule tried (up to 8, 16 or 32 output channels, rows of at least 16
/// or 32 columns) made ResNet-18/8 1.5 to 10 times slower, and ResNeXt-50's
/// 4-channel groups gained nothing measurable (bench notes in
/// docs/performance.md).
static inline bool hp_conv2d_direct_pays(const hp_conv2d_shape &s) {
  return s.G > 1 && s.Cg == 1;
}

/// Whether a 2-D convolution reads its input as the GEMM's right-hand
/// matrix, without im2col: 1 x 1 kernel, stride 1, no padding.
static inline bool hp_conv2d_pointwise(const hp_conv2d_shape &s) {
  return s.kH == 1 && s.kW == 1 && s.sH == 1 && s.sW == 1 && s.pH == 0 &&
         s.pW == 0 && s.OH == s.H && s.OW == s.W;
}

#if !HP_CUDA
/// One thread's im2col tile in hp_conv2d_tiled: 16384 elements (64 KiB of
/// float) on the thread's stack, the size of ONNX Runtime's per-thread
/// convolution buffer (MLAS_CONV_WORKING_BUFFER_SIZE_PER_THREAD in MLAS).
#define HP_CONV_TILE_ELEMS 16384
/// One thread's output tile ([Mg, width]) in hp_conv2d_tiled, for tiles
/// that span images: 32768 elements (128 KiB of float), on the stack.
#define HP_CONV_OUT_ELEMS 32768
/// The most im2col rows (input channel, kernel row, kernel column) in one
/// tile, so that a tile has at least 64 columns: a longer sum over rows takes
/// several tiles, the GEMM accumulating (beta 1).
#define HP_CONV_TILE_K 256

/// How hp_conv2d_tiled covers a group's output columns: the N * OH * OW
/// columns of all images (image-major) in `tiles` tiles of `width` columns
/// (the last one shorter), each taking im2col rows in blocks of up to `kb`.
struct hp_conv2d_tiling {
  int64_t kb, width, tiles;
};

/// The tiling of hp_conv2d_tiled for `threads` threads: tiles as wide as
/// both buffers allow, and at least as many tasks (groups x tiles) as
/// threads where there are enough columns. A width below 16 (more than 2048
/// output channels per group) is not worth a tile: `tiles` is 0, and the
/// caller runs the whole-image path.
static inline hp_conv2d_tiling hp_conv2d_tiles(const hp_conv2d_shape &s,
                                               int64_t threads) {
  hp_conv2d_tiling t;
  const int64_t K = s.Cg * s.kH * s.kW, total = s.N * s.OH * s.OW;
  t.kb = K < HP_CONV_TILE_K ? K : HP_CONV_TILE_K;
  int64_t maxCols = HP_CONV_TILE_ELEMS / t.kb;
  if (HP_CONV_OUT_ELEMS / s.Mg < maxCols)
    maxCols = HP_CONV_OUT_ELEMS / s.Mg;
  if (maxCols < 16) {
    t.width = t.tiles = 0;
    return t;
  }
  int64_t tiles = (total + maxCols - 1) / maxCols;
  const int64_t perGroup = (threads + s.G - 1) / s.G;
  if (tiles < perGroup)
    tiles = perGroup < total ? perGroup : total;
  t.width = (total + tiles - 1) / tiles;
  t.tiles = (total + t.width - 1) / t.width;
  return t;
}

/// One im2col row of a stride-1 convolution whose output rows are as wide
/// as its input rows ("same" padding): the output columns [j0, j1) read the
/// input plane at one offset, so the row is one contiguous copy; then the
/// columns outside [lo, hi) of each output row, and the output rows whose
/// input row is padding, are zeroed. Three quarters of ResNet's 3 x 3
/// convolutions are of this kind, and their rows of 8 to 32 columns made a
/// loop per output row slower than the GEMM.
template <typename T>
static void hp_im2col_shifted(const hp_conv2d_shape &s, const T *plane,
                              int64_t kh, int64_t start, int64_t lo, int64_t hi,
                              int64_t j0, int64_t j1, T *dst) {
  const int64_t rowShift = kh * s.dH - s.pH; // ih = oh + rowShift
  const int64_t offset = rowShift * s.W + start;
  // [a, b): the columns whose input row exists; inside it, the copy stays
  // within the plane (what it reads outside [lo, hi) is zeroed below).
  int64_t a = -rowShift * s.OW, b = (s.H - rowShift) * s.OW;
  a = a < j0 ? j0 : a > j1 ? j1 : a;
  b = b < a ? a : b > j1 ? j1 : b;
  int64_t ca = -offset > a ? -offset : a;
  int64_t cb = s.H * s.W - offset < b ? s.H * s.W - offset : b;
  dst -= j0;
  for (int64_t j = j0; j < a; ++j)
    dst[j] = T(0);
  if (ca < cb)
    memcpy(dst + ca, plane + offset + ca, sizeof(T) * (size_t)(cb - ca));
  for (int64_t j = b; j < j1; ++j)
    dst[j] = T(0);
  if (lo <= 0 && hi >= s.OW)
    return;
  for (int64_t row = a / s.OW * s.OW; row < b; row += s.OW) {
    for (int64_t j = row > a ? row : a; j < row + lo && j < b; ++j)
      dst[j] = T(0);
    for (int64_t j = row + (hi > 0 ? hi : 0) > a ? row + (hi > 0 ? hi : 0) : a;
         j < row + s.OW && j < b; ++j)
      dst[j] = T(0);
  }
}

/// im2col of the rows [k0, k0 + kb) and the output columns [j0, j1) (flat
/// indices into the output plane) of one image and group `xg` into `dst`
/// (kb rows, `ld` apart).
template <typename T>
static void hp_im2col2d_segment(const hp_conv2d_shape &s, const T *xg,
                                int64_t k0, int64_t kb, int64_t j0, int64_t j1,
                                T *dst, int64_t ld) {
  const int64_t kc = s.kH * s.kW;
  // (c, kh, kw) of row k0 + r, advanced as an odometer (a division per row
  // cost more than copying the short rows of small images).
  int64_t c = k0 / kc, kh = k0 % kc / s.kW, kw = k0 % s.kW;
  const int64_t oh0 = j0 / s.OW;
  for (int64_t r = 0; r < kb; ++r, ++kw, dst += ld) {
    if (kw == s.kW) {
      kw = 0;
      if (++kh == s.kH) {
        kh = 0;
        ++c;
      }
    }
    // The columns [lo, hi) of an output row that read inside the input row.
    const int64_t start = kw * s.dW - s.pW;
    const int64_t lo = start >= 0  ? 0
                       : s.sW == 1 ? -start
                                   : (s.sW - 1 - start) / s.sW;
    const int64_t hi = start >= s.W ? 0
                       : s.sW == 1  ? s.W - start
                                    : (s.W - start + s.sW - 1) / s.sW;
    const T *plane = xg + c * s.H * s.W;
    if (s.sH == 1 && s.sW == 1 && s.OW == s.W) {
      hp_im2col_shifted(s, plane, kh, start, lo, hi, j0, j1, dst);
      continue;
    }
    T *out = dst;
    for (int64_t oh = oh0; oh * s.OW < j1; ++oh) {
      const int64_t a = j0 > oh * s.OW ? j0 - oh * s.OW : 0;
      const int64_t b = j1 - oh * s.OW < s.OW ? j1 - oh * s.OW : s.OW;
      const int64_t ih = oh * s.sH - s.pH + kh * s.dH;
      if (ih < 0 || ih >= s.H)
        hp_im2col_span(out, plane, a, b, b, b, 0, s.sW);
      else
        hp_im2col_span(out, plane + ih * s.W, a, b, lo, hi, start, s.sW);
      out += b - a;
    }
  }
}

/// The largest kernel positions x output plane for which
/// hp_im2col2d_gather tabulates where each output reads (16 KiB of indices
/// on the stack).
#define HP_CONV_GATHER_MAX 4096

/// hp_im2col2d_tile for small output planes (late layers: 2 x 2 to 8 x 8):
/// the input offset each (kernel position, output) reads, or -1 for
/// padding, is tabulated once; then every row of every image is one gather.
/// Row segments of 4 to 16 columns made the per-segment bounds arithmetic
/// cost more than the GEMM.
template <typename T>
static void hp_im2col2d_gather(const hp_conv2d_shape &s, const T *x, int64_t g,
                               int64_t k0, int64_t kb, int64_t c0, int64_t c1,
                               T *tile) {
  const int64_t outPlane = s.OH * s.OW, kc = s.kH * s.kW;
  int32_t at[HP_CONV_GATHER_MAX];
  for (int64_t k = 0; k < kc; ++k)
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const int64_t ih = oh * s.sH - s.pH + k / s.kW * s.dH;
        const int64_t iw = ow * s.sW - s.pW + k % s.kW * s.dW;
        at[(k * s.OH + oh) * s.OW + ow] =
            ih >= 0 && ih < s.H && iw >= 0 && iw < s.W
                ? (int32_t)(ih * s.W + iw)
                : -1;
      }
  for (int64_t r = 0; r < kb; ++r) {
    const int64_t c = (k0 + r) / kc, k = (k0 + r) % kc;
    T *row = tile + r * (c1 - c0);
    for (int64_t n = c0 / outPlane; n * outPlane < c1; ++n) {
      const int64_t a = c0 > n * outPlane ? c0 : n * outPlane;
      const int64_t b = c1 < (n + 1) * outPlane ? c1 : (n + 1) * outPlane;
      const T *plane = x + ((n * s.G + g) * s.Cg + c) * s.H * s.W;
      const int32_t *from = at + k * outPlane + (a - n * outPlane);
      T *dst = row + (a - c0);
      HP_SIMD
      for (int64_t j = 0; j < b - a; ++j)
        dst[j] = from[j] >= 0 ? plane[from[j]] : T(0);
    }
  }
}

/// im2col of the rows [k0, k0 + kb) of group g and the columns [c0, c1) of
/// all images (image-major) into `tile` ([kb, c1 - c0], row-major).
template <typename T>
static void hp_im2col2d_tile(const hp_conv2d_shape &s, const T *x, int64_t g,
                             int64_t k0, int64_t kb, int64_t c0, int64_t c1,
                             T *tile) {
  const int64_t outPlane = s.OH * s.OW;
  if (outPlane <= 64 && outPlane * s.kH * s.kW <= HP_CONV_GATHER_MAX &&
      s.H * s.W <= INT32_MAX) {
    hp_im2col2d_gather(s, x, g, k0, kb, c0, c1, tile);
    return;
  }
  for (int64_t n = c0 / outPlane; n * outPlane < c1; ++n) {
    const int64_t a = c0 > n * outPlane ? c0 : n * outPlane;
    const int64_t b = c1 < (n + 1) * outPlane ? c1 : (n + 1) * outPlane;
    hp_im2col2d_segment(s, x + (n * s.G + g) * s.Cg * s.H * s.W, k0, kb,
                        a - n * outPlane, b - n * outPlane, tile + (a - c0),
                        c1 - c0);
  }
}

/// Stores the output tile `out` ([Mg, c1 - c0] sums) of group g and the
/// columns [c0, c1) of all images into y through the epilogue.
template <typename T, typename Acc>
static void hp_conv2d_scatter(const hp_conv2d_shape &s, int64_t g, int64_t c0,
                              int64_t c1, const hp_conv_epilogue<T> &epi,
                              const T *out, T *y) {
  const int64_t outPlane = s.OH * s.OW;
  for (int64_t n = c0 / outPlane; n * outPlane < c1; ++n) {
    const int64_t a = c0 > n * outPlane ? c0 : n * outPlane;
    const int64_t b = c1 < (n + 1) * outPlane ? c1 : (n + 1) * outPlane;
    for (int64_t m = 0; m < s.Mg; ++m) {
      const int64_t at =
          ((n * s.G + g) * s.Mg + m) * outPlane + (a - n * outPlane);
      const T *src = out + m * (c1 - c0) + (a - c0);
      if (hp_conv_epilogue_any(epi)) {
        HP_SIMD
        for (int64_t i = 0; i < b - a; ++i)
          y[at + i] =
              hp_conv_finish<T, Acc>(epi, (Acc)src[i], g * s.Mg + m, at + i);
      } else {
        memcpy(y + at, src, sizeof(T) * (size_t)(b - a));
      }
    }
  }
}

/// How a direct 2-D convolution kernel (hp_conv2d_blocked,
/// hp_conv2d_channels) splits its work into tasks that each read a
/// zero-padded copy of their input rows: tasks of `images` whole images, or
/// of `rows` output rows of one image (`images` 1, `chunks` per image), each
/// reading `Hp` padded input rows of `Wp` values per input channel. Reading
/// the copy, made once per task, replaced a zero-padded copy of each row
/// made just before its vector loads read it (ResNet-18/8's stem: 880 ->
/// 570 us at batch 32; the loads waited for the stores to retire).
struct hp_conv2d_pad_tiling {
  int64_t images, rows, chunks, Hp, Wp;
};

/// The tiling for `threads` threads, `outer` tasks per tile (groups times
/// channel blocks) and padded rows of `Wp` values (the kernel's reach along
/// a row): tasks as large as HP_CCONV_PAD holds, but at least four per
/// thread where the batch allows, without cutting an image into chunks of
/// fewer than `fewest` output rows. The caller guarantees that the input
/// rows of one output row fit (Cg x ((kH - 1) x dH + 1) x Wp values).
static inline hp_conv2d_pad_tiling
hp_conv2d_pad_tiles(const hp_conv2d_shape &s, int64_t threads, int64_t outer,
                    int64_t Wp, int64_t fewest) {
  hp_conv2d_pad_tiling t;
  t.Wp = Wp;
  const int64_t spanH = (s.kH - 1) * s.dH + 1;
  const int64_t fullHp = (s.OH - 1) * s.sH + spanH;
  const int64_t want = 4 * threads;
  const int64_t image = s.Cg * fullHp * Wp; // one image's padded planes
  // Rows per chunk: as many as the buffer holds, fewer for more tasks.
  int64_t rows = (HP_CCONV_PAD / (s.Cg * Wp) - spanH) / s.sH + 1;
  const int64_t split = (want + outer * s.N - 1) / (outer * s.N);
  if (split > 1) {
    int64_t r = (s.OH + split - 1) / split;
    r = r < fewest ? fewest : r;
    rows = r < rows ? r : rows;
  }
  if (image <= HP_CCONV_PAD && rows >= s.OH) {
    // Whole images: as many as fit, but no fewer tasks than wanted.
    int64_t n = HP_CCONV_PAD / image;
    const int64_t most = outer * s.N / want; // images per task
    if (most < n)
      n = most > 1 ? most : 1;
    t.images = n > s.N ? s.N : n;
    t.rows = s.OH, t.chunks = 1, t.Hp = fullHp;
    return t;
  }
  t.images = 1;
  t.rows = rows < 1 ? 1 : rows > s.OH ? s.OH : rows;
  t.chunks = (s.OH + t.rows - 1) / t.rows;
  t.Hp = (t.rows - 1) * s.sH + spanH;
  return t;
}

/// One tile of a hp_conv2d_pad_tiling: images [n0, n1), output rows
/// [oh0, oh1).
struct hp_conv2d_tile {
  int64_t n0, n1, oh0, oh1;
};

/// Tile `tile` of `t` (image tiles outer, chunks of rows inner).
static inline hp_conv2d_tile hp_conv2d_tile_at(const hp_conv2d_shape &s,
                                               const hp_conv2d_pad_tiling &t,
                                               int64_t tile) {
  hp_conv2d_tile r;
  r.n0 = tile / t.chunks * t.images;
  r.n1 = r.n0 + t.images < s.N ? r.n0 + t.images : s.N;
  r.oh0 = tile % t.chunks * t.rows;
  r.oh1 = r.oh0 + t.rows < s.OH ? r.oh0 + t.rows : s.OH;
  return r;
}

/// Copies input rows [ih0, ih0 + t.Hp) (ih0 may be negative: padding) of
/// images [n0, n1) of group g into `xp` as [image][channel][t.Hp][t.Wp],
/// input column iw at iw + pW, the pad columns and rows zero: one memset of
/// the whole tile, then a short loop per row (rows of 2 to 70 values, where
/// a memcpy and two memsets per row took a sixth of ResNet-18/8's run).
static void hp_conv2d_pad_rows(const hp_conv2d_shape &s,
                               const hp_conv2d_pad_tiling &t, const float *x,
                               int64_t n0, int64_t n1, int64_t g, int64_t ih0,
                               float *xp) {
  const int64_t left = s.pW < t.Wp ? s.pW : t.Wp;
  const int64_t copy = t.Wp - left < s.W ? t.Wp - left : s.W;
  const int64_t r0 = ih0 < 0 ? -ih0 : 0; // the first row that exists
  const int64_t r1 = s.H - ih0 < t.Hp ? s.H - ih0 : t.Hp;
  memset(xp, 0, sizeof(float) * (size_t)((n1 - n0) * s.Cg * t.Hp * t.Wp));
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t c = 0; c < s.Cg; ++c, xp += t.Hp * t.Wp) {
      const float *plane = x + ((n * s.G + g) * s.Cg + c) * s.H * s.W;
      for (int64_t r = r0; r < r1; ++r) {
        const float *src = plane + (ih0 + r) * s.W;
        float *dst = xp + r * t.Wp + left;
        HP_SIMD
        for (int64_t j = 0; j < copy; ++j)
          dst[j] = src[j];
      }
    }
}

/// Output channels and output columns of one block of hp_conv2d_blocked:
/// 8 x 16 float accumulators, eight AVX-512 registers (sixteen with AVX2).
#define HP_BCONV_M 8
#define HP_BCONV_W 16
/// The longest sum (Cg x kH x kW) whose weights hp_conv2d_blocked repacks
/// on the stack for a block of channels (8 x 1024 floats: 32 KiB).
#define HP_BCONV_K 1024

/// Loads the input columns j * SW (j < 16, SW 1 or 2) of `row` into v. (An
/// output parameter: returning a 64-byte vector changes the ABI without
/// AVX-512.)
template <int SW>
static inline void hp_load_strided(const float *row, hp_v16f &v) {
  static_assert(SW == 1 || SW == 2, "strides 1 and 2 only");
  if (SW == 1) {
    memcpy(&v, row, sizeof v);
  } else {
    hp_v16f lo, hi;
    memcpy(&lo, row, sizeof lo);
    memcpy(&hi, row + 16, sizeof hi);
#if defined(__clang__)
    v = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                                22, 24, 26, 28, 30);
#else
    typedef int hp_v16i __attribute__((vector_size(64)));
    const hp_v16i even = {0,  2,  4,  6,  8,  10, 12, 14,
                          16, 18, 20, 22, 24, 26, 28, 30};
    v = __builtin_shuffle(lo, hi, even);
#endif
  }
}

/// The epilogue's activation (hp_conv_finish's last step) on `count`
/// contiguous values, in place: one vector loop.
static inline void hp_conv_activate_run(const hp_conv_epilogue<float> &e,
                                        float *v, int64_t count) {
  if (e.act == HP_ACT_RELU) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      v[j] = v[j] < 0.0f ? 0.0f : v[j];
  } else if (e.act == HP_ACT_CLIP) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      v[j] = hp_min<float>(hp_max<float>(v[j], e.lo), e.hi);
  }
}

/// hp_conv_finish over `count` sums `v` of output channel m, into y
/// (contiguous; z: the residual's elements there, or null, which may be y
/// itself): one vector loop for the sums and one for the activation, in
/// hp_conv_finish's order.
static inline void hp_conv_finish_run(const hp_conv_epilogue<float> &e,
                                      const float *v, int64_t count, int64_t m,
                                      float *y, const float *z) {
  const float b = e.bias ? e.bias[m] : 0.0f;
  if (e.bias && z) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      y[j] = (b + v[j]) + z[j];
  } else if (e.bias) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      y[j] = b + v[j];
  } else if (z) {
    HP_SIMD
    for (int64_t j = 0; j < count; ++j)
      y[j] = v[j] + z[j];
  } else {
    memcpy(y, v, sizeof(float) * (size_t)count);
  }
  hp_conv_activate_run(e, y, count);
}

/// The padded row width hp_conv2d_blocked reads: its blocks cover the
/// output columns up to a multiple of 16 (the columns past OW are computed
/// and not stored), each reading its kernel's width and 16 x NV columns at
/// its stride from ow0 x sW (a stride-2 load reads 32 per vector).
static inline int64_t hp_conv2d_blocked_row(const hp_conv2d_shape &s) {
  return (s.OW + HP_BCONV_W - 1) / HP_BCONV_W * HP_BCONV_W * s.sW +
         (s.kW - 1) * s.dW;
}

/// Vectors of 16 columns per block of hp_conv2d_blocked where a row has
/// room for them: 2 with AVX-512 (8 x 2 accumulators and the inputs fit its
/// 32 vector registers, and each weight broadcast and each row copy serves
/// twice the columns: ResNet-18/8's 7 x 7 stride-2 stem, 32 columns per
/// row), 1 otherwise (AVX2 has 16 registers of half the width).
#if defined(__AVX512F__)
#define HP_BCONV_NV 2
#else
#define HP_BCONV_NV 1
#endif

/// One block of hp_conv2d_blocked: output channels [m0, m0 + mCount) of
/// group g, output row oh, columns [ow0, ow0 + cols) of image n (cols <=
/// 16 x NV), for stride SW along the row. `xp` holds the image's padded
/// input planes (`Hp` rows of `Wp`, hp_conv2d_pad_rows) from row `r0`, the
/// output row's first. Each (input channel, kernel row, kernel column) loads
/// NV vectors of 16 input columns and adds them times each channel's
/// weight, from `wt` ([K][HP_BCONV_M], zero past mCount).
template <int SW, int NV>
static void
hp_conv2d_block(const hp_conv2d_shape &s, const hp_conv_epilogue<float> &epi,
                const float *xp, int64_t Hp, int64_t Wp, int64_t r0,
                const float *wt, float *y, int64_t n, int64_t g, int64_t m0,
                int64_t mCount, int64_t oh, int64_t ow0, int64_t cols) {
  hp_v16f acc[HP_BCONV_M][NV];
#pragma GCC unroll 8
  for (int m = 0; m < HP_BCONV_M; ++m)
    for (int v = 0; v < NV; ++v)
      acc[m][v] = hp_v16f{};
  const float *wk = wt;
  for (int64_t c = 0; c < s.Cg; ++c)
    for (int64_t kh = 0; kh < s.kH; ++kh, wk += s.kW * HP_BCONV_M) {
      const float *window = xp + (c * Hp + r0 + kh * s.dH) * Wp + ow0 * SW;
      for (int64_t kw = 0; kw < s.kW; ++kw) {
        hp_v16f in[NV];
        for (int v = 0; v < NV; ++v)
          hp_load_strided<SW>(window + kw * s.dW + v * HP_BCONV_W * SW, in[v]);
        const float *wv = wk + kw * HP_BCONV_M;
#pragma GCC unroll 8
        for (int m = 0; m < HP_BCONV_M; ++m) {
          const float w = wv[m];
          for (int v = 0; v < NV; ++v)
            acc[m][v] += w * in[v];
        }
      }
    }
  // The sums through memory, then one vector loop per channel: extracting
  // each lane from its register took a third of the stem's time.
  alignas(64) float out[HP_BCONV_M][HP_BCONV_W * NV];
  memcpy(out, acc, sizeof out);
  int64_t at = ((n * s.G + g) * s.Mg + m0) * s.OH * s.OW + oh * s.OW + ow0;
  for (int64_t m = 0; m < mCount; ++m, at += s.OH * s.OW)
    hp_conv_finish_run(epi, out[m], cols, g * s.Mg + m0 + m, y + at,
                       epi.z ? epi.z + at : nullptr);
}

/// The blocks of one output row of hp_conv2d_blocked: 16 x HP_BCONV_NV
/// columns at a time where the row has them, then 16.
template <int SW>
static void hp_conv2d_block_row(const hp_conv2d_shape &s,
                                const hp_conv_epilogue<float> &epi,
                                const float *xp, int64_t Hp, int64_t Wp,
                                int64_t r0, const float *wt, float *y,
                                int64_t n, int64_t g, int64_t m0,
                                int64_t mCount, int64_t oh) {
  int64_t ow0 = 0;
  const int64_t wide = HP_BCONV_W * HP_BCONV_NV;
  if (HP_BCONV_NV > 1)
    for (; ow0 + wide <= s.OW; ow0 += wide)
      hp_conv2d_block<SW, HP_BCONV_NV>(s, epi, xp, Hp, Wp, r0, wt, y, n, g, m0,
                                       mCount, oh, ow0, wide);
  for (; ow0 < s.OW; ow0 += HP_BCONV_W) {
    const int64_t cols = s.OW - ow0 < HP_BCONV_W ? s.OW - ow0 : HP_BCONV_W;
    hp_conv2d_block<SW, 1>(s, epi, xp, Hp, Wp, r0, wt, y, n, g, m0, mCount, oh,
                           ow0, cols);
  }
}

/// Direct 2-D convolution of float on the CPU with register-blocked
/// accumulators, vectorized along output rows: one task per group, block
/// of HP_BCONV_M output channels and tile of images or output rows
/// (hp_conv2d_pad_tiles), 16 or 32 columns at a time, strides 1 and 2
/// along the row (others take the tiles). No im2col: it wins where a group
/// has few output channels, so that the GEMM after im2col has few rows and
/// the im2col writes about as much as the GEMM computes (ResNet's 7 x 7 stem
/// with 8 output channels spent two thirds of its time in im2col). Each
/// task repacks its channels' weights as [K][HP_BCONV_M] and copies its
/// input rows, zero-padded, on its stack.
static void hp_conv2d_blocked(hp_conv2d_shape s, hp_conv_epilogue<float> epi,
                              const float *x, const float *w, float *y) {
  const int64_t K = s.Cg * s.kH * s.kW;
  const int64_t mBlocks = (s.Mg + HP_BCONV_M - 1) / HP_BCONV_M;
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  const hp_conv2d_pad_tiling t = hp_conv2d_pad_tiles(
      s, threads, s.G * mBlocks, hp_conv2d_blocked_row(s), 1);
  const int64_t tiles = (s.N + t.images - 1) / t.images * t.chunks;
  const int64_t imageStride = s.Cg * t.Hp * t.Wp;
#pragma omp parallel
  {
    float wt[HP_BCONV_K * HP_BCONV_M];
    alignas(64) float xp[HP_CCONV_PAD];
    int64_t packed = -1, padded = -1; // what wt and xp hold
#pragma omp for schedule(static)
    for (int64_t task = 0; task < s.G * mBlocks * tiles; ++task) {
      // Channel blocks outermost: a thread's tasks share one block's weights.
      const int64_t tile = task % tiles, gb = task / tiles;
      const int64_t g = gb / mBlocks, m0 = gb % mBlocks * HP_BCONV_M;
      const int64_t mCount = s.Mg - m0 < HP_BCONV_M ? s.Mg - m0 : HP_BCONV_M;
      if (packed != gb) {
        for (int64_t k = 0; k < K; ++k)
          for (int64_t m = 0; m < HP_BCONV_M; ++m)
            wt[k * HP_BCONV_M + m] =
                m < mCount ? w[(g * s.Mg + m0 + m) * K + k] : 0.0f;
        packed = gb;
      }
      const hp_conv2d_tile at = hp_conv2d_tile_at(s, t, tile);
      const int64_t n0 = at.n0, n1 = at.n1, oh0 = at.oh0, oh1 = at.oh1;
      if (padded != g * tiles + tile) {
        hp_conv2d_pad_rows(s, t, x, n0, n1, g, oh0 * s.sH - s.pH, xp);
        padded = g * tiles + tile;
      }
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          const float *img = xp + (n - n0) * imageStride;
          const int64_t r0 = (oh - oh0) * s.sH;
          if (s.sW == 1)
            hp_conv2d_block_row<1>(s, epi, img, t.Hp, t.Wp, r0, wt, y, n, g, m0,
                                   mCount, oh);
          else
            hp_conv2d_block_row<2>(s, epi, img, t.Hp, t.Wp, r0, wt, y, n, g, m0,
                                   mCount, oh);
        }
    }
  }
}

/// Whether hp_conv2d_blocked runs a float convolution: at most
/// HP_BCONV_M output channels per group (a GEMM of so few rows after im2col
/// ran at half its speed: ResNet-18/8's stem, 1.9 -> 1.1 ms at batch 32),
/// rows of at least HP_BCONV_W outputs, stride 1 or 2 along the row, and
/// buffers that fit: the weights, and the padded input rows of one output
/// row. Not for depthwise groups (hp_conv2d_direct_pays), where one output
/// channel would leave seven accumulators idle.
static inline bool hp_conv2d_blocked_pays(const hp_conv2d_shape &s) {
  return s.Mg <= HP_BCONV_M && !hp_conv2d_direct_pays(s) &&
         s.OW >= HP_BCONV_W && (s.sW == 1 || s.sW == 2) &&
         s.Cg * s.kH * s.kW <= HP_BCONV_K &&
         s.Cg * ((s.kH - 1) * s.dH + 1) * hp_conv2d_blocked_row(s) <=
             HP_CCONV_PAD;
}
/// hp_conv_finish over the sums of one output position in channels
/// [m0, m0 + count) (`v`, contiguous), the position's element of channel m0
/// being element `at` of the output and of z, `stride` elements per channel:
/// one vector loop per part of the epilogue, in hp_conv_finish's order.
static inline void hp_cconv_finish(const hp_conv_epilogue<float> &e, float *v,
                                   int64_t count, int64_t m0, int64_t at,
                                   int64_t stride) {
  if (e.bias) {
    const float *b = e.bias + m0;
    HP_SIMD
    for (int64_t m = 0; m < count; ++m)
      v[m] = b[m] + v[m];
  }
  if (e.z)
    for (int64_t m = 0; m < count; ++m)
      v[m] = v[m] + e.z[at + m * stride];
  hp_conv_activate_run(e, v, count);
}

/// Direct 2-D convolution of float on the CPU, vectorized over output
/// channels (16 per vector) with the weights packed at compile time as
/// [G][Cg x kH x kW][Mp] (hp_conv2d_packed_channels, zero past Mg): each block
/// holds P output positions times NVM vectors of channels, and each input
/// value is broadcast once per block. For convolutions with many output
/// channels and small planes (ResNet's later stages, 2 x 2 to 8 x 8
/// outputs), where the tiles' GEMMs of few columns reach half of ONNX
/// Runtime's speed and the row-vectorized hp_conv2d_blocked would leave
/// most of a vector idle. One task per group, channel block and tile
/// (hp_conv2d_pad_tiles): it copies the input rows it reads into zero-padded
/// planes on its stack (no bounds tests in the loop), and its positions run
/// on across the images of the tile, so that 2 x 2 planes fill a block.
template <int P, int NVM>
static void hp_conv2d_channels(hp_conv2d_shape s, hp_conv_epilogue<float> epi,
                               const float *x, const float *wp, float *y,
                               hp_conv2d_pad_tiling t) {
  const int64_t K = s.Cg * s.kH * s.kW, Mp = hp_conv2d_packed_channels(s.Mg);
  const int64_t mBlock = 16 * NVM, mBlocks = (s.Mg + mBlock - 1) / mBlock;
  const int64_t imageTiles = (s.N + t.images - 1) / t.images;
  const int64_t tiles = imageTiles * t.chunks, outPlane = s.OH * s.OW;
  const int64_t plane = t.Hp * t.Wp, imageStride = s.Cg * plane;
  // The sums over (input channel, kernel row, kernel column) in xp.
  const int64_t ext[3] = {s.Cg, s.kH, s.kW};
  const int64_t step[3] = {plane, s.dH * t.Wp, s.dW};
#pragma omp parallel
  {
    alignas(64) float xp[HP_CCONV_PAD];
    int64_t padded = -1; // the (group, tile) whose input xp holds
#pragma omp for schedule(static)
    for (int64_t task = 0; task < s.G * tiles * mBlocks; ++task) {
      // Channel blocks innermost: a thread's consecutive tasks share a tile.
      const int64_t mb = task % mBlocks, tile = task / mBlocks % tiles;
      const int64_t g = task / (mBlocks * tiles);
      const hp_conv2d_tile at = hp_conv2d_tile_at(s, t, tile);
      const int64_t n0 = at.n0, n1 = at.n1, oh0 = at.oh0, oh1 = at.oh1;
      if (padded != g * tiles + tile) {
        hp_conv2d_pad_rows(s, t, x, n0, n1, g, oh0 * s.sH - s.pH, xp);
        padded = g * tiles + tile;
      }
      const int64_t m0 = mb * mBlock;
      const int64_t mCount = s.Mg - m0 < mBlock ? s.Mg - m0 : mBlock;
      const float *wg = wp + g * K * Mp + m0;
      // Positions: (image, row, column) of the tile, flattened.
      const int64_t perImage = (oh1 - oh0) * s.OW;
      const int64_t count = (n1 - n0) * perImage;
      for (int64_t q = 0; q < count; q += P) {
        const int64_t live = count - q < P ? count - q : P;
        int64_t base[P], at[P];
        for (int p = 0; p < P; ++p) {
          // Past the tile's end, the last position again (not stored).
          const int64_t k = q + (p < live ? p : live - 1);
          const int64_t i = k / perImage, r = k % perImage;
          const int64_t oh = r / s.OW, ow = r % s.OW;
          base[p] = i * imageStride + oh * s.sH * t.Wp + ow * s.sW;
          at[p] =
              ((n0 + i) * s.G + g) * s.Mg * outPlane + (oh0 + oh) * s.OW + ow;
        }
        alignas(64) float out[P][16 * NVM];
        hp_bcast_block<P, NVM>(xp, base, ext, step, wg, Mp, out);
        for (int64_t p = 0; p < live; ++p)
          hp_cconv_finish(epi, out[p], mCount, g * s.Mg + m0,
                          at[p] + m0 * outPlane, outPlane);
        for (int64_t m = 0; m < mCount; ++m)
          for (int64_t p = 0; p < live; ++p)
            y[at[p] + (m0 + m) * outPlane] = out[p][m];
      }
    }
  }
}

/// hp_conv2d_channels with the accumulators that fit the group's channels:
/// 24 positions of one vector (16 channels), 12 of two, or 6 of four.
static void hp_conv2d_channels_launch(const hp_conv2d_shape &s,
                                      const hp_conv_epilogue<float> &epi,
                                      const float *x, const float *wp, float *y,
                                      int64_t threads) {
  const int64_t nvm = hp_conv2d_channel_vectors(s.Mg);
  // Each position reads (kW - 1) x dW + 1 columns from its first.
  const hp_conv2d_pad_tiling t = hp_conv2d_pad_tiles(
      s, threads, s.G * ((s.Mg + 16 * nvm - 1) / (16 * nvm)),
      (s.OW - 1) * s.sW + (s.kW - 1) * s.dW + 1, (24 + s.OW - 1) / s.OW);
  if (nvm == 1)
    hp_conv2d_channels<24, 1>(s, epi, x, wp, y, t);
  else if (nvm == 2)
    hp_conv2d_channels<12, 2>(s, epi, x, wp, y, t);
  else
    hp_conv2d_channels<6, 4>(s, epi, x, wp, y, t);
}
/// A 2-D convolution on the CPU as independent tasks, one per group and
/// column tile (hp_conv2d_tiles; a tile may span images): each thread
/// writes the tile's im2col rows into its own stack buffer and runs a
/// one-thread GEMM, into y where the tile lies in one image, else into its
/// output buffer, added to y afterwards. ONNX Runtime's MLAS segments its
/// convolutions the same way. The whole-image path instead alternates a
/// parallel im2col with a threaded GEMM per image: small images left the
/// threads waiting (ResNet-18/8 at batch 32 spent a third of its time in
/// OpenMP barriers), and its GEMMs of 4 to 16 columns (late layers) ran at a
/// third of the speed of tiles of 64. float and double (a GEMM that cannot
/// fail).
template <typename T, typename Acc>
static void hp_conv2d_tiled(hp_ctx *ctx, hp_conv2d_shape s,
                            hp_conv_epilogue<T> epi, const T *x, const T *w,
                            T *y, hp_conv2d_tiling t) {
  const int64_t K = s.Cg * s.kH * s.kW, outPlane = s.OH * s.OW;
  const int64_t total = s.N * outPlane, inPlane = s.H * s.W;
  const bool pointwise = hp_conv2d_pointwise(s);
#pragma omp parallel
  {
    alignas(64) T tile[HP_CONV_TILE_ELEMS];
    alignas(64) T out[HP_CONV_OUT_ELEMS];
#pragma omp for schedule(static)
    for (int64_t task = 0; task < s.G * t.tiles; ++task) {
      const int64_t g = task / t.tiles, c0 = task % t.tiles * t.width;
      const int64_t c1 = c0 + t.width < total ? c0 + t.width : total;
      const int64_t n = c0 / outPlane, j0 = c0 - n * outPlane;
      const bool single = (c1 - 1) / outPlane == n; // one image
      T *C = single ? y + (n * s.G + g) * s.Mg * outPlane + j0 : out;
      for (int64_t k0 = 0; k0 < K; k0 += t.kb) {
        const int64_t kb = K - k0 < t.kb ? K - k0 : t.kb;
        const T *B = tile;
        int64_t ldb = c1 - c0;
        if (single && pointwise) {
          B = x + ((n * s.G + g) * s.Cg + k0) * inPlane + j0;
          ldb = inPlane;
        } else {
          hp_im2col2d_tile(s, x, g, k0, kb, c0, c1, tile);
        }
        hp_gemm<T, Acc>(
            ctx, 0, 0, s.Mg, c1 - c0, kb, 1.0f, w + g * s.Mg * K + k0, K, 0, B,
            ldb, 0, k0 > 0 ? 1.0f : 0.0f, C, single ? outPlane : c1 - c0, 0, 1);
      }
      if (!single)
        hp_conv2d_scatter<T, Acc>(s, g, c0, c1, epi, out, y);
      else if (hp_conv_epilogue_any(epi))
        // The tile's sums are still in cache: finish them in place.
        for (int64_t m = 0; m < s.Mg; ++m) {
          const int64_t at = ((n * s.G + g) * s.Mg + m) * outPlane + j0;
          HP_SIMD
          for (int64_t i = 0; i < c1 - c0; ++i)
            y[at + i] = hp_conv_finish<T, Acc>(epi, (Acc)y[at + i],
                                               g * s.Mg + m, at + i);
        }
    }
  }
}
#endif

/// y = epi(y) over the N x M planes of `outPlane` outputs, where `epi` does
/// anything (after a library convolution or GEMMs).
template <typename T, typename Acc>
static void hp_conv_epilogue_pass(hp_ctx *ctx, hp_conv_epilogue<T> epi,
                                  int64_t N, int64_t M, int64_t outPlane,
                                  T *y) {
  if (hp_conv_epilogue_any(epi))
    hp_launch(ctx, hp_conv_epilogue_rows<T, Acc>, N * M * outPlane, epi, M,
              outPlane, y);
}

/// A convolution `s` (NC..., groups) finished by `epi`, per image and group
/// as im2col into `cols` ([Cg * prod(k), prod(out)]; unused when
/// `pointwise`: the GEMM reads x as it is) and one GEMM, then one pass of the
/// epilogue. Returns 0, or non-zero with ctx->error set (a GEMM failure).
template <typename T, typename Acc>
static int hp_conv_im2col(hp_ctx *ctx, const hp_conv_nd &s, bool pointwise,
                          hp_conv_epilogue<T> epi, const T *x, const T *w, T *y,
                          T *cols) {
  int64_t inPlane = 1, outPlane = 1, kc = 1;
  for (int d = 0; d < s.nsp; ++d) {
    inPlane *= s.in.v[d];
    outPlane *= s.out.v[d];
    kc *= s.k.v[d];
  }
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t g = 0; g < s.G; ++g) {
      const T *xg = x + (n * s.G + g) * s.Cg * inPlane;
      if (!pointwise)
        hp_im2col_launch<T>(ctx, s.nsp, s.in, s.out, s.k, s.stride, s.pad,
                            s.dilation, s.Cg, kc, inPlane, outPlane, xg, cols);
      if (hp_gemm<T, Acc>(ctx, 0, 0, s.Mg, outPlane, s.Cg * kc, 1.0f,
                          w + g * s.Mg * s.Cg * kc, s.Cg * kc, 0,
                          pointwise ? xg : cols, outPlane, 0, 0.0f,
                          y + (n * s.G + g) * s.Mg * outPlane, outPlane, 0, 1))
        return 1;
    }
  hp_conv_epilogue_pass<T, Acc>(ctx, epi, s.N, s.G * s.Mg, outPlane, y);
  return 0;
}

/// A 2-D convolution finished by `epi` (bias, residual, activation): the
/// direct kernel where hp_conv2d_direct_pays; on the GPU cuDNN where it
/// takes the convolution (hp_conv_cudnn), then one pass of the epilogue;
/// on the CPU the register-blocked
/// kernel, the channel-vectorized one (given `wPacked`, the weights packed
/// as hp_conv2d_channels_runs describes; null: not packed) or the tiles
/// where they pay (each finishes its outputs while they are in registers or
/// cache); else per image and group im2col into `cols` ([Cg*kH*kW, OH*OW])
/// and one GEMM, then one pass of the epilogue. Returns 0, or non-zero with
/// ctx->error set (a GEMM failure).
template <typename T, typename Acc>
static int hp_conv2d_launch(hp_ctx *ctx, hp_conv2d_shape s,
                            hp_conv_epilogue<T> epi, const T *x, const T *w,
                            const T *wPacked, T *y, T *cols) {
  if (hp_conv2d_direct_pays(s)) {
#if HP_CUDA
    hp_launch(ctx, hp_conv2d_direct<T, Acc>, s.N * s.G * s.Mg * s.OH * s.OW, s,
              epi, x, w, y);
#else
    hp_launch(ctx, hp_conv2d_direct_rows<T, Acc>,
              s.N * s.G * ((s.Mg + HP_CONV_MB - 1) / HP_CONV_MB) * s.OH *
                  ((s.OW + HP_CONV_OWT - 1) / HP_CONV_OWT),
              s, epi, x, w, y);
#endif
    return 0;
  }
#if HP_CUDA
  if (hp_try_library([&] {
        return hp_conv_cudnn<T>(ctx, hp_conv_nd_of(s), x, w, y);
      }) == 0) {
    hp_conv_epilogue_pass<T, Acc>(ctx, epi, s.N, s.G * s.Mg, s.OH * s.OW, y);
    return 0;
  }
#else
  // Tiles for float and double (a GEMM that cannot fail), where a tile has
  // room for 16 columns.
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  if (std::is_same<T, float>::value && hp_conv2d_blocked_pays(s)) {
    hp_conv2d_blocked(s, *(const hp_conv_epilogue<float> *)&epi,
                      (const float *)x, (const float *)w, (float *)y);
    return 0;
  }
  if (std::is_same<T, float>::value && wPacked && hp_conv2d_channels_runs(s)) {
    hp_conv2d_channels_launch(s, *(const hp_conv_epilogue<float> *)&epi,
                              (const float *)x, (const float *)wPacked,
                              (float *)y, threads);
    return 0;
  }
  const hp_conv2d_tiling tiling = hp_conv2d_tiles(s, threads);
  if ((std::is_same<T, float>::value || std::is_same<T, double>::value) &&
      tiling.tiles > 0) {
    hp_conv2d_tiled<T, Acc>(ctx, s, epi, x, w, y, tiling);
    return 0;
  }
#endif
  return hp_conv_im2col<T, Acc>(ctx, hp_conv_nd_of(s), hp_conv2d_pointwise(s),
                                epi, x, w, y, cols);
}

/// A convolution of any number of spatial dimensions (`nsp`; hp_conv2d_launch
/// takes 1-D and 2-D ones) finished by `epi`: on the GPU cuDNN where it
/// takes it (hp_conv_cudnn: 3-D), then one pass of the epilogue; else
/// hp_conv_im2col. Returns 0, or non-zero with ctx->error set.
template <typename T, typename Acc>
static int hp_conv_nd_launch(hp_ctx *ctx, const hp_conv_nd &s, bool pointwise,
                             hp_conv_epilogue<T> epi, const T *x, const T *w,
                             T *y, T *cols) {
#if HP_CUDA
  if (hp_try_library([&] { return hp_conv_cudnn<T>(ctx, s, x, w, y); }) == 0) {
    int64_t outPlane = 1;
    for (int d = 0; d < s.nsp; ++d)
      outPlane *= s.out.v[d];
    hp_conv_epilogue_pass<T, Acc>(ctx, epi, s.N, s.G * s.Mg, outPlane, y);
    return 0;
  }
#endif
  return hp_conv_im2col<T, Acc>(ctx, s, pointwise, epi, x, w, y, cols);
}

#endif // HETPAR_DEVICE_CONV_H
