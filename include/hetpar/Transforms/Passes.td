//===- Passes.td - HetPar passes on the onnx dialect -------------*- tablegen -*-===//

#ifndef HETPAR_TRANSFORMS_PASSES_TD
#define HETPAR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SetInputShapesPass : Pass<"hetpar-onnx-set-input-shapes", "mlir::ModuleOp"> {
  let summary = "Fix the shapes of graph inputs (dynamic batch or sequence axes)";
  let description = [{
    Sets the types of the arguments of every function that has an argument named
    (`onnx.name`) in `shapes`. Each entry is `NAME=2x128` (`?` keeps a dimension as
    declared). A shape must have the argument's rank and agree with its static extents;
    a name that matches no argument is an error. Results of the ops are not updated:
    run `hetpar-onnx-infer-shapes` next.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "Input shapes as NAME=DxDx... (comma-separated list)">,
  ];
}

def InferShapesPass : Pass<"hetpar-onnx-infer-shapes", "mlir::func::FuncOp"> {
  let summary = "Infer static result types and fold shape computations in one sweep";
  let description = [{
    Visits the ops of the function in order. For each op with a shape rule
    (InferShapesOpInterface) it refines the result types to what the rule gives (the
    rule reads operand types and constant operands); then, when `fold` is set, it
    folds the op if its operands are constant or its result can be computed from
    static shapes (Shape, Size). Because producers come before users, one sweep turns
    the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of models exported
    with dynamic axes into constants and static shapes. Regions are swept before
    the op that holds them: an If takes the types its branches yield, and an If
    whose condition folded to a constant is replaced by its taken branch (the
    shape tests of TorchScript exports). Ops the dialect does not model are re-typed
    by ONNX's schema inference when the importer library installed it. Finally the
    function's result types are updated. An op whose operands break its
    constraints is an error at the op's location (the ONNX node).
  }];
  let options = [
    Option<"fold", "fold", "bool", /*default=*/"true",
           "Fold ops with constant operands during the sweep">,
  ];
}

def FoldConstantsPass : Pass<"hetpar-onnx-fold-constants"> {
  let summary = "Fold onnx ops whose operands are constants";
  let description = [{
    Repeatedly folds every op whose operands are constants (and Shape/Size of
    tensors of static shape), using the ops' folders, until nothing changes; removes
    ops that became dead and merges equal constants. Folded results are limited in
    size (see dialects/onnx/Folding.cpp); this is for shape arithmetic, not for
    precomputing large tensors.
  }];
}

def DecomposeRecurrencePass : Pass<"hetpar-onnx-decompose-rnn", "mlir::func::FuncOp"> {
  let summary = "Unroll LSTM, GRU and RNN over their static sequence";
  let description = [{
    Replaces each `onnx.Generic` LSTM, GRU or RNN (default domain) whose operands
    have static shapes by the ops of ONNX's equations (Operators.md, opset 14):
    the input sequence times W once (MatMul), then per time step the hidden
    state times R, the gates (Slice), their activations, and the state update;
    Y, Y_h and Y_c are joined with Unsqueeze and Concat. Both layouts, all three
    directions, initial states, biases, LSTM peepholes, `clip`, GRU's
    `linear_before_reset` and the activations Sigmoid, Tanh and Relu are
    handled. `sequence_lens` from data runs forward only: a sample's state
    stops at its end and its Y is 0 after it (constant lengths equal to the
    sequence are dropped).

    Errors, at the node: `input_forget`, `activation_alpha`/`activation_beta`,
    other activations, and a backward direction with `sequence_lens` that may
    be shorter than the sequence.
  }];
}

def EraseIdentityPass : Pass<"hetpar-onnx-erase-identity", "mlir::func::FuncOp"> {
  let summary = "Remove Identity and Dropout that drops nothing";
  let description = [{
    Replaces `onnx.Identity` by its operand and an `onnx.Dropout` that drops
    nothing (no `training_mode`, a constant false one, or a constant ratio of 0:
    onnx::isRandomDropout false) by its input; a used `mask` result becomes an
    all-true constant. Only ops whose result type equals the forwarded
    value's type are removed (run `hetpar-onnx-infer-shapes` first).
  }];
}

def FoldTransposesPass : Pass<"hetpar-onnx-fold-transposes", "mlir::func::FuncOp"> {
  let summary = "Fold matrix transposes into Gemm's transA/transB";
  let description = [{
    A Transpose that swaps the two axes of a matrix and feeds a matrix product
    is folded into the product as BLAS operand flags, so that the generated
    program never copies the transposed matrix (GPT-2's tied LM head copied its
    154 MB embedding on every run):

    - `MatMul(A, Transpose(W))`, W of rank 2 and A of rank 2 or more, becomes
      `Reshape(Gemm(Reshape(A, [rows, K]), W, transB = 1), shape of the
      MatMul)`; reshapes are views in the generated code;
    - `MatMul(Transpose(X), B)`, X and B of rank 2, becomes
      `Gemm(X, B, transA = 1)`;
    - `Gemm(Transpose(X), ...)` and `Gemm(..., Transpose(W), ...)` toggle
      `transA` / `transB` and read X / W.

    A Transpose left without users is erased. Needs static shapes; other ops
    and batched transposes (rank 3 and more) are left alone. hetpar-compile
    runs it on each device's function before code generation.
  }];
}

def FuseAttentionPass : Pass<"hetpar-onnx-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Fuse scaled dot-product attention into one FusedAttention op";
  let description = [{
    Rewrites the attention that exporters write,

    ```
    S = MatMul(Q, KT)                  Q [..., Lq, D], KT [..., D, Lk]
    S = Mul(S, scale) | Div(S, scale)  optional, scale a scalar
    S = Add(S, mask)                   optional additive mask, or
    S = Where(c, S, fill) | Where(c, fill, S)   optional select mask
    Y = MatMul(Softmax(S, last axis), V)        V [..., Lk, Dv]
    ```

    into one `onnx.FusedAttention`, whose kernels compute Y block by block
    with an online softmax and never write the Lq x Lk scores (GPT-2 small's
    8 x 512 run wrote 100 MB of them per layer). The pattern must be exact:

    - every intermediate value has exactly one use (so a training graph,
      whose backward pass reads the Softmax result, is left alone);
    - Q, KT and V have the scores' rank and leading dimensions (no
      broadcasting inside the products), static shapes;
    - the Softmax normalizes the last axis; the mask broadcasts to the
      scores without changing their shape; scale and fill are scalars.

    Anything else is left as it is. A Transpose that feeds Q, KT or V and has
    no other use is folded into the op (`q_perm`, `kt_perm`, `v_perm`) when
    one of its matrix's dimensions stays contiguous, and a Transpose that is
    the only use of the result and keeps its last dimension last becomes
    `y_perm`: the exporters' `[N, L, H, D]` <-> `[N, H, L, D]` head
    transposes turn into strides instead of copies. Grouped-query attention's
    repeat of the key/value heads (Hugging Face's `repeat_kv`:
    Reshape(Expand(Unsqueeze(kv)), ...) that merges kv's head axis with g
    copies of each head, static shapes, each op used only by the next), on
    both KT and V with one factor g on the head axis the op reads (its
    dimension r - 3, rank 8 at most), is folded into `kv_repeat` = g: the op
    reads kv in place instead of g copies. A repeat on only one of them stays.
    hetpar-compile runs it on each device's function before code generation
    (after the search and the partition, which see the unfused graph);
    `--fuse-attention=false` turns it off.
  }];
}

def FuseConvPass : Pass<"hetpar-onnx-fuse-conv", "mlir::func::FuncOp"> {
  let summary = "Fuse a Conv's residual Add and activation into a FusedConv";
  let description = [{
    Rewrites

    ```
    Y = Conv(X, W, B)      any rank, group, padding
    Y = Add(Y, Z)          optional, Z of Y's exact type (either operand)
    Y = Relu(Y) | Clip(Y, min, max) | Clip(Relu(Y), min, max)
                           optional, constant scalar bounds
    ```

    into one `onnx.FusedConv` (ONNX Runtime's com.microsoft FusedConv), whose
    code finishes each output with the bias, Z and the activation while it is
    still in registers or cache: a ResNet block's Conv, Add and Relu were
    three passes over the activation. At least one of Add and the activation
    must be there. A missing Clip bound becomes the element type's lowest or
    largest value (ONNX's definition), and Relu then Clip (PyTorch's ReLU6
    export) one Clip whose lower bound is at least 0. Every fused
    intermediate value must have exactly one use,
    so a training graph whose backward pass reads the Conv's or the Add's
    result is left as it is; an Add that broadcasts is not fused.
    hetpar-compile runs it on each device's function before code generation
    (after the search and the partition, which see the unfused graph);
    `--fuse-conv=false` turns it off.
  }];
}

def FuseGemmBiasPass : Pass<"hetpar-onnx-fuse-gemm-bias", "mlir::func::FuncOp"> {
  let summary = "Fuse the Add of a bias row after a MatMul by a constant into a Gemm";
  let description = [{
    Rewrites

    ```
    Y = MatMul(A, W)       W a constant float32 matrix [K, N], A of rank >= 2
    Y = Add(Y, c)          c a constant row of N biases ([N] or [1, ..., 1, N]),
                           either operand
    ```

    into `Reshape(Gemm(Reshape(A, [rows, K]), W, c), Y's shape)` (the
    reshapes only where A has more than 2 dimensions; c reshaped to [N]):
    the form PyTorch exports every `nn.Linear` in. Code generation then adds
    the biases as the GEMM stores its sums (`hp_gemm_b`), where the Add was a
    pass of its own over the product: about 10% of BERT tiny's run at batch
    32. The product must have no other use, so a training graph whose
    backward pass reads it is left as it is; an Add that broadcasts the
    product is not fused. hetpar-compile runs it on each device's function
    before code generation (after the search and the partition, which see
    the unfused graph), before hetpar-onnx-fold-transposes.
  }];
}

def VerifyStaticShapesPass : Pass<"hetpar-onnx-verify-static", "mlir::ModuleOp"> {
  let summary = "Check that every tensor in the module has a static shape";
  let description = [{
    Fails when a function argument or an op result is a tensor with a dynamic
    dimension or unknown rank. Arguments are reported by name ("input 'x' has
    dynamic type ...; give its shape with --input-shape"). Among ops, only those
    where dynamism starts are reported (a dynamic result from static operands),
    with the cause: the unsupported op (`onnx.Generic`), the input whose *values*
    flow into the op's shape operands (a data-dependent shape), or the op of the
    shape computation that did not fold.

    Also fails on a static tensor of more than 2^53 bytes (8 PiB; an empty
    dimension counts as 1, as the strides of the code indexing it do), the most
    HetPar plans for one tensor (byte counts stay exact in the cost model's
    doubles and int64 offsets cannot overflow): inputs by name, ops where the
    size starts.
  }];
}

def PrintSummaryPass : Pass<"hetpar-onnx-print-summary", "mlir::ModuleOp"> {
  let summary = "Print inputs, outputs, op counts, parameters and FLOPs of a model";
  let description = [{
    Prints to stdout (or `output`) a summary of every function: its inputs and
    outputs with shapes, the number of ops of each kind, parameters (elements of
    floating-point constants that are not scalars) and weight bytes, and FLOPs per op kind and in total
    (FlopCountOpInterface conventions). The IR is unchanged.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary (- for stdout)">,
  ];
}

def DistVerifyExchangesPass : Pass<"hetpar-dist-verify-exchanges", "mlir::ModuleOp"> {
  let summary = "Check that the per-device programs' exchanges match up";
  let description = [{
    Looks at the per-device functions of the module (those with `dist.device`,
    the local form of the `dist` dialect) together, and fails where running
    them would hang or corrupt data:

    * no two functions run on the same device;
    * every `dist.send` from device A to device B is matched, in program order,
      by a `dist.recv` on B from A with the same tag and tensor type (NCCL
      pairs point-to-point calls by their order per pair of devices), and
      every `dist.recv` by a send; the peer has a function;
    * every device of a collective's group has a function, and all of them
      run the same collectives on that group in the same order with the same
      op, reduction, dimensions, sizes, root and element type (and the same
      element count where every rank passes one: all_reduce, broadcast);
    * run together in program order, the programs do not deadlock: each
      device blocks at every exchange step (dist::exchangeSteps, the
      definition the code generator emits: a run of consecutive sends and
      receives, constants aside, posted and waited for together; a send of
      what the run receives begins a new step, since its buffer is filled
      only when the receive completes) until each of its sends has its
      receive posted and each receive its send (no eager buffering is
      assumed), and at every collective until all of its group arrive.
      Otherwise the error names each stuck device and what it waits for.
      Here any op but a constant or a view (Reshape, Flatten, Squeeze,
      Unsqueeze, Identity, a Dropout that does not drop: onnx::isView, the
      code generator's rule) ends a step; in the code generator an op it
      fuses into a later one does not either, so its steps are these or
      coarser, and a program that passes runs as generated without a
      deadlock.

    Errors point at the op that disagrees and name both devices. The check
    needs no cost model or cluster: it reads the IR only.
  }];
  let dependentDialects = ["hetpar::dist::DistDialect"];
}

def DistPipelineSchedulePass
    : Pass<"hetpar-dist-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "Pipeline training: one device's step over every microbatch, in 1F1B or GPipe order";
  let description = [{
    Makes the step of one microbatch, as `hetpar-onnx-differentiate` built it
    for device `device` of a pipeline stage (local form: `dist.recv` of the
    activations from earlier stages, `dist.send` to later ones, and the
    gradient messages of both, tags from `dist::kGradientTagOffset`), the
    device's step over all `microbatches` of the plan on the module
    (`dist.plan`, read by PlanAnnotation.h). Runs right after
    `hetpar-onnx-differentiate`, before `hetpar-dist-reduce-gradients` and
    the optimizer (docs/training.md, "Pipeline training").

    * Each op is invariant (constants, parameter loads and what follows from
      them alone: run once, first), forward (it depends on an input or a
      received activation) or backward (it depends on a received gradient).
    * The forward part F(k) and backward part B(k) of every microbatch k are
      laid out in the plan's `schedule`: `1f1b` (PipeDream-Flush: stage s of
      p runs min(p - s - 1, m) forward parts, then one forward and one
      backward in turn, then the remaining backward parts, so at most p - s
      microbatches are in flight) or `gpipe` (all forward parts, then all
      backward parts). Within a part, receives come first and sends last,
      so the sends ending one part and the receives starting the next form
      one exchange step.
    * Each input holds the device's rows of every microbatch, stacked on
      axis 0 (microbatch k's are rows k * r .. (k + 1) * r - 1, r the
      device's rows of a microbatch).
    * Every op a slot emits (constants aside) carries its microbatch,
      `hetpar.microbatch_index` (i64), by which the measured timeline of
      `hetpar-run --train --trace` names its spans; ops that run once per
      step have none.
    * Gradients are summed over the microbatches as each backward part
      ends; each add of a running sum is marked `hetpar.running_sum`, which
      code generation never fuses into the next add (that would keep every
      microbatch's gradients to the last one). On the last stage the
      backward seed (`hetpar.seed`) of microbatch k is scaled by its weight
      w_r / m, where w_r is the replica's part of the microbatch's loss (as
      hetpar-dist-reduce-gradients defines it) and m the microbatches: the
      step's loss is the mean of the microbatches' mean losses, as one
      device accumulating them computes it, and the gradients sent to
      earlier stages carry the weight. For a mean cross-entropy with
      ignore_index over a data-parallel last stage, w_r of microbatch k is
      the replica's counted labels over the microbatch's (a scalar
      `dist.all_reduce` over the stage), and a replica with no counted label
      in it contributes zeros (its loss, gradients and sent gradients).
    * A training-mode Dropout of microbatch k draws with counter
      step * m + k, as one device accumulating the microbatches does.
    * State the step writes (a training-mode BatchNormalization's running
      statistics, `ml_program.global_store` before the optimizer) is loaded
      and stored once per microbatch, in its forward part: microbatch k
      reads what microbatch k - 1 wrote, as one device accumulating the
      microbatches (and PyTorch's accumulation loop) updates it.

    * Activation recomputation where the plan's stage says `recompute` (or
      the `recompute` option asks for it): the backward part reads clones of
      each layer's forward values, rebuilt from the layer's inputs just
      before the layer's first backward reader (hetpar-train-recompute's
      rewrite, on the step of one microbatch), so a microbatch in flight
      keeps only its layers' inputs. Every layer is recomputed, the last one
      too, except on the last stage (its backward part follows its forward
      part at once).

    Errors: no plan or a bad one; `device` not in the plan; a schedule other
    than 1f1b or gpipe; an input whose first dimension is not the device's
    rows of a microbatch; a backward-part read of state the forward part
    writes; a last stage with a loss but no
    `hetpar.seed`; a loss that is not a mean or a sum over the samples.
  }];
  let options = [
    Option<"device", "device", "int64_t", "-1",
           "The plan's device whose step this is">,
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "Recompute activations on every stage, whatever the plan's stages "
           "say (hetpar-compile --recompute)">,
  ];
}

def DistSyncBatchNormPass
    : Pass<"hetpar-dist-sync-batch-norm", "mlir::ModuleOp"> {
  let summary = "Data-parallel training: batch statistics of the whole batch";
  let description = [{
    On the training step of device `device` of a plan (`dist.plan`) whose
    stage is data-parallel, rewrites every training-mode BatchNormalization
    into its equations (ONNX opset 15: the batch mean and population
    variance per channel, the normalized output, the running statistics
    with `momentum`), with the per-channel sums of x and of (x - mean)^2
    summed over the replicas that hold this device's shards: a
    `dist.all_reduce` followed by a `dist.grad_all_reduce`, so that
    hetpar-onnx-differentiate (run after it) gives the synchronized
    backward pass, whose sums of dY and dY * xhat are all-reduced as well
    (PyTorch's SyncBatchNorm). The count is the microbatch's rows of all
    replicas times the spatial extents. The step's result equals one
    device's on the whole microbatch. The function gets `dist.device` and
    the module a `dist.mesh @mesh` of the stage's devices. A stage of one
    replica is left as it is.

    Errors: `device` missing or not in the plan; no plan or a bad one; a
    BatchNormalization input that is not static of rank 2 or more.
  }];
  let options = [
    Option<"device", "device", "int64_t", "-1",
           "The plan's device whose training step this is">,
  ];
  let dependentDialects = ["hetpar::dist::DistDialect",
                           "hetpar::onnx::ONNXDialect"];
}

def DistReduceGradientsPass
    : Pass<"hetpar-dist-reduce-gradients", "mlir::ModuleOp"> {
  let summary = "Data-parallel training: sum the replicas' weighted gradients";
  let description = [{
    Makes the training step of `hetpar-onnx-differentiate` (its loss and one
    gradient result per parameter, `hetpar.gradient_of`) the step of one
    data-parallel replica of the plan on the module (`dist.plan`, read by
    PlanAnnotation.h): device `device`, whose inputs hold its rows of each
    microbatch. Runs between `hetpar-onnx-differentiate` and
    `hetpar-train-optimizer`, so the optimizer, clipping and loss scaling see
    the full-batch gradient and every replica applies the same update.

    * Replica r's loss is the mean over its own samples; it is weighted by
      w_r, its part of the full batch's mean, so that the sum over replicas is
      the full batch's loss and gradient: w_r = rows_r / rows of the
      microbatch for a mean over elements (ReduceMean, mse) or a mean loss
      without ignored labels; w_r = count_r / sum of counts, the counts of
      labels other than `ignore_index` (an all_reduce of one scalar), for a
      mean SoftmaxCrossEntropyLoss or NegativeLogLikelihoodLoss with
      `ignore_index` (PyTorch's cross_entropy); w_r = 1 for a sum. A constant
      scale of the loss (Mul or Div by a constant) is looked through.
    * Gradients are summed with `dist.all_reduce` in buckets of at most
      `bucket-mib` MiB (PyTorch DistributedDataParallel's default bucket_cap_mb,
      25), filled in the order the backward pass produces the gradients;
      each bucket's all-reduce is placed right after its last gradient, so it
      can overlap the rest of the backward pass. A bucket of several
      gradients is one flat concatenation, scaled by w_r once.
    * The returned loss becomes the all-reduced weighted loss: every replica
      reports the full batch's loss.
    * The function gets `dist.device = device` and the module a `dist.mesh`
      `@mesh` of the plan's devices.
    * A plan of several stages (after `hetpar-dist-pipeline-schedule`, which
      has weighted the last stage's seed): the gradients are summed over the
      device's stage group as above, without weights; the last stage's
      replicas sum their losses, and each device of an earlier stage
      receives the step's loss (tag `dist::kLossTag`) from replica i mod
      data of the last stage (i its position among those devices) and
      returns it as result 0, so that every device reports the step's loss.
      Each input then holds the device's rows of every microbatch. A
      parameter that the module's `hetpar.shared_params` lists (several
      stages read it; the value is the devices of those stages) has its
      gradient summed over those devices instead, at the end of the step,
      one all-reduce per device group in the groups' order and the
      parameters' name order (the same sequence on every member), so that
      every stage's copy takes the same update. The function gets
      `hetpar.grad_norm_group` (every device of the plan) and each gradient
      held by several devices a `hetpar.grad_norm_weight` of 1 over their
      count, for hetpar-train-optimizer's norm of the whole model.
    * ZeRO-1 (a stage with `zero_shares` in the plan; docs/training.md,
      "Sharded optimizer state"): each gradient with at least one element
      per replica is cut by the shares (splitProportionally); a bucket of
      such gradients, laid out replica by replica, is reduce-scattered, and
      the result becomes this replica's shard, marked `hetpar.zero_sizes`
      (every replica's count, in the order of the function's
      `hetpar.zero_group`). The function gets `hetpar.grad_norm_group`: a
      shard counts once in the norm, a whole gradient 1 over the replicas.
      A bucket of one gradient is reduce-scattered in place (no packing).
    * ZeRO-2 (`zero_stage = 2`) in a pipeline of several microbatches: the
      running sums of hetpar-dist-pipeline-schedule are taken apart; each
      microbatch's bucket is reduce-scattered right after its last gradient
      of that microbatch, and only the shards are summed (marked
      `hetpar.running_sum`). A bucket whose gradients are not all sums of
      every microbatch is reduce-scattered once, as ZeRO-1.
    * A gradient marked `hetpar.no_gradient` (no path to the loss) is not
      summed: it stays zero and the optimizer skips it.

    Errors: `bucket-mib` not a positive number; no plan or a bad one
    (PlanAnnotation.h), or one PlanAnnotation::trainingProblem refuses;
    `device` not in the plan; a pipeline step with a loss on a stage other
    than the last, or none on the last; an input whose first dimension is
    not the replica's rows; a loss
    that is not a mean or a sum over the samples; a class-weighted mean
    loss; training-mode BatchNormalization (its batch statistics would
    differ from one device's). A training-mode Dropout is fine: its
    `element_offset` (set by hetpar-dist-partition) makes it draw the masks
    of the replica's elements.
  }];
  let options = [
    Option<"device", "device", "int64_t", "-1",
           "The device of the plan whose replica this step is">,
    Option<"bucketMiB", "bucket-mib", "double", "::hetpar::dist::kGradientBucketMiB",
           "Largest all-reduce bucket in MiB (PyTorch DDP's bucket_cap_mb)">,
  ];
  let dependentDialects = ["hetpar::dist::DistDialect",
                           "hetpar::onnx::ONNXDialect"];
}

def DistIntroduceTransfersPass
    : Pass<"hetpar-dist-introduce-transfers", "mlir::ModuleOp"> {
  let summary = "Route every value between pipeline stages through a dist.transfer";
  let description = [{
    The first step of the global form, on a model annotated with a plan
    (`dist.plan` on the module, `dist.stage_id` and `dist.op_sharding` on
    ops: what hetpar-search-plan, hetpar-compile or a hand-written plan
    leaves):

    - a `dist.mesh @mesh` of the plan's devices in plan order (the process
      ranks), first in the module, unless the module has one;
    - a `dist.transfer` right after each op for each of its results and each
      other stage that reads it, the users in that stage reading the
      transfer. Its source is the layout the producing stage leaves the
      value in and its target the layout the receiving stage takes it in,
      over each stage's devices as its replicas (`replicas` = the stage's
      data parallelism): replicated, or, where every user in the one
      receiving stage wants it split along the dimension its producer
      leaves it split (exitSplit, the simulator's answer too), split with
      each tensor-parallel device's extent. The value then travels in the
      overlaps of the two splits, and nothing is gathered. Graph outputs,
      graph inputs and constants need no transfer.

    A model with a `dist.transfer` or a `dist.stage` already (a user's) is
    left as it is: a pass of the user's may rewrite the transfers before
    hetpar-dist-apply-plan. A transfer made replicated is gathered where it
    leaves; one made split is sent in pieces if its producer leaves it in
    that split.

    Fails with an error at the op (the stage checks hetpar-dist-apply-plan
    shares): an op other than a constant without a `dist.stage_id`, or with
    one naming a stage the plan does not have; one that reads a value of a
    later stage; one with regions (which the partition does not split); at
    the module: no plan, or not one model function.
  }];
  let dependentDialects = ["hetpar::dist::DistDialect"];
}

def DistApplyPlanPass : Pass<"hetpar-dist-apply-plan", "mlir::ModuleOp"> {
  let summary = "Put an annotated model into the global form: a dist.stage per stage";
  let description = [{
    Forms the stages of the plan written onto the module (`dist.plan`,
    `dist.stage_id` and `dist.op_sharding` on ops), whose values between
    stages go through `dist.transfer` (hetpar-dist-introduce-transfers),
    into the global form of the dist dialect, which hetpar-dist-partition
    splits per device (the pipeline `hetpar-dist-global-form` runs both
    steps):

    - the `dist.mesh @mesh` of the plan's devices (as
      hetpar-dist-introduce-transfers makes it) unless the module has one;
    - the model function's ops moved into one `dist.stage` per pipeline
      stage, in stage order, on the stage's devices. A stage takes as
      operands the graph inputs, constants and transfers that its ops read,
      and yields what later stages or the function's return read. Ops keep
      their `dist.op_sharding` and lose `dist.stage_id` (the stage says it);
      shapes stay global;
    - each `dist.transfer` between the stage it leaves and the one it
      enters, reading the producing stage's result.

    A model already in the global form is left as it is.

    Fails with an error at the op: an op without a `dist.stage_id` (other
    than constants and transfers), one naming a stage the plan does not
    have, one that reads a value of a later stage, one that reads a value
    of another stage without a transfer, one with regions (which the
    partition does not split); a transfer that does not carry a value of
    one stage to the ops of one later stage; at the module: no plan, or not
    one model function.
  }];
  let dependentDialects = ["hetpar::dist::DistDialect",
                           "mlir::func::FuncDialect"];
}

def DistLocalizePass : Pass<"hetpar-dist-localize", "mlir::ModuleOp"> {
  let summary = "Localize an annotated model: one function per device, exchanges open";
  let description = [{
    The first step of the partition (the pipeline `hetpar-dist-partition`
    runs it, then hetpar-dist-lower-exchanges). Splits a model in the
    global form (hetpar-dist-global-form: a
    `dist.stage` per stage of the module's `dist.plan`, `dist.op_sharding` on
    sharded ops, a `dist.transfer` per value between stages, the
    `dist.mesh @mesh`) and replaces the model function by one function per
    device of the plan, `@device_<id>` with `dist.device = <id>` (the local
    form of the dist dialect).

    Each function runs one microbatch of its data-parallel replica: it takes
    the graph inputs its stage reads (stageTakesInput: also a graph input
    that the last stage returns), in graph order, under their graph names
    (`onnx.name`, `input_<k>` when unnamed), at microbatch size
    (`dist.batch_dim = <d>` on inputs that hold the batch), slices its
    replica's rows, runs its
    stage's ops on local shapes (weights sliced at compile time), and inserts
    the collectives its tensor sharding implies: an operand whose layout
    differs from what the op's sharding rule needs is all-gathered (split to
    whole), all-reduced (partial sums), reduce-scattered (partial sums to
    split), all-to-all'd (split along another dimension) or sliced (whole to
    split). Values that later stages use travel as their transfer says:
    replicated, cut and joined along the batch, or split, each receiving
    device getting the overlaps of its part with each sender's. A device
    receives what its stage reads at its start (`dist.recv_pieces`, in tag
    order) and sends what leaves its stage at its end (`dist.send_pieces`),
    each piece (`#dist.piece`) a block of the value for one peer under one
    tag; hetpar-dist-lower-exchanges turns them into slices, `dist.send`,
    `dist.recv` and joins. Tags number the values that leave their stages,
    in stage and op order, then the graph outputs. The first device
    of the last stage receives and joins every graph output (its function
    alone has results, with `dist.batch_dim` where they carry the batch);
    the module gets `dist.microbatches` and `dist.graph_inputs` (every graph input, a
    whole step's type, for the runtime, which checks them all on every
    device; a training plan's then lists the labels its loss adds, the
    module's `hetpar.training_labels`). An unnamed graph input is named
    `input_<k>` (onnx::graphInputName).

    With `local-io` (plans of one stage), each device's inputs are its
    replica's rows of the microbatch (nothing to slice) and it returns its
    own values of the graph outputs, replicated over its tensor-parallel
    group (no gather at a root): the per-device forward graph from which
    hetpar-compile builds a data-parallel training step
    (docs/training.md, "Data-parallel training"). Over several stages, only
    the last stage's devices return outputs (the loss attaches there;
    "Pipeline training"); earlier stages' functions return nothing. A training-mode Dropout
    on a replica's rows gets their `element_offset`, so that it draws the
    masks one device would.

    A training plan (mode "training", with `local-io`) also prepares the
    backward pass (docs/training.md, "Tensor-parallel training"): a value
    replicated over a tensor-parallel group that enters work split over it
    (the input of a column-parallel op, a whole parameter sliced at run
    time) goes through `dist.grad_all_reduce` (Megatron's f); a parameter
    that every op of the stage reads in one split is sliced at compile time
    and keeps its initializer name, with `hetpar.tensor_shard` (the
    `#dist.sharding` of its split); one read in two layouts, or by two
    stages, stays whole. What a Gemm or Conv with a split contraction adds
    once (C, the bias) is added after the all-reduce, on every device, in
    inference too. Between stages, the first device of each receiving
    replica receives and broadcasts to its group, and every device of a
    sending group passes what leaves through `dist.grad_all_reduce`, so that
    one gradient travels back and reaches the whole group.

    Fails with an error at the op when a plan cannot be applied: an op
    outside every stage, stages out of the plan's order or off its devices,
    a stage reading another stage's value without a transfer, a transfer
    read by two stages, a transfer split at one end only, with an empty
    part, of a value that also goes elsewhere or is a graph output, or
    split otherwise than its producer leaves it, an op
    without a sharding rule whose operand carries a split batch, a sharding
    whose parts do not add up to the factor it splits, a contraction split
    of an op whose partial results do not add (ReduceMean), a training plan
    without `local-io`, `local-io`
    over several stages with a graph output that the last stage does not
    compute.
  }];
  let options = [
    Option<"localIo", "local-io", "bool", /*default=*/"false",
           "Each device's inputs are its replica's rows of the microbatch and "
           "it returns its own values of the outputs (no gather at a root): "
           "the per-device form a data-parallel training step is built from "
           "(plans of one stage)">,
  ];
  let dependentDialects = ["hetpar::dist::DistDialect",
                           "mlir::func::FuncDialect"];
}

def DistLowerExchangesPass
    : Pass<"hetpar-dist-lower-exchanges", "mlir::ModuleOp"> {
  let summary = "Turn dist.send_pieces and dist.recv_pieces into slices, sends, receives and joins";
  let description = [{
    The second step of the partition (after hetpar-dist-localize; the
    pipeline `hetpar-dist-partition` runs both). In every function, each
    run of consecutive `dist.send_pieces` becomes one exchange step: each
    piece's block of its operand is cut (`onnx.Slice` along the piece's
    batch and split ranges, a batch of `batch_outer` chunks through a
    Reshape; a constant is sliced now), all blocks first, then a `dist.send`
    per piece back to back, in op and piece order. Each run of consecutive
    `dist.recv_pieces` likewise: a `dist.recv` of each piece's block shape,
    back to back, then the joins (`onnx.Concat`): consecutive pieces of one
    `batch_start` along `split_dim`, those runs along `batch_dim` (no join
    for a value nothing reads; its messages are still received).

    Mechanism only: which device sends which block, under which tag, is
    hetpar-dist-localize's (or a user pass's) decision, checked by the ops'
    verifiers; hetpar-dist-verify-exchanges then checks that every send
    meets its receive without deadlock. A module without pieces is left as
    it is. The ops' verifiers have checked every piece against its value.

    Fails with an error at the op: a value of elements that onnx.Slice and
    onnx.Concat do not take (index, complex, 8-bit floats).
  }];
  let dependentDialects = ["hetpar::dist::DistDialect",
                           "hetpar::onnx::ONNXDialect"];
}

//===----------------------------------------------------------------------===//
// Training (docs/training.md)
//===----------------------------------------------------------------------===//

def TrainLiftParamsPass : Pass<"hetpar-train-lift-params", "mlir::ModuleOp"> {
  let summary = "Turn the trainable initializers into mutable ml_program globals";
  let description = [{
    Every float initializer (an `onnx.Constant` the importer marked with
    `onnx.initializer`) whose name does not fully match `freeze` becomes an
    `ml_program.global private mutable` holding its data, with `hetpar.role =
    "param"`, read where the constant was by `ml_program.global_load`. Run it on
    the imported module, before canonicalization (which merges equal constants,
    such as two LayerNorm scales of ones): `hetpar-translate --import-onnx
    --mark-initializers`, or `hetpar-compile --mode training --emit=mlir`,
    writes the marks (an inference import leaves them out, so that equal
    initializers merge). A float initializer holding an infinity or a NaN (an
    exporter's folded causal mask, -inf above the diagonal) stays a constant,
    with a remark naming it: PyTorch keeps such a tensor in a buffer and never
    trains it.

    The running statistics of a training-mode BatchNormalization (its
    input_mean and input_var initializers; PyTorch's buffers) are state, not
    parameters: they become globals with `hetpar.role = "buffer"` whatever
    `freeze` says. When the node returns its new running statistics, an
    `ml_program.global_store` of its running_mean / running_var result, placed
    before the function's return (after every read of the old value), writes
    them each step; otherwise they keep their values.

    Errors: `freeze` is not a valid regular expression, or matches no
    initializer (unless `require-match` is off: a pipeline stage holds only
    some of the model's initializers, and hetpar-compile checks the whole
    model instead); nothing is trainable; one initializer is the running
    statistic of two training-mode BatchNormalization nodes, or its type
    differs from the node's running-statistic result.
  }];
  let options = [
    Option<"freeze", "freeze", "std::string", /*default=*/"\"\"",
           "Initializers (a regular expression over their names, full match) "
           "that stay constant">,
    Option<"requireMatch", "require-match", "bool", /*default=*/"true",
           "Fail when `freeze` matches no float initializer of the module">,
  ];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def TrainAttachLossPass : Pass<"hetpar-train-attach-loss", "mlir::ModuleOp"> {
  let summary = "Make the function return one scalar training loss";
  let description = [{
    `loss=output`: the function's only result must be a float scalar; it is the
    loss. `loss=cross-entropy`: result number `output` (logits [B, C], or [B, S, V] for
    language models) against a new int64 argument `labels` ([B], [B, S]),
    reduced to the mean as PyTorch's `cross_entropy`
    (SoftmaxCrossEntropyLoss). `loss=mse`: the mean squared error against a new
    argument `labels` of the output's shape and type. The labels argument is
    appended after the graph inputs with `onnx.name` = `labels` and batch axis 0.
    The function then returns the loss only, as result `loss`. Errors (at the
    function, naming the output and its type): an unknown `loss`; no output
    `output`; a non-float output; `loss=output` on a model that does not
    return exactly one scalar; cross-entropy on an output of rank below 2; an
    output of dynamic shape (cross-entropy and mse); an input already named
    like `labels`.
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"output\"",
           "output | cross-entropy | mse">,
    Option<"labels", "labels", "std::string", /*default=*/"\"labels\"",
           "Name of the labels input">,
    Option<"output", "output", "unsigned", /*default=*/"0",
           "The index (0, 1, ...) of the function result the loss is "
           "computed on">,
  ];
}

def TrainEvalModePass : Pass<"hetpar-train-eval-mode", "mlir::ModuleOp"> {
  let summary = "Turn a training step into its evaluation: the loss, writing nothing";
  let description = [{
    The evaluation of held-out data (`hetpar-run --train --eval-data`), as PyTorch's
    `model.eval()` under `torch.no_grad()`. Run on the step function after
    `hetpar-train-lift-params` and `hetpar-train-attach-loss`, instead of the passes
    that follow them:
    - every `ml_program.global_store` is erased: evaluation updates no state;
    - a training-mode `onnx.BatchNormalization` becomes inference mode (normalized
      by its running statistics);
    - every `onnx.Dropout` is removed (its output is its input, a read mask all
      true);
    - each global the function reads becomes a new argument after the others
      (in order of first read), with `onnx.name` and `hetpar.bind_weight` set to
      the global's name, and the globals are erased. The runtime binds such an
      argument to the training program's weights tensor of that name, so the
      evaluation reads the current weights without a copy.

    The result is a function of the graph inputs, the labels and the weights
    that returns the loss, for code generation like an inference graph.

    Errors (at the op): a training-mode BatchNormalization whose new running
    statistics are read by something other than a `global_store`.
  }];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def TrainDropoutPass : Pass<"hetpar-train-dropout", "mlir::ModuleOp"> {
  let summary = "Draw training-mode Dropout masks per step and save them";
  let description = [{
    Every `onnx.Dropout` of the step function whose `training_mode` is a constant
    true is rebuilt with: its `mask` result (the saved mask its gradient
    multiplies by; added when the model does not ask for it); the step counter as
    its `step` operand (an `ml_program.global_load` of `hetpar.step` at the start
    of the function, the steps taken before this one; the global is created as
    `hetpar-train-optimizer` would, which then increments it); and, when it has no
    ONNX `seed`, the seed `splitmix64(seed + k)` for the k-th such Dropout in
    program order (so two Dropouts never share a mask). The mask of element i is
    then a function of (seed, step, i) only (onnx.Dropout): every step draws a new
    one, and a resumed run draws the masks the uninterrupted run would have.
    A Dropout whose `training_mode` is absent or a constant false is left alone
    (`hetpar-onnx-erase-identity` removes it). Run it after the shapes are
    static, before `hetpar-onnx-differentiate`.

    Errors (at the op): a `training_mode` that is not a constant.
  }];
  let options = [
    Option<"seed", "seed", "int64_t", /*default=*/"0",
           "Program seed of the Dropout nodes without their own `seed`">,
  ];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def TrainMixedPrecisionPass
    : Pass<"hetpar-train-mixed-precision", "mlir::ModuleOp"> {
  let summary = "16-bit activations and compute with float32 master weights";
  let description = [{
    Runs on the training step after `hetpar-train-attach-loss`, before
    `hetpar-onnx-differentiate`. Every float32 value the step computes becomes
    `dtype` (bfloat16 or float16): the values that enter it in float32 (graph
    inputs, `ml_program.global_load` of the float32 master weights, constants
    and other ops without float operands) are converted by an `onnx.Cast`, and
    `Cast` ops to float32 cast to `dtype` instead. The op that computes the
    loss runs in float32 (its float operands are cast back), as
    `torch.autocast` runs the losses in float32, so the loss result stays a
    float32 scalar; so does an op whose result is stored to a global (the
    running statistics of BatchNormalization in training mode), so that the
    state never rounds to 16 bits (its other users get a 16-bit cast). Other
    float32 results are cast back at the return.
    Differentiation then gives the parameters float32 gradients (the gradient
    of a Cast is the Cast back), and the optimizer keeps float32 state.

    With `dtype=float16` it also adds dynamic loss scaling (Micikevicius et al.,
    "Mixed Precision Training", ICLR 2018, as `torch.cuda.amp.GradScaler`):
    the float32 scalar global `hetpar.loss_scale` (initially 2^16) and the
    int64 global `hetpar.good_steps` (`hetpar.role = "state"`), named by the
    function attribute `hetpar.loss_scale`. `hetpar-onnx-differentiate` seeds
    the backward pass with the scale; `hetpar-train-optimizer` unscales, skips
    a step whose gradients are not finite and halves the scale, and doubles
    it after 2000 finite steps.

    Constraints: the module has one step function (see
    `hetpar-onnx-differentiate`) returning a float32 scalar loss first; `dtype`
    is bfloat16 or float16. Errors: an unknown `dtype`; a loss that is not a
    float32 scalar; a `hetpar.loss_scale` global that already exists.
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bfloat16\"",
           "bfloat16 | float16">,
  ];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def DifferentiatePass : Pass<"hetpar-onnx-differentiate", "mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff from the scalar loss to every parameter";
  let description = [{
    The function's first result must be a float scalar (the loss), unless the
    function is a pipeline stage that sends activations (`dist.send`). For every op on
    a path from a trainable parameter (`ml_program.global_load` of a global with
    `hetpar.role = "param"`) to the loss, in reverse program order, the op's
    GradientOpInterface rule builds the gradients of its operands; gradients of a
    value used several times are summed. The function then returns the loss
    followed by one gradient per parameter, in the order of the globals, each
    result marked `hetpar.gradient_of = @global`. A parameter the loss does not
    depend on gets a zero gradient. The backward pass starts from dloss = 1, or
    from the value of the global that the function attribute
    `hetpar.loss_scale` names (a float scalar of the loss's type; the
    gradients are then scaled by it). Errors: the function returns nothing, or
    its first result is not a float scalar; `hetpar.loss_scale` names no
    global of the loss's type; nothing is trainable; an op on the
    path has no gradient rule (at the op, named with its node; every op on the
    path is checked before any backward op is built).

    Pipeline stages (local form): a received activation (`dist.recv`) counts
    as depending on a parameter, and every float activation sent
    (`dist.send`) is differentiated too. Its gradient comes back as a
    `dist.recv` from the same peer with the tag plus `dist::kGradientTagOffset`
    (2^14); a received activation's gradient (zeros when nothing here uses
    it) is sent back so. Every float transfer gets its gradient message, so
    both sides agree without seeing each other's graph. A stage without a
    loss returns its gradients only; the seed of a stage with one is marked
    `hetpar.seed` (for hetpar-dist-pipeline-schedule). Errors also: a
    transfer tag from `dist::kLossTag` (2^14 - 1) up.
  }];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def TrainOptimizerPass : Pass<"hetpar-train-optimizer", "mlir::ModuleOp"> {
  let summary = "Apply the optimizer: state globals, schedule, clipping, updates";
  let description = [{
    Consumes the gradient results of `hetpar-onnx-differentiate`: adds the
    optimizer state as zero-initialized globals (`PARAM.exp_avg`,
    `PARAM.exp_avg_sq` for AdamW, `PARAM.momentum_buffer` for SGD with momentum;
    `hetpar.role = "optimizer"`), the step counter `hetpar.step` (int64,
    `hetpar.role = "step"`, incremented each step), the learning rate of the
    schedule at that step, the global-norm clipping coefficient, one fused
    update op per parameter (onnx.AdamWOptimizer / onnx.SGDOptimizer) and the
    `ml_program.global_store` of each new value. The function then returns the
    loss only. `optimizer=none` leaves the gradients as results (a program that
    returns the loss and the gradients, for tests and for custom update rules).

    The schedule works from the steps taken before the update (`s`): constant
    `lr`, or `warmup-cosine`: `lr * s / warmup-steps` while `s <
    warmup-steps`, then `min-lr + (lr - min-lr) / 2 * (1 + cos(pi * p))` with
    `p = clamp((s - warmup-steps) / (total-steps - warmup-steps), 0, 1)`.
    Clipping scales every gradient by `min(1, clip-grad-norm / (norm + 1e-6))`
    of their global L2 norm (torch.nn.utils.clip_grad_norm_).

    `grad-accumulation-steps=N` (N > 1) makes one update from N calls, one microbatch each:
    the gradients are summed into `PARAM.grad_accum` (role "optimizer"), the
    int64 global `hetpar.microbatch` (role "state") counts the calls, and only
    the N-th applies the update, with the mean of the N gradients (the update
    ops get a NaN `grad_scale`, their skip signal, on the others); `hetpar.step`
    counts updates. A Dropout's mask counter (its `step` operand) becomes
    `hetpar.step * N + hetpar.microbatch`, so each microbatch draws its own mask. With a `hetpar.loss_scale` (hetpar-train-mixed-precision,
    float16), the gradients are unscaled, an update whose gradients are not
    finite is skipped (it still counts as a step), the scale halves on such a
    step and doubles after 2000 finite ones (`hetpar.good_steps`), as
    `torch.cuda.amp.GradScaler`.

    A pipeline device's step (`dist.device`): with `hetpar.grad_norm_group`
    on the function, the sum of squares behind clipping and the overflow test
    is each gradient's weighted (`hetpar.grad_norm_weight`) and summed over
    the group by one scalar `dist.all_reduce`: the norm of the whole model's
    gradient. A stage without gradients only counts the step (and adds 0 to
    that all-reduce).

    A ZeRO-1 shard (a gradient result marked `hetpar.zero_sizes`): the
    parameter's state globals hold this device's shard only (a vector,
    marked `hetpar.shard_offset`), the update reads that slice of the
    flattened parameter, and a `dist.all_gather` over `hetpar.zero_group`
    rebuilds the whole parameter before it is stored. A gradient marked
    `hetpar.no_gradient` (no path to the loss) gets no state and no update,
    as PyTorch's optimizers skip a parameter whose .grad is None.

    Errors, at the module before anything changes (also with
    `optimizer=none`): an unknown optimizer or schedule; `lr` not positive;
    betas outside [0, 1); `eps` not positive; negative momentum, or nesterov
    without momentum; negative `clip-grad-norm`; `warmup-cosine` without `0 <=
    warmup-steps < total-steps`; `min-lr` outside [0, lr];
    `grad-accumulation-steps` below 1, or above 1 with `optimizer=none`. At the function: no
    gradient results (outside a pipeline device's step), or a result after the loss without `hetpar.gradient_of`
    naming a global.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "adamw | sgd | none">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "Base learning rate">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1",
           "Weight decay (default: 0.01 for AdamW, 0 for SGD, as PyTorch)">,
    Option<"momentum", "momentum", "double", /*default=*/"0",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD with Nesterov momentum">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0",
           "Clip the global L2 norm of the gradients to this (0: off)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"constant\"",
           "constant | warmup-cosine">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Linear warm-up steps (warmup-cosine)">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "Steps until the cosine reaches min-lr (warmup-cosine)">,
    Option<"minLr", "min-lr", "double", /*default=*/"0",
           "Final learning rate of the cosine decay">,
    Option<"accumulate", "grad-accumulation-steps", "int64_t", /*default=*/"1",
           "Microbatches (calls) per update: gradient accumulation">,
  ];
  let dependentDialects = ["mlir::ml_program::MLProgramDialect"];
}

def TrainRecomputePass : Pass<"hetpar-train-recompute", "mlir::ModuleOp"> {
  let summary = "Activation recomputation: backward ops read per-layer clones "
                "of the forward";
  let description = [{
    Activation checkpointing (Chen et al., "Training Deep Nets with Sublinear
    Memory Cost", 2016) as a rewrite of the differentiated training step, one
    layer at a time. The forward ops are the ops the returned loss (result 0)
    depends on; the backward pass starts at the first other op that reads a
    forward value other than a constant or a load (state updates, stores and
    what only feeds them, aside), so a data-parallel step's loss all-reduce,
    placed after the gradients' all-reduces, does not hide it. Forward ops are split
    into layers by their ONNX node names with `assignLayers`, the layer
    assignment of the planner and the simulator (constants and
    `ml_program.global_load`s take no part). For each layer, the values that
    a forward op of the layer computes and a later non-forward op reads, other
    than values that a forward op of another layer or the return also reads
    (they cross layers: kept), are recomputed: the layer's ops they depend on
    are cloned, from the layer's inputs, constants, loads and crossing values,
    just before the first such reader, and every backward reader after the
    forward reads the clone. The originals then die at their last forward use
    (the code generator's arena is liveness-based over program order), so the
    step keeps the layer inputs and one layer's recomputed values at a time:
    the simulator's "keep each layer's inputs, recompute one layer at a time".
    The last layer of the forward is not recomputed (its backward starts where
    its forward ends: a clone would cost time and save nothing).

    Only ops without memory effects are cloned, and onnx ops (value semantics;
    a training-mode Dropout's mask is a function of its seed, step operand and
    element index only, so a clone draws the same mask); a value of any other
    op is kept. Readers with memory effects (`ml_program.global_store` of
    BatchNormalization's running statistics) keep reading the original. An
    op that reads a global the step stores before the backward pass is kept
    (its clone would read the new value), except a training-mode
    BatchNormalization, whose Y does not read its running statistics: its
    clone reads constants there (mean 0, variance 1).
    Run it last, after the CSE that follows the optimizer (CSE would merge
    the clones back).

    `recompute=all` (the default) recomputes every layer; `recompute=plan`
    applies the module's `dist.plan` instead: its one stage's `recompute`
    flag (false or no plan: nothing changes). Errors: an unknown `recompute`;
    with `recompute=plan`, a plan of more than one stage (a training program
    is one device) or a stage without a boolean `recompute`.
  }];
  let options = [
    Option<"recompute", "recompute", "std::string", /*default=*/"\"all\"",
           "all (every layer) | plan (the dist.plan stage's recompute flag)">,
  ];
}

#endif // HETPAR_TRANSFORMS_PASSES_TD
