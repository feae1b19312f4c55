//===- CostModelTest.cpp - the cost model against hand-worked values ------===//
//
// Every expected number below is worked out by hand in the comment above it,
// from the datasheet numbers of the catalog (lib/Cluster/Catalog.cpp) and the
// formulas and default constants of docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Cluster/Cluster.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace hetpar;

namespace {

struct CostModelTest : ::testing::Test {
  CostModelTest() {
    registry.insert<func::FuncDialect, onnx::ONNXDialect>();
    ctx = std::make_unique<MLIRContext>(registry);
  }

  /// The first op of the function in `text` (after parsing it).
  Operation *firstOp(llvm::StringRef text) {
    module = parseSourceString<ModuleOp>(text, ctx.get());
    EXPECT_TRUE(module);
    func::FuncOp f = *module->getOps<func::FuncOp>().begin();
    return &f.getBody().front().front();
  }

  static Device device(llvm::StringRef kind) {
    Cluster c = Cluster::singleDevice(kind);
    return c.devices.front();
  }

  Cluster cluster(llvm::StringRef yaml) {
    auto c = parseCluster(yaml, "test.yaml");
    EXPECT_TRUE(static_cast<bool>(c))
        << (c ? "" : llvm::toString(c.takeError()));
    return c ? std::move(*c) : Cluster();
  }

  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
  OwningOpRef<ModuleOp> module;
  DefaultCostModel model{CostParams::defaults()};
};

constexpr double kGB = 1e9;

/// loadProfile on `text` written to a temporary file.
llvm::Error loadProfileText(llvm::StringRef text, CostParams &params) {
  llvm::SmallString<128> path;
  int fd;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("profile", "json", fd, path))
    return llvm::errorCodeToError(ec);
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << text;
  }
  llvm::Error err = loadProfile(path, params);
  llvm::sys::fs::remove(path);
  return err;
}

/// C[4096x4096] = A[4096x4096] B[4096x4096] in float32.
constexpr const char *kGemm4096 = R"(
    func.func @f(%a: tensor<4096x4096xf32>, %b: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
      %c = onnx.MatMul(%a, %b) : (tensor<4096x4096xf32>, tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
      return %c : tensor<4096x4096xf32>
    })";

TEST_F(CostModelTest, GemmOnTwoDeviceKinds) {
  // C[4096x4096] = A[4096x4096] B[4096x4096] in float32:
  // 2 * 4096^3 = 137438953472 FLOP; bytes moved 3 * 4096^2 * 4 = 201326592.
  Operation *op = firstOp(kGemm4096);
  auto work = measureOp(op, FloatMode::F32);
  ASSERT_TRUE(work);
  EXPECT_EQ(work->cls, OpClass::MatMul);
  EXPECT_DOUBLE_EQ(work->flops, 137438953472.0);
  EXPECT_DOUBLE_EQ(work->activationBytes, 201326592.0);
  EXPECT_FALSE(work->tensorCores);
  // A100 (19.5 TFLOP/s fp32, efficiency 0.75 -> 14.625 TFLOP/s): compute-bound,
  // 137438953472 / 14.625e12 = 9.39754 ms; the memory side is 201326592 /
  // (2039e9 * 0.8) = 0.1234 ms. Plus one 5 us launch: 9.40254 ms.
  double a100 = model.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, false);
  EXPECT_NEAR(a100, 137438953472.0 / 14.625e12 + 5e-6, 1e-9);
  EXPECT_NEAR(a100, 9.40254e-3, 1e-7);
  // V100 (15.7 TFLOP/s, -> 11.775 TFLOP/s): 11.6721 ms + 5 us = 11.6771 ms.
  double v100 = model.computeTime(*work, device("V100-SXM2-32GB"), 1, 1, false);
  EXPECT_NEAR(v100, 11.6771e-3, 1e-7);
  // Half of the batch and a third of the columns: 1/6 of the FLOPs.
  double part =
      model.computeTime(*work, device("A100-SXM4-80GB"), 0.5, 1.0 / 3, false);
  EXPECT_NEAR(part, 137438953472.0 / 6 / 14.625e12 + 5e-6, 1e-9);
  // Backward: twice the forward FLOPs (dX and dW): 18.7951 ms + 5 us.
  double back = model.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, true);
  EXPECT_NEAR(back, 2 * 137438953472.0 / 14.625e12 + 5e-6, 1e-9);
}

TEST_F(CostModelTest, HalfPrecisionGemmUsesTensorCores) {
  // The same GEMM in float16 on an A100: 312 TFLOP/s * 0.75 = 234 TFLOP/s ->
  // 0.58735 ms; memory 100663296 B / (2039e9 * 0.8) = 0.0617 ms. + 5 us.
  Operation *op = firstOp(R"(
    func.func @f(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {
      %c = onnx.MatMul(%a, %b) : (tensor<4096x4096xf16>, tensor<4096x4096xf16>) -> tensor<4096x4096xf16>
      return %c : tensor<4096x4096xf16>
    })");
  auto work = measureOp(op, FloatMode::F32);
  ASSERT_TRUE(work);
  EXPECT_TRUE(work->tensorCores);
  EXPECT_NEAR(model.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, false),
              137438953472.0 / 234e12 + 5e-6, 1e-10);
}

TEST_F(CostModelTest, Float32HeldIn16BitsIsCountedAs16Bit) {
  // The float32 GEMM under a 16-bit compute dtype is the float16 GEMM above:
  // tensor cores, 3 * 4096^2 * 2 = 100663296 bytes, 0.58735 ms + 5 us.
  Operation *op = firstOp(kGemm4096);
  for (FloatMode dtype : {FloatMode::BF16, FloatMode::F16}) {
    auto work = measureOp(op, dtype);
    ASSERT_TRUE(work);
    EXPECT_TRUE(work->tensorCores);
    EXPECT_DOUBLE_EQ(work->activationBytes, 100663296.0);
    EXPECT_NEAR(model.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, false),
                137438953472.0 / 234e12 + 5e-6, 1e-10);
  }
  // Only float32 changes: an int64, a bool and a float16 element keep theirs.
  MLIRContext *ctx = op->getContext();
  EXPECT_EQ(elementBytes(Float32Type::get(ctx), FloatMode::BF16), 2);
  EXPECT_EQ(elementBytes(Float32Type::get(ctx), FloatMode::F32), 4);
  EXPECT_EQ(elementBytes(IntegerType::get(ctx, 64), FloatMode::BF16), 8);
  EXPECT_EQ(elementBytes(IntegerType::get(ctx, 1), FloatMode::F16), 1);
  EXPECT_EQ(elementBytes(Float16Type::get(ctx), FloatMode::F32), 2);
  // The module attribute is the one place the dtype is read from.
  auto module = op->getParentOfType<ModuleOp>();
  EXPECT_EQ(getComputeDtype(op), FloatMode::F32);
  setComputeDtype(module, FloatMode::BF16);
  EXPECT_EQ(getComputeDtype(op), FloatMode::BF16);
  module->setAttr(kComputeDtypeAttrName, StringAttr::get(ctx, "fp8"));
  EXPECT_EQ(getComputeDtype(op), std::nullopt);
}

TEST_F(CostModelTest, ElementwiseIsMemoryBound) {
  // Add of two 2^26-element float32 tensors: 3 * 2^28 bytes = 805306368 B at
  // 2039e9 * 0.67 B/s = 0.58948 ms (2^26 FLOP at 9.75 TFLOP/s is 6.9 us).
  Operation *op = firstOp(R"(
    func.func @f(%a: tensor<8192x8192xf32>, %b: tensor<8192x8192xf32>) -> tensor<8192x8192xf32> {
      %c = onnx.Add(%a, %b) : (tensor<8192x8192xf32>, tensor<8192x8192xf32>) -> tensor<8192x8192xf32>
      return %c : tensor<8192x8192xf32>
    })");
  auto work = measureOp(op, FloatMode::F32);
  ASSERT_TRUE(work);
  EXPECT_EQ(work->cls, OpClass::Elementwise);
  EXPECT_NEAR(model.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, false),
              805306368.0 / (2039e9 * 0.67) + 5e-6, 1e-10);
  // A straggler 1.3x slower takes 1.3x as long (launch overhead aside).
  Device slow = device("A100-SXM4-80GB");
  slow.slowdown = 1.3;
  EXPECT_NEAR(model.computeTime(*work, slow, 1, 1, false),
              1.3 * 805306368.0 / (2039e9 * 0.67) + 5e-6, 1e-10);
}

TEST_F(CostModelTest, AllReduceOverNVLinkAgainstTwoNodesOn100GbE) {
  Cluster one = cluster(R"(
name: one-box
nodes:
  - name: n0
    devices: [{kind: H100-SXM5-80GB, count: 8}]
    interconnect: NVLink4
)");
  Cluster two = cluster(R"(
name: two-boxes
nodes:
  - name: n0
    devices: [{kind: H100-SXM5-80GB, count: 4}]
    interconnect: NVLink4
    nics: 1
  - name: n1
    devices: [{kind: H100-SXM5-80GB, count: 4}]
    interconnect: NVLink4
    nics: 1
network: 100GbE
)");
  std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  // One box, ring over 8 GPUs on NVLink 4 (450 GB/s, 3.4 us per hop):
  // 8.4 us + 2 * 7 * 3.4 us + 2 * 7/8 * 1e9 / 450e9 = 56 us + 3.88889 ms
  // = 3.94489 ms (the tree, 8.4 + 2*3*3.4 us + 2e9/450e9 = 4.47 ms, is slower).
  double nvlink = model.collectiveTime(Collective::AllReduce, kGB, all, one);
  EXPECT_NEAR(nvlink, 8.4e-6 + 14 * 3.4e-6 + 1.75e9 / 450e9, 1e-9);
  EXPECT_NEAR(nvlink, 3.94489e-3, 1e-8);
  // Two boxes, hierarchical: reduce-scatter inside each box (4 GPUs),
  // 8.4 + 3 * 3.4 us + 3/4 * 1e9 / 450e9 = 1.68527 ms; all-reduce of each GPU's
  // 1/4 (250 MB) across the 2 boxes, the 4 rings sharing one 12.5 GB/s NIC
  // (3.125 GB/s each): 8.4 + 2 * 14 us + 2 * 1/2 * 250e6 / 3.125e9 = 80.0364
  // ms; all-gather inside the box, 1.68527 ms. Total 83.4070 ms.
  double hier = 2 * (8.4e-6 + 3 * 3.4e-6 + 0.75e9 / 450e9) +
                (8.4e-6 + 2 * 14e-6 + 250e6 / 3.125e9);
  double net = model.collectiveTime(Collective::AllReduce, kGB, all, two);
  EXPECT_NEAR(net, hier, 1e-9);
  EXPECT_NEAR(net, 83.4070e-3, 1e-7);
  // The flat ring crosses 100GbE: 8.4 + 14 * 14 us + 1.75e9 / 12.5e9 = 140.2
  // ms.
  EXPECT_NEAR(model.ringTime(Collective::AllReduce, kGB, 8, two.network),
              8.4e-6 + 14 * 14e-6 + 1.75e9 / 12.5e9, 1e-9);
  // Limited by the network: the cross-node step is 96% of the time, and the
  // whole is 21x the one-box time.
  EXPECT_GT((8.4e-6 + 2 * 14e-6 + 250e6 / 3.125e9) / net, 0.95);
  EXPECT_GT(net / nvlink, 20);
}

TEST_F(CostModelTest, OtherCollectives) {
  Cluster one = cluster(R"(
name: one-box
nodes:
  - name: n0
    devices: [{kind: A100-SXM4-80GB, count: 4}]
)");
  std::vector<int> all = {0, 1, 2, 3};
  // A100 SXM's default link is NVLink 3: 300 GB/s, 3.4 us.
  // All-gather whose result is 400 MB on each rank (100 MB from each of 4):
  // 8.4 + 3 * 3.4 us + 3/4 * 400e6 / 300e9 (= 1 ms).
  EXPECT_NEAR(model.collectiveTime(Collective::AllGather, 400e6, all, one),
              8.4e-6 + 3 * 3.4e-6 + 1e-3, 1e-9);
  // Send/recv of 300 MB between two GPUs: 8.4 + 3.4 us + 1 ms.
  EXPECT_NEAR(model.collectiveTime(Collective::SendRecv, 300e6, {0, 1}, one),
              8.4e-6 + 3.4e-6 + 1e-3, 1e-9);
  // Nothing to do on one device.
  EXPECT_EQ(model.collectiveTime(Collective::AllReduce, 1e9, {2}, one), 0.0);
}

TEST_F(CostModelTest, ProfileReplacesDatasheetNumbers) {
  CostParams params = CostParams::defaults();
  ASSERT_FALSE(static_cast<bool>(
      loadProfileText(R"({"devices": {"A100-SXM4-80GB": {"matmul_flops": 10e12,
              "launch_overhead": 1e-5}},
              "efficiency": {"memory": {"Elementwise": 0.5}}})",
                      params)));
  DefaultCostModel measured(params);
  Operation *op = firstOp(kGemm4096);
  auto work = measureOp(op, FloatMode::F32);
  // 137438953472 FLOP at the measured 10 TFLOP/s + the measured 10 us launch.
  EXPECT_NEAR(
      measured.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, false),
      137438953472.0 / 10e12 + 1e-5, 1e-10);
  EXPECT_DOUBLE_EQ(
      params.memoryEfficiency[static_cast<int>(OpClass::Elementwise)], 0.5);
}

TEST(KernelCurves, InterpolateLogLog) {
  // Points (1e6 FLOP, 10 us) and (1e9 FLOP, 1 ms): half-way in log(work)
  // (3.1623e7) lies half-way in log(time): sqrt(10 us * 1 ms) = 100 us.
  std::vector<std::pair<double, double>> pts = {{1e6, 10e-6}, {1e9, 1e-3}};
  EXPECT_NEAR(interpolateKernelTime(pts, std::sqrt(1e6 * 1e9)), 100e-6, 1e-12);
  // Below the first point: its time (the launch floor).
  EXPECT_DOUBLE_EQ(interpolateKernelTime(pts, 10), 10e-6);
  // Above the last: its rate (1e12 FLOP/s), 4e9 FLOP -> 4 ms.
  EXPECT_DOUBLE_EQ(interpolateKernelTime(pts, 4e9), 4e-3);
  EXPECT_DOUBLE_EQ(interpolateKernelTime(pts, 1e9), 1e-3);
}

TEST_F(CostModelTest, ProfileCurvesReplaceTheRoofline) {
  CostParams params = CostParams::defaults();
  ASSERT_FALSE(static_cast<bool>(
      loadProfileText(R"({"devices": {"A100-SXM4-80GB": {"curves": {
              "MatMul": [[1e6, 10e-6], [1e12, 0.1]]}}}})",
                      params)));
  DefaultCostModel measured(params);
  Operation *op = firstOp(kGemm4096);
  auto work = measureOp(op, FloatMode::F32);
  // 137438953472 FLOP on the line from (1e6, 1e-5) to (1e12, 0.1), which is
  // t = 1e-5 * (work / 1e6)^(2/3): 1e-5 * 137438.953472^(2/3) = 26.6 ms. No
  // launch term: the measured times include it.
  double expected = 1e-5 * std::pow(137438.953472, 2.0 / 3);
  EXPECT_NEAR(
      measured.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, false),
      expected, 1e-9);
  // Backward: two GEMMs of the same size.
  EXPECT_NEAR(measured.computeTime(*work, device("A100-SXM4-80GB"), 1, 1, true),
              2 * expected, 1e-9);
  // Another kind keeps the datasheet roofline.
  EXPECT_NEAR(
      measured.computeTime(*work, device("V100-SXM2-32GB"), 1, 1, false),
      11.6771e-3, 1e-7);
}

TEST_F(CostModelTest, BadProfilesAreRejected) {
  CostParams params = CostParams::defaults();
  llvm::Error err =
      loadProfileText(R"({"devices": {"T4": {"matmul_flops": -1}}})", params);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(
      llvm::toString(std::move(err))
          .find(":1:37: devices.T4.matmul_flops: must be positive, got -1"),
      std::string::npos);
  // Curves: points in increasing work.
  err = loadProfileText(
      R"({"devices": {"T4": {"curves": {"MatMul": [[2e6, 1e-5], [1e6, 2e-5]]}}}})",
      params);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(
      llvm::toString(std::move(err))
          .find("devices.T4.curves.MatMul: points must be [work, seconds] "
                "pairs of positive numbers, in increasing work"),
      std::string::npos);
  // Misspelt fields, unknown kinds and efficiencies above 1 are errors too.
  for (auto [text, message] :
       {std::pair<const char *, const char *>{
            R"({"devices": {"T4": {"matmul_flop": 1e12}}})",
            "devices.T4: unknown field 'matmul_flop'"},
        {R"({"devices": {"A100": {"matmul_flops": 1e12}}})",
         "devices.A100: unknown device kind 'A100'"},
        {R"({"links": {"PCIe9": {"bandwidth": 1e9, "latency": 1e-6}}})",
         "links.PCIe9: unknown link kind 'PCIe9'"},
        {R"({"efficiency": {"compute": {"MatMul": 1.5}}})",
         "efficiency.compute.MatMul: is a fraction of the peak: at most 1, got "
         "1.5"},
        {R"({"device": {}})", "profile: unknown field 'device'"}}) {
    err = loadProfileText(text, params);
    ASSERT_TRUE(static_cast<bool>(err)) << text;
    EXPECT_NE(llvm::toString(std::move(err)).find(message), std::string::npos)
        << message;
  }
  // An unknown class.
  err = loadProfileText(
      R"({"devices": {"T4": {"curves": {"Matmul": [[1, 1]]}}}})", params);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_NE(llvm::toString(std::move(err))
                .find("devices.T4.curves.Matmul: not an op class"),
            std::string::npos);
}

TEST_F(CostModelTest, RegistryCreatesUserModels) {
  struct Doubled : DefaultCostModel {
    using DefaultCostModel::DefaultCostModel;
    llvm::StringRef name() const override { return "doubled"; }
    double collectiveTime(Collective k, double b, llvm::ArrayRef<int> d,
                          const Cluster &c) const override {
      return 2 * DefaultCostModel::collectiveTime(k, b, d, c);
    }
  };
  registerCostModel("doubled",
                    [](CostParams p) { return std::make_unique<Doubled>(p); });
  auto created = createCostModel("doubled", CostParams::defaults());
  ASSERT_TRUE(static_cast<bool>(created));
  EXPECT_EQ((*created)->name(), "doubled");
  auto missing = createCostModel("no-such-model", CostParams::defaults());
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("no-such-model"),
            std::string::npos);
}

} // namespace
