//===- Codegen.h - one-device programs from the static onnx dialect -*- C++
//-*-===//
//
// Turns a fully static onnx-dialect function into a device program: one
// single-source file device_0.cu (generated kernels, cuBLAS / OpenBLAS GEMM
// calls and a host entry that runs the graph), the weights it reads
// (weights.bin with an index) and a manifest, then builds the source for the
// CPU (host C++ compiler, OpenBLAS, OpenMP) and, when nvcc is present, for
// CUDA. The runtime (runtime/, hetpar-run) loads the result.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_CODEGEN_CODEGEN_H
#define HETPAR_CODEGEN_CODEGEN_H

#include "hetpar/Support/FloatMode.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hetpar::codegen {

/// Storage and compute type of the model's float32 tensors: one enum with the
/// planner's compute dtype (hetpar/Support/FloatMode.h), also reachable by its
/// earlier names here.
using ::hetpar::FloatMode;
using ::hetpar::floatModeName;
using ::hetpar::parseFloatMode;

struct CodegenOptions {
  /// float32 tensors become float16 / bfloat16 in storage (weights and
  /// intermediates), computed in float32; graph inputs and outputs keep the
  /// model's dtypes (converted on entry and exit).
  FloatMode floatMode = FloatMode::F32;
  /// Build OUT/device_0.cpu.so with `hostCompiler`.
  bool buildCPU = true;
  /// Build OUT/device_0.cuda.so with nvcc when one is found (`nvcc`, or PATH,
  /// /usr/local/cuda/bin).
  bool buildCUDA = true;
  /// Fail when buildCUDA is set and no nvcc is found (the user asked for it).
  bool requireCUDA = false;
  /// The host C++ compiler of the CPU build; empty: the build's default,
  /// "c++", or in the sanitizer build (HETPAR_SANITIZE) its clang, which
  /// then also adds its sanitizer flags. Several devices build with Open
  /// MPI's mpicxx wrapper instead (OMPI_CXX picks the compiler under it).
  std::string hostCompiler;
  std::string nvcc;
  /// Optimization level of both builds (0-3).
  int optLevel = 2;
  /// The CPU build's -march: "native" (the compiling machine's extensions,
  /// AVX2 or AVX-512 where present) or a GCC/Clang CPU name such as
  /// x86-64, x86-64-v3 or znver4 for a program built to run elsewhere. A
  /// program refuses to start on a CPU that lacks an extension it was built
  /// for (hetpar_create). Empty: no -march (the compiler's default).
  std::string cpuArch = "native";
  /// Kernels that take an index from data (Gather, GatherElements, the
  /// losses' labels, ...) report the first one out of range, and hetpar_run
  /// fails naming the node and the value (docs/reliability.md). False
  /// (--unchecked-indices) drops the reports; the kernels still stay inside
  /// their buffers.
  bool checkIndices = true;
  /// float32 GEMMs on the GPU may round their inputs to TF32 on tensor cores
  /// (cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32; --allow-tf32, as PyTorch's
  /// torch.backends.cuda.matmul.allow_tf32): about 10 bits of mantissa in
  /// the products, float32 accumulation. False: CUBLAS_COMPUTE_32F, full
  /// float32. No effect on the CPU build or on 16-bit GEMMs.
  bool allowTF32 = false;
  /// Elementwise groups run inside the library kernels they finish or feed:
  /// as a GEMM's epilogue (an activation after a Gemm) and as a
  /// LayerNormalization's prologue (the residual Add before it). False
  /// (--fuse-epilogues=false): each group is a kernel of its own, which
  /// stores its result and the library kernel reads it back.
  bool fuseEpilogues = true;
  /// GPU architectures of the CUDA build (sm_80 = A100, sm_90 = H100/H200)
  /// when `cudaArchsGiven` (hetpar-compile --cuda-arch), for every device.
  /// Otherwise each device program is built for the compute capability of
  /// its devices' kinds (the `dist.mesh`'s kinds in the device catalogue: a
  /// T4's program for sm_75), and for these where a kind has none (a
  /// one-device program, the CPU kind). Architectures the nvcc at hand
  /// cannot build (CUDA 13 has no sm_70: V100) are left out with a warning;
  /// a program left with none has no CUDA library (an error when
  /// `requireCUDA`).
  std::vector<int> cudaArchs = {80, 90};
  bool cudaArchsGiven = false;
  /// Folder holding hetpar/device/hetpar_device.h and
  /// hetpar/runtime/ProgramABI.h (copied into OUT/include).
  std::string runtimeIncludeDir;
  /// The tool writing the program folder: the prefix of the lines it logs
  /// ("hetpar-compile: built the CPU program ... in 1.1 s").
  std::string toolName = "hetpar-compile";
};

/// The NumPy name of element type `t` as manifest.json writes dtypes
/// ("float32", "int64", "bool", ...); empty when the runtime has none.
std::string dtypeName(mlir::Type t);

/// A tensor at the program boundary, as manifest.json lists it.
struct TensorDesc {
  std::string name;
  std::string dtype; // numpy-style name: float32, int64, bool, ...
  std::vector<int64_t> shape;
  /// The dimension holding the batch (dist.batch_dim), -1 when none: the
  /// runtime cuts a step's inputs into microbatches and joins the outputs
  /// along it.
  int64_t batchDim = -1;
  /// An input of an evaluation step bound to the training program's weights
  /// tensor of this name (hetpar.bind_weight), empty otherwise: the runtime
  /// passes that tensor's device memory instead of an input buffer.
  std::string boundWeight;
};

/// Everything generated for one device before anything is written.
struct DeviceProgram {
  std::string source;        // device_0.cu
  std::vector<char> weights; // weights.bin
  std::string weightsIndex;  // weights.json
  std::vector<TensorDesc> inputs, outputs;
  int64_t arenaBytes = 0;        // peak of the liveness-based arena
  int64_t arenaBytesNoReuse = 0; // every intermediate in its own buffer
  int64_t weightsBytes = 0;
  int kernels = 0;      // generated kernels launched (fused groups count once)
  int libraryCalls = 0; // GEMM calls and library kernel launches
  int fusedOps = 0;     // elementwise ops folded into another op's kernel
  int epilogueOps = 0;  // elementwise ops run as a GEMM's epilogue
  int prologueOps = 0;  // elementwise ops run as a LayerNorm's prologue
  /// The function is one device's program of several (dist collectives):
  /// the CPU build needs MPI (mpicxx), the CUDA build NCCL (not yet).
  bool multiDevice = false;
};

/// Fails with one error per unsupported op (naming op and node) when `func`
/// holds an op, attribute or element type code generation cannot handle.
mlir::LogicalResult checkCodegenSupport(mlir::func::FuncOp func);

/// Generates the program of `func` (after checkCodegenSupport). Errors are
/// MLIR diagnostics at the op concerned.
mlir::FailureOr<DeviceProgram>
generateDeviceProgram(mlir::func::FuncOp func, const CodegenOptions &opts);

/// The folder holding hetpar/device/hetpar_device.h for generated programs:
/// $HETPAR_RUNTIME_INCLUDE, else `include/` of the install tree the running
/// tool (argv0; mainAddr: any function of the tool) belongs to, else the
/// source tree HetPar was built from.
std::string findRuntimeIncludeDir(const char *argv0, void *mainAddr);

/// Fails when compiling into `outDir` could destroy something: `outDir` is a
/// file, a folder that is neither empty nor an earlier program (no
/// manifest.json of format hetpar-program), or a folder holding one of
/// `inputs` (the model, its external data). A symbolic link to a folder is
/// checked (and later replaced) through the link.
llvm::Error checkOutputFolder(llvm::StringRef outDir,
                              llvm::ArrayRef<std::string> inputs);

/// Writes `program` into the folder `outDir` and builds it: manifest.json,
/// device_0.cu, include/, weights.bin, weights.json, device_0.cpu.so and
/// device_0.cuda.so. manifest.json records both build commands (paths relative
/// to the folder), so the source rebuilds elsewhere. Atomic: everything goes to
/// a temporary folder next to `outDir` that replaces it only when complete; on
/// error no `outDir` is left behind (an existing one is kept unchanged), also
/// when the process is interrupted. `outDir` must pass checkOutputFolder. `log`
/// receives one line per build step.
llvm::Error writeProgramFolder(const DeviceProgram &program,
                               llvm::StringRef outDir, llvm::StringRef model,
                               const CodegenOptions &opts,
                               llvm::raw_ostream &log);

/// What a plan adds to a multi-device folder.
struct PlanFiles {
  /// Microbatches per step: the runtime runs every device's program this
  /// many times per step (manifest.json's "microbatches").
  int64_t microbatches = 1;
  /// The device whose program returns the graph's outputs (the others return
  /// none); -1 when every device returns its own (a hand-written local form).
  int64_t outputDevice = -1;
  /// Per device (in program order): its pipeline stage and its kind, for the
  /// measured trace (hetpar-run --trace); empty when unknown.
  std::vector<int64_t> stages;
  std::vector<std::string> kinds;
  /// Per device (in program order), a data-parallel training step's rows of
  /// each batch: {offset, rows} (manifest "batch_rows"; docs/training.md);
  /// empty when every device takes the whole batch.
  std::vector<std::pair<int64_t, int64_t>> batchRows;
  /// Every graph input, in graph order, as a whole step takes it (the
  /// manifest's "graph_inputs"; each device takes those its stage reads);
  /// empty for a program that takes them all.
  std::vector<TensorDesc> graphInputs;
  /// Extra files written into the folder with the programs (plan.json,
  /// trace.json), name and content.
  std::vector<std::pair<std::string, std::string>> files;
  /// Files copied into the folder: name in the folder, source path (the
  /// source model of a training program, for hetpar-run --export-onnx).
  std::vector<std::pair<std::string, std::string>> copies;
  /// The manifest's "training" object as JSON text (docs/training.md); empty
  /// for an inference program.
  std::string training;
  /// A training program's evaluation step (hetpar-train-eval-mode), or null:
  /// written as eval.cu, eval_weights.bin and eval_weights.json, built with
  /// the device programs, and described by the "training" object's "eval"
  /// entry (the fields of a device entry, without "id").
  const DeviceProgram *evalProgram = nullptr;
};

/// Fills the placement entries of `files` from a partitioned module (the
/// local form), as the partition wrote them: `microbatches` from
/// `dist.microbatches` (1 when absent); per device of `deviceIds` (program
/// order) its stage (`dist.stage_id` on its function, -1 when absent) and
/// its kind (the `dist.mesh`'s, "unknown" when the mesh lacks the device);
/// `outputDevice`, the one device function that returns values (-1 when
/// none or several do: a local-io partition); `graphInputs`
/// (describeGraphInputs).
void describePlacement(mlir::ModuleOp module, llvm::ArrayRef<int64_t> deviceIds,
                       PlanFiles &files);

/// Fills `files.graphInputs` from the partitioned module's
/// `dist.graph_inputs` (left empty when the module has none); part of
/// describePlacement, and on its own for a training plan's folder.
void describeGraphInputs(mlir::ModuleOp module, PlanFiles &files);

/// The same for the programs of several devices (one per device id, in
/// manifest order = process rank): device_<id>.cu, weights_<id>.bin and
/// weights_<id>.json each, built with mpicxx when they call collectives.
/// Devices whose programs are the same (one object, or equal source and
/// weights: data-parallel replicas of equal rows) share the first one's
/// files and build.
llvm::Error writeProgramFolder(llvm::ArrayRef<const DeviceProgram *> programs,
                               llvm::ArrayRef<int64_t> deviceIds,
                               llvm::StringRef outDir, llvm::StringRef model,
                               const CodegenOptions &opts,
                               llvm::raw_ostream &log,
                               const PlanFiles &plan = {});
llvm::Error writeProgramFolder(llvm::ArrayRef<DeviceProgram> programs,
                               llvm::ArrayRef<int64_t> deviceIds,
                               llvm::StringRef outDir, llvm::StringRef model,
                               const CodegenOptions &opts,
                               llvm::raw_ostream &log,
                               const PlanFiles &plan = {});

} // namespace hetpar::codegen

#endif // HETPAR_CODEGEN_CODEGEN_H
