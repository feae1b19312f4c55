//===- hetpar_gemm.h - GEMM: cuBLAS, OpenBLAS, loops ------------*- C++ -*-===//
//
// GEMM (hp_gemm): cuBLAS on the GPU, OpenBLAS on the CPU, loops for the
// types neither has.
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_GEMM_H
#define HETPAR_DEVICE_GEMM_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

/// A float scalar of Gemm (alpha, beta) as the accumulator type: through
/// int64 for integer accumulators, so that a negative one is the modular
/// negation for unsigned ones (a negative float converted to uint64 is
/// undefined: 0 on the GPU).
template <typename Acc> HP_HD Acc hp_acc_scalar(float v) {
  return std::is_integral<Acc>::value ? (Acc)(int64_t)v : (Acc)v;
}

/// Plain GEMM for element types without a BLAS routine (integers; float16
/// and bfloat16 on the CPU): row-major C = alpha*op(A)*op(B) + beta*C per
/// batch, accumulated in Acc.
template <typename T, typename Acc>
HP_KERNEL(hp_gemm_loop, int ta, int tb, int64_t M, int64_t N, int64_t K,
          float alpha, const T *A, int64_t lda, int64_t sA, const T *B,
          int64_t ldb, int64_t sB, float beta, T *C, int64_t ldc, int64_t sC) {
  HP_FOR_W(i, K) {
    int64_t n = i % N, m = (i / N) % M, b = i / (M * N);
    const T *a = A + b * sA;
    const T *bb = B + b * sB;
    Acc acc = 0;
    for (int64_t k = 0; k < K; ++k)
      acc += (Acc)(ta ? a[k * lda + m] : a[m * lda + k]) *
             (Acc)(tb ? bb[n * ldb + k] : bb[k * ldb + n]);
    T *c = C + b * sC + m * ldc + n;
    Acc prior = beta != 0.0f ? (Acc)(*c) : Acc(0);
    *c =
        (T)(hp_acc_scalar<Acc>(alpha) * acc + hp_acc_scalar<Acc>(beta) * prior);
  }
}

/// The activations cuBLASLt's epilogues apply (hp_gemm_lt): a GEMM
/// epilogue that is exactly one of them names it (`lt_act`), and where
/// cuBLASLt takes the GEMM it applies it.
enum hp_lt_act {
  HP_LT_ACT_NONE = 0,
  HP_LT_ACT_RELU = 1,
  HP_LT_ACT_GELU_TANH = 2
};

/// The epilogue of a GEMM without one (hp_gemm_b, hp_gemm_panels): the
/// generated code passes a functor of its own (a struct with
/// `HP_HD float operator()(float) const` and `static const int lt_act`, an
/// hp_lt_act) for an elementwise chain that reads the product alone
/// (docs/codegen.md, "GEMM epilogues").
struct hp_epi_none {
  static const int lt_act = HP_LT_ACT_NONE;
  HP_HD float operator()(float v) const { return v; }
};

// The parameters and arguments of hp_gemm and its implementations.
#define HP_GEMM_PARAMS(T)                                                      \
  hp_ctx *ctx, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,   \
      const T *A, int64_t lda, int64_t sA, const T *B, int64_t ldb,            \
      int64_t sB, float beta, T *C, int64_t ldc, int64_t sC, int64_t batch
#define HP_GEMM_ARGS                                                           \
  ctx, ta, tb, M, N, K, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC, batch

/// The GEMM loop kernel over every output element.
template <typename T, typename Acc>
static int hp_gemm_naive(HP_GEMM_PARAMS(T)) {
  if (M == 0 || N == 0 || batch == 0)
    return 0;
  hp_launch(ctx, hp_gemm_loop<T, Acc>, batch * M * N, ta, tb, M, N, K, alpha, A,
            lda, sA, B, ldb, sB, beta, C, ldc, sC);
  return 0;
}

/// Row-major batched GEMM: C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b]
/// for b < batch, with element strides sA, sB, sC between batches (0 repeats
/// one matrix). cuBLAS on the GPU and OpenBLAS on the CPU (the
/// specializations below), the loop kernel for other element types. Returns
/// 0, or non-zero with ctx->error set.
template <typename T, typename Acc> static int hp_gemm(HP_GEMM_PARAMS(T)) {
  return hp_gemm_naive<T, Acc>(HP_GEMM_ARGS);
}

#if HP_CUDA
static int hp_cublas_status(hp_ctx *ctx, cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return 0;
  snprintf(ctx->error, sizeof ctx->error, "%s failed: cuBLAS status %d", what,
           (int)s);
  return 1;
}
/// The cuBLAS compute type of a GEMM on `type`: float32 accumulation, and
/// for float32 inputs TF32 products on tensor cores when the program was
/// generated with --allow-tf32 (HP_ALLOW_TF32).
static cublasComputeType_t hp_gemm_compute(cudaDataType type) {
#ifdef HP_ALLOW_TF32
  if (type == CUDA_R_32F)
    return CUBLAS_COMPUTE_32F_FAST_TF32;
#endif
  (void)type;
  return CUBLAS_COMPUTE_32F;
}
/// cuBLAS computes column-major C^T = op(B)^T op(A)^T, which is the
/// row-major product, with hp_gemm_compute's compute type.
template <typename T>
static int hp_gemm_ex(cudaDataType type, HP_GEMM_PARAMS(T)) {
  if (M == 0 || N == 0 || batch == 0)
    return 0;
  if (K == 0) // cuBLAS leaves C unscaled for K == 0 in some versions
    return hp_gemm_naive<T, float>(HP_GEMM_ARGS);
  return hp_cublas_status(
      ctx,
      cublasGemmStridedBatchedEx(
          ctx->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
          ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K, &alpha, B,
          type, (int)ldb, sB, A, type, (int)lda, sA, &beta, C, type, (int)ldc,
          sC, (int)batch, hp_gemm_compute(type), CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx");
}
template <> int hp_gemm<float, float>(HP_GEMM_PARAMS(float)) {
  return hp_gemm_ex(CUDA_R_32F, HP_GEMM_ARGS);
}
template <> int hp_gemm<hp_half, float>(HP_GEMM_PARAMS(hp_half)) {
  return hp_gemm_ex(CUDA_R_16F, HP_GEMM_ARGS);
}
template <> int hp_gemm<hp_bf16, float>(HP_GEMM_PARAMS(hp_bf16)) {
  return hp_gemm_ex(CUDA_R_16BF, HP_GEMM_ARGS);
}
template <> int hp_gemm<double, double>(HP_GEMM_PARAMS(double)) {
  if (M == 0 || N == 0 || batch == 0)
    return 0;
  double a = alpha, b = beta;
  return hp_cublas_status(
      ctx,
      cublasDgemmStridedBatched(ctx->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M,
                                (int)K, &a, B, (int)ldb, sB, A, (int)lda, sA,
                                &b, C, (int)ldc, sC, (int)batch),
      "cublasDgemmStridedBatched");
}
#else
/// OpenBLAS, one call per batch (row-major), through `gemm(b)` for batch b.
/// A batch of small GEMMs (attention's per-head products: 64 x 64 x 16 at
/// batch 32 x 4 heads) runs one GEMM per thread: OpenBLAS runs each of them
/// on one thread (its small-matrix kernel) while the other threads spin, a
/// third of ViT tiny's time at batch 32. Up to 10^6 multiply-adds per GEMM
/// counts as small: OpenBLAS's own bound for its single-threaded
/// small-matrix kernel (100^3, sgemm_small_kernel_permit for SkylakeX and
/// Cooper Lake); with 2^18, Llama tiny's LM head at batch 32 (32 products of
/// 16 x 512 x 64) ran one after another on one thread, and the model took
/// 8% longer. Any other GEMM is called outside a parallel region: inside
/// one, even a region of one thread, OpenBLAS's OpenMP build runs
/// single-threaded (GPT-2 small took 3.5x as long).
template <typename F>
static void hp_blas_batch(int64_t M, int64_t N, int64_t K, int64_t batch,
                          F gemm) {
  if (batch > 1 && M * N * K <= 1000000) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < batch; ++b)
      gemm(b);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      gemm(b);
  }
}
template <> int hp_gemm<float, float>(HP_GEMM_PARAMS(float)) {
  (void)ctx;
  if (M == 0 || N == 0)
    return 0;
  hp_blas_batch(M, N, K, batch, [&](int64_t b) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A + b * sA, (blasint)lda, B + b * sB,
                (blasint)ldb, beta, C + b * sC, (blasint)ldc);
  });
  return 0;
}
template <> int hp_gemm<double, double>(HP_GEMM_PARAMS(double)) {
  (void)ctx;
  if (M == 0 || N == 0)
    return 0;
  hp_blas_batch(M, N, K, batch, [&](int64_t b) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, A + b * sA, (blasint)lda, B + b * sB,
                (blasint)ldb, beta, C + b * sC, (blasint)ldc);
  });
  return 0;
}
/// 16-bit floats on the CPU: widen each batch's matrices to float, run
/// OpenBLAS's sgemm (float32 accumulation, like cuBLAS with
/// CUBLAS_COMPUTE_32F) and round the result back.
template <typename T> static int hp_gemm_widened(HP_GEMM_PARAMS(T)) {
  if (M == 0 || N == 0)
    return 0;
  int64_t rowsA = ta ? K : M, rowsB = tb ? N : K;
  float *a = (float *)malloc(sizeof(float) * (size_t)(rowsA * lda + 1));
  float *bm = (float *)malloc(sizeof(float) * (size_t)(rowsB * ldb + 1));
  float *c = (float *)malloc(sizeof(float) * (size_t)(M * ldc + 1));
  if (!a || !bm || !c) {
    free(a);
    free(bm);
    free(c);
    snprintf(ctx->error, sizeof ctx->error, "out of memory in a GEMM");
    return 1;
  }
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rowsA * lda; ++i)
      a[i] = (float)A[b * sA + i];
    for (int64_t i = 0; i < rowsB * ldb; ++i)
      bm[i] = (float)B[b * sB + i];
    if (beta != 0.0f)
      for (int64_t i = 0; i < M * ldc; ++i)
        c[i] = (float)C[b * sC + i];
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (blasint)M, (blasint)N,
                (blasint)K, alpha, a, (blasint)lda, bm, (blasint)ldb, beta, c,
                (blasint)ldc);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n)
        C[b * sC + m * ldc + n] = (T)c[m * ldc + n];
  }
  free(a);
  free(bm);
  free(c);
  return 0;
}
template <> int hp_gemm<hp_half, float>(HP_GEMM_PARAMS(hp_half)) {
  return hp_gemm_widened(HP_GEMM_ARGS);
}
template <> int hp_gemm<hp_bf16, float>(HP_GEMM_PARAMS(hp_bf16)) {
  return hp_gemm_widened(HP_GEMM_ARGS);
}
#endif

#endif // HETPAR_DEVICE_GEMM_H
