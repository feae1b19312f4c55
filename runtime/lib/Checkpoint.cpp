//===- Checkpoint.cpp - Training checkpoints as safetensors files ---------===//
//
// docs/training.md, "Checkpoints": the non-constant tensors of weights.json
// (parameters, optimizer state, step counter) with __metadata__ format,
// version, step, model, program (fingerprint) and crc32.
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/Training.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
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
/// layout"): for each tensor that is a shard, {"of": its parameter, "shape":
/// the whole tensor's shape}, with "slice": {"dim", "start", "size"} for a
/// tensor-parallel shard (a parameter's, or its optimizer state's of the
/// same shape) and "offset", "elements" for a ZeRO-1 range of the (sliced)
/// tensor's flattened elements, so that the shards of all devices' files
/// join into whole tensors.
json shardLayout(const Program &program) {
  json layout = json::object();
  std::map<std::string, const WeightTensor *> byName;
  for (const WeightTensor &w : program.weightTensors())
    byName[w.name] = &w;
  for (const WeightTensor &w : program.weightTensors()) {
    const WeightTensor *param = &w;
    if (!w.of.empty()) {
      auto it = byName.find(w.of);
      param = it == byName.end() ? nullptr : it->second;
    }
    bool sliced = param && param->tensorDim >= 0 && param->shape == w.shape;
    if (w.shardOffset < 0 && !sliced)
      continue;
    json entry = {{"of", w.of.empty() ? w.name : w.of},
                  {"shape", !param   ? std::vector<int64_t>()
                            : sliced ? param->wholeShape
                                     : param->shape}};
    if (sliced)
      entry["slice"] = {{"dim", param->tensorDim},
                        {"start", param->tensorStart},
                        {"size", param->shape[param->tensorDim]}};
    if (w.shardOffset >= 0) {
      int64_t elements = 1;
      for (int64_t d : w.shape)
        elements *= d;
      entry["offset"] = w.shardOffset;
      entry["elements"] = elements;
      // A ZeRO-1 range of a tensor-parallel shard of the parameter.
      if (param && param->tensorDim >= 0) {
        entry["shape"] = param->wholeShape;
        entry["slice"] = {{"dim", param->tensorDim},
                          {"start", param->tensorStart},
                          {"size", param->shape[param->tensorDim]}};
      }
    }
    layout[w.name] = std::move(entry);
  }
  return layout;
}

/// The `__metadata__.step` of the safetensors file at `path`, from its header
/// only; "" when the file or its header cannot be read.
std::string stepInHeader(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  if (!in.read(reinterpret_cast<char *>(&n), 8) || n > (uint64_t(1) << 27))
    return "";
  std::string header(n, '\0');
  if (!in.read(header.data(), std::streamsize(n)))
    return "";
  json j = json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("__metadata__") ||
      !j["__metadata__"].is_object() || !j["__metadata__"].contains("step") ||
      !j["__metadata__"]["step"].is_string())
    return "";
  return j["__metadata__"]["step"].get<std::string>();
}

/// A folder of the other kind of checkpoint (one file per device, or one per
/// stage or run) is named as such, not as a missing file.
Status checkCheckpointKind(const Program &program, const std::string &dir,
                           const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec))
    return Status::ok();
  bool perDevice = false;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    perDevice |= name.rfind("checkpoint.device", 0) == 0;
  }
  if (holdsShards(program) == perDevice)
    return Status::ok(); // reading `path` names what is missing
  return Status::error(
      "cannot resume from '" + dir + "': " +
      (perDevice ? "it holds a sharded run's per-device checkpoints "
                   "(checkpoint.device<id>.safetensors, ZeRO-1 or tensor "
                   "parallelism), and this program keeps whole tensors"
                 : "this program holds shards (ZeRO-1 optimizer state or "
                   "tensor-parallel parameters) and reads its device's "
                   "checkpoint.device<id>.safetensors, but the folder holds "
                   "none") +
      "; resuming under another sharding is not implemented yet");
}

/// ZeRO-1: every device resumes its own file, so the files in the folder
/// must be of one step: a set left by runs of different lengths, or by a
/// run killed while its devices wrote, would mix states. Each device
/// checks every other device's file header.
Status checkPeerSteps(const Program &program, const std::string &dir,
                      const std::string &path, const std::string &step) {
  if (!holdsShards(program))
    return Status::ok();
  for (const DeviceInfo &d : program.devices()) {
    std::string peer =
        (std::filesystem::path(dir) /
         ("checkpoint.device" + std::to_string(d.id) + ".safetensors"))
            .string();
    if (peer == path || !std::filesystem::exists(peer))
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

Status loadCheckpoint(Program &program, const std::string &dir, int64_t &step) {
  std::string path = checkpointPath(program, dir);
  if (Status kind = checkCheckpointKind(program, dir, path); !kind.isOk())
    return kind;
  SafetensorsFile file;
  Status s = readSafetensors(path, file);
  if (!s.isOk())
    return s;
  s = validate(program, path, file);
  if (!s.isOk())
    return s;
  const std::string &text = file.metadata["step"];
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || value < 0)
    return Status::error(path + ": __metadata__.step '" + text +
                         "' is not a step count");
  for (const NamedTensor &t : file.tensors) {
    int64_t counter = 0;
    if (t.tensor.dtype == DType::Int64 && t.tensor.data.size() == 8)
      std::memcpy(&counter, t.tensor.data.data(), 8);
    auto role = [&](const std::string &name) {
      for (const WeightTensor &w : program.weightTensors())
        if (w.name == name)
          return w.role;
      return std::string();
    };
    if (role(t.name) == "step" && counter != value)
      return Status::error(path + ": the step counter '" + t.name + "' is " +
                           std::to_string(counter) +
                           " but __metadata__.step "
                           "is " +
                           text);
  }
  for (const NamedTensor &t : file.tensors) {
    const WeightTensor &w = *std::find_if(
        program.weightTensors().begin(), program.weightTensors().end(),
        [&](const WeightTensor &x) { return x.name == t.name; });
    s = program.writeWeights(w.offset, t.tensor.data.data(), w.bytes);
    if (!s.isOk())
      return s;
  }
  if (Status peers = checkPeerSteps(program, dir, path, text); !peers.isOk())
    return peers;
  step = value;
  return Status::ok();
}

} // namespace hetpar::rt
