//===- DistBase.td - dist dialect and attributes ------------------*- tablegen -*-===//
//
// The `dist` dialect: where tensors live on a heterogeneous cluster and how
// they move. Devices have explicit ids and kinds (from the cluster file);
// shardings may split a dimension unevenly; collectives run over explicit,
// ordered device groups; pipeline stages are regions run by a device group
// and values move between stages by transfers (the model of Shardy's MPMD
// fragments and transfers). Collective names follow upstream `shard`.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_DIALECT_DIST_DISTBASE_TD
#define HETPAR_DIALECT_DIST_DISTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/EnumAttr.td"

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::hetpar::dist";
  let summary = "Device meshes with device identity, uneven shardings, collectives, stages";
  let description = [{
    The IR that partitioning produces from a plan and that per-device code
    generation consumes, and the plan itself: `#dist.plan` on the module,
    `dist.stage_id` and `#dist.op_sharding` on the ops, written by the search
    (or by hand) and applied by the partition.

    * `dist.mesh` names the devices of a cluster: explicit ids and kinds, so a
      plan can say "these 31 columns live on the V100 with id 5".
    * `#dist.sharding` places a tensor on an ordered group of devices:
      replicated, or one dimension split with an extent per device (uneven
      splits by device speed are the norm on mixed clusters), or partial (each
      device holds a summand of the value).
    * Global form: `dist.stage` regions (pipeline stages, run by a device
      group) exchange values through `dist.transfer`.
    * Local form: after the per-device split every function carries
      `dist.device = <id>` and works on its own shards; collectives
      (`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`,
      `broadcast`) and `send`/`recv` name the group or peer explicitly, and
      their verifiers check the local shapes against the group's extents.
      Between hetpar-dist-localize and hetpar-dist-lower-exchanges, what
      travels between stages is `send_pieces`/`recv_pieces`: blocks of a
      value (`#dist.piece`), each for one peer under one tag.
  }];
  let useDefaultAttributePrinterParser = 1;
  // `dist.device` on a function (a non-negative integer), `dist.microbatches`
  // on a module, `dist.batch_dim` on per-device function arguments/results.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let usePropertiesForAttributes = 1;
}


//===----------------------------------------------------------------------===//
// Enums: one spelling of each kind, for the IR, plan.json, profiles and the
// cost model alike.
//===----------------------------------------------------------------------===//

def Dist_CollectiveKind : I32EnumAttr<"CollectiveKind",
    "a collective (or point-to-point exchange) over a device group", [
      I32EnumAttrCase<"AllReduce", 0, "all_reduce">,
      I32EnumAttrCase<"AllGather", 1, "all_gather">,
      I32EnumAttrCase<"ReduceScatter", 2, "reduce_scatter">,
      I32EnumAttrCase<"AllToAll", 3, "all_to_all">,
      I32EnumAttrCase<"Broadcast", 4, "broadcast">,
      I32EnumAttrCase<"SendRecv", 5, "send_recv">]> {
  let cppNamespace = "::hetpar::dist";
  let genSpecializedAttr = 0;
}

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how the values of a group combine elementwise (the reductions NCCL and "
    "MPI both provide)", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Max", 1, "max">,
      I32EnumAttrCase<"Min", 2, "min">,
      I32EnumAttrCase<"Prod", 3, "prod">]> {
  let cppNamespace = "::hetpar::dist";
  let genSpecializedAttr = 0;
}

def Dist_PlanMode : I32EnumAttr<"PlanMode",
    "what a plan runs: the forward pass, or whole training steps", [
      I32EnumAttrCase<"Inference", 0, "inference">,
      I32EnumAttrCase<"Training", 1, "training">]> {
  let cppNamespace = "::hetpar::dist";
  let genSpecializedAttr = 0;
}

def Dist_PipelineSchedule : I32EnumAttr<"PipelineSchedule",
    "the order a pipeline stage runs its microbatches in", [
      I32EnumAttrCase<"GPipe", 0, "gpipe">,
      I32EnumAttrCase<"OneFOneB", 1, "1f1b">]> {
  let cppNamespace = "::hetpar::dist";
  let genSpecializedAttr = 0;
}

/// An enum parameter printed as a keyword where it is one and as a string
/// otherwise (`schedule = "1f1b"`), so that every spelling parses back.
class Dist_EnumParameter<EnumInfo info> : EnumParameter<info> {
  let printer = "$_printer.printKeywordOrString(" # info.cppNamespace #
                "::stringifyEnum($_self))";
}

/// Dist_EnumParameter with a default, elided when it has it.
class Dist_DefaultEnumParameter<EnumInfo info, string value>
    : Dist_EnumParameter<info> {
  let defaultValue = info.cppNamespace # "::" # info.className # "::" # value;
}

class Dist_Attr<string name, string mnemonic_, list<Trait> traits = []>
    : AttrDef<Dist_Dialect, name, traits> {
  let mnemonic = mnemonic_;
}

def Dist_DeviceAttr : Dist_Attr<"Device", "device"> {
  let summary = "One device of a mesh: id and kind";
  let description = [{
    `#dist.device<3, "V100-SXM2-32GB">`: the device with id 3 (its index in
    the cluster file's device order) is a V100. The kind names a catalog entry
    (`hetpar-cluster --catalog`).

    Constraints: the id is non-negative; the kind is not empty.
  }];
  let parameters = (ins "int64_t":$id, "::mlir::StringAttr":$kind);
  let assemblyFormat = "`<` $id `,` $kind `>`";
  let genVerifyDecl = 1;
}

// `partial` always names its reduction: `partial` alone is a parse error (the
// default parser of an optional enum would accept it and drop `partial`).
def Dist_PartialParameter
    : OptionalParameter<"std::optional<ReductionKind>"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<std::optional<ReductionKind>> {
    auto kind = ::mlir::FieldParser<ReductionKind>::parse($_parser);
    if (::mlir::failed(kind))
      return ::mlir::failure();
    return std::optional<ReductionKind>(*kind);
  }() }];
}

def Dist_ShardingAttr : Dist_Attr<"Sharding", "sharding"> {
  let summary = "Where a tensor lives: a device group, and how it is split";
  let description = [{
    `#dist.sharding<@mesh, [0, 1, 2, 3] split 1 sizes [32, 32, 31, 31]>`: dimension
    1 of the tensor is split over devices 0..3 in that order, device 0 holding
    the first 32 indices, device 3 the last 31. Without `split` the tensor is
    replicated on every device of the group; `partial sum` says each device
    holds a summand (the state after a row-parallel matmul, before its
    all-reduce; max, min and prod likewise).

    `replicas 2` makes the group data-parallel replicas of equal size, in
    order (`[4, 5, 6, 7] replicas 2`: replica 0 is devices 4 and 5, as in a
    `#dist.stage_plan` of data 2 x tensor 2). Each replica holds its own rows
    of the batch, in the plan's batch shares, and within the replica the
    value lies as `split` or `partial` say, with one extent per device of a
    replica: the layout of a value in a data x tensor stage.

    Constraints: the group is not empty and has no repeated device; device ids
    are non-negative; `replicas` >= 1 divides the group's size; `split` names
    a dimension >= 0 and comes with one non-negative extent per device of a
    replica; `partial` (sum, max, min or prod) is not combined with `split`.
    Where the sharding is attached to a value, the split dimension must exist
    and the extents must add up to its size; the devices must be in the mesh.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        ArrayRefParameter<"int64_t">:$devices,
                        DefaultValuedParameter<"int64_t", "-1">:$split_dim,
                        OptionalArrayRefParameter<"int64_t">:$sizes,
                        Dist_PartialParameter:$partial,
                        DefaultValuedParameter<"int64_t", "1">:$replicas);
  let assemblyFormat = [{
    `<` $mesh `,` `[` $devices `]` (`replicas` $replicas^)?
    (`split` $split_dim^ `sizes` ` ` `[` $sizes `]`)? (`partial` $partial^)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True when one dimension is split over the group.
    bool isSplit() const { return getSplitDim() >= 0; }
    /// Checks the sharding against the type of the value it is attached to:
    /// the split dimension exists and the extents add up to its size.
    ::llvm::LogicalResult verifyFor(::mlir::Type type,
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError) const;
  }];
}

/// A reduction as an op attribute: `reduction sum` in an op's format,
/// `#dist<reduction sum>` where its type is not known.
def Dist_ReductionKindAttr
    : EnumAttr<Dist_Dialect, Dist_ReductionKind, "reduction"> {
  let assemblyFormat = "$value";
}

//===----------------------------------------------------------------------===//
// The plan, as the search writes it onto the model (the global form before
// the partition)
//===----------------------------------------------------------------------===//

def Dist_OpShardingAttr : Dist_Attr<"OpSharding", "op_sharding"> {
  let summary = "How one op is split over its stage's tensor-parallel group";
  let description = [{
    `#dist.op_sharding<dim = 1, parts = [3, 1]>` on an op (under the
    name `dist.op_sharding`): its result dimension 1 is split over the
    replica's tensor-parallel devices in order, the first holding 3 of its 4
    indices ("column parallel"). `dim = -1` splits the op's contraction
    instead ("row parallel": each device holds a partial result). The parts
    are whole elements of the factor the op's sharding rule finds for `dim`
    (a merged dimension is split along its outer sub-factor, whole heads
    of `N*H`, for example).

    `collective` names the collective that follows the op over the group:
    `all_reduce` (partial sums become whole), `all_gather` (a split result
    becomes whole) or `reduce_scatter` (partial sums become a split); none
    when the next op consumes the split as it is (Megatron's column-parallel
    op feeding a row-parallel one).

    Constraints: `dim` >= -1; at least one part, each >= 1; `collective`, when
    given, is all_reduce, all_gather or reduce_scatter. On an op: the op has
    a `dist.stage_id`, and where the module has a `#dist.plan`, one part per
    tensor-parallel device of that stage.
  }];
  let parameters = (ins "int64_t":$dim, "::mlir::DenseI64ArrayAttr":$parts,
      OptionalParameter<"std::optional<CollectiveKind>">:$collective);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dist_StagePlanAttr : Dist_Attr<"StagePlan", "stage_plan"> {
  let summary = "One pipeline stage of a plan: its devices as a data x tensor mesh";
  let description = [{
    `#dist.stage_plan<devices = [4, 5, 6, 7], data = 2, tensor = 2,
    batch_shares = [5.0, 3.0]>`: devices 4..7 run the stage as 2
    data-parallel replicas of 2 tensor-parallel devices; replica r is devices
    [r * tensor, (r + 1) * tensor), so replica 0 is devices 4 and 5. The
    replicas' rows of each microbatch are in proportion to `batch_shares`
    (equal when absent) and must come out whole.

    `recompute` (training): the stage recomputes its activations in the
    backward pass. `zero_shares` (training): ZeRO, each replica's relative
    share of the optimizer state (absent: every replica holds all of it).
    `zero_stage` (with `zero_shares`): 1 (default) reduce-scatters the
    step's summed gradients; 2 also keeps only the replica's shard of the
    gradients summed over a pipeline's microbatches, reduce-scattering each
    microbatch's (Rajbhandari et al. 2020, "ZeRO", stage 2).
    `kinds`: each device's kind, as the cluster file names it.

    Constraints: at least one device, none negative or repeated; `data` and
    `tensor` >= 1 with data x tensor devices; `batch_shares` and
    `zero_shares` have one positive entry per replica; `zero_stage` is 1 or
    2, and 2 only with `zero_shares`; `kinds` has one non-empty string per
    device.
  }];
  let parameters = (ins "::mlir::DenseI64ArrayAttr":$devices,
      "int64_t":$data, "int64_t":$tensor,
      OptionalParameter<"::mlir::DenseF64ArrayAttr">:$batch_shares,
      OptionalParameter<"::mlir::BoolAttr">:$recompute,
      OptionalParameter<"::mlir::DenseF64ArrayAttr">:$zero_shares,
      OptionalParameter<"::mlir::ArrayAttr">:$kinds,
      DefaultValuedParameter<"int64_t", "1">:$zero_stage);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether the stage recomputes its activations (false when absent).
    bool recomputes() const { return getRecompute() && getRecompute().getValue(); }
  }];
}

def Dist_PlanAttr : Dist_Attr<"Plan", "plan"> {
  let summary = "A plan: pipeline stages, microbatches, schedule, mode";
  let description = [{
    ```mlir
    module attributes {dist.plan = #dist.plan<mode = training,
        schedule = "1f1b", microbatches = 4, batch = 32,
        stages = [#dist.stage_plan<devices = [0], data = 1, tensor = 1>,
                  #dist.stage_plan<devices = [1, 2], data = 2, tensor = 1>]>}
    ```
    The plan of the module it is attached to (under the name `dist.plan`):
    its ops are assigned to the stages by `dist.stage_id` and split by
    `#dist.op_sharding`. Each step's `batch` samples (absent: the model's
    first input's batch dimension) are cut into `microbatches` (default 1),
    and each stage runs them in `schedule` order (default gpipe). `mode`
    defaults to inference. `hetpar-dist-partition` applies it.

    Constraints: `microbatches` >= 1; at least one stage, each a
    `#dist.stage_plan`; no device in two stages; `batch`, when given, is a
    positive multiple of `microbatches`. On a module: every op the partition
    splits has a `dist.stage_id` less than the number of stages.
  }];
  let parameters = (ins
      Dist_DefaultEnumParameter<Dist_PlanMode, "Inference">:$mode,
      Dist_DefaultEnumParameter<Dist_PipelineSchedule, "GPipe">:$schedule,
      DefaultValuedParameter<"int64_t", "1">:$microbatches,
      OptionalParameter<"std::optional<int64_t>">:$batch,
      "::mlir::ArrayAttr":$stages);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The stages (the verifier has checked that each is a StagePlanAttr).
    ::llvm::SmallVector<StagePlanAttr> getStagePlans() const;
  }];
}

def Dist_GraphInputAttr : Dist_Attr<"GraphInput", "graph_input"> {
  let summary = "One input of the partitioned graph, as a whole step takes it";
  let description = [{
    `#dist.graph_input<name = "pixels", type = tensor<32x3x224x224xf32>,
    batch_dim = 0>`: the graph's input `pixels`, whole batch. A partitioned
    module lists its graph's inputs in graph order under the module
    attribute `dist.graph_inputs`; each device function takes only those its
    stage reads (stageTakesInput), under the same names (`onnx.name` on its
    arguments). The runtime checks a step's inputs against this list on every
    device (so that all fail together) and hands each device its own.
    `batch_dim` is the dimension holding the batch, -1 (the default) when
    the input holds none.
    The labels a training loss adds are one too: hetpar-compile writes them
    as the module attribute `hetpar.training_labels` (batch_dim 0), and the
    partition of a training plan appends them to `dist.graph_inputs`.

    Constraints: the name is not empty; `batch_dim` is -1 or a dimension of
    `type`.
  }];
  let parameters = (ins "::mlir::StringAttr":$name,
      "::mlir::RankedTensorType":$type,
      DefaultValuedParameter<"int64_t", "-1">:$batch_dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Messages between devices before they are sends and receives
// (dist.send_pieces / dist.recv_pieces)
//===----------------------------------------------------------------------===//

def Dist_ExchangePieceAttr : Dist_Attr<"ExchangePiece", "piece"> {
  let summary = "One message of a value between two devices: a peer, a tag, a block";
  let description = [{
    `#dist.piece<peer = 2, tag = 0, batch_dim = 0, batch_start = 3,
    batch_size = 5>`: one message that carries rows [3, 8) of dimension 0 of
    a value, to or from device 2 under tag 0: a block of the value that
    `dist.send_pieces` sends, or that `dist.recv_pieces` receives.

    The block: along `batch_dim`, viewed as `batch_outer` equal chunks (a
    batch that is the outer factor of a merged dimension, such as `N*H`),
    indices [`batch_start`, `batch_start + batch_size`) of every chunk; along
    `split_dim` (a tensor-parallel split), indices [`split_start`,
    `split_start + split_size`). A dimension without a piece range is whole;
    a piece with neither is the whole value.

    Constraints: `peer` >= 0 and `tag` >= 0; `batch_dim` and `split_dim` are
    -1 (none) or dimensions >= 0, not the same one; with a batch range,
    `batch_outer` >= 1, `batch_start` >= 0 and `batch_size` >= 1; without
    one, the defaults (1, 0, 0); likewise `split_start` and `split_size`.
    On a value: the dimensions exist, `batch_outer` divides the batch
    dimension's extent, and each range lies within its dimension (of one
    chunk).
  }];
  let parameters = (ins "int64_t":$peer, "int64_t":$tag,
      DefaultValuedParameter<"int64_t", "-1">:$batch_dim,
      DefaultValuedParameter<"int64_t", "1">:$batch_outer,
      DefaultValuedParameter<"int64_t", "0">:$batch_start,
      DefaultValuedParameter<"int64_t", "0">:$batch_size,
      DefaultValuedParameter<"int64_t", "-1">:$split_dim,
      DefaultValuedParameter<"int64_t", "0">:$split_start,
      DefaultValuedParameter<"int64_t", "0">:$split_size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Checks the piece against the type of the value it is a block of: the
    /// dimensions exist, the chunks divide the batch dimension, the ranges
    /// lie within it.
    ::llvm::LogicalResult verifyFor(::mlir::Type type,
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError) const;
    /// The shape of the block in a value of shape `shape` (verifyFor holds).
    ::llvm::SmallVector<int64_t> blockShape(::llvm::ArrayRef<int64_t> shape) const;
  }];
}

#endif // HETPAR_DIALECT_DIST_DISTBASE_TD
