//===- hetpar_im2col.h - im2col, N-d convolution shape ----------*- C++ -*-===//
//
// im2col and the N-d convolution shape (hp_conv_nd) that cuDNN and im2col
// share.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_IM2COL_H
#define HETPAR_DEVICE_IM2COL_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// im2col for one image of a grouped convolution: cols[(c*kernelCount + k),
/// p] = x[c, p*stride - pad + k*dilation] (0 outside), c over `channels`
/// channels, p over the output positions.
template <typename T>
HP_KERNEL(hp_im2col, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          T *cols) {
  HP_FOR(i) {
    int64_t p = i % outPlane, row = i / outPlane;
    int64_t k = row % kernelCount, c = row / kernelCount;
    int64_t flat = 0, mul = 1;
    bool inside = true;
    int64_t pr = p, kr = k;
    for (int d = nsp - 1; d >= 0; --d) {
      int64_t oc = pr % outSp.v[d];
      pr /= outSp.v[d];
      int64_t kc = kr % kernel.v[d];
      kr /= kernel.v[d];
      int64_t ic = oc * stride.v[d] - padBegin.v[d] + kc * dilation.v[d];
      if (ic < 0 || ic >= inSp.v[d])
        inside = false;
      flat += ic * mul;
      mul *= inSp.v[d];
    }
    cols[i] = inside ? x[c * inPlane + flat] : T(0);
  }
}

/// im2col of one image on the CPU: one iteration per (channel, kernel
/// position), which walks the output's rows with a counter and fills each
/// row of outSp[last] columns: the kernel coordinates and the row's padded
/// extent are computed once per iteration, and a row costs no division
/// (divisions per row were most of ResNet-18/8's time), and no branch per
/// element; at stride 1 a row is a memcpy.
template <typename T>
HP_KERNEL(hp_im2col_rows, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          T *cols) {
  const int last = nsp - 1;
  const int64_t width = outSp.v[last];
  const int64_t rows = outPlane / width;
  HP_FOR_W(rk, outPlane) {
    int64_t k = rk % kernelCount, c = rk / kernelCount;
    // Kernel coordinates, innermost last.
    int64_t kc[HP_MAX_RANK], kr = k;
    for (int d = last; d >= 0; --d) {
      kc[d] = kr % kernel.v[d];
      kr /= kernel.v[d];
    }
    // The columns [lo, hi) of a row that read inside the input (start +
    // ow * step in [0, n)); the padding on either side is zero.
    int64_t start = kc[last] * dilation.v[last] - padBegin.v[last];
    int64_t step = stride.v[last], n = inSp.v[last];
    int64_t lo = start >= 0 ? 0 : (step - 1 - start) / step;
    int64_t hi = start >= n ? 0 : (n - start + step - 1) / step;
    lo = lo < width ? lo : width;
    hi = hi < width ? hi : width;
    hi = hi > lo ? hi : lo;
    const T *plane = x + c * inPlane;
    T *dst = cols + rk * outPlane;
    int64_t oc[HP_MAX_RANK] = {0}; // the row's outer output coordinates
    for (int64_t row = 0; row < rows; ++row, dst += width) {
      int64_t base = 0, mul = n;
      bool inside = true;
      for (int d = last - 1; d >= 0; --d) {
        int64_t ic =
            oc[d] * stride.v[d] - padBegin.v[d] + kc[d] * dilation.v[d];
        inside = inside && ic >= 0 && ic < inSp.v[d];
        base += ic * mul;
        mul *= inSp.v[d];
      }
      int64_t rowLo = inside ? lo : width, rowHi = inside ? hi : width;
      const T *src = plane + base; // read at start + ow * step >= 0
      for (int64_t ow = 0; ow < rowLo; ++ow)
        dst[ow] = T(0);
      if (step == 1 && rowHi > rowLo)
        memcpy(dst + rowLo, src + start + rowLo, (rowHi - rowLo) * sizeof(T));
      else
        for (int64_t ow = rowLo; ow < rowHi; ++ow)
          dst[ow] = src[start + ow * step];
      for (int64_t ow = rowHi; ow < width; ++ow)
        dst[ow] = T(0);
      for (int d = last - 1; d >= 0; --d) {
        if (++oc[d] < outSp.v[d])
          break;
        oc[d] = 0;
      }
    }
  }
}

/// Writes the output columns [a, b) of one im2col row to dst[0, b - a):
/// column ow reads src[start + ow * step] where ow is in [lo, hi) (the
/// columns whose input lies inside the row), and is zero elsewhere. Stride 1
/// and 2 (the usual convolutions) are loops the compiler vectorizes.
template <typename T>
static inline void
hp_im2col_span(T *__restrict__ dst, const T *__restrict__ src, int64_t a,
               int64_t b, int64_t lo, int64_t hi, int64_t start, int64_t step) {
  lo = lo < a ? a : lo > b ? b : lo;
  hi = hi < lo ? lo : hi > b ? b : hi;
  dst -= a;
  for (int64_t ow = a; ow < lo; ++ow)
    dst[ow] = T(0);
  const T *from = src + start;
  if (step == 1) {
    HP_SIMD
    for (int64_t ow = lo; ow < hi; ++ow)
      dst[ow] = from[ow];
  } else if (step == 2) {
    HP_SIMD
    for (int64_t ow = lo; ow < hi; ++ow)
      dst[ow] = from[2 * ow];
  } else {
    for (int64_t ow = lo; ow < hi; ++ow)
      dst[ow] = from[ow * step];
  }
  for (int64_t ow = hi; ow < b; ++ow)
    dst[ow] = T(0);
}

/// im2col of one image with two spatial dims on the CPU: one iteration per
/// (channel, kh, kw) row block; the valid columns of the block's rows once,
/// each output row a bounds test and hp_im2col_span. The rank-generic
/// hp_im2col_rows spent most of its time on per-row index arithmetic and a
/// scalar strided copy (ResNet-18/8's stride-2 stem was 40% of its run).
template <typename T>
HP_KERNEL(hp_im2col2d_rows, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          T *cols) {
  const int64_t inH = inSp.v[0], inW = inSp.v[1];
  const int64_t outH = outSp.v[0], width = outSp.v[1];
  const int64_t kW = kernel.v[1], step = stride.v[1];
  HP_FOR_W(rk, outPlane) {
    const int64_t k = rk % kernelCount, c = rk / kernelCount;
    const int64_t kh = k / kW, kw = k % kW;
    // The columns [lo, hi) that read inside the input row.
    const int64_t start = kw * dilation.v[1] - padBegin.v[1];
    int64_t lo = start >= 0 ? 0 : (step - 1 - start) / step;
    int64_t hi = start >= inW ? 0 : (inW - start + step - 1) / step;
    lo = lo < width ? lo : width;
    hi = hi < width ? hi : width;
    const T *plane = x + c * inPlane;
    T *dst = cols + rk * outPlane;
    for (int64_t oh = 0; oh < outH; ++oh, dst += width) {
      const int64_t ih = oh * stride.v[0] - padBegin.v[0] + kh * dilation.v[0];
      if (ih < 0 || ih >= inH)
        hp_im2col_span(dst, plane, 0, width, width, width, 0, step);
      else
        hp_im2col_span(dst, plane + ih * inW, 0, width, lo, hi, start, step);
    }
  }
}

/// im2col of one image: one thread per element on the GPU, one iteration
/// per row of output columns on the CPU.
template <typename T>
static void hp_im2col_launch(hp_ctx *ctx, int nsp, hp_dims inSp, hp_dims outSp,
                             hp_dims kernel, hp_dims stride, hp_dims padBegin,
                             hp_dims dilation, int64_t channels,
                             int64_t kernelCount, int64_t inPlane,
                             int64_t outPlane, const T *x, T *cols) {
#if HP_CUDA
  hp_launch(ctx, hp_im2col<T>, channels * kernelCount * outPlane, nsp, inSp,
            outSp, kernel, stride, padBegin, dilation, kernelCount, inPlane,
            outPlane, x, cols);
#else
  if (nsp == 2)
    hp_launch(ctx, hp_im2col2d_rows<T>, channels * kernelCount, inSp, outSp,
              kernel, stride, padBegin, dilation, kernelCount, inPlane,
              outPlane, x, cols);
  else
    hp_launch(ctx, hp_im2col_rows<T>, channels * kernelCount, nsp, inSp, outSp,
              kernel, stride, padBegin, dilation, kernelCount, inPlane,
              outPlane, x, cols);
#endif
}

/// A convolution as cuDNN's N-d API describes it (PyTorch describes every
/// convolution so): N images, G groups of Cg input and Mg output channels,
/// `nsp` spatial dimensions (up to HP_MAX_RANK - 2) of extents `in` and
/// `out`, kernel `k`, `stride`, `pad` before each dimension and `dilation`.
/// cuDNN pads both ends by `pad` (it has no other padding); im2col
/// (hp_conv_im2col) reads only the beginning's. The two agree wherever the
/// output extents do, which hp_conv_cudnn checks.
struct hp_conv_nd {
  int64_t N, G, Cg, Mg;
  int nsp;
  hp_dims in, out, k, stride, pad, dilation;
};

/// `s` as an hp_conv_nd (2 spatial dimensions; the begin padding).
static inline hp_conv_nd hp_conv_nd_of(const hp_conv2d_shape &s) {
  return hp_conv_nd{s.N,
                    s.G,
                    s.Cg,
                    s.Mg,
                    2,
                    hp_dims{{s.H, s.W}},
                    hp_dims{{s.OH, s.OW}},
                    hp_dims{{s.kH, s.kW}},
                    hp_dims{{s.sH, s.sW}},
                    hp_dims{{s.pH, s.pW}},
                    hp_dims{{s.dH, s.dW}}};
}

#endif // HETPAR_DEVICE_IM2COL_H
