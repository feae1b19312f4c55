//===- ProgramFolder.cpp - write and build a compiled program folder ------===//

#include "hetpar/Codegen/Codegen.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

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
        ec,
        "cannot copy the runtime header '%s' (%s); set "
        "HETPAR_RUNTIME_INCLUDE to the folder holding hetpar/device/",
        from.c_str(), ec.message().c_str());
  return llvm::Error::success();
}

/// Runs a compiler; on failure the error holds the command and the first
/// lines of its output.
static llvm::Error runBuild(llvm::StringRef program,
                            llvm::ArrayRef<std::string> args,
                            llvm::StringRef logFile, llvm::raw_ostream &log,
                            llvm::StringRef what) {
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
    log << llvm::formatv("hetpar-compile: built {0} in {1:f1} s\n", what,
                         seconds);
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

static std::string findNvcc(const CodegenOptions &opts) {
  if (!opts.nvcc.empty())
    return opts.nvcc;
  if (auto p = llvm::sys::findProgramByName("nvcc"))
    return *p;
  if (auto p = llvm::sys::findProgramByName("nvcc", {"/usr/local/cuda/bin"}))
    return *p;
  return "";
}

llvm::Error hetpar::codegen::writeProgramFolder(const DeviceProgram &program,
                                                llvm::StringRef outDir,
                                                llvm::StringRef model,
                                                const CodegenOptions &opts,
                                                llvm::raw_ostream &log) {
  // Next to outDir (same file system, so the final rename is atomic); an
  // absolute prefix, or LLVM would put a relative one under $TMPDIR.
  llvm::SmallString<256> prefix(outDir);
  fs::make_absolute(prefix);
  prefix += ".tmp";
  llvm::SmallString<256> tmp;
  if (std::error_code ec = fs::createUniqueDirectory(prefix, tmp))
    return llvm::createStringError(ec,
                                   "cannot create a folder next to '%s': %s",
                                   outDir.str().c_str(), ec.message().c_str());
  bool keep = false;
  auto cleanup = llvm::make_scope_exit([&] {
    if (!keep)
      fs::remove_directories(tmp);
  });
  auto file = [&](llvm::StringRef name) {
    llvm::SmallString<256> p(tmp);
    path::append(p, name);
    return std::string(p);
  };

  if (auto err = writeFile(file("device_0.cu"), program.source))
    return err;
  if (auto err = writeFile(
          file("weights.bin"),
          llvm::StringRef(program.weights.data(), program.weights.size())))
    return err;
  if (auto err = writeFile(file("weights.json"), program.weightsIndex))
    return err;
  for (llvm::StringRef h :
       {"hetpar/device/hetpar_device.h", "hetpar/runtime/ProgramABI.h"})
    if (auto err = copyHeader(opts.runtimeIncludeDir, h, file("include")))
      return err;

  // The build commands, with paths relative to the program folder (as
  // manifest.json records them, so that a copy of OUT rebuilds anywhere) or
  // absolute (as run here).
  std::string opt = "-O" + std::to_string(opts.optLevel);
  auto cpuArgs = [&](auto in) {
    return std::vector<std::string>{"-std=c++17",
                                    opt,
                                    "-fopenmp",
                                    "-fPIC",
                                    "-shared",
                                    "-w",
                                    "-x",
                                    "c++",
                                    "-I" + in("include"),
                                    in("device_0.cu"),
                                    "-o",
                                    in("device_0.cpu.so"),
                                    "-lopenblas"};
  };
  std::string archs;
  auto cudaArgs = [&](auto in) {
    std::vector<std::string> args{"-std=c++17", opt,  "-shared", "-Xcompiler",
                                  "-fPIC",      "-w", "-x",      "cu"};
    archs.clear();
    for (int a : opts.cudaArchs) {
      args.push_back("-gencode");
      args.push_back(llvm::formatv("arch=compute_{0},code=sm_{0}", a).str());
      archs += (archs.empty() ? "" : ",") + ("sm_" + std::to_string(a));
    }
    for (std::string a :
         {"-I" + in("include"), in("device_0.cu"), std::string("-o"),
          in("device_0.cuda.so"), std::string("-lcublas")})
      args.push_back(a);
    return args;
  };
  auto relative = [](llvm::StringRef name) { return name.str(); };
  auto command = [](llvm::StringRef program, llvm::ArrayRef<std::string> args) {
    std::string cmd = program.str();
    for (const std::string &a : args)
      cmd += " " + a;
    return cmd;
  };
  llvm::json::Object libraries;
  if (opts.buildCPU) {
    auto cxx = llvm::sys::findProgramByName(opts.hostCompiler);
    if (!cxx)
      return llvm::createStringError(cxx.getError(),
                                     "host C++ compiler '%s' not found",
                                     opts.hostCompiler.c_str());
    if (auto err = runBuild(*cxx, cpuArgs(file), file("build-cpu.log"), log,
                            "the CPU program (device_0.cpu.so)"))
      return err;
    fs::remove(file("build-cpu.log"));
    libraries["cpu"] = "device_0.cpu.so";
  }
  if (opts.buildCUDA) {
    std::string nvcc = findNvcc(opts);
    if (nvcc.empty() && opts.requireCUDA)
      return llvm::createStringError(
          std::errc::no_such_file_or_directory,
          "the CUDA build needs nvcc, which is not on PATH or in "
          "/usr/local/cuda/bin");
    if (!nvcc.empty()) {
      std::vector<std::string> args = cudaArgs(file);
      if (auto err =
              runBuild(nvcc, args, file("build-cuda.log"), log,
                       "the CUDA program (device_0.cuda.so, " + archs + ")"))
        return err;
      fs::remove(file("build-cuda.log"));
      libraries["cuda"] = "device_0.cuda.so";
    }
  }
  llvm::json::Object build{
      {"cpu", command(opts.hostCompiler, cpuArgs(relative))},
      {"cuda", command("nvcc", cudaArgs(relative))}};

  auto tensors = [](llvm::ArrayRef<TensorDesc> ts) {
    llvm::json::Array a;
    for (const TensorDesc &t : ts) {
      llvm::json::Array shape;
      for (int64_t d : t.shape)
        shape.push_back(d);
      a.push_back(llvm::json::Object{
          {"name", t.name}, {"dtype", t.dtype}, {"shape", std::move(shape)}});
    }
    return a;
  };
  llvm::json::Object device{
      {"id", 0},
      {"source", "device_0.cu"},
      {"libraries", std::move(libraries)},
      {"build", std::move(build)},
      {"arena_bytes", program.arenaBytes},
      {"arena_bytes_without_reuse", program.arenaBytesNoReuse},
      {"weights_bytes", program.weightsBytes},
      {"weights", "weights.bin"},
      {"weights_index", "weights.json"},
      {"kernels", program.kernels},
      {"library_calls", program.libraryCalls},
      {"fused_ops", program.fusedOps},
      {"inputs", tensors(program.inputs)},
      {"outputs", tensors(program.outputs)}};
  llvm::json::Object manifest{
      {"format", "hetpar-program"},
      {"version", 1},
      {"model", path::filename(model).str()},
      {"dtype", floatModeName(opts.floatMode).str()},
      {"devices", llvm::json::Array{std::move(device)}}};
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  if (auto err = writeFile(file("manifest.json"), text))
    return err;

  // Swap the finished folder in: an existing outDir is moved aside first and
  // removed only after the rename succeeded.
  llvm::SmallString<256> old;
  bool hadOld = fs::exists(outDir);
  if (hadOld) {
    if (!fs::is_directory(outDir))
      return llvm::createStringError(std::errc::not_a_directory,
                                     "'%s' exists and is not a folder",
                                     outDir.str().c_str());
    old = (outDir + ".old").str();
    fs::remove_directories(old);
    if (std::error_code ec = fs::rename(outDir, old))
      return llvm::createStringError(ec, "cannot replace '%s': %s",
                                     outDir.str().c_str(),
                                     ec.message().c_str());
  }
  if (std::error_code ec = fs::rename(tmp, outDir)) {
    if (hadOld)
      fs::rename(old, outDir);
    return llvm::createStringError(ec, "cannot create '%s': %s",
                                   outDir.str().c_str(), ec.message().c_str());
  }
  keep = true;
  if (hadOld)
    fs::remove_directories(old);
  return llvm::Error::success();
}
