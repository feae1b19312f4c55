//===- DistOps.cpp - dist dialect: registration and verifiers ------------===//

#include "hetpar/Dialect/Dist/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace hetpar::dist;

#include "hetpar/Dialect/Dist/DistDialect.cpp.inc"
#include "hetpar/Dialect/Dist/DistEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "hetpar/Dialect/Dist/DistAttrs.cpp.inc"

void DistDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "hetpar/Dialect/Dist/DistAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "hetpar/Dialect/Dist/DistOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static std::string list(llvm::ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

static int64_t sum(llvm::ArrayRef<int64_t> v) {
  int64_t s = 0;
  for (int64_t x : v)
    s += x;
  return s;
}

/// A device group: not empty, no repeats, no negative ids.
template <typename EmitFn>
static LogicalResult verifyGroup(llvm::ArrayRef<int64_t> devices,
                                 EmitFn emitError) {
  if (devices.empty())
    return emitError() << "the device group is empty";
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : devices) {
    if (d < 0)
      return emitError() << "device id " << d << " is negative";
    if (!seen.insert(d).second)
      return emitError() << "device " << d << " appears twice in the group "
                         << list(devices);
  }
  return success();
}

/// The mesh `ref` names, with every device of `devices` in it.
static LogicalResult verifyMeshDevices(Operation *op,
                                       SymbolTableCollection &symbols,
                                       FlatSymbolRefAttr ref,
                                       llvm::ArrayRef<int64_t> devices) {
  auto mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, ref);
  if (!mesh)
    return op->emitOpError()
           << "refers to " << ref << ", which is not a dist.mesh";
  for (int64_t d : devices)
    if (!mesh.kindOf(d))
      return op->emitOpError() << "device " << d << " is not in mesh " << ref;
  return success();
}

/// verifyMeshDevices for a local-form op: the enclosing function's device
/// must be in the mesh too.
static LogicalResult verifyLocalMeshDevices(Operation *op,
                                            SymbolTableCollection &symbols,
                                            FlatSymbolRefAttr ref,
                                            llvm::ArrayRef<int64_t> devices) {
  llvm::SmallVector<int64_t> all(devices);
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto a = p->getAttrOfType<IntegerAttr>(kDeviceAttrName)) {
      all.push_back(a.getInt());
      break;
    }
  return verifyMeshDevices(op, symbols, ref, all);
}

/// The device of the enclosing per-device function (local form).
static FailureOr<int64_t> localDevice(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto a = p->getAttrOfType<IntegerAttr>(kDeviceAttrName))
      return a.getInt();
  return op->emitOpError()
         << "is a local-form op: it must be inside a function with a '"
         << kDeviceAttrName << "' attribute (the per-device form)";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

/// The plan of the module around `op`, if it has one.
static PlanAttr enclosingPlan(Operation *op) {
  auto module = op->getParentOfType<ModuleOp>();
  return module ? module->getAttrOfType<PlanAttr>(kPlanAttrName) : PlanAttr();
}

/// `dist.stage_id` on an op: a stage of the module's plan.
static LogicalResult verifyStageId(Operation *op, Attribute value) {
  auto id = llvm::dyn_cast<IntegerAttr>(value);
  if (!id || id.getInt() < 0)
    return op->emitError() << "'" << kStageIdAttrName
                           << "' must be a non-negative integer, got " << value;
  if (PlanAttr plan = enclosingPlan(op);
      plan && id.getInt() >= static_cast<int64_t>(plan.getStages().size()))
    return op->emitError() << "'" << kStageIdAttrName << "' is " << id.getInt()
                           << " but the plan has " << plan.getStages().size()
                           << " stages";
  return success();
}

/// `dist.op_sharding` on an op: one part per tensor-parallel device of the
/// op's stage (its `dist.stage_id`, or in the global form the `dist.stage`
/// around it).
static LogicalResult verifyOpSharding(Operation *op, Attribute value) {
  auto sharding = llvm::dyn_cast<OpShardingAttr>(value);
  if (!sharding)
    return op->emitError() << "'" << kOpShardingAttrName
                           << "' must be a #dist.op_sharding, got " << value;
  int64_t index;
  if (auto id = op->getAttrOfType<IntegerAttr>(kStageIdAttrName))
    index = id.getInt();
  else if (auto stage = op->getParentOfType<StageOp>())
    index = stage.getIndex();
  else
    return op->emitError() << "'" << kOpShardingAttrName << "' needs a '"
                           << kStageIdAttrName
                           << "' on the same op or a dist.stage around it";
  PlanAttr plan = enclosingPlan(op);
  if (!plan || index < 0 ||
      index >= static_cast<int64_t>(plan.getStages().size()))
    return success(); // verifyStageId or the stage's verifier reports it
  auto stage = llvm::cast<StagePlanAttr>(plan.getStages()[index]);
  if (static_cast<int64_t>(sharding.getParts().size()) != stage.getTensor())
    return op->emitError() << "'" << kOpShardingAttrName << "' has "
                           << sharding.getParts().size() << " parts but stage "
                           << index << " has " << stage.getTensor()
                           << " tensor-parallel devices";
  return success();
}

LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kMicrobatchesAttrName) {
    auto n = llvm::dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !n || n.getInt() < 1)
      return op->emitError() << "'" << kMicrobatchesAttrName
                             << "' must be a positive integer on a module";
    return success();
  }
  if (attr.getName() == kPlanAttrName) {
    if (!isa<ModuleOp>(op) || !llvm::isa<PlanAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kPlanAttrName << "' must be a #dist.plan on a module";
    return success();
  }
  if (attr.getName() == kGraphInputsAttrName) {
    auto list = llvm::dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !list ||
        !llvm::all_of(list, llvm::IsaPred<GraphInputAttr>))
      return op->emitError() << "'" << kGraphInputsAttrName
                             << "' must be an array of #dist.graph_input on a "
                                "module";
    llvm::StringSet<> names;
    for (auto in : list.getAsRange<GraphInputAttr>())
      if (!names.insert(in.getName().getValue()).second)
        return op->emitError()
               << "'" << kGraphInputsAttrName << "' names input '"
               << in.getName().getValue() << "' twice";
    return success();
  }
  if (attr.getName() == kStageIdAttrName)
    return verifyStageId(op, attr.getValue());
  if (attr.getName() == kOpShardingAttrName)
    return verifyOpSharding(op, attr.getValue());
  if (attr.getName() != kDeviceAttrName)
    return op->emitError() << "unknown dist attribute '"
                           << attr.getName().getValue() << "'";
  auto id = llvm::dyn_cast<IntegerAttr>(attr.getValue());
  if (!id || id.getInt() < 0)
    return op->emitError() << "'" << kDeviceAttrName
                           << "' must be a non-negative integer device id, got "
                           << attr.getValue();
  return success();
}

/// `dist.batch_dim` on an argument or result of a per-device function: the
/// dimension that holds the batch (the runtime cuts and joins microbatches
/// along it); on an argument also kNoBatchDim (an input without the batch).
static LogicalResult verifyBatchDim(Operation *op, unsigned index, Type type,
                                    NamedAttribute attr, StringRef what) {
  if (attr.getName() != kBatchDimAttrName)
    return op->emitError() << "unknown dist attribute '"
                           << attr.getName().getValue() << "' on " << what
                           << " " << index;
  auto dim = llvm::dyn_cast<IntegerAttr>(attr.getValue());
  if (dim && dim.getInt() == kNoBatchDim && what == "argument")
    return success();
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!dim || !ranked || dim.getInt() < 0 || dim.getInt() >= ranked.getRank())
    return op->emitError()
           << "'" << kBatchDimAttrName << "' of " << what << " " << index
           << " must be a dimension of its tensor type"
           << (what == "argument"
                   ? llvm::formatv(" or {0} (no batch)", kNoBatchDim).str()
                   : "");
  return success();
}

LogicalResult DistDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned region,
                                                    unsigned index,
                                                    NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || index >= fn.getNumArguments())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' belongs on a function argument";
  return verifyBatchDim(op, index, fn.getArgumentTypes()[index], attr,
                        "argument");
}

LogicalResult DistDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned region,
                                                       unsigned index,
                                                       NamedAttribute attr) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || index >= fn.getNumResults())
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' belongs on a function result";
  return verifyBatchDim(op, index, fn.getResultTypes()[index], attr, "result");
}

/// A piece's range along one dimension: none (dim -1, the defaults) or a
/// non-empty range at a non-negative start.
static LogicalResult
verifyPieceRange(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                 int64_t dim, int64_t outer, int64_t start, int64_t size) {
  if (dim < -1)
    return emitError() << name << "_dim " << dim << " is negative";
  if (dim == -1 && (outer != 1 || start != 0 || size != 0))
    return emitError() << "a piece without a " << name
                       << "_dim has no range along it";
  if (dim >= 0 && (outer < 1 || start < 0 || size < 1))
    return emitError() << "the piece's " << name << " range (" << outer
                       << " chunks, start " << start << ", size " << size
                       << ") must have chunks >= 1, start >= 0, size >= 1";
  return success();
}

LogicalResult ExchangePieceAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t peer, int64_t tag,
    int64_t batchDim, int64_t batchOuter, int64_t batchStart, int64_t batchSize,
    int64_t splitDim, int64_t splitStart, int64_t splitSize) {
  if (peer < 0 || tag < 0)
    return emitError() << "a piece's peer (" << peer << ") and tag (" << tag
                       << ") must be non-negative";
  if (failed(verifyPieceRange(emitError, "batch", batchDim, batchOuter,
                              batchStart, batchSize)) ||
      failed(verifyPieceRange(emitError, "split", splitDim, 1, splitStart,
                              splitSize)))
    return failure();
  if (batchDim >= 0 && batchDim == splitDim)
    return emitError() << "a piece's batch_dim and split_dim are both "
                       << batchDim;
  return success();
}

LogicalResult ExchangePieceAttr::verifyFor(
    Type type, function_ref<InFlightDiagnostic()> emitError) const {
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return emitError() << "is a block of a statically shaped tensor, not of "
                       << type;
  auto inside = [&](StringRef name, int64_t dim, int64_t outer, int64_t start,
                    int64_t size) -> LogicalResult {
    if (dim < 0)
      return success();
    if (dim >= ranked.getRank() || ranked.getDimSize(dim) % outer != 0 ||
        size > ranked.getDimSize(dim) / outer ||
        start > ranked.getDimSize(dim) / outer - size)
      return emitError() << "has a " << name << " range (dimension " << dim
                         << ", " << outer << " chunks, start " << start
                         << ", size " << size << ") outside " << type;
    return success();
  };
  if (failed(inside("batch", getBatchDim(), getBatchOuter(), getBatchStart(),
                    getBatchSize())))
    return failure();
  return inside("split", getSplitDim(), 1, getSplitStart(), getSplitSize());
}

SmallVector<int64_t>
ExchangePieceAttr::blockShape(ArrayRef<int64_t> shape) const {
  SmallVector<int64_t> out(shape);
  if (getBatchDim() >= 0)
    out[getBatchDim()] = getBatchOuter() * getBatchSize();
  if (getSplitDim() >= 0)
    out[getSplitDim()] = getSplitSize();
  return out;
}

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t id, StringAttr kind) {
  if (id < 0)
    return emitError() << "device id " << id << " is negative";
  if (!kind || kind.getValue().empty())
    return emitError() << "device " << id << " has an empty kind";
  return success();
}

LogicalResult
GraphInputAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       StringAttr name, RankedTensorType type,
                       int64_t batchDim) {
  if (!name || name.getValue().empty())
    return emitError() << "a graph input has an empty name";
  if (batchDim != kNoBatchDim && (batchDim < 0 || batchDim >= type.getRank()))
    return emitError() << "graph input '" << name.getValue() << "': batch_dim "
                       << batchDim << " is not a dimension of " << type
                       << " (or " << kNoBatchDim << ", no batch)";
  return success();
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, llvm::ArrayRef<int64_t> devices,
                     int64_t splitDim, llvm::ArrayRef<int64_t> sizes,
                     std::optional<ReductionKind> partial, int64_t replicas) {
  if (failed(verifyGroup(devices, emitError)))
    return failure();
  if (replicas < 1 || devices.size() % replicas != 0)
    return emitError() << replicas << " replicas do not divide a group of "
                       << devices.size() << " devices";
  size_t perReplica = devices.size() / replicas;
  if (splitDim < -1)
    return emitError() << "split dimension " << splitDim << " is negative";
  if (splitDim >= 0) {
    if (sizes.size() != perReplica)
      return emitError() << "a split over " << perReplica << " devices needs "
                         << perReplica << " extents, got " << sizes.size();
    for (int64_t s : sizes)
      if (s < 0)
        return emitError() << "extent " << s << " is negative";
  } else if (!sizes.empty()) {
    return emitError() << "extents without a split dimension";
  }
  if (partial && splitDim >= 0)
    return emitError() << "a split value cannot also be partial";
  return success();
}

LogicalResult
ShardingAttr::verifyFor(Type type,
                        function_ref<InFlightDiagnostic()> emitError) const {
  if (!isSplit())
    return success();
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t)
    return emitError() << "a split sharding needs a ranked tensor, not "
                       << type;
  if (getSplitDim() >= t.getRank())
    return emitError() << "split dimension " << getSplitDim()
                       << " does not exist in " << type;
  int64_t extent = t.getDimSize(getSplitDim());
  if (!ShapedType::isDynamic(extent) && sum(getSizes()) != extent)
    return emitError() << "the extents " << list(getSizes()) << " add up to "
                       << sum(getSizes()) << ", but dimension " << getSplitDim()
                       << " of " << type << " has " << extent;
  return success();
}

LogicalResult
OpShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       int64_t dim, DenseI64ArrayAttr parts,
                       std::optional<CollectiveKind> collective) {
  if (dim < -1)
    return emitError() << "dim " << dim
                       << " is neither a result dimension nor -1 (the "
                          "contraction)";
  if (!parts || parts.empty())
    return emitError() << "an op sharding needs at least one part";
  for (int64_t p : parts.asArrayRef())
    if (p < 1)
      return emitError() << "part " << p << " is less than 1";
  if (collective && *collective != CollectiveKind::AllReduce &&
      *collective != CollectiveKind::AllGather &&
      *collective != CollectiveKind::ReduceScatter)
    return emitError() << "the collective after an op is all_reduce, "
                          "all_gather or reduce_scatter, not "
                       << stringifyEnum(*collective);
  return success();
}

/// Relative shares, one positive number per replica.
static LogicalResult verifyShares(function_ref<InFlightDiagnostic()> emitError,
                                  DenseF64ArrayAttr shares, int64_t data,
                                  llvm::StringRef name) {
  if (!shares)
    return success();
  if (static_cast<int64_t>(shares.size()) != data)
    return emitError() << name << " has " << shares.size() << " entries for "
                       << data << " replicas";
  for (double v : shares.asArrayRef())
    if (!(v > 0))
      return emitError() << name << " must be positive, got " << v;
  return success();
}

LogicalResult
StagePlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      DenseI64ArrayAttr devices, int64_t data, int64_t tensor,
                      DenseF64ArrayAttr batchShares, BoolAttr recompute,
                      DenseF64ArrayAttr zeroShares, ArrayAttr kinds,
                      int64_t zeroStage) {
  if (!devices || failed(verifyGroup(devices.asArrayRef(), emitError)))
    return failure();
  if (data < 1 || tensor < 1 ||
      data * tensor != static_cast<int64_t>(devices.size()))
    return emitError() << "a stage of " << devices.size()
                       << " devices needs data >= 1 and tensor >= 1 with data "
                          "x tensor = "
                       << devices.size() << ", got " << data << " x " << tensor;
  if (failed(verifyShares(emitError, batchShares, data, "batch_shares")) ||
      failed(verifyShares(emitError, zeroShares, data, "zero_shares")))
    return failure();
  if (zeroStage != 1 && zeroStage != 2)
    return emitError() << "zero_stage must be 1 or 2, got " << zeroStage;
  if (zeroStage == 2 && !zeroShares)
    return emitError() << "zero_stage 2 needs zero_shares";
  if (!kinds)
    return success();
  if (static_cast<int64_t>(kinds.size()) != devices.size())
    return emitError() << "kinds has " << kinds.size() << " entries for "
                       << devices.size() << " devices";
  for (Attribute k : kinds)
    if (auto str = llvm::dyn_cast<StringAttr>(k); !str || str.empty())
      return emitError() << "a device kind must be a non-empty string, got "
                         << k;
  return success();
}

LogicalResult PlanAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               PlanMode mode, PipelineSchedule schedule,
                               int64_t microbatches,
                               std::optional<int64_t> batch, ArrayAttr stages) {
  if (microbatches < 1)
    return emitError() << "microbatches must be >= 1, got " << microbatches;
  if (batch && (*batch < 1 || *batch % microbatches))
    return emitError() << "the batch of " << *batch
                       << " is not a positive multiple of " << microbatches
                       << " microbatches";
  if (!stages || stages.empty())
    return emitError() << "a plan needs at least one stage";
  llvm::SmallSet<int64_t, 8> seen;
  for (auto [s, a] : llvm::enumerate(stages)) {
    auto stage = llvm::dyn_cast<StagePlanAttr>(a);
    if (!stage)
      return emitError() << "stage " << s
                         << " is not a #dist.stage_plan: " << a;
    for (int64_t d : stage.getDevices().asArrayRef())
      if (!seen.insert(d).second)
        return emitError() << "device " << d << " is in two stages";
  }
  return success();
}

llvm::SmallVector<StagePlanAttr> PlanAttr::getStagePlans() const {
  llvm::SmallVector<StagePlanAttr> out;
  for (Attribute a : getStages())
    out.push_back(llvm::cast<StagePlanAttr>(a));
  return out;
}

//===----------------------------------------------------------------------===//
// dist.mesh
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  if (getDevices().empty())
    return emitOpError() << "has no devices";
  llvm::SmallSet<int64_t, 16> ids;
  for (Attribute a : getDevices()) {
    int64_t id = llvm::cast<DeviceAttr>(a).getId();
    if (!ids.insert(id).second)
      return emitOpError() << "lists device " << id << " twice";
  }
  return success();
}

std::optional<llvm::StringRef> MeshOp::kindOf(int64_t id) {
  for (Attribute a : getDevices()) {
    auto d = llvm::cast<DeviceAttr>(a);
    if (d.getId() == id)
      return d.getKind().getValue();
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Collectives (local form)
//===----------------------------------------------------------------------===//

namespace {
/// The checks every collective shares; `position` is the index of the local
/// device in the group.
struct CollectiveInfo {
  RankedTensorType in, out;
  int64_t position = 0;
};
} // namespace

static FailureOr<CollectiveInfo> verifyCollective(Operation *op,
                                                  llvm::ArrayRef<int64_t> group,
                                                  Value input, Value result) {
  auto emit = [&]() { return op->emitOpError(); };
  if (failed(verifyGroup(group, emit)))
    return failure();
  FailureOr<int64_t> me = localDevice(op);
  if (failed(me))
    return failure();
  auto it = llvm::find(group, *me);
  if (it == group.end())
    return op->emitOpError() << "runs on device " << *me
                             << ", which is not in its group " << list(group);
  CollectiveInfo info;
  info.position = it - group.begin();
  info.in = llvm::cast<RankedTensorType>(input.getType());
  info.out = llvm::cast<RankedTensorType>(result.getType());
  if (!info.in.hasStaticShape() || !info.out.hasStaticShape())
    return op->emitOpError() << "needs static local shapes, got " << info.in
                             << " and " << info.out;
  if (info.in.getElementType() != info.out.getElementType())
    return op->emitOpError()
           << "changes the element type from " << info.in.getElementType()
           << " to " << info.out.getElementType();
  return info;
}

/// `dim` exists, one non-negative size per device; other dims equal.
static LogicalResult verifySplitSizes(Operation *op, const CollectiveInfo &c,
                                      int64_t dim,
                                      llvm::ArrayRef<int64_t> sizes,
                                      size_t groupSize, llvm::StringRef what) {
  if (dim < 0 || dim >= c.in.getRank())
    return op->emitOpError()
           << what << " dimension " << dim << " does not exist in " << c.in;
  if (sizes.size() != groupSize)
    return op->emitOpError() << "needs one " << what << " size per device ("
                             << groupSize << "), got " << sizes.size();
  for (int64_t s : sizes)
    if (s < 0)
      return op->emitOpError() << what << " size " << s << " is negative";
  return success();
}

static LogicalResult expectExtent(Operation *op, llvm::StringRef which,
                                  RankedTensorType t, int64_t dim, int64_t want,
                                  llvm::StringRef why) {
  if (t.getDimSize(dim) != want)
    return op->emitOpError()
           << which << " has " << t.getDimSize(dim) << " along dimension "
           << dim << ", expected " << want << " (" << why << ")";
  return success();
}

static LogicalResult expectOtherDimsEqual(Operation *op,
                                          const CollectiveInfo &c,
                                          llvm::ArrayRef<int64_t> dims) {
  if (c.in.getRank() != c.out.getRank())
    return op->emitOpError() << "changes the rank: " << c.in << " to " << c.out;
  for (int64_t d = 0; d < c.in.getRank(); ++d)
    if (!llvm::is_contained(dims, d) &&
        c.in.getDimSize(d) != c.out.getDimSize(d))
      return op->emitOpError()
             << "changes dimension " << d << ": " << c.in << " to " << c.out;
  return success();
}

LogicalResult AllReduceOp::verify() {
  auto c = verifyCollective(*this, getDevices(), getInput(), getResult());
  if (failed(c))
    return failure();
  if (c->in != c->out)
    return emitOpError() << "result type " << c->out
                         << " differs from the operand type " << c->in;
  return success();
}

LogicalResult GradAllReduceOp::verify() {
  auto c = verifyCollective(*this, getDevices(), getInput(), getResult());
  if (failed(c))
    return failure();
  if (c->in != c->out)
    return emitOpError() << "result type " << c->out
                         << " differs from the operand type " << c->in;
  return success();
}

LogicalResult BroadcastOp::verify() {
  auto c = verifyCollective(*this, getDevices(), getInput(), getResult());
  if (failed(c))
    return failure();
  int64_t root = getRootAttr().getInt();
  if (!llvm::is_contained(getDevices(), root))
    return emitOpError() << "root " << root << " is not in the group "
                         << list(getDevices());
  if (c->in != c->out)
    return emitOpError() << "result type " << c->out
                         << " differs from the operand type " << c->in;
  return success();
}

LogicalResult AllGatherOp::verify() {
  auto c = verifyCollective(*this, getDevices(), getInput(), getResult());
  if (failed(c))
    return failure();
  int64_t dim = getDimAttr().getInt();
  if (failed(verifySplitSizes(*this, *c, dim, getSizes(), getDevices().size(),
                              "gather")) ||
      failed(expectOtherDimsEqual(*this, *c, {dim})))
    return failure();
  if (failed(expectExtent(*this, "the operand", c->in, dim,
                          getSizes()[c->position], "this device's size")) ||
      failed(expectExtent(*this, "the result", c->out, dim, sum(getSizes()),
                          "the sum of the sizes")))
    return failure();
  return success();
}

LogicalResult ReduceScatterOp::verify() {
  auto c = verifyCollective(*this, getDevices(), getInput(), getResult());
  if (failed(c))
    return failure();
  int64_t dim = getDimAttr().getInt();
  if (failed(verifySplitSizes(*this, *c, dim, getSizes(), getDevices().size(),
                              "scatter")) ||
      failed(expectOtherDimsEqual(*this, *c, {dim})))
    return failure();
  if (failed(expectExtent(*this, "the operand", c->in, dim, sum(getSizes()),
                          "the sum of the sizes")) ||
      failed(expectExtent(*this, "the result", c->out, dim,
                          getSizes()[c->position], "this device's size")))
    return failure();
  return success();
}

LogicalResult AllToAllOp::verify() {
  auto c = verifyCollective(*this, getDevices(), getInput(), getResult());
  if (failed(c))
    return failure();
  int64_t split = getSplitDimAttr().getInt(),
          concat = getConcatDimAttr().getInt();
  size_t n = getDevices().size();
  if (split == concat)
    return emitOpError() << "splits and concatenates the same dimension "
                         << split;
  if (failed(verifySplitSizes(*this, *c, split, getSplitSizes(), n, "split")) ||
      failed(
          verifySplitSizes(*this, *c, concat, getConcatSizes(), n, "concat")) ||
      failed(expectOtherDimsEqual(*this, *c, {split, concat})))
    return failure();
  if (failed(expectExtent(*this, "the operand", c->in, split,
                          sum(getSplitSizes()),
                          "the sum of the split sizes")) ||
      failed(expectExtent(*this, "the result", c->out, split,
                          getSplitSizes()[c->position],
                          "this device's split size")) ||
      failed(expectExtent(*this, "the operand", c->in, concat,
                          getConcatSizes()[c->position],
                          "this device's concat size")) ||
      failed(expectExtent(*this, "the result", c->out, concat,
                          sum(getConcatSizes()),
                          "the sum of the concat sizes")))
    return failure();
  return success();
}

#define HETPAR_COLLECTIVE_SYMBOLS(OP)                                          \
  LogicalResult OP::verifySymbolUses(SymbolTableCollection &symbols) {         \
    return verifyLocalMeshDevices(*this, symbols, getMeshAttr(),               \
                                  getDevices());                               \
  }
HETPAR_COLLECTIVE_SYMBOLS(AllReduceOp)
HETPAR_COLLECTIVE_SYMBOLS(AllGatherOp)
HETPAR_COLLECTIVE_SYMBOLS(ReduceScatterOp)
HETPAR_COLLECTIVE_SYMBOLS(AllToAllOp)
HETPAR_COLLECTIVE_SYMBOLS(BroadcastOp)
HETPAR_COLLECTIVE_SYMBOLS(GradAllReduceOp)
#undef HETPAR_COLLECTIVE_SYMBOLS

//===----------------------------------------------------------------------===//
// send / recv
//===----------------------------------------------------------------------===//

static LogicalResult verifyPeer(Operation *op, int64_t peer, int64_t tag,
                                Type type) {
  FailureOr<int64_t> me = localDevice(op);
  if (failed(me))
    return failure();
  if (peer == *me)
    return op->emitOpError() << "exchanges with its own device " << peer;
  if (peer < 0)
    return op->emitOpError() << "peer " << peer << " is negative";
  if (tag < 0 || tag > kMaxTag)
    return op->emitOpError() << "tag " << tag << " is outside [0, " << kMaxTag
                             << "] (the least MPI_TAG_UB MPI allows)";
  if (!llvm::cast<RankedTensorType>(type).hasStaticShape())
    return op->emitOpError() << "needs a static local shape, got " << type;
  return success();
}

SmallVector<ArrayRef<ExchangePieceAttr>>
hetpar::dist::pieceRuns(ArrayRef<ExchangePieceAttr> pieces) {
  SmallVector<ArrayRef<ExchangePieceAttr>> runs;
  for (size_t k = 0, begin = 0; k < pieces.size(); ++k)
    if (k + 1 == pieces.size() ||
        pieces[k + 1].getBatchStart() != pieces[k].getBatchStart()) {
      runs.push_back(pieces.slice(begin, k + 1 - begin));
      begin = k + 1;
    }
  return runs;
}

LogicalResult SendOp::verify() {
  return verifyPeer(*this, getPeerAttr().getInt(), getTagAttr().getInt(),
                    getInput().getType());
}
LogicalResult RecvOp::verify() {
  return verifyPeer(*this, getPeerAttr().getInt(), getTagAttr().getInt(),
                    getResult().getType());
}
LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyLocalMeshDevices(*this, symbols, getMeshAttr(),
                                {getPeerAttr().getInt()});
}
LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyLocalMeshDevices(*this, symbols, getMeshAttr(),
                                {getPeerAttr().getInt()});
}

//===----------------------------------------------------------------------===//
// send_pieces / recv_pieces
//===----------------------------------------------------------------------===//

/// Each piece is a block of `type` exchanged with another device.
static LogicalResult verifyPieces(Operation *op, ArrayAttr pieces, Type type) {
  if (pieces.empty())
    return op->emitOpError() << "has no pieces";
  for (auto piece : pieces.getAsRange<ExchangePieceAttr>()) {
    if (failed(verifyPeer(op, piece.getPeer(), piece.getTag(), type)) ||
        failed(piece.verifyFor(type, [&] {
          return op->emitOpError() << "piece " << piece << " ";
        })))
      return failure();
  }
  return success();
}

/// The ranges of `pieces` follow one another from 0 to `extent` along each
/// dimension: the runs (consecutive pieces of one batch_start) along the
/// batch, the pieces of a run along the split.
static LogicalResult verifyTiling(Operation *op, ArrayAttr pieces,
                                  RankedTensorType type) {
  auto all = llvm::to_vector(pieces.getAsRange<ExchangePieceAttr>());
  ExchangePieceAttr first = all.front();
  auto fail = [&](ExchangePieceAttr p) {
    return op->emitOpError()
           << "pieces do not tile " << type << " at " << p
           << " (runs of one batch_start follow one another along batch_dim, "
              "the pieces of a run along split_dim, each from 0 to the end)";
  };
  SmallVector<ArrayRef<ExchangePieceAttr>> runs = pieceRuns(all);
  if (first.getBatchDim() < 0 && runs.size() > 1)
    return fail(runs[1].front());
  int64_t batchAt = 0;
  for (ArrayRef<ExchangePieceAttr> run : runs) {
    if (run.front().getBatchStart() != batchAt)
      return fail(run.front());
    int64_t splitAt = 0;
    for (const ExchangePieceAttr &p : run) {
      if (p.getBatchDim() != first.getBatchDim() ||
          p.getBatchOuter() != first.getBatchOuter() ||
          p.getSplitDim() != first.getSplitDim() ||
          p.getBatchSize() != run.front().getBatchSize() ||
          p.getSplitStart() != splitAt ||
          (p.getSplitDim() < 0 && &p != &run.front()))
        return fail(p);
      splitAt += p.getSplitSize();
    }
    if (first.getSplitDim() >= 0 &&
        splitAt != type.getDimSize(first.getSplitDim()))
      return fail(run.back());
    batchAt += run.front().getBatchSize();
  }
  if (first.getBatchDim() >= 0 &&
      batchAt * first.getBatchOuter() != type.getDimSize(first.getBatchDim()))
    return fail(all.back());
  return success();
}

LogicalResult SendPiecesOp::verify() {
  return verifyPieces(*this, getPieces(), getInput().getType());
}
LogicalResult RecvPiecesOp::verify() {
  if (failed(verifyPieces(*this, getPieces(), getResult().getType())))
    return failure();
  return verifyTiling(*this, getPieces(),
                      llvm::cast<RankedTensorType>(getResult().getType()));
}

/// The peers of `pieces`, for the mesh check.
static SmallVector<int64_t> peersOf(ArrayAttr pieces) {
  SmallVector<int64_t> peers;
  for (auto piece : pieces.getAsRange<ExchangePieceAttr>())
    if (!llvm::is_contained(peers, piece.getPeer()))
      peers.push_back(piece.getPeer());
  return peers;
}
LogicalResult SendPiecesOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyLocalMeshDevices(*this, symbols, getMeshAttr(),
                                peersOf(getPieces()));
}
LogicalResult RecvPiecesOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyLocalMeshDevices(*this, symbols, getMeshAttr(),
                                peersOf(getPieces()));
}

//===----------------------------------------------------------------------===//
// Global form
//===----------------------------------------------------------------------===//

LogicalResult AnnotateOp::verify() {
  return getSharding().verifyFor(getInput().getType(),
                                 [&] { return emitOpError(); });
}
LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyMeshDevices(*this, symbols, getSharding().getMesh(),
                           getSharding().getDevices());
}

LogicalResult TransferOp::verify() {
  if (failed(getSource().verifyFor(
          getInput().getType(), [&] { return emitOpError() << "source: "; })) ||
      failed(getTarget().verifyFor(
          getInput().getType(), [&] { return emitOpError() << "target: "; })))
    return failure();
  if (getSource().getMesh() != getTarget().getMesh())
    return emitOpError() << "moves between meshes " << getSource().getMesh()
                         << " and " << getTarget().getMesh()
                         << " (one mesh expected)";
  return success();
}
LogicalResult TransferOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyMeshDevices(*this, symbols, getSource().getMesh(),
                               getSource().getDevices())))
    return failure();
  return verifyMeshDevices(*this, symbols, getTarget().getMesh(),
                           getTarget().getDevices());
}

/// One sharding per value, each fitting its value's type and using only the
/// stage's devices.
static LogicalResult verifyStageShardings(StageOp op, ArrayAttr shardings,
                                          TypeRange types,
                                          llvm::StringRef what) {
  if (!shardings)
    return success();
  if (shardings.size() != types.size())
    return op.emitOpError() << "has " << shardings.size() << " " << what
                            << " shardings for " << types.size() << " values";
  for (auto [i, a] : llvm::enumerate(shardings)) {
    auto s = llvm::dyn_cast<ShardingAttr>(a);
    if (!s)
      return op.emitOpError()
             << what << " sharding #" << i << " is not a #dist.sharding";
    if (s.getMesh() != op.getMeshAttr())
      return op.emitOpError()
             << what << " sharding #" << i << " uses mesh " << s.getMesh()
             << ", not the stage's " << op.getMeshAttr();
    if (failed(s.verifyFor(types[i], [&] {
          return op.emitOpError() << what << " sharding #" << i << ": ";
        })))
      return failure();
    for (int64_t d : s.getDevices())
      if (!llvm::is_contained(op.getDevices(), d))
        return op.emitOpError() << what << " sharding #" << i << " uses device "
                                << d << ", which does not run the stage";
  }
  return success();
}

LogicalResult StageOp::verify() {
  // I64Attr getters are unsigned: read the index signed.
  int64_t index = getIndexAttr().getInt();
  if (index < 0)
    return emitOpError() << "stage index " << index << " is negative";
  if ((*this)->getParentOfType<StageOp>())
    return emitOpError() << "is nested in another stage";
  if (failed(verifyGroup(getDevices(), [&] { return emitOpError(); })))
    return failure();
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "body arguments do not match the operands' types";
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "body must end with dist.yield";
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().getTypes()
                         << " but the stage returns " << getResultTypes();
  if (failed(verifyStageShardings(*this, getInShardingsAttr(),
                                  getInputs().getTypes(), "input")) ||
      failed(verifyStageShardings(*this, getOutShardingsAttr(),
                                  getResultTypes(), "output")))
    return failure();
  return success();
}

LogicalResult StageOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyMeshDevices(*this, symbols, getMeshAttr(), getDevices());
}

#define GET_OP_CLASSES
#include "hetpar/Dialect/Dist/DistOps.cpp.inc"
