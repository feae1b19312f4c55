//===- hetpar_packed.h - Which constant weights a program carries packed ==//
//
// The one definition of which constant weights a program also carries in a
// packed layout for the CPU kernels, and of those layouts, shared by the
// generated programs' device library (hetpar_device.h, which reads them) and
// by hetpar-compile's code generator (lib/Codegen, which writes them into
// weights.bin once, at compile time): a 2-D convolution's weights for
// hp_conv2d_channels, a GEMM's constant right-hand matrix for
// hp_gemm_panels. Copied into every output folder with hetpar_device.h.
// Plain C++14 with no device code, so that both compilers read it; the
// rules are constexpr, so that a generated program can check at its build
// that the header it includes agrees with the one it was generated with.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_PACKED_H
#define HETPAR_PACKED_H

#include <stdint.h>

/// The geometry of a 2-D convolution of x [N, G*Cg, H, W] with w [G*Mg, Cg,
/// kH, kW] into y [N, G*Mg, OH, OW] (ONNX's layouts); pH and pW are the
/// leading pads (the trailing ones follow from OH and OW).
struct hp_conv2d_shape {
  int64_t N, G, Cg, Mg, H, W, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW;
};

/// The most values of one thread's zero-padded input rows in
/// hp_conv2d_channels (hetpar_device.h): 16384 floats, 64 KiB on its stack,
/// the size of ONNX Runtime's per-thread convolution buffer
/// (MLAS_CONV_WORKING_BUFFER_SIZE_PER_THREAD).
#define HP_CCONV_PAD 16384

/// The longest sum (Cg x kH x kW) hp_conv2d_channels takes: a block's
/// weights, K x 64 floats, then stay within 640 KiB of the 1 MiB L2 cache
/// per core of the AVX-512 machines it was measured on (256 channels x 3 x 3,
/// K = 2304, ran 1.3x faster than the tiles; 512 x 3 x 3, K = 4608, at 0.6x).
#define HP_CCONV_K 2560

/// The vectors of 16 output channels in one block of hp_conv2d_channels for
/// Mg output channels per group: 1 up to 16, 2 up to 32, else 4 (its 24 x
/// 16, 12 x 32 and 6 x 64 accumulators).
static constexpr int64_t hp_conv2d_channel_vectors(int64_t Mg) {
  return Mg <= 16 ? 1 : Mg <= 32 ? 2 : 4;
}

/// The output channels of a group in a packed weight: Mg rounded up to the
/// width of a block (hp_conv2d_channel_vectors x 16), so that a block's
/// vector loads stay inside the copy.
static constexpr int64_t hp_conv2d_packed_channels(int64_t Mg) {
  const int64_t width = 16 * hp_conv2d_channel_vectors(Mg);
  return (Mg + width - 1) / width * width;
}

/// Whether a float 2-D convolution of shape `s` runs hp_conv2d_channels on
/// the CPU given its weights packed as [G][Cg x kH x kW][Mp] (Mp:
/// hp_conv2d_packed_channels(Mg), zero past Mg), so that hetpar-compile
/// writes that copy of a constant weight into weights.bin: more than 8
/// output channels per group (hp_conv2d_blocked takes up to 8), a kernel
/// larger than 1 x 1 (the tiles read a 1 x 1 input as their GEMM's operand
/// and win), not depthwise (hp_conv2d_direct), a sum of at most HP_CCONV_K,
/// and the padded input rows of one output row within HP_CCONV_PAD.
static constexpr bool hp_conv2d_channels_runs(const hp_conv2d_shape &s) {
  const int64_t K = s.Cg * s.kH * s.kW;
  const int64_t Wp = (s.OW - 1) * s.sW + (s.kW - 1) * s.dW + 1;
  const int64_t spanH = (s.kH - 1) * s.dH + 1;
  return s.Mg > 8 && s.kH * s.kW > 1 && !(s.G > 1 && s.Cg == 1) &&
         K <= HP_CCONV_K && s.OH > 0 && s.OW > 0 &&
         s.Cg * spanH * Wp <= HP_CCONV_PAD;
}

/// The columns of one panel of a packed GEMM operand: 64 floats, four
/// AVX-512 vectors (hp_gemm_panels' 6 x 64 accumulators).
#define HP_GEMM_PANEL 64

/// The longest sum (K) of a GEMM on a packed operand: a panel, K x 64
/// floats, then stays within 1 MiB, the L2 cache per core of the AVX-512
/// machines it was measured on.
#define HP_GEMM_PANEL_K 4096

/// Whether a float32 GEMM C[M, N] = A[M, K] B[K, N] with a constant B runs
/// hp_gemm_panels on the CPU given B packed as [ceil(N / 64)][K][64] (panel
/// j: columns [64 j, 64 j + 64), row-major, zero past N), so that
/// hetpar-compile writes that copy of B (op(B) for Gemm's transB) into
/// weights.bin: at least 16 rows (fewer leave most of its 6-row blocks to a
/// matrix-vector product, where OpenBLAS's GEMV wins), at least 32 columns
/// (half a panel), and a sum of at most HP_GEMM_PANEL_K. `M` counts the rows
/// of every batch that shares B.
static constexpr bool hp_gemm_packs_b(int64_t M, int64_t N, int64_t K) {
  return M >= 16 && N >= 32 && K >= 1 && K <= HP_GEMM_PANEL_K;
}

#endif // HETPAR_PACKED_H
