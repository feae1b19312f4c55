//===- hetpar_losses.h - cross-entropy losses -------------------*- C++ -*-===//
//
// SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their gradients.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_LOSSES_H
#define HETPAR_DEVICE_LOSSES_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Losses: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their
// gradients, over x [N, C, D] (D = d1 * ... * dk: the class axis is strided by
// D) and labels [N, D]. A target position r = n * D + j reads x[n, :, j].
//===----------------------------------------------------------------------===//

/// The class a label reads. ONNX leaves a label outside [0, C) that is not
/// ignore_index undefined: hp_loss_rows reports it (hp_index_fault), and
/// clamping it to the nearest class keeps every read in bounds meanwhile.
HP_HD int64_t hp_loss_class(int64_t t, int64_t C) {
  return t < 0 ? 0 : (t >= C ? C - 1 : t);
}

/// One target position per iteration. SOFTMAX: x holds scores; the row's
/// log-softmax (maximum subtracted) is computed, and written to logProb when
/// that is not null; otherwise x holds log-probabilities. The position's loss
/// is -w * logp[label] with w = weight[label] (1 without weights), and 0 with
/// w = 0 when the label is ignore_index (hasIgnore). It goes to lossOut when
/// that is not null (reduction "none"), else loss and w go to rowLoss and
/// rowWeight for hp_loss_reduce. A label outside [0, C) that is not
/// ignore_index is reported as checked node `node`.
template <typename T, typename L, typename Acc, bool SOFTMAX>
HP_KERNEL(hp_loss_rows, int64_t C, int64_t D, int hasIgnore,
          int64_t ignoreIndex, const T *x, const L *labels, const T *weight,
          T *logProb, T *lossOut, Acc *rowLoss, Acc *rowWeight,
          hp_index_error *err, int node) {
  HP_FOR_W(r, SOFTMAX ? 3 * C : 1) {
    const int64_t base = (r / D) * C * D + r % D;
    const int64_t t = (int64_t)labels[r];
    const bool ignored = hasIgnore && t == ignoreIndex;
    if (!ignored && (t < 0 || t >= C))
      hp_index_fault(err, node, t, 0, C, r);
    const int64_t tc = hp_loss_class(t, C);
    Acc lp;
    if (SOFTMAX) {
      Acc m = hp_lowest<Acc>();
      for (int64_t k = 0; k < C; ++k)
        m = hp_max(m, (Acc)x[base + k * D]);
      Acc s = 0;
      for (int64_t k = 0; k < C; ++k)
        s += hp_exp((Acc)x[base + k * D] - m);
      const Acc ls = hp_log(s);
      if (logProb)
        for (int64_t k = 0; k < C; ++k)
          logProb[base + k * D] = (T)((Acc)x[base + k * D] - m - ls);
      lp = (Acc)x[base + tc * D] - m - ls;
    } else {
      lp = (Acc)x[base + tc * D];
    }
    const Acc w = ignored ? Acc(0) : (weight ? (Acc)weight[tc] : Acc(1));
    const Acc loss = ignored ? Acc(0) : -lp * w;
    if (lossOut) {
      lossOut[r] = (T)loss;
    } else {
      rowLoss[r] = loss;
      rowWeight[r] = w;
    }
  }
}

/// The "sum" (mean = 0) or "mean" of n per-position losses: the sum of the
/// losses divided by the sum of their weights (0/0 = NaN when every position
/// is ignored, as in PyTorch). One iteration: a sequential sum in double, the
/// same on every backend and run.
template <typename T, typename Acc>
HP_KERNEL(hp_loss_reduce, int64_t n, int mean, const Acc *rowLoss,
          const Acc *rowWeight, T *out) {
  HP_FOR(i) {
    double s = 0, w = 0;
    for (int64_t r = 0; r < n; ++r) {
      s += (double)rowLoss[r];
      w += (double)rowWeight[r];
    }
    out[0] = (T)(Acc)(mean ? s / w : s);
  }
}

/// The sum of the weights of the n positions not ignored (the "mean"
/// divisor of the gradients), into out[0]. One iteration.
template <typename T, typename L, typename Acc>
HP_KERNEL(hp_loss_weight_sum, int64_t n, int64_t C, int hasIgnore,
          int64_t ignoreIndex, const L *labels, const T *weight, Acc *out) {
  HP_FOR(i) {
    double w = 0;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t t = (int64_t)labels[r];
      if (hasIgnore && t == ignoreIndex)
        continue;
      w += weight ? (double)(Acc)weight[hp_loss_class(t, C)] : 1.0;
    }
    out[0] = (Acc)w;
  }
}

/// Gradient with respect to x [N, C, D], one element per iteration, with
/// g = dY[r] (dyPerRow, reduction "none") or dY[0], times w = weight[label],
/// divided by norm[0] when norm is not null ("mean"). SOFTMAX
/// (SoftmaxCrossEntropyLossGrad): g * (exp(logProb) - onehot(label));
/// otherwise (NegativeLogLikelihoodLossGrad): -g at the label, 0 elsewhere.
/// Positions whose label is ignore_index get 0.
template <typename T, typename L, typename Acc, bool SOFTMAX>
HP_KERNEL(hp_loss_grad, int64_t C, int64_t D, int hasIgnore,
          int64_t ignoreIndex, int dyPerRow, const T *dY, const T *logProb,
          const L *labels, const T *weight, const Acc *norm, T *dX) {
  HP_FOR(i) {
    const int64_t j = i % D, c = (i / D) % C, r = (i / (C * D)) * D + j;
    const int64_t t = (int64_t)labels[r];
    Acc v = 0;
    if (!(hasIgnore && t == ignoreIndex)) {
      const int64_t tc = hp_loss_class(t, C);
      Acc g = (Acc)dY[dyPerRow ? r : 0] * (weight ? (Acc)weight[tc] : Acc(1));
      if (norm)
        g = g / norm[0];
      const Acc onehot = c == tc ? Acc(1) : Acc(0);
      if (SOFTMAX)
        v = g * (hp_exp((Acc)logProb[i]) - onehot);
      else
        v = -g * onehot;
    }
    dX[i] = (T)v;
  }
}

#endif // HETPAR_DEVICE_LOSSES_H
