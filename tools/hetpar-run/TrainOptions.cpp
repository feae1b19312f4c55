//===- TrainOptions.cpp - hetpar-run's --train options --------------------===//
#include "Train.h"

#include <cerrno>
#include <cstdlib>

namespace hetpar::run {

namespace {

/// A non-negative integer of at most `max`, or -1.
int64_t parseCount(const std::string &value, int64_t max) {
  if (value.empty() || value[0] == '-')
    return -1;
  char *end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (*end || errno || n > uint64_t(max))
    return -1;
  return int64_t(n);
}

} // namespace

std::string parseTrainOption(const std::string &name, const std::string &value,
                             TrainOptions &opts) {
  constexpr int64_t kMax = int64_t(1) << 62;
  auto positive = [&](int64_t &field) -> std::string {
    int64_t n = parseCount(value, kMax);
    if (n < 1)
      return name + " needs a positive integer, not '" + value + "'";
    field = n;
    return "";
  };
  auto path = [&](std::string &field) -> std::string {
    if (value.empty())
      return name + " needs a path";
    field = value;
    return "";
  };
  if (name == "--steps")
    return positive(opts.steps);
  if (name == "--batch-size")
    return positive(opts.batchSize);
  if (name == "--checkpoint-every")
    return positive(opts.checkpointEvery);
  if (name == "--eval-every")
    return positive(opts.evalEvery);
  if (name == "--eval-data")
    return path(opts.evalData);
  if (name == "--seed") {
    char *end = nullptr;
    errno = 0;
    opts.seed = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || *end || errno)
      return "--seed needs a non-negative integer, not '" + value + "'";
    return "";
  }
  if (name == "--data")
    return path(opts.dataDir);
  if (name == "--checkpoint")
    return path(opts.checkpointDir);
  if (name == "--resume")
    return path(opts.resumeDir);
  if (name == "--loss-log")
    return path(opts.lossLog);
  if (name == "--export-onnx")
    return path(opts.exportOnnx);
  return "unknown";
}

std::string checkTrainOptions(const TrainOptions &opts) {
  bool any = !opts.dataDir.empty() || opts.steps > 0 || opts.shuffle ||
             opts.batchSize > 0 || !opts.checkpointDir.empty() ||
             !opts.resumeDir.empty() || !opts.lossLog.empty() ||
             !opts.exportOnnx.empty() || opts.checkpointEvery > 0 ||
             !opts.evalData.empty() || opts.evalEvery > 0;
  bool exportOnly = !opts.exportOnnx.empty() && !opts.resumeDir.empty() &&
                    opts.dataDir.empty() && opts.steps < 0 && !opts.shuffle &&
                    opts.batchSize < 0 && opts.checkpointDir.empty() &&
                    opts.lossLog.empty() && opts.checkpointEvery == 0 &&
                    opts.evalData.empty() && opts.evalEvery == 0;
  if (!opts.enabled && exportOnly)
    return ""; // hetpar-run OUT --export-onnx FILE --resume DIR
  if (!opts.enabled)
    return any ? "--data, --steps, --checkpoint, --resume, --loss-log, "
                 "--export-onnx, --eval-data, --shuffle and --batch-size "
                 "need --train (export a checkpoint with only --export-onnx "
                 "FILE --resume DIR)"
               : "";
  if (opts.dataDir.empty())
    return "--train needs --data DIR (one .npy per program input)";
  if (opts.steps < 1)
    return "--train needs --steps N";
  if (opts.checkpointEvery > 0 && opts.checkpointDir.empty())
    return "--checkpoint-every needs --checkpoint DIR";
  if (opts.evalEvery > 0 && opts.evalData.empty())
    return "--eval-every needs --eval-data DIR";
  return "";
}

} // namespace hetpar::run
