//===- Checkpoint.cpp - Training checkpoints as safetensors files ---------===//
//
// docs/training.md, "Checkpoints": the non-constant tensors of weights.json
// (parameters, optimizer state, step counter) with __metadata__ format,
// version, step, model, program (fingerprint) and crc32.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

namespace hetpar::rt {

namespace {

using json = nlohmann::json;

constexpr const char *kFormat = "hetpar-checkpoint";
constexpr const char *kVersion = "1";

uint32_t crcOf(const std::vector<uint8_t> &data) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return uint32_t(crc32_z(crc, data.data(), z_size_t(data.size())));
}

/// The tensors a checkpoint holds: every one whose role is not constant.
std::vector<const WeightTensor *> stateTensors(const Program &program) {
  std::vector<const WeightTensor *> out;
  for (const WeightTensor &w : program.weightTensors())
    if (w.role != "constant")
      out.push_back(&w);
  return out;
}

/// Checks `file` (read from `path`) against the program, without uploading.
Status validate(Program &program, const std::string &path,
                const SafetensorsFile &file) {
  auto bad = [&](const std::string &what) {
    return Status::error(path + ": " + what);
  };
  auto meta = [&](const char *key) {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? std::string() : it->second;
  };
  if (meta("format") != kFormat)
    return bad("not a HetPar checkpoint (__metadata__.format is '" +
               meta("format") + "', expected '" + kFormat + "')");
  if (meta("version") != kVersion)
    return bad("checkpoint version '" + meta("version") +
               "' is not supported (this runtime reads " + kVersion + ")");
  std::string mine = programFingerprint(program.weightTensors());
  if (meta("program") != mine)
    return bad("written by another program (fingerprint '" + meta("program") +
               "', this program's is '" + mine +
               "'): its tensors do not match " + program.outDir());
  json crcs = json::parse(meta("crc32"), nullptr, false);
  if (!crcs.is_object())
    return bad("__metadata__.crc32 is not a JSON object");
  std::vector<const WeightTensor *> want = stateTensors(program);
  if (file.tensors.size() != want.size())
    return bad("holds " + std::to_string(file.tensors.size()) +
               " tensors, the program has " + std::to_string(want.size()));
  for (const WeightTensor *w : want) {
    auto it =
        std::find_if(file.tensors.begin(), file.tensors.end(),
                     [&](const NamedTensor &t) { return t.name == w->name; });
    if (it == file.tensors.end())
      return bad("no tensor '" + w->name + "'");
    const HostTensor &t = it->tensor;
    if (t.dtype != w->dtype || t.shape != w->shape || t.data.size() != w->bytes)
      return bad("tensor '" + w->name + "' is " + dtypeName(t.dtype) + " " +
                 formatShape(t.shape) + ", the program's is " +
                 dtypeName(w->dtype) + " " + formatShape(w->shape));
    auto c = crcs.find(w->name);
    if (c == crcs.end() || !c->is_number_unsigned() ||
        c->get<uint64_t>() != crcOf(t.data))
      return bad("tensor '" + w->name +
                 "' fails its CRC-32 check (the file is corrupt)");
  }
  return Status::ok();
}

/// The layout index of a device's checkpoint (docs/training.md, "Checkpoint
/// layout"): for each tensor that is a shard (placementOf), {"of": its
/// parameter, "shape": the whole tensor's shape}, with "slice": {"dim",
/// "start", "size"} for a tensor-parallel slice and "offset", "elements" for
/// a ZeRO-1 range of the (sliced) tensor's flattened elements, so that the
/// shards of all devices' files join into whole tensors (joinCheckpoint).
json shardLayout(const Program &program) {
  json layout = json::object();
  for (const WeightTensor &w : program.weightTensors()) {
    TensorPlacement p = placementOf(program.weightTensors(), w);
    if (p.sliceDim < 0 && p.offset < 0)
      continue;
    json entry = {{"of", w.of.empty() ? w.name : w.of},
                  {"shape", p.wholeShape}};
    if (p.sliceDim >= 0)
      entry["slice"] = {
          {"dim", p.sliceDim}, {"start", p.sliceStart}, {"size", p.sliceSize}};
    if (p.offset >= 0) {
      entry["offset"] = p.offset;
      entry["elements"] = p.elements;
    }
    layout[w.name] = std::move(entry);
  }
  return layout;
}

/// The `__metadata__.step` of the safetensors file at `path`, from its header
/// only; "" when the file or its header cannot be read.
std::string stepInHeader(const std::string &path) {
  std::map<std::string, std::string> meta = detail::headerMetadata(path);
  auto it = meta.find("step");
  return it == meta.end() ? std::string() : it->second;
}

/// The layout a checkpoint file's name says: its file name without the
/// device or stage number ("checkpoint.device.safetensors" for any device's
/// shards, "checkpoint.stage.safetensors" for any pipeline stage's,
/// "checkpoint.safetensors" for one replica's whole state). The files of one
/// plan's checkpoint share it.
std::string layoutOf(const std::string &path) {
  std::string name = std::filesystem::path(path).filename().string();
  name.erase(std::remove_if(name.begin(), name.end(),
                            [](char c) { return c >= '0' && c <= '9'; }),
             name.end());
  return name;
}

/// A step in a header as a number; -1 when it is none.
int64_t stepNumber(const std::string &text) {
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  return text.empty() || *end || value < 0 ? -1 : int64_t(value);
}

/// Whether `file` (of this program's layout) is one this plan writes: a
/// device's shards of one of its devices, a stage's file of one of its
/// stages. A file of the layout that is not (checkpoint.device2 beside a
/// plan of devices 0 and 1) is another plan's, left behind.
bool ofThisPlan(const Program &program, const std::string &file) {
  std::string name = std::filesystem::path(file).filename().string();
  size_t digits = name.find_first_of("0123456789");
  if (digits == std::string::npos)
    return true;
  int64_t number = stepNumber(name.substr(
      digits, name.find_first_not_of("0123456789", digits) - digits));
  if (name.rfind("checkpoint.device", 0) == 0)
    return std::any_of(program.devices().begin(), program.devices().end(),
                       [&](const DeviceInfo &d) { return d.id == number; });
  return std::any_of(program.devices().begin(), program.devices().end(),
                     [&](const DeviceInfo &d) { return d.stage == number; });
}

/// Every device or stage resumes its own file, so the files of its plan in
/// the folder (the other devices' shards, the other stages' files) must be
/// of one step: a set left by runs of different lengths, or by a run killed
/// while its devices wrote, would mix states. Each device checks every
/// other file's header. A file of the same layout that this plan does not
/// write (another plan's device, left behind) is no peer.
Status checkPeerSteps(const Program &program, const std::string &dir,
                      const std::string &path, const std::string &step) {
  for (const std::string &peer : detail::checkpointFiles(dir)) {
    if (std::filesystem::path(peer).filename() ==
            std::filesystem::path(path).filename() ||
        layoutOf(peer) != layoutOf(path) || !ofThisPlan(program, peer))
      continue;
    std::string other = stepInHeader(peer);
    if (other != step)
      return Status::error(
          path + " is of step " + step + " but " + peer + " is " +
          (other.empty() ? "unreadable" : "of step " + other) +
          ": the devices' checkpoints in '" + dir +
          "' are not one checkpoint (resume from a folder one run wrote)");
  }
  return Status::ok();
}

/// The newest step of the checkpoint files in `dir` other than `path` (a
/// peer's, or another plan's written there later by a resumed run: of
/// another layout, or of the same one, checkpoint.device0 of a 2-device
/// plan over a 3-device plan's), -1 when none. A file whose step cannot be
/// read counts as the newest: the folder's newest checkpoint is then
/// unknown, and joining it (joinCheckpoint) names the file, where taking
/// this program's own older file would pass over it in silence.
int64_t newestOtherStep(const std::string &dir, const std::string &path) {
  int64_t newest = -1;
  for (const std::string &f : detail::checkpointFiles(dir)) {
    if (std::filesystem::path(f).filename() ==
        std::filesystem::path(path).filename())
      continue;
    int64_t step = stepNumber(stepInHeader(f));
    if (step < 0)
      return std::numeric_limits<int64_t>::max();
    newest = std::max(newest, step);
  }
  return newest;
}

} // namespace

std::string checkpointPath(const std::string &dir) {
  return (std::filesystem::path(dir) / "checkpoint.safetensors").string();
}

int64_t pipelineStageOf(const Program &program) {
  int64_t stage = -1, stages = 0;
  for (const DeviceInfo &d : program.devices()) {
    stages = std::max(stages, d.stage + 1);
    if (d.id == program.deviceId())
      stage = d.stage;
  }
  return stages > 1 ? stage : -1;
}

bool holdsShards(const Program &program) {
  for (const WeightTensor &w : program.weightTensors())
    if (w.shardOffset >= 0 || w.tensorDim >= 0)
      return true;
  return false;
}

std::string checkpointPath(const Program &program, const std::string &dir) {
  if (holdsShards(program))
    return (std::filesystem::path(dir) /
            ("checkpoint.device" + std::to_string(program.deviceId()) +
             ".safetensors"))
        .string();
  int64_t stage = pipelineStageOf(program);
  if (stage < 0)
    return checkpointPath(dir);
  return (std::filesystem::path(dir) /
          ("checkpoint.stage" + std::to_string(stage) + ".safetensors"))
      .string();
}

std::string programFingerprint(const std::vector<WeightTensor> &tensors) {
  std::string text;
  for (const WeightTensor &t : tensors)
    text +=
        t.name + " " + dtypeName(t.dtype) + " " + formatShape(t.shape) + "\n";
  uLong crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef *>(text.data()),
                z_size_t(text.size()));
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08x", unsigned(crc));
  return hex;
}

Status readStepCounter(Program &program, int64_t &step) {
  step = 0;
  for (const WeightTensor &w : program.weightTensors())
    if (w.role == "step") {
      if (w.dtype != DType::Int64 || w.bytes != sizeof(int64_t))
        return Status::error("the step counter '" + w.name +
                             "' is not an int64 scalar");
      return program.readWeights(w.offset, &step, sizeof(step));
    }
  return Status::ok();
}

Status saveCheckpoint(Program &program, const std::string &dir, int64_t step) {
  SafetensorsFile file;
  json crcs = json::object();
  for (const WeightTensor *w : stateTensors(program)) {
    NamedTensor t{w->name, {w->dtype, w->shape, {}}};
    t.tensor.data.resize(w->bytes);
    Status s = program.readWeights(w->offset, t.tensor.data.data(), w->bytes);
    if (!s.isOk())
      return s;
    crcs[w->name] = crcOf(t.tensor.data);
    file.tensors.push_back(std::move(t));
  }
  file.metadata = {{"format", kFormat},
                   {"version", kVersion},
                   {"step", std::to_string(step)},
                   {"model", program.training().model},
                   {"program", programFingerprint(program.weightTensors())},
                   {"crc32", crcs.dump()}};
  if (holdsShards(program))
    file.metadata["layout"] = shardLayout(program).dump();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::error("cannot create the checkpoint folder '" + dir +
                         "': " + ec.message());
  return writeSafetensors(checkpointPath(program, dir), file);
}

namespace {

/// Errors unless the step counter among `tensors` (the program's role "step"
/// tensor) holds `step`; `where` names the file(s) in the message.
Status checkStepCounter(const Program &program,
                        const std::vector<NamedTensor> &tensors, int64_t step,
                        const std::string &where) {
  for (const NamedTensor &t : tensors) {
    int64_t counter = 0;
    if (t.tensor.dtype == DType::Int64 && t.tensor.data.size() == 8)
      std::memcpy(&counter, t.tensor.data.data(), 8);
    for (const WeightTensor &w : program.weightTensors())
      if (w.name == t.name && w.role == "step" && counter != step)
        return Status::error(where + ": the step counter '" + t.name + "' is " +
                             std::to_string(counter) +
                             " but __metadata__.step is " +
                             std::to_string(step));
  }
  return Status::ok();
}

/// Uploads `tensors` (each a non-constant tensor of `program`, checked).
Status upload(Program &program, const std::vector<NamedTensor> &tensors) {
  for (const NamedTensor &t : tensors) {
    const WeightTensor &w = *std::find_if(
        program.weightTensors().begin(), program.weightTensors().end(),
        [&](const WeightTensor &x) { return x.name == t.name; });
    if (Status s =
            program.writeWeights(w.offset, t.tensor.data.data(), w.bytes);
        !s.isOk())
      return s;
  }
  return Status::ok();
}

/// Resumes from `path`, the file this program wrote (its fingerprint).
Status loadOwnFile(Program &program, const std::string &dir,
                   const std::string &path, int64_t &step) {
  SafetensorsFile file;
  Status s = readSafetensors(path, file);
  if (s.isOk())
    s = validate(program, path, file);
  if (!s.isOk())
    return s;
  const std::string &text = file.metadata["step"];
  int64_t value = stepNumber(text);
  if (value < 0)
    return Status::error(path + ": __metadata__.step '" + text +
                         "' is not a step count");
  if (s = checkStepCounter(program, file.tensors, value, path); !s.isOk())
    return s;
  if (s = checkPeerSteps(program, dir, path, text); !s.isOk())
    return s;
  step = value;
  return upload(program, file.tensors);
}

/// The parameter a constant of the program holds: its name, without the
/// ".packed" or ".packed.<k>" of a GEMM's packed copy (EmitGemmOps.cpp).
std::string constantParameter(const std::string &name) {
  size_t at = name.rfind(".packed");
  if (at == std::string::npos)
    return name;
  std::string rest = name.substr(at + 7);
  bool variant = rest.size() > 1 && rest[0] == '.' &&
                 rest.find_first_not_of("0123456789", 1) == std::string::npos;
  return rest.empty() || variant ? name.substr(0, at) : name;
}

/// Fails when the checkpoint trained a tensor that this program holds as a
/// constant (compiled with --freeze naming it): its trained values cannot go
/// into the program's constants (packed or sliced at compile time), and
/// resuming with the initial ones would silently undo the training.
Status checkNoTrainedConstant(const Program &program, const std::string &dir,
                              const JoinedCheckpoint &joined) {
  for (const WeightTensor &w : program.weightTensors()) {
    if (w.role != "constant")
      continue;
    std::string name = constantParameter(w.name);
    if (joined.tensors.count(name))
      return Status::error(
          "cannot resume from '" + dir + "': its run trained '" + name +
          "', which this program holds as a constant (compiled with "
          "--freeze): export it with a program that trains '" +
          name + "' (hetpar-run PROGRAM --resume " + dir +
          " --export-onnx M.onnx) and compile M.onnx with --freeze");
  }
  return Status::ok();
}

/// Resumes from the checkpoint in `dir` that another plan wrote: its files
/// joined into whole tensors, this program's part of each cut out.
Status loadResliced(Program &program, const std::string &dir, int64_t &step,
                    std::vector<std::string> &files) {
  JoinedCheckpoint joined;
  Status s = joinCheckpoint(dir, joined);
  if (!s.isOk())
    return s;
  if (s = checkNoTrainedConstant(program, dir, joined); !s.isOk())
    return s;
  std::vector<NamedTensor> parts;
  for (const WeightTensor *w : stateTensors(program)) {
    NamedTensor t{w->name, {}};
    // Checkpoints are written between steps, where such a tensor is zero:
    // a plan without it (a pipeline's for gradient accumulation) leaves it
    // out.
    if (w->zeroBetweenSteps && !joined.tensors.count(w->name)) {
      t.tensor.dtype = w->dtype;
      t.tensor.shape = w->shape;
      t.tensor.data.assign(w->bytes, 0);
      parts.push_back(std::move(t));
      continue;
    }
    s = cutFromJoined(joined, w->name, placementOf(program.weightTensors(), *w),
                      w->dtype, w->shape, t.tensor);
    if (!s.isOk())
      return Status::error("cannot resume from '" + dir + "': " + s.message());
    parts.push_back(std::move(t));
  }
  s = checkStepCounter(program, parts, joined.step, dir);
  if (!s.isOk())
    return s;
  files = joined.files;
  step = joined.step;
  return upload(program, parts);
}

} // namespace

Status loadCheckpoint(Program &program, const std::string &dir, int64_t &step,
                      CheckpointSource *source) {
  std::string path = checkpointPath(program, dir);
  std::map<std::string, std::string> meta = detail::headerMetadata(path);
  CheckpointSource from;
  Status s = Status::ok();
  // The newest checkpoint of the folder is the one to resume: this
  // program's own file, unless another plan's run resumed from it and wrote
  // a later step there (then that one is resliced, as joinCheckpoint takes
  // the newest step).
  if (meta.count("program") &&
      meta["program"] == programFingerprint(program.weightTensors()) &&
      newestOtherStep(dir, path) <= stepNumber(meta["step"])) {
    from.files = {path};
    s = loadOwnFile(program, dir, path, step);
  } else {
    from.resliced = true;
    s = loadResliced(program, dir, step, from.files);
  }
  if (s.isOk() && source)
    *source = std::move(from);
  return s;
}

} // namespace hetpar::rt
