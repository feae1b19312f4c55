//===- Passes.td - HetPar's policy passes ------------------------*- tablegen -*-===//
//
// The search as passes: policy that only writes annotations, which the
// mechanism passes of include/hetpar/Transforms/Passes.td apply. Kept apart so
// that the mechanism library (HetParTransforms) never links the search (and
// its ILP solver).
//
//===----------------------------------------------------------------------===//

#ifndef HETPAR_SEARCH_PASSES_TD
#define HETPAR_SEARCH_PASSES_TD

include "mlir/Pass/PassBase.td"

def SearchPlanPass : Pass<"hetpar-search-plan", "mlir::ModuleOp"> {
  let summary = "Search a plan for the cluster and write it onto the IR";
  let description = [{
    Runs the plan search (docs/search.md) on the static module for the cluster in
    `cluster` (or one local device of `device-kind`) and writes the chosen plan as
    attributes, which is all a search pass does (policy apart from mechanism):
    `dist.stage_id` (the stage index) on every op, `dist.op_sharding`
    (`#dist.op_sharding<dim, parts, collective>`, as in plan.json) on the ops
    split over a stage's tensor-parallel group, and `dist.plan` on the module
    (`#dist.plan`: per stage devices, data and tensor degrees, batch shares,
    recomputation, ZeRO-1 shares, device kinds; microbatches, schedule, mode,
    batch). The attributes are the dist dialect's, whose verifiers check them. With `plan`, the given plan.json is checked against the module and the
    cluster and written instead, so a hand-written plan goes the same way.
    `dtype` (float32, float16 or bfloat16) writes the module's
    `hetpar.compute_dtype`, which the search and the simulator count in: float32
    tensors held in 16 bits run their GEMMs on tensor cores, take 2 bytes per
    element, and in training 16 bytes per parameter with Adam. Without it the
    module's own attribute holds (float32 when it has none).
    Errors (a cluster or plan that does not load, a model that fits nowhere) are
    reported at the module.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"\"\"",
           "Cluster description (docs/cluster-format.md)">,
    Option<"deviceKind", "device-kind", "std::string", /*default=*/"\"CPU\"",
           "Kind of the one local device when no cluster is given">,
    Option<"mode", "mode", "std::string", /*default=*/"\"inference\"",
           "inference or training">,
    Option<"objective", "objective", "std::string", /*default=*/"\"throughput\"",
           "throughput or latency">,
    Option<"plan", "plan", "std::string", /*default=*/"\"\"",
           "Write this plan.json instead of searching">,
    Option<"stages", "stages", "int", /*default=*/"0",
           "Exactly this many pipeline stages (0: any)">,
    Option<"budget", "budget", "double", /*default=*/"60.0",
           "Search budget in seconds">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"\"",
           "Compute dtype of float32 tensors: float32, float16 or bfloat16 "
           "(default: the module's hetpar.compute_dtype, else float32)">,
  ];
  let dependentDialects = ["hetpar::dist::DistDialect"];
}

#endif // HETPAR_SEARCH_PASSES_TD
