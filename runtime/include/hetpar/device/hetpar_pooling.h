//===- hetpar_pooling.h - pooling -------------------------------*- C++ -*-===//
//
// Max and average pooling, and their launcher (cuDNN on the GPU where it
// takes the shape).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_POOLING_H
#define HETPAR_DEVICE_POOLING_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// A pooling window's running result: the first maximum and its flat input
/// offset (a later element replaces it only when greater), or the sum and
/// the count of the positions that count for the average.
template <typename Acc, bool MAX> struct hp_pool_state {
  Acc acc = MAX ? hp_lowest<Acc>() : Acc(0);
  int64_t count = 0, best = -1;
  HP_HD void add(Acc v, int64_t at) {
    if (MAX) {
      if (best < 0 || v > acc) {
        acc = v;
        best = at;
      }
    } else {
      acc += v;
    }
    ++count;
  }
  template <typename T>
  HP_HD void store(T *out, int64_t *indices, int64_t o) const {
    if (MAX) {
      out[o] = (T)acc;
      if (indices)
        indices[o] = best;
    } else {
      out[o] = (T)(count ? acc / (Acc)count : Acc(0));
    }
  }
};

/// The window positions kd in [*first, *end) of [0, k) whose coordinates
/// start + kd * dil (dil > 0) lie in [lo, hi); an empty range (first ==
/// end) when none does. The pooling kernels visit these alone, so that a
/// window much larger than its input (a SAME-padded kernel of up to 2^31
/// positions, which shape inference allows) costs what the input holds, not
/// what the window spans: visited one by one, 40000 x 40000 positions per
/// output of an 8 x 8 input ran for hours.
HP_HD void hp_window_span(int64_t start, int64_t dil, int64_t k, int64_t lo,
                          int64_t hi, int64_t *first, int64_t *end) {
  const int64_t a = lo - start, b = hi - 1 - start;
  const int64_t f = a <= 0 ? 0 : (a + dil - 1) / dil;
  int64_t e = b < 0 ? 0 : b / dil + 1;
  e = e < k ? e : k;
  *first = f < e ? f : e;
  *end = e;
}

/// Adds to `st` the positions of output window `o` that lie inside the
/// input (`in`: one plane; `base` + the flat offset in it is what a maximum
/// records), in row-major kernel order, the order that decides which of
/// equal maxima is the first; only hp_window_span's ranges are visited.
template <typename T, typename Acc, bool MAX>
HP_HD void hp_pool_window(int nsp, const hp_dims &inSp, const hp_dims &kernel,
                          const hp_dims &stride, const hp_dims &padBegin,
                          const hp_dims &dilation, const int64_t *o,
                          const T *in, int64_t base,
                          hp_pool_state<Acc, MAX> &st) {
  int64_t start[HP_MAX_RANK], first[HP_MAX_RANK], end[HP_MAX_RANK],
      kc[HP_MAX_RANK];
  for (int d = 0; d < nsp; ++d) {
    start[d] = o[d] * stride.v[d] - padBegin.v[d];
    hp_window_span(start[d], dilation.v[d], kernel.v[d], 0, inSp.v[d],
                   &first[d], &end[d]);
    if (first[d] == end[d])
      return;
    kc[d] = first[d];
  }
  for (;;) {
    int64_t flat = 0;
    for (int d = 0; d < nsp; ++d)
      flat = flat * inSp.v[d] + start[d] + kc[d] * dilation.v[d];
    st.add((Acc)in[flat], base + flat);
    int d = nsp - 1;
    for (; d >= 0 && ++kc[d] == end[d]; --d)
      kc[d] = first[d];
    if (d < 0)
      return;
  }
}

/// The number of positions of output window `o` inside the input, or with
/// `padded` inside the padded extent [-padBegin, in + padEnd): a box, so a
/// product over the dims. What an average divides by.
HP_HD int64_t hp_window_count(int nsp, const hp_dims &inSp,
                              const hp_dims &kernel, const hp_dims &stride,
                              const hp_dims &padBegin, const hp_dims &padEnd,
                              const hp_dims &dilation, const int64_t *o,
                              bool padded) {
  int64_t count = 1;
  for (int d = 0; d < nsp; ++d) {
    int64_t first, end;
    hp_window_span(o[d] * stride.v[d] - padBegin.v[d], dilation.v[d],
                   kernel.v[d], padded ? -padBegin.v[d] : 0,
                   padded ? inSp.v[d] + padEnd.v[d] : inSp.v[d], &first, &end);
    count *= end - first;
  }
  return count;
}

/// Pooling over `nsp` spatial dims of [N*C, spatial...]: MAX=true takes the
/// maximum (and its flat index when indices is not null), else the average.
/// Windows start at out*stride - padBegin and step by dilation; positions
/// outside [0, in) are skipped (max, average without count_include_pad) or
/// counted when inside the padded extent [-padBegin, in + padEnd)
/// (count_include_pad=1).
template <typename T, typename Acc, bool MAX>
HP_KERNEL(hp_pool, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
          int countIncludePad, int64_t kernelCount, int64_t inPlane,
          int64_t outPlane, const T *in, T *out, int64_t *indices) {
  HP_FOR_W(i, kernelCount) {
    int64_t plane = i / outPlane, rem = i % outPlane, o[HP_MAX_RANK];
    for (int d = nsp - 1; d >= 0; --d) {
      o[d] = rem % outSp.v[d];
      rem /= outSp.v[d];
    }
    hp_pool_state<Acc, MAX> st;
    hp_pool_window<T, Acc, MAX>(nsp, inSp, kernel, stride, padBegin, dilation,
                                o, in + plane * inPlane, plane * inPlane, st);
    if (!MAX && countIncludePad)
      st.count = hp_window_count(nsp, inSp, kernel, stride, padBegin, padEnd,
                                 dilation, o, true);
    st.store(out, indices, i);
  }
}

/// The widest input span (elements) hp_max_pool_columns folds on the stack.
#define HP_POOL_FOLD_MAX 2048

/// Max pooling of the output columns [lo, hi) of one output row, whose
/// windows lie inside the input along the row, as vector loops, separably:
/// first the window rows are folded into one row (a unit-stride pass per
/// window row), then the window columns of the folded row (a strided pass
/// per window column): kH + kW passes instead of kH x kW strided ones. `plane`
/// is the input plane; window row 0 starts at input row h0. Returns false,
/// writing nothing, when every window row is outside the input, when the
/// span is wider than HP_POOL_FOLD_MAX, or when the rows hold a NaN: the
/// caller's loop, in hp_pool's order (the first position seeding the
/// maximum, only a greater value replacing it), then gives the NaN rule
/// exactly. Without NaNs the maximum does not depend on the order, and the
/// loops stay plain maxima (a NaN test per step in them made ResNet-18/8's
/// pooling at batch 32 slower than kH x kW passes).
template <typename T, typename Acc>
static bool hp_max_pool_columns(const T *plane, int64_t inH, int64_t inW,
                                int64_t h0, int64_t kH, int64_t kW, int64_t sW,
                                int64_t dH, int64_t dW, int64_t pW, int64_t lo,
                                int64_t hi, T *out) {
  // The input columns [c0, c0 + n) that the windows of [lo, hi) read.
  const int64_t c0 = lo * sW - pW;
  const int64_t n = (hi - 1) * sW - pW + (kW - 1) * dW + 1 - c0;
  if (n > HP_POOL_FOLD_MAX)
    return false;
  T fold[HP_POOL_FOLD_MAX];
  bool seeded = false;
  int nan = 0;
  for (int64_t kh = 0; kh < kH; ++kh) {
    const int64_t ih = h0 + kh * dH;
    if (ih < 0 || ih >= inH)
      continue;
    const T *src = plane + ih * inW + c0;
    if (!seeded) {
      HP_SIMD
      for (int64_t i = 0; i < n; ++i) {
        const Acc v = (Acc)src[i];
        fold[i] = src[i];
        nan |= v != v;
      }
      seeded = true;
      continue;
    }
    HP_SIMD
    for (int64_t i = 0; i < n; ++i) {
      const Acc v = (Acc)src[i], a = (Acc)fold[i];
      fold[i] = (T)(v > a ? v : a);
      nan |= v != v;
    }
  }
  if (!seeded || nan)
    return false;
  HP_SIMD
  for (int64_t ow = lo; ow < hi; ++ow)
    out[ow] = fold[(ow - lo) * sW];
  for (int64_t kw = 1; kw < kW; ++kw) {
    const T *col = fold + kw * dW;
    HP_SIMD
    for (int64_t ow = lo; ow < hi; ++ow) {
      const Acc v = (Acc)col[(ow - lo) * sW], a = (Acc)out[ow];
      out[ow] = (T)(v > a ? v : a);
    }
  }
  return true;
}

/// hp_pool over two spatial dims on the CPU: one iteration per output row
/// (plane, oh), window positions by compares, no division per element (the
/// generic kernel's four per window element were a quarter of ResNet-18/8's
/// time); max pooling without indices takes the columns whose windows lie
/// inside the row as separable vector loops (hp_max_pool_columns: ResNet-18/8's
/// 3 x 3 stride-2 pooling took 9% of its batch-32 run one output at a time).
/// The window is visited in hp_pool's order, so results and indices are the
/// same.
template <typename T, typename Acc, bool MAX>
HP_KERNEL(hp_pool2d_rows, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
          int countIncludePad, const T *in, T *out, int64_t *indices) {
  const int64_t inH = inSp.v[0], inW = inSp.v[1], outH = outSp.v[0],
                outW = outSp.v[1], kH = kernel.v[0], kW = kernel.v[1];
  // The columns whose windows lie inside the input along the row:
  // w0 = ow * sW - pW >= 0 and w0 + (kW - 1) * dW < inW.
  const int64_t sW = stride.v[1], pW = padBegin.v[1];
  const int64_t lastStart = inW - 1 - (kW - 1) * dilation.v[1] + pW;
  const int64_t colsLo = (pW + sW - 1) / sW;
  int64_t colsHi = lastStart < 0 ? 0 : lastStart / sW + 1;
  colsHi = colsHi < outW ? colsHi : outW;
  colsHi = colsHi > colsLo ? colsHi : colsLo;
  HP_FOR_W(row, outW * kH * kW) {
    const int64_t plane = row / outH, oh = row % outH;
    const int64_t planeOff = plane * inH * inW;
    const int64_t h0 = oh * stride.v[0] - padBegin.v[0];
    const bool rowsInside =
        h0 >= 0 && h0 + (kH - 1) * dilation.v[0] < inH && kH > 0 && kW > 0;
    const bool vectorized =
        MAX && !indices && colsHi > colsLo && kW > 0 &&
        hp_max_pool_columns<T, Acc>(in + planeOff, inH, inW, h0, kH, kW, sW,
                                    dilation.v[0], dilation.v[1], pW, colsLo,
                                    colsHi, out + row * outW);
    for (int64_t ow = 0; ow < outW; ++ow) {
      if (vectorized && ow == colsLo)
        ow = colsHi;
      if (ow >= outW)
        break;
      const int64_t w0 = ow * stride.v[1] - padBegin.v[1];
      const int64_t o = row * outW + ow;
      if (MAX && !indices && rowsInside && w0 >= 0 &&
          w0 + (kW - 1) * dilation.v[1] < inW) {
        // The whole window inside: no bounds tests. The first element
        // seeds the maximum and only a greater one replaces it, as below.
        const T *p = in + planeOff + h0 * inW + w0;
        Acc acc = (Acc)p[0];
        for (int64_t kh = 0; kh < kH; ++kh, p += dilation.v[0] * inW)
          for (int64_t kw = 0; kw < kW; ++kw) {
            const Acc v = (Acc)p[kw * dilation.v[1]];
            acc = v > acc ? v : acc;
          }
        out[o] = (T)acc;
        continue;
      }
      // The window's rows and columns inside the input (hp_window_span),
      // in hp_pool's order.
      hp_pool_state<Acc, MAX> st;
      int64_t h1, h2, w1, w2;
      hp_window_span(h0, dilation.v[0], kH, 0, inH, &h1, &h2);
      hp_window_span(w0, dilation.v[1], kW, 0, inW, &w1, &w2);
      for (int64_t kh = h1; kh < h2; ++kh) {
        const int64_t ih = h0 + kh * dilation.v[0];
        for (int64_t kw = w1; kw < w2; ++kw) {
          const int64_t at = planeOff + ih * inW + w0 + kw * dilation.v[1];
          st.add((Acc)in[at], at);
        }
      }
      if (!MAX && countIncludePad) {
        const int64_t oc[2] = {oh, ow};
        st.count = hp_window_count(2, inSp, kernel, stride, padBegin, padEnd,
                                   dilation, oc, true);
      }
      st.store(out, indices, o);
    }
  }
}

/// Pooling of n outputs (hp_pool's arguments): two spatial dims on the CPU
/// by rows, two or three on the GPU by cuDNN where it takes them
/// (hp_pool_cudnn; without indices), everything else one thread per output.
template <typename T, typename Acc, bool MAX>
static void hp_pool_launch(hp_ctx *ctx, int64_t n, int nsp, hp_dims inSp,
                           hp_dims outSp, hp_dims kernel, hp_dims stride,
                           hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
                           int countIncludePad, int64_t kernelCount,
                           int64_t inPlane, int64_t outPlane, const T *in,
                           T *out, int64_t *indices) {
#if HP_CUDA
  if (!indices && outPlane > 0 &&
      hp_try_library([&] {
        return hp_pool_cudnn<T, MAX>(ctx, nsp, n / outPlane, inSp, outSp,
                                     kernel, stride, padBegin, padEnd, dilation,
                                     countIncludePad, in, out);
      }) == 0)
    return;
#else
  if (nsp == 2 && outSp.v[1] > 0) {
    hp_launch(ctx, hp_pool2d_rows<T, Acc, MAX>, n / outSp.v[1], inSp, outSp,
              kernel, stride, padBegin, padEnd, dilation, countIncludePad, in,
              out, indices);
    return;
  }
#endif
  hp_launch(ctx, hp_pool<T, Acc, MAX>, n, nsp, inSp, outSp, kernel, stride,
            padBegin, padEnd, dilation, countIncludePad, kernelCount, inPlane,
            outPlane, in, out, indices);
}

#endif // HETPAR_DEVICE_POOLING_H
