//===- Launch.cpp - One process per device through mpirun -----------------===//
//
// hetpar-run OUT on a program of several devices, without a launcher, starts
// itself once per device under Open MPI's mpirun and watches mpirun's stderr,
// so that a rank that dies by a signal is reported as the device (and
// pipeline stage) it ran, not only as mpirun's rank number.
//
//===----------------------------------------------------------------------===//
#include "Launch.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <regex>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace hetpar::run {

std::optional<RankSignal> parseRankSignal(const std::string &line) {
  // Open MPI 4.1 (orte/mca/errmgr): "<tool> noticed that process rank R with
  // PID P on node N exited on signal S (NAME)."
  static const std::regex re(
      R"(noticed that process rank ([0-9]+) with PID [0-9]+ on node (\S+) exited on signal ([0-9]+))");
  std::smatch m;
  if (!std::regex_search(line, m, re))
    return std::nullopt;
  RankSignal r;
  r.rank = std::strtoll(m[1].str().c_str(), nullptr, 10);
  r.node = m[2].str();
  r.signal = int(std::strtol(m[3].str().c_str(), nullptr, 10));
  return r;
}

std::string describeRankSignal(const RankSignal &dead,
                               const std::vector<rt::DeviceInfo> &devices) {
  std::string who = "rank " + std::to_string(dead.rank);
  if (dead.rank >= 0 && size_t(dead.rank) < devices.size()) {
    const rt::DeviceInfo &d = devices[size_t(dead.rank)];
    who = "device " + std::to_string(d.id) + " (" + who;
    if (d.stage >= 0)
      who += ", pipeline stage " + std::to_string(d.stage);
    if (!d.kind.empty())
      who += ", " + d.kind;
    who += ")";
  }
  const char *name = strsignal(dead.signal);
  return who + " on node " + dead.node + " was ended by signal " +
         std::to_string(dead.signal) + " (" + (name ? name : "unknown") +
         ") before the run finished; mpirun stopped the other devices. No " +
         "outputs were written, and a checkpoint is only ever written whole";
}

namespace {

pid_t launcherPid = -1;

/// SIGTERM to hetpar-run goes on to mpirun, which ends the ranks.
void forwardTerm(int) {
  if (launcherPid > 0)
    kill(launcherPid, SIGTERM);
}

std::vector<std::string> mpirunArgs(size_t devices, char **argv) {
  std::vector<std::string> args{"mpirun"};
  if (geteuid() == 0)
    args.push_back("--allow-run-as-root");
  // More devices than cores is normal for the CPU backend on one machine.
  args.push_back("--oversubscribe");
  args.push_back("-np");
  args.push_back(std::to_string(devices));
  for (char **a = argv; *a; ++a)
    args.push_back(*a);
  return args;
}

/// The processes share this machine's cores: each gets its share of OpenMP
/// and OpenBLAS threads (unless the user chose), and ranks that wait yield
/// their core (Open MPI), so that a waiting rank does not spin on the core
/// its peer needs.
void shareCores(size_t devices) {
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::string share = std::to_string(std::max<size_t>(1, cores / devices));
  for (const char *var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"})
    setenv(var, share.c_str(), /*overwrite=*/0);
  if (devices > cores)
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

/// Starts mpirun with its stderr into a pipe; returns the pipe's read end,
/// or -1 after printing why it failed.
int startMpirun(std::vector<std::string> &args, size_t devices) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::cerr << "hetpar-run: error: cannot create a pipe for mpirun: "
              << std::strerror(errno) << "\n";
    return -1;
  }
  std::vector<char *> cargs;
  for (std::string &a : args)
    cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::cerr.flush();
  std::cout.flush();
  launcherPid = fork();
  if (launcherPid == 0) {
    dup2(fds[1], STDERR_FILENO);
    execvp("mpirun", cargs.data());
    std::string msg =
        "hetpar-run: error: the program has " + std::to_string(devices) +
        " devices and starting 'mpirun' failed (" + std::strerror(errno) +
        "); install Open MPI (openmpi-bin) or start one "
        "process per device with your launcher\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(1);
  }
  close(fds[1]);
  if (launcherPid < 0) {
    std::cerr << "hetpar-run: error: cannot start mpirun: "
              << std::strerror(errno) << "\n";
    close(fds[0]);
    return -1;
  }
  return fds[0];
}

} // namespace

int launchDevices(const std::vector<rt::DeviceInfo> &devices, char **argv) {
  std::vector<std::string> args = mpirunArgs(devices.size(), argv);
  std::string shown;
  for (const std::string &a : args)
    shown += (shown.empty() ? "" : " ") + a;
  std::cerr << "hetpar-run: " << devices.size() << " devices: " << shown
            << "\n";
  shareCores(devices.size());
  int in = startMpirun(args, devices.size());
  if (in < 0)
    return 1;
  // Ctrl-C reaches mpirun through the terminal's process group; this
  // process waits for it to finish and report.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGTERM, forwardTerm);
  std::optional<RankSignal> dead;
  std::FILE *f = fdopen(in, "r");
  char *line = nullptr;
  size_t cap = 0;
  ssize_t n;
  while (f && (n = getline(&line, &cap, f)) > 0) {
    std::fwrite(line, 1, size_t(n), stderr);
    if (!dead)
      dead = parseRankSignal(std::string(line, size_t(n)));
  }
  std::free(line);
  if (f)
    std::fclose(f);
  int status = 0;
  while (waitpid(launcherPid, &status, 0) < 0 && errno == EINTR)
    ;
  if (dead) {
    std::cerr << "hetpar-run: error: " << describeRankSignal(*dead, devices)
              << "\n";
    return 1;
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

} // namespace hetpar::run
