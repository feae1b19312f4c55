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

def Dist_Dialect : Dialect {
  let name = "dist";
  let cppNamespace = "::hetpar::dist";
  let summary = "Device meshes with device identity, uneven shardings, collectives, stages";
  let description = [{
    The IR that partitioning produces from the search's annotations
    (`hetpar.stage`, `hetpar.sharding`, `hetpar.plan`) and that per-device code
    generation consumes.

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
  }];
  let useDefaultAttributePrinterParser = 1;
  // `dist.device` on a function (a non-negative integer), `dist.microbatches`
  // on a module, `dist.batch_dim` on per-device function arguments/results.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let usePropertiesForAttributes = 1;
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

def Dist_ShardingAttr : Dist_Attr<"Sharding", "sharding"> {
  let summary = "Where a tensor lives: a device group, and how it is split";
  let description = [{
    `#dist.sharding<@mesh, [0, 1, 2, 3] split 1 sizes [32, 32, 31, 31]>`: dimension
    1 of the tensor is split over devices 0..3 in that order, device 0 holding
    the first 32 indices, device 3 the last 31. Without `split` the tensor is
    replicated on every device of the group; `partial "sum"` says each device
    holds a summand (the state after a row-parallel matmul, before its
    all-reduce; "max", "min" and "prod" likewise).

    Constraints: the group is not empty and has no repeated device; device ids
    are non-negative; `split` names a dimension >= 0 and comes with one
    non-negative extent per device; `partial` is "sum", "max", "min" or "prod"
    and is not combined with `split`. Where the sharding is attached to a value, the
    split dimension must exist and the extents must add up to its size; the
    devices must be in the mesh.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        ArrayRefParameter<"int64_t">:$devices,
                        DefaultValuedParameter<"int64_t", "-1">:$split_dim,
                        OptionalArrayRefParameter<"int64_t">:$sizes,
                        OptionalParameter<"::mlir::StringAttr">:$partial);
  let assemblyFormat = [{
    `<` $mesh `,` `[` $devices `]` (`split` $split_dim^ `sizes` ` ` `[` $sizes `]`)?
    (`partial` $partial^)? `>`
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

#endif // HETPAR_DIALECT_DIST_DISTBASE_TD
