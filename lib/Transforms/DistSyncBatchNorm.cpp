//===- DistSyncBatchNorm.cpp - hetpar-dist-sync-batch-norm ----------------===//
//
// Synchronized batch statistics for data-parallel training (Passes.td
// describes the pass; docs/training.md, "Data-parallel training"). A
// training-mode BatchNormalization normalizes with the mean and variance of
// the whole batch; on a replica that holds some rows of it, those are sums
// over the replicas. The op is rewritten into its equations with the two
// per-channel sums all-reduced, so that differentiation gives the
// synchronized backward pass too (PyTorch's SyncBatchNorm).
//
//===----------------------------------------------------------------------===//
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/Gradient.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/IR/Builders.h"

namespace hetpar {
#define GEN_PASS_DEF_DISTSYNCBATCHNORMPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;

namespace {

/// What the rewrite of one op needs: the replicas that hold this device's
/// shards, and the microbatch's rows over all of them.
struct SyncGroup {
  SmallVector<int64_t> devices;
  int64_t microbatchRows;
};

/// x summed over the group: an all-reduce, whose gradient (summed too) a
/// grad_all_reduce gives, since every replica's loss depends on the sum.
Value groupSum(OpBuilder &b, Location loc, Value x, const SyncGroup &group) {
  auto mesh = FlatSymbolRefAttr::get(b.getContext(), "mesh");
  auto over = b.getDenseI64ArrayAttr(group.devices);
  Value sum = dist::AllReduceOp::create(
      b, loc, x.getType(), x, mesh, over,
      dist::ReductionKindAttr::get(b.getContext(), dist::ReductionKind::Sum));
  return dist::GradAllReduceOp::create(b, loc, x.getType(), sum, mesh, over);
}

/// The op's equations (ONNX opset 15, training mode) with the statistics of
/// the whole batch: per channel c, over the M elements of all replicas'
/// rows and the spatial axes,
///   mean = sum(x) / M, var = sum((x - mean)^2) / M (the population
///   variance, two passes as hp_batch_norm_train),
///   y = (x - mean) / sqrt(var + eps) * scale + B,
///   running_mean = input_mean * momentum + mean * (1 - momentum),
///   running_var = input_var * momentum + var * (1 - momentum).
void synchronize(onnx::BatchNormalizationOp bn, const SyncGroup &group) {
  OpBuilder b(bn);
  Location loc = bn.getLoc();
  GradientBuilder g(b, loc, {});
  Value x = bn.getX();
  ArrayRef<int64_t> xs = GradientBuilder::shapeOf(x);
  int64_t rank = static_cast<int64_t>(xs.size()), c = xs[1];
  SmallVector<int64_t> axes{0}, perChannel(rank, 1);
  perChannel[1] = c;
  int64_t count = group.microbatchRows;
  for (int64_t d = 2; d < rank; ++d) {
    axes.push_back(d);
    count *= xs[d];
  }
  Value m = g.scalar(static_cast<double>(count), x);
  Value mean = g.div(
      groupSum(b, loc, g.reduceSum(x, axes, /*keepDims=*/true), group), m);
  Value xc = g.sub(x, mean);
  Value var =
      g.div(groupSum(b, loc, g.reduceSum(g.mul(xc, xc), axes, true), group), m);
  Value inv = g.make<onnx::ReciprocalOp>(
      g.make<onnx::SqrtOp>(g.add(var, g.scalar(bn.getEpsilon(), var))));
  Value y = g.add(g.mul(g.mul(xc, inv), g.reshape(bn.getScale(), perChannel)),
                  g.reshape(bn.getB(), perChannel));
  bn.getY().replaceAllUsesWith(y);
  Value keep = g.scalar(bn.getMomentum(), var);
  Value take = g.scalar(1.0 - bn.getMomentum(), var);
  Value stats[2] = {mean, var};
  Value inputs[2] = {bn.getInputMean(), bn.getInputVar()};
  for (auto [k, r] : llvm::enumerate(bn.getRunningStats()))
    if (k < 2)
      r.replaceAllUsesWith(
          g.add(g.mul(inputs[k], keep), g.mul(g.reshape(stats[k], {c}), take)));
  bn.erase();
}

struct DistSyncBatchNormPass
    : hetpar::impl::DistSyncBatchNormPassBase<DistSyncBatchNormPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = train::deviceStepFunction(module, device, getArgument());
    if (failed(func))
      return signalPassFailure();
    FailureOr<PlanAnnotation> plan = readPlanAnnotation(module, std::nullopt);
    if (failed(plan))
      return signalPassFailure();
    int s = plan->stageOf(device);
    if (s < 0) {
      module.emitError() << getArgument() << ": device "
                         << static_cast<int64_t>(device)
                         << " is not in the plan";
      return signalPassFailure();
    }
    const StageAnnotation &stage = plan->stages[s];
    SmallVector<onnx::BatchNormalizationOp> norms;
    func->walk([&](onnx::BatchNormalizationOp bn) {
      if (bn.getTrainingMode() != 0)
        norms.push_back(bn);
    });
    if (stage.data < 2 || norms.empty())
      return;
    train::markDeviceStep(module, *func, device, stage.devices, stage.kinds);
    (*func)->setAttr(train::kSynchronizedAttr, UnitAttr::get(&getContext()));
    SyncGroup group{stage.dataGroupOf(device), plan->microbatchRows};
    for (onnx::BatchNormalizationOp bn : norms) {
      auto shape = llvm::dyn_cast<RankedTensorType>(bn.getX().getType());
      if (!shape || !shape.hasStaticShape() || shape.getRank() < 2) {
        bn.emitError("synchronized batch statistics need a static input of "
                     "rank 2 or more, got ")
            << bn.getX().getType();
        return signalPassFailure();
      }
      synchronize(bn, group);
    }
  }
};

} // namespace
