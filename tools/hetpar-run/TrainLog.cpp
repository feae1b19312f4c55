//===- TrainLog.cpp - Progress display and loss log of --train ------------===//
#include "TrainLog.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace hetpar::run {

namespace {

/// "loss 0.1234, 1.2e+03 samples/s[, 5e+04 tokens/s]"
std::string rates(const StepReport &r) {
  char buf[160];
  int n = std::snprintf(buf, sizeof(buf), "loss %.6g, %.4g samples/s",
                        double(r.loss), r.samplesPerS);
  if (r.tokensPerS > 0)
    n += std::snprintf(buf + n, sizeof(buf) - size_t(n), ", %.4g tokens/s",
                       r.tokensPerS);
  if (r.lossScale > 0)
    std::snprintf(buf + n, sizeof(buf) - size_t(n), ", loss scale %g%s",
                  double(r.lossScale), r.skipped ? " (skipped)" : "");
  return buf;
}

} // namespace

void Progress::update(const StepReport &r) {
  if (terminal_) {
    constexpr int kWidth = 24;
    int filled = int(kWidth * r.index / std::max<int64_t>(1, r.total));
    std::string bar(size_t(filled), '#');
    bar.append(size_t(kWidth - filled), '.');
    std::fprintf(stderr, "\r\033[K[%s] step %lld/%lld (global %lld): %s",
                 bar.c_str(), (long long)r.index, (long long)r.total,
                 (long long)r.step, rates(r).c_str());
    std::fflush(stderr);
    drawn_ = true;
    return;
  }
  int64_t every = std::max<int64_t>(1, r.total / 20);
  if (r.index % every == 0 || r.index == r.total)
    std::fprintf(stderr, "step %lld (%lld/%lld): %s\n", (long long)r.step,
                 (long long)r.index, (long long)r.total, rates(r).c_str());
}

void Progress::finish() {
  if (drawn_)
    std::fprintf(stderr, "\n");
  drawn_ = false;
}

LossLog::~LossLog() {
  if (file_)
    std::fclose(file_);
}

rt::Status LossLog::open(const std::string &path, bool append) {
  path_ = path;
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_)
    return rt::Status::error("cannot write the loss log '" + path +
                             "': " + std::strerror(errno));
  return rt::Status::ok();
}

rt::Status LossLog::write(const StepReport &r) {
  if (!file_)
    return rt::Status::ok();
  char loss[32] = "null"; // JSON has no NaN or infinity
  if (std::isfinite(r.loss))
    std::snprintf(loss, sizeof(loss), "%.9g", double(r.loss));
  int n = std::fprintf(file_,
                       "{\"step\": %lld, \"loss\": %s, \"seconds\": %.6f, "
                       "\"samples_per_s\": %.6g",
                       (long long)r.step, loss, r.seconds, r.samplesPerS);
  if (n >= 0 && r.lossScale > 0)
    n = std::fprintf(file_, ", \"loss_scale\": %.9g, \"skipped\": %s",
                     double(r.lossScale), r.skipped ? "true" : "false");
  if (n >= 0)
    n = std::fprintf(file_, "}\n");
  if (n < 0 || std::fflush(file_) != 0)
    return rt::Status::error("cannot write the loss log '" + path_ +
                             "': " + std::strerror(errno));
  return rt::Status::ok();
}

rt::Status LossLog::writeEval(int64_t step, double loss, uint64_t samples) {
  if (!file_)
    return rt::Status::ok();
  char value[32] = "null";
  if (std::isfinite(loss))
    std::snprintf(value, sizeof(value), "%.9g", loss);
  int n = std::fprintf(file_,
                       "{\"step\": %lld, \"eval_loss\": %s, "
                       "\"eval_samples\": %llu}\n",
                       (long long)step, value, (unsigned long long)samples);
  if (n < 0 || std::fflush(file_) != 0)
    return rt::Status::error("cannot write the loss log '" + path_ +
                             "': " + std::strerror(errno));
  return rt::Status::ok();
}

} // namespace hetpar::run
