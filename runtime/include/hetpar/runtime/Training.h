//===- Training.h - Data, checkpoints and steps of training programs -*- C++
//-*-===//
//
// The runtime side of training (docs/training.md): a training
// program's hetpar_run is one optimizer step that updates the weights buffer
// in place. This header adds what `hetpar-run --train` needs around it:
//
//  * Dataset: one memory-mapped .npy file per program input, cut into batches
//    that depend only on the global step (and, shuffled, on the seed);
//  * safetensors files, the checkpoint format;
//  * checkpoints of a Program's parameters, optimizer state and step counter;
//  * Trainer: one step (copy a batch in, hetpar_run, read the loss).
//
// Like Runtime.h: plain C++17, nothing throws, failures are a Status.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_RUNTIME_TRAINING_H
#define HETPAR_RUNTIME_TRAINING_H

#include "hetpar/runtime/Runtime.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hetpar::rt {

//===----------------------------------------------------------------------===//
// Dataset
//===----------------------------------------------------------------------===//

/// How batches are drawn.
struct DatasetOptions {
  /// Samples per batch (the program's static batch, training.batch_size).
  int64_t batchSize = 1;
  /// Permute the samples anew in every epoch (see Dataset::sampleAt).
  bool shuffle = false;
  uint64_t seed = 0;
  /// The rows of each batch this process takes: samples [rowOffset,
  /// rowOffset + rows) of it (a data-parallel replica's, training
  /// batch_rows); rows 0 means the whole batch. The inputs hold `rows`
  /// samples on axis 0.
  int64_t rowOffset = 0, rows = 0;
  /// A pipeline's call (training call_microbatches): the batch is `chunks`
  /// microbatches of batchSize / chunks samples, and the rows above are
  /// taken from each, stacked (the inputs hold rows * chunks samples).
  int64_t chunks = 1;
  /// The graph's inputs (Program::graphInputs), when a pipeline stage's
  /// program takes only some of them: every one's file is checked as the
  /// program's own are, in graph order, so that every process of a run
  /// finds the same first error and all agree on the sample count (hence
  /// on each step's samples); only the program's inputs are read. Empty:
  /// just the program's inputs.
  std::vector<TensorInfo> graphInputs;
};

struct MappedNpy;

/// A training data folder: DIR/<input name>.npy for every program input, each
/// with a leading sample axis, memory-mapped (read-only, MAP_SHARED) so that
/// data larger than memory works: only the pages of the batches drawn are
/// read. Not copyable.
class Dataset {
public:
  /// Opens DIR/<name>.npy for each of `inputs` (a training program's inputs:
  /// the batch on axis 0, whose extent must be options.batchSize). Each file's
  /// shape must be [N] + the input's shape without axis 0, and its dtype the
  /// input's (a bfloat16 input takes uint16 bits), with the same N in every
  /// file and N >= batchSize. Errors name the file and what was expected
  /// versus found: a missing file, a bad .npy header, a wrong dtype or
  /// sample shape, differing sample counts, fewer samples than one batch.
  /// With options.graphInputs, the files of every graph input are checked
  /// so, in graph order; an input that is not among them is an error.
  static Status open(const std::string &dir,
                     const std::vector<TensorInfo> &inputs,
                     const DatasetOptions &options,
                     std::unique_ptr<Dataset> &out);
  ~Dataset();
  Dataset(const Dataset &) = delete;
  Dataset &operator=(const Dataset &) = delete;

  /// Samples per file (N).
  uint64_t samples() const { return samples_; }
  /// The sample taken at position `index` of the endless stream of samples
  /// (step s's batch is positions s*B .. s*B+B-1): epoch e = index / N covers
  /// positions e*N .. e*N+N-1, so batches run through the samples in order
  /// and wrap into the next epoch (a batch may straddle two). Shuffled, an
  /// epoch's samples are permuted by a Fisher-Yates shuffle (from the last
  /// position down, swap i with j = rng() % (i + 1)) driven by
  /// std::mt19937_64 seeded with seed + epoch * 0x9E3779B97F4A7C15 (mod
  /// 2^64): the order depends on the seed and the epoch only, the same on
  /// every platform (no std::shuffle, whose algorithm is the library's).
  /// Holds one epoch's permutation (8 bytes a sample).
  uint64_t sampleAt(uint64_t index);
  /// Fills `out` (one tensor per input, the input's dtype and shape) with the
  /// batch of 0-based global step `step` (its rows rowOffset.. when the
  /// options take a part of it). Reuses `out`'s memory.
  Status batch(uint64_t step, std::vector<HostTensor> &out);

private:
  Dataset() = default;
  std::vector<std::unique_ptr<MappedNpy>> files_;
  std::vector<TensorInfo> inputs_;
  DatasetOptions options_;
  uint64_t samples_ = 0;
  uint64_t permutationEpoch_ = UINT64_MAX;
  std::vector<uint64_t> permutation_;
};

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

/// A tensor of a safetensors file.
struct NamedTensor {
  std::string name;
  HostTensor tensor;
};

/// The contents of a safetensors file: tensors in file order and the
/// __metadata__ string map.
struct SafetensorsFile {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// The safetensors dtype name of `dtype`: "F32", "F16", "BF16", "F64", "I64",
/// "I32", "I16", "I8", "U8", "U16", "U32", "U64", "BOOL".
const char *safetensorsDType(DType dtype);

/// Writes `file` to `path` in the safetensors format
/// (https://github.com/huggingface/safetensors): an 8-byte little-endian
/// header length n, n bytes of JSON ({"NAME": {"dtype", "shape",
/// "data_offsets": [begin, end]}, "__metadata__": {...}}, padded with spaces
/// to a multiple of 8 bytes), then the tensors' bytes back to back in file
/// order (offsets relative to the end of the header). Atomic: writes
/// PATH.tmp.<pid>, fsyncs it, renames it over `path` and fsyncs the folder;
/// on any failure (e.g. a full disk) the temporary file is removed, `path`
/// is left as it was, and the error names `path` and the reason.
Status writeSafetensors(const std::string &path, const SafetensorsFile &file);

/// Removes the temporaries writeSafetensors leaves in `dir` when its writer
/// is killed outright (NAME.tmp.<pid> whose process is gone): mpirun turns a
/// Ctrl-C into SIGTERM and, after a grace period, SIGKILL, which a rank busy
/// writing a checkpoint cannot hold off. hetpar-run's launcher calls it once
/// mpirun has returned, with `waitSeconds` > 0: a temporary whose writer is
/// still running is retried every 50 ms for up to that long, since mpirun
/// may return while a rank it killed is still being torn down. A folder
/// that cannot be read is left alone.
void removeStaleTemporaries(const std::string &dir, double waitSeconds = 0);

/// Reads the safetensors file at `path` (tensors in data order). Errors, each
/// naming the file: a file shorter than its header, a header that is not JSON
/// or lacks fields, an unknown dtype, a shape whose byte count differs from its
/// data_offsets, offsets outside the data or overlapping, a non-string metadata
/// value.
Status readSafetensors(const std::string &path, SafetensorsFile &out);

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

/// The checkpoint file in a checkpoint folder: DIR/checkpoint.safetensors.
std::string checkpointPath(const std::string &dir);

/// The pipeline stage of `program`'s device when the program has several
/// stages (manifest devices[].stage), else -1.
int64_t pipelineStageOf(const Program &program);

/// Whether `program`'s device holds shards that other devices do not: a
/// ZeRO-1 shard of the optimizer state (a weights tensor with a shard
/// offset) or tensor-parallel parameter shards (a "tensor_shard"). Each
/// device then writes and resumes its own checkpoint.device<id>.
bool holdsShards(const Program &program);

/// The checkpoint file of `program`'s device: checkpointPath(dir); for a
/// device of pipeline stage s, DIR/checkpoint.stage<s>.safetensors (each
/// stage holds its own parameters and optimizer state; docs/training.md,
/// "Pipeline training"); for a device with sharded optimizer state,
/// DIR/checkpoint.device<id>.safetensors ("Sharded optimizer state").
std::string checkpointPath(const Program &program, const std::string &dir);

/// The fingerprint of a program's weights layout: the zlib CRC-32, as 8
/// lower-case hex digits, of "NAME DTYPE SHAPE\n" for every weights.json
/// tensor in order (e.g. "w float32 [2]\n"). Two programs with the same
/// fingerprint hold the same tensors.
std::string programFingerprint(const std::vector<WeightTensor> &tensors);

/// The step counter of `program` (its role "step" int64 scalar tensor,
/// "hetpar.step"); 0 when the program has none.
Status readStepCounter(Program &program, int64_t &step);

/// Writes every non-constant weights tensor of `program` (its current device
/// values) to checkpointPath(program, dir) as docs/training.md describes, with
/// __metadata__ format "hetpar-checkpoint", version "1", step `step`, model
/// (training.model), program (programFingerprint) and crc32 (a JSON object
/// name -> CRC-32). Creates `dir`. Atomic as writeSafetensors.
Status saveCheckpoint(Program &program, const std::string &dir, int64_t step);

/// Where `loadCheckpoint` took the tensors from.
struct CheckpointSource {
  std::vector<std::string> files; // the checkpoint files read
  bool resliced = false;          // joined and recut: another plan wrote them
};

/// Resumes `program` from the checkpoint in `dir`; sets `step` to its step
/// and, when given, `source` to the files read. Two ways:
///  - checkpointPath(program, dir) is this program's own (its fingerprint)
///    and no file of another layout in `dir` is of a later step: checks its
///    format and version, that it holds exactly the program's non-constant
///    tensors with their dtypes, shapes and byte counts, every CRC-32, the
///    step counter, and that the other files of its layout (the other
///    devices' or stages' files) are of the same step;
///  - otherwise another plan (cluster, sharding, stages) wrote it, or a run
///    of another plan resumed from this program's files and wrote a later
///    step beside them: the
///    folder's files of the newest step are joined (joinCheckpoint) and each
///    of this program's non-constant tensors is cut from them by its
///    placement (placementOf).
/// Either way everything is checked before anything is uploaded: a failure
/// is one error naming the file or the tensor and leaves the weights as they
/// were.
Status loadCheckpoint(Program &program, const std::string &dir, int64_t &step,
                      CheckpointSource *source = nullptr);

/// Where a device's tensor lies in its whole tensor (docs/training.md,
/// "Checkpoint layout"): the whole shape; a tensor-parallel slice, indices
/// [sliceStart, sliceStart + sliceSize) of dimension sliceDim (-1: none);
/// and a ZeRO-1 range, `elements` flattened elements of the (sliced) tensor
/// from `offset` (-1: none). Neither: the tensor is whole.
struct TensorPlacement {
  std::vector<int64_t> wholeShape;
  int64_t sliceDim = -1, sliceStart = 0, sliceSize = 0;
  int64_t offset = -1, elements = 0;
};

/// The placement of `w`, one of `tensors` (a device's weights.json): a
/// tensor-parallel parameter's slice ("tensor_shard"), which its optimizer
/// state of the same shape shares; a ZeRO-1 state shard's range of its
/// parameter `of` (sliced as that parameter is).
TensorPlacement placementOf(const std::vector<WeightTensor> &tensors,
                            const WeightTensor &w);

/// The files of one checkpoint joined into whole tensors.
struct JoinedCheckpoint {
  struct Tensor {
    HostTensor whole;
    std::vector<uint8_t> covered; // per element: some file held it
    std::string firstFile;        // the first file that held a part
  };
  int64_t step = 0;                 // the newest step of the folder
  std::vector<std::string> files;   // the files of that step, joined
  std::vector<std::string> leftOut; // files of older steps
  std::map<std::string, Tensor> tensors;
};

/// Joins the checkpoint*.safetensors files of `dir` whose __metadata__.step
/// is the newest (a pipeline's stage files, a sharded run's device files):
/// each file's format, version and CRC-32s are checked, and each tensor is
/// placed by its layout index entry (whole without one). Errors name the
/// file: no checkpoint file, a malformed or out-of-range layout entry, two
/// files that place one tensor in different whole shapes or dtypes, or that
/// hold different values of the same elements. The whole of every tensor is
/// held in memory.
Status joinCheckpoint(const std::string &dir, JoinedCheckpoint &out);

/// The part of tensor `name` of `joined` that `p` places, as a tensor of
/// `dtype` and `shape`. Errors: no such tensor (another model or optimizer,
/// or a missing file), a different dtype or whole shape, `shape` that `p`
/// cannot place, or elements that no joined file held.
Status cutFromJoined(const JoinedCheckpoint &joined, const std::string &name,
                     const TensorPlacement &p, DType dtype,
                     std::vector<int64_t> shape, HostTensor &out);

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

/// Runs a training program's steps on a Dataset's batches.
class Trainer {
public:
  /// Errors unless `program` is a training program whose first output (the
  /// loss) is a float32 scalar and whose inputs take their rows of the batch
  /// (training.batchRows: all of training.batch_size on one device, a
  /// replica's on several) on axis 0.
  static Status create(Program &program, Dataset &data,
                       std::unique_ptr<Trainer> &out);
  /// What one optimizer step reports.
  struct StepResult {
    /// The mean of output 0 (the loss before the update) over the step's
    /// microbatches; may be NaN or infinite, the caller decides.
    float loss = 0;
    /// The dynamic loss scale after the step (0 without loss scaling).
    float lossScale = 0;
    /// The program skipped the update: its gradients were not finite and
    /// the loss scale was halved.
    bool skipped = false;
  };
  /// One optimizer step on the batches of 0-based global step `step`: for
  /// each of the training.microbatches microbatches k, copies the batch of
  /// Dataset index step * microbatches + k into the input buffers and runs
  /// hetpar_run once (the last call updates the weights in place).
  Status step(uint64_t step, StepResult &result);

  /// One span of a step's measured timeline: wall-clock start and end (us
  /// since the epoch), the program's span, and its microbatch: the span's
  /// own in a pipeline's step, the call's index when the step accumulates
  /// several calls, else -1.
  struct TracedSpan {
    double start = 0, end = 0;
    const Program::TraceSpan *span = nullptr;
    int64_t microbatch = -1;
  };
  /// Records the spans of every following step (Program::enableTrace);
  /// lastStepTrace() holds the last step's.
  Status enableTrace();
  const std::vector<TracedSpan> &lastStepTrace() const { return trace_; }

private:
  Trainer(Program &program, Dataset &data) : program_(program), data_(data) {}
  /// One run of the step (Program::runInStep: a run that found an index
  /// out of range goes into `refused`, and the step's other runs still run).
  Status runMicrobatch(uint64_t index, float &loss, Status &refused);
  /// The program's hetpar.loss_scale (0 when it has none).
  Status readLossScale(float &scale);
  Program &program_;
  Dataset &data_;
  std::vector<HostTensor> batch_, outputs_;
  const WeightTensor *lossScale_ = nullptr;
  bool tracing_ = false;
  std::vector<TracedSpan> trace_;
};

//===----------------------------------------------------------------------===//
// Evaluation
//===----------------------------------------------------------------------===//

/// Runs a training program's evaluation step (Program::load with
/// ProgramPart::Eval) over a held-out Dataset: the loss with the running
/// statistics and without Dropout, on the training step's current weights,
/// which it reads in place (docs/training.md, "Evaluation").
class Evaluator {
public:
  /// Binds every bound input of `eval` to the weights tensor of `step` that
  /// it names. Errors: `eval` is not loaded on `step`'s backend; a bound
  /// input names no weights tensor of `step`, or one of another dtype or
  /// shape; output 0 is not a float32 scalar; a data input without its batch
  /// of training.batch_size on axis 0.
  static Status create(Program &step, Program &eval,
                       std::unique_ptr<Evaluator> &out);
  /// The inputs the data folder provides (the graph inputs and the labels):
  /// the Dataset to evaluate opens these.
  const std::vector<TensorInfo> &dataInputs() const { return dataInputs_; }
  struct Result {
    double loss = 0;      ///< the mean of the batches' losses
    uint64_t batches = 0; ///< whole batches evaluated
    uint64_t samples = 0; ///< batches * batch size
    uint64_t left = 0;    ///< samples after the last whole batch, not evaluated
  };
  /// The mean loss over the whole batches of `data`, in order (the
  /// program's batch is static: the last samples % batch samples are left
  /// out). A label out of range fails the run as in training (the program's
  /// index checks). Errors name the
  /// batch.
  Status evaluate(Dataset &data, Result &result);

private:
  Evaluator(Program &eval) : eval_(eval) {}
  Program &eval_;
  std::vector<TensorInfo> dataInputs_;
  std::vector<size_t> dataIndex_; // eval input index of each data input
  std::vector<HostTensor> batch_, outputs_;
};

} // namespace hetpar::rt

#endif // HETPAR_RUNTIME_TRAINING_H
