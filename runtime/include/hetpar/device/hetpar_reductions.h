//===- hetpar_reductions.h - reductions, Softmax, LayerNorm -----*- C++ -*-===//
//
// Reductions, ArgMax/ArgMin, Softmax and LayerNorm (the row-wise kernels).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_REDUCTIONS_H
#define HETPAR_DEVICE_REDUCTIONS_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

enum {
  HP_RED_SUM,
  HP_RED_MEAN,
  HP_RED_MAX,
  HP_RED_MIN,
  HP_RED_PROD,
  HP_RED_L1,
  HP_RED_L2,
  HP_RED_SUMSQ,
  HP_RED_LOGSUMEXP
};

template <typename Acc> HP_HD Acc hp_lowest() {
#if HP_CUDA
  return (Acc)-INFINITY;
#else
  return std::numeric_limits<Acc>::has_infinity
             ? -std::numeric_limits<Acc>::infinity()
             : std::numeric_limits<Acc>::lowest();
#endif
}
template <typename Acc> HP_HD Acc hp_highest() {
#if HP_CUDA
  return (Acc)INFINITY;
#else
  return std::numeric_limits<Acc>::has_infinity
             ? std::numeric_limits<Acc>::infinity()
             : std::numeric_limits<Acc>::max();
#endif
}
#if HP_CUDA
template <> HP_HD int64_t hp_lowest<int64_t>() { return INT64_MIN; }
template <> HP_HD int64_t hp_highest<int64_t>() { return INT64_MAX; }
template <> HP_HD uint64_t hp_lowest<uint64_t>() { return 0; }
template <> HP_HD uint64_t hp_highest<uint64_t>() { return UINT64_MAX; }
#endif

/// The identity of a Max (MAX) or Min reduction of T values accumulated in
/// Acc, which is what ONNX defines the reduction of an empty set as: -inf or
/// +inf for floating types, else T's lowest or highest value (INT32_MIN for
/// int32, not the int64 accumulator's INT64_MIN, which an int32 result
/// would truncate to 0).
template <typename T, typename Acc, bool MAX> HP_HD Acc hp_max_min_identity() {
  if (std::is_same<T, bool>::value)
    return Acc(!MAX);
  if (!std::is_integral<T>::value)
    return MAX ? hp_lowest<Acc>() : hp_highest<Acc>();
  const int bits = (int)sizeof(T) * 8;
  if (!std::is_signed<T>::value) // 0 and all ones, in T's width
    return MAX ? Acc(0) : (Acc)(T) ~(uint64_t)0;
  const Acc highest = (Acc)(((uint64_t)1 << (bits - 1)) - 1);
  return MAX ? -highest - Acc(1) : highest;
}

/// Reduction: one output element per iteration. The output's coordinates
/// (kept dims, `keptDims`) map to input offsets with `keptStrides`; the
/// reduced coordinates (`redDims`) with `redStrides`. An empty reduction gives
/// the operation's identity (0, 1, -inf or +inf), as ONNX specifies.
template <typename T, typename Acc, int OP>
HP_KERNEL(hp_reduce, int keptRank, hp_dims keptDims, hp_dims keptStrides,
          int redRank, hp_dims redDims, hp_dims redStrides, int64_t redCount,
          const T *in, T *out) {
  // A contiguous run summed (RMSNorm's mean of squares, a row sum) is a
  // vector loop with partial sums per lane.
  const bool contiguousSum =
      (OP == HP_RED_SUM || OP == HP_RED_MEAN || OP == HP_RED_SUMSQ ||
       OP == HP_RED_L1 || OP == HP_RED_L2) &&
      redRank == 1 && redStrides.v[0] == 1;
  HP_FOR_W(o, redCount) {
    int64_t rem = o, base = 0;
    for (int d = keptRank - 1; d >= 0; --d) {
      base += (rem % keptDims.v[d]) * keptStrides.v[d];
      rem /= keptDims.v[d];
    }
    Acc acc = OP == HP_RED_PROD  ? Acc(1)
              : OP == HP_RED_MAX ? hp_max_min_identity<T, Acc, true>()
              : OP == HP_RED_MIN ? hp_max_min_identity<T, Acc, false>()
                                 : Acc(0);
    Acc shift = Acc(0);
    // LogSumExp sums exp(x - shift) in double: an integer accumulator would
    // truncate each term (and an unsigned one wrap x - shift below the
    // maximum).
    double lse = 0;
    if (contiguousSum) {
      const T *p = in + base;
      HP_SIMD_REDUCE(+, acc)
      for (int64_t r = 0; r < redCount; ++r) {
        Acc x = (Acc)p[r];
        acc += OP == HP_RED_L1                         ? hp_abs(x)
               : OP == HP_RED_SUMSQ || OP == HP_RED_L2 ? x * x
                                                       : x;
      }
    } else {
      if (OP == HP_RED_LOGSUMEXP) {
        shift = hp_lowest<Acc>();
        for (int64_t r = 0; r < redCount; ++r) {
          int64_t rr = r, off = base;
          for (int d = redRank - 1; d >= 0; --d) {
            off += (rr % redDims.v[d]) * redStrides.v[d];
            rr /= redDims.v[d];
          }
          shift = hp_max(shift, (Acc)in[off]);
        }
        if (!(shift > hp_lowest<Acc>() && shift < hp_highest<Acc>()))
          shift = Acc(0);
      }
      for (int64_t r = 0; r < redCount; ++r) {
        int64_t rr = r, off = base;
        for (int d = redRank - 1; d >= 0; --d) {
          off += (rr % redDims.v[d]) * redStrides.v[d];
          rr /= redDims.v[d];
        }
        Acc x = (Acc)in[off];
        switch (OP) {
        case HP_RED_SUM:
        case HP_RED_MEAN:
          acc += x;
          break;
        case HP_RED_MAX:
          acc = hp_max(acc, x);
          break;
        case HP_RED_MIN:
          acc = hp_min(acc, x);
          break;
        case HP_RED_PROD:
          acc *= x;
          break;
        case HP_RED_L1:
          acc += hp_abs(x);
          break;
        case HP_RED_L2:
        case HP_RED_SUMSQ:
          acc += x * x;
          break;
        case HP_RED_LOGSUMEXP:
          lse += hp_exp((double)x - (double)shift);
          break;
        }
      }
    }
    if (OP == HP_RED_MEAN && redCount > 0)
      acc = acc / (Acc)redCount;
    if (OP == HP_RED_L2)
      acc = (Acc)hp_sqrt((double)acc);
    if (OP == HP_RED_LOGSUMEXP)
      acc = (Acc)(hp_log(lse) + (double)shift);
    out[o] = (T)acc;
  }
}

/// ArgMax (MAX=true) / ArgMin over the middle axis of [outer, len, inner];
/// ties give the first index, or the last with selectLast.
template <typename T, bool MAX>
HP_KERNEL(hp_arg_reduce, int64_t len, int64_t inner, int selectLast,
          const T *in, int64_t *out) {
  HP_FOR_W(r, len) {
    int64_t o = r / inner, j = r % inner;
    const T *p = in + o * len * inner + j;
    int64_t best = 0;
    for (int64_t k = 1; k < len; ++k) {
      bool better = MAX ? (p[k * inner] > p[best * inner])
                        : (p[k * inner] < p[best * inner]);
      bool equal = p[k * inner] == p[best * inner];
      if (better || (selectLast && equal))
        best = k;
    }
    out[r] = best;
  }
}

#if HP_CUDA
/// hp_arg_reduce with one warp per output, for rows of at least 32 elements
/// on the GPU: iteration i is lane i % 32 of output i / 32. Its result is
/// the sequential loop's: that loop never moves off a NaN at position 0
/// and never moves onto a NaN, so the result is 0 when the first element is
/// NaN, else the best of the other elements in the order (value, then the
/// first index, or the last with selectLast). Each lane takes its elements'
/// best under that order, the lanes combine their indices with shuffles (the
/// order is total, so every lane ends with the same index), and the values
/// are read from `in` again rather than shuffled (16-bit types included).
template <typename T, bool MAX>
HP_KERNEL(hp_arg_reduce_warp, int64_t len, int64_t inner, int selectLast,
          const T *in, int64_t *out) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const T *p = in + (r / inner) * len * inner + r % inner;
    // Whether index b beats index a (-1: none; NaNs never enter).
    auto beats = [&](int64_t b, int64_t a) {
      if (b < 0 || a < 0)
        return a < 0 && b >= 0;
      const T vb = p[b * inner], va = p[a * inner];
      if (MAX ? vb > va : vb < va)
        return true;
      return vb == va && (selectLast ? b > a : b < a);
    };
    int64_t best = -1;
    for (int64_t k = lane; k < len; k += 32) {
      const T v = p[k * inner];
      if (v == v && beats(k, best))
        best = k;
    }
    for (int o = 16; o > 0; o >>= 1) {
      const int64_t other = __shfl_xor_sync(0xffffffffu, best, o);
      if (beats(other, best))
        best = other;
    }
    if (lane == 0) {
      const T first = p[0];
      out[r] = first == first ? best : 0;
    }
  }
}
#endif

/// ArgMax or ArgMin (MAX) of `rows` outputs over rows of `len` (hp_arg_reduce's
/// arguments): on the GPU a warp per output for rows of at least 32.
template <typename T, bool MAX>
static void hp_arg_reduce_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                 int64_t inner, int selectLast, const T *in,
                                 int64_t *out) {
#if HP_CUDA
  if (len >= 32) {
    hp_launch(ctx, hp_arg_reduce_warp<T, MAX>, rows * 32, len, inner,
              selectLast, in, out);
    return;
  }
#endif
  hp_launch(ctx, hp_arg_reduce<T, MAX>, rows, len, inner, selectLast, in, out);
}

/// Softmax or LogSoftmax over the middle axis of [outer, len, inner], with the
/// maximum subtracted first.
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax, int64_t len, int64_t inner, const T *in, T *out) {
  HP_FOR_W(r, len) {
    int64_t base = (r / inner) * len * inner + r % inner;
    Acc m = hp_lowest<Acc>();
    for (int64_t k = 0; k < len; ++k)
      m = hp_max(m, (Acc)in[base + k * inner]);
    Acc s = 0;
    for (int64_t k = 0; k < len; ++k)
      s += hp_exp((Acc)in[base + k * inner] - m);
    Acc ls = hp_log(s);
    for (int64_t k = 0; k < len; ++k) {
      Acc x = (Acc)in[base + k * inner] - m;
      out[base + k * inner] = (T)(LOG ? x - ls : hp_exp(x) / s);
    }
  }
}

/// The prologue of a LayerNormalization without one: it reads its X. The
/// generated code passes a functor of its own (a struct with `static const
/// bool any = true` and `HP_HD float operator()(int64_t i, int64_t k) const`,
/// the element at flat index i, k = i % len) for the elementwise group that
/// computes X, typically a residual Add (docs/codegen.md, "LayerNorm
/// prologues").
struct hp_pro_none {
  static const bool any = false;
  HP_HD float operator()(int64_t, int64_t) const { return 0.0f; }
};

/// LayerNormalization over the last `len` elements of each of hp_n rows:
/// y = (x - mean) / sqrt(var + eps) * scale + bias. scale and bias repeat
/// every scaleLen / biasLen elements (broadcast); bias may be null. Mean and
/// InvStdDev per row are written when their pointers are not null. With a
/// prologue (Pro::any), each row of x is first computed as pro's values and
/// stored (x is then writable; ONNX Runtime's SkipLayerNormalization does the
/// same for a residual Add): the row is still in cache when the statistics
/// read it.
template <typename T, typename S, typename Acc, typename Pro>
HP_KERNEL(hp_layer_norm, int64_t len, float eps, Pro pro, const T *x,
          const S *scale, int64_t scaleLen, const S *bias, int64_t biasLen,
          T *y, S *meanOut, S *invStdOut) {
  // scale and bias as long as the row (the usual case): no modulo per
  // element, and every loop vectorizes.
  const bool whole = scaleLen == len && (!bias || biasLen == len);
  HP_FOR_W(r, len) {
    if (Pro::any) {
      T *w = (T *)x + r * len;
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        w[k] = (T)pro(r * len + k, k);
    }
    const T *p = x + r * len;
    T *q = y + r * len;
    Acc mean = 0;
    HP_SIMD_REDUCE(+, mean)
    for (int64_t k = 0; k < len; ++k)
      mean += (Acc)p[k];
    mean /= (Acc)len;
    Acc var = 0;
    HP_SIMD_REDUCE(+, var)
    for (int64_t k = 0; k < len; ++k) {
      Acc d = (Acc)p[k] - mean;
      var += d * d;
    }
    var /= (Acc)len;
    Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    if (whole && bias) {
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        q[k] = (T)(((Acc)p[k] - mean) * inv * (Acc)scale[k] + (Acc)bias[k]);
    } else if (whole) {
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        q[k] = (T)(((Acc)p[k] - mean) * inv * (Acc)scale[k]);
    } else {
      for (int64_t k = 0; k < len; ++k) {
        Acc v = ((Acc)p[k] - mean) * inv * (Acc)scale[k % scaleLen];
        if (bias)
          v += (Acc)bias[k % biasLen];
        q[k] = (T)v;
      }
    }
    if (meanOut)
      meanOut[r] = (S)mean;
    if (invStdOut)
      invStdOut[r] = (S)inv;
  }
}

/// hp_softmax over contiguous rows (inner == 1) on the CPU: the maximum, the
/// sum of exponentials and the outputs as vector loops (hp_exp is
/// branch-free there). A NaN in a row makes the sum, and so every output of
/// the row, NaN, as in hp_softmax.
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_rows, int64_t len, const T *in, T *out) {
  HP_FOR_W(r, len) {
    const T *x = in + r * len;
    T *y = out + r * len;
    Acc m = hp_lowest<Acc>();
    HP_SIMD_REDUCE(max, m)
    for (int64_t k = 0; k < len; ++k)
      m = (Acc)x[k] > m ? (Acc)x[k] : m;
    Acc s = 0;
    HP_SIMD_REDUCE(+, s)
    for (int64_t k = 0; k < len; ++k)
      s += hp_exp((Acc)x[k] - m);
    if (LOG) {
      // (x - m) - log s, as hp_softmax: x - m is exact near the maximum,
      // where x - (m + log s) would round to m's last place.
      Acc ls = hp_log(s);
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        y[k] = (T)(((Acc)x[k] - m) - ls);
    } else {
      Acc inv = Acc(1) / s;
      HP_SIMD
      for (int64_t k = 0; k < len; ++k)
        y[k] = (T)(hp_exp((Acc)x[k] - m) * inv);
    }
  }
}

#if HP_CUDA
/// Sum / maximum over the 32 lanes of a warp (every lane gets the result).
template <typename Acc> __device__ __forceinline__ Acc hp_warp_sum(Acc v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename Acc> __device__ __forceinline__ Acc hp_warp_max(Acc v) {
  for (int o = 16; o > 0; o >>= 1)
    v = hp_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <typename Acc> __device__ __forceinline__ Acc hp_warp_min(Acc v) {
  for (int o = 16; o > 0; o >>= 1)
    v = hp_min(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// The mean and 1 / sqrt(variance + eps) of the row p[0, len), by the 32
/// lanes of a warp (lane `lane` reads k = lane, lane + 32, ...; every lane
/// gets both): LayerNorm's statistics on the GPU, for the forward and the
/// gradient kernels alike (hp_row_stats on the CPU).
template <typename T, typename Acc>
__device__ __forceinline__ void hp_warp_row_stats(const T *p, int64_t len,
                                                  float eps, int lane,
                                                  Acc &mean, Acc &inv) {
  Acc sum = 0;
  for (int64_t k = lane; k < len; k += 32)
    sum += (Acc)p[k];
  mean = hp_warp_sum(sum) / (Acc)len;
  Acc var = 0;
  for (int64_t k = lane; k < len; k += 32) {
    Acc d = (Acc)p[k] - mean;
    var += d * d;
  }
  var = hp_warp_sum(var) / (Acc)len;
  inv = Acc(1) / hp_sqrt(var + (Acc)eps);
}

/// Whether hp_reduce_launch gives each output a warp on the GPU, for
/// reductions of at least 32 elements: floating sums (Sum, Mean, SumSquare,
/// L1, L2), and Max and Min of any type (exact in any order; NaN wins as in
/// the sequential hp_max/hp_min, and of a +0 and a -0 either may come out,
/// as in NumPy). Products and LogSumExp keep a thread per output (their
/// rounding stays the sequential one's).
template <typename Acc, int OP> static bool hp_reduce_by_warp(int64_t count) {
  const bool sum = OP == HP_RED_SUM || OP == HP_RED_MEAN ||
                   OP == HP_RED_SUMSQ || OP == HP_RED_L1 || OP == HP_RED_L2;
  return count >= 32 && ((sum && std::is_floating_point<Acc>::value) ||
                         OP == HP_RED_MAX || OP == HP_RED_MIN);
}

/// hp_reduce (same parameters) with one warp per output, for the sums of
/// hp_reduce_by_warp: iteration i is lane i % 32 of output i / 32, and lane
/// l adds the reduced elements l, l + 32, ... before hp_warp_sum combines
/// the lanes. A thread per output left the GPU mostly idle on reductions of
/// few long rows (Llama's RMSNorm: 32 x 16 rows of 64 at batch 32).
template <typename T, typename Acc, int OP>
HP_KERNEL(hp_reduce_warp, int keptRank, hp_dims keptDims, hp_dims keptStrides,
          int redRank, hp_dims redDims, hp_dims redStrides, int64_t redCount,
          const T *in, T *out) {
  HP_FOR(i) {
    const int64_t o = i >> 5;
    const int lane = (int)(i & 31);
    int64_t rem = o, base = 0;
    for (int d = keptRank - 1; d >= 0; --d) {
      base += (rem % keptDims.v[d]) * keptStrides.v[d];
      rem /= keptDims.v[d];
    }
    Acc acc = OP == HP_RED_MAX   ? hp_max_min_identity<T, Acc, true>()
              : OP == HP_RED_MIN ? hp_max_min_identity<T, Acc, false>()
                                 : Acc(0);
    for (int64_t r = lane; r < redCount; r += 32) {
      int64_t rr = r, off = base;
      for (int d = redRank - 1; d >= 0; --d) {
        off += (rr % redDims.v[d]) * redStrides.v[d];
        rr /= redDims.v[d];
      }
      const Acc x = (Acc)in[off];
      if (OP == HP_RED_MAX)
        acc = hp_max(acc, x);
      else if (OP == HP_RED_MIN)
        acc = hp_min(acc, x);
      else
        acc += OP == HP_RED_L1                         ? hp_abs(x)
               : OP == HP_RED_SUMSQ || OP == HP_RED_L2 ? x * x
                                                       : x;
    }
    acc = OP == HP_RED_MAX   ? hp_warp_max(acc)
          : OP == HP_RED_MIN ? hp_warp_min(acc)
                             : hp_warp_sum(acc);
    if (lane == 0) {
      if (OP == HP_RED_MEAN)
        acc = acc / (Acc)redCount;
      if (OP == HP_RED_L2)
        acc = (Acc)hp_sqrt((double)acc);
      out[o] = (T)acc;
    }
  }
}

/// hp_softmax with one warp per row: iteration i is lane i % 32 of row
/// i / 32 (the grid-stride step is a multiple of 32, so a warp's lanes
/// always share a row and every shuffle has all 32 lanes).
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_warp, int64_t len, int64_t inner, const T *in, T *out) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc m = hp_lowest<Acc>();
    for (int64_t k = lane; k < len; k += 32)
      m = hp_max(m, (Acc)in[base + k * inner]);
    m = hp_warp_max(m);
    Acc s = 0;
    for (int64_t k = lane; k < len; k += 32)
      s += hp_exp((Acc)in[base + k * inner] - m);
    s = hp_warp_sum(s);
    const Acc ls = hp_log(s);
    for (int64_t k = lane; k < len; k += 32) {
      Acc x = (Acc)in[base + k * inner] - m;
      out[base + k * inner] = (T)(LOG ? x - ls : hp_exp(x) / s);
    }
  }
}

/// hp_layer_norm with one warp per row (see hp_softmax_warp); a lane
/// computes and stores the prologue's elements it then reads.
template <typename T, typename S, typename Acc, typename Pro>
HP_KERNEL(hp_layer_norm_warp, int64_t len, float eps, Pro pro, const T *x,
          const S *scale, int64_t scaleLen, const S *bias, int64_t biasLen,
          T *y, S *meanOut, S *invStdOut) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const T *p = x + r * len;
    if (Pro::any)
      for (int64_t k = lane; k < len; k += 32)
        ((T *)p)[k] = (T)pro(r * len + k, k);
    Acc mean, inv;
    hp_warp_row_stats(p, len, eps, lane, mean, inv);
    for (int64_t k = lane; k < len; k += 32) {
      Acc v = ((Acc)p[k] - mean) * inv * (Acc)scale[k % scaleLen];
      if (bias)
        v += (Acc)bias[k % biasLen];
      y[r * len + k] = (T)v;
    }
    if (lane == 0 && meanOut)
      meanOut[r] = (S)mean;
    if (lane == 0 && invStdOut)
      invStdOut[r] = (S)inv;
  }
}
#endif

/// Launches hp_reduce over n outputs, on the GPU as hp_reduce_warp where
/// hp_reduce_by_warp says so.
template <typename T, typename Acc, int OP>
static void hp_reduce_launch(hp_ctx *ctx, int64_t n, int keptRank,
                             hp_dims keptDims, hp_dims keptStrides, int redRank,
                             hp_dims redDims, hp_dims redStrides,
                             int64_t redCount, const T *in, T *out) {
#if HP_CUDA
  if (hp_reduce_by_warp<Acc, OP>(redCount)) {
    hp_launch(ctx, hp_reduce_warp<T, Acc, OP>, n * 32, keptRank, keptDims,
              keptStrides, redRank, redDims, redStrides, redCount, in, out);
    return;
  }
#endif
  hp_launch(ctx, hp_reduce<T, Acc, OP>, n, keptRank, keptDims, keptStrides,
            redRank, redDims, redStrides, redCount, in, out);
}

/// Softmax / LogSoftmax of `rows` rows: a warp per row on the GPU, a thread
/// per row on the CPU.
template <typename T, typename Acc, bool LOG>
static void hp_softmax_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                              int64_t inner, const T *in, T *out) {
#if HP_CUDA
  hp_launch(ctx, hp_softmax_warp<T, Acc, LOG>, rows * 32, len, inner, in, out);
#else
  if (inner == 1)
    hp_launch(ctx, hp_softmax_rows<T, Acc, LOG>, rows, len, in, out);
  else
    hp_launch(ctx, hp_softmax<T, Acc, LOG>, rows, len, inner, in, out);
#endif
}

/// LayerNormalization of `rows` rows: a warp per row on the GPU, a thread
/// per row on the CPU; `pro` computes x first (hp_pro_none: x is read).
template <typename T, typename S, typename Acc, typename Pro = hp_pro_none>
static void hp_layer_norm_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                 float eps, const T *x, const S *scale,
                                 int64_t scaleLen, const S *bias,
                                 int64_t biasLen, T *y, S *meanOut,
                                 S *invStdOut, Pro pro = Pro()) {
#if HP_CUDA
  hp_launch(ctx, hp_layer_norm_warp<T, S, Acc, Pro>, rows * 32, len, eps, pro,
            x, scale, scaleLen, bias, biasLen, y, meanOut, invStdOut);
#else
  hp_launch(ctx, hp_layer_norm<T, S, Acc, Pro>, rows, len, eps, pro, x, scale,
            scaleLen, bias, biasLen, y, meanOut, invStdOut);
#endif
}

#endif // HETPAR_DEVICE_REDUCTIONS_H
