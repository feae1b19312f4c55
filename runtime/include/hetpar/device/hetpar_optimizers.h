//===- hetpar_optimizers.h - AdamW and SGD steps ----------------*- C++ -*-===//
//
// The optimizer steps of training programs: AdamW and SGD.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_OPTIMIZERS_H
#define HETPAR_DEVICE_OPTIMIZERS_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// One AdamW step per element, as torch.optim.AdamW (decoupled weight decay,
/// bias correction): `lr`, `step` (the step number after this update, >= 1)
/// and `scale` (gradient clipping / loss scaling) are device scalars computed
/// by the program. Outputs may alias the inputs (in-place update). A
/// non-finite scale skips the step (outputs = inputs).
HP_KERNEL(hp_adamw, const float *p, const float *g, const float *m,
          const float *v, float *po, float *mo, float *vo, const float *lr,
          const int64_t *step, const float *scale, float b1, float b2,
          float eps, float wd) {
  // The step's scalars once, not per element (two powf per element were a
  // sixth of a GPT-2 small step on the CPU): the same operations in the same
  // order, so the same bits.
  const float s = *scale, rate = *lr;
  const float t = (float)*step;
  const float bc1 = 1.0f - powf(b1, t), sbc2 = sqrtf(1.0f - powf(b2, t));
  const bool skip = !(s - s == 0.0f); // inf or NaN
  HP_FOR(i) {
    if (skip) { // in place: nothing to do
      if (po != p || mo != m || vo != v) {
        po[i] = p[i];
        mo[i] = m[i];
        vo[i] = v[i];
      }
      continue;
    }
    float gi = g[i] * s;
    float pi = p[i] * (1.0f - rate * wd);
    float mi = b1 * m[i] + (1.0f - b1) * gi;
    float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
    float denom = sqrtf(vi) / sbc2 + eps;
    po[i] = pi - rate / bc1 * mi / denom;
    mo[i] = mi;
    vo[i] = vi;
  }
}

/// One SGD step per element, as torch.optim.SGD with dampening 0: with
/// momentum (buf != NULL) buf' = momentum * buf + g (buf' = g on step 1), and
/// Nesterov's g + momentum * buf'. Outputs may alias inputs; a non-finite
/// scale skips the step.
HP_KERNEL(hp_sgd, const float *p, const float *g, const float *buf, float *po,
          float *bufo, const float *lr, const int64_t *step, const float *scale,
          float momentum, int nesterov, float wd) {
  HP_FOR(i) {
    float s = *scale;
    if (!(s - s == 0.0f)) { // skipped (in place: nothing to do)
      if (po != p)
        po[i] = p[i];
      if (buf && bufo != buf)
        bufo[i] = buf[i];
      continue;
    }
    // As torch.optim.SGD: no decay term without weight decay (0 * p would
    // turn an element at -inf, an exported mask's, into NaN).
    float d = g[i] * s;
    if (wd != 0.0f)
      d += wd * p[i];
    if (buf) {
      float b = *step <= 1 ? d : momentum * buf[i] + d;
      bufo[i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    po[i] = p[i] - *lr * d;
  }
}

#endif // HETPAR_DEVICE_OPTIMIZERS_H
