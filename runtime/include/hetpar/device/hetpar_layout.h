//===- hetpar_layout.h - copies, fills, Pad, Trilu --------------*- C++ -*-===//
//
// Strided copies, fills, element conversions, Pad and Trilu.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_LAYOUT_H
#define HETPAR_DEVICE_LAYOUT_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// out[outOffset + sum c_d*outStrides_d] = in[inOffset + sum (c_d % inMods_d) *
/// inStrides_d] over the index space `dims` (rank <= 8). Covers Transpose,
/// Slice (negative strides), Expand/broadcast (stride 0), Tile (mods), Concat
/// and Split (offsets into the bigger tensor) and plain copies.
template <typename T>
HP_KERNEL(hp_strided_copy, int rank, hp_dims dims, hp_dims inStrides,
          hp_dims inMods, int64_t inOffset, const T *in, hp_dims outStrides,
          int64_t outOffset, T *out) {
  HP_FOR(i) {
    int64_t rem = i, src = inOffset, dst = outOffset;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rem % dims.v[d];
      rem /= dims.v[d];
      src += (c % inMods.v[d]) * inStrides.v[d];
      dst += c * outStrides.v[d];
    }
    out[dst] = in[src];
  }
}

/// The most elements one iteration of hp_strided_copy_rows copies: narrow
/// rows are grouped up to it (at most 32 rows, so that one set of
/// coordinate divisions serves many rows), wide rows are cut into pieces of
/// it (so that one long merged row still spreads over the threads).
#define HP_COPY_PIECE 4096

/// hp_strided_copy by rows of the innermost dimension (the CPU backend's
/// version). Iteration i copies the columns [k0, k1) of the rows [first,
/// first + chunkRows): chunks of narrow rows, or one piece of `piece`
/// columns of a wide row. The first row's coordinates take divisions, the
/// others an odometer step, and a modulo only where a mod is smaller than
/// its dimension (Tile); a unit-stride row is a vector loop.
template <typename T>
HP_KERNEL(hp_strided_copy_rows, int rank, hp_dims dims, hp_dims inStrides,
          hp_dims inMods, int64_t inOffset, const T *in, hp_dims outStrides,
          int64_t outOffset, T *out, int64_t rows, int64_t chunkRows,
          int64_t piece) {
  const int last = rank - 1;
  const int64_t width = dims.v[last];
  const int64_t pieces = (width + piece - 1) / piece;
  const int64_t is = inStrides.v[last], os = outStrides.v[last];
  const int64_t mod = inMods.v[last];
  HP_FOR_W(it, chunkRows * piece) {
    const int64_t first = (it / pieces) * chunkRows;
    const int64_t k0 = (it % pieces) * piece;
    const int64_t k1 = k0 + piece < width ? k0 + piece : width;
    const int64_t end = first + chunkRows < rows ? first + chunkRows : rows;
    int64_t c[HP_MAX_RANK] = {0}, rem = first;
    for (int d = last - 1; d >= 0; --d) {
      c[d] = rem % dims.v[d];
      rem /= dims.v[d];
    }
    for (int64_t row = first; row < end; ++row) {
      int64_t src = inOffset, dst = outOffset;
      for (int d = 0; d < last; ++d) {
        const int64_t m = inMods.v[d];
        src += (c[d] < m ? c[d] : c[d] % m) * inStrides.v[d];
        dst += c[d] * outStrides.v[d];
      }
      if (mod >= width && is == 1 && os == 1) {
        const T *__restrict__ from = in + src;
        T *__restrict__ to = out + dst;
        HP_SIMD
        for (int64_t k = k0; k < k1; ++k)
          to[k] = from[k];
      } else if (is == 0 && os == 1) { // a broadcast value (a bias)
        const T v = in[src];
        T *__restrict__ to = out + dst;
        HP_SIMD
        for (int64_t k = k0; k < k1; ++k)
          to[k] = v;
      } else if (mod >= width) {
        for (int64_t k = k0; k < k1; ++k)
          out[dst + k * os] = in[src + k * is];
      } else {
        for (int64_t k = k0; k < k1; ++k)
          out[dst + k * os] = in[src + (k % mod) * is];
      }
      for (int d = last - 1; d >= 0; --d) {
        if (++c[d] < dims.v[d])
          break;
        c[d] = 0;
      }
    }
  }
}

/// Merges neighbouring dimensions of a strided copy that are contiguous in
/// both the source and the destination and not tiled (e.g. [2, 4, 16, 8]
/// with source strides [1024, 256, 16, 1] becomes [8, 16, 8]), dropping
/// dimensions of extent 1, so the kernels walk fewer, longer rows. Returns
/// the new rank; a rank-0 copy stays rank 0.
static int hp_coalesce_copy(int rank, hp_dims &dims, hp_dims &inStrides,
                            hp_dims &inMods, hp_dims &outStrides) {
  int r = 0;
  for (int d = 0; d < rank; ++d) {
    if (dims.v[d] == 1 && rank > 1)
      continue; // no coordinate but 0: neither stride matters
    bool whole = inMods.v[d] >= dims.v[d];
    if (r > 0 && whole && inMods.v[r - 1] >= dims.v[r - 1] &&
        inStrides.v[r - 1] == inStrides.v[d] * dims.v[d] &&
        outStrides.v[r - 1] == outStrides.v[d] * dims.v[d]) {
      dims.v[r - 1] *= dims.v[d];
      inMods.v[r - 1] = dims.v[r - 1];
      inStrides.v[r - 1] = inStrides.v[d];
      outStrides.v[r - 1] = outStrides.v[d];
      continue;
    }
    dims.v[r] = dims.v[d];
    inStrides.v[r] = inStrides.v[d];
    inMods.v[r] = inMods.v[d];
    outStrides.v[r] = outStrides.v[d];
    ++r;
  }
  if (r == 0 && rank > 0) { // every extent was 1: one element
    dims.v[0] = inMods.v[0] = 1;
    r = 1;
  }
  return r;
}

/// Launches a strided copy of n elements after hp_coalesce_copy: one thread
/// per element on the GPU, one iteration per HP_COPY_PIECE elements or 32
/// rows on the CPU.
template <typename T>
static void hp_copy_launch(hp_ctx *ctx, int64_t n, int rank, hp_dims dims,
                           hp_dims inStrides, hp_dims inMods, int64_t inOffset,
                           const T *in, hp_dims outStrides, int64_t outOffset,
                           T *out) {
  if (n == 0)
    return;
  rank = hp_coalesce_copy(rank, dims, inStrides, inMods, outStrides);
#if HP_CUDA
  hp_launch(ctx, hp_strided_copy<T>, n, rank, dims, inStrides, inMods, inOffset,
            in, outStrides, outOffset, out);
#else
  if (rank == 0) { // a scalar
    hp_launch(ctx, hp_strided_copy<T>, n, rank, dims, inStrides, inMods,
              inOffset, in, outStrides, outOffset, out);
    return;
  }
  const int64_t width = dims.v[rank - 1], rows = n / width;
  int64_t chunkRows = HP_COPY_PIECE / width;
  chunkRows = chunkRows < 1 ? 1 : (chunkRows > 32 ? 32 : chunkRows);
  const int64_t piece = width < HP_COPY_PIECE ? width : HP_COPY_PIECE;
  hp_launch(ctx, hp_strided_copy_rows<T>,
            (rows + chunkRows - 1) / chunkRows * ((width + piece - 1) / piece),
            rank, dims, inStrides, inMods, inOffset, in, outStrides, outOffset,
            out, rows, chunkRows, piece);
#endif
}

/// Fills n elements with a value.
template <typename T> HP_KERNEL(hp_fill, T value, T *out) {
  HP_FOR(i) { out[i] = value; }
}

/// Element conversion (graph inputs and outputs under --dtype).
template <typename To, typename From>
HP_KERNEL(hp_convert, const From *in, To *out) {
  HP_FOR(i) { out[i] = (To)(float)in[i]; }
}
/// Pad: constant (mode 0), reflect (1), edge (2) or wrap (3).
template <typename T>
HP_KERNEL(hp_pad, int rank, int mode, hp_dims outDims, hp_dims inDims,
          hp_dims padBegin, const T *in, const T *value, T *out) {
  HP_FOR(i) {
    int64_t rem = i, off = 0, mul = 1;
    bool inside = true;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rem % outDims.v[d] - padBegin.v[d];
      rem /= outDims.v[d];
      int64_t n = inDims.v[d];
      if (c < 0 || c >= n) {
        if (mode == 0 || n == 0) {
          inside = false;
        } else if (mode == 1) {
          int64_t period = 2 * (n - 1);
          if (period == 0) {
            c = 0;
          } else {
            c = c % period;
            if (c < 0)
              c += period;
            if (c >= n)
              c = period - c;
          }
        } else if (mode == 2) {
          c = c < 0 ? 0 : n - 1;
        } else {
          c = ((c % n) + n) % n;
        }
      }
      off += c * mul;
      mul *= n;
    }
    out[i] = inside ? in[off] : (value ? *value : T(0));
  }
}

/// Trilu on [batch, rows, cols]: keeps j - i >= k (upper) or j - i <= k; k
/// is `kConst`, or *kPtr when kPtr is not null (a graph input).
template <typename T, typename K>
HP_KERNEL(hp_trilu, int64_t rows, int64_t cols, int64_t kConst, const K *kPtr,
          int upper, const T *in, T *out) {
  HP_FOR(i) {
    int64_t k = kPtr ? (int64_t)*kPtr : kConst;
    int64_t j = i % cols, r = (i / cols) % rows;
    bool keep = upper ? (j - r >= k) : (j - r <= k);
    out[i] = keep ? in[i] : T(0);
  }
}

#endif // HETPAR_DEVICE_LAYOUT_H
