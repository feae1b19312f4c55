//===- CostModel.cpp - the default cost model
//------------------------------===//
//
// Every formula and constant here is stated, with its source, in
// docs/cost-model.md.
//
//===----------------------------------------------------------------------===//

#include "hetpar/CostModel/CostModel.h"

#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Dialect/ONNX/Views.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Support/YAMLReader.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <map>

using namespace mlir;

namespace hetpar {

llvm::StringRef getOpClassName(OpClass cls) {
  switch (cls) {
  case OpClass::MatMul:
    return "MatMul";
  case OpClass::Elementwise:
    return "Elementwise";
  case OpClass::Reduction:
    return "Reduction";
  case OpClass::Normalization:
    return "Normalization";
  case OpClass::Softmax:
    return "Softmax";
  case OpClass::DataMovement:
    return "DataMovement";
  case OpClass::Other:
    return "Other";
  }
  return "Other";
}

//===----------------------------------------------------------------------===//
// Work of an op
//===----------------------------------------------------------------------===//

static OpClass classify(Operation *op) {
  return llvm::TypeSwitch<Operation *, OpClass>(op)
      .Case<onnx::MatMulOp, onnx::GemmOp, onnx::ConvOp, onnx::FusedConvOp,
            onnx::ConvGradOp, onnx::EinsumOp, onnx::FusedAttentionOp>(
          [](auto) { return OpClass::MatMul; })
      .Case<onnx::LayerNormalizationOp, onnx::LayerNormalizationGradOp,
            onnx::BatchNormalizationOp, onnx::InstanceNormalizationOp>(
          [](auto) { return OpClass::Normalization; })
      .Case<onnx::SoftmaxOp, onnx::LogSoftmaxOp, onnx::SoftmaxGradOp,
            onnx::LogSoftmaxGradOp, onnx::SoftmaxCrossEntropyLossOp,
            onnx::SoftmaxCrossEntropyLossGradOp>(
          [](auto) { return OpClass::Softmax; })
      .Case<onnx::NegativeLogLikelihoodLossOp>(
          [](auto) { return OpClass::Reduction; })
      .Case<onnx::ReduceMeanOp, onnx::ReduceSumOp, onnx::ReduceMaxOp,
            onnx::ReduceMinOp, onnx::ReduceProdOp, onnx::ReduceL1Op,
            onnx::ReduceL2Op, onnx::ReduceSumSquareOp, onnx::ReduceLogSumExpOp,
            onnx::ArgMaxOp, onnx::ArgMinOp, onnx::CumSumOp,
            onnx::GlobalAveragePoolOp, onnx::GlobalMaxPoolOp>(
          [](auto) { return OpClass::Reduction; })
      .Case<onnx::ReshapeOp, onnx::FlattenOp, onnx::SqueezeOp,
            onnx::UnsqueezeOp, onnx::IdentityOp, onnx::TransposeOp,
            onnx::ConcatOp, onnx::SplitOp, onnx::SliceOp, onnx::GatherOp,
            onnx::GatherElementsOp, onnx::GatherNDOp, onnx::ScatterNDOp,
            onnx::ScatterElementsOp, onnx::ResizeOp, onnx::ExpandOp,
            onnx::TileOp, onnx::PadOp, onnx::ShapeOp, onnx::SizeOp,
            onnx::ConstantOfShapeOp, onnx::RangeOp, onnx::TriluOp,
            onnx::OneHotOp, onnx::NonZeroOp, onnx::DropoutOp>(
          [](auto) { return OpClass::DataMovement; })
      .Case<onnx::MaxPoolOp, onnx::AveragePoolOp, onnx::GenericOp>(
          [](auto) { return OpClass::Other; })
      .Default([](Operation *) { return OpClass::Elementwise; });
}

std::optional<OpWork> measureOp(Operation *op, FloatMode dtype) {
  OpWork w;
  w.cls = classify(op);
  if (llvm::isa<onnx::ConstantOp, onnx::NoValueOp, onnx::YieldOp>(op)) {
    w.kernels = 0;
    return w;
  }
  // Views (onnx::isView, as generated: no code) and shape queries: no data
  // moves.
  if (onnx::isView(op) || llvm::isa<onnx::ShapeOp, onnx::SizeOp>(op)) {
    w.kernels = 0;
    return w;
  }
  if (auto f = llvm::dyn_cast<onnx::FlopCountOpInterface>(op)) {
    auto flops = f.getFlopCount();
    if (!flops && !llvm::isa<onnx::GenericOp>(op))
      return std::nullopt;
    w.flops = static_cast<double>(flops.value_or(0));
  }
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    auto st = llvm::dyn_cast<ShapedType>(v.getType());
    if (st && !st.hasStaticShape())
      return std::nullopt;
    double b = tensorBytes(v.getType(), dtype);
    // A gather (an embedding lookup) reads only the rows it returns.
    if (i == 0 && llvm::isa<onnx::GatherOp>(op))
      b = std::min(b, tensorBytes(op->getResult(0).getType(), dtype));
    if (matchPattern(v, m_Constant()))
      w.weightBytes += b;
    else
      w.activationBytes += b;
  }
  for (Value r : op->getResults()) {
    auto st = llvm::dyn_cast<ShapedType>(r.getType());
    if (st && !st.hasStaticShape())
      return std::nullopt;
    w.activationBytes += tensorBytes(r.getType(), dtype);
  }
  if (w.cls == OpClass::MatMul) {
    Type elt =
        llvm::cast<ShapedType>(op->getOperand(0).getType()).getElementType();
    w.tensorCores = usesTensorCores(elt, dtype);
  }
  return w;
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

CostParams CostParams::defaults() {
  CostParams p;
  // Efficiencies: the fraction of the datasheet peak that hetpar-profile's
  // kernels reached on an NVIDIA H200 (examples/profiles/H200-SXM.json, sizes
  // of 0.5-1.6 GB): GEMMs 5.11e13 / 6.7e13 = 0.76 (float32) and
  // 7.33e14 / 9.895e14 = 0.74 (float16); streaming add 3.22e12 / 4.8e12 = 0.67;
  // copy 0.87; row reductions 0.36, softmax 0.36, layernorm 0.38. Compute-side
  // numbers of memory-bound classes and "Other" are not measured (0.5, 0.3:
  // they almost never bind). docs/cost-model.md, "Constants".
  //                     MatMul Elem  Reduce Norm  Softmax Move  Other
  p.computeEfficiency = {0.75, 0.50, 0.50, 0.50, 0.50, 1.00, 0.30};
  p.memoryEfficiency = {0.80, 0.67, 0.36, 0.38, 0.36, 0.87, 0.50};
  p.backwardFactor = {2.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0};
  p.launchOverhead = 5e-6;
  p.collectiveBaseLatency = 8.4e-6;
  return p;
}

/// The index of an op class in CostParams' tables (kNumOpClasses for
/// "MatMulFloat16", a curve key only), or -1.
static int classIndex(llvm::StringRef name) {
  for (int c = 0; c < kNumOpClasses; ++c)
    if (name == getOpClassName(static_cast<OpClass>(c)))
      return c;
  return name == "MatMulFloat16" ? kNumOpClasses : -1;
}

llvm::Error loadProfile(llvm::StringRef path, CostParams &params) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(), "cannot read profile '%s': %s", path.str().c_str(),
        buffer.getError().message().c_str());
  return parseProfile((*buffer)->getBuffer(), path, params);
}

llvm::Error parseProfile(llvm::StringRef text, llvm::StringRef path,
                         CostParams &params) {
  // JSON read as YAML: errors give the line, the column and the field, and
  // misspelt fields are errors rather than silently ignored.
  YAMLReader in(text, path);
  auto error = [&] {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), in.error());
  };
  llvm::yaml::Node *root = in.root("profile");
  if (!root)
    return error();
  // A mapping whose keys are names (device kinds, link kinds, op classes).
  auto forEachName =
      [&](llvm::yaml::Node *node, const std::string &where,
          llvm::function_ref<bool(llvm::StringRef, llvm::yaml::Node *,
                                  llvm::yaml::Node *)>
              fn) {
        auto *map = llvm::dyn_cast<llvm::yaml::MappingNode>(node);
        if (!map)
          return in.fail(node, where, "must be a mapping");
        for (auto &entry : *map) {
          auto key = in.scalar(entry.getKey(), where);
          if (!key)
            return false;
          llvm::yaml::Node *value = entry.getValue();
          if (!value) // the YAML parser failed inside it (its error wins)
            return in.fail(entry.getKey(), where + "." + *key, "has no value");
          if (!fn(*key, entry.getKey(), value))
            return false;
        }
        return true;
      };
  const std::string classes =
      "MatMul, Elementwise, Reduction, Normalization, Softmax, "
      "DataMovement, Other";
  CostParams out = params; // applied only when the whole profile is valid

  auto device = [&](llvm::StringRef name, llvm::yaml::Node *keyNode,
                    llvm::yaml::Node *value) {
    std::string where = "devices." + name.str();
    const DeviceKind *kind = lookupDeviceKind(name);
    if (!kind)
      return in.fail(keyNode, where,
                     "unknown device kind '" + name +
                         "' (hetpar-cluster --catalog lists the kinds)");
    CostParams::Measured m;
    bool ok = in.forEachField(
        value, where,
        {"matmul_flops", "tensor_matmul_flops", "memory_bandwidth",
         "launch_overhead", "bandwidth_by_class", "curves"},
        [&](llvm::StringRef key, llvm::yaml::Node *v) {
          std::string f = where + "." + key.str();
          if (key == "bandwidth_by_class")
            return forEachName(
                v, f,
                [&](llvm::StringRef cls, llvm::yaml::Node *k,
                    llvm::yaml::Node *bw) {
                  int c = classIndex(cls);
                  if (c < 0 || c == kNumOpClasses)
                    return in.fail(k, f + "." + cls,
                                   "not an op class (" + classes + ")");
                  m.classBandwidth[c] = in.positive(bw, f + "." + cls);
                  return m.classBandwidth[c].has_value();
                });
          if (key == "curves")
            return forEachName(
                v, f,
                [&](llvm::StringRef cls, llvm::yaml::Node *k,
                    llvm::yaml::Node *points) {
                  std::string fc = f + "." + cls.str();
                  int c = classIndex(cls);
                  if (c < 0)
                    return in.fail(k, fc,
                                   "not an op class (" + classes +
                                       ", MatMulFloat16)");
                  double lastWork = 0;
                  bool any = false;
                  bool good = in.forEachItem(
                      points, fc, [&](unsigned, llvm::yaml::Node *pt) {
                        auto pair = in.numbers(pt, fc);
                        if (!pair)
                          return false;
                        if (pair->size() != 2 || !((*pair)[0] > lastWork) ||
                            !((*pair)[1] > 0))
                          return in.fail(pt, fc,
                                         "points must be [work, seconds] pairs "
                                         "of positive "
                                         "numbers, in increasing work");
                        lastWork = (*pair)[0];
                        m.curves[c].push_back({(*pair)[0], (*pair)[1]});
                        any = true;
                        return true;
                      });
                  if (good && !any)
                    return in.fail(points, fc,
                                   "needs at least one [work, seconds] point");
                  return good;
                });
          auto x = in.positive(v, f);
          if (key == "matmul_flops")
            m.matmulFlops = x;
          else if (key == "tensor_matmul_flops")
            m.tensorMatmulFlops = x;
          else if (key == "memory_bandwidth")
            m.memoryBandwidth = x;
          else
            m.launchOverhead = x;
          return x.has_value();
        });
    if (ok)
      out.measured[kind->name] = std::move(m);
    return ok;
  };

  auto link = [&](llvm::StringRef name, llvm::yaml::Node *keyNode,
                  llvm::yaml::Node *value) {
    std::string where = "links." + name.str();
    const LinkKind *kind = lookupLinkKind(name);
    if (!kind)
      return in.fail(keyNode, where,
                     "unknown link kind '" + name +
                         "' (hetpar-cluster --catalog lists the kinds)");
    std::optional<double> bandwidth, latency;
    bool ok = in.forEachField(
        value, where, {"bandwidth", "latency", "ranks"},
        [&](llvm::StringRef key, llvm::yaml::Node *v) {
          std::string f = where + "." + key.str();
          if (key == "bandwidth") {
            bandwidth = in.positive(v, f);
            return bandwidth.has_value();
          }
          if (key == "latency") {
            latency = in.nonNegative(v, f);
            return latency.has_value();
          }
          return in.integer(v, f).has_value(); // ranks: how it was measured
        });
    if (!ok)
      return false;
    if (!bandwidth || !latency)
      return in.fail(value, where,
                     "needs 'bandwidth' (bytes/s) and 'latency' (s)");
    out.measuredLinks[kind->name] = {*bandwidth, *latency};
    return true;
  };

  auto efficiency = [&](llvm::yaml::Node *value) {
    return in.forEachField(
        value, "efficiency", {"compute", "memory"},
        [&](llvm::StringRef which, llvm::yaml::Node *table) {
          std::string f = "efficiency." + which.str();
          auto &target =
              which == "compute" ? out.computeEfficiency : out.memoryEfficiency;
          return forEachName(
              table, f,
              [&](llvm::StringRef cls, llvm::yaml::Node *k,
                  llvm::yaml::Node *v) {
                int c = classIndex(cls);
                if (c < 0 || c == kNumOpClasses)
                  return in.fail(k, f + "." + cls,
                                 "not an op class (" + classes + ")");
                auto x = in.positive(v, f + "." + cls);
                if (x && *x > 1)
                  return in.fail(v, f + "." + cls,
                                 "is a fraction of the peak: at most 1, got " +
                                     *in.scalar(v, f));
                if (x)
                  target[c] = *x;
                return x.has_value();
              });
        });
  };

  bool ok = in.forEachField(
      root, "profile",
      {"backend", "device_name", "devices", "links", "efficiency",
       "measurements"},
      [&](llvm::StringRef key, llvm::yaml::Node *value) {
        if (key == "devices")
          return forEachName(value, "devices", device);
        if (key == "links")
          return forEachName(value, "links", link);
        if (key == "efficiency")
          return efficiency(value);
        value->skip(); // what was measured, and where: for people
        return true;
      });
  if (!ok || !in.error().empty())
    return error();
  params = std::move(out);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Default model
//===----------------------------------------------------------------------===//

CostModel::~CostModel() = default;

double DefaultCostModel::computeTime(const OpWork &w, const Device &device,
                                     double batchShare, double shardShare,
                                     bool backward) const {
  if (w.kernels == 0)
    return 0;
  int c = static_cast<int>(w.cls);
  double factor = backward ? params.backwardFactor[c] : 1.0;
  double flops = w.flops * batchShare * shardShare * factor;
  double bytes =
      (w.activationBytes * batchShare + w.weightBytes) * shardShare * factor;
  double peak = w.tensorCores ? device.tensorFlops : device.fp32Flops;
  double computeRate = peak * params.computeEfficiency[c];
  double memoryRate = device.memoryBandwidth * params.memoryEfficiency[c];
  double launch = params.launchOverhead;
  if (auto it = params.measured.find(device.kind);
      it != params.measured.end()) {
    const auto &m = it->second;
    if (w.cls == OpClass::MatMul) {
      if (w.tensorCores && m.tensorMatmulFlops)
        computeRate = *m.tensorMatmulFlops;
      else if (!w.tensorCores && m.matmulFlops)
        computeRate = *m.matmulFlops;
    }
    // A class's own measured bandwidth, else the streaming bandwidth scaled by
    // the class's efficiency relative to elementwise ops.
    if (m.classBandwidth[c])
      memoryRate = *m.classBandwidth[c];
    else if (m.memoryBandwidth)
      memoryRate =
          *m.memoryBandwidth * params.memoryEfficiency[c] /
          params.memoryEfficiency[static_cast<int>(OpClass::Elementwise)];
    if (m.launchOverhead)
      launch = *m.launchOverhead;
  }
  // Measured kernel times by size, where the profile has them: each kernel of
  // the op (a backward pass runs `factor` of them) takes what a measured kernel
  // of its size took.
  if (auto it = params.measured.find(device.kind);
      it != params.measured.end()) {
    const auto &curve =
        it->second
            .curves[w.cls == OpClass::MatMul && w.tensorCores ? kNumOpClasses
                                                              : c];
    if (!curve.empty()) {
      double work = (w.cls == OpClass::MatMul
                         ? w.flops * batchShare
                         : w.activationBytes * batchShare + w.weightBytes) *
                    shardShare;
      return factor * w.kernels * interpolateKernelTime(curve, work) *
             device.slowdown;
    }
  }
  double t = std::max(computeRate > 0 ? flops / computeRate : 0.0,
                      memoryRate > 0 ? bytes / memoryRate : 0.0);
  return t * device.slowdown + w.kernels * launch;
}

double interpolateKernelTime(llvm::ArrayRef<std::pair<double, double>> points,
                             double work) {
  if (work <= points.front().first)
    return points.front().second;
  if (work >= points.back().first)
    return points.back().second * work / points.back().first;
  auto hi =
      std::upper_bound(points.begin(), points.end(), work,
                       [](double x, const auto &p) { return x < p.first; });
  auto lo = hi - 1;
  double f = std::log(work / lo->first) / std::log(hi->first / lo->first);
  return std::exp(std::log(lo->second) + f * std::log(hi->second / lo->second));
}

/// The link with measured numbers applied.
static Link effective(const Link &link, const CostParams &p) {
  Link l = link;
  if (auto it = p.measuredLinks.find(link.kind); it != p.measuredLinks.end()) {
    l.bandwidth = it->second.first;
    l.latency = it->second.second;
  }
  return l;
}

double DefaultCostModel::ringTime(Collective kind, double n, int p,
                                  const Link &link) const {
  if (p <= 1)
    return 0;
  double a = link.latency, b = link.bandwidth,
         base = params.collectiveBaseLatency;
  double frac = static_cast<double>(p - 1) / p;
  switch (kind) {
  case Collective::AllReduce:
    return base + 2 * (p - 1) * a + 2 * frac * n / b;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return base + (p - 1) * a + frac * n / b;
  case Collective::Broadcast:
    return base + (p - 1) * a + n / b;
  case Collective::SendRecv:
    return base + a + n / b;
  }
  return 0;
}

double DefaultCostModel::treeTime(Collective kind, double n, int p,
                                  const Link &link) const {
  if (p <= 1)
    return 0;
  double a = link.latency, b = link.bandwidth,
         base = params.collectiveBaseLatency;
  double depth = std::ceil(std::log2(static_cast<double>(p)));
  switch (kind) {
  case Collective::AllReduce:
    return base + 2 * depth * a + 2 * n / b;
  case Collective::Broadcast:
    return base + depth * a + n / b;
  default: // NCCL has no tree for the others
    return std::numeric_limits<double>::infinity();
  }
}

double DefaultCostModel::hierarchicalTime(Collective kind, double n,
                                          llvm::ArrayRef<int> devices,
                                          const Cluster &cluster) const {
  // Devices per node, the nodes' inner links and NICs.
  std::map<int, int> perNode;
  for (int id : devices)
    if (const Device *d = cluster.findDevice(id))
      ++perNode[d->node];
  int nodes = perNode.size();
  if (nodes <= 1 || kind == Collective::AllToAll ||
      kind == Collective::SendRecv)
    return std::numeric_limits<double>::infinity();
  int k = 0, nics = 1 << 30;
  Link intra;
  intra.bandwidth = 1e300;
  for (auto [node, count] : perNode) {
    k = std::max(k, count);
    nics = std::min(nics, cluster.nodes[node].nics);
    Link l = effective(cluster.nodes[node].intra, params);
    if (l.bandwidth < intra.bandwidth)
      intra = l;
  }
  // Across nodes each of the k GPUs of a node runs its own ring on 1/k of the
  // data; they share the node's NICs.
  Link net = effective(cluster.slowestLink(devices), params);
  net.bandwidth = net.bandwidth * nics / k;
  auto best = [&](Collective c, double bytes, int ranks, const Link &l) {
    return std::min(ringTime(c, bytes, ranks, l), treeTime(c, bytes, ranks, l));
  };
  switch (kind) {
  case Collective::AllReduce:
    return ringTime(Collective::ReduceScatter, n, k, intra) +
           best(Collective::AllReduce, n / k, nodes, net) +
           ringTime(Collective::AllGather, n, k, intra);
  case Collective::AllGather:
    return ringTime(Collective::AllGather, n / k, nodes, net) +
           ringTime(Collective::AllGather, n, k, intra);
  case Collective::ReduceScatter:
    return ringTime(Collective::ReduceScatter, n, k, intra) +
           ringTime(Collective::ReduceScatter, n / k, nodes, net);
  case Collective::Broadcast:
    return best(Collective::Broadcast, n, nodes, net) +
           best(Collective::Broadcast, n, k, intra);
  default:
    return std::numeric_limits<double>::infinity();
  }
}

double DefaultCostModel::collectiveTime(Collective kind, double bytes,
                                        llvm::ArrayRef<int> devices,
                                        const Cluster &cluster) const {
  int p = devices.size();
  if (p <= 1 || bytes <= 0)
    return 0;
  // A flat ring or tree is limited by the slowest link it crosses; across nodes
  // NCCL spreads rings over the NICs, so the network contributes its bandwidth
  // times the fewest NICs of a node the group spans.
  Link link = effective(cluster.slowestLink(devices), params);
  if (cluster.tierOf(devices) >= 1) {
    int nics = 1 << 30;
    for (int id : devices)
      if (const Device *d = cluster.findDevice(id))
        nics = std::min(nics, cluster.nodes[d->node].nics);
    link.bandwidth *= nics;
    // The inner links stay in the path of a flat ring.
    for (int id : devices)
      if (const Device *d = cluster.findDevice(id)) {
        Link inner = effective(cluster.nodes[d->node].intra, params);
        if (inner.bandwidth < link.bandwidth &&
            cluster.nodes[d->node].devices.size() > 1)
          link.bandwidth = inner.bandwidth;
      }
  }
  double t = ringTime(kind, bytes, p, link);
  t = std::min(t, treeTime(kind, bytes, p, link));
  if (cluster.tierOf(devices) >= 1)
    t = std::min(t, hierarchicalTime(kind, bytes, devices, cluster));
  return t;
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

static llvm::StringMap<CostModelFactory> &registry() {
  static llvm::StringMap<CostModelFactory> models = [] {
    llvm::StringMap<CostModelFactory> m;
    m["default"] = [](CostParams p) -> std::unique_ptr<CostModel> {
      return std::make_unique<DefaultCostModel>(std::move(p));
    };
    return m;
  }();
  return models;
}

void registerCostModel(llvm::StringRef name, CostModelFactory factory) {
  registry()[name] = std::move(factory);
}

llvm::Expected<std::unique_ptr<CostModel>> createCostModel(llvm::StringRef name,
                                                           CostParams params) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (auto &e : registry())
      known += (known.empty() ? "" : ", ") + e.getKey().str();
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "unknown cost model '%s' (registered: %s)",
                                   name.str().c_str(), known.c_str());
  }
  return it->second(std::move(params));
}

} // namespace hetpar
