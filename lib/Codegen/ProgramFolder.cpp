//===- ProgramFolder.cpp - write and build a compiled program folder ------===//

#include "CudaArchs.h"

#include "hetpar/Codegen/Codegen.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <ftw.h>
#include <mutex>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

using namespace hetpar::codegen;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

static llvm::Error writeFile(llvm::StringRef file, llvm::StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(file, ec);
  if (ec)
    return llvm::createStringError(ec, "cannot write '%s': %s",
                                   file.str().c_str(), ec.message().c_str());
  os << data;
  os.close();
  if (os.has_error())
    return llvm::createStringError(os.error(), "cannot write '%s': %s",
                                   file.str().c_str(),
                                   os.error().message().c_str());
  return llvm::Error::success();
}

/// What a missing or unreadable runtime header's error tells the user.
static constexpr const char *kRuntimeIncludeHint =
    "set HETPAR_RUNTIME_INCLUDE to the folder holding hetpar/device/";

static llvm::Error copyHeader(llvm::StringRef includeDir, llvm::StringRef rel,
                              llvm::StringRef destInclude) {
  llvm::SmallString<256> from(includeDir), to(destInclude);
  path::append(from, rel);
  path::append(to, rel);
  if (std::error_code ec = fs::create_directories(path::parent_path(to)))
    return llvm::createStringError(ec, "cannot create '%s'",
                                   path::parent_path(to).str().c_str());
  if (std::error_code ec = fs::copy_file(from, to))
    return llvm::createStringError(
        ec, "cannot copy the runtime header '%s' (%s); %s", from.c_str(),
        ec.message().c_str(), kRuntimeIncludeHint);
  return llvm::Error::success();
}

/// The headers a generated source includes, relative to `includeDir`:
/// every header of hetpar/device/ (hetpar_device.h and its parts; regular
/// files named *.h, not hidden ones such as an editor's lock file) and
/// hetpar/runtime/ProgramABI.h, in a stable order. Error: the folder cannot
/// be listed or holds no hetpar_device.h.
static llvm::Expected<std::vector<std::string>>
runtimeHeaders(llvm::StringRef includeDir) {
  std::vector<std::string> headers{"hetpar/runtime/ProgramABI.h"};
  llvm::SmallString<256> dir(includeDir);
  path::append(dir, "hetpar", "device");
  std::error_code ec;
  bool device = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = path::filename(it->path());
    if (path::extension(name) != ".h" || name.starts_with(".") ||
        !fs::is_regular_file(it->path()))
      continue;
    device |= name == "hetpar_device.h";
    headers.push_back(("hetpar/device/" + name).str());
  }
  if (ec)
    return llvm::createStringError(
        ec, "cannot list the runtime headers in '%s' (%s); %s", dir.c_str(),
        ec.message().c_str(), kRuntimeIncludeHint);
  if (!device)
    return llvm::createStringError(
        std::make_error_code(std::errc::no_such_file_or_directory),
        "no hetpar_device.h in '%s'; %s", dir.c_str(), kRuntimeIncludeHint);
  llvm::sort(headers);
  return headers;
}

/// Copies runtimeHeaders(includeDir) into `destInclude` (a program folder's
/// include/), so that its sources build without the HetPar tree.
static llvm::Error copyRuntimeHeaders(llvm::StringRef includeDir,
                                      llvm::StringRef destInclude) {
  auto headers = runtimeHeaders(includeDir);
  if (!headers)
    return headers.takeError();
  for (const std::string &h : *headers)
    if (auto err = copyHeader(includeDir, h, destInclude))
      return err;
  return llvm::Error::success();
}

/// Runs a compiler; on failure the error holds the command and the first
/// lines of its output.
static llvm::Error runBuild(llvm::StringRef program,
                            llvm::ArrayRef<std::string> args,
                            llvm::StringRef logFile, llvm::raw_ostream &log,
                            llvm::StringRef what, llvm::StringRef tool) {
  llvm::SmallVector<llvm::StringRef> argv{program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logFile, logFile};
  auto start = std::chrono::steady_clock::now();
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0,
                                     0, &message);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (rc == 0) {
    log << llvm::formatv("{0}: built {1} in {2:f1} s\n", tool, what, seconds);
    return llvm::Error::success();
  }
  std::string output;
  if (auto buf = llvm::MemoryBuffer::getFile(logFile)) {
    llvm::StringRef text = (*buf)->getBuffer();
    for (int i = 0; i < 20 && !text.empty(); ++i) {
      auto [first, rest] = text.split('\n');
      output += "  " + first.str() + "\n";
      text = rest;
    }
  }
  std::string cmd = program.str();
  for (const std::string &a : args)
    cmd += " " + a;
  return llvm::createStringError(
      std::errc::io_error, "building %s failed (%s):\n  %s\n%s",
      what.str().c_str(),
      message.empty() ? ("exit " + std::to_string(rc)).c_str()
                      : message.c_str(),
      cmd.c_str(), output.c_str());
}

/// The output folder as written: without trailing separators, and through a
/// symbolic link to a folder (the link stays, its target is replaced).
static std::string resolveOutDir(llvm::StringRef outDir) {
  std::string dir = outDir.str();
  while (dir.size() > 1 && path::is_separator(dir.back()))
    dir.pop_back();
  bool isLink = false;
  if (!fs::is_symlink_file(dir, isLink) && isLink) {
    llvm::SmallString<256> real;
    if (!fs::real_path(dir, real) && fs::is_directory(real))
      return std::string(real);
  }
  return dir;
}

llvm::Error
hetpar::codegen::checkOutputFolder(llvm::StringRef outDir,
                                   llvm::ArrayRef<std::string> inputs) {
  std::string dir = resolveOutDir(outDir);
  if (!fs::exists(dir))
    return llvm::Error::success();
  if (!fs::is_directory(dir))
    return llvm::createStringError(std::errc::not_a_directory,
                                   "'%s' exists and is not a folder",
                                   outDir.str().c_str());
  // Replacing OUT deletes what it holds: only ever an earlier program.
  llvm::SmallString<256> manifest(dir);
  path::append(manifest, "manifest.json");
  bool isProgram = false;
  if (auto buf = llvm::MemoryBuffer::getFile(manifest)) {
    if (auto json = llvm::json::parse((*buf)->getBuffer())) {
      if (auto *obj = json->getAsObject())
        isProgram = obj->getString("format") == "hetpar-program";
    } else {
      llvm::consumeError(json.takeError());
    }
  }
  std::error_code ec;
  bool empty = fs::directory_iterator(dir, ec) == fs::directory_iterator();
  if (!isProgram && !empty)
    return llvm::createStringError(
        std::errc::file_exists,
        "'%s' exists and is not a HetPar program folder (no manifest.json "
        "of one); compiling would delete what it holds: remove it or choose "
        "another -o",
        outDir.str().c_str());
  llvm::SmallString<256> realDir;
  if (fs::real_path(dir, realDir))
    return llvm::Error::success();
  for (const std::string &input : inputs) {
    llvm::SmallString<256> realInput;
    if (fs::real_path(input, realInput))
      continue;
    if (llvm::StringRef(realInput).starts_with((realDir + "/").str()))
      return llvm::createStringError(
          std::errc::file_exists,
          "'%s' holds '%s', which the compile reads; compiling would delete "
          "it: choose another -o",
          outDir.str().c_str(), input.c_str());
  }
  return llvm::Error::success();
}

/// The temporary folder of the compile in progress (or the topmost parent
/// folder the compile created for it), removed when the process
/// is interrupted (Ctrl-C, SIGTERM): the handler ends the process itself
/// (status 130, as a shell reports an interrupted command). The signal may run
/// on another thread while the main thread, whose compiler child died of the
/// same signal, cleans up too: whoever claims `cleanupState` first removes the
/// folder, and the handler exits only once it is gone (two concurrent
/// removals, or a removal cut short, left subfolders behind).
static std::string interruptedFolder;
static std::atomic<int> cleanupState{2}; // 0 armed, 1 removing, 2 done
static int removeEntry(const char *path, const struct stat *, int, FTW *) {
  ::remove(path);
  return 0; // keep going past failures
}
static void removeInterruptedFolder(int) {
  int armed = 0;
  if (cleanupState.compare_exchange_strong(armed, 1)) {
    // Builds run on several threads: one may have created a file while the
    // folder was being removed; remove again until the folder is gone (then
    // nothing can be created in it).
    struct stat st;
    for (int round = 0;
         round < 100 && ::lstat(interruptedFolder.c_str(), &st) == 0; ++round) {
      ::nftw(interruptedFolder.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
      if (::lstat(interruptedFolder.c_str(), &st) == 0)
        ::usleep(10000);
    }
    cleanupState = 2;
  }
  while (cleanupState.load() != 2)
    ::usleep(1000);
  std::_Exit(130);
}

/// Runs removeInterruptedFolder on SIGINT and SIGTERM with both blocked while
/// it runs. Not llvm::sys::SetInterruptFunction: LLVM restores the default
/// actions before it calls the function, and a second signal in between
/// (timeout(1) signals the process and then its group) ended the process
/// with the folder half there.
static void installInterruptCleanup() {
  struct sigaction action = {};
  action.sa_handler = removeInterruptedFolder;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  for (int sig : {SIGINT, SIGTERM})
    ::sigaction(sig, &action, nullptr);
}

std::string hetpar::codegen::findRuntimeIncludeDir(const char *argv0,
                                                   void *mainAddr) {
  if (const char *env = std::getenv("HETPAR_RUNTIME_INCLUDE"))
    return env;
  std::string exe = fs::getMainExecutable(argv0, mainAddr);
  llvm::SmallString<256> installed(path::parent_path(path::parent_path(exe)));
  path::append(installed, "include");
  llvm::SmallString<256> header(installed);
  path::append(header, "hetpar", "device", "hetpar_device.h");
  if (fs::exists(header))
    return std::string(installed);
  return HETPAR_SOURCE_RUNTIME_INCLUDE;
}

static std::string findNvcc(const CodegenOptions &opts) {
  if (!opts.nvcc.empty())
    return opts.nvcc;
  if (auto p = llvm::sys::findProgramByName("nvcc"))
    return *p;
  if (auto p = llvm::sys::findProgramByName("nvcc", {"/usr/local/cuda/bin"}))
    return *p;
  return "";
}

/// Creates the missing folders above `target` (an absolute path), as
/// `mkdir -p` would: `-o a/b` creates `a/`, as the plan-only compile does.
/// Returns the topmost folder it created ("" when none), which a failed
/// compile removes again.
static llvm::Expected<std::string> createParentFolders(llvm::StringRef target) {
  std::string top;
  for (llvm::StringRef p = path::parent_path(target);
       !p.empty() && !fs::exists(p); p = path::parent_path(p))
    top = p.str();
  if (top.empty())
    return std::string();
  llvm::StringRef parent = path::parent_path(target);
  if (std::error_code ec = fs::create_directories(parent))
    return llvm::createStringError(ec, "cannot create '%s': %s",
                                   parent.str().c_str(), ec.message().c_str());
  return top;
}

llvm::Error hetpar::codegen::writeProgramFolder(const DeviceProgram &program,
                                                llvm::StringRef outDir,
                                                llvm::StringRef model,
                                                const CodegenOptions &opts,
                                                llvm::raw_ostream &log) {
  return writeProgramFolder(llvm::ArrayRef(program), {0}, outDir, model, opts,
                            log);
}

std::string hetpar::codegen::dtypeName(mlir::Type t) {
  if (t.isF32())
    return "float32";
  if (t.isF16())
    return "float16";
  if (t.isBF16())
    return "bfloat16";
  if (t.isF64())
    return "float64";
  if (auto i = llvm::dyn_cast<mlir::IntegerType>(t)) {
    unsigned w = i.getWidth();
    if (w == 1)
      return "bool";
    if (w == 8 || w == 16 || w == 32 || w == 64)
      return (i.isUnsigned() ? "uint" : "int") + std::to_string(w);
  }
  return "";
}

namespace {
/// One build of a program's source: a compiler run whose library, on
/// success, is listed in the manifest entry `entry` under `kind`.
struct BuildJob {
  std::string program;
  std::vector<std::string> args;
  std::string logFile, what, library, kind;
  llvm::json::Object *entry;
};

/// The manifest's description of tensors at a program boundary.
llvm::json::Array describeTensors(llvm::ArrayRef<TensorDesc> ts) {
  llvm::json::Array a;
  for (const TensorDesc &t : ts) {
    llvm::json::Array shape;
    for (int64_t d : t.shape)
      shape.push_back(d);
    llvm::json::Object o{
        {"name", t.name}, {"dtype", t.dtype}, {"shape", std::move(shape)}};
    if (t.batchDim >= 0)
      o["batch_dim"] = t.batchDim;
    if (!t.boundWeight.empty())
      o["weight"] = t.boundWeight;
    a.push_back(std::move(o));
  }
  return a;
}

std::string commandLine(llvm::StringRef program,
                        llvm::ArrayRef<std::string> args) {
  std::string cmd = program.str();
  for (const std::string &a : args)
    cmd += " " + a;
  return cmd;
}

/// The file names one program of a folder uses: `stem`.cu, `stem`.cpu.so,
/// `stem`.cuda.so, its weights and weights index, and the stem of its build
/// logs.
struct ProgramNames {
  std::string stem, weights, index, log;
};

/// Writes `program`'s source, weights and weights index into the folder
/// (`file` maps a name to its path there), queues its builds on `jobs`, and
/// returns its manifest entry (without "libraries" filled: the builds add
/// them). `namedIndex`: the index names its data file (any other than
/// weights.bin: several devices, the evaluation step).
llvm::Expected<llvm::json::Object>
writeProgramFiles(const DeviceProgram &program, const ProgramNames &names,
                  bool namedIndex, const CodegenOptions &opts,
                  llvm::ArrayRef<int> cudaArchs,
                  llvm::function_ref<std::string(llvm::StringRef)> file,
                  std::vector<BuildJob> &jobs) {
  std::string source = names.stem + ".cu", cpuLib = names.stem + ".cpu.so",
              cudaLib = names.stem + ".cuda.so";
  if (auto err = writeFile(file(source), program.source))
    return std::move(err);
  if (auto err = writeFile(
          file(names.weights),
          llvm::StringRef(program.weights.data(), program.weights.size())))
    return std::move(err);
  std::string indexText = program.weightsIndex;
  if (namedIndex) {
    auto json = llvm::json::parse(indexText);
    if (!json)
      return json.takeError();
    if (auto *obj = json->getAsObject())
      (*obj)["file"] = names.weights;
    indexText.clear();
    llvm::raw_string_ostream(indexText)
        << llvm::formatv("{0:2}", *json) << "\n";
  }
  if (auto err = writeFile(file(names.index), indexText))
    return std::move(err);

  // The build commands, with paths relative to the program folder (as
  // manifest.json records them, so that a copy of OUT rebuilds anywhere)
  // or absolute (as run here). One device of several calls MPI
  // collectives: Open MPI's compiler wrapper adds its flags.
  std::string opt = "-O" + std::to_string(opts.optLevel);
  auto relative = [](llvm::StringRef name) { return name.str(); };
  std::string cxxName = program.multiDevice ? "mpicxx"
                        : opts.hostCompiler.empty()
                            ? std::string(HETPAR_GENERATED_CXX)
                            : opts.hostCompiler;
  // C++14 for the host build: the generated code and hetpar_device.h need
  // nothing newer, and C++17's <cmath> (the special functions) costs 0.17 s
  // of the 0.25 s a one-device program's header takes to parse (GCC 12).
  auto cpuArgs = [&](auto in) {
    // The kernels' math (hp_exp, hp_tanh, ...) is branch-free selects:
    // without -fno-trapping-math GCC will not if-convert them, and so not
    // vectorize the loops; without -fno-math-errno sqrtf and friends are
    // calls. Neither changes a value (programs never read errno or the
    // floating-point exception flags).
    std::vector<std::string> args{"-std=c++14", opt, "-fno-math-errno",
                                  "-fno-trapping-math"};
    if (!opts.cpuArch.empty())
      args.push_back("-march=" + opts.cpuArch);
    for (std::string a :
         {std::string("-fopenmp"), std::string("-fPIC"), std::string("-shared"),
          std::string("-w"), std::string("-x"), std::string("c++"),
          "-I" + in("include"), in(source), std::string("-o"), in(cpuLib),
          std::string("-lopenblas")})
      args.push_back(a);
    // OpenBLAS's OpenMP build, which shares libgomp's threads with the
    // program's loops (lib/Codegen/CMakeLists.txt).
    if (llvm::StringRef dir = HETPAR_OPENBLAS_LIB_DIR; !dir.empty()) {
      args.push_back(("-L" + dir).str());
      args.push_back(("-Wl,-rpath," + dir).str());
    }
    if (opts.hostCompiler.empty())
      for (llvm::StringRef flag :
           llvm::split(llvm::StringRef(HETPAR_GENERATED_CXXFLAGS), ' '))
        if (!flag.empty())
          args.push_back(flag.str());
    return args;
  };
  // The sanitizer build's CPU programs of several devices: mpicxx over its
  // clang, through `env OMPI_CXX=...` (the user's OMPI_CXX wins; nvcc's host
  // compiler, also mpicxx, stays Open MPI's default).
  std::vector<std::string> cpuEnv;
  if (program.multiDevice && llvm::StringRef(HETPAR_GENERATED_CXX) != "c++" &&
      !::getenv("OMPI_CXX"))
    cpuEnv.push_back("OMPI_CXX=" HETPAR_GENERATED_CXX);
  std::string archs;
  auto cudaArgs = [&](auto in) {
    std::vector<std::string> args{"-std=c++17", opt,  "-shared", "-Xcompiler",
                                  "-fPIC",      "-w", "-x",      "cu"};
    // MPI through Open MPI's wrapper as nvcc's host compiler.
    if (program.multiDevice) {
      args.push_back("-ccbin");
      args.push_back("mpicxx");
    }
    archs.clear();
    for (int a : cudaArchs) {
      args.push_back("-gencode");
      args.push_back(llvm::formatv("arch=compute_{0},code=sm_{0}", a).str());
      archs += (archs.empty() ? "" : ",") + ("sm_" + std::to_string(a));
    }
    for (std::string a : {"-I" + in("include"), in(source), std::string("-o"),
                          in(cudaLib), std::string("-lcublas"),
                          std::string("-lcublasLt"), std::string("-lcudnn")})
      args.push_back(a);
    return args;
  };
  // The builds run after every program's files are written, several at once.
  if (opts.buildCPU) {
    auto cxx = llvm::sys::findProgramByName(cxxName);
    if (!cxx)
      return llvm::createStringError(
          cxx.getError(), "host C++ compiler '%s' not found", cxxName.c_str());
    std::string prog = *cxx;
    std::vector<std::string> args = cpuArgs(file);
    if (!cpuEnv.empty()) {
      auto env = llvm::sys::findProgramByName("env");
      if (!env)
        return llvm::createStringError(env.getError(), "'env' not found");
      args.insert(args.begin(), prog);
      args.insert(args.begin(), cpuEnv.begin(), cpuEnv.end());
      prog = *env;
    }
    jobs.push_back({prog, std::move(args), file(names.log + "-cpu.log"),
                    "the CPU program (" + cpuLib + ")", cpuLib, "cpu",
                    nullptr});
  }
  if (opts.buildCUDA && !cudaArchs.empty()) {
    std::string nvcc = findNvcc(opts);
    if (nvcc.empty() && opts.requireCUDA)
      return llvm::createStringError(
          std::errc::no_such_file_or_directory,
          "the CUDA build needs nvcc, which is not on PATH or in "
          "/usr/local/cuda/bin");
    if (!nvcc.empty()) {
      std::vector<std::string> args = cudaArgs(file);
      jobs.push_back({nvcc, args, file(names.log + "-cuda.log"),
                      "the CUDA program (" + cudaLib + ", " + archs + ")",
                      cudaLib, "cuda", nullptr});
    }
  }
  llvm::json::Object build{{"cpu", commandLine(cxxName, cpuArgs(relative))}};
  if (!cudaArchs.empty())
    build["cuda"] = commandLine("nvcc", cudaArgs(relative));
  return llvm::json::Object{
      {"source", source},
      {"libraries", llvm::json::Object()},
      {"build", std::move(build)},
      {"arena_bytes", program.arenaBytes},
      {"arena_bytes_without_reuse", program.arenaBytesNoReuse},
      {"weights_bytes", program.weightsBytes},
      {"weights", names.weights},
      {"weights_index", names.index},
      {"kernels", program.kernels},
      {"library_calls", program.libraryCalls},
      {"fused_ops", program.fusedOps},
      {"inputs", describeTensors(program.inputs)},
      {"outputs", describeTensors(program.outputs)}};
}

/// Runs `jobs` on an LLVM thread pool, as many at once as there are cores
/// (every device of a plan has its own), and lists each built library in its
/// entry; returns the first failure. No build starts after a failure or once
/// an interrupt is removing the folder. `file` maps a name to its path in the
/// folder; `tool` prefixes the lines of `log`.
llvm::Error runBuilds(llvm::ArrayRef<BuildJob> jobs,
                      llvm::function_ref<std::string(llvm::StringRef)> file,
                      llvm::raw_ostream &log, llvm::StringRef tool) {
  std::mutex mutex;
  std::optional<llvm::Error> firstError;
  auto build = [&](const BuildJob &job) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (firstError || cleanupState.load() != 0)
        return;
    }
    std::string line;
    llvm::raw_string_ostream lineOS(line);
    llvm::Error err =
        runBuild(job.program, job.args, job.logFile, lineOS, job.what, tool);
    if (!err && !fs::exists(file(job.library)))
      err = llvm::createStringError(std::errc::io_error,
                                    "'%s' exited 0 but wrote no %s",
                                    job.program.c_str(), job.library.c_str());
    std::lock_guard<std::mutex> lock(mutex);
    log << line;
    if (err) {
      if (!firstError)
        firstError = std::move(err);
      else
        llvm::consumeError(std::move(err));
      return;
    }
    fs::remove(job.logFile);
    (*job.entry->getObject("libraries"))[job.kind] = job.library;
  };
  unsigned threads = std::max<unsigned>(
      1, std::min<size_t>(llvm::hardware_concurrency().compute_thread_count(),
                          jobs.size()));
  llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
  for (const BuildJob &job : jobs)
    pool.async([&build, &job] { build(job); });
  pool.wait();
  if (firstError)
    return std::move(*firstError);
  return llvm::Error::success();
}

/// Moves the finished folder `tmp` to `target`: an existing one is moved
/// aside first and removed only after the rename succeeded.
llvm::Error swapInFolder(llvm::StringRef tmp, const std::string &target,
                         llvm::StringRef outDir) {
  llvm::SmallString<256> old;
  bool hadOld = fs::exists(target);
  if (hadOld) {
    if (!fs::is_directory(target))
      return llvm::createStringError(std::errc::not_a_directory,
                                     "'%s' exists and is not a folder",
                                     outDir.str().c_str());
    old = target + ".old";
    fs::remove_directories(old);
    if (std::error_code ec = fs::rename(target, old))
      return llvm::createStringError(ec, "cannot replace '%s': %s",
                                     outDir.str().c_str(),
                                     ec.message().c_str());
  }
  if (std::error_code ec = fs::rename(tmp, target)) {
    if (hadOld)
      fs::rename(old, target);
    return llvm::createStringError(ec, "cannot create '%s': %s",
                                   outDir.str().c_str(), ec.message().c_str());
  }
  if (hadOld)
    fs::remove_directories(old);
  return llvm::Error::success();
}
} // namespace

llvm::Error hetpar::codegen::writeProgramFolder(
    llvm::ArrayRef<DeviceProgram> programs, llvm::ArrayRef<int64_t> deviceIds,
    llvm::StringRef outDir, llvm::StringRef model, const CodegenOptions &opts,
    llvm::raw_ostream &log, const PlanFiles &plan) {
  std::vector<const DeviceProgram *> pointers;
  for (const DeviceProgram &p : programs)
    pointers.push_back(&p);
  return writeProgramFolder(pointers, deviceIds, outDir, model, opts, log,
                            plan);
}

/// The architectures program `stem` (run by devices of `kinds`) is built
/// for: cudaArchsForKinds; when this compile builds the CUDA program, less
/// those the nvcc at hand cannot build, each left out with a warning on
/// `log`, and none left (no CUDA library) is an error when the CUDA build
/// is required (--targets=cuda). Without the build they all stay, for the
/// manifest's build command.
static llvm::Expected<std::vector<int>>
buildableCudaArchs(llvm::ArrayRef<std::string> kinds, llvm::StringRef stem,
                   const CodegenOptions &opts, llvm::raw_ostream &log) {
  std::vector<int> wanted = cudaArchsForKinds(kinds, opts), kept;
  if (!opts.buildCUDA)
    return wanted;
  std::string nvcc = findNvcc(opts);
  std::vector<int> known =
      nvcc.empty() ? std::vector<int>{} : nvccSupportedArchs(nvcc);
  for (int a : wanted) {
    if (known.empty() || llvm::is_contained(known, a)) {
      kept.push_back(a);
      continue;
    }
    std::string why = llvm::formatv(
        "{0} cannot build for sm_{1} ({2} GPUs; it builds sm_{3} and later)",
        nvcc, a, kindsOfArch(kinds, a), known.front());
    if (opts.requireCUDA && wanted.size() == 1)
      return llvm::createStringError(
          std::errc::not_supported,
          "%s: %s's CUDA program cannot be built; use an nvcc that "
          "supports sm_%d (CUDA 12 for Volta), or --targets=cpu",
          why.c_str(), stem.str().c_str(), a);
    log << opts.toolName << ": warning: " << why << ": " << stem << "'s "
        << (wanted.size() == 1
                ? "CUDA library is not built (hetpar-run's --backend "
                  "auto runs its CPU program there)"
                : "CUDA program leaves it out")
        << "\n";
  }
  if (kept.empty() && opts.requireCUDA)
    return llvm::createStringError(std::errc::not_supported,
                                   "%s has no GPU architecture nvcc can build",
                                   stem.str().c_str());
  return kept;
}

/// For each program, the index of an earlier one it is the same as (same
/// source, weights and index: data-parallel replicas of equal rows), or -1.
/// Such devices share the first one's source, build and weights file.
static std::vector<int>
findSamePrograms(llvm::ArrayRef<const DeviceProgram *> programs) {
  std::vector<int> sameAs(programs.size(), -1);
  for (size_t k = 0; k < programs.size(); ++k)
    for (size_t j = 0; j < k && sameAs[k] < 0; ++j)
      if (sameAs[j] < 0 &&
          (programs[j] == programs[k] ||
           (programs[j]->source == programs[k]->source &&
            programs[j]->weights == programs[k]->weights &&
            programs[j]->weightsIndex == programs[k]->weightsIndex)))
        sameAs[k] = static_cast<int>(j);
  return sameAs;
}

/// manifest.json without its "training" object: one device entry per id
/// (its program's `entries[k]`, then its stage, kind and batch rows from
/// `plan`), and the plan's microbatches, output device and graph inputs.
static llvm::json::Object
manifestOf(llvm::ArrayRef<int64_t> deviceIds,
           llvm::ArrayRef<std::unique_ptr<llvm::json::Object>> entries,
           llvm::StringRef model, const CodegenOptions &opts,
           const PlanFiles &plan) {
  llvm::json::Array devices;
  for (size_t k = 0; k < deviceIds.size(); ++k) {
    llvm::json::Object d{{"id", deviceIds[k]}};
    for (auto &kv : *entries[k])
      d.try_emplace(kv.first, kv.second);
    if (k < plan.stages.size() && plan.stages[k] >= 0)
      d["stage"] = plan.stages[k];
    if (k < plan.kinds.size())
      d["kind"] = plan.kinds[k];
    if (k < plan.batchRows.size())
      d["batch_rows"] =
          llvm::json::Array{plan.batchRows[k].first, plan.batchRows[k].second};
    devices.push_back(std::move(d));
  }
  llvm::json::Object manifest{{"format", "hetpar-program"},
                              {"version", 1},
                              {"model", path::filename(model).str()},
                              {"dtype", floatModeName(opts.floatMode).str()},
                              {"devices", std::move(devices)}};
  if (plan.microbatches > 1)
    manifest["microbatches"] = plan.microbatches;
  if (plan.outputDevice >= 0)
    manifest["output_device"] = plan.outputDevice;
  if (!plan.graphInputs.empty())
    manifest["graph_inputs"] = describeTensors(plan.graphInputs);
  return manifest;
}

llvm::Error hetpar::codegen::writeProgramFolder(
    llvm::ArrayRef<const DeviceProgram *> programs,
    llvm::ArrayRef<int64_t> deviceIds, llvm::StringRef outDir,
    llvm::StringRef model, const CodegenOptions &opts, llvm::raw_ostream &log,
    const PlanFiles &plan) {
  if (programs.empty() || programs.size() != deviceIds.size())
    return llvm::createStringError(std::errc::invalid_argument,
                                   "one device id per device program expected");
  if (auto err = checkOutputFolder(outDir, {}))
    return err;
  std::string target = resolveOutDir(outDir);
  // Next to outDir (same file system, so the final rename is atomic); an
  // absolute prefix, or LLVM would put a relative one under $TMPDIR.
  llvm::SmallString<256> prefix(target);
  fs::make_absolute(prefix);
  auto createdParents = createParentFolders(prefix);
  if (!createdParents)
    return createdParents.takeError();
  prefix += ".tmp";
  llvm::SmallString<256> tmp;
  if (std::error_code ec = fs::createUniqueDirectory(prefix, tmp))
    return llvm::createStringError(ec,
                                   "cannot create a folder next to '%s': %s",
                                   outDir.str().c_str(), ec.message().c_str());
  bool keep = false;
  // An interrupt removes the folders this compile created above `tmp` too.
  interruptedFolder =
      createdParents->empty() ? std::string(tmp) : *createdParents;
  cleanupState = 0;
  installInterruptCleanup();
  llvm::scope_exit cleanup([&] {
    int armed = 0;
    if (!cleanupState.compare_exchange_strong(armed, 1)) {
      // The interrupt handler is removing it: wait, or exiting now would
      // end that thread halfway.
      while (cleanupState.load() != 2)
        ::usleep(1000);
      return;
    }
    if (!keep) {
      fs::remove_directories(tmp);
      if (!createdParents->empty())
        fs::remove_directories(*createdParents);
    }
    cleanupState = 2;
  });
  auto file = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(tmp);
    path::append(p, name);
    return std::string(p);
  };
  if (auto err = copyRuntimeHeaders(opts.runtimeIncludeDir, file("include")))
    return err;

  bool single = programs.size() == 1;
  // Each program's manifest entry, at a stable address: its jobs point at it.
  std::vector<std::unique_ptr<llvm::json::Object>> entries;
  std::vector<BuildJob> jobs;
  auto add = [&](const DeviceProgram &program, const ProgramNames &names,
                 llvm::ArrayRef<std::string> kinds) -> llvm::Error {
    auto archs = buildableCudaArchs(kinds, names.stem, opts, log);
    if (!archs)
      return archs.takeError();
    size_t first = jobs.size();
    auto entry =
        writeProgramFiles(program, names, names.weights != "weights.bin", opts,
                          *archs, file, jobs);
    if (!entry)
      return entry.takeError();
    entries.push_back(std::make_unique<llvm::json::Object>(std::move(*entry)));
    for (size_t j = first; j < jobs.size(); ++j)
      jobs[j].entry = entries.back().get();
    return llvm::Error::success();
  };
  std::vector<int> sameAs = findSamePrograms(programs);
  for (auto [k, program, id] : llvm::enumerate(programs, deviceIds)) {
    if (sameAs[k] >= 0) {
      entries.push_back(std::make_unique<llvm::json::Object>());
      continue;
    }
    // One device keeps the plain names (weights.bin); several number them.
    std::string n = std::to_string(id);
    ProgramNames names{"device_" + n,
                       single ? "weights.bin" : "weights_" + n + ".bin",
                       single ? "weights.json" : "weights_" + n + ".json",
                       single ? "build" : "build-" + n};
    // The kinds of the devices that run this program (it and its copies).
    std::vector<std::string> kinds;
    for (size_t j = k; j < programs.size(); ++j)
      if ((j == k || sameAs[j] == static_cast<int>(k)) && j < plan.kinds.size())
        kinds.push_back(plan.kinds[j]);
    if (auto err = add(*program, names, kinds))
      return err;
  }
  if (plan.evalProgram)
    if (auto err =
            add(*plan.evalProgram,
                {"eval", "eval_weights.bin", "eval_weights.json", "build-eval"},
                plan.kinds))
      return err;
  if (auto err = runBuilds(jobs, file, log, opts.toolName))
    return err;
  for (size_t k = 0; k < programs.size(); ++k)
    if (sameAs[k] >= 0)
      *entries[k] = *entries[sameAs[k]];

  llvm::json::Object manifest =
      manifestOf(deviceIds, entries, model, opts, plan);
  for (const auto &[name, content] : plan.files)
    if (auto err = writeFile(file(name), content))
      return err;
  for (const auto &[name, source] : plan.copies)
    if (std::error_code ec = fs::copy_file(source, file(name)))
      return llvm::createStringError(ec,
                                     "cannot copy '%s' into the program: %s",
                                     source.c_str(), ec.message().c_str());
  if (!plan.training.empty()) {
    auto parsed = llvm::json::parse(plan.training);
    if (!parsed)
      return parsed.takeError();
    if (plan.evalProgram)
      if (auto *t = parsed->getAsObject())
        (*t)["eval"] = std::move(*entries.back());
    manifest["training"] = std::move(*parsed);
  }
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  if (auto err = writeFile(file("manifest.json"), text))
    return err;
  if (auto err = swapInFolder(tmp, target, outDir))
    return err;
  keep = true;
  return llvm::Error::success();
}
