//===- TrainLog.h - Progress display and loss log of --train -*- C++ -*-===//
#ifndef HETPAR_TOOLS_HETPAR_RUN_TRAINLOG_H
#define HETPAR_TOOLS_HETPAR_RUN_TRAINLOG_H

#include "hetpar/runtime/Runtime.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace hetpar::run {

/// What one step reports.
struct StepReport {
  int64_t step = 0;  // global step count after the step (1-based)
  int64_t index = 0; // 1..total within this invocation
  int64_t total = 0; // steps of this invocation
  float loss = 0;
  double seconds = 0;     // since the first step of this invocation began
  double samplesPerS = 0; // this step's batch / this step's wall time
  double tokensPerS = 0;  // samplesPerS * tokens_per_sample (0: none)
  float lossScale = 0;    // dynamic loss scale after the step (0: none)
  bool skipped = false;   // the update was skipped (gradient overflow)
};

/// Progress on stderr: on a terminal one line redrawn in place (a bar,
/// step, loss, samples/s and tokens/s when known); otherwise a line every
/// max(1, total / 20) steps and for the last.
class Progress {
public:
  explicit Progress(bool terminal) : terminal_(terminal) {}
  void update(const StepReport &r);
  /// Ends the in-place line (before any other output).
  void finish();

private:
  bool terminal_;
  bool drawn_ = false;
};

/// --loss-log FILE: one JSON object per step, {"step": k, "loss": x,
/// "seconds": t, "samples_per_s": r} (a non-finite loss is null), plus
/// "loss_scale" and "skipped" under dynamic loss scaling; appended and
/// flushed at every step so that it can be followed while training runs.
class LossLog {
public:
  ~LossLog();
  /// Opens `path`, truncated (`append` false) or appended to (a resumed run).
  rt::Status open(const std::string &path, bool append);
  rt::Status write(const StepReport &r);
  /// Appends {"step": k, "eval_loss": x, "eval_samples": n}: the held-out
  /// loss after global step k (--eval-data).
  rt::Status writeEval(int64_t step, double loss, uint64_t samples);

private:
  std::FILE *file_ = nullptr;
  std::string path_;
};

} // namespace hetpar::run

#endif // HETPAR_TOOLS_HETPAR_RUN_TRAINLOG_H
