//===- hetpar_attention.h - fused attention ---------------------*- C++ -*-===//
//
// Fused attention (onnx.FusedAttention) by FlashAttention-2's online
// softmax.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_ATTENTION_H
#define HETPAR_DEVICE_ATTENTION_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Fused attention (onnx.FusedAttention): Y = Softmax(mask(scale(Q KT))) V
// without the score matrix, by the online softmax of FlashAttention-2 (Dao
// 2023): per block of keys, the running row maximum m and sum l rescale the
// output accumulated so far.
//===----------------------------------------------------------------------===//

/// Where one operand's matrices lie: element strides along each leading
/// dimension (0 where it broadcasts), along the matrix's rows and along its
/// columns.
struct hp_attention_layout {
  hp_dims batch;
  int64_t row, col;
};

/// The geometry of a FusedAttention over `batch` independent products (the
/// `rank` leading dimensions, of extents `extents`, flattened): Q [Lq, D],
/// KT [D, Lk], V [Lk, Dv] and Y [Lq, Dv] per batch, each read or written
/// through its layout (q, k, v, y), and the mask's [Lq, Lk] through m.
struct hp_attention_shape {
  int64_t batch, Lq, Lk, D, Dv;
  int rank;
  hp_dims extents;
  hp_attention_layout q, k, v, y, m;
  int mask;   // 0: none, 1: additive, 2: select (with fill)
  int keep;   // select: 1 keeps the score where the mask is true
  int divide; // 1: S / scale, 0: S * scale
  // 1: the mask is a constant causal mask (code generation checked it):
  // for query i the keys j > i + causalOffset are masked to a score whose
  // exponential is 0, and every query keeps key 0, so those keys are not
  // computed at all (about half the work when Lq == Lk). 0: every key is.
  int causal;
  int64_t causalOffset;
};

/// The keys [0, limit) that a query up to `lastQuery` attends to: all of
/// them, or those up to the causal diagonal.
HP_HD int64_t hp_attention_key_limit(const hp_attention_shape &s,
                                     int64_t lastQuery) {
  if (!s.causal)
    return s.Lk;
  const int64_t limit = lastQuery + s.causalOffset + 1;
  return limit < s.Lk ? limit : s.Lk;
}

/// The element offset of batch b's matrix in an operand of layout `l`
/// (row-major over s.extents).
HP_HD int64_t hp_attention_offset(const hp_attention_shape &s,
                                  const hp_attention_layout &l, int64_t b) {
  int64_t off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    off += (b % s.extents.v[d]) * l.batch.v[d];
    b /= s.extents.v[d];
  }
  return off;
}

/// One score after the scale and the mask (`m` the mask at the score's
/// offset; unused without a mask).
template <typename Acc, typename T, typename M>
HP_HD Acc hp_attention_score(const hp_attention_shape &s, Acc x, Acc scale,
                             const M *m, const T *fill) {
  x = s.divide ? x / scale : x * scale;
  if (s.mask == 1)
    x += (Acc) * (const T *)(const void *)m;
  else if (s.mask == 2 && (bool)*m != (bool)s.keep)
    x = (Acc)*fill;
  return x;
}

/// One output element per iteration (batch, query, column): two passes over
/// the keys, recomputing each score (2 * Lk * D multiply-adds per element).
/// The path of 16-bit types on the CPU and of head dimensions whose tiles do
/// not fit the GPU's shared memory.
template <typename T, typename Acc, typename M>
HP_KERNEL(hp_attention_naive, hp_attention_shape s, const T *q, const T *kT,
          const T *v, const T *scale, const M *mask, const T *fill, T *y) {
  HP_FOR_W(e, s.Lk * (s.D + 1)) {
    const int64_t c = e % s.Dv, i = e / s.Dv % s.Lq, b = e / (s.Dv * s.Lq);
    const T *qi = q + hp_attention_offset(s, s.q, b) + i * s.q.row;
    const T *kb = kT + hp_attention_offset(s, s.k, b);
    const T *vc = v + hp_attention_offset(s, s.v, b) + c * s.v.col;
    const M *mi =
        mask ? mask + hp_attention_offset(s, s.m, b) + i * s.m.row : mask;
    const Acc sc = scale ? (Acc)*scale : Acc(1);
    Acc mx = hp_lowest<Acc>(), l = 0, acc = 0;
    const int64_t keys = hp_attention_key_limit(s, i);
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t j = 0; j < keys; ++j) {
        Acc x = 0;
        for (int64_t d = 0; d < s.D; ++d)
          x += (Acc)qi[d * s.q.col] * (Acc)kb[d * s.k.row + j * s.k.col];
        x = hp_attention_score<Acc>(s, x, sc, mi ? mi + j * s.m.col : mi, fill);
        if (pass == 0) {
          mx = x > mx ? x : mx;
        } else {
          Acc p = hp_exp(x - mx);
          l += p;
          acc += p * (Acc)vc[j * s.v.row];
        }
      }
    y[hp_attention_offset(s, s.y, b) + i * s.y.row + c * s.y.col] =
        (T)(acc / l);
  }
}

#if HP_CUDA
/// One block of `br` threads per `br` queries of one batch (blockIdx.y
/// strides over batches), one query per thread. Each tile of `bc` keys is
/// staged in shared memory with the block's queries, their scores and their
/// output rows, all in Acc: (br * (D + Dv + bc) + bc * (D + Dv)) elements.
template <typename T, typename Acc, typename M>
__global__ void hp_attention_tiles(hp_attention_shape s, int br, int bc,
                                   const T *q, const T *kT, const T *v,
                                   const T *scale, const M *mask, const T *fill,
                                   T *y) {
  extern __shared__ unsigned char hp_attention_smem[];
  Acc *Qs = (Acc *)hp_attention_smem, *Os = Qs + br * s.D;
  Acc *Ss = Os + br * s.Dv, *Ks = Ss + br * bc, *Vs = Ks + bc * s.D;
  const int r = threadIdx.x;
  const int64_t i = blockIdx.x * (int64_t)br + r;
  const Acc sc = scale ? (Acc)*scale : Acc(1);
  for (int64_t b = blockIdx.y; b < s.batch; b += gridDim.y) {
    const bool live = i < s.Lq;
    const M *mi = mask && live
                      ? mask + hp_attention_offset(s, s.m, b) + i * s.m.row
                      : (const M *)0;
    const T *qi = q + hp_attention_offset(s, s.q, b) + i * s.q.row;
    const T *kb = kT + hp_attention_offset(s, s.k, b);
    const T *vb = v + hp_attention_offset(s, s.v, b);
    for (int64_t d = 0; d < s.D; ++d)
      Qs[r * s.D + d] = live ? (Acc)qi[d * s.q.col] : Acc(0);
    for (int64_t d = 0; d < s.Dv; ++d)
      Os[r * s.Dv + d] = 0;
    Acc m = hp_lowest<Acc>(), l = 0;
    // The block's keys: up to its last query's diagonal when causal (one
    // bound for the whole block, which loads every tile together).
    const int64_t last = blockIdx.x * (int64_t)br + br - 1;
    const int64_t keys =
        hp_attention_key_limit(s, last < s.Lq - 1 ? last : s.Lq - 1);
    for (int64_t j0 = 0; j0 < keys; j0 += bc) {
      const int cols = (int)(keys - j0 < bc ? keys - j0 : bc);
      __syncthreads(); // the previous tile is consumed
      for (int64_t e = r; e < (int64_t)cols * s.D; e += br) {
        int64_t c = e % cols, d = e / cols; // coalesced along the keys
        Ks[c * s.D + d] = (Acc)kb[d * s.k.row + (j0 + c) * s.k.col];
      }
      for (int64_t e = r; e < (int64_t)cols * s.Dv; e += br) {
        int64_t c = e / s.Dv, d = e % s.Dv;
        Vs[e] = (Acc)vb[(j0 + c) * s.v.row + d * s.v.col];
      }
      __syncthreads();
      if (!live)
        continue;
      Acc mx = m;
      for (int c = 0; c < cols; ++c) {
        Acc x = 0;
        for (int64_t d = 0; d < s.D; ++d)
          x += Qs[r * s.D + d] * Ks[c * s.D + d];
        x = hp_attention_score<Acc>(s, x, sc, mi ? mi + (j0 + c) * s.m.col : mi,
                                    fill);
        Ss[r * bc + c] = x;
        mx = x > mx ? x : mx;
      }
      // All scores so far -inf: nothing to add yet (exp(-inf - -inf) is NaN).
      const Acc alpha = mx == hp_lowest<Acc>() ? Acc(1) : hp_exp(m - mx);
      for (int64_t d = 0; d < s.Dv; ++d)
        Os[r * s.Dv + d] *= alpha;
      l *= alpha;
      for (int c = 0; c < cols; ++c) {
        Acc p = mx == hp_lowest<Acc>() ? Acc(0) : hp_exp(Ss[r * bc + c] - mx);
        l += p;
        for (int64_t d = 0; d < s.Dv; ++d)
          Os[r * s.Dv + d] += p * Vs[c * s.Dv + d];
      }
      m = mx;
    }
    if (live)
      for (int64_t d = 0; d < s.Dv; ++d)
        y[hp_attention_offset(s, s.y, b) + i * s.y.row + d * s.y.col] =
            (T)(Os[r * s.Dv + d] / l);
    __syncthreads(); // Qs and Os are rewritten for the next batch
  }
}
#else
/// The CPU path of float and double: tasks of HP_ATTENTION_ROWS queries of
/// one batch; per block of HP_ATTENTION_KEYS keys, S = Q KT by a
/// one-thread GEMM into a stack tile, the scale, mask and online softmax on
/// its rows, then Y += P V by a second GEMM straight into Y's rows (Y is the
/// accumulator: T is Acc here), divided by the row sums at the end. 32 x 256
/// scores are 32 KiB of float, the tile size of hp_conv2d_tiled. Q, KT and
/// V are GEMM operands in place: their rows or their columns are contiguous
/// (FusedAttention's constraints), the other stride is BLAS's leading
/// dimension, with the transpose flag when the columns are not contiguous.
/// Y's rows are contiguous.
#define HP_ATTENTION_ROWS 32
#define HP_ATTENTION_KEYS 256
template <typename T, typename Acc, typename M>
static void hp_attention_blocked(hp_ctx *ctx, hp_attention_shape s, const T *q,
                                 const T *kT, const T *v, const T *scale,
                                 const M *mask, const T *fill, T *y) {
  const int64_t blocks = (s.Lq + HP_ATTENTION_ROWS - 1) / HP_ATTENTION_ROWS;
  const int64_t tasks = s.batch * blocks;
  const Acc sc = scale ? (Acc)*scale : Acc(1);
  const bool parallel = tasks > 1 && s.Lq * s.Lk * (s.D + s.Dv) >= 16384;
  // Causal tasks differ in work (a later block of queries attends to more
  // keys): they are handed out round-robin, the others in contiguous runs.
  int64_t chunk = 1;
#ifdef _OPENMP
  if (!s.causal)
    chunk = (tasks + omp_get_max_threads() - 1) / omp_get_max_threads();
#endif
#pragma omp parallel for schedule(static, chunk) if (parallel)
  for (int64_t task = 0; task < tasks; ++task) {
    alignas(64) T S[HP_ATTENTION_ROWS * HP_ATTENTION_KEYS];
    Acc m[HP_ATTENTION_ROWS], l[HP_ATTENTION_ROWS];
    const int64_t b = task / blocks, i0 = task % blocks * HP_ATTENTION_ROWS;
    const int64_t rows =
        s.Lq - i0 < HP_ATTENTION_ROWS ? s.Lq - i0 : HP_ATTENTION_ROWS;
    const T *Q = q + hp_attention_offset(s, s.q, b) + i0 * s.q.row;
    const T *K = kT + hp_attention_offset(s, s.k, b);
    const T *V = v + hp_attention_offset(s, s.v, b);
    T *Y = y + hp_attention_offset(s, s.y, b) + i0 * s.y.row;
    const M *mb = mask ? mask + hp_attention_offset(s, s.m, b) : mask;
    for (int64_t r = 0; r < rows; ++r) {
      m[r] = hp_lowest<Acc>();
      l[r] = 0;
    }
    const int64_t keys = hp_attention_key_limit(s, i0 + rows - 1);
    for (int64_t j0 = 0; j0 < keys; j0 += HP_ATTENTION_KEYS) {
      const int64_t cols =
          keys - j0 < HP_ATTENTION_KEYS ? keys - j0 : HP_ATTENTION_KEYS;
      hp_gemm<T, Acc>(ctx, s.q.col != 1, s.k.col != 1, rows, cols, s.D, 1.0f, Q,
                      s.q.col != 1 ? s.q.col : s.q.row, 0, K + j0 * s.k.col,
                      s.k.col != 1 ? s.k.col : s.k.row, 0, 0.0f, S, cols, 0, 1);
      for (int64_t r = 0; r < rows; ++r) {
        T *x = S + r * cols;
        const M *mr = mb ? mb + (i0 + r) * s.m.row + j0 * s.m.col : mb;
        Acc mx = m[r];
        for (int64_t c = 0; c < cols; ++c) {
          const Acc xc = hp_attention_score<Acc>(
              s, (Acc)x[c], sc, mr ? mr + c * s.m.col : mr, fill);
          x[c] = (T)xc;
          mx = xc > mx ? xc : mx;
        }
        // Every score so far -inf: p = 0 (exp(-inf - -inf) would be NaN).
        const bool none = mx == hp_lowest<Acc>();
        const Acc alpha = none ? Acc(1) : hp_exp(m[r] - mx);
        Acc sum = 0;
        if (none) {
          for (int64_t c = 0; c < cols; ++c)
            x[c] = T(0);
        } else {
          HP_SIMD_REDUCE(+, sum)
          for (int64_t c = 0; c < cols; ++c) {
            const Acc p = hp_exp((Acc)x[c] - mx);
            x[c] = (T)p;
            sum += p;
          }
        }
        l[r] = l[r] * alpha + sum;
        m[r] = mx;
        T *yr = Y + r * s.y.row;
        if (j0 == 0)
          memset(yr, 0, sizeof(T) * (size_t)s.Dv);
        else if (alpha != Acc(1))
          for (int64_t d = 0; d < s.Dv; ++d)
            yr[d] = (T)((Acc)yr[d] * alpha);
      }
      hp_gemm<T, Acc>(ctx, 0, s.v.col != 1, rows, s.Dv, cols, 1.0f, S, cols, 0,
                      V + j0 * s.v.row, s.v.col != 1 ? s.v.col : s.v.row, 0,
                      1.0f, Y, s.y.row, 0, 1);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const Acc inv = Acc(1) / l[r];
      for (int64_t d = 0; d < s.Dv; ++d)
        Y[r * s.y.row + d] = (T)((Acc)Y[r * s.y.row + d] * inv);
    }
  }
}
#endif

#if HP_CUDA
/// 16-bit element types of the tensor-core attention (sm_80 and later):
/// HetPar's storage structs and the CUDA types WMMA reads (the same bits).
template <typename T> struct hp_wmma_type { static const bool ok = false; };
template <> struct hp_wmma_type<hp_bf16> {
  static const bool ok = true;
  typedef __nv_bfloat16 type;
};
template <> struct hp_wmma_type<hp_half> {
  static const bool ok = true;
  typedef __half type;
};

/// Tensor-core FusedAttention for 16-bit Q, K, V (FlashAttention-2's
/// algorithm with WMMA 16x16x16 products, float accumulation): a block of
/// four warps takes 64 queries of one batch, each warp 16 of them. Per tile of
/// 64 keys the block stages K and V in shared memory; each warp computes its
/// 16 x 64 scores S = Q KT on tensor cores, applies the scale and the mask and
/// the online softmax in float (two lanes per query row), writes P in the
/// input type and accumulates O += P V on tensor cores into its float rows
/// of O in shared memory, which the running maximum rescales. Keys past Lk
/// in the last tile and queries past Lq are zero rows whose scores are -inf
/// or whose outputs are not written. D and Dv are multiples of 16 (checked
/// by hp_attention_mma_fits). Shared memory: hp_attention_mma_smem_bytes.
#define HP_ATTN_MMA_BR 64
#define HP_ATTN_MMA_BC 64
template <typename T, typename M>
__global__ void __launch_bounds__(128)
    hp_attention_mma(hp_attention_shape s, const T *q, const T *kT, const T *v,
                     const T *scale, const M *mask, const T *fill, T *y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using namespace nvcuda;
  typedef typename hp_wmma_type<T>::type W;
  const int BR = HP_ATTN_MMA_BR, BC = HP_ATTN_MMA_BC;
  const int D = (int)s.D, DV = (int)s.Dv;
  // Leading dimensions padded against bank conflicts; WMMA wants multiples
  // of 8 elements (16-bit) and of 4 (float), and 32-byte aligned tiles.
  const int ldq = D + 8, ldv = DV + 8, lds = BC + 4, ldp = BC + 8, ldo = DV + 4;
  extern __shared__ __align__(128) unsigned char hp_attention_mma_smem[];
  uint16_t *Qs = (uint16_t *)hp_attention_mma_smem;
  uint16_t *Ks = Qs + BR * ldq, *Vs = Ks + BC * ldq;
  float *Ss = (float *)(Vs + BC * ldv);
  uint16_t *Ps = (uint16_t *)(Ss + BR * lds);
  float *Os = (float *)(Ps + BR * ldp);
  float *rowM = Os + BR * ldo, *rowL = rowM + BR;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t i0 = blockIdx.x * (int64_t)BR;
  const float sc = scale ? (float)*scale : 1.0f;
  for (int64_t b = blockIdx.y; b < s.batch; b += gridDim.y) {
    const uint16_t *qb = (const uint16_t *)(q + hp_attention_offset(s, s.q, b));
    const uint16_t *kb =
        (const uint16_t *)(kT + hp_attention_offset(s, s.k, b));
    const uint16_t *vb = (const uint16_t *)(v + hp_attention_offset(s, s.v, b));
    const M *mb = mask ? mask + hp_attention_offset(s, s.m, b) : mask;
    for (int e = tid; e < BR * D; e += blockDim.x) {
      const int r = s.q.col == 1 ? e / D : e % BR;
      const int d = s.q.col == 1 ? e % D : e / BR;
      const int64_t i = i0 + r;
      Qs[r * ldq + d] = i < s.Lq ? qb[i * s.q.row + d * s.q.col] : 0;
    }
    for (int e = tid; e < BR * ldo; e += blockDim.x)
      Os[e] = 0.0f;
    if (tid < BR) {
      rowM[tid] = -INFINITY;
      rowL[tid] = 0.0f;
    }
    const int64_t last = i0 + BR - 1 < s.Lq - 1 ? i0 + BR - 1 : s.Lq - 1;
    const int64_t keys = hp_attention_key_limit(s, last);
    for (int64_t j0 = 0; j0 < keys; j0 += BC) {
      const int cols = (int)(keys - j0 < BC ? keys - j0 : BC);
      __syncthreads(); // the previous tile is consumed; Q and O are set
      for (int e = tid; e < BC * D; e += blockDim.x) {
        const int c = s.k.row == 1 ? e / D : e % BC;
        const int d = s.k.row == 1 ? e % D : e / BC;
        Ks[c * ldq + d] = c < cols ? kb[d * s.k.row + (j0 + c) * s.k.col] : 0;
      }
      for (int e = tid; e < BC * DV; e += blockDim.x) {
        const int c = s.v.col == 1 ? e / DV : e % BC;
        const int d = s.v.col == 1 ? e % DV : e / BC;
        Vs[c * ldv + d] = c < cols ? vb[(j0 + c) * s.v.row + d * s.v.col] : 0;
      }
      __syncthreads();
      // S (this warp's 16 rows) = Q KT.
      const W *Qw = (const W *)(Qs + warp * 16 * ldq);
      for (int n = 0; n < BC / 16; ++n) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k = 0; k < D / 16; ++k) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::col_major> fb;
          wmma::load_matrix_sync(fa, Qw + k * 16, ldq);
          wmma::load_matrix_sync(fb, (const W *)(Ks + n * 16 * ldq) + k * 16,
                                 ldq);
          wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Ss + warp * 16 * lds + n * 16, acc, lds,
                                wmma::mem_row_major);
      }
      __syncwarp();
      // The online softmax of each row, two lanes per row, 32 keys each.
      const int r = warp * 16 + lane / 2, half = lane & 1;
      const int64_t i = i0 + r;
      const M *mi = mb && i < s.Lq ? mb + i * s.m.row : (const M *)0;
      const float mOld = rowM[r];
      float mx = mOld;
      for (int c = half * 32; c < half * 32 + 32; ++c) {
        float x = -INFINITY;
        if (c < cols && i < s.Lq)
          x = hp_attention_score<float>(
              s, Ss[r * lds + c], sc, mi ? mi + (j0 + c) * s.m.col : mi, fill);
        Ss[r * lds + c] = x;
        mx = x > mx ? x : mx;
      }
      const float other = __shfl_xor_sync(0xffffffffu, mx, 1);
      mx = other > mx ? other : mx;
      // All scores so far -inf: nothing to add (exp(-inf - -inf) is NaN).
      const float alpha = mx == -INFINITY ? 1.0f : __expf(mOld - mx);
      float sum = 0.0f;
      for (int c = half * 32; c < half * 32 + 32; ++c) {
        const float p = mx == -INFINITY ? 0.0f : __expf(Ss[r * lds + c] - mx);
        const T pt = (T)p;
        sum += (float)pt; // the rounded weights that P V multiplies
        Ps[r * ldp + c] = pt.bits;
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      for (int d = half; d < DV; d += 2)
        Os[r * ldo + d] *= alpha;
      if (!half) {
        rowM[r] = mx;
        rowL[r] = rowL[r] * alpha + sum;
      }
      __syncwarp();
      // O (this warp's 16 rows) += P V.
      for (int n = 0; n < DV / 16; ++n) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        float *Ow = Os + warp * 16 * ldo + n * 16;
        wmma::load_matrix_sync(acc, Ow, ldo, wmma::mem_row_major);
        for (int k = 0; k < BC / 16; ++k) {
          wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa;
          wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> fb;
          wmma::load_matrix_sync(fa, (const W *)(Ps + warp * 16 * ldp) + k * 16,
                                 ldp);
          wmma::load_matrix_sync(fb, (const W *)(Vs + k * 16 * ldv) + n * 16,
                                 ldv);
          wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Ow, acc, ldo, wmma::mem_row_major);
      }
      __syncwarp();
    }
    __syncwarp();
    T *yb = y + hp_attention_offset(s, s.y, b);
    for (int e = lane; e < 16 * DV; e += 32) {
      const int r = warp * 16 + e / DV, d = e % DV;
      if (i0 + r < s.Lq)
        yb[(i0 + r) * s.y.row + d * s.y.col] = (T)(Os[r * ldo + d] / rowL[r]);
    }
    __syncthreads(); // Q and O are rewritten for the next batch
  }
#endif
}

/// Shared memory of hp_attention_mma (bytes): Q, K and V tiles, the float
/// scores, P, the float output rows and two floats per row.
static int64_t hp_attention_mma_smem_bytes(const hp_attention_shape &s) {
  const int64_t BR = HP_ATTN_MMA_BR, BC = HP_ATTN_MMA_BC;
  return 2 * (BR * (s.D + 8) + BC * (s.D + 8) + BC * (s.Dv + 8) +
              BR * (BC + 8)) +
         4 * (BR * (BC + 4) + BR * (s.Dv + 4) + 2 * BR);
}

/// Whether hp_attention_mma can take this attention: HETPAR_ATTENTION=mma
/// (opt-in until the kernel has been checked on a GPU: it compiles with nvcc
/// in CI, scripts/gpu-check.sh runs it against PyTorch), head dimensions that
/// are multiples of 16, and a device of compute capability 8.0 or later with
/// the shared memory for it.
static bool hp_attention_mma_fits(const hp_attention_shape &s) {
  static int major = -1, optin = 0, chosen = 0;
  if (major < 0) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                           dev);
    const char *e = getenv("HETPAR_ATTENTION");
    chosen = e && strcmp(e, "mma") == 0;
  }
  return chosen && major >= 8 && s.D > 0 && s.Dv > 0 && s.D % 16 == 0 &&
         s.Dv % 16 == 0 && hp_attention_mma_smem_bytes(s) <= optin;
}

/// Launches hp_attention_mma where it applies (16-bit T with float
/// accumulation, hp_attention_mma_fits); false where it does not. Other
/// types never instantiate the kernel.
template <typename T, typename Acc, typename M,
          bool Wmma = hp_wmma_type<T>::ok && sizeof(Acc) == 4>
struct hp_attention_mma_try {
  static bool run(hp_ctx *, const hp_attention_shape &, const T *, const T *,
                  const T *, const T *, const M *, const T *, T *) {
    return false;
  }
};
template <typename T, typename Acc, typename M>
struct hp_attention_mma_try<T, Acc, M, true> {
  static bool run(hp_ctx *ctx, const hp_attention_shape &s, const T *q,
                  const T *kT, const T *v, const T *scale, const M *mask,
                  const T *fill, T *y) {
    if (!hp_attention_mma_fits(s))
      return false;
    static int64_t allowed = 48 * 1024; // the default dynamic shared memory
    const int64_t bytes = hp_attention_mma_smem_bytes(s);
    if (bytes > allowed) {
      cudaFuncSetAttribute(hp_attention_mma<T, M>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)bytes);
      allowed = bytes;
    }
    dim3 grid((unsigned)((s.Lq + HP_ATTN_MMA_BR - 1) / HP_ATTN_MMA_BR),
              (unsigned)(s.batch < 65535 ? s.batch : 65535));
    hp_attention_mma<T, M><<<grid, 128, (size_t)bytes, ctx->stream>>>(
        s, q, kT, v, scale, mask, fill, y);
    return true;
  }
};
#endif

/// Shared memory of hp_attention_tiles for br queries and bc keys (bytes).
template <typename Acc>
static int64_t hp_attention_smem_bytes(const hp_attention_shape &s, int br,
                                       int bc) {
  return (int64_t)sizeof(Acc) * (br * (s.D + s.Dv + bc) + bc * (s.D + s.Dv));
}

/// FusedAttention. On the GPU: hp_attention_mma for 16-bit types where it
/// applies and HETPAR_ATTENTION=mma chose it (hp_attention_mma_try), else
/// hp_attention_tiles with 64 queries and 32 keys per block, halved until the
/// tiles fit 48 KiB of shared memory (the default limit per block), else
/// hp_attention_naive. On the CPU: hp_attention_blocked for float and double,
/// hp_attention_naive for 16-bit types. `scale`, `mask` and `fill` may be null
/// (absent). Lk == 0 gives zeros, as the unfused product of an empty Softmax
/// with V does.
template <typename T, typename Acc, typename M>
static void hp_attention_launch(hp_ctx *ctx, hp_attention_shape s, const T *q,
                                const T *kT, const T *v, const T *scale,
                                const M *mask, const T *fill, T *y) {
  if (s.batch == 0 || s.Lq == 0 || s.Dv == 0)
    return;
  if (s.Lk == 0) { // nothing to attend to: the products' empty sums
    size_t bytes = sizeof(T) * (size_t)(s.batch * s.Lq * s.Dv);
#if HP_CUDA
    cudaMemsetAsync(y, 0, bytes, ctx->stream);
#else
    memset((void *)y, 0, bytes);
#endif
    return;
  }
#if HP_CUDA
  if (hp_attention_mma_try<T, Acc, M>::run(ctx, s, q, kT, v, scale, mask, fill,
                                           y))
    return;
  int br = 64, bc = 32;
  while (br > 1 && hp_attention_smem_bytes<Acc>(s, br, bc) > 48 * 1024) {
    br /= 2;
    bc = bc > 1 ? bc / 2 : 1;
  }
  if (hp_attention_smem_bytes<Acc>(s, br, bc) > 48 * 1024) {
    hp_launch(ctx, hp_attention_naive<T, Acc, M>, s.batch * s.Lq * s.Dv, s, q,
              kT, v, scale, mask, fill, y);
    return;
  }
  dim3 grid((unsigned)((s.Lq + br - 1) / br),
            (unsigned)(s.batch < 65535 ? s.batch : 65535));
  hp_attention_tiles<T, Acc, M>
      <<<grid, br, (size_t)hp_attention_smem_bytes<Acc>(s, br, bc),
         ctx->stream>>>(s, br, bc, q, kT, v, scale, mask, fill, y);
#else
  if (std::is_same<T, float>::value || std::is_same<T, double>::value)
    hp_attention_blocked<T, Acc, M>(ctx, s, q, kT, v, scale, mask, fill, y);
  else
    hp_launch(ctx, hp_attention_naive<T, Acc, M>, s.batch * s.Lq * s.Dv, s, q,
              kT, v, scale, mask, fill, y);
#endif
}

#endif // HETPAR_DEVICE_ATTENTION_H
