//===- hetpar_gather_scatter.h - Gather, Scatter, OneHot --------*- C++ -*-===//
//
// Gather, GatherND, GatherElements, ScatterND, ScatterElements and OneHot.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_GATHER_SCATTER_H
#define HETPAR_DEVICE_GATHER_SCATTER_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// Gather along one axis: data viewed as [outer, axisDim, inner], indices
/// [nIdx] (negative values count from the end), out [outer, nIdx, inner].
/// An index outside [-axisDim, axisDim) (an error in ONNX) is reported as
/// checked node `node` (hp_index_fault) and gives 0.
template <typename T, typename I>
HP_KERNEL(hp_gather, int64_t axisDim, int64_t nIdx, int64_t inner,
          const T *data, const I *idx, T *out, hp_index_error *err, int node) {
  HP_FOR(i) {
    int64_t in_ = i % inner, t = i / inner;
    int64_t j = t % nIdx, o = t / nIdx;
    const int64_t k =
        hp_checked_index((long long)idx[j], axisDim, err, node, j);
    out[i] = k >= 0 ? data[(o * axisDim + k) * inner + in_] : T(0);
  }
}

#if !HP_CUDA
/// The CPU's Gather (hp_gather's contract) for rows of inner >= 16
/// elements: one iteration per (outer, index) pair copies a whole row, so
/// the index is read and checked once per row, not once per element.
template <typename T, typename I>
HP_KERNEL(hp_gather_rows, int64_t axisDim, int64_t nIdx, int64_t inner,
          const T *data, const I *idx, T *out, hp_index_error *err, int node) {
  HP_FOR_W(t, inner) {
    const int64_t j = t % nIdx, o = t / nIdx;
    const int64_t k =
        hp_checked_index((long long)idx[j], axisDim, err, node, j);
    T *dst = out + t * inner;
    if (k >= 0) {
      memcpy(dst, data + (o * axisDim + k) * inner, sizeof(T) * inner);
    } else {
      for (int64_t in_ = 0; in_ < inner; ++in_)
        dst[in_] = T(0);
    }
  }
}
#endif

/// Launches hp_gather over n output elements: one per element on the GPU,
/// a row per iteration on the CPU where rows are long enough.
template <typename T, typename I>
static void hp_gather_launch(hp_ctx *ctx, int64_t n, int64_t axisDim,
                             int64_t nIdx, int64_t inner, const T *data,
                             const I *idx, T *out, hp_index_error *err,
                             int node) {
#if !HP_CUDA
  if (inner >= 16) {
    hp_launch(ctx, hp_gather_rows<T, I>, n / inner, axisDim, nIdx, inner, data,
              idx, out, err, node);
    return;
  }
#endif
  hp_launch(ctx, hp_gather<T, I>, n, axisDim, nIdx, inner, data, idx, out, err,
            node);
}

/// Gradient of Gather (scatter-add): dX viewed as [outer, axisDim, inner] is
/// zero-filled by the caller; one iteration per (outer, inner) column adds
/// dY[o, j, in] into dX[o, idx[j], in] for every j in order, so repeated
/// indices accumulate without atomics and the sum order is the same on every
/// backend. Indices outside [-axisDim, axisDim) are skipped and reported as
/// checked node `node`.
template <typename T, typename I>
HP_KERNEL(hp_gather_grad, int64_t axisDim, int64_t nIdx, int64_t inner,
          const T *dy, const I *idx, T *dx, hp_index_error *err, int node) {
  HP_FOR_W(c, nIdx) {
    int64_t in_ = c % inner, o = c / inner;
    for (int64_t j = 0; j < nIdx; ++j) {
      const int64_t k =
          hp_checked_index((long long)idx[j], axisDim, err, node, j);
      if (k >= 0)
        dx[(o * axisDim + k) * inner + in_] =
            (T)((float)dx[(o * axisDim + k) * inner + in_] +
                (float)dy[(o * nIdx + j) * inner + in_]);
    }
  }
}

/// Index tuple `t` (k entries at idx[t * k]) of the axes with extents `dims`
/// and strides `strides` (elements): the offset it names, or -1 when an entry
/// lies outside [-extent, extent), which `report` reports as checked node
/// `node`.
HP_HD int64_t hp_tuple_offset(int k, const hp_dims &dims,
                              const hp_dims &strides, const int64_t *idx,
                              int64_t t, bool report, hp_index_error *err,
                              int node) {
  int64_t off = 0;
  for (int j = 0; j < k; ++j) {
    const int64_t c = hp_checked_index(idx[t * k + j], dims.v[j],
                                       report ? err : NULL, node, t * k + j);
    if (c < 0)
      return -1;
    off += c * strides.v[j];
  }
  return off;
}

/// Combines update `u` into `d` as a scatter's `reduction`: 0 none (replace),
/// 1 add, 2 mul, 3 max, 4 min, computed in the accumulation type A.
template <typename T, typename A>
HP_HD void hp_scatter_combine(T &d, T u, int reduction) {
  A a = (A)d, b = (A)u;
  d = reduction == 0   ? u
      : reduction == 1 ? (T)(a + b)
      : reduction == 2 ? (T)(a * b)
      : reduction == 3 ? (a < b ? u : d)
                       : (b < a ? u : d);
}

/// GatherND: data viewed as [groups, ...] with `groupStride` elements per
/// batch group (batch_dims), indices as [groups * tuples, k]; out is
/// [groups * tuples, slice]. The tuple's k entries index the axes with
/// extents `dims` and strides `strides`; a tuple with an entry out of range
/// gives zeros and is reported as checked node `node`.
template <typename T>
HP_KERNEL(hp_gather_nd, int k, hp_dims dims, hp_dims strides, int64_t tuples,
          int64_t slice, int64_t groupStride, const T *data, const int64_t *idx,
          T *out, hp_index_error *err, int node) {
  HP_FOR(i) {
    int64_t s = i % slice, t = i / slice;
    int64_t off = hp_tuple_offset(k, dims, strides, idx, t, s == 0, err, node);
    out[i] = off < 0 ? T(0) : data[(t / tuples) * groupStride + off + s];
  }
}

/// ScatterND into `out` (a copy of data): for each of `tuples` index tuples
/// in order, the slice of `slice` elements at the tuple's offset combines
/// with the tuple's updates (hp_scatter_combine). One iteration per slice
/// element runs the tuples in order, so repeated tuples apply in the
/// indices' order on every backend, without atomics. A tuple out of range is
/// skipped and reported as checked node `node`.
template <typename T, typename A>
HP_KERNEL(hp_scatter_nd, int k, hp_dims dims, hp_dims strides, int64_t tuples,
          int reduction, const int64_t *idx, const T *upd, T *out,
          hp_index_error *err, int node) {
  HP_FOR_W(s, tuples) {
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off =
          hp_tuple_offset(k, dims, strides, idx, t, s == 0, err, node);
      if (off >= 0)
        hp_scatter_combine<T, A>(out[off + s], upd[t * hp_n + s], reduction);
    }
  }
}

/// ScatterElements into `out` (a copy of data): updates and indices have
/// extents `udims`; the update at position p goes to p with p[axis] replaced
/// by its index (hp_scatter_combine). One iteration per position of the
/// updates without `axis` runs along the axis in order, so repeated indices
/// apply in order on every backend. An index outside [-axisDim, axisDim) is
/// skipped and reported as checked node `node`.
template <typename T, typename A, typename I>
HP_KERNEL(hp_scatter_elements, int rank, int axis, hp_dims udims,
          hp_dims dataStrides, int64_t axisDim, int reduction, const I *idx,
          const T *upd, T *out, hp_index_error *err, int node) {
  HP_FOR_W(c, udims.v[axis]) {
    int64_t rem = c, base = 0, ubase = 0, us = 1, axisStride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (d == axis) {
        axisStride = us;
      } else {
        int64_t coord = rem % udims.v[d];
        rem /= udims.v[d];
        base += coord * dataStrides.v[d];
        ubase += coord * us;
      }
      us *= udims.v[d];
    }
    for (int64_t a = 0; a < udims.v[axis]; ++a) {
      const int64_t u = ubase + a * axisStride;
      const int64_t j =
          hp_checked_index((long long)idx[u], axisDim, err, node, u);
      if (j >= 0)
        hp_scatter_combine<T, A>(out[base + j * dataStrides.v[axis]], upd[u],
                                 reduction);
    }
  }
}

/// OneHot over the result seen as [outer, depth, inner] (the new axis in the
/// middle): out[o][d][i] = values[1] where the index at [o][i] (truncated
/// toward zero, plus depth when negative) is d, else values[0]. An index
/// outside [-depth, depth) gives values[0] everywhere, as ONNX specifies.
template <typename T, typename I>
HP_KERNEL(hp_one_hot, int64_t depth, int64_t inner, const I *idx,
          const T *values, T *out) {
  HP_FOR(i) {
    int64_t in = i % inner, d = (i / inner) % depth, o = i / inner / depth;
    double raw = (double)idx[o * inner + in];
    int64_t k = -1;
    if (raw > -(double)depth - 1 && raw < (double)depth) {
      k = (int64_t)raw;
      if (k < 0)
        k += depth;
    }
    out[i] = k == d ? values[1] : values[0];
  }
}

/// GatherElements: out has the indices' shape `dims`; along `axis` the index
/// comes from idx, elsewhere the coordinate itself. An index outside
/// [-axisDim, axisDim) gives 0 and is reported as checked node `node`.
template <typename T, typename I>
HP_KERNEL(hp_gather_elements, int rank, int axis, hp_dims dims,
          hp_dims dataStrides, int64_t axisDim, const T *data, const I *idx,
          T *out, hp_index_error *err, int node) {
  HP_FOR(i) {
    int64_t rem = i, off = 0;
    bool inRange = true;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rem % dims.v[d];
      rem /= dims.v[d];
      if (d == axis) {
        c = hp_checked_index((long long)idx[i], axisDim, err, node, i);
        inRange = c >= 0;
      }
      off += c * dataStrides.v[d];
    }
    out[i] = inRange ? data[off] : T(0);
  }
}

#endif // HETPAR_DEVICE_GATHER_SCATTER_H
