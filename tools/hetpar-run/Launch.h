//===- Launch.h - One process per device through mpirun ---------*- C++ -*-===//
#ifndef HETPAR_TOOLS_HETPAR_RUN_LAUNCH_H
#define HETPAR_TOOLS_HETPAR_RUN_LAUNCH_H

#include "hetpar/runtime/Runtime.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar::run {

/// A rank that a signal ended, as Open MPI's mpirun reports it on stderr
/// ("mpirun noticed that process rank 1 with PID 0 on node vm exited on
/// signal 9 (Killed).", Open MPI 4.1).
struct RankSignal {
  int64_t rank = -1;
  int signal = 0;
  std::string node;
};

/// Parses one line of mpirun's stderr; nullopt when it is not such a report.
std::optional<RankSignal> parseRankSignal(const std::string &line);

/// The error for `dead`: the device of that rank with its stage and kind,
/// the signal, and what became of the run ("device 1 (rank 1, stage 1,
/// T4-16GB) on node vm was killed by signal 9 (Killed) ...").
std::string describeRankSignal(const RankSignal &dead,
                               const std::vector<rt::DeviceInfo> &devices);

/// Runs the program's `devices` as one process per device on this machine
/// through Open MPI's mpirun, each with this same command line `argv` (each
/// process then loads the device of its rank). mpirun's stderr passes
/// through; when a rank ends by a signal, the last line on stderr names its
/// device (describeRankSignal). Returns the exit status: mpirun's, 1 after a
/// rank's signal, or 1 when mpirun cannot be started.
int launchDevices(const std::vector<rt::DeviceInfo> &devices, char **argv);

} // namespace hetpar::run

#endif
