//===- Runtime.h - Load and run a compiled HetPar program -------*- C++ -*-===//
//
// The native runtime: loads the output folder of hetpar-compile (manifest.json,
// weights.bin, weights.json and the per-device shared libraries that implement
// ProgramABI.h), checks it, and runs it on host tensors. Also reads and writes
// NumPy .npy files, the format of hetpar-run's inputs and outputs.
//
// Plain C++17; no MLIR, LLVM or CUDA dependency (the backend comes in with the
// program's library, loaded with dlopen). No function here throws or aborts:
// every failure is a Status with a one-line message.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_RUNTIME_RUNTIME_H
#define HETPAR_RUNTIME_RUNTIME_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetpar::rt {

/// The result of an operation: success, or failure with a one-line message
/// (no trailing newline, no "error:" prefix).
class [[nodiscard]] Status {
public:
  static Status ok() { return Status(true, {}); }
  static Status error(std::string message) {
    return Status(false, std::move(message));
  }
  /// A failure that another device of a multi-device run caused and reports
  /// itself (this device only stopped with it).
  static Status peerFailure(std::string message) {
    Status s(false, std::move(message));
    s.peer_ = true;
    return s;
  }
  /// The same kind of status with `prefix` before its message.
  Status prefixed(const std::string &prefix) const {
    Status s = *this;
    if (!ok_)
      s.message_ = prefix + message_;
    return s;
  }
  bool isOk() const { return ok_; }
  bool isPeerFailure() const { return peer_; }
  /// Empty on success.
  const std::string &message() const { return message_; }

private:
  Status(bool ok, std::string message)
      : ok_(ok), message_(std::move(message)) {}
  bool ok_;
  bool peer_ = false;
  std::string message_;
};

/// Element types of program inputs, outputs and weights.
enum class DType {
  Float32,
  Float16,
  BFloat16,
  Float64,
  Int64,
  Int32,
  Int16,
  Int8,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Bool, // one byte per element
};

/// The dtype named `name` ("float32", "float16", "bfloat16", "float64",
/// "int64", "int32", "int16", "int8", "uint8", "uint16", "uint32", "uint64",
/// "bool"); nullopt for any
/// other string.
std::optional<DType> dtypeFromName(std::string_view name);
/// The manifest name of `dtype`, e.g. "float32".
const char *dtypeName(DType dtype);
/// Bytes per element of `dtype` (1 for bool).
size_t dtypeSize(DType dtype);

/// "[2,3]" for shape {2, 3}, "[]" for a scalar.
std::string formatShape(const std::vector<int64_t> &shape);
/// The number of elements of `shape` (1 for a scalar, 0 when a dimension is
/// 0); nullopt when a dimension is negative or the product overflows int64.
std::optional<int64_t> shapeElements(const std::vector<int64_t> &shape);

/// A graph input or output as the manifest lists it.
struct TensorInfo {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  /// The dimension that holds the batch (manifest "batch_dim"), -1 when the
  /// tensor has none: a step's inputs are cut into microbatches along it and
  /// the microbatches' outputs joined along it.
  int64_t batchDim = -1;
  /// An input of a training program's evaluation step that reads the
  /// training step's weights tensor of this name (manifest "weight"): no
  /// buffer of its own, see Program::bindInput. Empty for a plain input.
  std::string boundWeight;
};

/// A dense row-major tensor in host memory, little-endian elements.
struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data; // numElements() * dtypeSize(dtype) bytes

  /// The product of the dimensions (1 for a scalar); assumes a valid shape.
  int64_t numElements() const;
  /// numElements() * dtypeSize(dtype).
  size_t numBytes() const;
};

/// Cuts `t` into `parts` equal pieces along dimension `dim` (a step's input
/// into microbatches). Errors when the extent is not divisible.
Status splitAlong(const HostTensor &t, int64_t dim, size_t parts,
                  std::vector<HostTensor> &out);
/// Joins `pieces` (same dtype, equal shapes but along `dim`) along `dim`.
Status joinAlong(const std::vector<HostTensor> &pieces, int64_t dim,
                 HostTensor &out);

/// Element `i` of `t` as a double (float16 and bfloat16 decoded exactly; bool
/// as 0 or 1). `i` must be below t.numElements().
double elementAsDouble(const HostTensor &t, size_t i);

/// How far `got` is from a reference.
struct Comparison {
  bool match = false;     // shapes equal and every element within tolerance
  std::string detail;     // why not, or the largest error
  double maxAbsError = 0; // max |got - ref|
  int64_t mismatches = 0; // elements outside atol + rtol * |ref|
};

/// Compares `got` with `ref` element by element: floating-point elements
/// match when |got - ref| <= atol + rtol * |ref| (numpy.allclose; NaN matches
/// NaN, an infinity matches the same infinity), integers and bools exactly.
/// Shapes must be equal; dtypes may differ (a bfloat16 output against its
/// uint16 bits from NumPy compares bits).
Comparison compareTensors(const HostTensor &got, const HostTensor &ref,
                          double rtol, double atol);

/// Reads the NumPy .npy file at `path` (format versions 1.0, 2.0 and 3.0)
/// into `out`. Accepts little-endian (or byte-order-free) descrs '<f4', '<f2',
/// '<f8', '<i8', '<i4', '<i2', '|i1', '|u1', '<u2', '<u4', '<u8', '|b1'
/// (and aliases such as
/// '<u1', '=f4'), any shape including () and 0-size. Errors (each naming the
/// file): unreadable file, bad magic, unsupported version, malformed header,
/// fortran_order True, big-endian or unsupported descr, truncated data.
/// `out` is unchanged on failure.
Status readNpy(const std::string &path, HostTensor &out);

/// Errors unless the folder of the file `path` exists and may be written,
/// so that a tool refuses an output it cannot write before the work, not
/// after it (the write itself stays atomic). `flag` names the option in the
/// error: "FLAG 'PATH': the folder 'DIR' does not exist", or "...: cannot
/// write in 'DIR': REASON".
Status checkOutputFolder(const std::string &flag, const std::string &path);

/// Writes `tensor` to `path` as a .npy file, format 1.0, byte for byte what
/// numpy.save writes for the same C-contiguous array. Atomic: the data goes to
/// a temporary file next to `path` that is renamed over it. bfloat16 is
/// written as its raw bits with dtype uint16 (NumPy has no bfloat16; this is
/// what onnx.numpy_helper does). Errors: data size not matching the shape, I/O
/// failures; they name `nameInErrors` when given (a file the caller renames
/// `path` to), else `path`.
Status writeNpy(const std::string &path, const HostTensor &tensor,
                const std::string &nameInErrors = {});

/// One device of a program's manifest: its id, pipeline stage (-1 when not
/// given) and kind ("" when not given). Rank r of a launcher runs the r-th.
struct DeviceInfo {
  int64_t id = 0, stage = -1;
  std::string kind;
};

/// The devices of the program in `outDir` (manifest.json's devices, in rank
/// order), and the rank of this process when a launcher (mpirun, srun)
/// started it: HETPAR_DEVICE, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or
/// SLURM_PROCID; -1 without one. Errors name the manifest and what is wrong.
Status programDevices(const std::string &outDir,
                      std::vector<DeviceInfo> &devices, int64_t &rank);

struct ProgramABIFunctions;

/// A tensor of weights.bin as weights.json lists it.
struct WeightTensor {
  std::string name;
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  uint64_t offset = 0; // bytes from the start of weights.bin
  uint64_t bytes = 0;  // elements * dtypeSize(dtype)
  /// "constant" (also when weights.json gives none), "param", "buffer",
  /// "optimizer", "step" or "state" (docs/training.md).
  std::string role = "constant";
  /// Optimizer state: the parameter it belongs to ("" otherwise).
  std::string of;
  /// ZeRO-1 optimizer state: the first element of the flattened parameter
  /// `of` that this device's shard holds; -1 when the state is whole.
  int64_t shardOffset = -1;
  /// Tensor parallelism (weights.json "tensor_shard"; a param or buffer):
  /// this tensor is indices [tensorStart, tensorStart + shape[tensorDim]) of
  /// dimension `tensorDim` of the whole parameter, of shape `wholeShape`.
  /// tensorDim is -1 when the tensor is whole.
  int64_t tensorDim = -1, tensorStart = 0;
  std::vector<int64_t> wholeShape;
  /// Zero at every step boundary (weights.json "zero_between_steps":
  /// gradient accumulation's buffers and counter): resuming from another
  /// plan's checkpoint, which does not hold it, starts it at zero.
  bool zeroBetweenSteps = false;
};

/// What a program folder says about its weights, read without the weights
/// data or the program libraries: the weights index (weights.json) of every
/// device, in the manifest's order, and the training program's source model
/// copy (training.model, relative to the folder; "" when none).
struct ProgramWeights {
  std::vector<std::vector<WeightTensor>> devices;
  std::string model;
};

/// Reads the ProgramWeights of the program in `outDir`. Errors name the
/// manifest or index and what is wrong.
Status readProgramWeights(const std::string &outDir, ProgramWeights &out);

/// The manifest's "training" object (docs/training.md): present only in a
/// training program, whose hetpar_run is one optimizer step.
struct TrainingInfo {
  bool present = false;
  std::string loss;      // "cross-entropy", "mse", "output" or ""
  std::string labels;    // the labels input, "" when none
  std::string model;     // the source model copy, relative to OUT; "" if none
  int64_t batchSize = 0; // samples per call of the program (at least 1)
  /// Calls (microbatches) per optimizer step: gradient accumulation. A step
  /// takes batchSize * microbatches samples.
  int64_t microbatches = 1;
  /// "float32", "bfloat16" or "float16": the compute dtype (docs/training.md).
  std::string dtype = "float32";
  /// Dynamic loss scaling (float16): the program holds the scale in its
  /// "state" global hetpar.loss_scale and skips steps that overflow.
  bool dynamicLossScale = false;
  int64_t tokensPerSample = 0;
  /// The rows of each batch this process's program takes: [batchOffset,
  /// batchOffset + batchRows) of the batch_size samples of a call. A
  /// data-parallel replica's (its device entry's "batch_rows"); the whole
  /// batch (0, batch_size) otherwise.
  int64_t batchOffset = 0, batchRows = 0;
  /// Microbatches one call runs (a pipeline's step: training
  /// "call_microbatches"): the call's batch_size samples are that many
  /// microbatches, and the program takes [batchOffset, batchOffset +
  /// batchRows) of each, stacked on axis 0 (batchRows * callMicrobatches
  /// rows).
  int64_t callMicrobatches = 1;
};

/// Which program of a folder Program::load loads.
enum class ProgramPart {
  Step, ///< the device program (devices[rank])
  Eval, ///< a training program's evaluation step (training.eval)
};

/// A loaded device program: its library, backend context, device arena,
/// weights (uploaded and checksummed) and cached input/output buffers.
/// Not copyable; destroying it frees the device memory, destroys the backend
/// context and unloads the library.
class Program {
public:
  /// Loads the program in the hetpar-compile output folder `outDir`.
  /// `backend` is "cpu", "cuda" or "auto" (the CUDA library when the manifest
  /// lists one and its hetpar_create succeeds, else the CPU library).
  /// Parses OUT/manifest.json (version 1, one device for now), dlopens the
  /// device library (a relative library path is relative to `outDir`), checks
  /// the ABI version and that arena bytes, weights bytes and input/output
  /// counts match the manifest, creates the backend context, allocates the
  /// arena and the input/output buffers, reads weights.bin and checks its size
  /// and every tensor's CRC-32 from weights.json, and uploads the weights.
  /// On failure `out` is left empty and the message names the file and field
  /// (or tensor) at fault.
  ///
  /// A program of several devices runs one process per device (mpirun, srun):
  /// process rank r loads the manifest's devices[r] (the plan's mesh order).
  ///
  /// `part` Eval loads the evaluation step of a training program instead
  /// (the manifest's training.eval entry, one device's program of the whole
  /// batch, also in a data-parallel folder; docs/training.md): its bound
  /// inputs get no buffer until bindInput.
  static Status load(const std::string &outDir, const std::string &backend,
                     std::unique_ptr<Program> &out,
                     ProgramPart part = ProgramPart::Step);
  ~Program();
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  /// Graph inputs and outputs, in graph order, as the manifest lists them.
  const std::vector<TensorInfo> &inputs() const { return inputs_; }
  const std::vector<TensorInfo> &outputs() const { return outputs_; }
  /// "cpu" or "cuda": the library actually loaded.
  const std::string &backend() const { return backend_; }
  /// With backend "auto" on a program that has a CUDA library but fell back
  /// to the CPU: why (e.g. "no CUDA device"); empty otherwise.
  const std::string &fallbackReason() const { return fallbackReason_; }
  /// Path of the loaded device library.
  const std::string &libraryPath() const { return libraryPath_; }
  /// Number of devices in the manifest. A program of several runs one
  /// process per device (mpirun, srun): this one loaded devices[rank] (rank
  /// from HETPAR_DEVICE, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or
  /// SLURM_PROCID), whose id is `deviceId()`.
  size_t numDevices() const { return numDevices_; }
  int64_t deviceId() const { return deviceId_; }
  /// Microbatches per step (manifest "microbatches", 1 by default): each run
  /// of the program is one microbatch; a step runs it this many times.
  int64_t microbatches() const { return microbatches_; }
  /// The device that returns the graph's outputs (manifest "output_device"),
  /// or -1 when every device returns its own.
  int64_t outputDevice() const { return outputDevice_; }
  /// Every device of the manifest, in rank order.
  using DeviceInfo = hetpar::rt::DeviceInfo;
  const std::vector<DeviceInfo> &devices() const { return devices_; }
  /// A whole step's inputs and outputs: inputs()/outputs() with the batch
  /// dimension `microbatches()` times larger.
  std::vector<TensorInfo> stepInputs() const;
  std::vector<TensorInfo> stepOutputs() const;
  /// checkInputs against stepInputs().
  Status checkStepInputs(const std::vector<HostTensor> &inputs) const;
  /// The graph's inputs in graph order, as one step takes them (the whole
  /// batch): what a user gives hetpar-run, on every device alike. A device
  /// of a partitioned program takes those its stage reads (inputs(), under
  /// the same names; the manifest's "graph_inputs" lists them all); any
  /// other program takes all of them (stepInputs()).
  const std::vector<TensorInfo> &graphInputs() const { return graphInputs_; }
  /// checkInputs against graphInputs(): every device finds the same error.
  Status checkGraphInputs(const std::vector<HostTensor> &inputs) const;
  /// This device's inputs (inputs() order, a whole step's) out of one step's
  /// graph inputs `graphInputs` (graphInputs() order; checkGraphInputs
  /// accepted them); a missing one comes back empty.
  std::vector<HostTensor>
  programInputsOf(std::vector<HostTensor> graphInputs) const;
  /// The program folder `load` was given.
  const std::string &outDir() const { return outDir_; }
  /// The manifest's "training" object (present = false in an inference
  /// program).
  const TrainingInfo &training() const { return training_; }
  /// Every tensor of weights.json, in its order, with its role.
  const std::vector<WeightTensor> &weightTensors() const {
    return weightTensors_;
  }
  /// Copies `bytes` bytes at byte `offset` of the device weights buffer into
  /// host memory at `dst` (a training program's parameters and state).
  /// Errors: a range outside weightsBytes(), a failed download.
  Status readWeights(uint64_t offset, void *dst, uint64_t bytes);
  /// Copies `bytes` bytes from `src` to byte `offset` of the device weights
  /// buffer (a checkpoint's tensors). Errors as readWeights.
  Status writeWeights(uint64_t offset, const void *src, uint64_t bytes);
  /// Device bytes of the intermediate arena and of the weights.
  uint64_t arenaBytes() const { return arenaBytes_; }
  uint64_t weightsBytes() const { return weightsBytes_; }

  /// Runs the graph once: checkInputs, uploadInputs, runDevice,
  /// downloadOutputs. `outputs` receives one tensor per graph output.
  Status run(const std::vector<HostTensor> &inputs,
             std::vector<HostTensor> &outputs);

  /// Checks the count, dtype, shape and data size of `inputs` against the
  /// manifest, e.g. "input 1 'mask': shape [2,3] does not match the model's
  /// [1,3]".
  Status checkInputs(const std::vector<HostTensor> &inputs) const;
  /// checkInputs, then copies the inputs into the cached device buffers.
  Status uploadInputs(const std::vector<HostTensor> &inputs);
  /// Copies host tensor `t` into input i's device buffer, after the checks
  /// of checkInputs for that input. Errors also for a bound input.
  Status uploadInput(size_t i, const HostTensor &t);
  /// Makes input i (one with a boundWeight) read `device` (memory of this
  /// program's backend holding that input's bytes, e.g. weightsAt of the
  /// training step loaded in the same process) instead of a buffer.
  Status bindInput(size_t i, void *device);
  /// The device address of byte `offset` of the weights buffer; null when
  /// outside it. Valid while the program lives.
  void *weightsAt(uint64_t offset) const;
  /// Runs hetpar_run once on the device buffers (whatever the last
  /// uploadInputs left there) and waits for it: the device-only part of run().
  /// After a failure on one device of several (an index out of range, a
  /// collective's watchdog), destroying the program skips hetpar_destroy
  /// (and its MPI_Finalize, which would wait for peers that wait in an
  /// exchange for this device): the process ends and the launcher ends the
  /// job, instead of every rank waiting for the watchdog.
  Status runDevice();
  /// runDevice as one run of a training step or inference request: a run
  /// that went to the program's end but found an index out of range (its
  /// exchanges and collectives were done) is recorded in `refused` (the
  /// first only) and returns ok, so that the caller runs the step's other
  /// runs, which the other devices' exchanges need, and then calls
  /// agree(refused). Any other failure is returned.
  Status runInStep(Status &refused);
  /// The end of a training step or inference request on one device of
  /// several (hetpar_agree): `mine` is this device's status over its runs
  /// since the last agree (their first error). Every device learns whether
  /// any failed: returns `mine` when none other did, a peerFailure naming
  /// the device that did otherwise. Without several devices, or with a
  /// library without hetpar_agree, returns `mine`.
  Status agree(Status mine);
  /// Copies the device output buffers into `outputs` (resized to the graph's
  /// outputs, with their dtypes and shapes).
  Status downloadOutputs(std::vector<HostTensor> &outputs);

  /// One span of the program's measured timeline (ProgramABI.h, "Trace"):
  /// its category (forward, backward, optimizer, collective, transfer), its
  /// pipeline microbatch (-1 outside one) and its collectives' kinds.
  struct TraceSpan {
    std::string category;
    int64_t microbatch = -1;
    std::string detail;
  };
  /// The program's spans; empty when it has no trace points (inference, or
  /// a library without the trace symbols).
  const std::vector<TraceSpan> &traceSpans() const { return traceSpans_; }
  /// Turns the trace points on: from the next runDevice on, lastTrace()
  /// holds the run's traceSpans().size() + 1 times (wall clock, us since
  /// the epoch); span i runs from [i] to [i + 1]. Errors when the program
  /// has no spans.
  Status enableTrace();
  const std::vector<double> &lastTrace() const { return traceTimes_; }

private:
  Program();
  Status openLibrary(const std::string &path, const std::string &backend);
  void readTraceSpans();
  Status setUp(const std::string &outDir, const std::string &weightsFile,
               const std::string &weightsIndex);
  void *allocDevice(uint64_t bytes);

  std::unique_ptr<ProgramABIFunctions> abi_;
  void *library_ = nullptr;
  void *ctx_ = nullptr;
  void *arena_ = nullptr;
  void *weights_ = nullptr;
  std::vector<void *> inputBuffers_, outputBuffers_;
  std::vector<bool> boundInputs_; // inputBuffers_[i] is not ours to free
  bool runFailed_ = false;        // a hetpar_run failed (see runDevice)
  bool lastRunFinished_ = false;  // the last run went to its end
  std::vector<TensorInfo> inputs_, outputs_;
  std::vector<TensorInfo> graphInputs_;
  std::vector<size_t> graphIndex_; // per entry of inputs_, in graphInputs_
  std::string backend_, fallbackReason_, libraryPath_, libraryName_;
  uint64_t arenaBytes_ = 0, weightsBytes_ = 0;
  size_t numDevices_ = 1;
  int64_t deviceId_ = 0;
  int64_t microbatches_ = 1;
  int64_t outputDevice_ = -1;
  std::string manifestDevice_ = "devices[0]"; // for error messages
  std::vector<DeviceInfo> devices_;
  std::string outDir_;
  TrainingInfo training_;
  std::vector<WeightTensor> weightTensors_;
  std::vector<TraceSpan> traceSpans_;
  std::vector<double> traceTimes_;
};

} // namespace hetpar::rt

#endif // HETPAR_RUNTIME_RUNTIME_H
