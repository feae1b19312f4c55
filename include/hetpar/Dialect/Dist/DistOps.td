//===- DistOps.td - dist dialect operations -----------------------*- tablegen -*-===//
//
// Each description ends with the op's constraints; the verifier implements
// them (dialects/dist/DistOps.cpp) and test/Dialect/Dist/invalid.mlir has one
// negative test per constraint.
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_DIALECT_DIST_DISTOPS_TD
#define HETPAR_DIALECT_DIST_DISTOPS_TD

include "hetpar/Dialect/Dist/DistBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Dist_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dist_Dialect, mnemonic, traits>;

def Dist_MeshOp : Dist_Op<"mesh", [Symbol]> {
  let summary = "The devices of a cluster, with ids and kinds";
  let description = [{
    ```mlir
    dist.mesh @cluster devices [#dist.device<0, "A100-SXM4-80GB">,
                                #dist.device<1, "V100-SXM2-32GB">]
    ```
    Device groups of the other ops are lists of these ids.

    Constraints: at least one device; ids are unique.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypedArrayAttrBase<Dist_DeviceAttr, "devices">:$devices);
  let assemblyFormat = "$sym_name `devices` $devices attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The kind of device `id`, or nullopt when the mesh has no such device.
    std::optional<::llvm::StringRef> kindOf(int64_t id);
  }];
}

//===----------------------------------------------------------------------===//
// Local form: collectives and point-to-point transfers
//===----------------------------------------------------------------------===//

class Dist_CollectiveOp<string mnemonic, dag extraArgs, string extraFormat,
                        string doc>
    : Dist_Op<mnemonic, [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let description = doc # [{

    Local form: the op is inside a function with `dist.device = <id>`, that
    device is in the group, and its operand and result are its local shards.
    Every device of the group runs the same op with the same group, counts and
    reduction (the runtime's debug mode checks this), so NCCL and MPI see
    matching calls.

    Common constraints: the mesh exists; the group is not empty, has no
    repeated device, contains only devices of the mesh and contains the
    enclosing function's `dist.device` (a device of the mesh); operand and
    result have static shapes and the same element type.
  }];
  let arguments = !con((ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                            DenseI64ArrayAttr:$devices), extraArgs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `on` $mesh $devices " # extraFormat #
                       " attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
    (ins Dist_ReductionKindAttr:$reduction), "`reduction` `` $reduction", [{
    Every device of the group gets the elementwise reduction (sum, max, min
    or prod) of the group's operands.

    Constraints: the result type equals the operand type.
  }]> {
  let summary = "All-reduce over a device group";
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather",
    (ins I64Attr:$dim, DenseI64ArrayAttr:$sizes), "`dim` $dim `sizes` $sizes", [{
    Concatenates the group's operands along `dim`, in group order; device i
    contributes `sizes[i]` indices (uneven shards keep their extents).

    Constraints: `dim` is a dimension of the operand; one size per device,
    none negative; the operand's extent along `dim` is this device's size; the
    result's is their sum; other dimensions are equal.
  }]> {
  let summary = "All-gather of uneven shards along one dimension";
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter",
    (ins Dist_ReductionKindAttr:$reduction, I64Attr:$dim,
         DenseI64ArrayAttr:$sizes),
    "`reduction` `` $reduction `dim` $dim `sizes` $sizes", [{
    Reduces the group's operands elementwise and leaves device i with indices
    of `dim` from sizes[0] + ... + sizes[i-1], `sizes[i]` of them.

    Constraints: `dim` is a dimension of the operand; one size per device, none negative; the
    operand's extent along `dim` is their sum; the result's is this device's
    size; other dimensions are equal.
  }]> {
  let summary = "Reduce-scatter into uneven shards along one dimension";
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all",
    (ins I64Attr:$split_dim, DenseI64ArrayAttr:$split_sizes,
         I64Attr:$concat_dim, DenseI64ArrayAttr:$concat_sizes),
    "`split` $split_dim $split_sizes `concat` $concat_dim $concat_sizes", [{
    Each device cuts its operand along `split_dim` into pieces of
    `split_sizes` (piece j goes to device j) and concatenates what it receives
    along `concat_dim`, device j's piece having `concat_sizes[j]` indices
    there (a resharding from one split dimension to another, uneven allowed).

    Constraints: the two dimensions differ and exist; one split size and one
    concat size per device, none negative; along `split_dim` the operand has
    the sum of the split sizes and the result this device's split size; along
    `concat_dim` the operand has this device's concat size and the result
    their sum; other dimensions are equal.
  }]> {
  let summary = "All-to-all between two split dimensions";
}

def Dist_BroadcastOp : Dist_CollectiveOp<"broadcast", (ins I64Attr:$root),
    "`root` $root", [{
    Every device of the group gets the operand of device `root`.

    Constraints: the root is in the group; the result type equals the operand
    type.
  }]> {
  let summary = "Broadcast from one device of a group";
}

def Dist_GradAllReduceOp : Dist_CollectiveOp<"grad_all_reduce", (ins), "", [{
    Identity in the forward pass; in the backward pass the gradient of the
    result is all-reduced (summed) over the group to become the operand's.
    hetpar-dist-partition (training) puts it where a value that is
    replicated over a tensor-parallel group enters work that differs per
    device (the input of a column-parallel matmul, a replicated parameter
    sliced on the device): each device's backward computes only its part of
    that value's gradient. This is Megatron-LM's `f` (copy to the
    tensor-parallel region); the all-reduce that combines partial sums is its
    `g`, whose gradient is the identity. hetpar-onnx-differentiate builds the
    all-reduce, zeros where no gradient reaches the result (every device of
    the group runs it), and replaces the op by its operand; code generation
    never sees it.

    Constraints: the result type equals the operand type.
  }]> {
  let summary = "Identity whose gradient is all-reduced over the group "
                "(Megatron's f)";
}

def Dist_SendOp : Dist_Op<"send",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Send a tensor to one device (the sending half of a transfer)";
  let description = [{
    Local form: sends the operand to device `peer`, matched by the `dist.recv`
    with this device as peer and the same tag. The runtime groups both halves
    of every exchange (ncclGroupStart/End), so pipelines cannot deadlock.

    Constraints: inside a function with `dist.device`; the mesh exists and
    has the peer and the local device; the peer is another device; the tag is
    in [0, 32767] (the least MPI_TAG_UB MPI allows); the operand has a static
    shape.
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat =
      "$input `on` $mesh `to` $peer `tag` $tag attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_RecvOp : Dist_Op<"recv",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Receive a tensor from one device";
  let description = [{
    Local form: the result is what device `peer` sent with the same tag.

    Constraints: as for `dist.send`; the result has a static shape.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, I64Attr:$peer, I64Attr:$tag);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "`on` $mesh `from` $peer `tag` $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Dist_SendPiecesOp : Dist_Op<"send_pieces",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Send blocks of a tensor to devices (before they are dist.send)";
  let description = [{
    ```mlir
    dist.send_pieces %x on @mesh [#dist.piece<peer = 2, tag = 0,
        batch_dim = 0, batch_start = 0, batch_size = 3>,
        #dist.piece<peer = 3, tag = 0, batch_dim = 0, batch_start = 3,
        batch_size = 5>] : tensor<8x16xf32>
    ```
    Local form, between hetpar-dist-localize and hetpar-dist-lower-exchanges:
    each piece's block of the operand goes to the piece's peer under its
    tag, in piece order. hetpar-dist-lower-exchanges makes each piece a
    slice and a `dist.send`; a run of consecutive `send_pieces` becomes one
    exchange step, its slices first and then its sends back to back.

    Constraints: inside a function with `dist.device`; at least one piece,
    each a block of the operand's static type (#dist.piece's constraints on
    a value) to another device of the mesh, with a tag in [0, 32767] (as
    `dist.send`).
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
      TypedArrayAttrBase<Dist_ExchangePieceAttr, "pieces">:$pieces);
  let assemblyFormat = "$input `on` $mesh $pieces attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dist_RecvPiecesOp : Dist_Op<"recv_pieces",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Receive a tensor in blocks from devices (before they are dist.recv)";
  let description = [{
    ```mlir
    %x = dist.recv_pieces on @mesh [#dist.piece<peer = 0, tag = 0,
        batch_dim = 0, batch_start = 0, batch_size = 2>,
        #dist.piece<peer = 1, tag = 0, batch_dim = 0, batch_start = 2,
        batch_size = 4>] : tensor<6x16xf32>
    ```
    Local form, between hetpar-dist-localize and hetpar-dist-lower-exchanges:
    the result is joined from the blocks its pieces' peers send under their
    tags. hetpar-dist-lower-exchanges makes each piece a `dist.recv` of the
    block's shape and joins them (`onnx.Concat`): consecutive pieces of one
    `batch_start` along `split_dim`, then those runs along `batch_dim` (in
    `batch_outer` chunks); a run of consecutive `recv_pieces` becomes one
    exchange step, its receives back to back and then the joins.

    Constraints: inside a function with `dist.device`; at least one piece,
    each a block of the result's static type from another device of the
    mesh; the pieces tile the result: they agree on `batch_dim`,
    `batch_outer` and `split_dim`, the runs' batch ranges follow one another
    from 0 to the end of a chunk, and within each run the split ranges
    follow one another from 0 to the end of `split_dim` (a piece without
    ranges is the whole result, and alone).
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh,
      TypedArrayAttrBase<Dist_ExchangePieceAttr, "pieces">:$pieces);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "`on` $mesh $pieces attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Global form: shardings, pipeline stages, transfers
//===----------------------------------------------------------------------===//

def Dist_AnnotateOp : Dist_Op<"annotate", [Pure,
    AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Attach a sharding to a value";
  let description = [{
    The result is the operand, placed as `sharding` says (global shape).

    Constraints: the sharding fits the type (the split dimension exists, the
    extents add up to its size); its mesh exists and has its devices.
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `:` type($input) `as` qualified($sharding) attr-dict";
  let hasVerifier = 1;
}

def Dist_StageOp : Dist_Op<"stage", [IsolatedFromAbove, RecursiveMemoryEffects,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A pipeline stage: a region run by one device group";
  let description = [{
    ```mlir
    %y = dist.stage 0 on @cluster [0, 1] ins(%x) {
    ^bb0(%a: tensor<8x64xf32>):
      ...
      dist.yield %b : tensor<8x64xf32>
    } : (tensor<8x64xf32>) -> tensor<8x64xf32>
    ```
    Stage `index` of the pipeline runs its body on devices `devices` (global
    shapes inside; the body's own ops may carry shardings over these
    devices). Values reach other stages through `dist.transfer`. Optional
    `in_shardings` / `out_shardings` give one `#dist.sharding` per operand /
    result.

    Constraints: the index is non-negative; stages do not nest; the group is
    not empty, has no repeated device and only devices of the mesh; the
    body's arguments have the operands' types and its `dist.yield` the
    results' types; each given sharding fits its value, uses the stage's mesh
    and only the stage's devices, and there is one per operand (result).
  }];
  let arguments = (ins Variadic<AnyType>:$inputs, I64Attr:$index,
                       FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$devices,
                       OptionalAttr<ArrayAttr>:$in_shardings,
                       OptionalAttr<ArrayAttr>:$out_shardings);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $index `on` $mesh $devices `ins` `(` $inputs `)` attr-dict-with-keyword $body
    `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def Dist_YieldOp : Dist_Op<"yield", [Pure, Terminator, HasParent<"StageOp">]> {
  let summary = "The values a stage returns";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Dist_TransferOp : Dist_Op<"transfer", [AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Move a value between device groups (stage to stage)";
  let description = [{
    The value, placed as `source` says, becomes placed as `target` says
    (global shape unchanged): the point-to-point sends and receives (or
    collectives) between the two groups that the per-device split emits.

    Constraints: both shardings fit the type and use the same mesh, which
    exists and has their devices.
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$source,
                       Dist_ShardingAttr:$target);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$input `:` type($input) `from` qualified($source) `to` "
      "qualified($target) attr-dict";
  let hasVerifier = 1;
}

#endif // HETPAR_DIALECT_DIST_DISTOPS_TD
