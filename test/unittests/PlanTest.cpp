//===- PlanTest.cpp - plans, the pipeline schedule and memory by hand -----===//

#include "hetpar/Plan/Plan.h"
#include "hetpar/Cluster/Cluster.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/Sharding.h"
#include "hetpar/Plan/Simulator.h"
#include "hetpar/Search/Search.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include "TestClusters.h"

using namespace mlir;
using namespace hetpar;
using hetpar::test::kFourA100;

namespace {

std::string errorOf(llvm::Error err) { return llvm::toString(std::move(err)); }

TEST(Schedule, GPipeBubbleIsHandFormula) {
  // p = 2 stages, m = 4 microbatches, 1 s per forward, no transfer time:
  // the last task ends at (m + p - 1) * 1 = 5 s; the stages compute 8 s of the
  // 2 * 5 = 10: bubble 0.2 = (p - 1) / (m + p - 1).
  auto tasks =
      schedulePipeline(2, 4, Schedule::GPipe, false, {1, 1}, {0, 0}, {0});
  ASSERT_EQ(tasks.size(), 8u);
  double end = 0;
  for (auto &t : tasks)
    end = std::max(end, t.end);
  EXPECT_DOUBLE_EQ(end, 5.0);
  EXPECT_DOUBLE_EQ(bubbleFraction(tasks, 2), 0.2);
  // Training with a backward twice the forward: (m + p - 1) * (1 + 2) = 15 s,
  // busy 2 * 4 * 3 = 24 of 30: bubble 0.2 again, for GPipe and for 1F1B.
  for (Schedule s : {Schedule::GPipe, Schedule::OneFOneB}) {
    auto train = schedulePipeline(2, 4, s, true, {1, 1}, {2, 2}, {0});
    ASSERT_EQ(train.size(), 16u);
    double last = 0;
    for (auto &t : train)
      last = std::max(last, t.end);
    EXPECT_DOUBLE_EQ(last, 15.0) << getScheduleName(s).str();
    EXPECT_DOUBLE_EQ(bubbleFraction(train, 2), 0.2) << getScheduleName(s).str();
  }
  // A transfer between the stages delays the second stage: 0.5 s per hop.
  auto late =
      schedulePipeline(2, 4, Schedule::GPipe, false, {1, 1}, {0, 0}, {0.5});
  double lastEnd = 0;
  for (auto &t : late)
    lastEnd = std::max(lastEnd, t.end);
  EXPECT_DOUBLE_EQ(lastEnd, 5.5);
}

/// Microbatches whose forward has run and backward has not, at most, on
/// `stage`.
int peakInFlight(const std::vector<ScheduledTask> &tasks, int stage) {
  std::vector<ScheduledTask> mine;
  for (auto &t : tasks)
    if (t.stage == stage)
      mine.push_back(t);
  std::sort(mine.begin(), mine.end(),
            [](auto &a, auto &b) { return a.start < b.start; });
  int live = 0, peak = 0;
  for (auto &t : mine) {
    live += t.backward ? -1 : 1;
    peak = std::max(peak, live);
  }
  return peak;
}

TEST(Schedule, OneFOneBHoldsFewerMicrobatches) {
  // p = 4, m = 8: GPipe runs every forward before any backward, so each stage
  // holds 8; 1F1B's stage s holds p - s (4, 3, 2, 1).
  auto gpipe = schedulePipeline(4, 8, Schedule::GPipe, true, {1, 1, 1, 1},
                                {2, 2, 2, 2}, {0, 0, 0});
  auto ofob = schedulePipeline(4, 8, Schedule::OneFOneB, true, {1, 1, 1, 1},
                               {2, 2, 2, 2}, {0, 0, 0});
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(peakInFlight(gpipe, s), 8);
    EXPECT_EQ(peakInFlight(ofob, s), 4 - s);
    EXPECT_EQ(inFlightMicrobatches(s, 4, 8, Schedule::GPipe, true), 8);
    EXPECT_EQ(inFlightMicrobatches(s, 4, 8, Schedule::OneFOneB, true), 4 - s);
  }
  // Same step time: (m + p - 1) * 3 = 33 s.
  double a = 0, b = 0;
  for (auto &t : gpipe)
    a = std::max(a, t.end);
  for (auto &t : ofob)
    b = std::max(b, t.end);
  EXPECT_DOUBLE_EQ(a, 33.0);
  EXPECT_DOUBLE_EQ(b, 33.0);
}

TEST(Schedule, SplitProportionally) {
  EXPECT_EQ(splitProportionally(8, {1, 1}), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(splitProportionally(8, {3, 1}), (std::vector<int64_t>{6, 2}));
  EXPECT_EQ(splitProportionally(10, {1, 1, 1}),
            (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(splitProportionally(3, {100, 1, 1}),
            (std::vector<int64_t>{1, 1, 1}));
  EXPECT_TRUE(splitProportionally(2, {1, 1, 1}).empty());
}

/// A 2-layer MLP: x[8x16] -> MatMul 16x32 -> Relu -> MatMul 32x4.
constexpr const char *kMLP = R"(
func.func @mlp(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %w1 = onnx.Constant dense<0.5> : tensor<16x32xf32>
  %w2 = onnx.Constant dense<0.25> : tensor<32x4xf32>
  %0 = onnx.MatMul(%x, %w1) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("mm1")
  %1 = onnx.Relu(%0) : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
  %2 = onnx.MatMul(%1, %w2) : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc("mm2")
  return %2 : tensor<8x4xf32>
}
)";

constexpr const char *kTwoA100 = R"(
name: two
nodes:
  - name: n0
    devices: [{kind: A100-SXM4-80GB, count: 2}]
)";

struct SimulatorTest : ::testing::Test {
  SimulatorTest() {
    registry.insert<func::FuncDialect, onnx::ONNXDialect>();
    ctx = std::make_unique<MLIRContext>(registry);
    module = parseSourceString<ModuleOp>(kMLP, ctx.get());
    auto c = parseCluster(kTwoA100, "two.yaml");
    EXPECT_TRUE(static_cast<bool>(c));
    cluster = std::move(*c);
  }
  Plan plan(llvm::StringRef json) {
    auto p = parsePlan(json, "plan.json");
    EXPECT_TRUE(static_cast<bool>(p)) << (p ? "" : errorOf(p.takeError()));
    return p ? std::move(*p) : Plan();
  }
  std::string simulateError(llvm::StringRef json) {
    auto pred = simulate(*module, cluster, plan(json), model);
    return pred ? "" : errorOf(pred.takeError());
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  Cluster cluster;
  DefaultCostModel model{CostParams::defaults()};
};

TEST_F(SimulatorTest, StageMemoryUnderOneFOneBAndGPipe) {
  // Stage 0 = mm1 + relu on device 0, stage 1 = mm2 on device 1; training,
  // m = 4 microbatches of 2 samples. What the gradient rules read, per
  // microbatch: stage 0 keeps x for dW1 = x^T dY (2 x 16 floats, 128 bytes,
  // in the program's input buffer: counted in `inputs`, the step's 8 rows,
  // 512 bytes, on device 0 alone: stage 1 reads no graph input, so its
  // device takes none, stageTakesInput) and relu's input for its mask (2 x 32
  // floats, 256 bytes): 256 bytes of activations;
  // stage 1 keeps relu's result for dW2 (256 bytes), and mm2's result and the
  // loss's buffer of its size (32 bytes each): 320 bytes.
  // Each stage's peak is while its first op is differentiated: the other
  // microbatches in flight keep all of theirs, this one what mm1 (mm2) still
  // reads, x (relu's result), beside the finished gradient of w1 (w2).
  // Weights of stage 0: w1, 16 x 32 x 4 = 2048 bytes; Adam's two float32
  // moments 8 bytes x 512 parameters = 4096 bytes (float32 parameters are
  // their own master copy). Gradients: the sum of the earlier microbatches'
  // w1 gradients and this one's (2 x 2048), and the gradient of mm1's result
  // (relu's backward wrote it, mm1's reads it: 2 x 32 x 4 = 256): 4352.
  const char *base = R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]},
                                    {"ops": ["mm2"], "devices": [1]}],
                         "microbatches": 4, "mode": "training", "schedule": "%s"})";
  char text[512];
  double activations[2];
  for (int k = 0; k < 2; ++k) {
    snprintf(text, sizeof(text), base, k == 0 ? "gpipe" : "1f1b");
    auto pred = simulate(*module, cluster, plan(text), model);
    ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
    const DevicePrediction &d0 = pred->devices[0];
    EXPECT_EQ(d0.id, 0);
    EXPECT_DOUBLE_EQ(d0.memory.weights, 2048);
    EXPECT_DOUBLE_EQ(d0.memory.gradients, 2 * 2048 + 256);
    EXPECT_DOUBLE_EQ(d0.memory.optimizer, 4096);
    EXPECT_DOUBLE_EQ(d0.memory.inputs, 512);
    EXPECT_DOUBLE_EQ(pred->devices[1].memory.inputs, 0);
    activations[k] = d0.memory.activations;
    // Stage 1: 4 microbatches in flight under GPipe, 3 x 320 + 256 bytes; 1
    // under 1F1B, 256 bytes; with w2's summed and current gradients, 2 x 32 x
    // 4 x 4 = 1024 bytes, and relu's result's gradient that differentiating
    // mm2 writes, 2 x 32 x 4 = 256 bytes.
    EXPECT_DOUBLE_EQ(pred->devices[1].memory.activations,
                     k == 0 ? 3 * 320 + 256 : 256);
    EXPECT_DOUBLE_EQ(pred->devices[1].memory.gradients, 1024 + 256);
    EXPECT_TRUE(pred->memoryProblems.empty());
  }
  // Stage 0: GPipe 3 x 256 bytes, 1F1B (p - 0 = 2 in flight) 256, and
  // nothing of this microbatch's at the peak (x is an input).
  EXPECT_DOUBLE_EQ(activations[0], 3 * 256);
  EXPECT_DOUBLE_EQ(activations[1], 256);
}

/// Two 4096 x 4096 float32 layers (64 MiB of parameters each) for the
/// ZeRO-2 test: gradients large beside one 25 MiB bucket.
constexpr const char *kWideMLP = R"(
func.func @wide(%x: tensor<4x4096xf32>) -> tensor<4x4096xf32> {
  %w1 = onnx.Constant dense<0.5> : tensor<4096x4096xf32>
  %w2 = onnx.Constant dense<0.25> : tensor<4096x4096xf32>
  %0 = onnx.MatMul(%x, %w1) : (tensor<4x4096xf32>, tensor<4096x4096xf32>) -> tensor<4x4096xf32> loc("mm1")
  %1 = onnx.MatMul(%0, %w2) : (tensor<4x4096xf32>, tensor<4096x4096xf32>) -> tensor<4x4096xf32> loc("mm2")
  return %1 : tensor<4x4096xf32>
}
)";

TEST_F(SimulatorTest, ZeroTwoShardsTheSummedGradientsWhereOneDoesNotFit) {
  // Stage 0 (mm1) over two replicas with equal state shares, stage 1 (mm2)
  // on a third device, 2 microbatches of 2 samples (one per replica).
  // ZeRO-1's gradient bytes peak while mm1 is differentiated: the whole
  // running sum of w1's gradient and this microbatch's (2 x 67108864) and
  // the received gradient of mm1's result (1 x 4096 x 4 = 16384). ZeRO-2's
  // peak is after the backward part, when this microbatch's whole gradient
  // of w1 and one 25 MiB bucket of it packed for the reduce-scatter
  // (67108864 + 26214400) are held beside half the sum (33554432), and no
  // activation (x's row, kept for dW1, is the program's input, in `inputs`):
  // 7340032 + 16384 bytes less.
  OwningOpRef<ModuleOp> wide = parseSourceString<ModuleOp>(kWideMLP, ctx.get());
  ASSERT_TRUE(wide);
  auto three = parseCluster(R"(
name: three
nodes:
  - name: n0
    devices: [{kind: A100-SXM4-80GB, count: 3}]
)",
                            "three.yaml");
  ASSERT_TRUE(static_cast<bool>(three)) << errorOf(three.takeError());
  const char *base = R"({"stages": [{"ops": ["mm1"], "devices": [0, 1],
                                     "data": 2, "zero": %d},
                                    {"ops": ["mm2"], "devices": [2]}],
                         "microbatches": 2, "mode": "training"})";
  char text[512];
  double total[3], gradients[3];
  for (int zero = 0; zero < 3; ++zero) {
    snprintf(text, sizeof(text), base, zero);
    auto pred = simulate(*wide, *three, plan(text), model);
    ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
    total[zero] = pred->devices[0].memory.total();
    gradients[zero] = pred->devices[0].memory.gradients;
  }
  EXPECT_DOUBLE_EQ(gradients[1] - gradients[2], 7340032 + 16384);
  EXPECT_DOUBLE_EQ(gradients[0], gradients[1]);
  // Stage 0's devices cut between the two: the unsharded plan does not
  // fit, ZeRO-1 does not either, ZeRO-2 does, and is what the planner takes.
  for (Device &d : three->devices)
    if (d.id != 2)
      d.memoryBytes = (total[1] + total[2]) / 2;
  snprintf(text, sizeof(text), base, 0);
  Plan unsharded = plan(text);
  auto pred = simulate(*wide, *three, unsharded, model);
  ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
  EXPECT_FALSE(pred->memoryProblems.empty());
  func::FuncOp func = *wide->getOps<func::FuncOp>().begin();
  OpCatalog catalog(func);
  auto zero =
      shardStateIfNeeded(catalog, func, *three, unsharded, *pred, model);
  ASSERT_TRUE(zero.has_value());
  EXPECT_EQ(zero->first.stages[0].zero, 2);
  EXPECT_EQ(zero->first.stages[1].zero, 0);
  EXPECT_TRUE(zero->second.memoryProblems.empty());
}

TEST_F(SimulatorTest, InferenceMemoryFollowsLiveness) {
  // One stage, one microbatch of 8 samples. While mm1 runs: x (8 x 16 x 4 =
  // 512 B) + its result (1024 B) = 1536; x is then dead. While relu runs:
  // mm1's result + relu's (1024 B each) = 2048, the peak; mm2 adds 128 B
  // after mm1's result is freed.
  auto pred = simulate(*module, cluster,
                       plan(R"({"stages": [{"first": "mm1", "last": "mm2",
                                            "devices": [0]}]})"),
                       model);
  ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
  EXPECT_DOUBLE_EQ(pred->devices[0].memory.activations, 2048);
  // Weights: 2048 + 32 x 4 x 4 = 2560 bytes; no gradients in inference.
  EXPECT_DOUBLE_EQ(pred->devices[0].memory.weights, 2560);
  EXPECT_DOUBLE_EQ(pred->devices[0].memory.gradients, 0);
  // FLOP: 2*8*32*16 + 8*32 + 2*8*4*32 = 8192 + 256 + 2048 = 10496.
  EXPECT_DOUBLE_EQ(pred->flopsPerStep, 10496);
  EXPECT_EQ(pred->batch, 8);
}

TEST_F(SimulatorTest, DataParallelReplicasSplitTheBatchAndSyncGradients) {
  // Two replicas with shares 3:1 of 8 samples: 6 and 2. Training adds one
  // all-reduce of the 2560 weight bytes over devices 0 and 1 (NVLink 3):
  // 8.4 us + 2 * 1 * 3.4 us + 2 * 1/2 * 2560 / 300e9 (ring; the tree is
  // 8.4 + 2 * 3.4 us + 2 * 2560 / 300e9, slower).
  auto pred = simulate(*module, cluster,
                       plan(R"({"stages": [{"first": "mm1", "last": "mm2",
                                            "devices": [0, 1], "data": 2,
                                            "batch_shares": [3, 1]}],
                                "mode": "training"})"),
                       model);
  ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
  EXPECT_NEAR(pred->stages[0].gradientSync, 8.4e-6 + 6.8e-6 + 2560 / 300e9,
              1e-12);
  // Replica 0 (6 samples) keeps 6/2 = 3x the activations of replica 1.
  EXPECT_NEAR(pred->devices[0].memory.activations,
              3 * pred->devices[1].memory.activations, 1e-9);
}

TEST_F(SimulatorTest, TensorShardingSplitsWorkAndAddsCollective) {
  // mm1's 32 output columns split 24:8 over devices 0 and 1, all-gathered.
  auto pred = simulate(*module, cluster,
                       plan(R"({"stages": [{"first": "mm1", "last": "mm2",
                                            "devices": [0, 1], "tensor": 2,
                                            "shardings": {"mm1": {"dim": 1,
                                              "parts": [24, 8],
                                              "collective": "all_gather"}}}]})"),
                       model);
  ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
  // Device 0 holds 3/4 of w1 (1536 B) and all of w2 (512 B); device 1 1/4.
  EXPECT_DOUBLE_EQ(pred->devices[0].memory.weights, 1536 + 512);
  EXPECT_DOUBLE_EQ(pred->devices[1].memory.weights, 512 + 512);
  // The all-gather rebuilds 8 x 32 x 4 = 1024 bytes on each rank (ring over
  // 2 ranks on NVLink 3): 8.4 + 3.4 us + 1/2 * 1024 / 300e9.
  EXPECT_NEAR(pred->stages[0].forwardCollectives,
              8.4e-6 + 3.4e-6 + 0.5 * 1024 / 300e9, 1e-12);
}

TEST_F(SimulatorTest, SplitValuesTravelToTheNextStageInParts) {
  // Stage 0 splits mm1 and its ReLU by columns 16:16 over devices 0 and 1;
  // stage 1's mm2 on devices 2 and 3 wants them split by its contraction
  // 20:12. The 8 x 32 x 4 = 1024 bytes leave stage 0 split (no all-gather)
  // and each device moves at most half of them (exitSplit). With mm2 not
  // sharded they leave gathered (8.4 + 3.4 us + 1/2 * 1024 / 300e9, as
  // above) and travel whole.
  auto four = parseCluster(kFourA100, "four.yaml");
  ASSERT_TRUE(static_cast<bool>(four)) << errorOf(four.takeError());
  auto twoStages = [&](llvm::StringRef mm2) {
    std::string json = R"({"stages": [
      {"first": "mm1", "last": "relu", "devices": [0, 1], "tensor": 2,
       "shardings": {"mm1": {"dim": 1, "parts": [16, 16]},
                     "relu": {"dim": 1, "parts": [16, 16]}}},
      {"first": "mm2", "last": "mm2", "devices": [2, 3], "tensor": 2,
       "shardings": {)" +
                       mm2.str() + "}}]}";
    auto pred = simulate(*module, *four, plan(json), model);
    EXPECT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
    return pred ? std::move(*pred) : Prediction();
  };
  Prediction split = twoStages(
      R"("mm2": {"dim": -1, "parts": [20, 12], "collective": "all_reduce"})");
  Prediction whole = twoStages("");
  EXPECT_DOUBLE_EQ(split.stages[0].forwardCollectives, 0);
  EXPECT_NEAR(whole.stages[0].forwardCollectives,
              8.4e-6 + 3.4e-6 + 0.5 * 1024 / 300e9, 1e-12);
  // Send/recv on NVLink 3: 8.4 + 3.4 us + bytes / 300e9 (docs/cost-model.md).
  EXPECT_NEAR(split.stages[0].transferOut, 8.4e-6 + 3.4e-6 + 512 / 300e9,
              1e-12);
  EXPECT_NEAR(whole.stages[0].transferOut, 8.4e-6 + 3.4e-6 + 1024 / 300e9,
              1e-12);
}

TEST_F(SimulatorTest, SplitValuesTravelOnlyWhereEveryUserWantsTheSplit) {
  // y = mm2(relu) + relu in stage 1: the Add needs relu whole, so relu
  // leaves stage 0 gathered (8.4 + 3.4 us + 1/2 * 1024 / 300e9) although mm2
  // wants it split as it is: received split, it would need a gather there
  // that stage 1's timing, which takes values from outside the stage as they
  // arrive, does not charge.
  auto four = parseCluster(kFourA100, "four.yaml");
  ASSERT_TRUE(static_cast<bool>(four)) << errorOf(four.takeError());
  auto residual = parseSourceString<ModuleOp>(R"(
func.func @res(%x: tensor<8x16xf32>) -> tensor<8x32xf32> {
  %w1 = onnx.Constant dense<0.5> : tensor<16x32xf32>
  %w2 = onnx.Constant dense<0.25> : tensor<32x32xf32>
  %0 = onnx.MatMul(%x, %w1) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("mm1")
  %1 = onnx.Relu(%0) : (tensor<8x32xf32>) -> tensor<8x32xf32> loc("relu")
  %2 = onnx.MatMul(%1, %w2) : (tensor<8x32xf32>, tensor<32x32xf32>) -> tensor<8x32xf32> loc("mm2")
  %3 = onnx.Add(%2, %1) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("add")
  return %3 : tensor<8x32xf32>
}
)",
                                              ctx.get());
  ASSERT_TRUE(residual);
  auto pred = simulate(*residual, *four, plan(R"({"stages": [
      {"first": "mm1", "last": "relu", "devices": [0, 1], "tensor": 2,
       "shardings": {"mm1": {"dim": 1, "parts": [16, 16]},
                     "relu": {"dim": 1, "parts": [16, 16]}}},
      {"first": "mm2", "last": "add", "devices": [2, 3], "tensor": 2,
       "shardings": {"mm2": {"dim": -1, "parts": [20, 12],
                             "collective": "all_reduce"}}}]})"),
                       model);
  ASSERT_TRUE(static_cast<bool>(pred)) << errorOf(pred.takeError());
  EXPECT_NEAR(pred->stages[0].forwardCollectives,
              8.4e-6 + 3.4e-6 + 0.5 * 1024 / 300e9, 1e-12);
}

TEST(AfterCollective, ReduceScatterNeedsAnIndexPerDevice) {
  // Partial sums reduce-scattered over 3 devices: split along the last
  // dimension in the op's shares where it has at least 3 indices, else
  // all-reduced (the partition does the same, DistLocalize.cpp).
  MLIRContext ctx;
  Layout partial;
  partial.kind = Layout::Partial;
  std::vector<double> shares = {0.5, 0.25, 0.25};
  auto f32 = Float32Type::get(&ctx);
  Layout wide = afterCollective(partial, Collective::ReduceScatter,
                                RankedTensorType::get({8, 4}, f32), shares);
  EXPECT_EQ(wide.kind, Layout::Split);
  EXPECT_EQ(wide.dim, 1);
  EXPECT_EQ(wide.fractions, shares);
  Layout narrow = afterCollective(partial, Collective::ReduceScatter,
                                  RankedTensorType::get({8, 2}, f32), shares);
  EXPECT_EQ(narrow.kind, Layout::Replicated);
}

TEST_F(SimulatorTest, BadPlansSayWhatIsWrong) {
  EXPECT_EQ(
      simulateError(R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]},
                                          {"ops": ["mm9"], "devices": [1]}]})"),
      "stage 1: no op is named 'mm9'");
  EXPECT_EQ(simulateError(
                R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]}]})"),
            "1 ops are in no stage: 'mm2'");
  EXPECT_EQ(
      simulateError(R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]},
                                          {"ops": ["mm2"], "devices": [7]}]})"),
      "stage 1: the cluster has no device 7");
  EXPECT_EQ(
      simulateError(R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]},
                                          {"ops": ["mm2"], "devices": [0]}]})"),
      "device 0 is in stages 0 and 1");
  EXPECT_EQ(simulateError(R"({"stages": [{"ops": ["mm1", "relu", "mm2"],
                                          "devices": [1, 1], "data": 2}]})"),
            "stage 0: device 1 is listed twice");
  EXPECT_EQ(
      simulateError(R"({"stages": [{"ops": ["mm2"], "devices": [0]},
                                          {"ops": ["mm1", "relu"], "devices": [1]}]})"),
      "op 'mm2' (stage 0) uses a value of op 'relu' in the later stage 1; "
      "stages must follow the model's order");
  EXPECT_EQ(simulateError(R"({"stages": [{"ops": ["mm1", "relu", "mm2"],
                                          "devices": [0]}], "microbatches": 3})"),
            "3 microbatches do not divide the batch of 8");
  EXPECT_EQ(simulateError(R"({"stages": [{"ops": ["mm1", "relu", "mm2"],
                                          "devices": [0, 1], "data": 2,
                                          "batch_shares": [2, 1]}]})"),
            "stage 0: replica 0 gets 5.33 of a microbatch of 8 samples; every "
            "replica needs a whole number of samples, at least one");
}

TEST_F(SimulatorTest, AnnotationRefusesWhatTheSimulatorRefuses) {
  // One check (placePlan) for both: a plan that leaves an op out gets the
  // same message, and the module stays unannotated.
  const char *missing =
      R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]}]})";
  llvm::Error err = annotateModule(*module, plan(missing), &cluster);
  EXPECT_EQ(errorOf(std::move(err)), simulateError(missing));
  EXPECT_FALSE((*module)->hasAttr("dist.plan"));
  module->walk([](Operation *op) {
    EXPECT_FALSE(op->hasAttr("dist.stage_id"))
        << op->getName().getStringRef().str();
  });
  const char *devices =
      R"({"stages": [{"ops": ["mm1", "relu"], "devices": [0]},
                     {"ops": ["mm2"], "devices": [0]}]})";
  EXPECT_EQ(errorOf(annotateModule(*module, plan(devices), &cluster)),
            "device 0 is in stages 0 and 1");
}

TEST(PlanFormat, ErrorsNameFileLineAndField) {
  auto expectError = [](llvm::StringRef text, llvm::StringRef message) {
    auto p = parsePlan(text, "p.json");
    ASSERT_FALSE(static_cast<bool>(p));
    EXPECT_EQ(errorOf(p.takeError()), message.str());
  };
  expectError("{\"stages\": [{\"ops\": [\"a\"],\n \"devices\": [0, 1]}]}",
              "p.json:1:14: stages[0]: has 2 devices for data 1 x tensor 1");
  expectError("{\"stages\": [{\"ops\": [\"a\"], \"devices\": [0]}],\n"
              " \"schedule\": \"zigzag\"}",
              "p.json:2:14: schedule: must be gpipe or 1f1b, got 'zigzag'");
  expectError(
      "{\"stages\": [{\"ops\": [\"a\"], \"devices\": [0], \"colour\": 1}]}",
      "p.json:1:44: stages[0]: unknown field 'colour' (fields: ops, first, "
      "last, devices, data, tensor, batch_shares, shardings, recompute, "
      "zero, zero_shares, forward_time_s, backward_time_s)");
  expectError("{\"stages\": []}",
              "p.json: stages: a plan needs at least one stage");
  expectError(
      "{\"stages\": [{\"ops\": [\"a\"], \"devices\": [0],\n"
      "  \"tensor\": 1, \"shardings\": {\"a\": {\"parts\": [1, 1]}}}]}",
      "p.json:1:14: stages[0].shardings['a']: has 2 parts for tensor 1");
}

} // namespace
