//===- Train.h - hetpar-run --train ---------------------------*- C++ -*-===//
//
// The training mode of hetpar-run (docs/training.md, "Running a training
// program"): the step loop, progress, loss log, checkpoints and ONNX export.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TOOLS_HETPAR_RUN_TRAIN_H
#define HETPAR_TOOLS_HETPAR_RUN_TRAIN_H

#include "hetpar/runtime/Runtime.h"

#include <cstdint>
#include <string>

namespace hetpar::run {

/// The --train options of hetpar-run.
struct TrainOptions {
  bool enabled = false;        // --train
  std::string dataDir;         // --data DIR
  int64_t steps = -1;          // --steps N: steps to run in this invocation
  int64_t batchSize = -1;      // --batch-size B; -1: the program's
  bool shuffle = false;        // --shuffle
  uint64_t seed = 0;           // --seed S
  std::string checkpointDir;   // --checkpoint DIR
  int64_t checkpointEvery = 0; // --checkpoint-every K (global steps)
  std::string resumeDir;       // --resume DIR
  std::string lossLog;         // --loss-log FILE (JSON lines)
  std::string exportOnnx;      // --export-onnx FILE.onnx
  std::string evalData;        // --eval-data DIR: held-out loss after the run
  int64_t evalEvery = 0;       // --eval-every K: also every K global steps
  std::string traceFile;       // --trace FILE: the last step's timeline
};

/// Parses the value of training option `name` (e.g. "--steps") into `opts`;
/// returns an error message for a bad value, "" when it was taken, and
/// "unknown" when `name` is no training option.
std::string parseTrainOption(const std::string &name, const std::string &value,
                             TrainOptions &opts);

/// Checks the combination (--data and --steps given, --seed only with
/// --shuffle, ...); returns "" or a usage error message.
std::string checkTrainOptions(const TrainOptions &opts);

/// Trains the program in `outDir` as `opts` says; returns the exit status
/// (0, or 1 after printing "hetpar-run: error: ..." on stderr).
/// Prints "hetpar-run: error: MESSAGE" on stderr in one write (the lines of
/// several processes on one terminal do not interleave); returns 1.
int reportError(const std::string &message);

/// Ends a device other than the one that names a failure every device saw
/// (the reporting device, or the device that caused it): without a message
/// of its own, one second later, so that the naming message is printed
/// before mpirun ends the job at the first process that exits with an error
/// (every device printing it repeated one line per device). Returns 1.
int stopQuietly();

int runTraining(const std::string &outDir, const std::string &backend,
                const TrainOptions &opts);

/// Writes the program's source model (training.model, relative to OUT) to
/// `file` with every initializer named after a role "param" tensor replaced
/// by its current (trained) float32 values. Initializers of 1 MiB or more go
/// to the external data file FILE.data (ONNX's convention: location, offset,
/// length); the source's own external data is read from beside the source.
/// Atomic: both files are written to temporaries and renamed. Errors: no
/// training.model, an unreadable or unparsable model, a param without an
/// initializer or with another dtype or shape, I/O failures.
/// Set by hetpar-run's own launcher (Launch.cpp) in the devices'
/// environment: it exports the joined checkpoint after they end.
inline constexpr const char *kLauncherExports = "HETPAR_LAUNCHER_EXPORTS";

} // namespace hetpar::run

#endif // HETPAR_TOOLS_HETPAR_RUN_TRAIN_H
