//===- Train.cpp - hetpar-run --train: the step loop ----------------------===//
#include "Train.h"
#include "Export.h"
#include "Trace.h"
#include "TrainLog.h"

#include "hetpar/runtime/Training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace hetpar::run {

using namespace hetpar::rt;

namespace {

int fail(const std::string &message) { return reportError(message); }

/// Whether this process reports (progress, loss log, checkpoints, export):
/// the only device, or the output device of a data-parallel program, whose
/// replicas all hold the same loss and weights after every step.
bool reports(const Program &program) {
  return program.numDevices() == 1 ||
         program.deviceId() == program.outputDevice();
}

/// Whether this process writes checkpoints: the reporter, and in a pipeline
/// the first device of every other stage (each stage's replicas hold the
/// same weights, its own); with ZeRO-1 or tensor parallelism, every device.
bool writesCheckpoints(const Program &program) {
  if (holdsShards(program))
    return true; // each device its own shard of the optimizer state
  int64_t stage = pipelineStageOf(program);
  if (stage < 0)
    return reports(program);
  for (const DeviceInfo &d : program.devices())
    if (d.stage == stage)
      return d.id == program.deviceId();
  return false;
}

/// Refuses, before training, what the plan of `program` cannot do with
/// `opts`; sets `joins` when --export-onnx joins the devices' checkpoints
/// (exportJoinsCheckpoint), which the launcher does after the devices end.
Status checkPlanOptions(Program &program, const TrainOptions &opts,
                        bool &joins) {
  joins = false;
  const auto &weights = program.weightTensors();
  bool spread =
      pipelineStageOf(program) >= 0 ||
      std::any_of(weights.begin(), weights.end(),
                  [](const WeightTensor &w) { return w.tensorDim >= 0; });
  if (spread && !opts.evalData.empty())
    return Status::error(
        "--eval-data: the evaluation step of a pipeline or tensor-parallel "
        "plan is not generated yet (each device holds only its stage's "
        "parameters or its shards of them)");
  if (opts.exportOnnx.empty())
    return Status::ok();
  // A typo is refused before training, not after it.
  if (Status s = checkOutputFolder("--export-onnx", opts.exportOnnx); !s.isOk())
    return s;
  ProgramWeights all;
  Status s = readProgramWeights(program.outDir(), all);
  if (!s.isOk())
    return s;
  joins = exportJoinsCheckpoint(all);
  std::string why = "--export-onnx: this plan's parameters are spread over "
                    "its devices (pipeline stages or tensor-parallel shards), "
                    "and the export joins their checkpoint files: ";
  if (joins && opts.checkpointDir.empty())
    return Status::error(why + "add --checkpoint DIR");
  if (joins && !std::getenv(kLauncherExports))
    return Status::error(why + "under your own launcher, export after the job "
                               "with hetpar-run OUT --export-onnx FILE "
                               "--resume DIR");
  return Status::ok();
}

/// Loads the program and checks it is a training program for `opts`.
Status loadTraining(const std::string &outDir, const std::string &backend,
                    const TrainOptions &opts, std::unique_ptr<Program> &out) {
  Status s = Program::load(outDir, backend, out);
  if (!s.isOk())
    return s;
  const TrainingInfo &t = out->training();
  if (!t.present)
    return Status::error(outDir +
                         "/manifest.json has no 'training' object: not a "
                         "training program (compile it with hetpar-compile "
                         "--mode training)");

  int64_t perStep = t.batchSize * t.microbatches;
  if (opts.batchSize > 0 && opts.batchSize != perStep)
    return Status::error(
        "--batch-size " + std::to_string(opts.batchSize) +
        ": the program was compiled for batch size " + std::to_string(perStep) +
        (t.microbatches > 1
             ? " (" + std::to_string(t.microbatches) + " microbatches of " +
                   std::to_string(t.batchSize) + ")"
             : std::string()) +
        " (recompile it with --input-shape for another batch)");
  return Status::ok();
}

/// The global step to start from: the checkpoint's with --resume, else the
/// program's own step counter (0 in a fresh weights.bin). `resumed`: what the
/// reporting process says of the resume ("" when none). It is said only once
/// the first step has run: every device of the job has loaded its part by
/// then, and another device's load error ends the job before it.
Status startStep(Program &program, const TrainOptions &opts, int64_t &step,
                 std::string &resumed) {
  if (opts.resumeDir.empty())
    return readStepCounter(program, step);
  CheckpointSource source;
  Status s = loadCheckpoint(program, opts.resumeDir, step, &source);
  if (!s.isOk() || !reports(program))
    return s;
  std::ostringstream line;
  if (!source.resliced) {
    line << "resumed from " << source.files[0] << " at step " << step << "\n";
  } else {
    line << "resumed from " << opts.resumeDir << " at step " << step
         << ", resliced for this plan from";
    for (const std::string &f : source.files)
      line << " " << std::filesystem::path(f).filename().string();
    line << "\n";
  }
  resumed = line.str();
  return s;
}

Status checkpoint(Program &program, const TrainOptions &opts, int64_t step) {
  Status s = saveCheckpoint(program, opts.checkpointDir, step);
  if (s.isOk())
    std::cout << "wrote " << checkpointPath(program, opts.checkpointDir)
              << " (step " << step << ")\n";
  return s;
}

/// Why training must stop after step `r` ("" to go on): a non-finite loss
/// in float32 or bfloat16; under dynamic loss scaling (float16), where an
/// overflow skips the step, a loss scale that fell below 1 (DeepSpeed's
/// min_loss_scale: the gradients overflow at any scale).
std::string stopReason(const TrainingInfo &info, const StepReport &r) {
  if (info.dynamicLossScale)
    return r.lossScale < 1.0f
               ? "the loss scale fell below 1 after repeated gradient "
                 "overflows (loss " +
                     std::to_string(r.loss) + ")"
               : "";
  if (std::isfinite(r.loss))
    return "";
  return std::string("loss is ") + (std::isnan(r.loss) ? "NaN" : "infinite");
}

/// The evaluation of --eval-data: the program's evaluation step bound to
/// the training step's weights, and the held-out data.
struct Evaluation {
  std::unique_ptr<Program> program;
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Evaluator> evaluator;
};

/// Loads the evaluation step of `step`'s folder on its backend and opens
/// opts.evalData for it.
Status openEvaluation(Program &step, const TrainOptions &opts, Evaluation &e) {
  Status s = Program::load(step.outDir(), step.backend(), e.program,
                           ProgramPart::Eval);
  if (s.isOk())
    s = Evaluator::create(step, *e.program, e.evaluator);
  if (!s.isOk())
    return s;
  DatasetOptions dataOpts;
  dataOpts.batchSize = step.training().batchSize;
  return Dataset::open(opts.evalData, e.evaluator->dataInputs(), dataOpts,
                       e.data);
}

/// Evaluates after global step `step`: stdout and the loss log.
Status evaluateAt(Evaluation &e, int64_t step, LossLog &log) {
  Evaluator::Result r;
  Status s = e.evaluator->evaluate(*e.data, r);
  if (!s.isOk())
    return s;
  std::cout << "eval after step " << step << ": loss " << r.loss << " ("
            << r.samples << " samples";
  if (r.left)
    std::cout << "; the last " << r.left
              << (r.left == 1 ? " does not fill a batch and was left out"
                              : " do not fill a batch and were left out");
  std::cout << ")\n";
  return log.writeEval(step, r.loss, r.samples);
}

/// The loop: opts.steps steps from global step `first`, evaluating with
/// `eval` (null: no --eval-data).
int trainLoop(Program &program, Trainer &trainer, const TrainOptions &opts,
              int64_t first, Evaluation *eval, const std::string &resumed) {
  bool reporter = reports(program);
  Progress progress(reporter && ::isatty(STDERR_FILENO));
  LossLog log;
  if (reporter && !opts.lossLog.empty()) {
    Status s = log.open(opts.lossLog, !opts.resumeDir.empty());
    if (!s.isOk())
      return fail(s.message());
  }
  // A first evaluation before any step: the held-out loss to start from,
  // and bad evaluation data (a label out of range) stops the run before it
  // trains rather than after.
  if (eval) {
    Status s = evaluateAt(*eval, first, log);
    if (!s.isOk())
      return fail(s.message());
  }
  using Clock = std::chrono::steady_clock;
  const TrainingInfo &info = program.training();
  Clock::time_point begin = Clock::now();
  StepReport r;
  r.total = opts.steps;
  for (int64_t i = 0; i < opts.steps; ++i) {
    Clock::time_point t0 = Clock::now();
    Trainer::StepResult result;
    Status s = trainer.step(uint64_t(first + i), result);
    if (!s.isOk()) {
      progress.finish();
      // Another device's failure: that device names it, and the reporting
      // device says which device it was; the others stop quietly.
      return s.isPeerFailure() && !reporter ? stopQuietly() : fail(s.message());
    }
    if (i == 0)
      std::cout << resumed; // every device has loaded its part
    r.loss = result.loss;
    r.lossScale = result.lossScale;
    r.skipped = result.skipped;
    r.step = first + i + 1;
    r.index = i + 1;
    double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    r.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    r.samplesPerS =
        dt > 0 ? double(info.batchSize * info.microbatches) / dt : 0;
    r.tokensPerS = r.samplesPerS * double(info.tokensPerSample);
    if (std::string why = stopReason(info, r); !why.empty()) {
      progress.finish();
      // Every device holds the same loss: the reporting device says it.
      if (!reporter)
        return stopQuietly();
      return fail("step " + std::to_string(r.step) + ": " + why +
                  " (training stopped; no checkpoint was written for this "
                  "step)");
    }
    bool last = i + 1 == opts.steps;
    bool every = opts.checkpointEvery > 0 && r.step % opts.checkpointEvery == 0;
    bool save = !opts.checkpointDir.empty() && (last || every);
    if (!reporter) {
      if (save && writesCheckpoints(program) &&
          !(s = checkpoint(program, opts, r.step)).isOk())
        return fail(s.message());
      continue;
    }
    progress.update(r);
    if (!(s = log.write(r)).isOk()) {
      progress.finish();
      return fail(s.message());
    }
    if (save) {
      progress.finish();
      if (!(s = checkpoint(program, opts, r.step)).isOk())
        return fail(s.message());
    }
    // After the checkpoint: an evaluation that fails loses no training.
    if (eval &&
        (last || (opts.evalEvery > 0 && r.step % opts.evalEvery == 0))) {
      progress.finish();
      if (!(s = evaluateAt(*eval, r.step, log)).isOk())
        return fail(s.message());
    }
  }
  progress.finish();
  if (!reporter)
    return 0;
  std::cout << "trained " << opts.steps << " step"
            << (opts.steps == 1 ? "" : "s") << " (global steps " << first + 1
            << ".." << first + opts.steps << "), last loss " << r.loss << "\n";
  return 0;
}

} // namespace

int reportError(const std::string &message) {
  // One write, so that the lines of several processes on one terminal do
  // not interleave.
  std::cerr << ("hetpar-run: error: " + message + "\n") << std::flush;
  return 1;
}

int stopQuietly() {
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return 1;
}

int runTraining(const std::string &outDir, const std::string &backend,
                const TrainOptions &opts) {
  std::unique_ptr<Program> program;
  Status s = loadTraining(outDir, backend, opts, program);
  if (!s.isOk())
    return fail(s.message());
  DatasetOptions dataOpts;
  dataOpts.batchSize = program->training().batchSize;
  dataOpts.rowOffset = program->training().batchOffset;
  dataOpts.rows = program->training().batchRows;
  dataOpts.chunks = program->training().callMicrobatches;
  dataOpts.shuffle = opts.shuffle;
  dataOpts.seed = opts.seed;
  dataOpts.graphInputs = program->graphInputs();
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Trainer> trainer;
  bool joins = false;
  if (s.isOk())
    s = checkPlanOptions(*program, opts, joins);
  if (s.isOk())
    s = Dataset::open(opts.dataDir, program->inputs(), dataOpts, data);
  if (s.isOk())
    s = Trainer::create(*program, *data, trainer);
  if (s.isOk() && !opts.traceFile.empty()) {
    removeStaleTracePart(opts.traceFile, *program);
    s = trainer->enableTrace();
  }
  // The evaluation step (the whole batch on one device) runs in the
  // reporting process only; the replicas' weights are its weights.
  Evaluation eval;
  bool evaluates = !opts.evalData.empty() && reports(*program);
  if (s.isOk() && evaluates)
    s = openEvaluation(*program, opts, eval);
  int64_t first = 0;
  bool ownFile = false;
  std::string resumed;
  if (s.isOk()) {
    s = startStep(*program, opts, first, resumed);
    // Shards (ZeRO, tensor parallelism) and pipeline stages: each device
    // resumes its own tensors, from files the reporting process may not
    // read (resliced from another plan's files, one may be missing for
    // this device only).
    ownFile =
        !s.isOk() && (holdsShards(*program) || pipelineStageOf(*program) >= 0);
  }
  // The data, the checkpoint to resume and the trainer's checks are every
  // process's alike (the same files): the reporting process says what is
  // wrong once and fails the job; the others end quietly with status 0 (a
  // non-zero status would make mpirun end the reporter before it printed).
  // A device's own checkpoint is its to report.
  if (ownFile && !reports(*program))
    return fail("device " + std::to_string(program->deviceId()) + ": " +
                s.message());
  if (!s.isOk())
    return reports(*program) ? fail(s.message()) : 0;
  const TrainingInfo &info = program->training();
  if (reports(*program)) {
    std::cout << "hetpar-run: training on " << program->backend() << " in "
              << info.dtype << ", " << data->samples() << " samples, batch "
              << info.batchSize * info.microbatches;
    if (info.microbatches > 1)
      std::cout << " (" << info.microbatches << " microbatches of "
                << info.batchSize << ")";
    if (pipelineStageOf(*program) >= 0) {
      int64_t stages = 0;
      for (const DeviceInfo &d : program->devices())
        stages = std::max(stages, d.stage + 1);
      std::cout << " (" << info.callMicrobatches << " microbatches of "
                << info.batchSize / info.callMicrobatches << ") over "
                << program->numDevices() << " devices in " << stages
                << " pipeline stages";
    } else if (program->numDevices() > 1) {
      const auto &weights = program->weightTensors();
      bool shards =
          std::any_of(weights.begin(), weights.end(),
                      [](const WeightTensor &w) { return w.tensorDim >= 0; });
      std::cout << " over " << program->numDevices()
                << (shards ? " devices with tensor-parallel shards"
                           : " data-parallel devices");
    }
    std::cout << ", " << opts.steps << (opts.steps == 1 ? " step" : " steps")
              << " from step " << first << "\n";
  }
  int rc = trainLoop(*program, *trainer, opts, first,
                     evaluates ? &eval : nullptr, resumed);
  if (rc == 0 && !opts.traceFile.empty()) {
    s = writeTrace(opts.traceFile, *program,
                   trainingEvents(*program, trainer->lastStepTrace()),
                   /*summary=*/true);
    if (!s.isOk())
      return fail(s.message());
  }
  // A joined export is the launcher's, after every device has written.
  if (rc != 0 || opts.exportOnnx.empty() || joins || !reports(*program))
    return rc;
  s = exportONNX(*program, opts.exportOnnx);
  if (!s.isOk())
    return fail(s.message());
  std::cout << "wrote " << opts.exportOnnx << "\n";
  return 0;
}

} // namespace hetpar::run
