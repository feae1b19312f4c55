//===- hetpar_gemm_panels.h - CPU GEMM on packed weights --------*- C++ -*-===//
//
// The CPU GEMM on weights packed at compile time (hp_gemm_panels), its
// micro-kernel (hp_bcast_block, shared with the convolutions), and GEMM
// epilogues and bias rows on both backends (hp_gemm_b).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_GEMM_PANELS_H
#define HETPAR_DEVICE_GEMM_PANELS_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

#if !HP_CUDA

/// 16 floats as one vector (GCC and Clang vector extensions): the compilers
/// keep arrays of them in registers, where a float[8][16] under `omp simd`
/// was stored and reloaded on every multiply-add.
typedef float hp_v16f __attribute__((vector_size(64)));

/// The steps of hp_bcast_block per cache line it prefetches: 4, 16 bytes a
/// step. A block of hp_gemm_panels (K steps) then fetches K / 4 lines of the
/// next panel (K x 64 floats, 4 K lines): the first 16 blocks of a panel's
/// task fetch all of it.
#define HP_PREFETCH_STEPS 4

/// P x 16 x NVM sums of products with one operand broadcast (the
/// micro-kernel of hp_conv2d_channels and hp_gemm_panels): for each of P
/// outputs and 16 x NVM columns of `w`,
///   out[p][j] = sum over (a, b, c) < ext of
///               x[base[p] + a step[0] + b step[1] + c step[2]] w[i][j],
/// i counting the (a, b, c) in order, `wStep` values apart in w. Per step,
/// NVM vector loads of w and one broadcast per output: a convolution's
/// (input channel, kernel row, kernel column) over its positions, or a
/// GEMM's k over its rows (ext {1, 1, K}).
///
/// `next` (may be null): memory the caller reads soon, fetched into L2
/// meanwhile, one cache line per HP_PREFETCH_STEPS steps (hp_gemm_panels:
/// its next panel).
template <int P, int NVM>
__attribute__((noinline)) static void
hp_bcast_block(const float *x, const int64_t *base, const int64_t ext[3],
               const int64_t step[3], const float *w, int64_t wStep,
               float (*out)[16 * NVM], const char *next = nullptr) {
  // Local accumulators, stored once at the end: a vector of float may alias
  // the float inputs, so accumulating into `out` would keep them in memory.
  // Every loop over P or NVM is unrolled, so that they stay in registers.
  hp_v16f acc[P][NVM];
#pragma GCC unroll 24
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 4
    for (int v = 0; v < NVM; ++v)
      acc[p][v] = hp_v16f{};
  const float *wk = w;
  for (int64_t a = 0; a < ext[0]; ++a)
    for (int64_t b = 0; b < ext[1]; ++b)
    // Two steps per iteration: the next step's loads issue beside this
    // one's FMAs. On an Intel Sapphire Rapids core, GPT-2 small's GEMMs
    // went from 62-68% to 68-74% of the FMA peak, its LM head from 38.5 to
    // 35.7 ms (bench/codegen/gemm-panels.sh, 2 threads).
#pragma GCC unroll 2
      for (int64_t c = 0; c < ext[2]; ++c, wk += wStep) {
        const float *xk = x + a * step[0] + b * step[1] + c * step[2];
        if (next) // 2: prefetcht1, into L2
          __builtin_prefetch(next + c * (64 / HP_PREFETCH_STEPS), 0, 2);
        hp_v16f wv[NVM];
#pragma GCC unroll 4
        for (int v = 0; v < NVM; ++v)
          memcpy(&wv[v], wk + 16 * v, sizeof wv[v]);
#pragma GCC unroll 24
        for (int p = 0; p < P; ++p) {
          const float in = xk[base[p]];
#pragma GCC unroll 4
          for (int v = 0; v < NVM; ++v)
            acc[p][v] += in * wv[v];
        }
      }
#pragma GCC unroll 24
  for (int p = 0; p < P; ++p)
    memcpy(out[p], acc[p], sizeof acc[p]);
}

/// The rows of one block of hp_gemm_panels (6 x 64 accumulators: 24 of
/// AVX-512's 32 vector registers).
#define HP_GEMM_ROWS 6

/// One block of hp_gemm_panels: the sums of HP_GEMM_ROWS rows of A (at
/// `base`) with the first `cols` columns of a panel, as few vectors of 16
/// as cover them (a panel's last columns past N are zeros that need no
/// products: K and V projections of 32 columns took twice their work).
/// Writes them to out as HP_GEMM_ROWS rows and returns the row's length.
static int64_t hp_gemm_block(const float *A, const int64_t *base,
                             const int64_t ext[3], const int64_t step[3],
                             const float *bp, int64_t cols, float *out,
                             const char *next) {
  const int64_t vectors = (cols + 15) / 16;
  switch (vectors) {
  case 1:
    hp_bcast_block<HP_GEMM_ROWS, 1>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[16]>(out), next);
    break;
  case 2:
    hp_bcast_block<HP_GEMM_ROWS, 2>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[32]>(out), next);
    break;
  case 3:
    hp_bcast_block<HP_GEMM_ROWS, 3>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[48]>(out), next);
    break;
  default:
    hp_bcast_block<HP_GEMM_ROWS, 4>(A, base, ext, step, bp, HP_GEMM_PANEL,
                                    reinterpret_cast<float(*)[64]>(out), next);
    return HP_GEMM_PANEL;
  }
  return 16 * vectors;
}

/// C[M, N] = alpha A[M, K] B + beta C (row-major, lda and ldc values per
/// row; beta 0: C is not read), or with `bias` (a row [N]) alpha A B + beta
/// bias in every row, on the CPU, B packed at compile time as
/// panels of 64 columns (hetpar_packed.h, hp_gemm_packs_b): for each block of
/// 6 rows, K steps of four vector loads of the panel's row k and six
/// broadcasts of A's. No packing at run time: OpenBLAS repacks B on every
/// call, which took 12% of GPT-2 small at 1 x 128 (ONNX Runtime's MLAS packs
/// its weights once, at load, as this does at compile time). Tasks of one
/// panel and a run of row blocks, in the order of the runs, at least four per
/// thread where the shape allows.
template <typename Epi = hp_epi_none>
static void hp_gemm_panels(int64_t M, int64_t N, int64_t K, float alpha,
                           const float *A, int64_t lda, const float *Bp,
                           float beta, const float *bias, float *C, int64_t ldc,
                           Epi epi = Epi()) {
  const bool plain = std::is_same<Epi, hp_epi_none>::value;
#ifdef _OPENMP
  const int64_t threads = omp_get_max_threads();
#else
  const int64_t threads = 1;
#endif
  const int64_t panels = (N + HP_GEMM_PANEL - 1) / HP_GEMM_PANEL;
  const int64_t blocks = (M + HP_GEMM_ROWS - 1) / HP_GEMM_ROWS;
  // Row runs per panel: about 4 tasks per thread, their count a multiple of
  // the threads where the rows allow, so that static scheduling gives every
  // thread the same work (3 panels of 4 runs on 2 threads, not 9 tasks
  // split 5:4).
  int64_t runs = (4 * threads + panels - 1) / panels;
  while (panels * runs % threads != 0 && runs < blocks)
    ++runs;
  runs = runs > blocks ? blocks : runs;
  const int64_t run = (blocks + runs - 1) / runs; // blocks per task
  const int64_t ext[3] = {1, 1, K}, step[3] = {0, 0, 1};
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < panels * runs; ++task) {
    // Run-major: a thread's contiguous share of the tasks holds every
    // panel alike, so a narrower last panel does not load one thread alone.
    const int64_t panel = task % panels, b0 = task / panels * run;
    const int64_t n0 = panel * HP_GEMM_PANEL;
    const int64_t cols = N - n0 < HP_GEMM_PANEL ? N - n0 : HP_GEMM_PANEL;
    const float *bp = Bp + panel * K * HP_GEMM_PANEL;
    for (int64_t b = b0; b < b0 + run && b < blocks; ++b) {
      const int64_t m0 = b * HP_GEMM_ROWS;
      const int64_t live = M - m0 < HP_GEMM_ROWS ? M - m0 : HP_GEMM_ROWS;
      int64_t base[HP_GEMM_ROWS];
      for (int p = 0; p < HP_GEMM_ROWS; ++p) // past M: the last row again
        base[p] = (m0 + (p < live ? p : live - 1)) * lda;
      alignas(64) float out[HP_GEMM_ROWS * HP_GEMM_PANEL];
      // The task's next panel, from DRAM while this one computes: its
      // first block would wait for it otherwise (GPT-2 small's tied LM head
      // at 1 x 128, 154 MB of panels: 40-41 -> 35-36 ms on 2 threads of an
      // Intel Sapphire Rapids, bench/codegen/gemm-panels.sh). Block j of
      // the task fetches the j-th K * 64 / HP_PREFETCH_STEPS bytes of it:
      // the first `fetching` blocks cover it, and no address is past it.
      const int64_t fetching = HP_GEMM_PANEL * 4 * HP_PREFETCH_STEPS / 64;
      const char *next = nullptr;
      if (panel + 1 < panels && b - b0 < fetching)
        next = reinterpret_cast<const char *>(bp + K * HP_GEMM_PANEL) +
               (b - b0) * K * (64 / HP_PREFETCH_STEPS);
      const int64_t width =
          hp_gemm_block(A, base, ext, step, bp, cols, out, next);
      for (int64_t p = 0; p < live; ++p) {
        float *c = C + (m0 + p) * ldc + n0;
        const float *v = out + p * width;
        if (bias && beta != 0.0f) {
          const float *r = bias + n0;
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j] + beta * r[j]);
        } else if (bias) {
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j]);
        } else if (beta != 0.0f) {
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j] + beta * c[j]);
        } else if (alpha != 1.0f || !plain) {
          HP_SIMD
          for (int64_t j = 0; j < cols; ++j)
            c[j] = epi(alpha * v[j]);
        } else {
          memcpy(c, v, sizeof(float) * (size_t)cols);
        }
      }
    }
  }
}

#endif // !HP_CUDA

/// C = epi(C) over every element of the batch's M x N matrices (ldc values
/// apart, sC between matrices): a GEMM epilogue (Epi, a functor on float,
/// hp_epi_none for none) where the GEMM could not apply it as it stored
/// its sums (not hp_gemm_panels: OpenBLAS, cuBLAS, cuBLASLt).
template <typename T, typename Epi>
HP_KERNEL(hp_gemm_epilogue_rows, int64_t N, int64_t ldc, Epi epi, T *C) {
#if HP_CUDA
  HP_FOR(i) {
    T *c = C + i / N * ldc + i % N;
    *c = (T)epi((float)*c);
  }
#else
  // Rows of N as SIMD lanes (the activation's exp or erf vectorized), as
  // the fused elementwise kernels run.
  HP_FOR_ROWS(row, N) {
    T *c = C + row * ldc;
    HP_SIMD
    for (int64_t j = 0; j < N; ++j)
      c[j] = (T)epi((float)c[j]);
  }
#endif
}
template <typename T>
static void hp_gemm_epilogue(hp_ctx *, int64_t, int64_t, int64_t, int64_t,
                             int64_t, T *, hp_epi_none) {}
template <typename T, typename Epi>
static void hp_gemm_epilogue(hp_ctx *ctx, int64_t M, int64_t N, int64_t ldc,
                             int64_t sC, int64_t batch, T *C, Epi epi) {
  for (int64_t b = 0; b < batch; ++b)
    hp_launch(ctx, hp_gemm_epilogue_rows<T, Epi>, M * N, N, ldc, epi,
              C + b * sC);
}

/// C's rows, each the row `bias` [N] (ldc values apart): Gemm's broadcast C
/// before hp_gemm adds beta C to the product.
template <typename T>
HP_KERNEL(hp_bias_rows, int64_t N, int64_t ldc, const T *bias, T *C) {
  HP_FOR(i) { C[i / N * ldc + i % N] = bias[i % N]; }
}

/// hp_gemm given `Bp`, B packed as hp_gemm_packs_b describes (null: not
/// packed), and optionally `bias`, a row [N]: with it C's prior content is
/// that row in every row (C = alpha op(A) op(B) + beta bias, Gemm with a C of
/// [N]) and is not read. On the CPU, a float GEMM with no transposed A whose
/// batches share B and lie row after row in A and C (one GEMM of batch x M
/// rows) runs hp_gemm_panels on Bp, adding the biases as it stores its sums.
/// On the GPU, a bias with beta 1, and an epilogue that is one activation
/// cuBLASLt has (Epi::lt_act: ReLU, tanh GELU), are cuBLASLt's epilogue
/// (hp_gemm_lt) where cuBLASLt takes the GEMM. Everything else fills C with the
/// rows and runs hp_gemm on B. Then `epi` finishes every element of C (C =
/// epi(product + bias)): as hp_gemm_panels stores its sums, else in one
/// pass after the GEMM (hp_gemm_epilogue). Returns 0, or non-zero with
/// ctx->error set.
template <typename T, typename Acc, typename Epi = hp_epi_none>
static int hp_gemm_b(HP_GEMM_PARAMS(T), const T *Bp, const T *bias,
                     Epi epi = Epi()) {
#if !HP_CUDA
  const bool stacked = batch == 1 || (sB == 0 && lda == K && sA == M * K &&
                                      ldc == N && sC == M * N);
  if (std::is_same<T, float>::value && Bp && !ta && stacked &&
      hp_gemm_packs_b(batch * M, N, K)) {
    hp_gemm_panels(batch * M, N, K, alpha, (const float *)A, lda,
                   (const float *)Bp, beta, (const float *)bias, (float *)C,
                   ldc, epi);
    return 0;
  }
#else
  // cuBLASLt for a bias row, an activation it has (Epi::lt_act), or both;
  // another epilogue then runs as its own pass.
  const int act = Epi::lt_act;
  const bool lt = bias ? beta == 1.0f : beta == 0.0f && act != HP_LT_ACT_NONE;
  if (lt && hp_try_library(
                [&] { return hp_gemm_lt<T>(HP_GEMM_ARGS, bias, act); }) == 0) {
    if (act == HP_LT_ACT_NONE)
      hp_gemm_epilogue(ctx, M, N, ldc, sC, batch, C, epi);
    return 0;
  }
#endif
  if (bias)
    for (int64_t b = 0; b < batch; ++b)
      hp_launch(ctx, hp_bias_rows<T>, M * N, N, ldc, bias, C + b * sC);
  const int rc = hp_gemm<T, Acc>(HP_GEMM_ARGS);
  if (rc == 0)
    hp_gemm_epilogue(ctx, M, N, ldc, sC, batch, C, epi);
  return rc;
}

#endif // HETPAR_DEVICE_GEMM_PANELS_H
