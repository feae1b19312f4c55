//===- Training.cpp - hetpar-compile --mode training ----------------------===//
//
// The training flags of hetpar-compile and the pass pipeline they configure
// (docs/training.md). The passes do the work; this file only maps flags.
//
//===----------------------------------------------------------------------===//
#include "Training.h"

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Plan/PlanAnnotation.h"
#include "hetpar/Plan/TrainingLabels.h"
#include "hetpar/Support/OptimizerState.h"
#include "hetpar/Transforms/GradientBuckets.h"
#include "hetpar/Transforms/Passes.h"
#include "hetpar/Transforms/Training.h"

#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include <map>
#include <set>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("hetpar-compile training options "
                                   "(--mode training)");
static cl::opt<std::string>
    loss("loss",
         cl::desc("The loss: output (the model's scalar output, default), "
                  "cross-entropy or mse (mean, as PyTorch) on an output "
                  "against --labels"),
         cl::init("output"), cl::cat(category));
static cl::opt<std::string>
    labels("labels", cl::desc("Name of the labels input the loss adds"),
           cl::init("labels"), cl::value_desc("NAME"), cl::cat(category));
static cl::opt<unsigned> lossOutput("loss-output",
                                    cl::desc("Model output the loss uses (0)"),
                                    cl::init(0), cl::cat(category));
static cl::opt<std::string>
    freeze("freeze",
           cl::desc("Initializers that stay constant (regular expression over "
                    "their names, full match)"),
           cl::value_desc("REGEX"), cl::cat(category));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("adamw (default), sgd, or none (the program returns "
                       "the loss and the gradients)"),
              cl::init("adamw"), cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Learning rate (1e-3)"),
                          cl::init(1e-3), cl::cat(category));
static cl::opt<double> beta1("beta1", cl::desc("AdamW beta1 (0.9)"),
                             cl::init(0.9), cl::cat(category));
static cl::opt<double> beta2("beta2", cl::desc("AdamW beta2 (0.999)"),
                             cl::init(0.999), cl::cat(category));
static cl::opt<double> eps("eps", cl::desc("AdamW epsilon (1e-8)"),
                           cl::init(1e-8), cl::cat(category));
static cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("Weight decay (0.01 for AdamW, 0 for SGD)"),
                cl::init(-1), cl::cat(category));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum (0)"),
                                cl::init(0), cl::cat(category));
static cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                              cl::init(false), cl::cat(category));
static cl::opt<double>
    clipGradNorm("clip-grad-norm",
                 cl::desc("Clip the gradients' global L2 norm (0: off)"),
                 cl::init(0), cl::cat(category));
static cl::opt<std::string>
    schedule("lr-schedule", cl::desc("constant (default) or warmup-cosine"),
             cl::init("constant"), cl::cat(category));
static cl::opt<int64_t> warmupSteps("warmup-steps",
                                    cl::desc("Linear warm-up steps"),
                                    cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    totalSteps("total-steps", cl::desc("Steps of warm-up plus cosine decay"),
               cl::init(0), cl::cat(category));
static cl::opt<double> minLr("min-lr",
                             cl::desc("Learning rate at the end of the decay"),
                             cl::init(0), cl::cat(category));

static cl::opt<int64_t>
    seed("seed",
         cl::desc("Seed of the masks of training-mode Dropout nodes without "
                  "their own seed attribute (0)"),
         cl::init(0), cl::cat(category));

static cl::opt<int64_t> gradAccumulation(
    "grad-accumulation-steps",
    cl::desc("Microbatches whose gradients are summed into one update (1); "
             "a step then takes this many batches of the compiled batch size"),
    cl::init(1), cl::value_desc("N"), cl::cat(category));

static cl::opt<bool>
    recompute("recompute",
              cl::desc("Activation recomputation: keep each layer's inputs and "
                       "recompute the layer's values before its backward pass "
                       "(hetpar-train-recompute)"),
              cl::init(false), cl::cat(category));

static cl::opt<double> bucketMiB(
    "bucket-mib",
    cl::desc("Data parallelism: the largest bucket of gradients summed (or, "
             "with ZeRO, reduce-scattered) by one collective, in MiB (25, "
             "PyTorch DistributedDataParallel's bucket_cap_mb)"),
    cl::init(hetpar::dist::kGradientBucketMiB), cl::value_desc("MIB"),
    cl::cat(category));

static cl::opt<bool> evalProgram(
    "eval-program",
    cl::desc("Also write the evaluation step (the loss with running "
             "statistics and without Dropout) that hetpar-run --eval-data "
             "runs (on; =false saves its build)"),
    cl::init(true), cl::cat(category));

bool hetpar::tools::wantEvalProgram() { return evalProgram; }

llvm::Error hetpar::tools::checkTrainingFlags() {
  // Checked whether or not the plan has a data-parallel step that uses it,
  // as hetpar-dist-reduce-gradients checks it where one does.
  if (bucketMiB.getNumOccurrences())
    if (std::string why = hetpar::train::bucketMiBError(bucketMiB);
        !why.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
  return llvm::Error::success();
}

bool hetpar::tools::recomputeEveryStage() { return recompute; }

/// hetpar-train-optimizer's options from the training flags (accumulation:
/// --grad-accumulation-steps; a plan's step sets its own).
static hetpar::TrainOptimizerPassOptions optimizerOptions() {
  hetpar::TrainOptimizerPassOptions opt;
  opt.optimizer = optimizer;
  opt.lr = lr;
  opt.beta1 = beta1;
  opt.beta2 = beta2;
  opt.eps = eps;
  opt.weightDecay = weightDecay;
  opt.momentum = momentum;
  opt.nesterov = nesterov;
  opt.clipGradNorm = clipGradNorm;
  opt.schedule = schedule;
  opt.warmupSteps = warmupSteps;
  opt.totalSteps = totalSteps;
  opt.minLr = minLr;
  opt.accumulate = gradAccumulation.getValue();
  return opt;
}

llvm::Error hetpar::tools::markTrainingState(ModuleOp module) {
  std::string why = hetpar::trainOptimizerOptionsError(optimizerOptions());
  if (!why.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "optimizer: " + why);
  if (auto slots = optimizerStateSlots(optimizer, momentum))
    setOptimizerStateSlots(module, *slots);
  // The model's function (the planner's); a bad --loss-output is the
  // training pipeline's error to report.
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isDeclaration() || lossOutput >= func.getNumResults())
      continue;
    auto out =
        llvm::dyn_cast<RankedTensorType>(func.getResultTypes()[lossOutput]);
    if (out && out.hasStaticShape())
      if (RankedTensorType type = labelsType(out, loss))
        setTrainingLabels(module, labels, type);
    break;
  }
  return llvm::Error::success();
}

llvm::cl::OptionCategory &hetpar::tools::trainingOptionCategory() {
  return category;
}

/// The passes up to one scalar loss over the lifted parameters, shared by
/// the training and the evaluation step so that both see the same globals.
/// A pipeline stage (`stage`) holds some of the initializers: a --freeze
/// that names none of them is checked against the whole model instead
/// (checkFreezeNamesSome).
static void
buildLossPipeline(OpPassManager &pm,
                  const std::function<void(OpPassManager &)> &toStatic,
                  bool attachLoss = true, bool stage = false) {
  hetpar::TrainLiftParamsPassOptions lift;
  lift.freeze = freeze;
  lift.requireMatch = !stage;
  pm.addPass(hetpar::createTrainLiftParamsPass(lift));
  toStatic(pm);
  if (!attachLoss)
    return;
  hetpar::TrainAttachLossPassOptions attach;
  attach.loss = loss;
  attach.labels = labels;
  attach.output = lossOutput;
  pm.addPass(hetpar::createTrainAttachLossPass(attach));
}

void hetpar::tools::buildEvalPipeline(
    OpPassManager &pm, const std::function<void(OpPassManager &)> &toStatic) {
  buildLossPipeline(pm, toStatic);
  pm.addPass(hetpar::createTrainEvalModePass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

void hetpar::tools::buildTrainingPipeline(
    OpPassManager &pm, codegen::FloatMode dtype,
    const std::function<void(OpPassManager &)> &toStatic,
    std::optional<ReplicaStep> replica) {
  buildLossPipeline(pm, toStatic, !replica || replica->lastStage,
                    replica && replica->pipeline);
  TrainDropoutPassOptions dropout;
  dropout.seed = seed;
  pm.addPass(createTrainDropoutPass(dropout));
  if (dtype != codegen::FloatMode::F32) {
    TrainMixedPrecisionPassOptions mixed;
    mixed.dtype = codegen::floatModeName(dtype).str();
    pm.addPass(createTrainMixedPrecisionPass(mixed));
  }
  if (replica) {
    DistSyncBatchNormPassOptions sync;
    sync.device = replica->device;
    pm.addPass(createDistSyncBatchNormPass(sync));
  }
  pm.addPass(createDifferentiatePass());
  if (replica && replica->pipeline) {
    DistPipelineSchedulePassOptions schedule;
    schedule.device = replica->device;
    // A stage recomputes where the plan says (--recompute sets it on every
    // stage), per microbatch, in the schedule.
    pm.addPass(createDistPipelineSchedulePass(schedule));
  }
  if (replica) {
    DistReduceGradientsPassOptions reduce;
    reduce.device = replica->device;
    reduce.bucketMiB = bucketMiB;
    pm.addPass(createDistReduceGradientsPass(reduce));
  }
  TrainOptimizerPassOptions opt = optimizerOptions();
  // A pipeline's step runs every microbatch itself.
  opt.accumulate = !replica            ? gradAccumulation.getValue()
                   : replica->pipeline ? 1
                                       : replica->microbatches;
  pm.addPass(createTrainOptimizerPass(opt));
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  // Last: CSE would merge the clones back into the forward originals
  // (nothing in code generation merges equal ops).
  bool pipeline = replica && replica->pipeline;
  if (!pipeline && (recompute || (replica && replica->recompute)))
    pm.addPass(hetpar::createTrainRecomputePass());
}

std::string hetpar::tools::trainingManifest(
    ModuleOp module, codegen::FloatMode dtype, std::optional<int64_t> batchSize,
    int64_t microbatches, int64_t callMicrobatches, bool planRecomputes) {
  auto func = hetpar::train::stepFunction(module);
  // A program without inputs (every operand an initializer) counts one
  // sample of nothing per step: each step just runs.
  int64_t batch = 1, tokens = 0;
  if (succeeded(func) && func->getNumArguments()) {
    auto t = llvm::cast<RankedTensorType>(func->getArgument(0).getType());
    batch = t.getRank() ? t.getDimSize(0) : 1;
    for (BlockArgument a : func->getArguments()) {
      auto at = llvm::cast<RankedTensorType>(a.getType());
      if (llvm::isa<IntegerType>(at.getElementType()) && at.getRank() >= 2) {
        tokens = 1;
        for (int64_t d : at.getShape().drop_front())
          tokens *= d;
        break;
      }
    }
  }
  double wd = weightDecay >= 0 ? weightDecay.getValue()
                               : (optimizer == "adamw" ? 0.01 : 0.0);
  llvm::json::Object opt{
      {"kind", optimizer.getValue()},
      {"lr", lr.getValue()},
      {"betas", llvm::json::Array{beta1.getValue(), beta2.getValue()}},
      {"eps", eps.getValue()},
      {"weight_decay", wd},
      {"momentum", momentum.getValue()},
      {"nesterov", nesterov.getValue()},
      {"clip_grad_norm", clipGradNorm.getValue()},
      {"schedule", llvm::json::Object{{"kind", schedule.getValue()},
                                      {"warmup_steps", warmupSteps.getValue()},
                                      {"total_steps", totalSteps.getValue()},
                                      {"min_lr", minLr.getValue()}}}};
  llvm::json::Object training{
      {"loss", loss.getValue()},
      {"labels", loss == "output" ? llvm::json::Value(nullptr)
                                  : llvm::json::Value(labels.getValue())},
      {"batch_size", batchSize.value_or(batch)},
      {"microbatches",
       microbatches > 0 ? microbatches : gradAccumulation.getValue()},
      {"call_microbatches", callMicrobatches},
      {"dtype", codegen::floatModeName(dtype)},
      {"loss_scaling", dtype == codegen::FloatMode::F16 ? "dynamic" : "none"},
      {"tokens_per_sample", tokens},
      {"seed", seed.getValue()},
      {"recompute", recompute || planRecomputes},
      {"optimizer", std::move(opt)},
      {"model", "model.onnx"}};
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0}", llvm::json::Value(std::move(training)));
  return text;
}

FailureOr<int64_t>
hetpar::tools::replicaMicrobatches(ModuleOp planned, int64_t planMicrobatches) {
  if (gradAccumulation.getNumOccurrences() &&
      gradAccumulation != planMicrobatches)
    return planned.emitError()
           << "--grad-accumulation-steps " << gradAccumulation.getValue()
           << " but the plan runs " << planMicrobatches
           << " microbatch(es) per step. On a cluster, a step is the batch "
              "of --input-shape cut into the plan's microbatches (the "
              "accumulation steps): write a plan with \"microbatches\": "
           << gradAccumulation.getValue()
           << " (docs/plan-format.md) and give the batch of a whole step; "
              "the data_parallel baseline and the search run one microbatch";
  return planMicrobatches;
}

std::vector<std::string> hetpar::tools::trainableInitializers(ModuleOp module) {
  std::vector<std::string> names;
  module.walk([&](hetpar::onnx::ConstantOp c) {
    auto name =
        c->getAttrOfType<StringAttr>(hetpar::onnx::kInitializerAttrName);
    if (name && !c->use_empty() &&
        llvm::isa<FloatType>(c.getType().getElementType()))
      names.push_back(name.str());
  });
  return names;
}

/// Every initializer in `trained` is a global or still a named constant
/// (frozen) of `steps` (of each of them with `each`, of one at least
/// otherwise: a pipeline's stages hold different ones): none was folded into
/// an unnamed constant on the way.
static LogicalResult
checkTrained(llvm::MutableArrayRef<OwningOpRef<ModuleOp>> steps,
             llvm::ArrayRef<std::string> trained, bool each) {
  llvm::StringMap<int> found;
  for (OwningOpRef<ModuleOp> &step : steps) {
    llvm::StringSet<> mine;
    for (auto g : step->getOps<ml_program::GlobalOp>())
      mine.insert(g.getSymName());
    step->walk([&](hetpar::onnx::ConstantOp c) {
      if (auto name =
              c->getAttrOfType<StringAttr>(hetpar::onnx::kInitializerAttrName))
        mine.insert(name.getValue());
    });
    for (const auto &name : mine)
      ++found[name.getKey()];
  }
  int want = each ? static_cast<int>(steps.size()) : 1;
  for (const std::string &name : trained)
    if (found.lookup(name) < want)
      return steps.front()->emitError()
             << "initializer '" << name
             << "' was folded into another constant before its training step "
                "was built, so it would not be trained (a compiler bug: "
                "please report it with the model)";
  return success();
}

/// The initializer name of `op`, an onnx.Constant; null for anything else.
static StringAttr initializerName(Operation *op) {
  return op ? op->getAttrOfType<StringAttr>(hetpar::onnx::kInitializerAttrName)
            : StringAttr();
}

/// Device `id`'s function of the partitioned `planned`, alone in a clone
/// with the mesh and the plan.
static OwningOpRef<ModuleOp> deviceModule(ModuleOp planned, int64_t id) {
  OwningOpRef<ModuleOp> step = planned.clone();
  for (auto f : llvm::make_early_inc_range(step->getOps<func::FuncOp>())) {
    auto dev = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    if (!dev || dev.getInt() != id)
      f.erase();
  }
  step.get()->removeAttr("dist.microbatches");
  return step;
}

/// The parameters several stages of the partitioned `planned` read, each with
/// the devices of those stages in mesh order (train::kSharedParamsAttr):
/// the initializers of each device's function, by name.
static std::map<std::string, std::vector<int64_t>>
sharedParameters(ModuleOp planned, const hetpar::PlanAnnotation &plan) {
  std::map<std::string, std::set<int>> stagesOf;
  for (auto f : planned.getOps<func::FuncOp>()) {
    auto dev = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    if (!dev)
      continue;
    int s = plan.stageOf(dev.getInt());
    f.walk([&](hetpar::onnx::ConstantOp c) {
      StringAttr name = initializerName(c);
      if (name && !c->use_empty() &&
          llvm::isa<FloatType>(c.getType().getElementType()))
        stagesOf[name.str()].insert(s);
    });
  }
  std::map<std::string, std::vector<int64_t>> shared;
  for (auto &[name, stages] : stagesOf) {
    if (stages.size() < 2)
      continue;
    for (int s : stages)
      llvm::append_range(shared[name], plan.stages[s].devices);
  }
  return shared;
}

/// Fails (with an error at the node) when a running statistic of a
/// training-mode BatchNormalization (a buffer, docs/training.md) is read on
/// two stages of the partitioned `planned`: each stage would keep and update
/// its own copy, which then hold different values. One device refuses two
/// nodes that update one buffer the same way (hetpar-train-lift-params).
static LogicalResult
checkBuffersOnOneStage(ModuleOp planned, const hetpar::PlanAnnotation &plan) {
  // Each buffer's writing node and its stage.
  std::map<std::string, std::pair<Operation *, int>> writers;
  for (auto f : planned.getOps<func::FuncOp>()) {
    auto dev = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    if (!dev)
      continue;
    f.walk([&](hetpar::onnx::BatchNormalizationOp bn) {
      if (bn.getTrainingMode() == 0)
        return;
      for (Value stat : {bn.getInputMean(), bn.getInputVar()})
        if (auto name = initializerName(stat.getDefiningOp()))
          writers.try_emplace(name.str(), bn, plan.stageOf(dev.getInt()));
    });
  }
  for (auto f : planned.getOps<func::FuncOp>()) {
    auto dev = f->getAttrOfType<IntegerAttr>(hetpar::dist::kDeviceAttrName);
    if (!dev)
      continue;
    int s = plan.stageOf(dev.getInt());
    WalkResult walk = f.walk([&](hetpar::onnx::ConstantOp c) {
      StringAttr name = initializerName(c);
      auto it = name ? writers.find(name.str()) : writers.end();
      if (it == writers.end() || it->second.second == s || c->use_empty())
        return WalkResult::advance();
      Operation *reader = *c->getUsers().begin();
      reader->emitError()
          << "initializer '" << name.getValue()
          << "', a running statistic that "
          << hetpar::onnx::describeNode(it->second.first) << " on stage "
          << it->second.second << " updates, is also read by "
          << hetpar::onnx::describeNode(reader) << " on stage " << s
          << ": a training program keeps one copy of it, so put these nodes "
             "on one stage";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}

/// The entries of `shared` that device `id` takes part in, as the module
/// attribute train::kSharedParamsAttr.
static void markSharedParameters(
    ModuleOp step, int64_t id,
    const std::map<std::string, std::vector<int64_t>> &shared) {
  Builder b(step.getContext());
  SmallVector<NamedAttribute> entries;
  for (auto &[name, devices] : shared)
    if (llvm::is_contained(devices, id))
      entries.push_back(b.getNamedAttr(name, b.getDenseI64ArrayAttr(devices)));
  if (!entries.empty())
    step->setAttr(hetpar::train::kSharedParamsAttr,
                  b.getDictionaryAttr(entries));
}

/// A --freeze that names no float initializer of the whole model (the
/// names `trained`) is an error, as hetpar-train-lift-params reports it on
/// one device.
static LogicalResult checkFreezeNamesSome(ModuleOp planned,
                                          llvm::ArrayRef<std::string> trained) {
  if (freeze.empty())
    return success();
  llvm::Expected<llvm::Regex> re = hetpar::train::freezeRegex(freeze);
  if (!re)
    return planned.emitError() << llvm::toString(re.takeError());
  if (llvm::none_of(trained,
                    [&](const std::string &n) { return re->match(n); }))
    return planned.emitError() << hetpar::train::freezeMatchesNothing(freeze);
  return success();
}

FailureOr<hetpar::tools::ReplicaSteps>
hetpar::tools::buildReplicaSteps(ModuleOp planned, codegen::FloatMode dtype,
                                 llvm::ArrayRef<std::string> trained) {
  Attribute planAttr = planned->getAttr(dist::kPlanAttrName);
  FailureOr<PlanAnnotation> plan = readPlanAnnotation(planned, std::nullopt);
  if (failed(plan))
    return failure();
  if (std::string why = plan->trainingProblem(dtype != codegen::FloatMode::F32);
      !why.empty())
    return planned.emitError() << why << "; evaluate it with --plan-only";
  bool pipeline = plan->stages.size() > 1;
  // A pipeline runs its microbatches in its schedule; one stage runs them
  // as accumulation steps. --grad-accumulation-steps must not contradict
  // either.
  FailureOr<int64_t> microbatches =
      replicaMicrobatches(planned, plan->microbatches);
  if (failed(microbatches))
    return failure();
  if (pipeline && failed(checkFreezeNamesSome(planned, trained)))
    return failure();
  // The forward graph of each device: its rows in, the last stage's outputs
  // out, transfers between the stages.
  PassManager partition(planned.getContext());
  PartitionPipelineOptions local;
  local.localIo = true;
  buildGlobalFormPipeline(partition);
  buildPartitionPipeline(partition, local);
  if (failed(applyPassManagerCLOptions(partition)) ||
      failed(partition.run(planned)))
    return failure();
  std::map<std::string, std::vector<int64_t>> shared;
  if (pipeline && failed(checkBuffersOnOneStage(planned, *plan)))
    return failure();
  if (pipeline)
    shared = sharedParameters(planned, *plan);
  // A training-mode Dropout draws the masks of the replica's own elements
  // (its element_offset differs per replica), so such a step is never
  // shared.
  bool drawsMasks = false;
  planned.walk([&](hetpar::onnx::DropoutOp d) { drawsMasks = true; });
  ReplicaSteps out;
  llvm::DenseMap<int64_t, size_t> byRows;
  for (auto [s, stage] : llvm::enumerate(plan->stages)) {
    bool last = s + 1 == plan->stages.size();
    for (auto [r, id] : llvm::enumerate(stage.devices)) {
      // Replicas of one stage with equal rows share a step, unless
      // transfers to other stages, ZeRO-1 shards of the optimizer state
      // (each replica updates its own), tensor parallelism (each device
      // holds its own shards and groups) or Dropout masks (each replica
      // draws its own elements') make each device's its own.
      if (!pipeline && stage.zeroShares.empty() && stage.tensor == 1 &&
          !drawsMasks) {
        auto [it, fresh] =
            byRows.try_emplace(stage.rows[r], out.modules.size());
        out.moduleOf.push_back(it->second);
        if (!fresh)
          continue;
      } else {
        out.moduleOf.push_back(out.modules.size());
      }
      OwningOpRef<ModuleOp> step = deviceModule(planned, id);
      step.get()->setAttr(dist::kPlanAttrName, planAttr);
      markSharedParameters(*step, id, shared);
      PassManager pm(planned.getContext());
      buildTrainingPipeline(
          pm, dtype,
          [](OpPassManager &p) {
            hetpar::buildToStaticPipeline(p, hetpar::ToStaticPipelineOptions());
          },
          ReplicaStep{id, *microbatches, pipeline, last, stage.recompute});
      if (failed(applyPassManagerCLOptions(pm)) || failed(pm.run(*step)))
        return failure();
      out.modules.push_back(std::move(step));
    }
  }
  // A pipeline's initializers are spread over its stages: each must be in
  // some step.
  if (failed(checkTrained(out.modules, trained, /*each=*/!pipeline)))
    return failure();
  return out;
}
