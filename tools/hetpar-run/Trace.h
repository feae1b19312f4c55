//===- Trace.h - hetpar-run --trace: the measured timeline -----*- C++ -*-===//
//
// Every process of a run writes its device's events; the reporting device
// joins them into one Chrome trace in the format of hetpar-compile's
// predicted trace.json (a process per device; lanes compute, collectives,
// transfers).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TOOLS_HETPAR_RUN_TRACE_H
#define HETPAR_TOOLS_HETPAR_RUN_TRACE_H

#include "hetpar/runtime/Runtime.h"
#include "hetpar/runtime/Training.h"

#include <string>
#include <vector>

namespace hetpar::run {

/// One span of a device's timeline: wall-clock start and end (us since the
/// epoch), its lane (0 compute, 1 collectives, 2 transfers, as the
/// predicted trace's), category ("forward", "backward", "optimizer",
/// "collective", "transfer") and name.
struct TraceEvent {
  double start = 0, end = 0;
  int lane = 0;
  std::string category, name;
};

/// The events of an inference step: "F<microbatch> stage <s>" on the
/// compute lane for each run (start, end) of the step.
std::vector<TraceEvent>
inferenceEvents(const rt::Program &program,
                const std::vector<std::pair<double, double>> &runs);

/// The events of a training step's traced spans (Trainer::lastStepTrace):
/// "F<k> stage <s>", "B<k> stage <s>", "optimizer stage <s>", the
/// collectives' kinds, "send/recv".
std::vector<TraceEvent>
trainingEvents(const rt::Program &program,
               const std::vector<rt::Trainer::TracedSpan> &spans);

/// Writes this device's events to FILE.device-<id>. The reporting device
/// (the output device, or the first) then waits for every device's part (at
/// most 60 s), joins them into FILE (times from the earliest start) and
/// removes the parts; with `summary` it also prints each device's time per
/// category and the rest of the step (host work between runs), in ms. Times
/// are wall clock: on several machines they are only as aligned as the
/// machines' clocks. Errors name the file.
rt::Status writeTrace(const std::string &file, const rt::Program &program,
                      const std::vector<TraceEvent> &events, bool summary);

/// Removes a part an earlier run left for this device, so that the
/// reporting device never takes it for this run's.
void removeStaleTracePart(const std::string &file, const rt::Program &program);

} // namespace hetpar::run

#endif // HETPAR_TOOLS_HETPAR_RUN_TRACE_H
