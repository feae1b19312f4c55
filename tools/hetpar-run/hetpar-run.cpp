//===- hetpar-run.cpp - Run a program compiled by hetpar-compile ----------===//
//
// hetpar-run OUT [--backend cpu|cuda|auto] [--inputs a.npy,b.npy]
//                [--outputs DIR] [--repeat N]
//
// Loads the output folder of hetpar-compile, runs it on .npy inputs (graph
// input order), optionally writes DIR/output_<i>.npy (graph output order) and
// prints the latency. Links the runtime only (no MLIR, no LLVM, no CUDA).
//
//===----------------------------------------------------------------------===//
#include "Export.h"
#include "Launch.h"
#include "Trace.h"
#include "Train.h"

#include "hetpar/runtime/Runtime.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace hetpar::rt;

namespace {

const char *kSynopsis =
    "usage: hetpar-run OUT [--backend cpu|cuda|auto] [--inputs a.npy,b.npy]\n"
    "                  [--outputs DIR] [--repeat N]\n"
    "                  [--check REF_DIR [--rtol R] [--atol A]] [--trace "
    "FILE]\n"
    "       hetpar-run OUT --train --data DIR --steps N [--batch-size B]\n"
    "                  [--shuffle [--seed S]] [--checkpoint DIR "
    "[--checkpoint-every K]]\n"
    "                  [--resume DIR] [--loss-log FILE] [--export-onnx "
    "FILE.onnx]\n"
    "                  [--eval-data DIR [--eval-every K]]\n"
    "       hetpar-run OUT --export-onnx FILE.onnx --resume DIR\n";
const char *kHelp =
    "\n"
    "Runs the program that hetpar-compile wrote to the folder OUT.\n"
    "\n"
    "  --backend B   cpu, cuda, or auto (default: cuda when the program has a\n"
    "                CUDA library and a GPU is usable, else cpu)\n"
    "  --inputs L    comma-separated NumPy .npy files, one per graph input, "
    "in\n"
    "                graph input order\n"
    "  --outputs DIR write DIR/output_0.npy, DIR/output_1.npy, ... in graph\n"
    "                output order (DIR is created if needed)\n"
    "  --repeat N    run N times after one warm-up run and print the median,\n"
    "                min and max latency (default 1: one run, no warm-up)\n"
    "  --check DIR   compare output i with DIR/output_<i>.npy: floats within\n"
    "                atol + rtol * |reference| (NaN equals NaN), integers and\n"
    "                bools exactly; exit status 1 on a mismatch\n"
    "  --rtol R      relative tolerance of --check (default 1e-4)\n"
    "  --atol A      absolute tolerance of --check (default 1e-5)\n"
    "  --trace FILE  write the measured timeline of the last step as a\n"
    "                Chrome trace, the format of hetpar-compile's predicted\n"
    "                trace.json: each device's run per microbatch; with\n"
    "                --train its forward, backward, optimizer, collectives\n"
    "                and transfers, and a per-device summary\n"
    "\n"
    "Training (a program compiled with --mode training; docs/training.md):\n"
    "  --train       run optimizer steps: each step copies the next batch "
    "into\n"
    "                the inputs and runs the program once\n"
    "  --data DIR    DIR/<input>.npy for every program input (graph inputs,\n"
    "                then the labels), each with a leading sample axis\n"
    "  --steps N     the number of steps this invocation runs (a resumed run\n"
    "                continues from the checkpoint's step)\n"
    "  --batch-size B  must equal the batch the program was compiled for\n"
    "  --shuffle     permute the samples anew each epoch (--seed S, default "
    "0)\n"
    "  --checkpoint DIR  write DIR/checkpoint.safetensors after the last step\n"
    "  --checkpoint-every K  also after every global step divisible by K\n"
    "  --resume DIR  start from the checkpoint in DIR (written by this plan,\n"
    "                or by another plan of the model: resliced)\n"
    "  --loss-log FILE  append one JSON line per step (step, loss, seconds,\n"
    "                samples_per_s)\n"
    "  --export-onnx FILE.onnx  write the trained model (initializers of 1 "
    "MiB\n"
    "                or more in FILE.onnx.data); without --train, with\n"
    "                --resume DIR: export the checkpoint in DIR\n"
    "  --eval-data DIR  after the last step, the mean loss on DIR (the files\n"
    "                of --data) in evaluation mode: running statistics, no\n"
    "                Dropout, no update\n"
    "  --eval-every K  also after every global step divisible by K\n"
    "  --help        print this help\n";

struct Options {
  std::string outDir;
  std::string backend = "auto";
  std::vector<std::string> inputs;
  bool haveInputs = false;
  std::string outputsDir;
  long repeat = 1;
  std::string checkDir;
  std::string traceFile;
  double rtol = 1e-4, atol = 1e-5;
  hetpar::run::TrainOptions train;
};

int usageError(const std::string &message) {
  std::cerr << "hetpar-run: error: " << message << "\n"
            << kSynopsis << "run 'hetpar-run --help' for the options\n";
  return 2;
}

int error(const std::string &message) {
  return hetpar::run::reportError(message);
}

std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> items;
  if (list.empty())
    return items;
  size_t start = 0;
  for (;;) {
    size_t comma = list.find(',', start);
    items.push_back(list.substr(start, comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return items;
}

/// Parses argv; returns -1 to go on, else the exit code.
int parseArgs(int argc, char **argv, Options &opts) {
  bool haveOut = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kSynopsis << kHelp;
      return 0;
    }
    if (arg == "--train" || arg == "--shuffle") {
      (arg == "--train" ? opts.train.enabled : opts.train.shuffle) = true;
      continue;
    }
    std::string name = arg, value;
    bool hasValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
      hetpar::run::TrainOptions probe;
      bool isTrain =
          hetpar::run::parseTrainOption(name, "1", probe) != "unknown";
      if (name != "--backend" && name != "--inputs" && name != "--outputs" &&
          name != "--repeat" && name != "--check" && name != "--rtol" &&
          name != "--atol" && name != "--trace" && !isTrain)
        return usageError("unknown option '" + name + "'");
      if (!hasValue) {
        if (i + 1 >= argc)
          return usageError(name + " needs a value");
        value = argv[++i];
      }
      if (isTrain) {
        std::string err =
            hetpar::run::parseTrainOption(name, value, opts.train);
        if (!err.empty())
          return usageError(err);
      } else if (name == "--backend") {
        if (value != "cpu" && value != "cuda" && value != "auto")
          return usageError("--backend is cpu, cuda or auto, not '" + value +
                            "'");
        opts.backend = value;
      } else if (name == "--inputs") {
        opts.inputs = splitList(value);
        opts.haveInputs = true;
        for (const std::string &f : opts.inputs)
          if (f.empty())
            return usageError("--inputs '" + value +
                              "' has an empty file name");
      } else if (name == "--check") {
        if (value.empty())
          return usageError("--check needs a folder");
        opts.checkDir = value;
      } else if (name == "--rtol" || name == "--atol") {
        char *end = nullptr;
        double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end || !(v >= 0) || v > 1e30)
          return usageError(name + " needs a non-negative number, not '" +
                            value + "'");
        (name == "--rtol" ? opts.rtol : opts.atol) = v;
      } else if (name == "--trace") {
        if (value.empty())
          return usageError("--trace needs a file name");
        opts.traceFile = value;
      } else if (name == "--outputs") {
        if (value.empty())
          return usageError("--outputs needs a folder");
        opts.outputsDir = value;
      } else {
        char *end = nullptr;
        errno = 0;
        long n = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end || errno || n < 1 || n > 1000000000)
          return usageError("--repeat needs a positive integer, not '" + value +
                            "'");
        opts.repeat = n;
      }
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-')
      return usageError("unknown option '" + arg + "'");
    if (haveOut)
      return usageError("more than one program folder ('" + opts.outDir +
                        "' and '" + arg + "')");
    opts.outDir = arg;
    haveOut = true;
  }
  if (!haveOut)
    return usageError("no program folder given");
  std::string trainError = hetpar::run::checkTrainOptions(opts.train);
  if (!trainError.empty())
    return usageError(trainError);
  if (opts.train.enabled && (opts.haveInputs || !opts.outputsDir.empty() ||
                             !opts.checkDir.empty() || opts.repeat > 1))
    return usageError("--train takes its inputs from --data; --inputs, "
                      "--outputs, --check and --repeat do not apply");
  return -1;
}

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double v = double(bytes);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

std::string describeTensor(const TensorInfo &t) {
  return "'" + t.name + "' " + dtypeName(t.dtype) + " " + formatShape(t.shape);
}

/// "1.234 ms", or "12.34 us" below a millisecond.
std::string ms(double seconds) {
  char buf[64];
  if (seconds < 1e-3)
    std::snprintf(buf, sizeof(buf), "%.2f us", seconds * 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.3f ms", seconds * 1e3);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Writes `outputs` as DIR/output_0.npy, output_1.npy, ...: all of them to
/// temporary files first (.output_K.npy.new), renamed over the old ones only
/// when every one was written, so that a full or read-only file system
/// leaves the folder as it was. Errors name the file and the reason.
Status writeOutputs(const std::string &dir,
                    const std::vector<HostTensor> &outputs) {
  auto pathOf = [&](size_t i, bool staged) {
    std::string name = "output_" + std::to_string(i) + ".npy";
    return (std::filesystem::path(dir) / (staged ? "." + name + ".new" : name))
        .string();
  };
  auto discard = [&](size_t n) {
    for (size_t i = 0; i < n; ++i)
      std::remove(pathOf(i, true).c_str());
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    Status st = writeNpy(pathOf(i, true), outputs[i], pathOf(i, false));
    if (!st.isOk()) {
      discard(i);
      return st;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (std::rename(pathOf(i, true).c_str(), pathOf(i, false).c_str()) != 0) {
      std::string why = std::strerror(errno);
      discard(outputs.size());
      return Status::error("cannot write '" + pathOf(i, false) + "': " + why);
    }
  return Status::ok();
}

int runTool(const Options &opts) {
  if (const char *v = std::getenv("HETPAR_COLLECTIVE_TIMEOUT")) {
    char *end = nullptr;
    double t = std::strtod(v, &end);
    if (!*v || *end || !(t > 0) || t > 1e9)
      return error(std::string("HETPAR_COLLECTIVE_TIMEOUT is '") + v +
                   "'; give a positive number of seconds");
  }
  std::unique_ptr<Program> program;
  Status st = Program::load(opts.outDir, opts.backend, program);
  if (!st.isOk())
    return error(st.message());

  // A part left by an earlier --trace run must not be taken for this one's
  // (every device takes part in a step before the output device ends it).
  if (!opts.traceFile.empty())
    hetpar::run::removeStaleTracePart(opts.traceFile, *program);
  // A partitioned program: one device returns the graph's outputs and alone
  // reports, writes and checks them; the others only run.
  bool partitioned = program->outputDevice() >= 0;
  bool quiet = partitioned && program->deviceId() != program->outputDevice();
  if (quiet)
    std::cout.setstate(std::ios::badbit);
  std::cout << "hetpar-run: backend " << program->backend();
  if (!program->fallbackReason().empty())
    std::cout << " (CUDA unavailable: " << program->fallbackReason() << ")";
  std::cout << ", " << program->numDevices() << " device"
            << (program->numDevices() == 1 ? "" : "s") << ", arena "
            << formatBytes(program->arenaBytes()) << ", weights "
            << formatBytes(program->weightsBytes()) << "\n";

  // A step: the whole batch of every graph input, run as `microbatches`
  // runs of the program, each taking the inputs its stage reads.
  const std::vector<TensorInfo> &graphInfos = program->graphInputs();
  if (!opts.haveInputs && !graphInfos.empty()) {
    std::string list;
    for (size_t i = 0; i < graphInfos.size(); ++i)
      list += (i ? ", " : "") + describeTensor(graphInfos[i]);
    // Every rank finds it; the output device alone reports it.
    return quiet
               ? 0
               : error(
                     graphInfos.size() == 1
                         ? "the model has 1 input; give it with --inputs "
                           "x.npy: " +
                               list
                         : "the model has " +
                               std::to_string(graphInfos.size()) +
                               " inputs; give them in this order with --inputs "
                               "a.npy,b.npy,...: " +
                               list);
  }
  std::vector<HostTensor> inputs(opts.inputs.size());
  for (size_t i = 0; i < opts.inputs.size(); ++i) {
    st = readNpy(opts.inputs[i], inputs[i]);
    if (!st.isOk())
      return quiet ? 0 : error(st.message()); // see checkStepInputs below
  }
  st = program->checkGraphInputs(inputs);
  if (st.isOk()) {
    inputs = program->programInputsOf(std::move(inputs));
    st = program->checkStepInputs(inputs);
  }
  if (!st.isOk())
    // Every rank finds the same error: the output device reports it and
    // fails the job. The others end quietly and with status 0, since a
    // non-zero status would make mpirun kill the output device before it
    // printed the message.
    return quiet ? 0 : error(st.message());
  const std::vector<TensorInfo> infos = program->stepInputs();
  size_t m = size_t(program->microbatches());
  std::vector<std::vector<HostTensor>> micro(m, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (m == 1 || infos[i].batchDim < 0)
      continue;
    std::vector<HostTensor> parts;
    st = splitAlong(inputs[i], infos[i].batchDim, m, parts);
    if (!st.isOk())
      return error("input " + std::to_string(i) + ": " + st.message());
    for (size_t k = 0; k < m; ++k)
      micro[k][i] = std::move(parts[k]);
  }

  // Each run: per microbatch upload, hetpar_run, download; hetpar_run is
  // timed separately.
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  std::vector<HostTensor> outputs;
  std::vector<double> total, device;
  long runs = opts.repeat > 1 ? opts.repeat + 1 : 1;
  // The last step's runs, per microbatch: wall-clock start and end (us), so
  // that the processes' timelines line up in one trace.
  std::vector<std::pair<double, double>> timeline;
  auto wallUs = [] {
    return std::chrono::duration<double, std::micro>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  for (long r = 0; r < runs; ++r) {
    std::vector<std::vector<HostTensor>> pieces(m);
    double deviceTime = 0;
    timeline.clear();
    Clock::time_point t0 = Clock::now();
    // The first run that found an index out of range: the other
    // microbatches still run (the other devices' exchanges need them), and
    // at the end the devices agree whether any failed, before any output
    // is written.
    Status refused = Status::ok();
    for (size_t k = 0; k < m && st.isOk(); ++k) {
      st = program->uploadInputs(micro[k]);
      Clock::time_point t1 = Clock::now();
      double w0 = wallUs();
      if (st.isOk())
        st = program->runInStep(refused);
      deviceTime += seconds(Clock::now() - t1);
      timeline.push_back({w0, wallUs()});
      if (st.isOk() && refused.isOk())
        st = program->downloadOutputs(pieces[k]);
    }
    if (st.isOk())
      st = program->agree(refused);
    if (st.isOk()) {
      outputs = pieces.back();
      const std::vector<TensorInfo> &outInfo = program->outputs();
      for (size_t j = 0; m > 1 && j < outputs.size(); ++j) {
        if (outInfo[j].batchDim < 0)
          continue;
        std::vector<HostTensor> parts;
        for (auto &p : pieces)
          parts.push_back(std::move(p[j]));
        st = joinAlong(parts, outInfo[j].batchDim, outputs[j]);
      }
    }
    Clock::time_point t3 = Clock::now();
    if (!st.isOk() && st.isPeerFailure() && quiet)
      return hetpar::run::stopQuietly();
    if (!st.isOk())
      return error(st.message());
    if (runs > 1 && r == 0)
      continue; // the warm-up run
    total.push_back(seconds(t3 - t0));
    device.push_back(deviceTime);
  }
  if (!opts.traceFile.empty()) {
    Status ts = hetpar::run::writeTrace(
        opts.traceFile, *program,
        hetpar::run::inferenceEvents(*program, timeline), /*summary=*/false);
    if (!ts.isOk())
      return error(ts.message());
  }
  if (quiet)
    return 0;
  if (program->microbatches() > 1)
    std::cout << "step: " << program->microbatches()
              << " microbatches, each a run of every device's program\n";
  if (total.size() == 1) {
    std::cout << "latency: " << ms(total[0])
              << " (1 run, no warm-up; host<->device copies included; "
                 "hetpar_run alone "
              << ms(device[0]) << ")\n";
  } else {
    auto [minT, maxT] = std::minmax_element(total.begin(), total.end());
    auto [minD, maxD] = std::minmax_element(device.begin(), device.end());
    std::cout << "latency: median " << ms(median(total)) << " over "
              << total.size() << " runs (min " << ms(*minT) << ", max "
              << ms(*maxT)
              << "; 1 warm-up run; host<->device copies included)\n";
    std::cout << "hetpar_run alone: median " << ms(median(device)) << " (min "
              << ms(*minD) << ", max " << ms(*maxD) << ")\n";
  }

  for (size_t i = 0; i < outputs.size(); ++i)
    std::cout << "output " << i << " "
              << describeTensor(program->stepOutputs()[i]) << "\n";
  // Otherwise each process of a multi-device program writes its own
  // device's outputs.
  std::string outputsDir = opts.outputsDir;
  if (!outputsDir.empty() && program->numDevices() > 1 && !partitioned)
    outputsDir = (std::filesystem::path(outputsDir) /
                  ("device_" + std::to_string(program->deviceId())))
                     .string();
  if (!outputsDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(outputsDir, ec);
    if (ec)
      return error("cannot create the output folder '" + outputsDir +
                   "': " + ec.message());
    st = writeOutputs(outputsDir, outputs);
    if (!st.isOk())
      return error(st.message());
    std::cout << "wrote " << outputs.size() << " output"
              << (outputs.size() == 1 ? "" : "s") << " to " << outputsDir
              << "\n";
  }
  bool allMatch = true;
  if (!opts.checkDir.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string path = (std::filesystem::path(opts.checkDir) /
                          ("output_" + std::to_string(i) + ".npy"))
                             .string();
      HostTensor ref;
      st = readNpy(path, ref);
      if (!st.isOk())
        return error(st.message());
      Comparison c = compareTensors(outputs[i], ref, opts.rtol, opts.atol);
      allMatch &= c.match;
      std::cout << "check output " << i << ": "
                << (c.match ? "match" : "MISMATCH") << " (" << c.detail
                << "; rtol " << opts.rtol << ", atol " << opts.atol << ")\n";
    }
  }
  std::cout.flush();
  if (!std::cout)
    return error("cannot write to stdout");
  if (!allMatch)
    return error("outputs differ from the reference in '" + opts.checkDir +
                 "'");
  return 0;
}

/// hetpar-run OUT --export-onnx FILE --resume DIR: exports a checkpoint.
int exportOnly(const std::string &outDir,
               const hetpar::run::TrainOptions &opts) {
  Status st =
      hetpar::run::exportCheckpoint(outDir, opts.resumeDir, opts.exportOnnx);
  if (!st.isOk())
    return error(st.message());
  std::cout << "wrote " << opts.exportOnnx << "\n";
  return 0;
}

/// Training on several devices: one process each (launchDevices); then,
/// when the plan's parameters are spread over them, the export of their
/// joined checkpoint (the devices leave it to this process).
int launchTraining(const Options &opts,
                   const std::vector<hetpar::rt::DeviceInfo> &devices,
                   char **argv) {
  ProgramWeights weights;
  bool joins = !opts.train.exportOnnx.empty() &&
               readProgramWeights(opts.outDir, weights).isOk() &&
               hetpar::run::exportJoinsCheckpoint(weights);
  if (joins)
    setenv(hetpar::run::kLauncherExports, "1", /*overwrite=*/1);
  int rc = hetpar::run::launchDevices(devices, argv);
  // A rank that mpirun killed while it wrote a checkpoint left a temporary.
  // Its process may outlive mpirun by a moment: wait up to 5 s for it.
  if (!opts.train.checkpointDir.empty())
    removeStaleTemporaries(opts.train.checkpointDir, /*waitSeconds=*/5);
  if (rc != 0 || !joins)
    return rc;
  Status st = hetpar::run::exportCheckpoint(
      opts.outDir, opts.train.checkpointDir, opts.train.exportOnnx);
  if (!st.isOk())
    return error(st.message());
  std::cout << "wrote " << opts.train.exportOnnx << " (joined from "
            << opts.train.checkpointDir << ")\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // A file size limit (ulimit -f) makes a write fail with EFBIG, reported
  // as a full disk is, instead of killing the process mid-write.
  std::signal(SIGXFSZ, SIG_IGN);
  Options opts;
  int rc = parseArgs(argc, argv, opts);
  if (rc >= 0)
    return rc;
  std::vector<hetpar::rt::DeviceInfo> devices;
  int64_t rank = -1;
  if (opts.train.enabled && programDevices(opts.outDir, devices, rank).isOk() &&
      devices.size() > 1 && rank < 0)
    return launchTraining(opts, devices, argv);
  if (!opts.train.enabled && opts.train.exportOnnx.empty() &&
      programDevices(opts.outDir, devices, rank).isOk() && devices.size() > 1 &&
      rank < 0)
    return hetpar::run::launchDevices(devices, argv);
  try {
    if (opts.train.enabled) {
      opts.train.traceFile = opts.traceFile;
      return hetpar::run::runTraining(opts.outDir, opts.backend, opts.train);
    }
    if (!opts.train.exportOnnx.empty())
      return exportOnly(opts.outDir, opts.train);
    return runTool(opts);
  } catch (const std::exception &e) {
    return error(e.what());
  }
}
