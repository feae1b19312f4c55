//===- SearchTest.cpp - sharding rules, intra-op and inter-op search ------===//
//
// Expected values are worked by hand (rules, uneven splits) or come from
// brute-force enumeration under the same cost model (the search must match
// the best enumerated plan within 1%, issue 5).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Search/Search.h"

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Plan/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include "TestClusters.h"

#include <functional>
#include <map>
#include <numeric>

using namespace mlir;
using namespace hetpar;
using hetpar::test::kFourA100;

namespace {

std::string errorOf(llvm::Error err) { return llvm::toString(std::move(err)); }

struct Fixture : ::testing::Test {
  Fixture() {
    registry.insert<func::FuncDialect, onnx::ONNXDialect>();
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
  OwningOpRef<ModuleOp> parse(llvm::StringRef text) {
    auto m = parseSourceString<ModuleOp>(text, ctx.get());
    EXPECT_TRUE(m) << text.str();
    return m;
  }
  Cluster cluster(llvm::StringRef yaml) {
    auto c = parseCluster(yaml, "test.yaml");
    EXPECT_TRUE(static_cast<bool>(c)) << (c ? "" : errorOf(c.takeError()));
    return c ? std::move(*c) : Cluster();
  }
  func::FuncOp funcOf(ModuleOp m) { return *m.getOps<func::FuncOp>().begin(); }
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  DefaultCostModel model{CostParams::defaults()};
};

/// `layers` blocks of x + W2 relu(x W1 + b1) with a LayerNorm, named like a
/// torch export ("/layers.3/fc1/MatMul"); x is [batch, seq, hidden].
std::string mlpModel(int layers, int batch, int seq, int hidden, int inner) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto t = [&](int a, int b, int c) {
    return llvm::formatv("tensor<{0}x{1}x{2}xf32>", a, b, c).str();
  };
  std::string act = t(batch, seq, hidden), wide = t(batch, seq, inner);
  os << "func.func @m(%x: " << act << ") -> " << act << " {\n";
  std::string cur = "%x";
  for (int l = 0; l < layers; ++l) {
    std::string p = "/layers." + std::to_string(l) + "/";
    os << llvm::formatv(
        "  %w1_{0} = onnx.Constant dense<0.5> : tensor<{1}x{2}xf32>\n"
        "  %b1_{0} = onnx.Constant dense<0.1> : tensor<{2}xf32>\n"
        "  %w2_{0} = onnx.Constant dense<0.5> : tensor<{2}x{1}xf32>\n"
        "  %g_{0} = onnx.Constant dense<1.0> : tensor<{1}xf32>\n"
        "  %a_{0} = onnx.MatMul({3}, %w1_{0}) : ({4}, tensor<{1}x{2}xf32>) -> "
        "{5} loc(\"{6}fc1/MatMul\")\n"
        "  %c_{0} = onnx.Add(%a_{0}, %b1_{0}) : ({5}, tensor<{2}xf32>) -> {5} "
        "loc(\"{6}fc1/Add\")\n"
        "  %r_{0} = onnx.Relu(%c_{0}) : ({5}) -> {5} loc(\"{6}act/Relu\")\n"
        "  %d_{0} = onnx.MatMul(%r_{0}, %w2_{0}) : ({5}, tensor<{2}x{1}xf32>) "
        "-> {4} loc(\"{6}fc2/MatMul\")\n"
        "  %e_{0} = onnx.Add(%d_{0}, {3}) : ({4}, {4}) -> {4} "
        "loc(\"{6}Add\")\n"
        "  %n_{0} = onnx.LayerNormalization(%e_{0}, %g_{0}) : ({4}, "
        "tensor<{1}xf32>) -> {4} loc(\"{6}norm/LayerNormalization\")\n",
        l, hidden, inner, cur, act, wide, p);
    cur = "%n_" + std::to_string(l);
  }
  os << "  return " << cur << " : " << act << "\n}\n";
  return s;
}

constexpr const char *kMixedBox = R"(
name: box
nodes:
  - name: box
    devices:
      - {kind: A100-PCIe-40GB, count: 1}
      - {kind: T4, count: 3}
    interconnect: PCIe3
)";

//===----------------------------------------------------------------------===//
// Sharding rules
//===----------------------------------------------------------------------===//

TEST_F(Fixture, ShardingRulesByHand) {
  auto m = parse(R"(
func.func @f(%a: tensor<2x8x16xf32>, %img: tensor<2x3x8x8xf32>,
             %h: tensor<2x8x768xf32>, %g: tensor<4x6xf32>) -> () {
  %w = onnx.Constant dense<0.5> : tensor<16x32xf32>
  %0 = onnx.MatMul(%a, %w) : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32> loc("mm")
  %k = onnx.Constant dense<0.5> : tensor<5x3x3x3xf32>
  %1 = onnx.Conv(%img, %k) {pads = array<i64: 1, 1, 1, 1>} : (tensor<2x3x8x8xf32>, tensor<5x3x3x3xf32>) -> tensor<2x5x8x8xf32> loc("conv")
  %s = onnx.Constant dense<[2, 8, 12, 64]> : tensor<4xi64>
  %2 = onnx.Reshape(%h, %s) : (tensor<2x8x768xf32>, tensor<4xi64>) -> tensor<2x8x12x64xf32> loc("heads")
  %b = onnx.Constant dense<0.5> : tensor<10x6xf32>
  %3 = onnx.Gemm(%g, %b) {transB = 1 : i64} : (tensor<4x6xf32>, tensor<10x6xf32>) -> tensor<4x10xf32> loc("gemm")
  %4 = onnx.Softmax(%h) {axis = -1 : i64} : (tensor<2x8x768xf32>) -> tensor<2x8x768xf32> loc("softmax")
  %5 = onnx.Transpose(%2) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x12x64xf32>) -> tensor<2x12x8x64xf32> loc("t")
  %6:3 = onnx.Split(%h) {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<2x8x768xf32>) -> (tensor<2x8x256xf32>, tensor<2x8x256xf32>, tensor<2x8x256xf32>) loc("split")
  %ids = onnx.Constant dense<1> : tensor<4x6xi64>
  %depth = onnx.Constant dense<10> : tensor<i64>
  %onoff = onnx.Constant dense<[0.0, 1.0]> : tensor<2xf32>
  %7 = onnx.OneHot(%ids, %depth, %onoff) {axis = 1 : i64} : (tensor<4x6xi64>, tensor<i64>, tensor<2xf32>) -> tensor<4x10x6xf32> loc("one_hot")
  return
}
)");
  ASSERT_TRUE(m);
  std::map<std::string, std::string> rules;
  OpCatalog catalog(funcOf(*m));
  for (size_t i = 0; i < catalog.size(); ++i)
    if (catalog.rules[i])
      rules[catalog.names[i]] = catalog.rules[i]->str();
  // MatMul [b=2, m=8, k=16] x [k, n=32]: b, m, n parallel, k a reduction.
  EXPECT_EQ(rules["mm"],
            "([i, k, j], [j, l]) -> ([i, k, l]) {i=2, j=16 reduction, k=8, "
            "l=32}");
  // Conv: batch and output channels parallel, input channels a reduction,
  // spatial axes (and the kernel's) whole.
  EXPECT_EQ(rules["conv"],
            "([i, k, l, o], [j, k, m, p]) -> ([i, j, n, q]) {i=2, j=5, k=3 "
            "reduction, l=8 whole, m=3 whole, n=8 whole, o=8 whole, p=3 "
            "whole, q=8 whole}");
  // Reshape 768 -> 12 x 64: the 768 dimension is made of the head factors.
  EXPECT_EQ(rules["heads"],
            "([i, j, (k l)], []) -> ([i, j, k, l]) {i=2, j=8, k=12, l=64}");
  // Gemm with transB: B is [n, k].
  EXPECT_EQ(rules["gemm"],
            "([i, k], [j, k]) -> ([i, j]) {i=4, j=10, k=6 reduction}");
  EXPECT_EQ(rules["softmax"],
            "([i, j, k]) -> ([i, j, k]) {i=2, j=8, k=768 whole}");
  EXPECT_EQ(rules["t"],
            "([i, j, k, l]) -> ([i, k, j, l]) {i=2, j=8, k=12, l=64}");
  // OneHot: the indices' axes go through, the new class axis is whole.
  EXPECT_EQ(rules["one_hot"],
            "([i, k], [], [l]) -> ([i, j, k]) {i=4, j=10 whole, k=6, l=2 "
            "whole}");
  // Equal Split: three chunks of a factor the outputs share.
  EXPECT_EQ(rules["split"],
            "([i, j, (l k)]) -> ([i, j, k], [i, j, k], [i, j, k]) {i=2, j=8, "
            "k=256, l=3 whole}");
}

// How partial results of a split reduction combine is part of the rule (the
// one answer of the search and the partition): a sum, max, min or product
// combines; a mean does not (local means divide by the local count), so its
// reduced axis is whole, as global average pooling's spatial axes are.
TEST_F(Fixture, ShardingRulesSayHowPartialResultsCombine) {
  auto m = parse(R"(
func.func @f(%x: tensor<4x6xf32>, %img: tensor<2x3x4x4xf32>) -> () {
  %a = onnx.Constant dense<[1]> : tensor<1xi64>
  %0 = onnx.ReduceSum(%x, %a) : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<4x1xf32> loc("sum")
  %1 = onnx.ReduceMax(%x, %a) : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<4x1xf32> loc("max")
  %2 = onnx.ReduceMin(%x, %a) : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<4x1xf32> loc("min")
  %3 = onnx.ReduceProd(%x, %a) : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<4x1xf32> loc("prod")
  %4 = onnx.ReduceMean(%x, %a) : (tensor<4x6xf32>, tensor<1xi64>) -> tensor<4x1xf32> loc("mean")
  %5 = onnx.GlobalMaxPool(%img) : (tensor<2x3x4x4xf32>) -> tensor<2x3x1x1xf32> loc("gmax")
  %6 = onnx.GlobalAveragePool(%img) : (tensor<2x3x4x4xf32>) -> tensor<2x3x1x1xf32> loc("gavg")
  return
}
)");
  ASSERT_TRUE(m);
  std::map<std::string, std::string> rules;
  std::map<std::string, dist::ReductionKind> kinds;
  OpCatalog catalog(funcOf(*m));
  for (size_t i = 0; i < catalog.size(); ++i)
    if (catalog.rules[i]) {
      rules[catalog.names[i]] = catalog.rules[i]->str();
      kinds[catalog.names[i]] = catalog.rules[i]->reduction;
    }
  EXPECT_EQ(rules["sum"], "([i, j], [_]) -> ([i, _]) {i=4, j=6 reduction}");
  EXPECT_EQ(kinds["sum"], dist::ReductionKind::Sum);
  EXPECT_EQ(rules["max"],
            "([i, j], [_]) -> ([i, _]) {i=4, j=6 reduction(max)}");
  EXPECT_EQ(rules["min"],
            "([i, j], [_]) -> ([i, _]) {i=4, j=6 reduction(min)}");
  EXPECT_EQ(rules["prod"],
            "([i, j], [_]) -> ([i, _]) {i=4, j=6 reduction(prod)}");
  EXPECT_EQ(rules["mean"], "([i, j], [_]) -> ([i, _]) {i=4, j=6 whole}");
  EXPECT_EQ(rules["gmax"], "([i, j, k, l]) -> ([i, j, _, _]) {i=2, j=3, "
                           "k=4 reduction(max), l=4 reduction(max)}");
  EXPECT_EQ(rules["gavg"], "([i, j, k, l]) -> ([i, j, _, _]) {i=2, j=3, "
                           "k=4 whole, l=4 whole}");
}

// Reshapes in common sub-factors, each expected string worked out by hand
// from the row-major order of the elements.
TEST(ReshapeRule, CommonSubFactors) {
  auto rule = [](llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
    return makeReshapeRule(from, to, /*numOperands=*/2).str();
  };
  // 2 is the outer part of 8, and 128 = 4 x 32 splits across the two.
  EXPECT_EQ(rule({2, 128}, {8, 32}),
            "([i, (j k)], []) -> ([(i j), k]) {i=2, j=4, k=32}");
  // nn.MultiheadAttention's head split [L, N, E] -> [L, N*H, E/H] (L=5,
  // N=2, H=4, E=16): the batch N stays a factor of its own, the outer part
  // of N*H, so data parallelism can split it.
  EXPECT_EQ(rule({5, 2, 16}, {5, 8, 4}),
            "([i, j, (k l)], []) -> ([i, (j k), l]) {i=5, j=2, k=4, l=4}");
  // Coprime: no common split, one factor kept whole.
  EXPECT_EQ(rule({2, 3}, {3, 2}), "([i, i], []) -> ([i, i]) {i=6 whole}");
  // A common outer 2, then coprime 3 against 2 up to where 12 meets 12.
  EXPECT_EQ(rule({6, 4}, {4, 6}),
            "([(i j), j], []) -> ([(i j), j]) {i=2, j=12 whole}");
  // Dimensions of size 1 carry no factor.
  EXPECT_EQ(rule({1, 4, 1, 6}, {24, 1}),
            "([_, i, _, j], []) -> ([(i j), _]) {i=4, j=6}");
}

// The batch analysis (Batch.h) on nn.MultiheadAttention's layouts (L=3,
// N=4, H=2, E=8), worked out by hand: [N, L, E] -> [L, N, E] puts the batch
// in dimension 1; [L, N*H, E/H] makes it the outer part of dimension 1
// (granule H); [L*N, E] the inner part of the rows (outer L).
TEST_F(Fixture, BatchAnalysisThroughAttentionLayouts) {
  auto m = parse(R"(
func.func @f(%x: tensor<4x3x8xf32>) -> tensor<12x8xf32> {
  %t = onnx.Transpose(%x) {perm = array<i64: 1, 0, 2>} : (tensor<4x3x8xf32>) -> tensor<3x4x8xf32> loc("t")
  %s1 = onnx.Constant dense<[3, 8, 4]> : tensor<3xi64>
  %h = onnx.Reshape(%t, %s1) : (tensor<3x4x8xf32>, tensor<3xi64>) -> tensor<3x8x4xf32> loc("heads")
  %s2 = onnx.Constant dense<[12, 8]> : tensor<2xi64>
  %r = onnx.Reshape(%h, %s2) : (tensor<3x8x4xf32>, tensor<2xi64>) -> tensor<12x8xf32> loc("rows")
  %w = onnx.Constant dense<0.5> : tensor<8x8xf32>
  %y = onnx.MatMul(%r, %w) : (tensor<12x8xf32>, tensor<8x8xf32>) -> tensor<12x8xf32> loc("proj")
  return %y : tensor<12x8xf32>
}
)");
  ASSERT_TRUE(m);
  OpCatalog catalog(funcOf(*m));
  const BatchAnalysis &b = catalog.batch;
  EXPECT_EQ(b.size, 4);
  EXPECT_EQ(b.firstError, -1);
  auto at = [&](const char *name) {
    int i = catalog.byName.lookup(name);
    return b.of(catalog.ops[i]->getResult(0));
  };
  EXPECT_EQ(at("t"), (BatchDim{1, 1, 1}));
  EXPECT_EQ(at("heads"), (BatchDim{1, 2, 1}));
  EXPECT_EQ(at("rows"), (BatchDim{0, 1, 3}));
  EXPECT_EQ(at("proj"), (BatchDim{0, 1, 3}));
  // The MatMul's row factor (12) holds the batch in 3 chunks.
  const OpBatch &proj = b.ops[catalog.byName.lookup("proj")];
  EXPECT_EQ(proj.within, 3);
  EXPECT_EQ(proj.units, 1);
  EXPECT_EQ(
      catalog.rules[catalog.byName.lookup("proj")]->factors[proj.factor].size,
      12);
}

// A graph input read whole by its op (Reshape's shape, here of 2 entries as
// the batch is 2 samples) seeds the batch like any input whose first
// dimension is the batch's size; the op's rule has no dimension for it, so the
// op cannot split the batch (ONNX test_reshape_reduced_dims, which crashed the
// analysis). The batch is given in dimension 0 (`dist.batch_dim`), so the
// analysis does not look for it in another dimension.
TEST_F(Fixture, BatchSeededIntoAnOperandReadWhole) {
  auto m = parse(R"(
func.func @f(%x: tensor<2x3x4xf32> {dist.batch_dim = 0 : i64}, %s: tensor<2xi64>) -> tensor<2x12xf32> {
  %y = onnx.Reshape(%x, %s) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32> loc("r")
  return %y : tensor<2x12xf32>
}
)");
  ASSERT_TRUE(m);
  OpCatalog catalog(funcOf(*m));
  ASSERT_EQ(catalog.batch.firstError, 0);
  EXPECT_NE(catalog.batch.ops[0].error.find("mixes the batch of operand 1"),
            std::string::npos)
      << catalog.batch.ops[0].error;
}

// A sequence-first input [L, N, E]: the model reduces over dimension 0 (the
// sequence), so the analysis finds the batch in dimension 1, in every input
// whose dimension 1 has the batch's extent; `dist.batch_dim` overrides it.
TEST_F(Fixture, BatchFoundInASequenceFirstInput) {
  const char *ir = R"(
func.func @f(%x: tensor<6x4x8xf32>ATTR, %m: tensor<5x4x8xf32>) -> tensor<4x8xf32> {
  %a = onnx.Constant dense<[0]> : tensor<1xi64>
  %s = onnx.ReduceSum(%x, %a) {keepdims = 0 : i64} : (tensor<6x4x8xf32>, tensor<1xi64>) -> tensor<4x8xf32> loc("sum")
  %t = onnx.ReduceMax(%m, %a) {keepdims = 0 : i64} : (tensor<5x4x8xf32>, tensor<1xi64>) -> tensor<4x8xf32> loc("max")
  %y = onnx.Add(%s, %t) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add")
  return %y : tensor<4x8xf32>
}
)";
  auto withAttr = [&](const std::string &attr) {
    std::string text = ir;
    return text.replace(text.find("ATTR"), 4, attr);
  };
  auto found = parse(withAttr(""));
  ASSERT_TRUE(found);
  OpCatalog catalog(funcOf(*found));
  const BatchAnalysis &b = catalog.batch;
  EXPECT_EQ(b.firstError, -1);
  EXPECT_EQ(b.seedDim, 1);
  EXPECT_FALSE(b.seedGiven);
  EXPECT_EQ(b.size, 4);
  func::FuncOp fn = funcOf(*found);
  EXPECT_EQ(b.of(fn.getArgument(0)), (BatchDim{1, 1, 1}));
  EXPECT_EQ(b.of(fn.getArgument(1)), (BatchDim{1, 1, 1}));
  EXPECT_EQ(describeBatchSeed(fn, b), "dimension 1 of input 'input_0'");

  auto given =
      parse(withAttr(" {dist.batch_dim = 0 : i64, onnx.name = \"x\"}"));
  ASSERT_TRUE(given);
  OpCatalog forced(funcOf(*given));
  EXPECT_TRUE(forced.batch.seedGiven);
  EXPECT_EQ(forced.batch.seedDim, 0);
  EXPECT_EQ(forced.batch.size, 6);
  EXPECT_EQ(forced.batch.firstError, forced.byName.lookup("sum"));
  EXPECT_EQ(describeBatchSeed(funcOf(*given), forced.batch),
            "dimension 0 of input 'x'");
}

// An op that reduces over the batch: the analysis names it, the simulator
// refuses plans that split the batch, and the search keeps the batch whole.
TEST_F(Fixture, BatchReducedOverKeepsTheBatchWhole) {
  auto m = parse(R"(
func.func @f(%x: tensor<8x512xf32>) -> tensor<1x512xf32> {
  %w = onnx.Constant dense<0.5> : tensor<512x512xf32>
  %h = onnx.MatMul(%x, %w) : (tensor<8x512xf32>, tensor<512x512xf32>) -> tensor<8x512xf32> loc("mm")
  %a = onnx.Constant dense<[0]> : tensor<1xi64>
  %y = onnx.ReduceMean(%h, %a) : (tensor<8x512xf32>, tensor<1xi64>) -> tensor<1x512xf32> loc("mean")
  return %y : tensor<1x512xf32>
}
)");
  ASSERT_TRUE(m);
  OpCatalog catalog(funcOf(*m));
  int mean = catalog.byName.lookup("mean");
  ASSERT_EQ(catalog.batch.firstError, mean);
  EXPECT_NE(catalog.batch.ops[mean].error.find("node 'mean' (ReduceMean)"),
            std::string::npos)
      << catalog.batch.ops[mean].error;
  Cluster c = cluster(kFourA100);
  Plan dp;
  dp.mode = Mode::Inference;
  Stage s;
  s.devices = {0, 1, 2, 3};
  s.data = 4;
  s.firstOp = "mm";
  s.lastOp = "mean";
  dp.stages.push_back(s);
  auto pred = simulate(*m, c, dp, model);
  ASSERT_FALSE(static_cast<bool>(pred));
  EXPECT_NE(errorOf(pred.takeError()).find("the plan splits the batch"),
            std::string::npos);
  SearchOptions options;
  auto r = searchPlan(*m, c, model, options);
  ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
  EXPECT_EQ(r->best.plan.microbatches, 1);
  for (const Stage &st : r->best.plan.stages)
    EXPECT_EQ(st.data, 1);
}

TEST_F(Fixture, LossShardingRulesByHand) {
  // scores [N=4, C=10, d=6], labels [4, 6], weights [10]: the class axis is
  // whole; N and d parallel without reduction and in the gradients of "sum",
  // a reduction for the forward "sum", whole for "mean" (a global divisor)
  // and where log_prob is a result of a reducing loss.
  auto m = parse(R"(
func.func @f(%x: tensor<4x10x6xf32>, %l: tensor<4x6xi64>, %w: tensor<10xf32>,
             %dy: tensor<f32>, %dyn: tensor<4x6xf32>) -> () {
  %0 = onnx.SoftmaxCrossEntropyLoss(%x, %l) {reduction = "none"} : (tensor<4x10x6xf32>, tensor<4x6xi64>) -> tensor<4x6xf32> loc("sce_none")
  %1 = onnx.NegativeLogLikelihoodLoss(%x, %l, %w) {reduction = "sum"} : (tensor<4x10x6xf32>, tensor<4x6xi64>, tensor<10xf32>) -> tensor<f32> loc("nll_sum")
  %2:2 = onnx.SoftmaxCrossEntropyLoss(%x, %l) {reduction = "sum"} : (tensor<4x10x6xf32>, tensor<4x6xi64>) -> (tensor<f32>, tensor<4x10x6xf32>) loc("sce_sum_lp")
  %3 = onnx.SoftmaxCrossEntropyLoss(%x, %l, %w) : (tensor<4x10x6xf32>, tensor<4x6xi64>, tensor<10xf32>) -> tensor<f32> loc("sce_mean")
  %4 = onnx.SoftmaxCrossEntropyLossGrad(%dy, %x, %l) {reduction = "sum"} : (tensor<f32>, tensor<4x10x6xf32>, tensor<4x6xi64>) -> tensor<4x10x6xf32> loc("sce_grad_sum")
  %5 = onnx.NegativeLogLikelihoodLossGrad(%dyn, %x, %l, %w) {reduction = "none"} : (tensor<4x6xf32>, tensor<4x10x6xf32>, tensor<4x6xi64>, tensor<10xf32>) -> tensor<4x10x6xf32> loc("nll_grad_none")
  %6 = onnx.NegativeLogLikelihoodLossGrad(%dy, %x, %l) : (tensor<f32>, tensor<4x10x6xf32>, tensor<4x6xi64>) -> tensor<4x10x6xf32> loc("nll_grad_mean")
  return
}
)");
  ASSERT_TRUE(m);
  std::map<std::string, std::string> rules;
  OpCatalog catalog(funcOf(*m));
  for (size_t i = 0; i < catalog.size(); ++i)
    if (catalog.rules[i])
      rules[catalog.names[i]] = catalog.rules[i]->str();
  EXPECT_EQ(rules["sce_none"],
            "([i, j, k], [i, k]) -> ([i, k]) {i=4, j=10 whole, k=6}");
  EXPECT_EQ(rules["nll_sum"], "([i, j, k], [i, k], [j]) -> ([]) {i=4 "
                              "reduction, j=10 whole, k=6 reduction}");
  EXPECT_EQ(rules["sce_sum_lp"], "([i, j, k], [i, k]) -> ([], [i, j, k]) "
                                 "{i=4 whole, j=10 whole, k=6 whole}");
  EXPECT_EQ(rules["sce_mean"], "([i, j, k], [i, k], [j]) -> ([]) {i=4 "
                               "whole, j=10 whole, k=6 whole}");
  EXPECT_EQ(rules["sce_grad_sum"],
            "([], [i, j, k], [i, k]) -> ([i, j, k]) {i=4, j=10 whole, k=6}");
  EXPECT_EQ(rules["nll_grad_none"], "([i, k], [i, j, k], [i, k], [j]) -> "
                                    "([i, j, k]) {i=4, j=10 whole, k=6}");
  EXPECT_EQ(rules["nll_grad_mean"], "([], [i, j, k], [i, k]) -> ([i, j, k]) "
                                    "{i=4 whole, j=10 whole, k=6 whole}");
}

TEST_F(Fixture, UnevenSplitsAndDivisibility) {
  // A dimension of 126 over 4 devices: 32/32/31/31, never onto 2 devices;
  // a vocabulary of 50257 over 4: 12565/12564/12564/12564; 28 heads split
  // evenly over 1, 2, 4, 7 devices of one kind but not 3, 5, 6 or 8.
  auto m = parse(R"(
func.func @f(%x: tensor<2x16x64xf32>, %h: tensor<2x16x112xf32>) -> () {
  %w = onnx.Constant dense<0.5> : tensor<64x126xf32>
  %0 = onnx.MatMul(%x, %w) : (tensor<2x16x64xf32>, tensor<64x126xf32>) -> tensor<2x16x126xf32> loc("narrow")
  %v = onnx.Constant dense<0.5> : tensor<64x50257xf32>
  %1 = onnx.MatMul(%x, %v) : (tensor<2x16x64xf32>, tensor<64x50257xf32>) -> tensor<2x16x50257xf32> loc("logits")
  %s = onnx.Constant dense<[2, 16, 28, 4]> : tensor<4xi64>
  %2 = onnx.Reshape(%h, %s) : (tensor<2x16x112xf32>, tensor<4xi64>) -> tensor<2x16x28x4xf32> loc("heads")
  return
}
)");
  ASSERT_TRUE(m);
  OpCatalog catalog(funcOf(*m));
  auto split = [&](llvm::StringRef op, int dim, int devices) {
    int i = catalog.byName.lookup(op);
    std::vector<double> even(devices, 1.0);
    for (size_t f = 0; f < catalog.rules[i]->factors.size(); ++f)
      if (auto s = shardingForFactor(catalog, i, f, even, true);
          s && s->dim == dim)
        return s->parts;
    return std::vector<double>{};
  };
  EXPECT_EQ(split("narrow", 2, 4), (std::vector<double>{32, 32, 31, 31}));
  EXPECT_EQ(split("logits", 2, 4),
            (std::vector<double>{12565, 12564, 12564, 12564}));
  for (int t : {1, 2, 4, 7, 14, 28})
    EXPECT_EQ(split("heads", 2, t).size(), static_cast<size_t>(t)) << t;
  for (int t : {3, 5, 6, 8})
    EXPECT_TRUE(split("heads", 2, t).empty()) << t;
  // 126 over more devices than columns: no split at all.
  EXPECT_TRUE(split("narrow", 2, 127).empty());
  // On devices of two kinds, heads go by speed in whole heads: 28 at 5:2
  // is 20 and 8.
  int heads = catalog.byName.lookup("heads");
  int f = catalog.rules[heads]->results[0][2].front();
  auto uneven = shardingForFactor(catalog, heads, f, {5.0, 2.0}, false);
  ASSERT_TRUE(uneven);
  EXPECT_EQ(uneven->parts, (std::vector<double>{20, 8}));
}

TEST_F(Fixture, NoSplitBesideTheBatch) {
  // A sequence-first attention's rows: [N, L, E] -> [L, N, E] -> [L*N, E]
  // with the batch N inside L's rows. Splitting L there would leave a
  // replica's or a microbatch's rows no block of the parts (the partition
  // refuses it), so the search offers L only where it has a dimension of
  // its own (the Transpose's result).
  auto m = parse(R"(
func.func @f(%x: tensor<4x5x16xf32>) -> () {
  %0 = onnx.Transpose(%x) {perm = array<i64: 1, 0, 2>} : (tensor<4x5x16xf32>) -> tensor<5x4x16xf32> loc("seq_first")
  %s = onnx.Constant dense<[20, 16]> : tensor<2xi64>
  %1 = onnx.Reshape(%0, %s) : (tensor<5x4x16xf32>, tensor<2xi64>) -> tensor<20x16xf32> loc("rows")
  return
}
)");
  ASSERT_TRUE(m);
  OpCatalog catalog(funcOf(*m));
  auto dims = [&](llvm::StringRef op) {
    int i = catalog.byName.lookup(op);
    std::vector<int> out;
    for (size_t f = 0; f < catalog.rules[i]->factors.size(); ++f)
      if (auto s = shardingForFactor(catalog, i, f, {1.0, 1.0}, true))
        out.push_back(s->dim);
    return out;
  };
  EXPECT_EQ(dims("seq_first"), (std::vector<int>{0, 2}));
  EXPECT_EQ(dims("rows"), (std::vector<int>{1}));
}

//===----------------------------------------------------------------------===//
// Intra-op search against brute force
//===----------------------------------------------------------------------===//

/// The cheapest assignment of choices to `ops`, by enumerating all of them.
double bruteForceShardings(const OpCatalog &catalog, llvm::ArrayRef<int> ops,
                           llvm::ArrayRef<int> group, double batchShare,
                           bool training, const Cluster &cluster,
                           const CostModel &model, size_t *count) {
  std::vector<std::vector<std::optional<OpSharding>>> choices;
  for (int i : ops)
    choices.push_back(shardingChoices(catalog, i, group, batchShare, training,
                                      cluster, model));
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> pick(ops.size(), 0);
  *count = 0;
  while (true) {
    llvm::StringMap<OpSharding> shardings;
    for (size_t k = 0; k < ops.size(); ++k)
      if (choices[k][pick[k]])
        shardings[catalog.names[ops[k]]] = *choices[k][pick[k]];
    auto t = timeReplica(catalog, ops, shardings, group, batchShare, training,
                         nullptr, cluster, model);
    EXPECT_TRUE(static_cast<bool>(t));
    if (t)
      best = std::min(best, t->forward + t->backward);
    ++*count;
    size_t k = 0;
    while (k < ops.size() && ++pick[k] == choices[k].size())
      pick[k++] = 0;
    if (k == ops.size())
      break;
  }
  return best;
}

TEST_F(Fixture, IntraOpMatchesBruteForce) {
  // Two layers (12 ops) of the residual MLP: a DAG (the residual edge).
  auto m = parse(mlpModel(2, 4, 64, 256, 1024));
  ASSERT_TRUE(m);
  OpCatalog catalog(funcOf(*m));
  std::vector<int> ops(catalog.size());
  std::iota(ops.begin(), ops.end(), 0);
  int checked = 0;
  struct Case {
    const char *yaml;
    std::vector<int> group;
    bool training;
    double share;
  };
  for (const Case &k : {Case{kFourA100, {0, 1, 2, 3}, true, 1.0},
                        Case{kFourA100, {0, 1}, false, 0.25},
                        Case{kMixedBox, {0, 1, 2, 3}, false, 1.0},
                        Case{kMixedBox, {0, 1}, true, 0.25}}) {
    Cluster c = cluster(k.yaml);
    const std::vector<int> &group = k.group;
    bool training = k.training;
    double share = k.share;
    {
      size_t count = 0;
      double brute = bruteForceShardings(catalog, ops, group, share, training,
                                         c, model, &count);
      auto ilp = solveShardings(catalog, ops, group, share, training, c, model,
                                10, ShardingSolver::Auto);
      ASSERT_TRUE(static_cast<bool>(ilp)) << errorOf(ilp.takeError());
      EXPECT_LE(ilp->time, brute * 1.01)
          << c.name << " " << group.size() << " devices, training " << training
          << ", share " << share << ", " << count << " assignments";
      EXPECT_GE(ilp->time, brute * (1 - 1e-9));
      EXPECT_TRUE(ilp->optimal);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4);
}

/// The fastest plan that fits, by enumeration: every stage count, every cut
/// at layer boundaries, every assignment of devices to stages (or to none),
/// every tensor degree, every microbatch count; shardings per stage from the
/// intra-op solver (exact, IntraOpMatchesBruteForce), batch shares by speed.
double bruteForcePlans(ModuleOp m, const Cluster &c, const CostModel &model,
                       Mode mode, int *count) {
  func::FuncOp func = *m.getOps<func::FuncOp>().begin();
  OpCatalog catalog(func);
  auto ops = listPlanOps(func);
  // Layer boundaries (every op of mlpModel has a layer).
  std::vector<int> starts;
  for (size_t i = 0; i < ops.size(); ++i)
    if (i == 0 || layerOf(ops[i].second) != layerOf(ops[i - 1].second))
      starts.push_back(i);
  int layers = starts.size(), n = c.devices.size();
  starts.push_back(ops.size());
  int64_t batch =
      llvm::cast<RankedTensorType>(func.getArgument(0).getType()).getDimSize(0);
  // Device speed on this model.
  std::vector<double> speed;
  for (const Device &d : c.devices) {
    double t = 0;
    for (auto &w : catalog.work)
      t += model.computeTime(*w, d, 1.0, 1.0, false);
    speed.push_back(1 / t);
  }
  double best = std::numeric_limits<double>::infinity();
  *count = 0;
  std::map<std::string, llvm::StringMap<OpSharding>> solved;
  for (int p = 1; p <= std::min(layers, n); ++p) {
    // Cuts: p - 1 increasing layer indices in 1..layers-1.
    std::vector<int> cut(p + 1);
    std::function<void(int, int)> cuts = [&](int s, int from) {
      if (s == p) {
        cut[0] = 0;
        cut[p] = layers;
        // Devices: each to a stage or to none.
        std::vector<int> owner(n, 0);
        while (true) {
          std::vector<std::vector<int>> devs(p);
          for (int d = 0; d < n; ++d)
            if (owner[d] < p)
              devs[owner[d]].push_back(c.devices[d].id);
          bool ok = llvm::all_of(devs, [](auto &v) { return !v.empty(); });
          // Tensor degrees per stage (products over stages).
          std::vector<std::vector<int>> degrees(p);
          for (int s2 = 0; ok && s2 < p; ++s2)
            for (int t = 1; t <= static_cast<int>(devs[s2].size()); ++t)
              if (devs[s2].size() % t == 0)
                degrees[s2].push_back(t);
          std::vector<size_t> pick(p, 0);
          while (ok) {
            for (int64_t mb = 1; mb <= batch; ++mb) {
              if (batch % mb)
                continue;
              Plan plan;
              plan.mode = mode;
              plan.microbatches = mb;
              bool valid = true;
              for (int s2 = 0; s2 < p && valid; ++s2) {
                Stage st;
                st.firstOp = ops[starts[cut[s2]]].second;
                st.lastOp = ops[starts[cut[s2 + 1]] - 1].second;
                st.devices = devs[s2];
                st.tensor = degrees[s2][pick[s2]];
                st.data = devs[s2].size() / st.tensor;
                std::vector<double> w;
                for (int r = 0; r < st.data; ++r) {
                  double x = 0;
                  for (int k = 0; k < st.tensor; ++k)
                    x += speed[st.devices[r * st.tensor + k]];
                  w.push_back(x);
                }
                auto samples = splitProportionally(batch / mb, w);
                if (samples.empty()) {
                  valid = false;
                  break;
                }
                if (st.data > 1)
                  st.batchShares.assign(samples.begin(), samples.end());
                if (st.tensor > 1) {
                  std::vector<int> stageOps;
                  for (int i = starts[cut[s2]]; i < starts[cut[s2 + 1]]; ++i)
                    stageOps.push_back(i);
                  auto group =
                      llvm::ArrayRef<int>(st.devices).take_front(st.tensor);
                  std::string key = llvm::formatv(
                      "{0} {1} {2} {3}", cut[s2], cut[s2 + 1],
                      llvm::make_range(group.begin(), group.end()), samples[0]);
                  auto it = solved.find(key);
                  if (it == solved.end()) {
                    auto sol =
                        solveShardings(catalog, stageOps, group,
                                       static_cast<double>(samples[0]) / batch,
                                       mode == Mode::Training, c, model, 10);
                    EXPECT_TRUE(static_cast<bool>(sol));
                    it = solved
                             .emplace(key, sol ? sol->shardings
                                               : llvm::StringMap<OpSharding>())
                             .first;
                  }
                  st.shardings = it->second;
                }
                plan.stages.push_back(std::move(st));
              }
              if (!valid)
                continue;
              auto pred = simulate(catalog, func, c, plan, model);
              ++*count;
              if (pred && pred->memoryProblems.empty())
                best = std::min(best, pred->stepTime);
            }
            int k = 0;
            while (k < p && ++pick[k] == degrees[k].size())
              pick[k++] = 0;
            if (k == p)
              break;
          }
          int d = 0;
          while (d < n && ++owner[d] == p + 1)
            owner[d++] = 0;
          if (d == n)
            break;
        }
        return;
      }
      for (int k = from; k <= layers - (p - s); ++k) {
        cut[s] = k;
        cuts(s + 1, k + 1);
      }
    };
    cuts(1, 1);
  }
  return best;
}

TEST_F(Fixture, SearchMatchesBruteForcePlans) {
  // Three layers on an A100 and three T4s in one PCIe box (and on one kind),
  // inference and training: the search's plan within 1% of the best of every
  // plan enumerated.
  auto m = parse(mlpModel(3, 8, 32, 256, 1024));
  ASSERT_TRUE(m);
  for (const char *yaml : {kMixedBox, kFourA100})
    for (Mode mode : {Mode::Inference, Mode::Training}) {
      Cluster c = cluster(yaml);
      int count = 0;
      double brute = bruteForcePlans(*m, c, model, mode, &count);
      SearchOptions options;
      options.mode = mode;
      auto r = searchPlan(*m, c, model, options);
      ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
      EXPECT_LE(r->best.prediction.stepTime, brute * 1.01)
          << c.name << " " << getModeName(mode).str() << ": search "
          << r->best.description << " vs the best of " << count << " plans";
      EXPECT_GT(count, 1000);
    }
}

//===----------------------------------------------------------------------===//
// The whole search
//===----------------------------------------------------------------------===//

/// Every op of the function in exactly one stage, stages in order, each
/// starting at a layer's first op.
void expectWholeLayers(func::FuncOp func, const Plan &plan) {
  auto ops = listPlanOps(func);
  size_t at = 0;
  for (const Stage &s : plan.stages) {
    ASSERT_TRUE(s.firstOp && s.lastOp);
    ASSERT_LT(at, ops.size());
    EXPECT_EQ(*s.firstOp, ops[at].second);
    if (at > 0) {
      EXPECT_NE(layerOf(ops[at].second), layerOf(ops[at - 1].second))
          << "stage starts inside a layer at " << *s.firstOp;
    }
    while (at < ops.size() && ops[at].second != *s.lastOp)
      ++at;
    ++at;
  }
  EXPECT_EQ(at, ops.size()) << "ops after the last stage";
}

TEST_F(Fixture, EveryLayerIsPlaced) {
  constexpr const char *kEight = R"(
name: eight
nodes:
  - name: n0
    devices: [{kind: A100-SXM4-80GB, count: 4}]
    interconnect: NVLink3
  - name: n1
    devices: [{kind: V100-SXM2-32GB, count: 4}]
    interconnect: NVLink2
network: 100GbE
)";
  Cluster c = cluster(kEight);
  for (auto [layers, stages] : {std::pair{10, 3}, std::pair{30, 4}}) {
    auto m = parse(mlpModel(layers, 8, 32, 128, 512));
    ASSERT_TRUE(m);
    SearchOptions options;
    options.stages = stages;
    options.mode = Mode::Training;
    auto r = searchPlan(*m, c, model, options);
    ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
    ASSERT_EQ(r->best.plan.stages.size(), static_cast<size_t>(stages));
    expectWholeLayers(funcOf(*m), r->best.plan);
    // Every layer lands in one stage: the layer counts add up.
    int placed = 0;
    for (const StagePrediction &s : r->best.prediction.stages)
      placed += s.ops.size();
    EXPECT_EQ(placed, layers * 6);
  }
}

TEST_F(Fixture, NeverSlowerThanBaselinesAndFits) {
  auto m = parse(mlpModel(4, 16, 64, 512, 2048));
  ASSERT_TRUE(m);
  for (const char *yaml : {kFourA100, kMixedBox})
    for (Mode mode : {Mode::Inference, Mode::Training}) {
      Cluster c = cluster(yaml);
      SearchOptions options;
      options.mode = mode;
      auto r = searchPlan(*m, c, model, options);
      ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
      EXPECT_TRUE(r->best.prediction.memoryProblems.empty());
      for (const Baseline &b : r->baselines)
        if (b.fits()) {
          EXPECT_LE(r->best.prediction.stepTime,
                    b.prediction->stepTime * (1 + 1e-12))
              << b.name;
        }
      auto again = simulate(*m, c, r->best.plan, model);
      ASSERT_TRUE(static_cast<bool>(again));
      EXPECT_DOUBLE_EQ(again->stepTime, r->best.prediction.stepTime);
    }
}

TEST_F(Fixture, UnevenBatchSplitFollowsSpeed) {
  // One A100 and one V100 in one node, a matrix-product-bound model in
  // inference: data parallelism gives the A100 the larger share, about in the
  // ratio of their float32 peaks (19.5 : 15.7 TFLOP/s, the datasheets).
  constexpr const char *kPair = R"(
name: pair
nodes:
  - name: n0
    devices:
      - {kind: A100-SXM4-80GB, count: 1}
      - {kind: V100-SXM2-32GB, count: 1}
    interconnect: PCIe4
)";
  Cluster c = cluster(kPair);
  auto m = parse(mlpModel(2, 64, 128, 1024, 4096));
  ASSERT_TRUE(m);
  SearchOptions options;
  options.stages = 1;
  auto r = searchPlan(*m, c, model, options);
  ASSERT_TRUE(static_cast<bool>(r)) << errorOf(r.takeError());
  const Stage &s = r->best.plan.stages[0];
  ASSERT_EQ(s.data, 2) << r->best.description;
  ASSERT_EQ(s.batchShares.size(), 2u);
  double a100 = s.devices[0] == 0 ? s.batchShares[0] : s.batchShares[1];
  double v100 = s.devices[0] == 0 ? s.batchShares[1] : s.batchShares[0];
  EXPECT_EQ(a100 + v100, 64);
  EXPECT_NEAR(a100 / v100, 19.5 / 15.7, 0.1);
}

TEST_F(Fixture, FitsNowhereSaysBytes) {
  // 4 layers of 16384 x 65536 float32 weights, 2 x 4.3 GB each: 34.4 GB of
  // weights, in training 4x that, on one 16 GB T4.
  auto m = parse(mlpModel(4, 1, 1, 16384, 65536));
  ASSERT_TRUE(m);
  Cluster c = Cluster::singleDevice("T4");
  SearchOptions options;
  options.mode = Mode::Training;
  auto r = searchPlan(*m, c, model, options);
  ASSERT_FALSE(static_cast<bool>(r));
  std::string msg = errorOf(r.takeError());
  EXPECT_NE(msg.find("no plan fits"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the model needs at least"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the 1 devices have 16000000000 bytes"), std::string::npos)
      << msg;
}

TEST_F(Fixture, RecomputationKeepsLayerInputs) {
  // 4 layers of x[8,4,8] -> MatMul 8x16 -> Add b -> Relu -> MatMul 16x8 ->
  // Add x -> LayerNorm g, two stages (layers 0-2 | layer 3), 4 microbatches
  // of 2 in 1F1B: stage 0 has 2 in flight. Per microbatch a [2,4,8] value is
  // 256 B, a [2,4,16] one 512 B. Hand computation for stage 0 (positions
  // 6L .. 6L+5 for layer L = MatMul, Add, Relu, MatMul, Add, LayerNorm; the
  // backward pass differentiates them last to first):
  //  - the gradient rules read each layer's input (256), Relu's input c
  //    (512), its result r (512) and LayerNorm's input e (256); x is the
  //    program's input (`inputs`: the step's [8,4,8], 1024 B), not an
  //    activation. Kept per microbatch without recomputation: n0, n1 and
  //    3 x 1280 = 4352 B; with it, only the layer inputs n0, n1 = 512 B, and
  //    each layer's
  //    c, r, e rebuilt when the backward pass reaches the layer's last op
  //    (live there: e, r, c until their readers at 6L+5, 6L+3, 6L+2).
  //  - parameter gradients live from their parameter's last use on: 3 x
  //    (w1 512 + b1 64 + w2 512 + g 32) = 3360 B at position 0; activation
  //    gradients: at 6L+3 the gradient of d (256), the written one of r
  //    (512) and, in layers 1 and 2, that of n(L-1) (256).
  //  - with recomputation the backward pass peaks at position 3 (layer 0's
  //    second MatMul): rebuilt c0 512 + r0 512 = 1024 B of activations;
  //    parameter gradients 3360 - 512 - 64 = 2784 B and activation gradients
  //    768 B (elsewhere less: at position 15, layer 2's second MatMul, 512 +
  //    1024 + (544 + 1024) = 3104 < 4576).
  //  - without it, at position 15: n0, n1 512 + layers 0 and 1's 2560 + c2,
  //    r2 1024 = 4096 B of activations; parameter gradients 32 + 512 = 544 B,
  //    activation gradients 1024 B (at position 3: 1024 + 3552 = 4576 <
  //    5664).
  //  - the other microbatch in flight keeps all of its kept values; with
  //    several microbatches a whole set of parameter gradients (3360 B)
  //    sums the earlier ones'.
  // So activations 512 + 1024 = 1536 B and gradients 3552 + 3360 = 6912 B
  // with recomputation; 4352 + 4096 = 8448 B and 1568 + 3360 = 4928 B
  // without.
  auto m = parse(mlpModel(4, 8, 4, 8, 16));
  ASSERT_TRUE(m);
  Cluster c = cluster(kFourA100);
  auto ops = listPlanOps(funcOf(*m));
  for (bool recompute : {false, true}) {
    Plan plan;
    plan.mode = Mode::Training;
    plan.microbatches = 4;
    Stage first, second;
    first.firstOp = ops.front().second;
    first.lastOp = "/layers.2/norm/LayerNormalization";
    first.devices = {0};
    first.recompute = recompute;
    second.firstOp = "/layers.3/fc1/MatMul";
    second.lastOp = ops.back().second;
    second.devices = {1};
    plan.stages = {first, second};
    auto pred = simulate(*m, c, plan, model);
    ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
    const DeviceMemory &mem = pred->devices[0].memory;
    EXPECT_DOUBLE_EQ(mem.activations, recompute ? 1536.0 : 8448.0)
        << "recompute " << recompute;
    EXPECT_DOUBLE_EQ(mem.inputs, 1024.0);
    EXPECT_DOUBLE_EQ(mem.gradients, recompute ? 6912.0 : 4928.0)
        << "recompute " << recompute;
  }
}

TEST_F(Fixture, LayerNames) {
  EXPECT_EQ(layerOf("/m/transformer/h.3/attn/MatMul"), "/m/transformer/h.3");
  EXPECT_EQ(layerOf("/model/layers.12/mlp/Mul"), "/model/layers.12");
  EXPECT_EQ(layerOf("/blocks/blocks.4/conv1/Conv"), "/blocks/blocks.4");
  EXPECT_EQ(layerOf("/0/Gemm"), "/0");
  EXPECT_EQ(layerOf("/lm_head/MatMul"), "");
  EXPECT_EQ(layerOf("Identity_0"), "");
}

} // namespace
