//===- CostModel.h - compute, communication and memory costs -----*- C++
//-*-===//
//
// The cost model that plans are scored with. A CostModel answers two questions:
// how long one op takes on one device (a roofline over FLOPs and bytes moved,
// with per-op-class efficiencies and a launch overhead), and how long one
// collective takes over a group of devices (alpha-beta over the slowest link,
// ring / tree / hierarchical as NCCL chooses). DefaultCostModel implements the
// formulas of docs/cost-model.md; a user replaces or extends it by subclassing
// and registering a factory (registerCostModel), for instance from a pass
// plugin.
//
// Units: seconds, bytes, FLOP, FLOP/s, bytes/s.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_COSTMODEL_COSTMODEL_H
#define HETPAR_COSTMODEL_COSTMODEL_H

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Support/FloatMode.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// What bounds an op and which efficiency applies to it.
enum class OpClass {
  MatMul,        ///< MatMul, Gemm, Conv, Einsum: tensor cores for f16/bf16
  Elementwise,   ///< unary/binary/ternary elementwise, Cast, Where
  Reduction,     ///< Reduce*, ArgMax/Min, CumSum, global pooling
  Normalization, ///< LayerNorm, BatchNorm, InstanceNorm
  Softmax,       ///< Softmax, LogSoftmax
  DataMovement,  ///< Reshape, Transpose, Gather, Concat, Slice, ...: bytes only
  Other,         ///< everything else (pooling windows, unmodeled ops)
};
constexpr int kNumOpClasses = 7;
llvm::StringRef getOpClassName(OpClass cls);

/// Collectives as upstream `shard` names them, plus point-to-point transfers:
/// the dist dialect's one list of kinds (DistBase.td), spelled as there in
/// profiles and plans (dist::stringifyCollectiveKind,
/// dist::symbolizeCollectiveKind).
using Collective = dist::CollectiveKind;

/// The work of one op, from its static shapes (measureOp).
struct OpWork {
  OpClass cls = OpClass::Other;
  double flops = 0; ///< FlopCountOpInterface
  double activationBytes =
      0; ///< non-constant operands + results: scale with the batch
  double weightBytes = 0; ///< constant operands: read once per run
  /// A MatMul-class op whose operands are float16 or bfloat16, or float32
  /// held in 16 bits by the compute dtype (usesTensorCores).
  bool tensorCores = false;
  unsigned kernels = 1; ///< kernel launches
};

/// Classifies `op` and counts its FLOPs and bytes with float32 tensors held in
/// `dtype` (the module's compute dtype, getComputeDtype; tensorBytes);
/// std::nullopt when a shape is not static. Constants themselves cost nothing.
std::optional<OpWork> measureOp(mlir::Operation *op, FloatMode dtype);

/// Numbers the default model uses; calibration (hetpar-profile) overwrites
/// them.
struct CostParams {
  /// Fraction of peak FLOP/s an op class reaches (compute-bound regime).
  std::array<double, kNumOpClasses> computeEfficiency;
  /// Fraction of peak memory bandwidth an op class reaches (memory-bound
  /// regime).
  std::array<double, kNumOpClasses> memoryEfficiency;
  /// Seconds per kernel launch.
  double launchOverhead;
  /// Seconds of fixed cost per collective call (NCCL baseLat).
  double collectiveBaseLatency;
  /// Backward FLOP and bytes as multiples of the forward ones, per op class.
  std::array<double, kNumOpClasses> backwardFactor;
  /// Measured numbers per device kind (from a profile), replacing datasheets.
  struct Measured {
    std::optional<double> matmulFlops;       ///< FLOP/s of large float32 GEMMs
    std::optional<double> tensorMatmulFlops; ///< FLOP/s of large float16 GEMMs
    std::optional<double>
        memoryBandwidth; ///< bytes/s of streaming elementwise ops
    std::optional<double> launchOverhead; ///< seconds per kernel in a sequence
    /// bytes/s reached by each op class's kernels, where measured.
    std::array<std::optional<double>, kNumOpClasses> classBandwidth;
    /// Measured kernel times by size, per op class: (work, seconds) points in
    /// increasing work, work being FLOP for MatMul and bytes moved for the
    /// others. When present they replace the roofline (see kernelTime). Index
    /// kNumOpClasses holds float16 GEMMs.
    std::array<std::vector<std::pair<double, double>>, kNumOpClasses + 1>
        curves;
  };
  llvm::StringMap<Measured> measured;
  /// Measured links by kind (bandwidth bytes/s, latency s).
  llvm::StringMap<std::pair<double, double>> measuredLinks;

  /// The defaults of docs/cost-model.md.
  static CostParams defaults();
};

/// Seconds for `work` read off measured (work, seconds) points: log-log linear
/// between points; the first point's time below it (a kernel is never faster
/// than the smallest one measured: launch cost); the last point's rate above
/// it. `points` must be non-empty with increasing, positive work and seconds.
double interpolateKernelTime(llvm::ArrayRef<std::pair<double, double>> points,
                             double work);

/// Loads a profile written by hetpar-profile into `params`.
llvm::Error loadProfile(llvm::StringRef path, CostParams &params);
/// The same from the profile's text; `path` names it in errors (line,
/// column, field). `params` changes only when the whole profile is valid.
llvm::Error parseProfile(llvm::StringRef text, llvm::StringRef path,
                         CostParams &params);

/// The interface plans are scored with.
class CostModel {
public:
  explicit CostModel(CostParams params) : params(std::move(params)) {}
  virtual ~CostModel();
  virtual llvm::StringRef name() const = 0;

  /// Seconds for `device` to run `work` when it does `batchShare` of the batch
  /// and `shardShare` of the op (tensor parallelism). Backward when `backward`.
  virtual double computeTime(const OpWork &work, const Device &device,
                             double batchShare, double shardShare,
                             bool backward) const = 0;

  /// Seconds for a collective moving `bytes` per rank (the full buffer for
  /// all-reduce/broadcast, each rank's result for all-gather, each rank's input
  /// for reduce-scatter, each rank's send buffer for all-to-all, the message
  /// for send/recv) over `devices` (for send/recv: the two endpoints).
  virtual double collectiveTime(Collective kind, double bytes,
                                llvm::ArrayRef<int> devices,
                                const Cluster &cluster) const = 0;

  const CostParams &getParams() const { return params; }

protected:
  CostParams params;
};

/// Roofline compute, alpha-beta collectives with ring, tree and hierarchical
/// algorithms (the fastest is taken, as NCCL's tuner does).
class DefaultCostModel : public CostModel {
public:
  using CostModel::CostModel;
  llvm::StringRef name() const override { return "default"; }
  double computeTime(const OpWork &work, const Device &device,
                     double batchShare, double shardShare,
                     bool backward) const override;
  double collectiveTime(Collective kind, double bytes,
                        llvm::ArrayRef<int> devices,
                        const Cluster &cluster) const override;

  /// The three algorithms, public for tests and for models that build on them.
  double ringTime(Collective kind, double bytes, int ranks,
                  const Link &link) const;
  double treeTime(Collective kind, double bytes, int ranks,
                  const Link &link) const;
  /// Inside nodes first, then across nodes (and groups), then inside nodes
  /// again.
  double hierarchicalTime(Collective kind, double bytes,
                          llvm::ArrayRef<int> devices,
                          const Cluster &cluster) const;
};

using CostModelFactory = std::function<std::unique_ptr<CostModel>(CostParams)>;
/// Registers a cost model under `name` (a plugin calls this at load time).
void registerCostModel(llvm::StringRef name, CostModelFactory factory);
/// The cost model registered under `name` ("default" always exists).
llvm::Expected<std::unique_ptr<CostModel>> createCostModel(llvm::StringRef name,
                                                           CostParams params);

} // namespace hetpar

#endif // HETPAR_COSTMODEL_COSTMODEL_H
