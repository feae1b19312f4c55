//===- hetpar_window_grad.h - windowed ops' gradients -----------*- C++ -*-===//
//
// Gradients of the windowed ops: ConvGrad (col2im), MaxPoolGrad,
// AveragePoolGrad.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_WINDOW_GRAD_H
#define HETPAR_DEVICE_WINDOW_GRAD_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Gradients of the windowed ops (ConvGrad, MaxPoolGrad, AveragePoolGrad).
// Each is a gather: one iteration per input element sums, in a fixed order,
// what the windows holding it contribute, so there are no atomics and the CPU
// and the GPU add in the same order.
//===----------------------------------------------------------------------===//

/// The output window `o` (per spatial dim) whose kernel position `k` lands on
/// input coordinates `ic`: false when there is none (the distance is not a
/// multiple of the stride, or the window is outside the output). `flat` gets
/// the window's offset inside the output plane.
HP_HD bool hp_window_of(int nsp, const hp_dims &outSp, const hp_dims &kernel,
                        const hp_dims &stride, const hp_dims &padBegin,
                        const hp_dims &dilation, const int64_t *ic, int64_t k,
                        int64_t *o, int64_t *flat) {
  int64_t f = 0, mul = 1;
  for (int d = nsp - 1; d >= 0; --d) {
    int64_t kd = k % kernel.v[d];
    k /= kernel.v[d];
    int64_t num = ic[d] + padBegin.v[d] - kd * dilation.v[d];
    if (num < 0 || num % stride.v[d] != 0)
      return false;
    int64_t od = num / stride.v[d];
    if (od >= outSp.v[d])
      return false;
    o[d] = od;
    f += od * mul;
    mul *= outSp.v[d];
  }
  *flat = f;
  return true;
}

/// The kernel positions that may land input coordinates `ic` in an output
/// window, in row-major kernel order (hp_window_of's k): per dim those of
/// hp_window_span's range where ic + padBegin - kd * dilation lies in
/// [0, (out - 1) * stride]. The gradients of pooling and im2col try these
/// alone (hp_window_of still checks the stride), so a kernel far larger
/// than the input costs what the output holds, not what the window spans.
struct hp_windows_over {
  int nsp;
  int64_t first[HP_MAX_RANK], end[HP_MAX_RANK], kd[HP_MAX_RANK];
  bool more = true;
  HP_HD hp_windows_over(int nsp, const hp_dims &outSp, const hp_dims &kernel,
                        const hp_dims &stride, const hp_dims &padBegin,
                        const hp_dims &dilation, const int64_t *ic)
      : nsp(nsp) {
    for (int d = 0; d < nsp; ++d) {
      const int64_t at = ic[d] + padBegin.v[d];
      hp_window_span(0, dilation.v[d], kernel.v[d],
                     at - (outSp.v[d] - 1) * stride.v[d], at + 1, &first[d],
                     &end[d]);
      more = more && first[d] < end[d];
      kd[d] = first[d];
    }
  }
  /// The current position as one flat index over the kernel.
  HP_HD int64_t k(const hp_dims &kernel) const {
    int64_t flat = 0;
    for (int d = 0; d < nsp; ++d)
      flat = flat * kernel.v[d] + kd[d];
    return flat;
  }
  HP_HD void next() {
    int d = nsp - 1;
    for (; d >= 0 && ++kd[d] == end[d]; --d)
      kd[d] = first[d];
    more = d >= 0;
  }
};

/// Coordinates of flat offset `flat` in a plane of extents `sp`.
HP_HD void hp_unflatten(int nsp, const hp_dims &sp, int64_t flat, int64_t *c) {
  for (int d = nsp - 1; d >= 0; --d) {
    c[d] = flat % sp.v[d];
    flat /= sp.v[d];
  }
}

/// col2im of one image of a grouped convolution (the inverse gather of
/// hp_im2col): x[c, i] = sum over kernel positions k, in order, of
/// cols[(c*kernelCount + k), p] for the output position p whose window puts
/// k on i. One iteration per element of x (channels * inPlane).
template <typename T, typename Acc>
HP_KERNEL(hp_col2im, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *cols,
          T *x) {
  HP_FOR_W(i, kernelCount) {
    int64_t c = i / inPlane, ic[HP_MAX_RANK], o[HP_MAX_RANK], p;
    hp_unflatten(nsp, inSp, i % inPlane, ic);
    Acc acc = Acc(0);
    for (hp_windows_over w(nsp, outSp, kernel, stride, padBegin, dilation, ic);
         w.more; w.next()) {
      const int64_t k = w.k(kernel);
      if (hp_window_of(nsp, outSp, kernel, stride, padBegin, dilation, ic, k, o,
                       &p))
        acc += (Acc)cols[(c * kernelCount + k) * outPlane + p];
    }
    x[i] = (T)acc;
  }
}

/// The flat offset in its plane of the first maximum of output window `o`
/// (hp_pool_state's rule, over positions in row-major kernel order, as
/// hp_pool visits them), or -1 when the window holds no element.
template <typename T, typename Acc>
HP_HD int64_t hp_window_argmax(int nsp, const hp_dims &inSp,
                               const hp_dims &kernel, const hp_dims &stride,
                               const hp_dims &padBegin, const hp_dims &dilation,
                               const int64_t *o, const T *in) {
  hp_pool_state<Acc, true> st;
  hp_pool_window<T, Acc, true>(nsp, inSp, kernel, stride, padBegin, dilation, o,
                               in, 0, st);
  return st.best;
}

/// MaxPool's gradient: dx[i] = sum of dy over the windows whose first maximum
/// is element i (the maxima recomputed from x). One iteration per element of
/// x, viewed as [N*C, spatial...].
template <typename T, typename Acc>
HP_KERNEL(hp_maxpool_grad, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims dilation,
          int64_t kernelCount, int64_t inPlane, int64_t outPlane, const T *x,
          const T *dy, T *dx) {
  HP_FOR_W(i, kernelCount * kernelCount) {
    int64_t plane = i / inPlane, self = i % inPlane;
    int64_t ic[HP_MAX_RANK], o[HP_MAX_RANK], p;
    hp_unflatten(nsp, inSp, self, ic);
    Acc acc = Acc(0);
    for (hp_windows_over w(nsp, outSp, kernel, stride, padBegin, dilation, ic);
         w.more; w.next())
      if (hp_window_of(nsp, outSp, kernel, stride, padBegin, dilation, ic,
                       w.k(kernel), o, &p) &&
          hp_window_argmax<T, Acc>(nsp, inSp, kernel, stride, padBegin,
                                   dilation, o, x + plane * inPlane) == self)
        acc += (Acc)dy[plane * outPlane + p];
    dx[i] = (T)acc;
  }
}

/// AveragePool's gradient: dx[i] = sum over the windows holding element i of
/// dy / count, count being what hp_pool divides by: the window's positions
/// inside x, or inside the padded extent [-padBegin, in + padEnd) with
/// countIncludePad (a box, so a product over the dims).
template <typename T, typename Acc>
HP_KERNEL(hp_avgpool_grad, int nsp, hp_dims inSp, hp_dims outSp, hp_dims kernel,
          hp_dims stride, hp_dims padBegin, hp_dims padEnd, hp_dims dilation,
          int countIncludePad, int64_t kernelCount, int64_t inPlane,
          int64_t outPlane, const T *dy, T *dx) {
  HP_FOR_W(i, kernelCount * nsp) {
    int64_t plane = i / inPlane, ic[HP_MAX_RANK], o[HP_MAX_RANK], p;
    hp_unflatten(nsp, inSp, i % inPlane, ic);
    Acc acc = Acc(0);
    for (hp_windows_over w(nsp, outSp, kernel, stride, padBegin, dilation, ic);
         w.more; w.next()) {
      if (!hp_window_of(nsp, outSp, kernel, stride, padBegin, dilation, ic,
                        w.k(kernel), o, &p))
        continue;
      const int64_t count =
          hp_window_count(nsp, inSp, kernel, stride, padBegin, padEnd, dilation,
                          o, countIncludePad != 0);
      acc += (Acc)dy[plane * outPlane + p] / (Acc)count;
    }
    dx[i] = (T)acc;
  }
}

#endif // HETPAR_DEVICE_WINDOW_GRAD_H
