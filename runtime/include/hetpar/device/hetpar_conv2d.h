//===- hetpar_conv2d.h - 2-D convolution geometry and weight layout ======//
//
// The one definition of a 2-D convolution's geometry and of which
// convolutions a program passes their weights packed for, shared by the
// generated programs' device library (hetpar_device.h, which runs them) and
// by hetpar-compile's code generator (lib/Codegen, which packs the weights
// into weights.bin). Copied into every output folder with hetpar_device.h.
// Plain C++14 with no device code, so that both compilers read it.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_CONV2D_H
#define HETPAR_CONV2D_H

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
/// weights, K x 64 floats, then stay within 512 KiB, half of the L2 cache
/// of the AVX-512 machines it was measured on (a 512-channel 3 x 3
/// convolution, K = 4608, ran at 0.6x the tiles' speed).
#define HP_CCONV_K 2048

/// The output channels of a group in a packed weight: Mg rounded up to the
/// 16 floats of a vector.
static inline int64_t hp_conv2d_packed_channels(int64_t Mg) {
  return (Mg + 15) / 16 * 16;
}

/// Whether a float 2-D convolution of shape `s` runs hp_conv2d_channels on
/// the CPU given its weights packed as [G][Cg x kH x kW][Mp] (Mp:
/// hp_conv2d_packed_channels(Mg), zero past Mg), so that hetpar-compile
/// writes that copy of a constant weight into weights.bin: more than 8
/// output channels per group (hp_conv2d_blocked takes up to 8), a kernel
/// larger than 1 x 1 (the tiles read a 1 x 1 input as their GEMM's operand
/// and win), not depthwise (hp_conv2d_direct), a sum of at most HP_CCONV_K,
/// and the padded input rows of one output row within HP_CCONV_PAD.
static inline bool hp_conv2d_channels_runs(const hp_conv2d_shape &s) {
  const int64_t K = s.Cg * s.kH * s.kW;
  const int64_t Wp = (s.OW - 1) * s.sW + (s.kW - 1) * s.dW + 1;
  const int64_t spanH = (s.kH - 1) * s.dH + 1;
  return s.Mg > 8 && s.kH * s.kW > 1 && !(s.G > 1 && s.Cg == 1) &&
         K <= HP_CCONV_K && s.OH > 0 && s.OW > 0 &&
         s.Cg * spanH * Wp <= HP_CCONV_PAD;
}

#endif // HETPAR_CONV2D_H
