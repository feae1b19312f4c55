//===- hetpar_batch_norm.h - InstanceNorm, training BatchNorm ---*- C++ -*-===//
//
// InstanceNormalization and BatchNormalization in training mode.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_BATCH_NORM_H
#define HETPAR_DEVICE_BATCH_NORM_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// InstanceNormalization: rows are (n, c) pairs of `len` spatial elements.
template <typename T, typename Acc>
HP_KERNEL(hp_instance_norm, int64_t channels, int64_t len, float eps,
          const T *x, const T *scale, const T *bias, T *y) {
  HP_FOR_W(r, len) {
    int64_t c = r % channels;
    const T *p = x + r * len;
    Acc mean = 0, var = 0;
    for (int64_t k = 0; k < len; ++k)
      mean += (Acc)p[k];
    mean /= (Acc)len;
    for (int64_t k = 0; k < len; ++k) {
      Acc d = (Acc)p[k] - mean;
      var += d * d;
    }
    var /= (Acc)len;
    Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    for (int64_t k = 0; k < len; ++k)
      y[r * len + k] =
          (T)(((Acc)p[k] - mean) * inv * (Acc)scale[c] + (Acc)bias[c]);
  }
}

/// BatchNormalization in training mode (ONNX opset 15) over x viewed as
/// [N, C, S] (S: the product of the spatial extents), one iteration per
/// channel c: the batch mean and the population variance (divided by N*S, as
/// ONNX's ReduceVar) of its N*S elements, then
///   y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c],
///   runMean[c] = inMean[c] * momentum + mean * (1 - momentum),
///   runVar[c]  = inVar[c] * momentum + var * (1 - momentum).
/// runMean / runVar may be null (no running statistics asked for); they may
/// alias inMean / inVar (each iteration reads its channel before writing it).
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_batch_norm_train, int64_t N, int64_t C, int64_t Sp, float eps,
          float momentum, const T *x, const S *scale, const S *bias,
          const S *inMean, const S *inVar, T *y, S *runMean, S *runVar) {
  HP_FOR_W(c, N * Sp) {
    const int64_t count = N * Sp;
    Acc mean = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < Sp; ++k)
        mean += (Acc)x[(n * C + c) * Sp + k];
    mean /= (Acc)count;
    Acc var = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < Sp; ++k) {
        Acc d = (Acc)x[(n * C + c) * Sp + k] - mean;
        var += d * d;
      }
    var /= (Acc)count;
    const Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    const Acc a = inv * (Acc)scale[c], b = (Acc)bias[c];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < Sp; ++k) {
        const int64_t i = (n * C + c) * Sp + k;
        y[i] = (T)(((Acc)x[i] - mean) * a + b);
      }
    const Acc m = (Acc)momentum;
    if (runMean)
      runMean[c] = (S)((Acc)inMean[c] * m + mean * (Acc(1) - m));
    if (runVar)
      runVar[c] = (S)((Acc)inVar[c] * m + var * (Acc(1) - m));
  }
}

#if HP_CUDA
/// hp_batch_norm_train with one warp per channel (see hp_softmax_warp).
template <typename T, typename S, typename Acc>
HP_KERNEL(hp_batch_norm_train_warp, int64_t N, int64_t C, int64_t Sp, float eps,
          float momentum, const T *x, const S *scale, const S *bias,
          const S *inMean, const S *inVar, T *y, S *runMean, S *runVar) {
  HP_FOR(i) {
    const int64_t c = i >> 5;
    const int lane = (int)(i & 31);
    const int64_t count = N * Sp;
    Acc mean = 0;
    for (int64_t j = lane; j < count; j += 32)
      mean += (Acc)x[((j / Sp) * C + c) * Sp + j % Sp];
    mean = hp_warp_sum(mean) / (Acc)count;
    Acc var = 0;
    for (int64_t j = lane; j < count; j += 32) {
      Acc d = (Acc)x[((j / Sp) * C + c) * Sp + j % Sp] - mean;
      var += d * d;
    }
    var = hp_warp_sum(var) / (Acc)count;
    const Acc inv = Acc(1) / hp_sqrt(var + (Acc)eps);
    const Acc a = inv * (Acc)scale[c], b = (Acc)bias[c];
    for (int64_t j = lane; j < count; j += 32) {
      const int64_t k = ((j / Sp) * C + c) * Sp + j % Sp;
      y[k] = (T)(((Acc)x[k] - mean) * a + b);
    }
    const Acc m = (Acc)momentum;
    if (lane == 0 && runMean)
      runMean[c] = (S)((Acc)inMean[c] * m + mean * (Acc(1) - m));
    if (lane == 0 && runVar)
      runVar[c] = (S)((Acc)inVar[c] * m + var * (Acc(1) - m));
  }
}
#endif

/// Training-mode BatchNormalization of C channels: a warp per channel on the
/// GPU, a thread per channel on the CPU.
template <typename T, typename S, typename Acc>
static void
hp_batch_norm_train_launch(hp_ctx *ctx, int64_t N, int64_t C, int64_t Sp,
                           float eps, float momentum, const T *x,
                           const S *scale, const S *bias, const S *inMean,
                           const S *inVar, T *y, S *runMean, S *runVar) {
#if HP_CUDA
  hp_launch(ctx, hp_batch_norm_train_warp<T, S, Acc>, C * 32, N, C, Sp, eps,
            momentum, x, scale, bias, inMean, inVar, y, runMean, runVar);
#else
  hp_launch(ctx, hp_batch_norm_train<T, S, Acc>, C, N, C, Sp, eps, momentum, x,
            scale, bias, inMean, inVar, y, runMean, runVar);
#endif
}

#endif // HETPAR_DEVICE_BATCH_NORM_H
