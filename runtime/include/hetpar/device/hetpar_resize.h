//===- hetpar_resize.h - Resize ---------------------------------*- C++ -*-===//
//
// Resize: the coordinate transforms and the nearest, linear and cubic taps.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_RESIZE_H
#define HETPAR_DEVICE_RESIZE_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// The per-axis geometry of a Resize: extents, row-major input strides, the
/// scale of the coordinate transform, tf_crop_and_resize's region, and
/// whether the axis is resized at all (an axis that is not maps each output
/// coordinate to itself).
struct hp_resize_axes {
  int64_t in[HP_MAX_RANK], out[HP_MAX_RANK], stride[HP_MAX_RANK];
  int64_t active[HP_MAX_RANK];
  double scale[HP_MAX_RANK], roiStart[HP_MAX_RANK], roiEnd[HP_MAX_RANK];
};

/// The input coordinate of output coordinate `o` on one axis, by ONNX
/// Resize's coordinate_transformation_mode (onnx/reference/ops/op_resize.py):
/// 0 half_pixel, 1 half_pixel_symmetric, 2 pytorch_half_pixel,
/// 3 align_corners, 4 asymmetric, 5 tf_crop_and_resize, 6 tf_half_pixel_for_nn
/// (opset 11). `outF` is the output
/// extent before flooring (scale times the input extent).
HP_HD double hp_resize_coord(int transform, int64_t o, int64_t in, int64_t out,
                             double scale, double r0, double r1) {
  double outF = scale * (double)in;
  switch (transform) {
  case 1: {
    double offset = in / 2.0 * (1.0 - (double)out / outF);
    return offset + (o + 0.5) / scale - 0.5;
  }
  case 2:
    return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  case 3:
    return outF == 1.0 ? 0.0 : o * (double)(in - 1) / (outF - 1.0);
  case 4:
    return o / scale;
  case 5:
    return (outF == 1.0 ? (r1 - r0) * (in - 1) / 2.0
                        : o * (r1 - r0) * (in - 1) / (outF - 1.0)) +
           r0 * (in - 1);
  case 6:
    return (o + 0.5) / scale;
  default:
    return (o + 0.5) / scale - 0.5;
  }
}

/// The input indices and weights of coordinate `c` on an axis of extent
/// `in`: mode 0 nearest (one tap; `nearest` 0 round_prefer_floor,
/// 1 round_prefer_ceil, 2 floor, 3 ceil), 1 linear (two), 2 cubic (four,
/// Keys' kernel with coefficient `a`; `exclude` drops the taps outside the
/// input and renormalizes). Indices are clamped to the input (edge values).
HP_HD void hp_resize_taps(int mode, int nearest, double a, int exclude,
                          double c, int64_t in, int64_t *idx, double *w) {
  double f = floor(c), r = c - f;
  int64_t x0 = (int64_t)f;
  if (mode == 0) {
    bool up = nearest == 0   ? r > 0.5
              : nearest == 1 ? r >= 0.5
              : nearest == 2 ? false
                             : r > 0.0;
    idx[0] = x0 + (up ? 1 : 0);
    w[0] = 1.0;
  } else if (mode == 1) {
    idx[0] = x0;
    idx[1] = x0 + 1;
    w[0] = 1.0 - r;
    w[1] = r;
  } else {
    double s = 1.0 - r;
    w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
    double sum = 0.0;
    for (int t = 0; t < 4; ++t) {
      idx[t] = x0 - 1 + t;
      if (exclude && (idx[t] < 0 || idx[t] >= in))
        w[t] = 0.0;
      sum += w[t];
    }
    if (exclude && sum != 0.0)
      for (int t = 0; t < 4; ++t)
        w[t] /= sum;
  }
  int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
  for (int t = 0; t < taps; ++t)
    idx[t] = idx[t] < 0 ? 0 : idx[t] >= in ? in - 1 : idx[t];
}

/// Resize (ONNX): each output element sums the taps of its resized axes
/// (hp_resize_taps of hp_resize_coord) over the input, in double; under
/// tf_crop_and_resize (transform 5) a coordinate outside the input gives
/// `extrapolation`. `scales` and `roi`, when not null, are the op's float32
/// inputs read at run time: axis d takes entry listPos[d] of `scales`, and
/// entries listPos[d] and listPos[d] + listLen of `roi`.
template <typename T>
HP_KERNEL(hp_resize, int rank, hp_resize_axes ax, int mode, int transform,
          int nearest, double cubicA, int exclude, double extrapolation,
          const float *scales, const float *roi, hp_dims listPos,
          int64_t listLen, const T *x, T *y) {
  const int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
  HP_FOR(i) {
    int64_t rem = i, base = 0, idx[HP_MAX_RANK][4];
    double w[HP_MAX_RANK][4];
    int act[HP_MAX_RANK], n = 0;
    bool outside = false;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t o = rem % ax.out[d];
      rem /= ax.out[d];
      if (!ax.active[d]) {
        base += o * ax.stride[d];
        continue;
      }
      // Scales and roi that are graph inputs: read here, per their entry.
      double scale = scales ? (double)scales[listPos.v[d]] : ax.scale[d];
      double r0 = roi ? (double)roi[listPos.v[d]] : ax.roiStart[d];
      double r1 = roi ? (double)roi[listPos.v[d] + listLen] : ax.roiEnd[d];
      double c =
          hp_resize_coord(transform, o, ax.in[d], ax.out[d], scale, r0, r1);
      if (transform == 5 && (c < 0.0 || c > (double)(ax.in[d] - 1)))
        outside = true;
      act[n] = d;
      hp_resize_taps(mode, nearest, cubicA, exclude, c, ax.in[d], idx[n], w[n]);
      ++n;
    }
    if (outside) {
      y[i] = (T)extrapolation;
      continue;
    }
    int64_t combos = 1;
    for (int k = 0; k < n; ++k)
      combos *= taps;
    double acc = 0.0;
    for (int64_t m = 0; m < combos; ++m) {
      int64_t r = m, off = base;
      double wt = 1.0;
      for (int k = 0; k < n; ++k) {
        int t = (int)(r % taps);
        r /= taps;
        wt *= w[k][t];
        off += idx[k][t] * ax.stride[act[k]];
      }
      if (wt != 0.0)
        acc += wt * (double)x[off];
    }
    y[i] = (T)acc;
  }
}

#endif // HETPAR_DEVICE_RESIZE_H
