//===- hetpar_norm_grad.h - Softmax and LayerNorm gradients -----*- C++ -*-===//
//
// SoftmaxGrad, LogSoftmaxGrad and LayerNormalizationGrad.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_NORM_GRAD_H
#define HETPAR_DEVICE_NORM_GRAD_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Gradients of the row-wise normalizations: SoftmaxGrad, LogSoftmaxGrad and
// LayerNormalizationGrad (include/hetpar/Dialect/ONNX/ONNXOps.td has their
// formulas and sources). Rows as in the forward kernels above; sums in Acc,
// one rounding to T on the store.
//===----------------------------------------------------------------------===//

/// SoftmaxGrad (LOG false): dX = Y * (dY - sum(dY * Y)); LogSoftmaxGrad (LOG
/// true): dX = dY - exp(Y) * sum(dY); the sums along the middle axis of
/// [outer, len, inner], one row per iteration.
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_grad, int64_t len, int64_t inner, const T *dY, const T *Y,
          T *dX) {
  HP_FOR_W(r, 2 * len) {
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc s = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = base + k * inner;
      s += LOG ? (Acc)dY[i] : (Acc)dY[i] * (Acc)Y[i];
    }
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = base + k * inner;
      const Acc dy = (Acc)dY[i], y = (Acc)Y[i];
      dX[i] = (T)(LOG ? dy - hp_exp(y) * s : y * (dy - s));
    }
  }
}

/// The row statistics of LayerNormalization, computed as hp_layer_norm does
/// (two passes): mean and inv = 1 / sqrt(var + eps) of the len elements at p.
template <typename T, typename Acc>
HP_HD void hp_row_stats(const T *p, int64_t len, float eps, Acc &mean,
                        Acc &inv) {
  mean = 0;
  for (int64_t k = 0; k < len; ++k)
    mean += (Acc)p[k];
  mean /= (Acc)len;
  Acc var = 0;
  for (int64_t k = 0; k < len; ++k) {
    Acc d = (Acc)p[k] - mean;
    var += d * d;
  }
  var /= (Acc)len;
  inv = Acc(1) / hp_sqrt(var + (Acc)eps);
}

/// LayerNormalizationGrad, dX of each of hp_n rows of len elements: with the
/// row's mean and inv recomputed, xhat = (x - mean) * inv, g = dY * scale,
///   dX = inv * (g - sum(g) / len - xhat * sum(g * xhat) / len).
/// dX may be null (not used); stats, when not null, gets (mean, inv) per row
/// for hp_layer_norm_grad_cols.
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_layer_norm_grad_rows, int64_t len, float eps, const T *dY,
          const T *x, const S *scale, T *dX, Acc *stats) {
  HP_FOR_W(r, 6 * len) {
    const T *p = x + r * len;
    const T *g = dY + r * len;
    Acc mean, inv;
    hp_row_stats<T, Acc>(p, len, eps, mean, inv);
    if (dX) {
      Acc sg = 0, sgx = 0;
      for (int64_t k = 0; k < len; ++k) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        sg += gk;
        sgx += gk * (((Acc)p[k] - mean) * inv);
      }
      const Acc a = sg / (Acc)len, b = sgx / (Acc)len;
      for (int64_t k = 0; k < len; ++k) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        const Acc xh = ((Acc)p[k] - mean) * inv;
        dX[r * len + k] = (T)(inv * (gk - a - xh * b));
      }
    }
    if (stats) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = inv;
    }
  }
}

/// LayerNormalizationGrad, dScale = sum over rows of dY * xhat and dB = sum
/// over rows of dY, from the (mean, inv) pairs hp_layer_norm_grad_rows wrote:
/// one iteration per block of COLS columns (rows in order: deterministic, no
/// atomics). dScale or dBias may be null (not used).
template <typename T, typename S, typename Acc, int COLS>
HP_KERNEL(hp_layer_norm_grad_cols, int64_t rows, int64_t len, const T *dY,
          const T *x, const Acc *stats, S *dScale, S *dBias) {
  HP_FOR_W(blk, rows * COLS) {
    const int64_t c0 = blk * COLS;
    const int n = (int)(len - c0 < COLS ? len - c0 : COLS);
    Acc ds[COLS], db[COLS];
    for (int j = 0; j < COLS; ++j)
      ds[j] = db[j] = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const Acc mean = stats[2 * r], inv = stats[2 * r + 1];
      const int64_t o = r * len + c0;
      for (int j = 0; j < n; ++j) {
        const Acc dy = (Acc)dY[o + j];
        ds[j] += dy * (((Acc)x[o + j] - mean) * inv);
        db[j] += dy;
      }
    }
    for (int j = 0; j < n; ++j) {
      if (dScale)
        dScale[c0 + j] = (S)ds[j];
      if (dBias)
        dBias[c0 + j] = (S)db[j];
    }
  }
}

#if HP_CUDA
/// hp_softmax_grad with one warp per row (see hp_softmax_warp).
template <typename T, typename Acc, bool LOG>
HP_KERNEL(hp_softmax_grad_warp, int64_t len, int64_t inner, const T *dY,
          const T *Y, T *dX) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t base = (r / inner) * len * inner + r % inner;
    Acc s = 0;
    for (int64_t k = lane; k < len; k += 32) {
      const int64_t e = base + k * inner;
      s += LOG ? (Acc)dY[e] : (Acc)dY[e] * (Acc)Y[e];
    }
    s = hp_warp_sum(s);
    for (int64_t k = lane; k < len; k += 32) {
      const int64_t e = base + k * inner;
      const Acc dy = (Acc)dY[e], y = (Acc)Y[e];
      dX[e] = (T)(LOG ? dy - hp_exp(y) * s : y * (dy - s));
    }
  }
}

/// hp_layer_norm_grad_rows with one warp per row (see hp_softmax_warp); the
/// statistics as hp_layer_norm_warp computes them.
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_layer_norm_grad_rows_warp, int64_t len, float eps, const T *dY,
          const T *x, const S *scale, T *dX, Acc *stats) {
  HP_FOR(i) {
    const int64_t r = i >> 5;
    const int lane = (int)(i & 31);
    const T *p = x + r * len;
    const T *g = dY + r * len;
    Acc mean, inv;
    hp_warp_row_stats(p, len, eps, lane, mean, inv);
    if (dX) {
      Acc sg = 0, sgx = 0;
      for (int64_t k = lane; k < len; k += 32) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        sg += gk;
        sgx += gk * (((Acc)p[k] - mean) * inv);
      }
      const Acc a = hp_warp_sum(sg) / (Acc)len;
      const Acc b = hp_warp_sum(sgx) / (Acc)len;
      for (int64_t k = lane; k < len; k += 32) {
        const Acc gk = (Acc)g[k] * (Acc)scale[k];
        const Acc xh = ((Acc)p[k] - mean) * inv;
        dX[r * len + k] = (T)(inv * (gk - a - xh * b));
      }
    }
    if (lane == 0 && stats) {
      stats[2 * r] = mean;
      stats[2 * r + 1] = inv;
    }
  }
}
#endif

/// SoftmaxGrad / LogSoftmaxGrad of `rows` rows: a warp per row on the GPU, a
/// thread per row on the CPU.
template <typename T, typename Acc, bool LOG>
static void hp_softmax_grad_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                   int64_t inner, const T *dY, const T *Y,
                                   T *dX) {
#if HP_CUDA
  hp_launch(ctx, hp_softmax_grad_warp<T, Acc, LOG>, rows * 32, len, inner, dY,
            Y, dX);
#else
  hp_launch(ctx, hp_softmax_grad<T, Acc, LOG>, rows, len, inner, dY, Y, dX);
#endif
}

/// LayerNormalizationGrad of `rows` rows of `len` elements: the rows (dX and,
/// when dScale or dBias is wanted, the statistics into `stats`, 2 * rows
/// Acc), then the columns (dScale, dBias). A warp per row and a thread per
/// column on the GPU; a thread per row and per 16 columns on the CPU. Null
/// result pointers are results not computed.
template <typename T, typename S, typename Acc>
static void hp_layer_norm_grad_launch(hp_ctx *ctx, int64_t rows, int64_t len,
                                      float eps, const T *dY, const T *x,
                                      const S *scale, T *dX, S *dScale,
                                      S *dBias, Acc *stats) {
  const bool cols = dScale || dBias;
  if (len > 0 && (dX || cols)) {
#if HP_CUDA
    hp_launch(ctx, hp_layer_norm_grad_rows_warp<T, S, Acc>, rows * 32, len, eps,
              dY, x, scale, dX, cols ? stats : (Acc *)0);
#else
    hp_launch(ctx, hp_layer_norm_grad_rows<T, S, Acc>, rows, len, eps, dY, x,
              scale, dX, cols ? stats : (Acc *)0);
#endif
  }
  if (!cols)
    return;
#if HP_CUDA
  hp_launch(ctx, hp_layer_norm_grad_cols<T, S, Acc, 1>, len, rows, len, dY, x,
            (const Acc *)stats, dScale, dBias);
#else
  hp_launch(ctx, hp_layer_norm_grad_cols<T, S, Acc, 16>, (len + 15) / 16, rows,
            len, dY, x, (const Acc *)stats, dScale, dBias);
#endif
}

#endif // HETPAR_DEVICE_NORM_GRAD_H
