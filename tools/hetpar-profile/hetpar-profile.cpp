//===- hetpar-profile.cpp - measure a device for the cost model
//------------===//
//
// Usage:
//   hetpar-profile [--backend cpu|cuda] [--gpu N] [--device-kind KIND]
//   [--quick]
//                  [-o PROFILE.json] [--kernels LIST.txt ... --measured
//                  OUT.txt]
//   mpirun -np P hetpar-profile --backend cpu --link-kind KIND -o PROFILE.json
//
// -o runs the microbenchmarks (large float32 and float16 GEMMs, a streaming
// elementwise kernel, a one-element kernel for the launch overhead, reduction,
// softmax, layernorm and copy kernels) and writes a profile that
// hetpar-compile --profile loads in place of datasheet numbers (the format is
// in docs/cost-model.md). Under mpirun with more than one process it also times
// MPI all-reduces and fits the link's bandwidth and latency. --kernels times
// every kernel of kernel lists (hetpar-compile --emit=kernels) and writes
// "SECONDS<TAB>LINE" per kernel, for scripts/compare-kernels.py.
//
// Builds with a C++17 compiler and OpenBLAS alone (plus the CUDA toolkit for
// --backend cuda, MPI for collectives): no LLVM, so that it builds on GPU
// machines that have only CUDA. Exit status 0 on success, 1 on any error.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"

#ifdef HETPAR_PROFILE_MPI
#include <mpi.h>
#endif

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <unistd.h>

using namespace hetpar::profile;

namespace hetpar::profile {

double Kernel::bytes() const {
  const auto &a = args;
  if (kind == "gemm")
    return static_cast<double>(a[0] * a[2] + a[2] * a[1] + a[0] * a[1]) * a[3] *
           a[4];
  if (kind == "elementwise") {
    double b = static_cast<double>(a[0]);
    for (int64_t i = 0; i < a[2]; ++i)
      b += static_cast<double>(a[3 + i]);
    return b * a[1];
  }
  if (kind == "reduce")
    return static_cast<double>(a[0] * a[1] + a[0]) * a[2];
  if (kind == "softmax" || kind == "layernorm")
    return 2.0 * a[0] * a[1] * a[2];
  if (kind == "copy")
    return static_cast<double>(a[0]);
  return 0;
}

double Kernel::flops() const {
  return kind == "gemm" ? 2.0 * args[0] * args[1] * args[2] * args[3] : 0;
}

std::string Kernel::text() const {
  std::string s = kind;
  for (int64_t v : args)
    s += " " + std::to_string(v);
  return s;
}

} // namespace hetpar::profile

namespace {

/// The most bytes one kernel's buffers may take (inputs and outputs): below the
/// memory of the GPUs and machines this runs on (16 GB of 24 on the development
/// machine; 141 GB on an H200).
constexpr double kMaxKernelBytes = 16e9;

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "hetpar-profile: error: %s\n", message.c_str());
  std::exit(1);
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

/// Writes `text` to `path` through a temporary file and a rename: the file is
/// complete or absent.
void writeFile(const std::string &path, const std::string &text) {
  std::string tmp = path + ".tmp" + std::to_string(std::time(nullptr));
  {
    std::ofstream out(tmp);
    out << text;
    out.flush();
    if (!out)
      fail("cannot write '" + tmp + "': " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    fail("cannot write '" + path + "': " + why);
  }
}

/// Fails unless the folder of `path` (given by `flag`) exists and may be
/// written: checked before the measurements, which take minutes, not after.
/// The runtime's hetpar::rt::checkOutputFolder, with its messages; not
/// linked, because hetpar-profile also builds on its own on a GPU machine
/// (scripts/gpu-check.sh), without the runtime.
void checkOutputFolder(const std::string &flag, const std::string &path) {
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty())
    folder = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    fail(flag + " '" + path + "': the folder '" + folder.string() +
         "' does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    fail(flag + " '" + path + "': cannot write in '" + folder.string() +
         "': " + std::strerror(errno));
}

/// Parses one kernel-list line; returns false for comments and blank lines;
/// fails with the file and line number on a malformed one.
bool parseLine(const std::string &line, const std::string &where, Kernel &k) {
  std::istringstream in(line);
  if (!(in >> k.kind) || k.kind[0] == '#')
    return false;
  int fixed =
      k.kind == "gemm"          ? 5
      : k.kind == "elementwise" ? 3
      : k.kind == "copy"        ? 1
      : (k.kind == "reduce" || k.kind == "softmax" || k.kind == "layernorm")
          ? 3
          : -1;
  if (fixed < 0)
    fail(where + ": unknown kernel kind '" + k.kind + "'");
  k.args.clear();
  for (int i = 0; i < fixed; ++i) {
    int64_t v;
    if (!(in >> v) || v < 0)
      fail(where + ": '" + k.kind + "' needs " + std::to_string(fixed) +
           " non-negative integers");
    k.args.push_back(v);
  }
  if (k.kind == "elementwise") {
    if (k.args[2] < 1 || k.args[2] > 3)
      fail(where + ": an elementwise kernel has 1 to 3 inputs");
    for (int64_t i = 0; i < k.args[2]; ++i) {
      int64_t v;
      if (!(in >> v) || v < 0)
        fail(where + ": missing the size of input " + std::to_string(i + 1));
      k.args.push_back(v);
    }
  }
  // What a backend would allocate: refuse absurd sizes before allocating.
  for (int64_t v : k.args)
    if (v > (int64_t(1) << 34))
      fail(where + ": size " + std::to_string(v) + " is too large");
  if (k.bytes() > kMaxKernelBytes)
    fail(where + ": the kernel's buffers would take " +
         number(k.bytes() / 1e9) + " GB, more than " +
         number(kMaxKernelBytes / 1e9) + " GB");
  return true;
}

std::string guessKind(const std::string &name) {
  // The catalog keys (hetpar-cluster --catalog) of the GPUs this recognizes.
  const std::pair<const char *, const char *> known[] = {
      {"H200", "H200-SXM"},
      {"H100 PCIe", "H100-PCIe-80GB"},
      {"H100", "H100-SXM5-80GB"},
      {"A100-PCIE-40GB", "A100-PCIe-40GB"},
      {"A100-PCIE", "A100-PCIe-80GB"},
      {"A100-SXM4-40GB", "A100-SXM4-40GB"},
      {"A100", "A100-SXM4-80GB"},
      {"V100-SXM2-16GB", "V100-SXM2-16GB"},
      {"V100", "V100-SXM2-32GB"},
      {"L40S", "L40S"},
      {"L4", "L4"},
      {"A10", "A10"},
      {"T4", "T4"}};
  for (auto [needle, kind] : known)
    if (name.find(needle) != std::string::npos)
      return kind;
  return "";
}

struct Options {
  std::string backend = "cpu", deviceKind, output, measured, linkKind = "PCIe3";
  std::vector<std::string> kernelLists;
  int gpu = 0;
  bool quick = false;
};

Options parseArgs(int argc, char **argv) {
  Options o;
  auto value = [&](int &i) -> std::string {
    if (i + 1 >= argc)
      fail(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend")
      o.backend = value(i);
    else if (a == "--gpu")
      o.gpu = std::atoi(value(i).c_str());
    else if (a == "--device-kind")
      o.deviceKind = value(i);
    else if (a == "-o")
      o.output = value(i);
    else if (a == "--kernels")
      o.kernelLists.push_back(value(i));
    else if (a == "--measured")
      o.measured = value(i);
    else if (a == "--link-kind")
      o.linkKind = value(i);
    else if (a == "--quick")
      o.quick = true;
    else if (a == "--help" || a == "-h") {
      std::puts("usage: hetpar-profile [--backend cpu|cuda] [--gpu N] "
                "[--device-kind KIND] "
                "[--quick] [-o PROFILE.json] [--kernels LIST.txt ... "
                "--measured OUT.txt] "
                "[--link-kind KIND]\n(see docs/cost-model.md)");
      std::exit(0);
    } else
      fail("unknown option '" + a + "' (--help lists them)");
  }
  if (o.backend != "cpu" && o.backend != "cuda")
    fail("--backend must be cpu or cuda, got '" + o.backend + "'");
  if (o.output.empty() && o.kernelLists.empty())
    fail("nothing to do: give -o PROFILE.json and/or --kernels LIST.txt");
  if (!o.kernelLists.empty() && o.measured.empty())
    fail("--kernels needs --measured OUT.txt");
  if (!o.output.empty())
    checkOutputFolder("-o", o.output);
  if (!o.measured.empty())
    checkOutputFolder("--measured", o.measured);
  return o;
}

/// Times `k`, failing with the reason when the backend cannot run it.
double timeOf(Backend &b, const Kernel &k) {
  std::string why;
  auto t = b.time(k, why);
  if (!t)
    fail("cannot time '" + k.text() + "' on " + b.name() + ": " + why);
  std::fprintf(stderr, "  %-48s %12.3f us\n", k.text().c_str(), *t * 1e6);
  return *t;
}

struct LinkFit {
  double bandwidth = 0, latency = 0;
  std::vector<std::pair<double, double>> points; // bytes, seconds
};

#ifdef HETPAR_PROFILE_MPI
/// All-reduces of float32 buffers over all processes; a least-squares line
/// t = a + b n through (bytes, seconds), read with the ring formula
/// t = 2 (p - 1) alpha + 2 (p - 1) / p * n / B (docs/cost-model.md).
LinkFit measureAllReduce(int ranks, bool quick) {
  LinkFit fit;
  std::vector<double> sizes = {4e3, 64e3, 1e6, 4e6};
  if (!quick)
    sizes.push_back(64e6);
  for (double bytes : sizes) {
    size_t n = static_cast<size_t>(bytes / 4);
    std::vector<float> in(n, 1.0f), out(n);
    auto run = [&] {
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(n), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
    };
    auto now = [] { return MPI_Wtime(); };
    auto sync = [] { MPI_Barrier(MPI_COMM_WORLD); };
    // Every rank must run the same number of calls: fixed counts, no
    // adaptation.
    int inner = bytes < 1e6 ? 200 : 10;
    std::vector<double> samples;
    run();
    for (int s = 0; s < (quick ? 3 : 7); ++s) {
      sync();
      double t0 = now();
      for (int i = 0; i < inner; ++i)
        run();
      double t = (now() - t0) / inner, worst = 0;
      MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      samples.push_back(worst);
    }
    std::sort(samples.begin(), samples.end());
    fit.points.push_back({bytes, samples[samples.size() / 2]});
  }
  double n = fit.points.size(), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : fit.points) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  double a = (sy - b * sx) / n;
  fit.bandwidth = b > 0 ? 2.0 * (ranks - 1) / ranks / b : 0;
  // The line's intercept is fit mostly by the large sizes and can come out
  // at or below 0 (a few microseconds of noise on 4 MB): then the smallest
  // message's time less its bandwidth term, or, where that is not positive
  // either, its whole time (an upper bound) gives alpha.
  auto [small, tSmall] = fit.points.front();
  if (a <= 0)
    a = b > 0 && tSmall - b * small > 0 ? tSmall - b * small : tSmall;
  fit.latency = a / (2.0 * (ranks - 1));
  return fit;
}
#endif

} // namespace

int main(int argc, char **argv) {
  int rank = 0, ranks = 1;
#ifdef HETPAR_PROFILE_MPI
  // Only under mpirun: MPI_Init outside of it is harmless with Open MPI, but a
  // plain run need not load MPI at all.
  bool underMPI =
      std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
  if (underMPI) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  }
#endif
  Options o = parseArgs(argc, argv);

  std::unique_ptr<Backend> backend;
  if (o.backend == "cpu") {
    backend = createCPUBackend();
    if (!backend)
      fail("--backend cpu: this hetpar-profile was built without OpenBLAS");
  } else {
    std::string why;
    backend = createCUDABackend(o.gpu, why);
    if (!backend)
      fail("--backend cuda: " + why);
  }
  if (o.quick) {
    backend->samples = 3;
    backend->minSeconds = 0.002;
  }
  std::string device = backend->deviceName();
  if (o.deviceKind.empty())
    o.deviceKind = o.backend == "cpu" ? "CPU" : guessKind(device);
  if (o.deviceKind.empty())
    fail("cannot tell the catalog kind of '" + device +
         "': give --device-kind");

  LinkFit link;
#ifdef HETPAR_PROFILE_MPI
  if (ranks > 1) {
    if (o.backend != "cpu")
      fail("collectives are measured on the CPU backend (MPI) only");
    link = measureAllReduce(ranks, o.quick);
  }
  if (underMPI) {
    MPI_Finalize();
    if (rank != 0)
      return 0;
  }
#endif

  if (!o.output.empty()) {
    bool gpu = o.backend == "cuda";
    int64_t g = gpu ? (o.quick ? 4096 : 8192) : (o.quick ? 512 : 1024);
    int64_t e =
        gpu ? (o.quick ? 1 << 24 : 1 << 27) : (o.quick ? 1 << 21 : 1 << 24);
    int64_t rows = gpu ? 1 << 16 : (o.quick ? 1 << 11 : 1 << 14);
    std::fprintf(stderr, "hetpar-profile: %s backend, %s (%s)\n",
                 backend->name().c_str(), device.c_str(), o.deviceKind.c_str());
    std::vector<std::pair<std::string, double>> measurements;
    auto measure = [&](const Kernel &k) {
      double t = timeOf(*backend, k);
      measurements.push_back({k.text(), t});
      return t;
    };
    Kernel sgemm{"gemm", {g, g, g, 1, 4}};
    double matmul = sgemm.flops() / measure(sgemm);
    double tensorMatmul = 0;
    if (gpu) {
      Kernel hgemm{"gemm", {g, g, g, 1, 2}};
      tensorMatmul = hgemm.flops() / measure(hgemm);
    }
    Kernel add{"elementwise", {e, 4, 2, e, e}};
    double bandwidth = add.bytes() / measure(add);
    double launch = measure(Kernel{"elementwise", {1, 4, 1, 1}});
    std::map<std::string, double> byClass;
    for (auto [cls, k] : {std::pair<const char *, Kernel>{
                              "Reduction", {"reduce", {rows, 1024, 4}}},
                          {"Softmax", {"softmax", {rows, 1024, 4}}},
                          {"Normalization", {"layernorm", {rows, 1024, 4}}},
                          {"DataMovement", {"copy", {e * 8}}}})
      byClass[cls] = k.bytes() / measure(k);

    // Time by size, per op class (the cost model interpolates between points).
    std::map<std::string, std::vector<std::pair<double, double>>> curves;
    auto curve = [&](const std::string &cls, const Kernel &k, bool byFlops) {
      double t = measure(k);
      curves[cls].push_back({byFlops ? k.flops() : k.bytes(), t});
    };
    int step = o.quick ? 2 : 1;
    int64_t maxN = gpu ? 4096 : (o.quick ? 256 : 512);
    // From 8 (tiny GEMMs: the launch floor of the curve) to maxN.
    for (int64_t n = 8; n <= maxN; n *= (o.quick ? 4 : 2)) {
      curve("MatMul", Kernel{"gemm", {4 * n, n, n, 1, 4}}, true);
      if (gpu)
        curve("MatMulFloat16", Kernel{"gemm", {4 * n, n, n, 1, 2}}, true);
    }
    for (int k = 8; (int64_t(1) << k) <= e; k += step)
      curve("Elementwise",
            Kernel{"elementwise",
                   {int64_t(1) << k, 4, 2, int64_t(1) << k, int64_t(1) << k}},
            false);
    for (int k = 2; (int64_t(1) << k) <= rows; k += 2 * step) {
      curve("Reduction", Kernel{"reduce", {int64_t(1) << k, 1024, 4}}, false);
      curve("Softmax", Kernel{"softmax", {int64_t(1) << k, 1024, 4}}, false);
      curve("Normalization", Kernel{"layernorm", {int64_t(1) << k, 1024, 4}},
            false);
    }
    for (int k = 12; (int64_t(1) << k) <= e * 8; k += 2 * step)
      curve("DataMovement", Kernel{"copy", {int64_t(1) << k}}, false);

    std::string json = "{\n  \"backend\": " + jsonString(backend->name()) +
                       ",\n  \"device_name\": " + jsonString(device) + ",\n";
    json += "  \"devices\": {\n    " + jsonString(o.deviceKind) + ": {\n";
    json += "      \"matmul_flops\": " + number(matmul) + ",\n";
    if (tensorMatmul > 0)
      json += "      \"tensor_matmul_flops\": " + number(tensorMatmul) + ",\n";
    json += "      \"memory_bandwidth\": " + number(bandwidth) + ",\n";
    json += "      \"launch_overhead\": " + number(launch) + ",\n";
    json += "      \"bandwidth_by_class\": {";
    bool first = true;
    for (auto &[cls, bw] : byClass) {
      json += std::string(first ? "" : ",") + "\n        " + jsonString(cls) +
              ": " + number(bw);
      first = false;
    }
    json += "\n      },\n      \"curves\": {";
    first = true;
    for (auto &[cls, points] : curves) {
      std::sort(points.begin(), points.end());
      json += std::string(first ? "" : ",") + "\n        " + jsonString(cls) +
              ": [";
      for (size_t i = 0; i < points.size(); ++i)
        json += std::string(i ? ", " : "") + "[" + number(points[i].first) +
                ", " + number(points[i].second) + "]";
      json += "]";
      first = false;
    }
    json += "\n      }\n    }\n  },\n";
    if (link.bandwidth > 0) {
      json += "  \"links\": {\n    " + jsonString(o.linkKind) +
              ": {\"bandwidth\": " + number(link.bandwidth) +
              ", \"latency\": " + number(link.latency) +
              ", \"ranks\": " + std::to_string(ranks) + "}\n  },\n";
      for (auto [bytes, t] : link.points)
        measurements.push_back({"all_reduce " + number(bytes) + " bytes", t});
    }
    json += "  \"measurements\": {";
    first = true;
    for (auto &[what, t] : measurements) {
      json += std::string(first ? "" : ",") + "\n    " + jsonString(what) +
              ": " + number(t);
      first = false;
    }
    json += "\n  }\n}\n";
    writeFile(o.output, json);
    std::fprintf(stderr, "hetpar-profile: wrote %s\n", o.output.c_str());
  }

  if (!o.kernelLists.empty()) {
    std::string out;
    int timed = 0, skipped = 0;
    for (const std::string &path : o.kernelLists) {
      std::ifstream in(path);
      if (!in)
        fail("cannot read kernel list '" + path + "'");
      std::string line;
      for (int lineNo = 1; std::getline(in, line); ++lineNo) {
        Kernel k;
        if (!parseLine(line, path + ":" + std::to_string(lineNo), k))
          continue;
        std::string why;
        auto t = backend->time(k, why);
        if (!t) {
          out += "# not timed (" + why + "): " + line + "\n";
          ++skipped;
          continue;
        }
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.6e\t", *t);
        out += buf + line + "\n";
        ++timed;
      }
    }
    writeFile(o.measured, out);
    std::fprintf(stderr,
                 "hetpar-profile: timed %d kernels (%d not timed), wrote %s\n",
                 timed, skipped, o.measured.c_str());
  }
  return 0;
}
