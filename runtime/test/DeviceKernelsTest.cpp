//===- DeviceKernelsTest.cpp - kernels of hetpar_device.h on the CPU ------===//
//
// The random-number and batch-statistics kernels, compiled as the CPU backend
// compiles a generated program: Philox4x32-10 against Random123's published
// known-answer vectors, Dropout's masks (fraction, exact scaling, dependence on
// seed, step and index) and training-mode BatchNormalization against values
// computed by hand. Expected values never come from the kernels themselves.
//
//===----------------------------------------------------------------------===//
// The GPU library plans' cache (hetpar_gpu_libraries.h) is host code: compile
// it here too.
#define HETPAR_GPU_PLANS_ON_HOST 1
#include "hetpar/device/hetpar_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

namespace {

// Random123 (github.com/DEShawResearch/random123) tests/kat_vectors, the
// three "philox4x32 10" lines: counter (4 words), key (2 words), output.
struct Kat {
  uint32_t ctr[4], key[2], out[4];
};
const Kat kPhiloxKat[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(Philox, KnownAnswers) {
  for (const Kat &k : kPhiloxKat) {
    hp_u32x4 ctr = {{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}};
    hp_u32x4 got = hp_philox4x32_10(ctr, k.key[0], k.key[1]);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got.v[i], k.out[i])
          << "word " << i << " of counter " << std::hex << k.ctr[0];
  }
}

struct DropoutRun {
  std::vector<float> y;
  std::vector<bool> mask;
};

DropoutRun dropout(const std::vector<float> &x, uint64_t seed, int64_t step,
                   float ratio, bool training = true, int64_t offset = 0) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> y(n, -1.0f);
  std::unique_ptr<bool[]> mask(new bool[n]);
  hp_launch(nullptr, hp_dropout<float, float, float>,
            (offset + n + 3) / 4 - offset / 4, n, offset, seed, &step, &ratio,
            &training, x.data(), y.data(), mask.get());
  return {y, std::vector<bool>(mask.get(), mask.get() + n)};
}

std::vector<float> ramp(int64_t n) {
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.37f * static_cast<float>(i % 101) - 17.0f;
  return x;
}

TEST(Dropout, MaskFractionAndExactScaling) {
  const int64_t n = 100003; // not a multiple of 4: a partial last group
  const float ratio = 0.3f;
  std::vector<float> x = ramp(n);
  DropoutRun r = dropout(x, 42, 7, ratio);
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    dropped += !r.mask[i];
    // y = x * mask / (1 - ratio), in float as numpy's float32 computes it.
    float want = r.mask[i] ? x[i] / (1.0f - ratio) : 0.0f;
    ASSERT_EQ(r.y[i], want) << "element " << i;
  }
  // Binomial(n, 0.3): 5 standard deviations (0.0072 of n) around n * ratio.
  double sd = std::sqrt(n * 0.3 * 0.7);
  EXPECT_LT(std::fabs(static_cast<double>(dropped) - n * 0.3), 5 * sd);
}

TEST(Dropout, APartAtAnOffsetDropsWhatTheWholeDrops) {
  // A data-parallel replica's rows [offset, offset + n) of a tensor: the
  // same elements kept and dropped, with the same values, as the whole
  // tensor's, also when neither end falls on a group of 4.
  std::vector<float> x = ramp(1000);
  DropoutRun whole = dropout(x, 9, 3, 0.4f);
  for (auto [offset, n] : {std::pair<int64_t, int64_t>{0, 7},
                           {5, 10},
                           {6, 1},
                           {8, 12},
                           {401, 599},
                           {999, 1}}) {
    std::vector<float> part(x.begin() + offset, x.begin() + offset + n);
    DropoutRun r = dropout(part, 9, 3, 0.4f, true, offset);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(r.mask[i], whole.mask[offset + i])
          << "element " << i << " at offset " << offset;
      ASSERT_EQ(r.y[i], whole.y[offset + i])
          << "element " << i << " at offset " << offset;
    }
  }
}

TEST(Dropout, MaskIsPhiloxOfIndexAndStep) {
  // Element i takes word i % 4 of Philox(counter {i / 4, 0, step, 0}, key
  // {seed lo, seed hi}) and is dropped when it is below ratio * 2^32.
  const uint64_t seed = 0x0123456789abcdefull;
  const int64_t step = 5, n = 37;
  const float ratio = 0.5f;
  DropoutRun r = dropout(ramp(n), seed, step, ratio);
  for (int64_t i = 0; i < n; ++i) {
    hp_u32x4 ctr = {
        {static_cast<uint32_t>(i / 4), 0u, static_cast<uint32_t>(step), 0u}};
    hp_u32x4 w = hp_philox4x32_10(ctr, 0x89abcdefu, 0x01234567u);
    EXPECT_EQ(r.mask[i], w.v[i % 4] >= 0x80000000u) << "element " << i;
  }
}

TEST(Dropout, SameSeedAndStepSameMaskOtherwiseNew) {
  std::vector<float> x = ramp(4096);
  DropoutRun a = dropout(x, 1, 3, 0.5f), again = dropout(x, 1, 3, 0.5f);
  EXPECT_EQ(a.mask, again.mask);
  EXPECT_EQ(a.y, again.y);
  auto differing = [&](const DropoutRun &b) {
    int64_t d = 0;
    for (size_t i = 0; i < x.size(); ++i)
      d += a.mask[i] != b.mask[i];
    return d;
  };
  // Independent masks of ratio 0.5 differ at half the positions.
  EXPECT_GT(differing(dropout(x, 1, 4, 0.5f)), 1800); // the next step
  EXPECT_GT(differing(dropout(x, 2, 3, 0.5f)), 1800); // another seed
}

TEST(Dropout, EdgeRatiosAndInference) {
  std::vector<float> x = ramp(10);
  DropoutRun keepAll = dropout(x, 9, 0, 0.0f);
  EXPECT_EQ(keepAll.y, x);
  EXPECT_EQ(keepAll.mask, std::vector<bool>(10, true));
  DropoutRun dropAll = dropout(x, 9, 0, 1.0f);
  EXPECT_EQ(dropAll.y, std::vector<float>(10, 0.0f));
  EXPECT_EQ(dropAll.mask, std::vector<bool>(10, false));
  DropoutRun off = dropout(x, 9, 0, 0.5f, /*training=*/false);
  EXPECT_EQ(off.y, x);
  EXPECT_EQ(off.mask, std::vector<bool>(10, true));
}

TEST(BatchNormTrain, StatisticsAndRunningUpdate) {
  // x [N=2, C=2, S=2]: channel 0 holds 1, 2 (n = 0) and 3, 4 (n = 1): mean
  // 2.5, population variance (1.5^2 + 0.5^2) * 2 / 4 = 1.25; channel 1 holds
  // 10, 10, 10, 14: mean 11, variance (1 + 1 + 1 + 9) / 4 = 3.
  std::vector<float> x = {1, 2, 10, 10, 3, 4, 10, 14};
  std::vector<float> scale = {2, -1}, bias = {0.5f, 1}, mean = {0.1f, 0.2f},
                     var = {1, 2}, y(8), runMean(2), runVar(2);
  const float eps = 0.25f, momentum = 0.9f;
  hp_batch_norm_train_launch<float, float, float>(
      nullptr, 2, 2, 2, eps, momentum, x.data(), scale.data(), bias.data(),
      mean.data(), var.data(), y.data(), runMean.data(), runVar.data());
  const double m[2] = {2.5, 11}, v[2] = {1.25, 3};
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 2; ++k) {
        int i = (n * 2 + c) * 2 + k;
        double want =
            (x[i] - m[c]) / std::sqrt(v[c] + eps) * scale[c] + bias[c];
        EXPECT_NEAR(y[i], want, 1e-6) << "element " << i;
      }
  // ONNX: running = input * momentum + batch statistic * (1 - momentum).
  EXPECT_NEAR(runMean[0], 0.1 * 0.9 + 2.5 * 0.1, 1e-6);
  EXPECT_NEAR(runMean[1], 0.2 * 0.9 + 11 * 0.1, 1e-6);
  EXPECT_NEAR(runVar[0], 1 * 0.9 + 1.25 * 0.1, 1e-6);
  EXPECT_NEAR(runVar[1], 2 * 0.9 + 3 * 0.1, 1e-6);
}

// The CPU's branch-free float exp, erf and tanh against double precision
// libm (the reference), on a dense sweep of their whole range and the
// special values.
double ulpsOff(float got, double want) {
  float w = (float)want;
  double ulp = std::nextafter(std::fabs(w), HUGE_VALF) - std::fabs(w);
  if (std::fabs(w) < 1.17549435e-38f) // subnormal: the smallest spacing
    ulp = 1.40129846e-45;
  return std::fabs((double)got - want) / ulp;
}

TEST(Optimizers, SgdWithoutWeightDecayKeepsInfinities) {
  // torch.optim.SGD adds weight_decay * p only when weight_decay != 0: an
  // element at -inf (an exported causal mask) stays -inf, not NaN.
  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> p = {-inf, 2.0f}, g = {0.5f, 0.5f}, buf = {0.0f, 0.0f};
  float lr = 0.1f, scale = 1.0f;
  int64_t step = 1;
  hp_launch(nullptr, hp_sgd, 2, p.data(), g.data(), buf.data(), p.data(),
            buf.data(), &lr, &step, &scale, 0.9f, 0, 0.0f);
  EXPECT_EQ(p[0], -inf);
  EXPECT_FLOAT_EQ(p[1], 2.0f - 0.1f * 0.5f);
  EXPECT_FLOAT_EQ(buf[1], 0.5f);
  // With weight decay the term is there: d = g + wd * p.
  std::vector<float> q = {2.0f};
  hp_launch(nullptr, hp_sgd, 1, q.data(), g.data(), nullptr, q.data(), nullptr,
            &lr, &step, &scale, 0.0f, 0, 0.01f);
  EXPECT_FLOAT_EQ(q[0], 2.0f - 0.1f * (0.5f + 0.01f * 2.0f));
}

TEST(Math, ExpWithinOneUlpOverItsRange) {
  double worst = 0;
  float at = 0;
  for (float x = -103.9f; x < 88.72f; x += 1.3e-4f) {
    double e = ulpsOff(hp_exp(x), std::exp((double)x));
    if (e > worst)
      worst = e, at = x;
  }
  EXPECT_LE(worst, 1.0) << "at x = " << at;
  EXPECT_EQ(hp_exp(0.0f), 1.0f);
  EXPECT_EQ(hp_exp(-INFINITY), 0.0f); // masked softmax scores
  EXPECT_EQ(hp_exp(-200.0f), 0.0f);
  EXPECT_EQ(hp_exp(88.8f), INFINITY);
  EXPECT_EQ(hp_exp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(hp_exp(NAN)));
  EXPECT_GT(hp_exp(-100.0f), 0.0f); // subnormal, not flushed
  EXPECT_NEAR(hp_exp(-100.0f), std::exp(-100.0), 2e-45);
}

TEST(Math, ErfAndTanhAbsoluteError) {
  double erfWorst = 0, tanhWorst = 0;
  for (float x = -12.0f; x < 12.0f; x += 1e-4f) {
    erfWorst = std::max(erfWorst, std::fabs(hp_erf(x) - std::erf((double)x)));
    tanhWorst =
        std::max(tanhWorst, std::fabs(hp_tanh(x) - std::tanh((double)x)));
  }
  EXPECT_LE(erfWorst, 5e-7);
  EXPECT_LE(tanhWorst, 5e-7);
  EXPECT_EQ(hp_erf(0.0f), 0.0f);
  EXPECT_EQ(hp_erf(INFINITY), 1.0f);
  EXPECT_EQ(hp_erf(-INFINITY), -1.0f);
  EXPECT_TRUE(std::isnan(hp_erf(NAN)));
}

// A strided copy's neighbouring dimensions merge when they are contiguous in
// both tensors and untiled: Llama's rotary half [2, 4, 16, 8] of a
// [2, 4, 16, 16] tensor (source strides [1024, 256, 16, 1], destination
// [512, 128, 8, 1]) is 128 rows of 8 (source row stride 16); a tiled
// (mod < extent) or broadcast dimension stays apart, extents of 1 go.
TEST(StridedCopy, CoalescesContiguousDimensions) {
  hp_dims dims = {{2, 4, 16, 8}}, in = {{1024, 256, 16, 1}},
          mods = {{2, 4, 16, 8}}, out = {{512, 128, 8, 1}};
  ASSERT_EQ(hp_coalesce_copy(4, dims, in, mods, out), 2);
  EXPECT_EQ(dims.v[0], 128);
  EXPECT_EQ(in.v[0], 16);
  EXPECT_EQ(out.v[0], 8);
  EXPECT_EQ(dims.v[1], 8);
  EXPECT_EQ(in.v[1], 1);

  // Tile of a [3] over [2, 3] (mod 1 on dimension 0) and a size-1 axis.
  hp_dims tDims = {{2, 1, 3}}, tIn = {{0, 3, 1}}, tMods = {{1, 1, 3}},
          tOut = {{3, 3, 1}};
  ASSERT_EQ(hp_coalesce_copy(3, tDims, tIn, tMods, tOut), 2);
  EXPECT_EQ(tDims.v[0], 2);
  EXPECT_EQ(tMods.v[0], 1);
  EXPECT_EQ(tDims.v[1], 3);

  // The copy itself: a [2, 3] transpose through the launcher.
  const float src[6] = {0, 1, 2, 3, 4, 5};
  float dst[6] = {};
  hp_copy_launch<float>(nullptr, 6, 2, hp_dims{{3, 2}}, hp_dims{{1, 3}},
                        hp_dims{{3, 2}}, 0, src, hp_dims{{2, 1}}, 0, dst);
  const float want[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(dst[i], want[i]) << "element " << i;
}

// A copy that merges into one row longer than HP_COPY_PIECE is cut into
// pieces (each piece one iteration); a tiled copy keeps its modulo.
TEST(StridedCopy, WideRowsInPiecesAndTiles) {
  const int64_t rows = 3, width = 10001; // merges into one row of 30003
  std::vector<float> src(rows * width), dst(rows * width, -1.0f);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = (float)i;
  hp_copy_launch<float>(nullptr, rows * width, 2, hp_dims{{rows, width}},
                        hp_dims{{width, 1}}, hp_dims{{rows, width}}, 0,
                        src.data(), hp_dims{{width, 1}}, 0, dst.data());
  for (size_t i = 0; i < dst.size(); ++i)
    ASSERT_EQ(dst[i], src[i]) << "element " << i;

  // Tile [5] three times along a row of 15 (mod 5 on the last dimension).
  std::vector<float> tiled(2 * 15);
  hp_copy_launch<float>(nullptr, 30, 2, hp_dims{{2, 15}}, hp_dims{{5, 1}},
                        hp_dims{{2, 5}}, 0, src.data(), hp_dims{{15, 1}}, 0,
                        tiled.data());
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 15; ++k)
      EXPECT_EQ(tiled[r * 15 + k], src[r * 5 + k % 5]) << r << ", " << k;
}

// LogSoftmax of large logits keeps (x - max) exact: the result is within
// float rounding of the double-precision value.
TEST(Softmax, LogSoftmaxOfLargeLogits) {
  const float x[4] = {10000.0f, 10001.0f, 9999.5f, 10000.25f};
  float y[4];
  hp_softmax_launch<float, float, true>(nullptr, 1, 4, 1, x, y);
  double m = 10001.0, s = 0;
  for (float v : x)
    s += std::exp((double)v - m);
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(y[k], (double)x[k] - m - std::log(s), 2e-6) << k;
}

// 2-D max pooling (hp_pool_launch on the CPU: hp_pool2d_rows, whose interior
// columns run as vector loops) against a plain loop over the window in
// hp_pool's order (positions outside the input skipped, the first seeding
// the maximum, only a greater value replacing it): ResNet's 3 x 3 stride-2
// pooling with padding 1, a dilated window with uneven padding, and NaNs,
// which stay where they seed a window and are skipped where they come later.
void checkMaxPool2d(int64_t planes, int64_t H, int64_t W, int64_t k,
                    int64_t stride, int64_t pad, int64_t dil) {
  const int64_t OH = (H + 2 * pad - dil * (k - 1) - 1) / stride + 1;
  const int64_t OW = (W + pad - dil * (k - 1) - 1) / stride + 1;
  std::vector<float> x(planes * H * W);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (float)((i * 37) % 23) - 11.0f;
  x[5] = NAN;
  x[W + 7] = NAN;
  // NaNs that start a window column other than the window's first (the
  // column's later rows still count) and that start a window.
  x[W + 4] = NAN;
  x[W + 3] = NAN;
  x[3 * W + 10] = NAN;
  x[4 * W + 1] = NAN;
  std::vector<float> want(planes * OH * OW), y(want.size(), 0.0f);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float acc = -INFINITY;
        bool seeded = false;
        for (int64_t kh = 0; kh < k; ++kh)
          for (int64_t kw = 0; kw < k; ++kw) {
            int64_t ih = oh * stride - pad + kh * dil,
                    iw = ow * stride + kw * dil;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
              continue;
            float v = x[(p * H + ih) * W + iw];
            if (!seeded || v > acc)
              acc = v;
            seeded = true;
          }
        want[(p * OH + oh) * OW + ow] = acc;
      }
  // Padding pad on top and bottom, none on the left, pad on the right.
  hp_pool_launch<float, float, true>(
      nullptr, planes * OH * OW, 2, hp_dims{{H, W}}, hp_dims{{OH, OW}},
      hp_dims{{k, k}}, hp_dims{{stride, stride}}, hp_dims{{pad, 0}},
      hp_dims{{pad, pad}}, hp_dims{{dil, dil}}, 0, k * k, H * W, OH * OW,
      x.data(), y.data(), nullptr);
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(want[i]))
      ASSERT_TRUE(std::isnan(y[i])) << "element " << i;
    else
      ASSERT_EQ(y[i], want[i]) << "element " << i;
  }
}

TEST(Pool2d, MaxPoolingByRowsAndColumns) {
  checkMaxPool2d(3, 32, 32, 3, 2, 1, 1);
  checkMaxPool2d(2, 9, 20, 3, 1, 1, 2);
  checkMaxPool2d(2, 7, 7, 2, 2, 0, 1);
}

// hp_conv2d_launch against a plain loop over ONNX Conv's definition followed
// by the unfused epilogue (Add of the bias, Add of a residual, Relu or Clip),
// on each of its paths: the direct kernel (depthwise, with a depth multiplier
// of 2), im2col plus GEMM (two input channels per group), the tiles, the
// register-blocked kernel and the channel-vectorized one; stride 2, padding 1.
std::vector<float> convReference(const hp_conv2d_shape &s,
                                 const std::vector<float> &x,
                                 const std::vector<float> &w,
                                 const hp_conv_epilogue<float> &e) {
  std::vector<float> y(s.N * s.G * s.Mg * s.OH * s.OW);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t m = 0; m < s.G * s.Mg; ++m)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          double acc = 0;
          int64_t g = m / s.Mg;
          for (int64_t c = 0; c < s.Cg; ++c)
            for (int64_t kh = 0; kh < s.kH; ++kh)
              for (int64_t kw = 0; kw < s.kW; ++kw) {
                int64_t ih = oh * s.sH - s.pH + kh * s.dH;
                int64_t iw = ow * s.sW - s.pW + kw * s.dW;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W)
                  continue;
                acc +=
                    w[((m * s.Cg + c) * s.kH + kh) * s.kW + kw] *
                    x[((n * s.G + g) * s.Cg + c) * s.H * s.W + ih * s.W + iw];
              }
          int64_t i = ((n * s.G * s.Mg + m) * s.OH + oh) * s.OW + ow;
          if (e.bias)
            acc += e.bias[m];
          if (e.z)
            acc += e.z[i];
          if (e.act == HP_ACT_RELU)
            acc = std::max(acc, 0.0);
          if (e.act == HP_ACT_CLIP)
            acc = std::min(std::max(acc, (double)e.lo), (double)e.hi);
          y[i] = (float)acc;
        }
  return y;
}

/// Runs `conv(x, w, epilogue, y)` with three epilogues (none; a bias per
/// channel, a residual and Relu; a bias and Clip to [-1, 2]) and checks y
/// against convReference.
template <typename F> void checkConvWith(const hp_conv2d_shape &s, F conv) {
  std::vector<float> x(s.N * s.G * s.Cg * s.H * s.W),
      w(s.G * s.Mg * s.Cg * s.kH * s.kW), bias(s.G * s.Mg),
      z(s.N * s.G * s.Mg * s.OH * s.OW);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = (float)((i * 7) % 11) - 5.0f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = (float)((i * 5) % 7) * 0.25f - 0.75f;
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = (float)(i % 5) * 0.5f - 1.0f;
  for (size_t i = 0; i < z.size(); ++i)
    z[i] = (float)((i * 3) % 13) * 0.75f - 4.5f;
  const hp_conv_epilogue<float> epilogues[] = {
      {nullptr, nullptr, HP_ACT_NONE, 0.0f, 0.0f},
      {bias.data(), z.data(), HP_ACT_RELU, 0.0f, 0.0f},
      {bias.data(), nullptr, HP_ACT_CLIP, -1.0f, 2.0f}};
  for (const hp_conv_epilogue<float> &e : epilogues) {
    std::vector<float> want = convReference(s, x, w, e);
    std::vector<float> y(want.size(), NAN);
    conv(x.data(), w.data(), e, y.data());
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], want[i], 1e-4)
          << "element " << i << ", activation " << e.act;
  }
}

void checkConv(const hp_conv2d_shape &s) {
  std::vector<float> cols(s.Cg * s.kH * s.kW * s.OH * s.OW);
  checkConvWith(s, [&](const float *x, const float *w,
                       const hp_conv_epilogue<float> &e, float *y) {
    int status = hp_conv2d_launch<float, float>(nullptr, s, e, x, w, nullptr, y,
                                                cols.data());
    ASSERT_EQ(status, 0);
  });
}

/// w ([G*Mg][K]) packed as hetpar_packed.h describes for
/// hp_conv2d_channels: [G][K][Mp], zero past Mg.
std::vector<float> packChannels(const hp_conv2d_shape &s, const float *w) {
  const int64_t K = s.Cg * s.kH * s.kW, Mp = hp_conv2d_packed_channels(s.Mg);
  std::vector<float> packed(s.G * K * Mp, 0.0f);
  for (int64_t g = 0; g < s.G; ++g)
    for (int64_t m = 0; m < s.Mg; ++m)
      for (int64_t k = 0; k < K; ++k)
        packed[(g * K + k) * Mp + m] = w[(g * s.Mg + m) * K + k];
  return packed;
}

/// hp_conv2d_launch given packed weights, on `s`, which must be a shape
/// hp_conv2d_channels runs.
void checkChannels(const hp_conv2d_shape &s) {
  EXPECT_TRUE(hp_conv2d_channels_runs(s));
  checkConvWith(s, [&](const float *x, const float *w,
                       const hp_conv_epilogue<float> &e, float *y) {
    std::vector<float> packed = packChannels(s, w);
    int status = hp_conv2d_launch<float, float>(nullptr, s, e, x, w,
                                                packed.data(), y, nullptr);
    ASSERT_EQ(status, 0);
  });
}

/// hp_conv2d_channels<P, NVM> with tiling `t`.
template <int P, int NVM>
void checkChannelsTiled(const hp_conv2d_shape &s, hp_conv2d_pad_tiling t) {
  checkConvWith(s, [&](const float *x, const float *w,
                       const hp_conv_epilogue<float> &e, float *y) {
    std::vector<float> packed = packChannels(s, w);
    hp_conv2d_channels<P, NVM>(s, e, x, packed.data(), y, t);
  });
}

/// hp_conv2d_tiled with a given tiling (columns per tile, im2col rows per
/// block), so that tiles span images and sums span row blocks.
void checkTiled(const hp_conv2d_shape &s, int64_t kb, int64_t width) {
  int64_t total = s.N * s.OH * s.OW;
  hp_conv2d_tiling t = {kb, width, (total + width - 1) / width};
  checkConvWith(s, [&](const float *x, const float *w,
                       const hp_conv_epilogue<float> &e, float *y) {
    hp_conv2d_tiled<float, float>(nullptr, s, e, x, w, y, t);
  });
}

/// hp_conv2d_blocked on `s`, which must be a shape it takes.
void checkBlocked(const hp_conv2d_shape &s) {
  EXPECT_TRUE(hp_conv2d_blocked_pays(s));
  checkConvWith(s, [&](const float *x, const float *w,
                       const hp_conv_epilogue<float> &e,
                       float *y) { hp_conv2d_blocked(s, e, x, w, y); });
}

TEST(Conv2d, DepthwiseRunsDirect) {
  // N, G, Cg, Mg, H, W, OH, OW, kH, kW, sH, sW, pH, pW, dH, dW
  hp_conv2d_shape s = {2, 3, 1, 2, 5, 7, 3, 4, 3, 3, 2, 2, 1, 1, 1, 1};
  EXPECT_TRUE(hp_conv2d_direct_pays(s));
  checkConv(s);
  // Stride 1, dilation 2, a row wider than one 64-column tile.
  hp_conv2d_shape wide = {1, 2, 1, 1, 3, 70, 3, 70, 3, 3, 1, 1, 1, 2, 1, 2};
  checkConv(wide);
}

TEST(Conv2d, GroupsOfTwoChannelsRunIm2colGemm) {
  hp_conv2d_shape s = {2, 2, 2, 3, 5, 7, 3, 4, 3, 3, 2, 2, 1, 1, 1, 1};
  EXPECT_FALSE(hp_conv2d_direct_pays(s));
  checkConv(s);
  // 4096 output channels leave no room for tiles: one GEMM per image, then
  // the epilogue as its own pass.
  hp_conv2d_shape wide = {2, 1, 2, 4096, 3, 3, 3, 3, 1, 1, 1, 1, 0, 0, 1, 1};
  EXPECT_EQ(hp_conv2d_tiles(wide, 2).tiles, 0);
  checkConv(wide);
}

// The tiles of hp_conv2d_tiled on each im2col path, with tiles that span
// images (the output tile added to y) and sums split into row blocks.
TEST(Conv2d, TilesGatherSmallPlanes) {
  // 2 x 2 outputs per image (the tabulated gather); 12 columns in tiles of 3.
  hp_conv2d_shape s = {3, 1, 5, 7, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1};
  checkTiled(s, 16, 3);
  checkTiled(s, 45, 12);
}

TEST(Conv2d, TilesCopyShiftedRows) {
  // Stride 1, output rows as wide as input rows (dilation 2, padding 2):
  // contiguous copies with the edges zeroed; two groups.
  hp_conv2d_shape s = {2, 2, 3, 4, 9, 9, 9, 9, 3, 3, 1, 1, 2, 2, 2, 2};
  checkTiled(s, 7, 50);
  checkTiled(s, 27, 81);
}

TEST(Conv2d, TilesCopyStridedSpans) {
  // Stride 2 over 10 x 10 outputs: row spans, tiles starting mid-row.
  hp_conv2d_shape s = {2, 1, 3, 5, 20, 20, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1};
  checkTiled(s, 10, 37);
}

TEST(Conv2d, TilesReadPointwiseInputsDirectly) {
  // 1 x 1: tiles inside one image read x as the GEMM's operand; tiles that
  // span images copy it.
  hp_conv2d_shape s = {2, 1, 6, 5, 9, 9, 9, 9, 1, 1, 1, 1, 0, 0, 1, 1};
  checkTiled(s, 4, 81);
  checkTiled(s, 6, 50);
}

TEST(Conv2d, TilingCoversEveryThread) {
  hp_conv2d_shape s = {1, 1, 64, 512, 7, 7, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1};
  hp_conv2d_tiling t = hp_conv2d_tiles(s, 4);
  EXPECT_EQ(t.kb, 256);
  EXPECT_GE(t.tiles, 4);
  EXPECT_LE(t.width * 512, HP_CONV_OUT_ELEMS);
  EXPECT_GE(t.width * t.tiles, 49);
  // 4096 output channels per group leave room for 8 columns: no tiles.
  s.Mg = 4096;
  EXPECT_EQ(hp_conv2d_tiles(s, 4).tiles, 0);
}

// hp_conv2d_blocked: a stride-2 7 x 7 stem with 5 of 8 channels in a block
// and a partial last block of columns, also on rows of 32 columns and more;
// stride 1 over two groups, without padding along the row; stride 1 with
// dilation 2; one input channel.
TEST(Conv2d, RegisterBlockedDirect) {
  hp_conv2d_shape stem = {2, 1, 3, 5, 40, 40, 20, 20, 7, 7, 2, 2, 3, 3, 1, 1};
  checkBlocked(stem);
  hp_conv2d_shape groups = {1, 2, 4, 8, 18, 35, 18, 33, 3, 3, 1, 1, 1, 0, 1, 1};
  checkBlocked(groups);
  hp_conv2d_shape dilated = {1, 1, 2, 3, 6, 40, 6, 36, 3, 3, 1, 1, 1, 0, 1, 2};
  checkBlocked(dilated);
  // Rows of 35 outputs at stride 2: a block of 32 columns (two vectors with
  // AVX-512) and one of 3.
  hp_conv2d_shape wide = {1, 1, 3, 5, 70, 70, 35, 35, 7, 7, 2, 2, 3, 3, 1, 1};
  checkBlocked(wide);
  // One input channel without groups (a grayscale stem) is not depthwise.
  hp_conv2d_shape gray = {2, 1, 1, 4, 20, 20, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1};
  checkBlocked(gray);
  // Forty small images: tasks of several images each.
  hp_conv2d_shape batch = {40, 1, 2, 4, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1};
  checkBlocked(batch);
  hp_conv2d_shape many = stem;
  many.Mg = 9; // more than one block of channels: GEMM tiles instead
  EXPECT_FALSE(hp_conv2d_blocked_pays(many));
  checkConv(many);
}

// The channel-vectorized kernel: 2 x 2 outputs of 20 channels (two vectors,
// the second partly used) at stride 2, blocks running across images; two
// groups of 70 channels (two blocks of four vectors); 16 channels with
// dilation 2 on an image too large for one task (chunks of rows); a 5 x 3
// kernel with strides 2 and 1, padding only along the row, 12 channels.
TEST(Conv2d, ChannelVectorizedDirect) {
  hp_conv2d_shape tiny = {5, 1, 6, 20, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1};
  checkChannels(tiny);
  hp_conv2d_shape groups = {2, 2, 3, 70, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  checkChannels(groups);
  hp_conv2d_shape chunks = {1, 1, 8, 16, 70, 70, 66, 68,
                            3, 3, 1, 1,  0,  1,  2,  2};
  EXPECT_GT(chunks.Cg * 70 * 72, HP_CCONV_PAD); // padded image: 70 x 72
  checkChannels(chunks);
  hp_conv2d_shape rect = {3, 1, 4, 12, 11, 9, 4, 11, 5, 3, 2, 1, 0, 2, 1, 1};
  checkChannels(rect);
  // Every accumulator shape, with tiles of several images and of one row.
  hp_conv2d_shape s = {3, 1, 5, 40, 6, 6, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1};
  hp_conv2d_pad_tiling images = {2, 3, 1, 7, 7}, row = {1, 1, 3, 3, 7};
  checkChannelsTiled<24, 1>(s, images);
  checkChannelsTiled<12, 2>(s, row);
  checkChannelsTiled<6, 4>(s, images);
  checkChannelsTiled<6, 4>(s, row);
}

// hp_conv2d_pad_tiles on 2 threads: several whole images per task where
// the batch is large; chunks of rows for a batch of one, at least four tasks
// per thread; an image of 2 x 2 outputs stays whole (fewer than `fewest`
// rows per chunk); an image larger than the buffer is cut into chunks that
// fit it (HP_CCONV_PAD, 16384 values).
TEST(Conv2d, PadTilesSplitWork) {
  hp_conv2d_shape s = {40, 1, 2, 4, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1};
  hp_conv2d_pad_tiling t = hp_conv2d_pad_tiles(s, 2, 1, 18, 1);
  EXPECT_EQ(t.images, 5); // 40 images, 8 tasks
  EXPECT_EQ(t.chunks, 1);
  EXPECT_EQ(t.Hp, 18);
  s.N = 1;
  t = hp_conv2d_pad_tiles(s, 2, 1, 18, 1);
  EXPECT_EQ(t.images, 1);
  EXPECT_EQ(t.rows, 2); // 16 rows in 8 chunks
  EXPECT_EQ(t.chunks, 8);
  EXPECT_EQ(t.Hp, 4);
  hp_conv2d_shape tiny = {1, 1, 64, 64, 4, 4, 2, 2, 3, 3, 2, 2, 1, 1, 1, 1};
  t = hp_conv2d_pad_tiles(tiny, 2, 1, 5, 12);
  EXPECT_EQ(t.images, 1);
  EXPECT_EQ(t.chunks, 1);
  // 8 x 202 values per padded row: 10 rows fit, so 8 output rows per task.
  hp_conv2d_shape big = {1, 1, 8, 16, 200, 200, 200, 200,
                         3, 3, 1, 1,  1,   1,   1,   1};
  t = hp_conv2d_pad_tiles(big, 1, 1, 202, 1);
  EXPECT_EQ(t.images, 1);
  EXPECT_EQ(t.rows, 8);
  EXPECT_EQ(t.Hp, 10);
  EXPECT_EQ(t.chunks, 25);
}

// The shapes hp_conv2d_channels refuses (and hetpar-compile packs no
// weights for): up to 8 channels (hp_conv2d_blocked's), a 1 x 1 kernel,
// depthwise groups, a sum over more than HP_CCONV_K, input rows wider than
// its buffer.
TEST(Conv2d, ChannelVectorizedRefuses) {
  hp_conv2d_shape s = {1, 1, 16, 32, 8, 8, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  EXPECT_TRUE(hp_conv2d_channels_runs(s));
  hp_conv2d_shape few = s, pointwise = s, depthwise = s, longSum = s, wide = s;
  few.Mg = 8;
  pointwise.kH = pointwise.kW = 1, pointwise.pH = pointwise.pW = 0;
  depthwise.G = 16, depthwise.Cg = 1, depthwise.Mg = 32;
  longSum.Cg = 285; // 285 x 9 = 2565
  wide.W = wide.OW = 3000;
  for (const hp_conv2d_shape &r : {few, pointwise, depthwise, longSum, wide})
    EXPECT_FALSE(hp_conv2d_channels_runs(r));
}

//===----------------------------------------------------------------------===//
// GEMM on a packed right-hand operand: hp_gemm_b with B packed as
// hetpar_packed.h describes, against a plain loop in double.
//===----------------------------------------------------------------------===//

/// B ([K][N], or [N][K] when tb) packed as panels [ceil(N/64)][K][64].
std::vector<float> packPanels(const std::vector<float> &B, int64_t K, int64_t N,
                              bool tb) {
  const int64_t panels = (N + HP_GEMM_PANEL - 1) / HP_GEMM_PANEL;
  std::vector<float> packed(panels * K * HP_GEMM_PANEL, 0.0f);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n)
      packed[(n / HP_GEMM_PANEL * K + k) * HP_GEMM_PANEL + n % HP_GEMM_PANEL] =
          tb ? B[n * K + k] : B[k * N + n];
  return packed;
}

/// hp_gemm_b on `batch` matrices A [M, K] sharing B, against the loop:
/// C = alpha A B + beta C0, or + beta bias[n] with a row of biases.
void checkGemmPanels(int64_t batch, int64_t M, int64_t N, int64_t K, bool tb,
                     float alpha, float beta,
                     const std::vector<float> *bias = nullptr) {
  std::vector<float> A(batch * M * K), B(K * N), C(batch * M * N);
  for (size_t i = 0; i < A.size(); ++i)
    A[i] = (float)((i * 7) % 11) * 0.25f - 1.25f;
  for (size_t i = 0; i < B.size(); ++i)
    B[i] = (float)((i * 5) % 13) * 0.125f - 0.75f;
  for (size_t i = 0; i < C.size(); ++i)
    C[i] = (float)(i % 9) - 4.0f;
  std::vector<double> want(C.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += (double)A[(b * M + m) * K + k] *
                 (tb ? B[n * K + k] : B[k * N + n]);
        const int64_t i = (b * M + m) * N + n;
        want[i] = alpha * acc + beta * (double)(bias ? (*bias)[n] : C[i]);
      }
  std::vector<float> packed = packPanels(B, K, N, tb);
  int status = hp_gemm_b<float, float>(nullptr, 0, tb, M, N, K, alpha, A.data(),
                                       K, M * K, B.data(), tb ? K : N, 0, beta,
                                       C.data(), N, M * N, batch, packed.data(),
                                       bias ? bias->data() : nullptr);
  ASSERT_EQ(status, 0);
  for (size_t i = 0; i < C.size(); ++i)
    ASSERT_NEAR(C[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
        << "element " << i;
}

// Blocks of 6 rows with a partial last one, a partial last panel, a sum of
// one, last panels of 1 to 4 vectors; alpha and beta; B given transposed
// (Gemm's transB, packed the same); batches that share B stacked into one GEMM;
// GPT-2's shapes at 32 rows. Below 16 rows the GEMM takes OpenBLAS
// (hp_gemm_packs_b), still correct. A row of biases with and without the
// panels.
TEST(GemmPanels, PackedOperandMatchesLoop) {
  EXPECT_TRUE(hp_gemm_packs_b(17, 70, 33));
  checkGemmPanels(1, 17, 70, 33, false, 1.0f, 0.0f);
  checkGemmPanels(1, 16, 130, 1, false, 1.0f, 0.0f);
  checkGemmPanels(1, 20, 64, 40, true, 0.5f, 1.0f);
  checkGemmPanels(1, 23, 96, 19, false, 2.0f, 0.0f);
  checkGemmPanels(3, 7, 50, 12, false, 1.0f, 0.0f);
  checkGemmPanels(1, 32, 768, 768, false, 1.0f, 0.0f);
  checkGemmPanels(1, 32, 50, 3072, true, 1.0f, 0.0f);
  // A last panel of 2 and 3 vectors (Llama's K projection, its MLP's 176
  // columns), computed with as many vectors only.
  checkGemmPanels(1, 30, 32, 64, false, 1.0f, 0.0f);
  checkGemmPanels(2, 19, 176, 64, false, 1.0f, 0.0f);
  checkGemmPanels(1, 21, 40, 17, true, 1.0f, 1.0f);
  EXPECT_FALSE(hp_gemm_packs_b(15, 70, 33));
  checkGemmPanels(1, 15, 70, 33, false, 1.0f, 0.0f);
  // A row of biases (Gemm's C of [N]): added as the sums are stored, and
  // broadcast into C first where the GEMM falls back to OpenBLAS.
  std::vector<float> bias(70);
  for (size_t i = 0; i < bias.size(); ++i)
    bias[i] = (float)(i % 7) - 3.0f;
  checkGemmPanels(1, 17, 70, 33, false, 1.0f, 1.0f, &bias);
  checkGemmPanels(1, 20, 70, 9, true, 0.5f, 2.0f, &bias);
  checkGemmPanels(1, 15, 70, 33, false, 1.0f, 1.0f, &bias);
  EXPECT_FALSE(hp_gemm_packs_b(64, 31, 33));
  EXPECT_FALSE(hp_gemm_packs_b(64, 64, HP_GEMM_PANEL_K + 1));
}

//===----------------------------------------------------------------------===//
// Fused attention: hp_attention_launch against Softmax(mask(scale(Q KT))) V
// computed the unfused way, in double: every score, the row maximum, the sum
// of exponentials, the weighted sum of V.
//===----------------------------------------------------------------------===//

/// Row-major layout of matrices [rows, cols] after leading dimensions of
/// extents `lead` (element strides, as hp_attention_layout holds them).
hp_attention_layout contiguous(const std::vector<int64_t> &lead, int64_t rows,
                               int64_t cols) {
  hp_attention_layout l = {};
  int64_t stride = rows * cols;
  for (size_t d = lead.size(); d-- > 0;) {
    l.batch.v[d] = stride;
    stride *= lead[d];
  }
  l.row = cols;
  l.col = 1;
  return l;
}

/// A shape over leading dimensions `lead`, without a mask, every operand
/// contiguous.
hp_attention_shape attentionShape(std::vector<int64_t> lead, int64_t Lq,
                                  int64_t Lk, int64_t D, int64_t Dv) {
  hp_attention_shape s = {};
  s.batch = 1;
  s.rank = (int)lead.size();
  for (size_t d = 0; d < lead.size(); ++d) {
    s.extents.v[d] = lead[d];
    s.batch *= lead[d];
  }
  s.Lq = Lq;
  s.Lk = Lk;
  s.D = D;
  s.Dv = Dv;
  s.q = contiguous(lead, Lq, D);
  s.k = contiguous(lead, D, Lk);
  s.v = contiguous(lead, Lk, Dv);
  s.y = contiguous(lead, Lq, Dv);
  s.keep = 1;
  return s;
}

/// One FusedAttention problem: inputs are multiples of 1/8 (exact in float),
/// read through the shape's layouts; the mask as the test sets it.
struct AttentionCase {
  hp_attention_shape s;
  std::vector<float> q, kT, v, mask;
  std::vector<char> select; // the i1 mask (char: vector<bool> has no data())
  float scale = 1.0f, fill = 0.0f;

  explicit AttentionCase(hp_attention_shape shape) : s(shape) {
    // k / 8 for k in [-16, 16) from a 64-bit LCG (Knuth's MMIX constants):
    // irregular, so that row maxima fall in any block of keys.
    auto fillWith = [](std::vector<float> &x, size_t n, uint64_t seed) {
      x.resize(n);
      for (size_t i = 0; i < n; ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int)(seed >> 59) - 16) * 0.125f;
      }
    };
    fillWith(q, s.batch * s.Lq * s.D, 1);
    fillWith(kT, s.batch * s.D * s.Lk, 2);
    fillWith(v, s.batch * s.Lk * s.Dv, 3);
  }
  /// Element (b, r, c) of a matrix of layout `l`.
  int64_t at(const hp_attention_layout &l, int64_t b, int64_t r,
             int64_t c) const {
    return hp_attention_offset(s, l, b) + r * l.row + c * l.col;
  }
  double score(int64_t b, int64_t i, int64_t j) const {
    double x = 0;
    for (int64_t d = 0; d < s.D; ++d)
      x += (double)q[at(s.q, b, i, d)] * (double)kT[at(s.k, b, d, j)];
    x = s.divide ? x / scale : x * scale;
    if (s.mask == 1)
      x += mask[at(s.m, b, i, j)];
    if (s.mask == 2 && (select[at(s.m, b, i, j)] != 0) != (s.keep != 0))
      x = fill;
    return x;
  }
  /// Y in the layout s.y, computed the unfused way in double.
  std::vector<double> reference() const {
    std::vector<double> y(s.batch * s.Lq * s.Dv, 0.0);
    std::vector<double> p(s.Lk);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.Lq; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < s.Lk; ++j)
          mx = std::max(mx, p[j] = score(b, i, j));
        for (int64_t j = 0; j < s.Lk; ++j)
          sum += p[j] = std::exp(p[j] - mx);
        for (int64_t c = 0; c < s.Dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < s.Lk; ++j)
            acc += p[j] / sum * v[at(s.v, b, j, c)];
          y[at(s.y, b, i, c)] = acc;
        }
      }
    return y;
  }
  std::vector<float> run() const {
    std::vector<float> y(s.batch * s.Lq * s.Dv, -7.0f);
    if (s.mask == 2)
      hp_attention_launch<float, float, bool>(
          nullptr, s, q.data(), kT.data(), v.data(), &scale,
          reinterpret_cast<const bool *>(select.data()), &fill, y.data());
    else
      hp_attention_launch<float, float, float>(
          nullptr, s, q.data(), kT.data(), v.data(), &scale,
          s.mask ? mask.data() : nullptr, nullptr, y.data());
    return y;
  }
  void check(double tolerance = 2e-5) const {
    std::vector<double> want = reference();
    std::vector<float> got = run();
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << "element " << i;
        continue;
      }
      ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::fabs(want[i])))
          << "element " << i;
    }
  }
  /// An additive mask [Lq, Lk] (shared by every batch) of `value(i, j)`.
  template <typename F> void setAdditive(F value) { setMask(1, mask, value); }
  /// A select mask [Lq, Lk] (shared by every batch) that is `keep(i, j)`.
  template <typename F> void setSelect(F keep) { setMask(2, select, keep); }
  /// Mask kind `kind` of elements `of(i, j)` in `into`, row-major [Lq, Lk].
  template <typename V, typename F>
  void setMask(int kind, std::vector<V> &into, F of) {
    s.mask = kind;
    s.m = {};
    s.m.row = s.Lk;
    s.m.col = 1;
    into.resize(s.Lq * s.Lk);
    for (int64_t i = 0; i < s.Lq; ++i)
      for (int64_t j = 0; j < s.Lk; ++j)
        into[i * s.Lk + j] = of(i, j);
  }
};

// Odd extents over two leading dimensions (batch 2 x 3 heads), more keys than
// one block of 256 and more queries than one task of 32; an additive padding
// mask [2, 1, 1, Lk] with -inf on the last keys of the second sample (BERT's
// form), divided by sqrt(D) as GPT-2 and BERT write it.
TEST(Attention, PaddingMaskOverOddLengths) {
  hp_attention_shape s = attentionShape({2, 3}, 37, 301, 24, 40);
  s.mask = 1;
  s.m.batch.v[0] = 301; // [2, 1, 1, 301]: samples apart, heads shared
  s.m.col = 1;
  AttentionCase c(s);
  c.scale = std::sqrt(24.0f);
  c.s.divide = 1;
  c.mask.assign(2 * 301, 0.0f);
  for (int64_t j = 250; j < 301; ++j)
    c.mask[301 + j] = -INFINITY;
  c.check();
  c.s.divide = 0; // the same scale as a Mul
  c.scale = 0.25f;
  c.check();
}

// The last 40 of 300 positions under an additive causal mask (query i sees
// keys up to 260 + i, Llama's triu of -inf), with the causal flag and its
// offset: the first task's keys end inside the second block of 256, and the
// second task's (queries 32 to 39) too; every key past them is skipped.
TEST(Attention, CausalOffsetSkipsKeysPastTheDiagonal) {
  AttentionCase c(attentionShape({2}, 40, 300, 16, 8));
  c.scale = 0.25f;
  c.setAdditive(
      [](int64_t i, int64_t j) { return j > 260 + i ? -INFINITY : 0.0f; });
  c.check();
  c.s.causal = 1;
  c.s.causalOffset = 260;
  c.check();
}

// A causal select mask [Lq, Lk] kept where true (GPT-2's Where(mask, S,
// min)); and its reverse, each query keeping only the keys at or after it
// (Where(mask, -inf, S) with mask true before the query): rows from 256 on
// see only -inf in the first block of keys, which must add nothing.
TEST(Attention, CausalAndReverseSelectMasks) {
  AttentionCase c(attentionShape({4}, 300, 300, 16, 16));
  c.setSelect([](int64_t i, int64_t j) { return j <= i; });
  c.fill = std::numeric_limits<float>::lowest();
  c.scale = 0.25f;
  c.check();
  // The same with the causal flag: keys past each block's diagonal are not
  // computed, which changes nothing.
  c.s.causal = 1;
  c.check();
  c.s.causal = 0;
  c.setSelect([](int64_t i, int64_t j) { return j < i; });
  c.s.keep = 0;
  c.fill = -INFINITY;
  c.check();
}

// A row whose every score is -inf is NaN, as Softmax makes it; the other rows
// are unaffected. No keys at all give zeros, as the unfused products do.
TEST(Attention, FullyMaskedRowsAndNoKeys) {
  AttentionCase c(attentionShape({1}, 3, 5, 4, 2));
  c.setAdditive([](int64_t i, int64_t) { return i == 1 ? -INFINITY : 0.0f; });
  std::vector<float> y = c.run();
  EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]));
  c.check();
  AttentionCase none(attentionShape({2}, 3, 0, 4, 2));
  for (float x : none.run())
    EXPECT_EQ(x, 0.0f);
}

// A long causal sequence: 4096 queries and keys, 16 blocks of keys per row.
TEST(Attention, LongCausalSequence) {
  AttentionCase c(attentionShape({1}, 4096, 4096, 32, 32));
  c.setSelect([](int64_t i, int64_t j) { return j <= i; });
  c.fill = -INFINITY;
  c.scale = 0.125f;
  c.check();
}

// The exporters' head layouts read and written through strides, as
// hetpar-onnx-fuse-attention folds the transposes: Q, K and V stored
// [N, L, H, D] with K read transposed (KT's columns are contiguous), Y
// written [N, L, H, Dv]; then Q stored [N, H, D, L] (read transposed) and V
// stored [N, H, Dv, L]. Both over two blocks of keys, on the blocked CPU path
// and the two-pass kernel.
TEST(Attention, HeadLayoutsThroughStrides) {
  const int64_t N = 2, H = 3, L = 300, D = 8, Dv = 12;
  hp_attention_shape s = attentionShape({N, H}, L, L, D, Dv);
  s.q = {{{L * H * D, D}}, H * D, 1};
  s.k = {{{L * H * D, D}}, 1, H * D};
  s.v = {{{L * H * Dv, Dv}}, H * Dv, 1};
  s.y = {{{L * H * Dv, Dv}}, H * Dv, 1};
  AttentionCase c(s);
  c.scale = 0.5f;
  c.check();
  c.s.q = {{{H * D * L, D * L}}, 1, L};
  c.s.v = {{{H * Dv * L, Dv * L}}, 1, L};
  c.check();
  std::vector<double> want = c.reference();
  std::vector<float> y(want.size(), -7.0f);
  hp_launch(nullptr, hp_attention_naive<float, float, float>, N * H * L * Dv,
            c.s, c.q.data(), c.kT.data(), c.v.data(), &c.scale,
            (const float *)nullptr, (const float *)nullptr, y.data());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
        << "element " << i;
}

// float16 storage on the CPU runs the two-pass kernel (float accumulation):
// the result is the float reference rounded to float16.
TEST(Attention, HalfStorageRunsNaive) {
  hp_attention_shape s = attentionShape({2}, 9, 13, 8, 6);
  AttentionCase c(s);
  c.scale = 0.5f;
  std::vector<double> want = c.reference();
  auto half = [](const std::vector<float> &x) {
    return std::vector<hp_half>(x.begin(), x.end());
  };
  std::vector<hp_half> q = half(c.q), kT = half(c.kT), v = half(c.v);
  std::vector<hp_half> y(want.size());
  hp_half scale(0.5f);
  hp_attention_launch<hp_half, float, hp_half>(nullptr, s, q.data(), kT.data(),
                                               v.data(), &scale, nullptr,
                                               nullptr, y.data());
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR((float)y[i], want[i], 2e-3 * (1 + std::fabs(want[i])))
        << "element " << i;
}

// hetpar_run's CUDA graph policy (hp_graph_next, host code on both
// backends): a run on new buffers is eager, the second on the same buffers
// captures, later ones replay; other buffers start over; disabled, eager.
TEST(CudaGraphs, WarmUpCaptureReplayAndNewBuffers) {
  int a = 0, b = 0, c = 0;
  const void *first[] = {&a, &b}, *other[] = {&a, &c}, *longer[] = {&a, &b, &c};
  hp_graph_state s = {};
  EXPECT_EQ(hp_graph_next(&s, first, 2), HP_GRAPH_EAGER);
  EXPECT_EQ(hp_graph_next(&s, first, 2), HP_GRAPH_CAPTURE);
  EXPECT_EQ(hp_graph_next(&s, first, 2), HP_GRAPH_REPLAY);
  EXPECT_EQ(hp_graph_next(&s, first, 2), HP_GRAPH_REPLAY);
  // A graph holds its capture's pointers: other buffers warm up again.
  EXPECT_EQ(hp_graph_next(&s, other, 2), HP_GRAPH_EAGER);
  EXPECT_EQ(hp_graph_next(&s, first, 2), HP_GRAPH_EAGER);
  EXPECT_EQ(hp_graph_next(&s, first, 2), HP_GRAPH_CAPTURE);
  EXPECT_EQ(hp_graph_next(&s, longer, 3), HP_GRAPH_EAGER);
  EXPECT_EQ(hp_graph_next(&s, longer, 2), HP_GRAPH_EAGER);
  // A failed capture (the caller sets `disabled`): eager from then on.
  EXPECT_EQ(hp_graph_next(&s, longer, 2), HP_GRAPH_CAPTURE);
  s.disabled = 1;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(hp_graph_next(&s, longer, 2), HP_GRAPH_EAGER);
  free(s.key);
}

// The library plans of a context (hp_gpu_plans): made once per key, kept
// (a declined one too, so the library is not asked again), and destroyed
// with the cache.
TEST(GpuPlans, OnePlanPerKeyDeclinedOnesKept) {
  struct Plan : hp_gpu_plan {
    int *destroyed = nullptr;
    ~Plan() override { ++*destroyed; }
  };
  int made = 0, destroyed = 0;
  auto make = [&](bool ok) {
    return [&made, &destroyed, ok](Plan &p) {
      ++made;
      p.destroyed = &destroyed;
      p.ok = ok;
    };
  };
  {
    hp_gpu_plans plans;
    Plan *a = plans.get<Plan>({HP_PATH_CUDNN_CONV, 1, 2, 3}, make(true));
    Plan *b = plans.get<Plan>({HP_PATH_CUDNN_CONV, 1, 2, 4}, make(false));
    EXPECT_EQ(made, 2);
    EXPECT_TRUE(a->ok);
    EXPECT_FALSE(b->ok);
    EXPECT_NE(a, b);
    // Asked again: the same plans, nothing made.
    EXPECT_EQ(plans.get<Plan>({HP_PATH_CUDNN_CONV, 1, 2, 3}, make(false)), a);
    EXPECT_EQ(plans.get<Plan>({HP_PATH_CUDNN_CONV, 1, 2, 4}, make(true)), b);
    EXPECT_FALSE(b->ok);
    EXPECT_EQ(made, 2);
    // The same parameters on another path are another plan.
    Plan *c = plans.get<Plan>({HP_PATH_CUDNN_POOL, 1, 2, 3}, make(true));
    EXPECT_NE(c, a);
    EXPECT_EQ(made, 3);
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 3);
}

} // namespace
