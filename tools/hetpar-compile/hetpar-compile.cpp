//===- hetpar-compile.cpp - the HetPar compiler driver
//---------------------===//
//
// Usage:
//   hetpar-compile MODEL.onnx [--input-shape NAME=2x128 ...] [--dtype D] -o OUT
//   hetpar-compile MODEL.onnx [--input-shape NAME=2x128 ...] --emit=mlir -o F
//   hetpar-compile MODEL.onnx [--input-shape NAME=2x128 ...] --emit=summary
//   hetpar-compile MODEL.onnx [--cluster FILE] [--plan PLAN.json] [--mode M]
//                  [--dtype D] [--profile P.json] [--cost-model NAME]
//                  --plan-only -o OUTDIR
//
// Without --emit or --plan-only it compiles the model for one local device:
// OUT/device_0.cu, its CPU build (device_0.cpu.so), its CUDA build when nvcc
// is present (device_0.cuda.so), weights.bin, weights.json and manifest.json,
// which hetpar-run loads. Otherwise it imports the model, makes it fully
// static (hetpar-onnx-to-static) and writes the static module (--emit=mlir, or
// --emit=mlirbc for MLIR bytecode) or prints a summary of its ops, parameters
// and FLOPs (--emit=summary). With --plan-only it evaluates a plan (the given
// one, or the best of the baselines) on the cluster and writes OUTDIR/plan.json
// and OUTDIR/trace.json, without reading weight data. Output files are written
// atomically: a failed compile leaves nothing behind. Exit status 0 on success,
// 1 on any error (with one diagnostic naming the file and node, line or
// device).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Analysis/ModelSummary.h"
#include "hetpar/Cluster/Cluster.h"
#include "hetpar/Codegen/Codegen.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/CostModel/KernelList.h"
#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Import/ONNXImporter.h"
#include "hetpar/Plan/Simulator.h"
#include "hetpar/Search/Search.h"
#include "hetpar/Support/Diagnostics.h"
#include "hetpar/Support/Output.h"
#include "hetpar/Support/ShapeUtils.h"
#include "hetpar/Transforms/Passes.h"

#include "BatchDims.h"
#include "Training.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("hetpar-compile options");

static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"),
                                       cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Fix the shape of a graph input: NAME=2x128, or NAME=2,128 "
             "(repeatable; a dimension is a non-negative integer, or ? to "
             "leave it to shape inference)"),
    cl::value_desc("NAME=DxD..."), cl::cat(category));

static cl::list<std::string> batchDims(
    "batch-dim",
    cl::desc("Where the batch lies in a graph input: NAME=AXIS, or NAME=none "
             "for an input that holds no batch (inference; not the first "
             "input) (repeatable). Default: dimension 0 of the first input, "
             "or, when the model mixes that dimension, the dimension the "
             "batch analysis finds (a sequence-first export); other inputs "
             "carry it where their extent matches"),
    cl::value_desc("NAME=AXIS|none"), cl::cat(category));

enum class EmitKind { None, MLIR, MLIRBytecode, Summary, Kernels };
static cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::None),
    cl::values(
        clEnumValN(EmitKind::MLIR, "mlir",
                   "the static onnx-dialect module (after shape inference and "
                   "folding) as MLIR text"),
        clEnumValN(EmitKind::MLIRBytecode, "mlirbc",
                   "the same module as MLIR bytecode"),
        clEnumValN(EmitKind::Summary, "summary",
                   "a summary: inputs, outputs, ops, parameters, FLOPs"),
        clEnumValN(EmitKind::Kernels, "kernels",
                   "the kernel list with the times predicted on --device-kind "
                   "(input of hetpar-profile --kernels)")),
    cl::cat(category));

static cl::opt<bool> allowDynamic(
    "allow-dynamic",
    cl::desc(
        "Do not fail when some tensor keeps a dynamic shape (inputs without "
        "--input-shape)"),
    cl::init(false), cl::cat(category));

static cl::opt<std::string> clusterPath(
    "cluster",
    cl::desc("Cluster description (docs/cluster-format.md); default: one "
             "local device"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string> deviceKind(
    "device-kind",
    cl::desc(
        "Catalog kind of the one local device used when no --cluster is given "
        "(hetpar-cluster --catalog lists them)"),
    cl::init("CPU"), cl::value_desc("KIND"), cl::cat(category));
static cl::opt<std::string> planPath(
    "plan",
    cl::desc(
        "Evaluate this plan (docs/plan-format.md) instead of choosing one"),
    cl::value_desc("PLAN.json"), cl::cat(category));
static cl::opt<std::string> baselinePlan(
    "baseline",
    cl::desc("Use this baseline's plan instead of searching: data_parallel, "
             "pipeline or tensor_parallel (each mechanism on its own, built "
             "as the search builds its baselines)"),
    cl::value_desc("NAME"), cl::cat(category));
static cl::opt<bool> planOnly("plan-only",
                              cl::desc("Write OUT/plan.json and OUT/trace.json "
                                       "(the predicted timeline); never "
                                       "read weight data"),
                              cl::init(false), cl::cat(category));
static cl::opt<hetpar::Mode> mode(
    "mode", cl::desc("What a step is"), cl::init(hetpar::Mode::Inference),
    cl::values(clEnumValN(hetpar::Mode::Inference, "inference",
                          "a forward pass"),
               clEnumValN(hetpar::Mode::Training, "training",
                          "one optimizer step: forward, loss, backward and the "
                          "update (the training options below; "
                          "docs/training.md)")),
    cl::cat(category));
static cl::opt<hetpar::Objective>
    objective("objective", cl::desc("What the chosen plan minimises"),
              cl::init(hetpar::Objective::Throughput),
              cl::values(clEnumValN(hetpar::Objective::Throughput, "throughput",
                                    "time per step of the batch, split into "
                                    "microbatches (samples per second)"),
                         clEnumValN(hetpar::Objective::Latency, "latency",
                                    "time of the batch as one request (no "
                                    "microbatches)")),
              cl::cat(category));
static cl::opt<bool>
    explain("explain",
            cl::desc("Print the best alternatives the search found, with "
                     "their predicted times, and why the chosen plan won"),
            cl::init(false), cl::cat(category));
static cl::opt<std::string> assumeKind(
    "assume-kind",
    cl::desc("Search as if every device were of this catalog kind (what a "
             "planner blind to heterogeneity does), then evaluate that plan on "
             "the real cluster"),
    cl::value_desc("KIND"), cl::cat(category));
static cl::opt<int> stageCount(
    "stages",
    cl::desc("Search only plans with exactly this many pipeline stages (0, "
             "the default: any number)"),
    cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<double> searchBudget(
    "search-budget",
    cl::desc("Seconds the search may take; the best plan found by then is "
             "used (default 60)"),
    cl::init(60.0), cl::value_desc("SECONDS"), cl::cat(category));
static cl::opt<std::string>
    costModelName("cost-model",
                  cl::desc("Registered cost model to score plans with"),
                  cl::init("default"), cl::cat(category));
static cl::opt<std::string>
    profilePath("profile",
                cl::desc("Measured numbers (from hetpar-profile) in place of "
                         "datasheet defaults"),
                cl::value_desc("FILE"), cl::cat(category));
static cl::list<std::string> pluginPaths(
    "load-pass-plugin",
    cl::desc("Load a plugin (it may register passes and cost models)"),
    cl::value_desc("FILE.so"), cl::cat(category));

static cl::opt<std::string> dtypeOption(
    "dtype",
    cl::desc("Storage and compute type of the model's float32 tensors: "
             "float32 (default), float16 or bfloat16 (float32 accumulation; "
             "inputs and outputs keep their dtypes). Plans count them so too: "
             "tensor-core GEMMs, 2 bytes per element, and in training 16 "
             "bytes per parameter (mixed-precision Adam). A training program "
             "keeps float32 master weights and optimizer state, with dynamic "
             "loss scaling for float16"),
    cl::init("float32"), cl::value_desc("TYPE"), cl::cat(category));
static cl::list<std::string>
    targets("targets",
            cl::desc("Builds to make: cpu, cuda, or none (sources only; "
                     "default: cpu, and cuda when nvcc is found)"),
            cl::CommaSeparated, cl::value_desc("cpu,cuda"), cl::cat(category));
static cl::list<int>
    cudaArchs("cuda-arch",
              cl::desc("GPU architectures of the CUDA build, for every "
                       "device (default: each device's kind's, e.g. 75 for "
                       "a T4; 80,90 where the kind has none)"),
              cl::CommaSeparated, cl::value_desc("80,90"), cl::cat(category));
static cl::opt<bool> uncheckedIndices(
    "unchecked-indices",
    cl::desc("Do not report indices from data (Gather, GatherElements, loss "
             "labels) that are out of range; the kernels still stay inside "
             "their buffers (docs/reliability.md)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> allowTF32(
    "allow-tf32",
    cl::desc("Let float32 GEMMs on the GPU round their inputs to TF32 on "
             "tensor cores (cuBLAS's fast TF32 compute type, float32 "
             "accumulation; as PyTorch's allow_tf32). No effect on the CPU"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> fuseAttention(
    "fuse-attention",
    cl::desc("Run exported attention (MatMul, scale, mask, Softmax, MatMul) "
             "as one kernel without the score matrix "
             "(hetpar-onnx-fuse-attention; default true)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> fuseConv(
    "fuse-conv",
    cl::desc("Finish each Conv output with its residual Add and Relu or "
             "Clip in the convolution's own kernel (hetpar-onnx-fuse-conv; "
             "default true)"),
    cl::init(true), cl::cat(category));
static cl::opt<bool> fuseEpilogues(
    "fuse-epilogues",
    cl::desc("Run an activation after a GEMM as the GEMM's epilogue, and the "
             "residual Add before a LayerNormalization in the LayerNorm's "
             "kernel (default true)"),
    cl::init(true), cl::cat(category));
static cl::opt<int> zeroStage(
    "zero-stage",
    cl::desc("Training: the ZeRO stage of every data-parallel stage of the "
             "plan, 0 (each replica holds all optimizer state), 1 (each "
             "holds a shard in proportion to its device memory) or 2 (also "
             "of the gradients a pipeline sums over its microbatches; "
             "docs/training.md, \"Sharded optimizer state\")"),
    cl::init(0), cl::value_desc("N"), cl::cat(category));
static cl::opt<int> optLevel("opt-level",
                             cl::desc("Optimization level of the builds (0-3, "
                                      "default 2)"),
                             cl::init(2), cl::value_desc("N"),
                             cl::cat(category));

static cl::opt<std::string> cpuArch(
    "cpu-arch",
    cl::desc("The CPU build's -march: native (default; the extensions of "
             "this machine, e.g. AVX-512) or a GCC CPU name such as x86-64, "
             "x86-64-v3 or znver4 for a program that runs on another "
             "machine. A program refuses to start on a CPU that lacks an "
             "extension it was built for"),
    cl::init("native"), cl::value_desc("ARCH"), cl::cat(category));

static int fail(const llvm::Twine &message) {
  llvm::errs() << "hetpar-compile: error: " << message << "\n";
  return 1;
}

/// The cost model chosen with --cost-model, with --profile's numbers.
static llvm::Expected<std::unique_ptr<hetpar::CostModel>> makeCostModel() {
  hetpar::CostParams params = hetpar::CostParams::defaults();
  if (!profilePath.empty())
    if (llvm::Error err = hetpar::loadProfile(profilePath, params))
      return std::move(err);
  return hetpar::createCostModel(costModelName, std::move(params));
}

/// One line per stage: its ops, devices (data x tensor, kinds), sharded ops,
/// time per microbatch and the largest memory of its devices.
static void printStageTable(const hetpar::Plan &plan,
                            const hetpar::Prediction &p,
                            const hetpar::Cluster &cluster) {
  llvm::outs() << llvm::formatv("{0,-5} {1,-6} {2,-10} {3,-30} {4,8} {5,12} "
                                "{6,12}  {7}\n",
                                "stage", "ops", "data x tp", "devices",
                                "sharded", "time/mb (s)", "peak mem", "kinds");
  for (auto [s, stage] : llvm::enumerate(plan.stages)) {
    std::string ids;
    int shown = 0;
    for (int id : stage.devices) {
      if (shown++ == 6) {
        ids += ",...";
        break;
      }
      ids += (shown > 1 ? "," : "") + std::to_string(id);
    }
    llvm::StringMap<int> kinds;
    for (int id : stage.devices)
      ++kinds[cluster.findDevice(id)->kind];
    std::string kindList;
    for (auto &k : kinds)
      kindList += (kindList.empty() ? "" : " ") + std::to_string(k.second) +
                  "x" + k.getKey().str();
    double peak = 0;
    for (const hetpar::DevicePrediction &d : p.devices)
      if (d.stage == static_cast<int>(s))
        peak = std::max(peak, d.memory.total());
    llvm::outs() << llvm::formatv(
        "{0,-5} {1,-6} {2,-10} {3,-30} {4,8} {5,12:e} {6,12:e}  {7}\n", s,
        p.stages[s].ops.size(),
        std::to_string(stage.data) + "x" + std::to_string(stage.tensor), ids,
        stage.shardings.size(), p.stages[s].forward + p.stages[s].backward,
        peak, kindList);
  }
}

static int compilePlan(ModuleOp module, const hetpar::Plan &plan,
                       const hetpar::Cluster &cluster, std::string planText,
                       std::string traceText, hetpar::FloatMode floatMode,
                       llvm::ArrayRef<std::string> inputsRead);

/// The plan hetpar-compile evaluates or compiles, and what it was chosen
/// among: the plan, its simulated prediction, the baselines it is compared
/// with, and the search's result when it was searched.
struct ChosenPlan {
  hetpar::Plan plan;
  std::optional<hetpar::Prediction> prediction;
  std::vector<hetpar::Baseline> baselines;
  std::optional<hetpar::SearchResult> searchResult;
};

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// c.prediction: c.plan simulated (again, after the plan changed), with its
/// timeline.
static llvm::Error simulateChosen(ModuleOp module,
                                  const hetpar::Cluster &cluster,
                                  const hetpar::CostModel &model,
                                  ChosenPlan &c) {
  auto simulated = hetpar::simulate(module, cluster, c.plan, model);
  if (!simulated)
    return simulated.takeError();
  c.prediction = std::move(*simulated);
  return llvm::Error::success();
}

/// --plan FILE: the plan as given, simulated (it must fit in memory).
static llvm::Error planFromFile(ModuleOp module, const hetpar::Cluster &cluster,
                                const hetpar::CostModel &model, ChosenPlan &c) {
  auto loaded = hetpar::loadPlan(planPath);
  if (!loaded)
    return error(llvm::toString(loaded.takeError()));
  c.plan = std::move(*loaded);
  if (mode.getNumOccurrences() && c.plan.modeGiven && c.plan.mode != mode)
    return error(llvm::formatv("--mode={0} but the plan '{1}' says mode {2}",
                               hetpar::getModeName(mode), planPath,
                               hetpar::getModeName(c.plan.mode)));
  if (!c.plan.modeGiven)
    c.plan.mode = mode;
  auto pred = hetpar::simulate(module, cluster, c.plan, model);
  if (!pred)
    return error(
        planPath + ": " + llvm::toString(pred.takeError()) +
        (clusterPath.empty()
             ? " (no --cluster was given, so the cluster is one local " +
                   deviceKind +
                   " device; give the cluster the plan was written for)"
             : std::string()));
  if (!pred->memoryProblems.empty()) {
    std::string lines;
    for (const std::string &p : pred->memoryProblems)
      lines += "\n  " + p;
    return error(llvm::formatv("{0}: the plan does not fit in memory on {1} "
                               "device(s):{2}",
                               planPath, pred->memoryProblems.size(), lines));
  }
  for (const std::string &w : pred->warnings)
    llvm::errs() << "hetpar-compile: warning: " << planPath << ": " << w
                 << "\n";
  if (c.plan.origin.empty())
    c.plan.origin = "given";
  c.prediction = std::move(*pred);
  // Compared in the plan's mode.
  c.baselines = hetpar::makeBaselines(module, cluster, c.plan.mode, model);
  return llvm::Error::success();
}

/// --baseline NAME: one of the baselines, simulated again with its timeline.
static llvm::Error planFromBaseline(ModuleOp module,
                                    const hetpar::Cluster &cluster,
                                    const hetpar::CostModel &model,
                                    ChosenPlan &c) {
  c.baselines = hetpar::makeBaselines(module, cluster, mode, model);
  const hetpar::Baseline *chosen = nullptr;
  for (const hetpar::Baseline &b : c.baselines)
    if (b.name == baselinePlan)
      chosen = &b;
  if (!chosen)
    return error("--baseline: unknown baseline '" + baselinePlan +
                 "' (data_parallel, pipeline or tensor_parallel)");
  if (!chosen->prediction)
    return error("--baseline " + baselinePlan +
                 " is not applicable here: " + chosen->notApplicable);
  if (!chosen->fits())
    return error("--baseline " + baselinePlan + " does not fit in memory: " +
                 chosen->prediction->memoryProblems.front());
  c.plan = chosen->plan;
  c.plan.origin = "baseline: " + baselinePlan;
  c.plan.origin += hetpar::zeroOriginTag(c.plan);
  // Simulated again with its timeline: the baselines are compared without
  // one, and trace.json would be empty.
  return simulateChosen(module, cluster, model, c);
}

/// Neither: the search's best plan (on --assume-kind's cluster, then
/// evaluated on the real one).
static llvm::Error planFromSearch(ModuleOp module,
                                  const hetpar::Cluster &cluster,
                                  const hetpar::CostModel &model,
                                  ChosenPlan &c) {
  if (!(searchBudget > 0) || !std::isfinite(searchBudget))
    return error("--search-budget must be a positive number of seconds");
  hetpar::SearchOptions options;
  options.mode = mode;
  options.objective = objective;
  options.budgetSeconds = searchBudget;
  if (stageCount < 0)
    return error("--stages must be 0 (any number) or more");
  options.stages = stageCount;
  // A progress bar on a terminal, once the search has run for a second.
  auto started = std::chrono::steady_clock::now();
  bool drawn = false;
  if (llvm::errs().is_displayed())
    options.progress = [&](double done) {
      double secs = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - started)
                        .count();
      if (secs < 1 && !drawn)
        return;
      drawn = true;
      int filled = static_cast<int>(done * 30);
      llvm::errs() << "\rsearching [" << std::string(filled, '#')
                   << std::string(30 - filled, ' ')
                   << llvm::formatv("] {0,3}% {1:F1} s", int(done * 100), secs);
      if (done >= 1)
        llvm::errs() << "\n";
    };
  // --assume-kind: the same topology with every device of one kind.
  hetpar::Cluster searched = cluster;
  if (!assumeKind.empty()) {
    const hetpar::DeviceKind *k = hetpar::lookupDeviceKind(assumeKind);
    if (!k)
      return error("--assume-kind: unknown device kind '" + assumeKind +
                   "' (hetpar-cluster --catalog lists the kinds)");
    for (hetpar::Device &d : searched.devices) {
      d.kind = k->name;
      d.fp32Flops = k->fp32Flops;
      d.tensorFlops = k->tensorFlops;
      d.memoryBytes = k->memoryBytes;
      d.memoryBandwidth = k->memoryBandwidth;
      d.slowdown = 1.0;
    }
  }
  auto result = hetpar::searchPlan(module, searched, model, options);
  if (drawn && !result)
    llvm::errs() << "\n";
  if (!result)
    return error(llvm::toString(result.takeError()));
  c.searchResult = std::move(*result);
  c.baselines = c.searchResult->baselines;
  c.plan = c.searchResult->best.plan;
  c.prediction = c.searchResult->best.prediction;
  if (!assumeKind.empty()) {
    // Evaluated on the real cluster.
    c.plan.origin = "search assuming every device is " + assumeKind;
    auto real = hetpar::simulate(module, cluster, c.plan, model);
    if (!real)
      return error(llvm::toString(real.takeError()));
    if (!real->memoryProblems.empty())
      return error(llvm::formatv(
          "the plan made for {0} does not fit the real cluster: {1}",
          assumeKind, real->memoryProblems.front()));
    c.prediction = std::move(*real);
    c.baselines = hetpar::makeBaselines(module, cluster, mode, model);
    c.searchResult.reset();
  }
  return llvm::Error::success();
}

/// A searched training plan that code generation cannot take gives way to
/// the data-parallel baseline (with a note), or fails when that does not fit.
static llvm::Error
fallBackToGeneratable(ModuleOp module, const hetpar::Cluster &cluster,
                      const hetpar::CostModel &model,
                      std::optional<hetpar::FloatMode> generate,
                      ChosenPlan &c) {
  // A searched training plan that trainingPlanProblem refuses (16-bit with
  // tensor parallelism or stages, docs/training.md) gives way to the
  // data-parallel baseline, and the user is told.
  llvm::SmallVector<int64_t> tensors;
  for (const hetpar::Stage &st : c.plan.stages)
    tensors.push_back(st.tensor);
  std::string problem = hetpar::trainingPlanProblem(
      tensors, generate && *generate != hetpar::FloatMode::F32);
  if (generate && mode == hetpar::Mode::Training && c.searchResult &&
      !problem.empty()) {
    const hetpar::Baseline *dp = nullptr;
    for (const hetpar::Baseline &b : c.baselines)
      if (b.name == "data_parallel" && b.fits())
        dp = &b;
    if (!dp)
      return error(llvm::formatv(
          "the searched plan ({0} stage(s)) cannot be generated: {1}; and "
          "the data-parallel baseline does not fit (evaluate plans with "
          "--plan-only)",
          c.plan.stages.size(), problem));
    llvm::errs() << llvm::formatv(
        "hetpar-compile: note: the searched plan ({0} stage(s), {1:F4} s per "
        "step) cannot be generated: {3}; compiling the data-parallel baseline "
        "({2:F4} s per step) instead\n",
        c.plan.stages.size(), c.prediction->stepTime, dp->prediction->stepTime,
        problem);
    c.plan = dp->plan;
    c.plan.origin = "baseline: data_parallel (training code generation)";
    return simulateChosen(module, cluster, model, c);
  }
  return llvm::Error::success();
}

/// --zero-stage and --recompute edit the plan, which is simulated again.
static llvm::Error applyPlanFlags(ModuleOp module,
                                  const hetpar::Cluster &cluster,
                                  const hetpar::CostModel &model,
                                  ChosenPlan &c) {
  // --zero-stage, when given (0 too), applies to every data-parallel stage
  // of the plan, whose prediction then holds each replica's share of the
  // optimizer state.
  if (mode != hetpar::Mode::Training &&
      llvm::any_of(c.plan.stages,
                   [](const hetpar::Stage &st) { return st.zero > 0; }))
    return error("the plan shards optimizer state ('zero'), which only "
                 "training has: compile it with --mode training, or remove "
                 "'zero' (docs/plan-format.md)");
  if (zeroStage > 0 &&
      llvm::none_of(c.plan.stages,
                    [](const hetpar::Stage &st) { return st.data > 1; }))
    return error("--zero-stage " + std::to_string(zeroStage) +
                 " shards the optimizer state over a stage's data-parallel "
                 "replicas, and the plan has none (" +
                 c.plan.origin + ")");
  bool planChanged = false; // the c.plan changed: simulated again below
  for (hetpar::Stage &st : c.plan.stages)
    if (zeroStage.getNumOccurrences() && st.data > 1 && st.zero != zeroStage) {
      st.zero = zeroStage;
      st.zeroShares.clear(); // a stage without ZeRO has no shares
      planChanged = true;
    }
  // --recompute applies to every stage of a training plan, whose
  // prediction then counts the recomputation.
  if (mode == hetpar::Mode::Training && hetpar::tools::recomputeEveryStage())
    for (hetpar::Stage &st : c.plan.stages)
      if (!st.recompute)
        st.recompute = planChanged = true;
  if (planChanged)
    return simulateChosen(module, cluster, model, c);
  return llvm::Error::success();
}

/// plan.json: the prediction, the model, the cost model, the objective, the
/// search's statistics and alternatives, the baselines.
static llvm::json::Object planToJSON(const ChosenPlan &c,
                                     const hetpar::Cluster &cluster,
                                     const hetpar::CostModel &model) {
  llvm::json::Object planJSON =
      hetpar::predictionToJSON(c.plan, *c.prediction, cluster);
  planJSON["model"] = modelPath.getValue();
  planJSON["cost_model"] = model.name();
  planJSON["objective"] =
      objective == hetpar::Objective::Latency ? "latency" : "throughput";
  if (c.searchResult) {
    const hetpar::SearchStats &st = c.searchResult->stats;
    llvm::json::Array alternatives;
    for (const hetpar::Candidate &c : c.searchResult->alternatives)
      alternatives.push_back(
          llvm::json::Object{{"description", c.description},
                             {"predicted_step_time_s", c.prediction.stepTime},
                             {"bubble_fraction", c.prediction.bubbleFraction}});
    planJSON["search"] =
        llvm::json::Object{{"seconds", st.seconds},
                           {"partitions_estimated", st.candidatesEstimated},
                           {"plans_simulated", st.candidatesSimulated},
                           {"sharding_problems", st.shardingProblems},
                           {"sharding_proven_optimal", st.shardingOptimal},
                           {"sharding_fallbacks", st.shardingFallbacks},
                           {"budget_exhausted", st.budgetExhausted},
                           {"alternatives", std::move(alternatives)}};
  }
  planJSON["baselines"] = hetpar::baselinesToJSON(c.baselines);
  return planJSON;
}

/// --plan-only: OUT/plan.json and OUT/trace.json, each complete or absent.
static int writePlanFiles(llvm::json::Object planJSON, const ChosenPlan &c,
                          const hetpar::Cluster &cluster,
                          const std::vector<std::string> &inputsRead) {
  // OUT is a directory; its two files are each complete or absent.
  if (llvm::sys::fs::exists(outputPath) &&
      !llvm::sys::fs::is_directory(outputPath))
    return fail("-o '" + outputPath + "' exists and is not a folder");
  if (std::error_code ec = llvm::sys::fs::create_directories(outputPath))
    return fail("cannot create '" + outputPath + "': " + ec.message());
  llvm::SmallString<256> planFile(outputPath), traceFile(outputPath);
  llvm::sys::path::append(planFile, "plan.json");
  llvm::sys::path::append(traceFile, "trace.json");
  for (llvm::StringRef file : {planFile.str(), traceFile.str()})
    if (llvm::Error err = hetpar::checkNotAnInput(file, inputsRead))
      return fail(llvm::toString(std::move(err)));
  if (llvm::Error err =
          hetpar::writeOutput(planFile, [&](llvm::raw_ostream &os) {
            os << llvm::formatv("{0:2}", llvm::json::Value(std::move(planJSON)))
               << "\n";
          }))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err =
          hetpar::writeOutput(traceFile, [&](llvm::raw_ostream &os) {
            hetpar::writeTraceJSON(os, *c.prediction, cluster);
            os << "\n";
          })) {
    llvm::sys::fs::remove(planFile);
    return fail(llvm::toString(std::move(err)));
  }
  return 0;
}

/// The short report on stdout: the plan, its prediction, its stages, the
/// baselines (or --explain's lines), what was written.
static void reportPlan(const ChosenPlan &c, const hetpar::Cluster &cluster,
                       bool generate) {
  // A short report on stdout.
  llvm::outs() << llvm::formatv(
      "plan ({0}): {1} stage(s), {2} microbatch(es), {3}, {4}\n", c.plan.origin,
      c.plan.stages.size(), c.plan.microbatches,
      hetpar::getScheduleName(c.plan.schedule),
      hetpar::getModeName(c.plan.mode));
  llvm::outs() << llvm::formatv(
      "predicted step time {0:F6} s, throughput {1:F2} "
      "samples/s, bubble {2:P}\n",
      c.prediction->stepTime, c.prediction->throughput,
      c.prediction->bubbleFraction);
  printStageTable(c.plan, *c.prediction, cluster);
  if (c.searchResult && explain)
    for (const std::string &line : c.searchResult->explanation)
      llvm::outs() << "explain: " << line << "\n";
  // (--explain already said each baseline's time against the plan's.)
  for (const hetpar::Baseline &b : c.baselines) {
    if (c.searchResult && explain)
      break;
    llvm::outs() << "baseline " << b.name << ": ";
    if (!b.prediction)
      llvm::outs() << "not applicable (" << b.notApplicable << ")\n";
    else
      llvm::outs() << llvm::formatv("{0:F6} s{1}\n", b.prediction->stepTime,
                                    b.fits() ? ""
                                             : " (does not fit in memory)");
  }
  if (generate)
    llvm::outs() << "wrote " << outputPath << ": one program per device ("
                 << c.plan.stages.size()
                 << " stage(s)), plan.json, trace.json\n";
  else
    llvm::outs() << "wrote " << outputPath << "/plan.json and " << outputPath
                 << "/trace.json\n";
}

/// --plan-only: evaluate the given plan, or search one, and write
/// OUT/plan.json and OUT/trace.json. With `generate` (--cluster or --plan
/// without --plan-only), compile the plan instead: OUT is then a program
/// folder with one program per device, plan.json and trace.json.
static int planModel(ModuleOp module,
                     const std::vector<std::string> &inputsRead,
                     std::optional<hetpar::FloatMode> generate) {
  // Everything that can fail is checked before anything is written.
  if (clusterPath.empty() && !hetpar::lookupDeviceKind(deviceKind))
    return fail("--device-kind: unknown device kind '" + deviceKind +
                "' (hetpar-cluster --catalog lists the kinds)");
  llvm::Expected<hetpar::Cluster> cluster =
      clusterPath.empty() ? hetpar::Cluster::singleDevice(deviceKind)
                          : hetpar::loadCluster(clusterPath);
  if (!cluster)
    return fail(llvm::toString(cluster.takeError()));
  auto model = makeCostModel();
  if (!model)
    return fail(llvm::toString(model.takeError()));
  ChosenPlan c;
  llvm::Error chosen =
      !planPath.empty()       ? planFromFile(module, *cluster, **model, c)
      : !baselinePlan.empty() ? planFromBaseline(module, *cluster, **model, c)
                              : planFromSearch(module, *cluster, **model, c);
  if (chosen)
    return fail(llvm::toString(std::move(chosen)));
  // A plan file may say training without --mode training (--plan-only).
  if (c.plan.mode == hetpar::Mode::Training)
    if (llvm::Error err = hetpar::tools::checkTrainingBatchDim(module))
      return fail(llvm::toString(std::move(err)));
  if (llvm::Error err =
          fallBackToGeneratable(module, *cluster, **model, generate, c))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = applyPlanFlags(module, *cluster, **model, c))
    return fail(llvm::toString(std::move(err)));
  llvm::json::Object planJSON = planToJSON(c, *cluster, **model);
  if (generate) {
    std::string planText, traceText;
    llvm::raw_string_ostream(planText)
        << llvm::formatv("{0:2}", llvm::json::Value(std::move(planJSON)))
        << "\n";
    llvm::raw_string_ostream traceOS(traceText);
    hetpar::writeTraceJSON(traceOS, *c.prediction, *cluster);
    traceOS << "\n";
    if (int rc = compilePlan(module, c.plan, *cluster, std::move(planText),
                             std::move(traceText), *generate, inputsRead))
      return rc;
  } else if (int rc =
                 writePlanFiles(std::move(planJSON), c, *cluster, inputsRead)) {
    return rc;
  }
  reportPlan(c, *cluster, bool(generate));
  return 0;
}

static const char *argv0 = "hetpar-compile";

static hetpar::codegen::CodegenOptions
codegenOptions(hetpar::FloatMode floatMode) {
  hetpar::codegen::CodegenOptions opts;
  opts.floatMode = floatMode;
  opts.optLevel = optLevel;
  opts.cpuArch = cpuArch;
  opts.checkIndices = !uncheckedIndices;
  opts.fuseEpilogues = fuseEpilogues;
  opts.allowTF32 = allowTF32;
  opts.runtimeIncludeDir = hetpar::codegen::findRuntimeIncludeDir(
      argv0, reinterpret_cast<void *>(&fail));
  if (!targets.empty()) {
    opts.buildCPU = llvm::is_contained(targets, "cpu");
    opts.buildCUDA = llvm::is_contained(targets, "cuda");
    opts.requireCUDA = opts.buildCUDA;
  }
  if (!cudaArchs.empty()) {
    opts.cudaArchs.assign(cudaArchs.begin(), cudaArchs.end());
    opts.cudaArchsGiven = true;
  }
  return opts;
}

/// Adds the graph rewrites code generation wants on every function: unless
/// --fuse-attention=false, fused attention (hetpar-onnx-fuse-attention);
/// unless --fuse-conv=false, convolutions with their residual Add and
/// activation (hetpar-onnx-fuse-conv); a MatMul by a constant with its bias
/// Add as one Gemm (hetpar-onnx-fuse-gemm-bias); then matrix transposes
/// folded into GEMM flags (hetpar-onnx-fold-transposes). In this order a 2-D
/// attention's MatMul(Q, Transpose(K)) is still a MatMul when the fusion
/// looks for it.
static void addCodegenRewrites(PassManager &pm) {
  if (fuseAttention)
    pm.addNestedPass<func::FuncOp>(hetpar::createFuseAttentionPass());
  if (fuseConv)
    pm.addNestedPass<func::FuncOp>(hetpar::createFuseConvPass());
  pm.addNestedPass<func::FuncOp>(hetpar::createFuseGemmBiasPass());
  pm.addNestedPass<func::FuncOp>(hetpar::createFoldTransposesPass());
}

/// The graph rewrites of addCodegenRewrites on `module`.
static LogicalResult prepareForCodegen(ModuleOp module) {
  PassManager pm(module.getContext());
  addCodegenRewrites(pm);
  return pm.run(module);
}

/// The evaluation step of a training program (float32, as the master
/// weights), or std::nullopt after an error.
static std::optional<hetpar::codegen::DeviceProgram>
generateEvalProgram(ModuleOp module) {
  if (failed(prepareForCodegen(module)))
    return std::nullopt;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isDeclaration()) {
      auto program = hetpar::codegen::generateDeviceProgram(
          f, codegenOptions(hetpar::FloatMode::F32));
      if (failed(program))
        return std::nullopt;
      return std::move(*program);
    }
  fail("the evaluation step has no function");
  return std::nullopt;
}

/// Code generation for one local device: OUT is complete or absent.
static int compileModel(ModuleOp module, hetpar::FloatMode floatMode,
                        llvm::ArrayRef<std::string> inputsRead,
                        const hetpar::codegen::PlanFiles &extra = {}) {
  hetpar::codegen::CodegenOptions opts = codegenOptions(floatMode);
  if (failed(prepareForCodegen(module)))
    return 1;
  func::FuncOp func;
  for (auto f : module.getOps<func::FuncOp>())
    if (!f.isDeclaration()) {
      func = f;
      break;
    }
  if (!func)
    return fail("the model has no graph to compile");
  // Before any work: OUT must be replaceable without losing anything.
  if (llvm::Error err =
          hetpar::codegen::checkOutputFolder(outputPath, inputsRead))
    return fail(llvm::toString(std::move(err)));
  auto program = hetpar::codegen::generateDeviceProgram(func, opts);
  if (failed(program))
    return 1;
  if (llvm::Error err = hetpar::codegen::writeProgramFolder(
          llvm::ArrayRef(*program), {0}, outputPath, modelPath, opts,
          llvm::errs(), extra))
    return fail(llvm::toString(std::move(err)));
  // Binary units, as hetpar-run prints them.
  auto kib = [](int64_t bytes) {
    return bytes < 1024 * 1024
               ? llvm::formatv("{0:f1} KiB", bytes / 1024.0).str()
               : llvm::formatv("{0:f1} MiB", bytes / (1024.0 * 1024)).str();
  };
  llvm::outs() << llvm::formatv(
      "hetpar-compile: wrote {0}: {1} generated kernels ({2} ops fused into "
      "them), {3} library calls ({7} ops in GEMM epilogues, {8} in LayerNorm "
      "prologues); arena {4} (peak; {5} without reuse), weights {6}\n",
      outputPath, program->kernels, program->fusedOps, program->libraryCalls,
      kib(program->arenaBytes), kib(program->arenaBytesNoReuse),
      kib(program->weightsBytes), program->epilogueOps, program->prologueOps);
  return 0;
}

/// The float initializers of the imported model (before folding) that a
/// training plan's steps must train (trainableInitializers).
static std::vector<std::string> trainedInitializers;
/// A training program's evaluation step (--eval-program), made from the
/// imported model before planning.
static std::optional<hetpar::codegen::DeviceProgram> evalProgram;

/// The compile-time exchange check (hetpar-dist-verify-exchanges: matching
/// messages and collectives, no deadlock) over every device's final training
/// step of a pipeline, gathered into one module with the mesh of `planned`.
static LogicalResult
verifyTrainingExchanges(ModuleOp planned, hetpar::tools::ReplicaSteps &steps) {
  OpBuilder b(planned.getContext());
  OwningOpRef<ModuleOp> all = ModuleOp::create(planned.getLoc());
  b.setInsertionPointToEnd(all->getBody());
  for (auto mesh : planned.getOps<hetpar::dist::MeshOp>())
    b.clone(*mesh);
  for (OwningOpRef<ModuleOp> &step : steps.modules) {
    auto func = hetpar::train::stepFunction(*step);
    if (failed(func))
      return failure();
    auto copy = llvm::cast<func::FuncOp>(b.clone(**func));
    auto id = copy->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    copy.setSymName(("device_" + llvm::Twine(id ? id.getInt() : -1)).str());
  }
  PassManager pm(planned.getContext());
  // The steps' globals stay in their own modules: nothing here verifies them.
  pm.enableVerifier(false);
  pm.addPass(hetpar::createDistVerifyExchangesPass());
  return pm.run(*all);
}

/// Code generation for a data-parallel training plan (docs/training.md,
/// "Data-parallel training"): `module` is annotated with the plan; one
/// training step per device (buildReplicaSteps), each device reading its
/// rows of every batch. `files` holds plan.json and trace.json.
static int compileTrainingPlan(ModuleOp module, hetpar::FloatMode floatMode,
                               llvm::ArrayRef<std::string> inputsRead,
                               hetpar::codegen::PlanFiles files) {
  FailureOr<hetpar::PlanAnnotation> plan =
      hetpar::readPlanAnnotation(module, std::nullopt);
  if (failed(plan))
    return 1;
  auto steps =
      hetpar::tools::buildReplicaSteps(module, floatMode, trainedInitializers);
  if (failed(steps))
    return 1;
  bool pipeline = plan->stages.size() > 1;
  // The IR carries the 16-bit types itself (hetpar-train-mixed-precision).
  hetpar::codegen::CodegenOptions opts = codegenOptions(hetpar::FloatMode::F32);
  for (OwningOpRef<ModuleOp> &step : steps->modules)
    if (failed(prepareForCodegen(*step)))
      return 1;
  if (pipeline && failed(verifyTrainingExchanges(module, *steps)))
    return 1;
  std::vector<hetpar::codegen::DeviceProgram> programs;
  for (OwningOpRef<ModuleOp> &step : steps->modules) {
    auto func = hetpar::train::stepFunction(*step);
    if (failed(func))
      return 1;
    auto program = hetpar::codegen::generateDeviceProgram(*func, opts);
    if (failed(program))
      return 1;
    programs.push_back(std::move(*program));
  }
  std::vector<const hetpar::codegen::DeviceProgram *> perDevice;
  std::vector<int64_t> ids;
  for (auto [s, stage] : llvm::enumerate(plan->stages))
    for (auto [k, id] : llvm::enumerate(stage.devices)) {
      // The devices of a replica (its tensor-parallel group) read its rows.
      int64_t r = static_cast<int64_t>(k) / stage.tensor;
      perDevice.push_back(&programs[steps->moduleOf[ids.size()]]);
      ids.push_back(id);
      files.stages.push_back(static_cast<int64_t>(s));
      files.kinds.push_back(stage.kinds[k]);
      files.batchRows.push_back({stage.offsets[r], stage.rows[r]});
    }
  // One stage: each call is one microbatch (an accumulation step). A
  // pipeline: one call runs the step's microbatches in its schedule.
  files.training = hetpar::tools::trainingManifest(
      *steps->modules.front(), floatMode,
      pipeline ? plan->batch : plan->microbatchRows,
      pipeline ? 1 : plan->microbatches, pipeline ? plan->microbatches : 1,
      llvm::any_of(plan->stages, [](const hetpar::StageAnnotation &st) {
        return st.recompute;
      }));
  files.copies.push_back({"model.onnx", modelPath});
  files.outputDevice = ids.front();
  hetpar::codegen::describeGraphInputs(module, files);
  // The evaluation step reads every parameter from the reporting device's
  // weights, which a pipeline spreads over its stages and tensor
  // parallelism over its groups.
  bool tensorParallel =
      llvm::any_of(plan->stages, [](const hetpar::StageAnnotation &st) {
        return st.tensor > 1;
      });
  if (evalProgram && !pipeline && !tensorParallel)
    files.evalProgram = &*evalProgram;
  if (llvm::Error err = hetpar::codegen::writeProgramFolder(
          perDevice, ids, outputPath, modelPath, opts, llvm::errs(), files))
    return fail(llvm::toString(std::move(err)));
  int64_t weights = 0;
  for (const auto &p : programs)
    weights = std::max(weights, p.weightsBytes);
  for (auto [s, stage] : llvm::enumerate(plan->stages)) {
    if (pipeline)
      llvm::outs() << "stage " << s << ": ";
    llvm::outs() << llvm::formatv(
        "training programs: {0} data-parallel replica(s), rows per microbatch "
        "{1:$[:]}",
        stage.data, llvm::make_range(stage.rows.begin(), stage.rows.end()));
    if (stage.tensor > 1)
      llvm::outs() << llvm::formatv(", {0} tensor-parallel devices each",
                                    stage.tensor);
    if (!pipeline)
      llvm::outs() << llvm::formatv(", {0} microbatch(es) per step",
                                    plan->microbatches);
    llvm::outs() << "\n";
  }
  if (pipeline)
    llvm::outs() << llvm::formatv(
        "pipeline: {0} stages, {1} microbatch(es) per step in {2} order\n",
        plan->stages.size(), plan->microbatches,
        hetpar::dist::stringifyPipelineSchedule(plan->schedule));
  llvm::outs() << llvm::formatv(
      "weights and optimizer state {0:F1} KiB per device at most\n",
      weights / 1024.0);
  return 0;
}

/// Code generation for a plan: annotate, the global form
/// (hetpar-dist-global-form), partition (hetpar-dist-partition),
/// check the exchanges, one program per device. OUT is complete or absent.
static int compilePlan(ModuleOp module, const hetpar::Plan &plan,
                       const hetpar::Cluster &cluster, std::string planText,
                       std::string traceText, hetpar::FloatMode floatMode,
                       llvm::ArrayRef<std::string> inputsRead) {
  if (plan.mode == hetpar::Mode::Training && mode != hetpar::Mode::Training)
    return fail("the plan is for training: compile it with --mode training "
                "and the training options (docs/training.md)");
  if (llvm::Error err =
          hetpar::codegen::checkOutputFolder(outputPath, inputsRead))
    return fail(llvm::toString(std::move(err)));
  if (llvm::Error err = hetpar::annotateModule(module, plan, &cluster))
    return fail(llvm::toString(std::move(err)));
  hetpar::codegen::PlanFiles files;
  files.files = {{"plan.json", std::move(planText)},
                 {"trace.json", std::move(traceText)}};
  if (plan.mode == hetpar::Mode::Training)
    return compileTrainingPlan(module, floatMode, inputsRead, std::move(files));
  PassManager pm(module.getContext());
  hetpar::buildGlobalFormPipeline(pm);
  hetpar::buildPartitionPipeline(pm, {});
  pm.addPass(hetpar::createDistVerifyExchangesPass());
  addCodegenRewrites(pm);
  if (failed(pm.run(module)))
    return 1;
  hetpar::codegen::CodegenOptions opts = codegenOptions(floatMode);
  std::vector<hetpar::codegen::DeviceProgram> programs;
  std::vector<int64_t> ids;
  int64_t kernels = 0, weights = 0, arena = 0;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto id = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    if (!id)
      continue;
    auto program = hetpar::codegen::generateDeviceProgram(f, opts);
    if (failed(program))
      return 1;
    kernels += program->kernels;
    weights += program->weightsBytes;
    arena = std::max(arena, program->arenaBytes);
    programs.push_back(std::move(*program));
    ids.push_back(id.getInt());
  }
  hetpar::codegen::describePlacement(module, ids, files);
  if (llvm::Error err = hetpar::codegen::writeProgramFolder(
          programs, ids, outputPath, modelPath, opts, llvm::errs(), files))
    return fail(llvm::toString(std::move(err)));
  llvm::outs() << llvm::formatv(
      "programs: {0} device(s), {1} kernel launches per microbatch in all, "
      "weights {2:F1} KiB in all (sharded), largest arena {3:F1} KiB; device "
      "{4} returns the outputs\n",
      programs.size(), kernels, weights / 1024.0, arena / 1024.0,
      files.outputDevice);
  return 0;
}

int main(int argc, char **argv) {
  argv0 = argv[0];
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // Only this tool's options in --help (MLIR's printing and pass-manager
  // options still work; --help-hidden lists them).
  cl::HideUnrelatedOptions(
      {&category, &hetpar::tools::trainingOptionCategory()});
  cl::ParseCommandLineOptions(argc, argv, "HetPar compiler driver\n");

  bool codegen = emit == EmitKind::None && !planOnly;
  if (codegen && outputPath.empty())
    return fail("no output folder: give -o OUT (or --emit=..., --plan-only)");
  if (emit != EmitKind::None && planOnly)
    return fail("--plan-only writes a plan; do not combine it with --emit");
  if (planOnly && outputPath.empty())
    return fail(
        "--plan-only needs -o OUTDIR (plan.json and trace.json go there)");
  // --cluster, --plan or --baseline without --plan-only: compile the plan.
  bool planned =
      !planPath.empty() || !clusterPath.empty() || !baselinePlan.empty();
  if (!planPath.empty() && !baselinePlan.empty())
    return fail("--plan and --baseline both choose the plan; give one");
  auto floatMode = hetpar::parseFloatMode(dtypeOption);
  if (!floatMode)
    return fail("--dtype: unknown type '" + dtypeOption +
                "' (float32, float16 or bfloat16)");
  // A training program for one device (docs/training.md).
  bool trainingProgram = codegen && !planned && mode == hetpar::Mode::Training;
  if (zeroStage < 0 || zeroStage > 2)
    return fail("--zero-stage must be 0, 1 or 2 (ZeRO-1 shards the "
                "optimizer state, ZeRO-2 also the summed gradients; stage 3 "
                "is not implemented)");
  if (llvm::Error err = hetpar::tools::checkTrainingFlags())
    return fail(llvm::toString(std::move(err)));
  if (zeroStage > 0 && mode != hetpar::Mode::Training)
    return fail("--zero-stage shards optimizer state: it needs --mode "
                "training");
  if (zeroStage > 0 && planPath.empty() && clusterPath.empty() &&
      baselinePlan.empty())
    return fail("--zero-stage shards optimizer state over data-parallel "
                "replicas: it needs --cluster (with --plan or --baseline, "
                "or the search)");
  if (optLevel < 0 || optLevel > 3)
    return fail("--opt-level must be 0, 1, 2 or 3");
  if (cpuArch.empty() || !llvm::all_of(cpuArch, [](char c) {
        return llvm::isAlnum(c) || c == '-' || c == '_' || c == '.';
      }))
    return fail("--cpu-arch: '" + cpuArch +
                "' is not a CPU name (native, x86-64, x86-64-v3, znver4, "
                "...)");
  for (const std::string &t : targets)
    if (t != "cpu" && t != "cuda" && t != "none")
      return fail("--targets: unknown target '" + t + "' (cpu, cuda, none)");
  for (int a : cudaArchs)
    if (a < 50 || a > 200)
      return fail("--cuda-arch: " + std::to_string(a) +
                  " is not a GPU architecture number (e.g. 80, 90)");
  if (emit == EmitKind::MLIR && outputPath.empty())
    return fail("--emit=mlir needs -o OUT.mlir");
  if (emit == EmitKind::MLIRBytecode && outputPath.empty())
    return fail("--emit=mlirbc needs -o OUT.mlirbc");
  if (modelPath.empty())
    return fail("no model file given");
  if (StringRef(modelPath).ends_with(".mlir") ||
      StringRef(modelPath).ends_with(".mlirbc"))
    return fail("'" + modelPath +
                "' is MLIR; hetpar-compile reads ONNX models (run passes on "
                "MLIR with hetpar-opt)");

  for (const std::string &plugin : pluginPaths) {
    auto loaded = PassPlugin::load(plugin);
    if (!loaded)
      return fail("cannot load plugin '" + plugin +
                  "': " + llvm::toString(loaded.takeError()));
    loaded->registerPassRegistryCallbacks();
  }

  hetpar::ONNXImportOptions options;
  // Planning needs shapes, never weights (DESIGN.md: a model whose external
  // data files are absent can still be planned); so do kernel lists and the
  // summary.
  options.loadExternalData =
      !planOnly && emit != EmitKind::Kernels && emit != EmitKind::Summary;
  if (llvm::Error err = options.addInputShapeSpecs(inputShapes))
    return fail(llvm::toString(std::move(err)));
  // The model and its external data files are inputs: never overwritten.
  std::vector<std::string> inputsRead{modelPath};
  options.externalFilesRead = &inputsRead;
  // Training keeps each initializer the parameter it is, also for
  // --plan-only: the planner counts the parameters the programs train (equal
  // zero biases, merged by constant CSE, were counted once).
  // --emit summary --mode training shows the ops that training plans, and
  // --emit=mlir (or mlirbc) --mode training writes the module, initializers
  // marked and kept, that hetpar-train-lift-params takes.
  bool trainingModule = mode == hetpar::Mode::Training &&
                        (emit == EmitKind::Summary || emit == EmitKind::MLIR ||
                         emit == EmitKind::MLIRBytecode);
  options.markInitializers =
      ((codegen || planOnly) && mode == hetpar::Mode::Training) ||
      trainingModule;
  if (!planOnly)
    if (llvm::Error err = hetpar::checkNotAnInput(outputPath, {modelPath}))
      return fail(llvm::toString(std::move(err)));

  DialectRegistry registry;
  hetpar::registerImportDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  // Diagnostics print as "model.onnx: error: node 'x': message".
  hetpar::DiagnosticPrinter diagnostics(&context);
  auto module = hetpar::importONNXModel(modelPath, &context, options);
  if (!module)
    return 1;
  if (llvm::Error err = hetpar::tools::applyBatchDims(
          *module, batchDims, mode == hetpar::Mode::Training))
    return fail(llvm::toString(std::move(err)));

  if (codegen && planned && mode == hetpar::Mode::Training)
    trainedInitializers = hetpar::tools::trainableInitializers(*module);
  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  hetpar::ToStaticPipelineOptions pipeline;
  pipeline.verifyStatic = !allowDynamic;
  // A training plan's steps are built from the static model: its
  // initializers must stay the parameters they are (also for --plan-only,
  // whose memory counts the same parameters).
  pipeline.keepInitializers =
      ((planOnly || (codegen && planned)) && mode == hetpar::Mode::Training) ||
      trainingModule;
  auto toStatic = [&](OpPassManager &p) {
    hetpar::buildToStaticPipeline(p, pipeline);
  };
  // The evaluation step starts from the same imported module (one device
  // or a training plan's: it evaluates the whole batch on one device).
  if ((trainingProgram ||
       (codegen && planned && mode == hetpar::Mode::Training)) &&
      hetpar::tools::wantEvalProgram()) {
    OwningOpRef<ModuleOp> evalModule = module->clone();
    PassManager evalPM(&context);
    if (failed(applyPassManagerCLOptions(evalPM)))
      return 1;
    hetpar::tools::buildEvalPipeline(evalPM, toStatic);
    if (failed(evalPM.run(*evalModule)))
      return 1;
    evalProgram = generateEvalProgram(*evalModule);
    if (!evalProgram)
      return 1;
  }
  if (trainingProgram)
    hetpar::tools::buildTrainingPipeline(pm, *floatMode, toStatic);
  else
    hetpar::buildToStaticPipeline(pm, pipeline);
  if (failed(pm.run(*module)))
    return 1;
  if (trainingProgram) {
    hetpar::codegen::PlanFiles extra;
    extra.training = hetpar::tools::trainingManifest(*module, *floatMode);
    extra.copies.push_back({"model.onnx", modelPath});
    if (evalProgram)
      extra.evalProgram = &*evalProgram;
    // The IR carries the 16-bit types itself (hetpar-train-mixed-precision):
    // code generation stores them as they are.
    return compileModel(*module, hetpar::codegen::FloatMode::F32, inputsRead,
                        extra);
  }

  if ((planOnly || (codegen && planned)) && mode == hetpar::Mode::Training)
    if (llvm::Error err = hetpar::tools::checkTrainingBatchDim(*module))
      return fail(llvm::toString(std::move(err)));
  // The planner reads the dtype and the optimizer's state from the module
  // (docs/search.md): one fact for the search, the simulator and the cost
  // model.
  if (planOnly || (codegen && planned)) {
    hetpar::setComputeDtype(*module, *floatMode);
    if (mode == hetpar::Mode::Training)
      if (llvm::Error err = hetpar::tools::markTrainingState(*module))
        return fail(llvm::toString(std::move(err)));
  }
  if (planOnly)
    return planModel(*module, inputsRead, std::nullopt);
  if (codegen && planned)
    return planModel(*module, inputsRead, *floatMode);
  if (codegen)
    return compileModel(*module, *floatMode, inputsRead);

  // Complete or absent: see hetpar::writeOutput.
  auto write = [&](llvm::function_ref<void(llvm::raw_ostream &)> body) -> int {
    if (llvm::Error err = hetpar::checkNotAnInput(
            outputPath.empty() ? StringRef("-") : StringRef(outputPath),
            inputsRead))
      return fail(llvm::toString(std::move(err)));
    if (llvm::Error err = hetpar::writeOutput(
            outputPath.empty() ? StringRef("-") : StringRef(outputPath), body))
      return fail(llvm::toString(std::move(err)));
    return 0;
  };

  switch (emit) {
  case EmitKind::MLIR:
    // With locations: they carry the ONNX node names that plans and layer
    // detection use (hetpar-opt --hetpar-search-plan reads them back).
    return write([&](llvm::raw_ostream &os) {
      module->print(os, OpPrintingFlags().enableDebugInfo());
    });
  case EmitKind::MLIRBytecode: {
    LogicalResult ok = success();
    int rc = write(
        [&](llvm::raw_ostream &os) { ok = writeBytecodeToFile(*module, os); });
    return rc ? rc : (failed(ok) ? fail("cannot write bytecode") : 0);
  }
  case EmitKind::Summary:
    return write([&](llvm::raw_ostream &os) {
      os << "model " << modelPath << "\n";
      module->walk([&](func::FuncOp func) {
        hetpar::printModelSummary(hetpar::summarizeFunction(func), os);
      });
    });
  case EmitKind::Kernels: {
    if (!hetpar::lookupDeviceKind(deviceKind))
      return fail("--device-kind: unknown device kind '" + deviceKind +
                  "' (hetpar-cluster --catalog lists the kinds)");
    auto model = makeCostModel();
    if (!model)
      return fail(llvm::toString(model.takeError()));
    hetpar::Device device =
        hetpar::Cluster::singleDevice(deviceKind).devices.front();
    return write([&](llvm::raw_ostream &os) {
      module->walk([&](func::FuncOp func) {
        hetpar::writeKernelList(func, **model, device, os);
      });
    });
  }
  case EmitKind::None:
    break;
  }
  return 0;
}
