//===- Trace.cpp - hetpar-run --trace: the measured timeline --------------===//
#include "Trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <thread>

namespace hetpar::run {

using rt::Program;
using rt::Status;

namespace {

std::string partOf(const std::string &file, int64_t id) {
  return file + ".device-" + std::to_string(id);
}

/// This device's stage for span names: 0 outside a pipeline.
int64_t stageOf(const Program &program) {
  return std::max<int64_t>(rt::pipelineStageOf(program), 0);
}

/// Writes the part atomically (a temporary renamed), one line per event:
/// "START END LANE CATEGORY NAME".
Status writePart(const std::string &part,
                 const std::vector<TraceEvent> &events) {
  std::string tmp = part + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f)
    return Status::error("cannot write '" + tmp + "': " + std::strerror(errno));
  for (const TraceEvent &e : events)
    std::fprintf(f, "%.3f %.3f %d %s %s\n", e.start, e.end, e.lane,
                 e.category.c_str(), e.name.c_str());
  bool ok = std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), part.c_str())) {
    std::remove(tmp.c_str());
    return Status::error("cannot write '" + part + "'");
  }
  return Status::ok();
}

/// Reads a part; false when the file does not exist (yet).
bool readPart(const std::string &part, std::vector<TraceEvent> &events) {
  std::FILE *f = std::fopen(part.c_str(), "r");
  if (!f)
    return false;
  TraceEvent e;
  char category[64], name[256];
  while (std::fscanf(f, "%lf %lf %d %63s %255[^\n]", &e.start, &e.end, &e.lane,
                     category, name) == 5) {
    e.category = category;
    e.name = name;
    events.push_back(e);
  }
  std::fclose(f);
  return true;
}

/// A JSON string literal (names are ours, but may hold a kind's name).
std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out + "\"";
}

void printSummary(const Program &program,
                  const std::vector<std::vector<TraceEvent>> &parts) {
  double first = std::numeric_limits<double>::infinity(), last = -first;
  for (const auto &events : parts)
    for (const TraceEvent &e : events) {
      first = std::min(first, e.start);
      last = std::max(last, e.end);
    }
  if (!(last > first))
    return;
  std::cout << "measured step " << (last - first) / 1e3
            << " ms; per device, ms (transfer includes waiting for a peer: "
               "a pipeline's bubble; host: the step outside the program):\n";
  static const char *const order[] = {"forward", "backward", "optimizer",
                                      "collective", "transfer"};
  for (size_t k = 0; k < parts.size(); ++k) {
    std::map<std::string, double> sum;
    double busy = 0;
    for (const TraceEvent &e : parts[k]) {
      sum[e.category] += e.end - e.start;
      busy += e.end - e.start;
    }
    const Program::DeviceInfo &d = program.devices()[k];
    std::printf("  device %lld%s:", (long long)d.id,
                d.kind.empty() ? "" : (" (" + d.kind + ")").c_str());
    for (const char *c : order)
      std::printf(" %s %.3f,", c, sum[c] / 1e3);
    std::printf(" host %.3f\n", std::max(0.0, last - first - busy) / 1e3);
  }
  std::fflush(stdout);
}

} // namespace

std::vector<TraceEvent>
inferenceEvents(const Program &program,
                const std::vector<std::pair<double, double>> &runs) {
  std::vector<TraceEvent> events;
  std::string stage = " stage " + std::to_string(stageOf(program));
  for (size_t k = 0; k < runs.size(); ++k)
    events.push_back({runs[k].first, runs[k].second, 0, "forward",
                      "F" + std::to_string(k) + stage});
  return events;
}

std::vector<TraceEvent>
trainingEvents(const Program &program,
               const std::vector<rt::Trainer::TracedSpan> &spans) {
  std::vector<TraceEvent> events;
  std::string stage = " stage " + std::to_string(stageOf(program));
  for (const rt::Trainer::TracedSpan &t : spans) {
    const std::string &c = t.span->category;
    std::string mb = t.microbatch >= 0 ? std::to_string(t.microbatch) : "";
    TraceEvent e{t.start, t.end, 0, c, ""};
    if (c == "forward" || c == "backward")
      e.name = (mb.empty() ? c : (c == "forward" ? "F" : "B") + mb) + stage;
    else if (c == "optimizer")
      e.name = "optimizer" + stage;
    else {
      e.lane = c == "collective" ? 1 : 2;
      e.name = c == "transfer" ? "send/recv" : t.span->detail;
      if (!mb.empty() && c == "collective")
        e.name += " (microbatch " + mb + ")";
    }
    if (e.name.empty())
      e.name = c;
    events.push_back(std::move(e));
  }
  return events;
}

void removeStaleTracePart(const std::string &file, const Program &program) {
  std::remove(partOf(file, program.deviceId()).c_str());
}

Status writeTrace(const std::string &file, const Program &program,
                  const std::vector<TraceEvent> &events, bool summary) {
  Status st = writePart(partOf(file, program.deviceId()), events);
  if (!st.isOk())
    return st;
  int64_t writer = program.outputDevice() >= 0 ? program.outputDevice()
                                               : program.devices()[0].id;
  if (program.deviceId() != writer)
    return Status::ok();
  std::vector<std::vector<TraceEvent>> parts;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (const Program::DeviceInfo &d : program.devices()) {
    std::vector<TraceEvent> part;
    while (!readPart(partOf(file, d.id), part)) {
      if (std::chrono::steady_clock::now() > deadline)
        return Status::error("--trace: device " + std::to_string(d.id) +
                             " wrote no '" + partOf(file, d.id) +
                             "' within 60 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    parts.push_back(std::move(part));
  }
  double origin = std::numeric_limits<double>::infinity();
  for (const auto &part : parts)
    for (const TraceEvent &e : part)
      origin = std::min(origin, e.start);
  std::string tmp = file + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f)
    return Status::error("cannot write '" + tmp + "': " + std::strerror(errno));
  std::fprintf(f, "{\"traceEvents\":[");
  bool first = true;
  auto sep = [&] {
    if (!first)
      std::fprintf(f, ",");
    first = false;
  };
  static const char *const lanes[] = {"compute", "collectives", "transfers"};
  for (size_t k = 0; k < parts.size(); ++k) {
    const Program::DeviceInfo &d = program.devices()[k];
    std::string label = "device " + std::to_string(d.id) +
                        (d.kind.empty() ? "" : " (" + d.kind + ")");
    sep();
    std::fprintf(f,
                 "{\"args\":{\"name\":%s},\"name\":\"process_name\","
                 "\"ph\":\"M\",\"pid\":%lld}",
                 quoted(label).c_str(), (long long)d.id);
    for (int lane = 0; lane < 3; ++lane) {
      sep();
      std::fprintf(f,
                   "{\"args\":{\"name\":\"%s\"},\"name\":\"thread_name\","
                   "\"ph\":\"M\",\"pid\":%lld,\"tid\":%d}",
                   lanes[lane], (long long)d.id, lane);
    }
    for (const TraceEvent &e : parts[k]) {
      sep();
      std::fprintf(f,
                   "{\"name\":%s,\"cat\":%s,\"ph\":\"X\",\"pid\":%lld,"
                   "\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                   quoted(e.name).c_str(), quoted(e.category).c_str(),
                   (long long)d.id, e.lane, e.start - origin, e.end - e.start);
    }
  }
  std::fprintf(f, "],\"displayTimeUnit\":\"ms\"}\n");
  bool ok = std::fclose(f) == 0;
  if (!ok || std::rename(tmp.c_str(), file.c_str())) {
    std::remove(tmp.c_str());
    return Status::error("cannot write '" + file + "'");
  }
  for (const Program::DeviceInfo &d : program.devices())
    std::remove(partOf(file, d.id).c_str());
  std::cout << "wrote the measured timeline to " << file << "\n";
  if (summary)
    printSummary(program, parts);
  return Status::ok();
}

} // namespace hetpar::run
