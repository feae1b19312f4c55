//===- Program.cpp - Load and run a compiled device program ---------------===//
#include "hetpar/runtime/Runtime.h"

#include "Internal.h"
#include "hetpar/runtime/ProgramABI.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <type_traits>

namespace hetpar::rt {

/// The entry points of a loaded program library (ProgramABI.h).
struct ProgramABIFunctions {
  decltype(&hetpar_abi_version) abiVersion = nullptr;
  decltype(&hetpar_backend) backend = nullptr;
  decltype(&hetpar_arena_bytes) arenaBytes = nullptr;
  decltype(&hetpar_weights_bytes) weightsBytes = nullptr;
  decltype(&hetpar_num_inputs) numInputs = nullptr;
  decltype(&hetpar_num_outputs) numOutputs = nullptr;
  decltype(&hetpar_input_bytes) inputBytes = nullptr;
  decltype(&hetpar_output_bytes) outputBytes = nullptr;
  decltype(&hetpar_create) create = nullptr;
  decltype(&hetpar_destroy) destroy = nullptr;
  decltype(&hetpar_alloc) alloc = nullptr;
  decltype(&hetpar_free) free = nullptr;
  decltype(&hetpar_upload) upload = nullptr;
  decltype(&hetpar_download) download = nullptr;
  decltype(&hetpar_run) run = nullptr;
  decltype(&hetpar_error) error = nullptr;
  // Optional (ProgramABI.h, "Trace").
  decltype(&hetpar_trace_points) tracePoints = nullptr;
  decltype(&hetpar_trace_span) traceSpan = nullptr;
  decltype(&hetpar_trace) trace = nullptr;
};

namespace {

using json = nlohmann::json;

/// Load errors travel as this exception inside this file only; the public
/// functions turn it into a Status.
struct LoadError {
  std::string message;
  /// The backend is unavailable here (the library does not load, or
  /// hetpar_create fails): "auto" then falls back to the CPU.
  bool unavailable = false;
};

[[noreturn]] void fail(std::string message, bool unavailable = false) {
  throw LoadError{std::move(message), unavailable};
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (!name.empty() && name[0] == '/')
    return name;
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// A json value with the file it came from and its path in that file
/// ("devices[0].inputs[1]"), for error messages.
struct Node {
  const json &value;
  const std::string &file;
  std::string where;

  [[noreturn]] void error(const std::string &what) const {
    fail(file + ": " + (where.empty() ? "" : where + ": ") + what);
  }
  std::string child(const std::string &key) const {
    return where.empty() ? key : where + "." + key;
  }
  Node field(const char *key) const {
    if (!value.is_object())
      error("expected an object");
    auto it = value.find(key);
    if (it == value.end())
      fail(file + ": missing field " + child(key));
    return {*it, file, child(key)};
  }
  bool has(const char *key) const {
    return value.is_object() && value.contains(key);
  }
  Node at(size_t i) const {
    return {value.at(i), file, where + "[" + std::to_string(i) + "]"};
  }
  size_t arraySize() const {
    if (!value.is_array())
      error("expected an array, got " + value.dump());
    return value.size();
  }
  std::string str() const {
    if (!value.is_string())
      error("expected a string, got " + value.dump());
    return value.get<std::string>();
  }
  bool boolean() const {
    if (!value.is_boolean())
      error("expected true or false, got " + value.dump());
    return value.get<bool>();
  }
  uint64_t u64() const {
    if (value.is_number_unsigned())
      return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() >= 0)
      return uint64_t(value.get<int64_t>());
    error("expected a non-negative integer, got " + value.dump());
  }
  DType dtype() const {
    std::optional<DType> d = dtypeFromName(str());
    if (!d)
      error("unknown dtype '" + str() + "'");
    return *d;
  }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> dims;
    size_t n = arraySize();
    for (size_t i = 0; i < n; ++i) {
      uint64_t d = at(i).u64();
      if (d > uint64_t(std::numeric_limits<int64_t>::max()))
        at(i).error("dimension too large");
      dims.push_back(int64_t(d));
    }
    if (!shapeElements(dims))
      error("shape " + formatShape(dims) + " has too many elements");
    return dims;
  }
  TensorInfo tensorInfo() const {
    TensorInfo t{field("name").str(), field("dtype").dtype(),
                 field("shape").shape()};
    if (has("batch_dim")) {
      uint64_t d = field("batch_dim").u64();
      if (d >= t.shape.size())
        field("batch_dim")
            .error("is not a dimension of shape " + formatShape(t.shape));
      t.batchDim = int64_t(d);
    }
    if (has("weight"))
      t.boundWeight = field("weight").str();
    if (uint64_t(*shapeElements(t.shape)) >
        std::numeric_limits<uint64_t>::max() / dtypeSize(t.dtype))
      field("shape").error("more bytes than fit in 64 bits");
    return t;
  }
};

/// Parses `size` bytes of JSON; errors name `path`.
json parseJsonText(const uint8_t *bytes, size_t size, const std::string &path) {
  try {
    return json::parse(bytes, bytes + size);
  } catch (const json::exception &e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    if (!what.empty() && what[0] == '[') {
      size_t close = what.find("] ");
      if (close != std::string::npos)
        what = what.substr(close + 2);
    }
    fail(path + ": not valid JSON: " + what);
  }
}

json parseJsonFile(const std::string &path) {
  std::vector<uint8_t> bytes;
  Status st = detail::readFile(path, bytes);
  if (!st.isOk())
    fail(st.message());
  return parseJsonText(bytes.data(), bytes.size(), path);
}

std::string describe(const std::vector<TensorInfo> &infos) {
  std::string s;
  for (size_t i = 0; i < infos.size(); ++i)
    s += (i ? ", " : "") + infos[i].name;
  return s;
}

uint64_t tensorBytes(const TensorInfo &t) {
  return uint64_t(shapeElements(t.shape).value_or(0)) * dtypeSize(t.dtype);
}

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// The zlib CRC-32 of `n` bytes (any size).
uint32_t crc32Of(const uint8_t *data, uint64_t n) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return uint32_t(crc32_z(crc, data, z_size_t(n)));
}

/// weights.json's "tensor_shard" of `w` ({"dim", "start", "size", "shape"}:
/// `w` is indices [start, start + size) of dimension dim of a tensor of
/// `shape`): checked against w's own shape, stored in `w`.
static void parseTensorShard(const Node &shard, WeightTensor &w) {
  uint64_t dim = shard.field("dim").u64();
  uint64_t start = shard.field("start").u64();
  uint64_t size = shard.field("size").u64();
  std::vector<int64_t> whole = shard.field("shape").shape();
  bool fits = whole.size() == w.shape.size() && dim < whole.size() &&
              int64_t(size) == w.shape[dim] && start <= uint64_t(whole[dim]) &&
              size <= uint64_t(whole[dim]) - start;
  for (size_t k = 0; fits && k < whole.size(); ++k)
    fits = k == dim || whole[k] == w.shape[k];
  if (!fits)
    shard.error("does not describe tensor '" + w.name + "' " +
                formatShape(w.shape) + " as a slice of dimension " +
                std::to_string(dim) + " of " + formatShape(whole));
  w.tensorDim = int64_t(dim);
  w.tensorStart = int64_t(start);
  w.wholeShape = std::move(whole);
}

/// A tensor of a weights index with the CRC-32 of its bytes.
struct IndexedTensor {
  WeightTensor tensor;
  uint32_t crc = 0;
};

/// Checks a weights index (`index`, read from `indexPath`) against the
/// manifest entry `device`, whose data file `weightsFile` (at `binPath`)
/// holds `weightsBytes` bytes: the file it names, its size, and each
/// tensor's size, bounds and role. Checksums are checkWeightsCrc's.
std::vector<IndexedTensor>
parseWeightsIndex(const json &index, const std::string &indexPath,
                  const std::string &binPath, const std::string &weightsFile,
                  uint64_t weightsBytes, const std::string &device) {
  Node root{index, indexPath, ""};
  if (root.has("file") && root.field("file").str() != weightsFile)
    root.field("file").error("'" + root.field("file").str() +
                             "' but manifest.json names '" + weightsFile + "'");
  uint64_t indexBytes = root.field("bytes").u64();
  if (indexBytes != weightsBytes)
    root.field("bytes").error(
        std::to_string(indexBytes) + " but manifest.json's " + device +
        ".weights_bytes is " + std::to_string(weightsBytes));
  std::vector<IndexedTensor> out;
  Node tensors = root.field("tensors");
  for (size_t i = 0, n = tensors.arraySize(); i < n; ++i) {
    Node t = tensors.at(i);
    TensorInfo info = t.tensorInfo();
    uint64_t offset = t.field("offset").u64();
    uint64_t size = t.field("bytes").u64();
    uint64_t crc = t.field("crc32").u64();
    std::string name = "tensor '" + info.name + "'";
    if (size != tensorBytes(info))
      fail(indexPath + ": " + name + ": " + std::to_string(size) +
           " bytes do not match " + dtypeName(info.dtype) + " " +
           formatShape(info.shape) + " (" + std::to_string(tensorBytes(info)) +
           " bytes)");
    if (offset > weightsBytes || size > weightsBytes - offset)
      fail(indexPath + ": " + name + " (offset " + std::to_string(offset) +
           ", " + std::to_string(size) + " bytes) lies outside " + binPath +
           " (" + std::to_string(weightsBytes) + " bytes)");
    if (crc > std::numeric_limits<uint32_t>::max())
      t.field("crc32").error("is not a CRC-32 (more than 32 bits)");
    std::string role = t.has("role") ? t.field("role").str() : "constant";
    if (role != "constant" && role != "param" && role != "buffer" &&
        role != "optimizer" && role != "step" && role != "state")
      t.field("role").error("'" + role +
                            "' is not constant, param, buffer, optimizer, "
                            "step or state");
    std::string of = t.has("of") ? t.field("of").str() : "";
    int64_t shardOffset = -1;
    if (t.has("shard_offset")) {
      if (role != "optimizer" || of.empty())
        t.field("shard_offset")
            .error("belongs to optimizer state (role optimizer, with 'of')");
      uint64_t v = t.field("shard_offset").u64();
      if (v > (uint64_t(1) << 53))
        t.field("shard_offset").error("is not an element offset");
      shardOffset = int64_t(v);
    }
    WeightTensor w{info.name, info.dtype, info.shape, offset,
                   size,      role,       of,         shardOffset};
    if (t.has("zero_between_steps")) {
      if (role != "optimizer" && role != "state")
        t.field("zero_between_steps")
            .error("belongs to optimizer or state tensors");
      w.zeroBetweenSteps = t.field("zero_between_steps").boolean();
    }
    if (t.has("tensor_shard")) {
      if (role != "param" && role != "buffer")
        t.field("tensor_shard").error("belongs to a param or buffer");
      parseTensorShard(t.field("tensor_shard"), w);
    }
    out.push_back({std::move(w), uint32_t(crc)});
  }
  return out;
}

/// Fails naming the first tensor whose bytes in `data` (the weights file at
/// `binPath`, bounds checked by parseWeightsIndex) do not match its CRC-32.
void checkWeightsCrc(const std::vector<IndexedTensor> &tensors,
                     const uint8_t *data, const std::string &binPath) {
  for (const IndexedTensor &t : tensors) {
    uint32_t got = crc32Of(data + t.tensor.offset, t.tensor.bytes);
    if (got != t.crc)
      fail(binPath + ": tensor '" + t.tensor.name +
           "' checksum mismatch (expected " + std::to_string(t.crc) + ", got " +
           std::to_string(got) + ")");
  }
}

/// What the manifest says about the one device we run.
struct DeviceManifest {
  size_t numDevices = 1;
  int64_t id = 0;
  int64_t microbatches = 1;
  int64_t outputDevice = -1;
  size_t index = 0; // in the manifest's devices
  std::vector<DeviceInfo> devices;
  std::string cpuLibrary, cudaLibrary; // empty when absent
  uint64_t arenaBytes = 0, weightsBytes = 0;
  std::string weights, weightsIndex;
  std::vector<TensorInfo> inputs, outputs;
  /// The manifest's "graph_inputs" (a whole step's), empty when absent.
  std::vector<TensorInfo> graphInputs;
  /// Per entry of `inputs`, its index in graphInputs (when present).
  std::vector<size_t> graphIndex;
  TrainingInfo training;
};

/// The manifest's "training" object (docs/training.md).
TrainingInfo parseTraining(const Node &t) {
  if (!t.value.is_object())
    t.error("expected an object");
  TrainingInfo info;
  info.present = true;
  uint64_t batch = t.field("batch_size").u64();
  if (batch < 1 || batch > uint64_t(std::numeric_limits<int64_t>::max()))
    t.field("batch_size").error("must be a positive integer");
  info.batchSize = int64_t(batch);
  info.batchRows = info.batchSize;
  auto optionalString = [&](const char *key) {
    return t.has(key) && !t.field(key).value.is_null() ? t.field(key).str()
                                                       : std::string();
  };
  if (t.has("tokens_per_sample"))
    info.tokensPerSample = int64_t(t.field("tokens_per_sample").u64());
  if (t.has("microbatches")) {
    uint64_t n = t.field("microbatches").u64();
    if (n < 1 || n > uint64_t(1) << 30)
      t.field("microbatches").error("must be a positive integer");
    info.microbatches = int64_t(n);
  }
  if (t.has("call_microbatches")) {
    uint64_t n = t.field("call_microbatches").u64();
    if (n < 1 || batch % n != 0)
      t.field("call_microbatches")
          .error("must be a positive integer dividing batch_size (" +
                 std::to_string(batch) + ")");
    info.callMicrobatches = int64_t(n);
  }
  if (t.has("dtype")) {
    info.dtype = t.field("dtype").str();
    if (info.dtype != "float32" && info.dtype != "bfloat16" &&
        info.dtype != "float16")
      t.field("dtype").error("'" + info.dtype +
                             "' is not float32, bfloat16 or float16");
  }
  if (t.has("loss_scaling")) {
    std::string kind = t.field("loss_scaling").str();
    if (kind != "none" && kind != "dynamic")
      t.field("loss_scaling").error("'" + kind + "' is not none or dynamic");
    info.dynamicLossScale = kind == "dynamic";
  }
  info.loss = optionalString("loss");
  info.labels = optionalString("labels");
  info.model = optionalString("model");
  return info;
}

/// The rank a launcher gave this process, if any.
std::optional<int64_t> launcherRank() {
  for (const char *var : {"HETPAR_DEVICE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                          "PMI_RANK", "SLURM_PROCID"})
    if (const char *v = std::getenv(var)) {
      char *end = nullptr;
      long long r = std::strtoll(v, &end, 10);
      if (*v && !*end && r >= 0)
        return r;
    }
  return std::nullopt;
}

/// A data-parallel replica's rows of each batch (of each microbatch of a
/// call that runs several): the device entry's "batch_rows" [offset, rows],
/// inside the training batch (microbatch); the whole of it without one.
void parseBatchRows(const Node &dev, TrainingInfo &t) {
  int64_t chunk = t.batchSize / t.callMicrobatches;
  t.batchOffset = 0;
  t.batchRows = chunk;
  if (!dev.has("batch_rows"))
    return;
  Node rows = dev.field("batch_rows");
  if (rows.arraySize() != 2)
    rows.error("expected [offset, rows]");
  uint64_t offset = rows.at(0).u64(), count = rows.at(1).u64();
  if (count < 1 || offset >= uint64_t(chunk) ||
      count > uint64_t(chunk) - offset)
    rows.error("[" + std::to_string(offset) + ", " + std::to_string(count) +
               "] is not a non-empty range of rows inside the training " +
               (t.callMicrobatches > 1 ? "microbatch of " : "batch of ") +
               std::to_string(chunk));
  t.batchOffset = int64_t(offset);
  t.batchRows = int64_t(count);
}

/// Reads a program entry of the manifest (devices[k], or training.eval):
/// its libraries (or, when it lists none, `stem`.cpu.so / .cuda.so found in
/// the folder), arena and weights sizes and files, inputs and outputs.
void parseProgramEntry(const Node &dev, const std::string &outDir,
                       DeviceManifest &m) {
  Node libraries = dev.field("libraries");
  if (!libraries.value.is_object())
    libraries.error("expected an object");
  if (libraries.has("cpu"))
    m.cpuLibrary = libraries.field("cpu").str();
  if (libraries.has("cuda"))
    m.cudaLibrary = libraries.field("cuda").str();
  // A program compiled with --targets=none and built afterwards with the
  // commands of devices[0].build has its libraries under their usual names.
  auto present = [&](const char *name) {
    struct stat st;
    return ::stat(joinPath(outDir, name).c_str(), &st) == 0 &&
           S_ISREG(st.st_mode);
  };
  std::string stem = "device_0";
  if (dev.has("source")) {
    std::string source = dev.field("source").str();
    if (source.size() > 3 && source.compare(source.size() - 3, 3, ".cu") == 0)
      stem = source.substr(0, source.size() - 3);
  }
  if (m.cpuLibrary.empty() && present((stem + ".cpu.so").c_str()))
    m.cpuLibrary = stem + ".cpu.so";
  if (m.cudaLibrary.empty() && present((stem + ".cuda.so").c_str()))
    m.cudaLibrary = stem + ".cuda.so";
  if (m.cpuLibrary.empty() && m.cudaLibrary.empty())
    libraries.error("lists neither a 'cpu' nor a 'cuda' library, and the "
                    "folder holds no " +
                    stem + ".cpu.so or " + stem +
                    ".cuda.so (build one with the commands in the device's "
                    "build field)");
  m.arenaBytes = dev.field("arena_bytes").u64();
  m.weightsBytes = dev.field("weights_bytes").u64();
  m.weights = dev.field("weights").str();
  m.weightsIndex = dev.field("weights_index").str();
  Node inputs = dev.field("inputs"), outputs = dev.field("outputs");
  for (size_t i = 0, n = inputs.arraySize(); i < n; ++i)
    m.inputs.push_back(inputs.at(i).tensorInfo());
  for (size_t i = 0, n = outputs.arraySize(); i < n; ++i)
    m.outputs.push_back(outputs.at(i).tensorInfo());
}

/// The evaluation step of a training program: the "training" object's
/// "eval" entry, a one-device program of the whole batch (a data-parallel
/// program's is run by its reporting process alone).
DeviceManifest parseEvalEntry(const Node &root, const std::string &outDir) {
  if (!root.has("training"))
    root.error("has no 'training' object: not a training program (compile "
               "it with hetpar-compile --mode training)");
  Node t = root.field("training");
  if (!t.has("eval"))
    t.error("has no 'eval' entry: the program was compiled with "
            "--eval-program=false (recompile without it to evaluate)");
  DeviceManifest m;
  m.training = parseTraining(t);
  m.devices.push_back({});
  parseProgramEntry(t.field("eval"), outDir, m);
  return m;
}

DeviceManifest parseManifestDoc(const json &doc, const std::string &path,
                                const std::string &outDir, bool countOnly,
                                ProgramPart part);

/// The manifest's "graph_inputs" (a partitioned program: every graph input,
/// of which each device takes those its stage reads): each of `m.inputs`
/// must name one, with its dtype. Fills m.graphInputs and m.graphIndex.
void parseGraphInputs(const Node &list, DeviceManifest &m) {
  std::map<std::string, size_t> byName;
  for (size_t i = 0, n = list.arraySize(); i < n; ++i) {
    m.graphInputs.push_back(list.at(i).tensorInfo());
    if (!byName.emplace(m.graphInputs.back().name, i).second)
      list.at(i).field("name").error("names graph input '" +
                                     m.graphInputs.back().name + "' twice");
  }
  for (const TensorInfo &in : m.inputs) {
    auto it = byName.find(in.name);
    if (it == byName.end())
      list.error("lists no input '" + in.name +
                 "', which the device's program takes");
    if (m.graphInputs[it->second].dtype != in.dtype)
      list.at(it->second)
          .field("dtype")
          .error(std::string("is ") +
                 dtypeName(m.graphInputs[it->second].dtype) +
                 " but the device's program takes input '" + in.name + "' as " +
                 dtypeName(in.dtype));
    m.graphIndex.push_back(it->second);
  }
}

/// Reads and checks manifest.json. With `countOnly`, stops after the device
/// count (a multi-device program outside a launcher is then no error).
DeviceManifest parseManifest(const std::string &outDir, bool countOnly = false,
                             ProgramPart part = ProgramPart::Step) {
  std::error_code ec;
  if (!std::filesystem::exists(outDir, ec))
    fail("cannot read the program folder '" + outDir +
         "': No such file or directory");
  if (!std::filesystem::is_directory(outDir, ec))
    fail("'" + outDir +
         "' is not a directory (give the output folder of hetpar-compile)");
  std::string path = joinPath(outDir, "manifest.json");
  json doc = parseJsonFile(path);
  return parseManifestDoc(doc, path, outDir, countOnly, part);
}

/// The id, stage and kind of every entry of the manifest's "devices".
std::vector<DeviceInfo> parseDeviceInfos(const Node &devices) {
  std::vector<DeviceInfo> infos;
  for (size_t k = 0, e = devices.arraySize(); k < e; ++k) {
    Node d = devices.at(k);
    DeviceInfo info;
    info.id = d.has("id") ? int64_t(d.field("id").u64()) : int64_t(k);
    if (d.has("stage"))
      info.stage = int64_t(d.field("stage").u64());
    if (d.has("kind"))
      info.kind = d.field("kind").str();
    infos.push_back(info);
  }
  return infos;
}

/// parseManifest's checks of the manifest's JSON document `doc` (read from
/// `path`); files it names are looked for in `outDir`.
DeviceManifest parseManifestDoc(const json &doc, const std::string &path,
                                const std::string &outDir, bool countOnly,
                                ProgramPart part) {
  Node root{doc, path, ""};
  if (!doc.is_object())
    root.error("expected a JSON object");
  std::string format = root.field("format").str();
  if (format != "hetpar-program")
    fail(path + ": format is '" + format + "', expected 'hetpar-program'");
  uint64_t version = root.field("version").u64();
  if (version != 1)
    fail(path + ": version " + std::to_string(version) +
         " is not supported (this runtime reads version 1)");
  Node devices = root.field("devices");
  size_t numDevices = devices.arraySize();
  if (numDevices == 0)
    devices.error("no devices");
  if (countOnly) {
    DeviceManifest m;
    m.numDevices = numDevices;
    m.devices = parseDeviceInfos(devices);
    return m;
  }
  if (part == ProgramPart::Eval)
    return parseEvalEntry(root, outDir);
  // Several devices: one process each, under mpirun (or srun); rank r runs
  // devices[r] (the mesh order of the plan).
  size_t pick = 0;
  if (numDevices > 1) {
    std::optional<int64_t> rank = launcherRank();
    if (!rank)
      fail(path + ": the program has " + std::to_string(numDevices) +
           " devices: run one process per device, e.g. mpirun -np " +
           std::to_string(numDevices) + " hetpar-run OUT");
    for (const char *var :
         {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
      if (const char *v = std::getenv(var)) {
        char *end = nullptr;
        long long size = std::strtoll(v, &end, 10);
        if (*v && !*end && size != (long long)numDevices)
          fail(path + ": the program has " + std::to_string(numDevices) +
               " devices but the launcher started " + v +
               " processes (start exactly one process per device)");
        break;
      }
    if (uint64_t(*rank) >= numDevices)
      fail(path + ": this process has rank " + std::to_string(*rank) +
           " but the program has " + std::to_string(numDevices) +
           " devices (start exactly one process per device)");
    pick = size_t(*rank);
  }
  Node dev = devices.at(pick);
  DeviceManifest m;
  if (root.has("training")) {
    m.training = parseTraining(root.field("training"));
    parseBatchRows(dev, m.training);
  }
  m.index = pick;
  m.numDevices = numDevices;
  m.id = dev.has("id") ? int64_t(dev.field("id").u64()) : 0;
  if (root.has("microbatches")) {
    m.microbatches = int64_t(root.field("microbatches").u64());
    if (m.microbatches < 1)
      root.field("microbatches").error("must be at least 1");
  }
  if (root.has("output_device"))
    m.outputDevice = int64_t(root.field("output_device").u64());
  m.devices = parseDeviceInfos(devices);
  parseProgramEntry(dev, outDir, m);
  if (root.has("graph_inputs"))
    parseGraphInputs(root.field("graph_inputs"), m);
  return m;
}

} // namespace

Program::Program() : abi_(std::make_unique<ProgramABIFunctions>()) {}

Program::~Program() {
  if (ctx_) {
    for (size_t i = 0; i < inputBuffers_.size(); ++i)
      if (inputBuffers_[i] && !boundInputs_[i])
        abi_->free(ctx_, inputBuffers_[i]);
    for (void *p : outputBuffers_)
      if (p)
        abi_->free(ctx_, p);
    if (arena_)
      abi_->free(ctx_, arena_);
    if (weights_)
      abi_->free(ctx_, weights_);
    abi_->destroy(ctx_);
  }
  if (library_)
    dlclose(library_);
}

/// dlopens `path`, resolves the ABI, checks it against the manifest's numbers
/// (already in arenaBytes_ etc.) and creates the backend context.
Status Program::openLibrary(const std::string &path,
                            const std::string &backend) {
  libraryPath_ = path;
  libraryName_ = std::filesystem::path(path).filename().string();
  dlerror();
  // RTLD_NODELETE: a program built with OpenMP leaves idle worker threads
  // in libgomp; unmapping the library under them crashes at dlclose.
  library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library_) {
    const char *why = dlerror();
    fail("cannot load the " + backend +
             " library: " + (why ? why : path + ": unknown error"),
         /*unavailable=*/true);
  }
  auto resolve = [&](auto &fn, const char *name) {
    void *sym = dlsym(library_, name);
    if (!sym)
      fail(path + ": no symbol " + name + " (not a HetPar program library)");
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
  ProgramABIFunctions &f = *abi_;
  resolve(f.abiVersion, "hetpar_abi_version");
  int version = f.abiVersion();
  if (version != HETPAR_ABI_VERSION)
    fail(path + ": program ABI version " + std::to_string(version) +
         ", this runtime needs " + std::to_string(HETPAR_ABI_VERSION) +
         " (recompile the model with a matching hetpar-compile)");
  resolve(f.backend, "hetpar_backend");
  resolve(f.arenaBytes, "hetpar_arena_bytes");
  resolve(f.weightsBytes, "hetpar_weights_bytes");
  resolve(f.numInputs, "hetpar_num_inputs");
  resolve(f.numOutputs, "hetpar_num_outputs");
  resolve(f.inputBytes, "hetpar_input_bytes");
  resolve(f.outputBytes, "hetpar_output_bytes");
  resolve(f.create, "hetpar_create");
  resolve(f.destroy, "hetpar_destroy");
  resolve(f.alloc, "hetpar_alloc");
  resolve(f.free, "hetpar_free");
  resolve(f.upload, "hetpar_upload");
  resolve(f.download, "hetpar_download");
  resolve(f.run, "hetpar_run");
  resolve(f.error, "hetpar_error");
  readTraceSpans();

  const char *libBackend = f.backend();
  if (!libBackend || backend != libBackend)
    fail(path + ": the library is a '" +
         std::string(libBackend ? libBackend : "(null)") +
         "' program but manifest.json lists it as the " + backend + " library");
  auto check = [&](const char *what, uint64_t got, uint64_t want,
                   const std::string &field) {
    if (got != want)
      fail(path + ": " + what + " is " + std::to_string(got) +
           " but manifest.json says " + std::to_string(want) + " (" + field +
           ")");
  };
  check("hetpar_arena_bytes()", f.arenaBytes(), arenaBytes_,
        manifestDevice_ + ".arena_bytes");
  check("hetpar_weights_bytes()", f.weightsBytes(), weightsBytes_,
        manifestDevice_ + ".weights_bytes");
  check("hetpar_num_inputs()", uint64_t(int64_t(f.numInputs())), inputs_.size(),
        manifestDevice_ + ".inputs");
  check("hetpar_num_outputs()", uint64_t(int64_t(f.numOutputs())),
        outputs_.size(), manifestDevice_ + ".outputs");
  for (size_t i = 0; i < inputs_.size(); ++i)
    check("hetpar_input_bytes()", f.inputBytes(int(i)), tensorBytes(inputs_[i]),
          manifestDevice_ + ".inputs[" + std::to_string(i) +
              "] dtype and shape");
  for (size_t i = 0; i < outputs_.size(); ++i)
    check("hetpar_output_bytes()", f.outputBytes(int(i)),
          tensorBytes(outputs_[i]),
          manifestDevice_ + ".outputs[" + std::to_string(i) +
              "] dtype and shape");

  char err[1024] = {0};
  ctx_ = f.create(err, sizeof(err));
  if (!ctx_) {
    err[sizeof(err) - 1] = 0;
    fail(path + ": hetpar_create failed: " +
             (err[0] ? std::string(err) : std::string("(no message)")),
         /*unavailable=*/true);
  }
  backend_ = backend;
  return Status::ok();
}

void *Program::allocDevice(uint64_t bytes) {
  // hetpar_alloc(0) may return NULL; every buffer gets at least one byte so
  // that the program always sees non-null pointers.
  return abi_->alloc(ctx_, bytes ? bytes : 1);
}

static std::string programError(ProgramABIFunctions &f, void *ctx) {
  const char *e = f.error(ctx);
  return e && *e ? e : "(no message)";
}

/// Allocates the arena and the input/output buffers, reads and checks the
/// weights and uploads them.
Status Program::setUp(const std::string &outDir, const std::string &weightsFile,
                      const std::string &weightsIndex) {
  ProgramABIFunctions &f = *abi_;
  auto allocOrFail = [&](uint64_t bytes, const std::string &what) {
    void *p = allocDevice(bytes);
    if (!p)
      fail("cannot allocate " + std::to_string(bytes) + " bytes for " + what +
           " on the " + backend_ + " backend: " + programError(f, ctx_));
    return p;
  };
  arena_ = allocOrFail(arenaBytes_, "the arena");
  weights_ = allocOrFail(weightsBytes_, "the weights");
  boundInputs_.assign(inputs_.size(), false);
  for (size_t i = 0; i < inputs_.size(); ++i)
    inputBuffers_.push_back(inputs_[i].boundWeight.empty()
                                ? allocOrFail(tensorBytes(inputs_[i]),
                                              "input " + std::to_string(i) +
                                                  " '" + inputs_[i].name + "'")
                                : nullptr);
  for (size_t i = 0; i < outputs_.size(); ++i)
    outputBuffers_.push_back(allocOrFail(tensorBytes(outputs_[i]),
                                         "output " + std::to_string(i) + " '" +
                                             outputs_[i].name + "'"));

  // weights.json: the tensors of weights.bin with their checksums.
  std::string indexPath = joinPath(outDir, weightsIndex);
  std::string binPath = joinPath(outDir, weightsFile);
  json index = parseJsonFile(indexPath);

  // The CPU backend's device memory is host memory: weights.bin goes straight
  // into it (one copy of the weights in memory, not two). Elsewhere it is
  // staged in host memory and uploaded.
  std::error_code ec;
  uintmax_t fileBytes = std::filesystem::file_size(binPath, ec);
  if (ec)
    fail("cannot read '" + binPath + "': " + ec.message());
  if (fileBytes != weightsBytes_)
    fail(binPath + ": " + std::to_string(fileBytes) + " bytes, expected " +
         std::to_string(weightsBytes_) + " (" + manifestDevice_ +
         ".weights_bytes in manifest.json)");
  bool direct = backend_ == "cpu";
  std::vector<uint8_t> staging;
  if (!direct)
    staging.resize(weightsBytes_);
  uint8_t *host = direct ? static_cast<uint8_t *>(weights_) : staging.data();
  Status st = detail::readFileInto(binPath, host, weightsBytes_);
  if (!st.isOk())
    return st;
  std::vector<IndexedTensor> indexed = parseWeightsIndex(
      index, indexPath, binPath, weightsFile, weightsBytes_, manifestDevice_);
  checkWeightsCrc(indexed, host, binPath);
  for (IndexedTensor &t : indexed)
    weightTensors_.push_back(std::move(t.tensor));
  if (!direct && weightsBytes_ &&
      f.upload(ctx_, weights_, host, weightsBytes_) != 0)
    fail("uploading the weights failed: " + programError(f, ctx_));
  return Status::ok();
}

Status programDevices(const std::string &outDir,
                      std::vector<DeviceInfo> &devices, int64_t &rank) {
  try {
    devices = parseManifest(outDir, /*countOnly=*/true).devices;
  } catch (const LoadError &e) {
    return Status::error(e.message);
  } catch (const std::exception &e) {
    return Status::error(e.what());
  }
  std::optional<int64_t> r = launcherRank();
  rank = r ? *r : -1;
  return Status::ok();
}

Status readProgramWeights(const std::string &outDir, ProgramWeights &out) {
  out = ProgramWeights();
  try {
    std::string path = joinPath(outDir, "manifest.json");
    json doc = parseJsonFile(path);
    parseManifestDoc(doc, path, outDir, /*countOnly=*/true, ProgramPart::Step);
    Node root{doc, path, ""};
    if (root.has("training"))
      out.model = parseTraining(root.field("training")).model;
    Node devices = root.field("devices");
    for (size_t k = 0, n = devices.arraySize(); k < n; ++k) {
      DeviceManifest m;
      parseProgramEntry(devices.at(k), outDir, m);
      std::string indexPath = joinPath(outDir, m.weightsIndex);
      std::vector<WeightTensor> tensors;
      for (IndexedTensor &t : parseWeightsIndex(
               parseJsonFile(indexPath), indexPath, joinPath(outDir, m.weights),
               m.weights, m.weightsBytes, "devices[" + std::to_string(k) + "]"))
        tensors.push_back(std::move(t.tensor));
      out.devices.push_back(std::move(tensors));
    }
  } catch (const LoadError &e) {
    return Status::error(e.message);
  } catch (const std::exception &e) {
    return Status::error(e.what());
  }
  return Status::ok();
}

Status Program::load(const std::string &outDir, const std::string &backend,
                     std::unique_ptr<Program> &out, ProgramPart part) {
  out.reset();
  try {
    if (backend != "cpu" && backend != "cuda" && backend != "auto")
      return Status::error("unknown backend '" + backend +
                           "' (cpu, cuda or auto)");
    DeviceManifest m = parseManifest(outDir, /*countOnly=*/false, part);
    std::string manifestPath = joinPath(outDir, "manifest.json");

    auto attempt = [&](const std::string &b, const std::string &library) {
      std::unique_ptr<Program> p(new Program());
      p->arenaBytes_ = m.arenaBytes;
      p->weightsBytes_ = m.weightsBytes;
      p->numDevices_ = m.numDevices;
      p->deviceId_ = m.id;
      p->microbatches_ = m.microbatches;
      p->manifestDevice_ = part == ProgramPart::Eval
                               ? std::string("training.eval")
                               : "devices[" + std::to_string(m.index) + "]";
      p->outputDevice_ = m.outputDevice;
      p->devices_ = m.devices;
      p->inputs_ = m.inputs;
      p->outputs_ = m.outputs;
      p->graphInputs_ = m.graphInputs;
      p->graphIndex_ = m.graphIndex;
      if (m.graphInputs.empty()) {
        // The device takes every graph input (one device, or a manifest
        // that lists none).
        p->graphInputs_ = p->stepInputs();
        for (size_t i = 0; i < m.inputs.size(); ++i)
          p->graphIndex_.push_back(i);
      }
      p->outDir_ = outDir;
      p->training_ = m.training;
      Status st = p->openLibrary(joinPath(outDir, library), b);
      if (st.isOk())
        st = p->setUp(outDir, m.weights, m.weightsIndex);
      if (!st.isOk())
        fail(st.message());
      return p;
    };

    std::string fallback;
    if (backend == "cuda" || (backend == "auto" && !m.cudaLibrary.empty())) {
      if (m.cudaLibrary.empty())
        return Status::error(manifestPath +
                             ": the program has no CUDA library "
                             "(devices[" +
                             std::to_string(m.index) +
                             "].libraries.cuda); it was compiled "
                             "without CUDA");
      try {
        out = attempt("cuda", m.cudaLibrary);
        return Status::ok();
      } catch (const LoadError &e) {
        if (backend == "cuda" || !e.unavailable)
          throw;
        fallback = e.message;
      }
    }
    if (m.cpuLibrary.empty())
      return Status::error(
          manifestPath + ": the program has no CPU library (devices[" +
          std::to_string(m.index) + "].libraries.cpu)" +
          (fallback.empty() ? "" : "; CUDA is unavailable: " + fallback));
    out = attempt("cpu", m.cpuLibrary);
    out->fallbackReason_ = fallback;
    return Status::ok();
  } catch (const LoadError &e) {
    out.reset();
    return Status::error(e.message);
  } catch (const std::bad_alloc &) {
    out.reset();
    return Status::error("out of memory loading '" + outDir + "'");
  } catch (const std::exception &e) {
    out.reset();
    return Status::error("cannot load '" + outDir + "': " + e.what());
  } catch (...) {
    out.reset();
    return Status::error("cannot load '" + outDir + "'");
  }
}

namespace {
/// The tensors of a step: `infos` with the batch dimension `m` times larger.
std::vector<TensorInfo> scaled(std::vector<TensorInfo> infos, int64_t m) {
  for (TensorInfo &t : infos)
    if (t.batchDim >= 0)
      t.shape[t.batchDim] *= m;
  return infos;
}

/// Checks input i's host tensor against the manifest's description.
Status checkInput(size_t i, const TensorInfo &want, const HostTensor &got) {
  std::string what = "input " + std::to_string(i) + " '" + want.name + "'";
  // NumPy has no bfloat16: its raw bits come as uint16.
  bool bf16Bits = want.dtype == DType::BFloat16 && got.dtype == DType::UInt16;
  if (got.dtype != want.dtype && !bf16Bits)
    return Status::error(what + ": dtype " + dtypeName(got.dtype) +
                         " does not match the model's " +
                         dtypeName(want.dtype));
  if (got.shape != want.shape)
    return Status::error(what + ": shape " + formatShape(got.shape) +
                         " does not match the model's " +
                         formatShape(want.shape));
  if (got.data.size() != tensorBytes(want))
    return Status::error(what + ": holds " + std::to_string(got.data.size()) +
                         " bytes, " + std::to_string(tensorBytes(want)) +
                         " expected for " + dtypeName(want.dtype) + " " +
                         formatShape(want.shape));
  return Status::ok();
}

Status checkAgainst(const std::vector<TensorInfo> &wanted,
                    const std::vector<HostTensor> &inputs) {
  if (inputs.size() != wanted.size())
    return Status::error("expected " + plural(wanted.size(), "input") +
                         (wanted.empty() ? "" : " (" + describe(wanted) + ")") +
                         ", got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (Status st = checkInput(i, wanted[i], inputs[i]); !st.isOk())
      return st;
  return Status::ok();
}
} // namespace

Status Program::checkInputs(const std::vector<HostTensor> &inputs) const {
  return checkAgainst(inputs_, inputs);
}

std::vector<TensorInfo> Program::stepInputs() const {
  return scaled(inputs_, microbatches_);
}

std::vector<TensorInfo> Program::stepOutputs() const {
  return scaled(outputs_, microbatches_);
}

Status Program::checkStepInputs(const std::vector<HostTensor> &inputs) const {
  return checkAgainst(stepInputs(), inputs);
}

Status Program::checkGraphInputs(const std::vector<HostTensor> &inputs) const {
  return checkAgainst(graphInputs_, inputs);
}

std::vector<HostTensor>
Program::programInputsOf(std::vector<HostTensor> graphInputs) const {
  std::vector<HostTensor> mine;
  for (size_t g : graphIndex_)
    mine.push_back(g < graphInputs.size() ? std::move(graphInputs[g])
                                          : HostTensor());
  return mine;
}

Status splitAlong(const HostTensor &t, int64_t dim, size_t parts,
                  std::vector<HostTensor> &out) {
  out.clear();
  if (dim < 0 || size_t(dim) >= t.shape.size() || parts == 0 ||
      t.shape[dim] % int64_t(parts))
    return Status::error("cannot cut shape " + formatShape(t.shape) + " into " +
                         std::to_string(parts) +
                         " equal parts along dimension " + std::to_string(dim));
  // Rows of everything before `dim`, each `extent * inner` bytes.
  size_t rows = 1, inner = dtypeSize(t.dtype);
  for (int64_t d = 0; d < dim; ++d)
    rows *= size_t(t.shape[d]);
  for (size_t d = size_t(dim) + 1; d < t.shape.size(); ++d)
    inner *= size_t(t.shape[d]);
  size_t piece = size_t(t.shape[dim]) / parts * inner;
  for (size_t p = 0; p < parts; ++p) {
    HostTensor h;
    h.dtype = t.dtype;
    h.shape = t.shape;
    h.shape[dim] /= int64_t(parts);
    h.data.reserve(rows * piece);
    for (size_t r = 0; r < rows; ++r) {
      const uint8_t *from = t.data.data() + r * parts * piece + p * piece;
      h.data.insert(h.data.end(), from, from + piece);
    }
    out.push_back(std::move(h));
  }
  return Status::ok();
}

Status joinAlong(const std::vector<HostTensor> &pieces, int64_t dim,
                 HostTensor &out) {
  if (pieces.empty())
    return Status::error("nothing to join");
  const HostTensor &first = pieces.front();
  if (dim < 0 || size_t(dim) >= first.shape.size())
    return Status::error("cannot join along dimension " + std::to_string(dim) +
                         " of shape " + formatShape(first.shape));
  out = HostTensor();
  out.dtype = first.dtype;
  out.shape = first.shape;
  out.shape[dim] = 0;
  for (const HostTensor &p : pieces) {
    std::vector<int64_t> a = p.shape, b = first.shape;
    if (a.size() == b.size())
      a[dim] = b[dim] = 0;
    if (p.dtype != first.dtype || a != b)
      return Status::error("cannot join " + formatShape(p.shape) + " to " +
                           formatShape(first.shape) + " along dimension " +
                           std::to_string(dim));
    out.shape[dim] += p.shape[dim];
  }
  size_t rows = 1, inner = dtypeSize(first.dtype);
  for (int64_t d = 0; d < dim; ++d)
    rows *= size_t(first.shape[d]);
  for (size_t d = size_t(dim) + 1; d < first.shape.size(); ++d)
    inner *= size_t(first.shape[d]);
  out.data.reserve(rows * size_t(out.shape[dim]) * inner);
  for (size_t r = 0; r < rows; ++r)
    for (const HostTensor &p : pieces) {
      size_t run = size_t(p.shape[dim]) * inner;
      const uint8_t *from = p.data.data() + r * run;
      out.data.insert(out.data.end(), from, from + run);
    }
  return Status::ok();
}

Status Program::uploadInputs(const std::vector<HostTensor> &inputs) {
  Status st = checkInputs(inputs);
  if (!st.isOk())
    return st;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].data.empty())
      continue;
    if (abi_->upload(ctx_, inputBuffers_[i], inputs[i].data.data(),
                     inputs[i].data.size()) != 0)
      return Status::error("uploading input " + std::to_string(i) + " '" +
                           inputs_[i].name +
                           "' failed: " + programError(*abi_, ctx_));
  }
  return Status::ok();
}

Status Program::uploadInput(size_t i, const HostTensor &t) {
  if (i >= inputs_.size())
    return Status::error("no input " + std::to_string(i));
  if (!inputs_[i].boundWeight.empty())
    return Status::error("input " + std::to_string(i) + " '" + inputs_[i].name +
                         "' reads weights tensor '" + inputs_[i].boundWeight +
                         "' and takes no data");
  if (Status st = checkInput(i, inputs_[i], t); !st.isOk())
    return st;
  if (abi_->upload(ctx_, inputBuffers_[i], t.data.data(), t.data.size()) != 0)
    return Status::error("uploading input " + std::to_string(i) + " '" +
                         inputs_[i].name +
                         "' failed: " + programError(*abi_, ctx_));
  return Status::ok();
}

Status Program::bindInput(size_t i, void *device) {
  if (i >= inputs_.size() || inputs_[i].boundWeight.empty() || !device)
    return Status::error("input " + std::to_string(i) +
                         " cannot be bound to weights");
  inputBuffers_[i] = device;
  boundInputs_[i] = true;
  return Status::ok();
}

void *Program::weightsAt(uint64_t offset) const {
  return offset < weightsBytes_ ? static_cast<uint8_t *>(weights_) + offset
                                : nullptr;
}

Status Program::readWeights(uint64_t offset, void *dst, uint64_t bytes) {
  if (offset > weightsBytes_ || bytes > weightsBytes_ - offset)
    return Status::error("weights bytes " + std::to_string(offset) + ".." +
                         std::to_string(offset + bytes) + " lie outside the " +
                         std::to_string(weightsBytes_) + "-byte buffer");
  if (bytes &&
      abi_->download(ctx_, dst, static_cast<uint8_t *>(weights_) + offset,
                     bytes) != 0)
    return Status::error("downloading the weights failed: " +
                         programError(*abi_, ctx_));
  return Status::ok();
}

Status Program::writeWeights(uint64_t offset, const void *src, uint64_t bytes) {
  if (offset > weightsBytes_ || bytes > weightsBytes_ - offset)
    return Status::error("weights bytes " + std::to_string(offset) + ".." +
                         std::to_string(offset + bytes) + " lie outside the " +
                         std::to_string(weightsBytes_) + "-byte buffer");
  if (bytes && abi_->upload(ctx_, static_cast<uint8_t *>(weights_) + offset,
                            src, bytes) != 0)
    return Status::error("uploading the weights failed: " +
                         programError(*abi_, ctx_));
  return Status::ok();
}

/// The library's trace spans, when it has the optional trace symbols. A
/// span text that is not "CATEGORY<TAB>MICROBATCH<TAB>DETAIL" with a known
/// category fails the load: the library is not what its ABI says.
void Program::readTraceSpans() {
  ProgramABIFunctions &f = *abi_;
  f.tracePoints = reinterpret_cast<decltype(f.tracePoints)>(
      dlsym(library_, "hetpar_trace_points"));
  f.traceSpan = reinterpret_cast<decltype(f.traceSpan)>(
      dlsym(library_, "hetpar_trace_span"));
  f.trace =
      reinterpret_cast<decltype(f.trace)>(dlsym(library_, "hetpar_trace"));
  if (!f.tracePoints || !f.traceSpan || !f.trace)
    return;
  int n = f.tracePoints();
  if (n < 0 || n > (1 << 20))
    fail(libraryPath_ + ": hetpar_trace_points() is " + std::to_string(n));
  static const char *const categories[] = {"forward", "backward", "optimizer",
                                           "collective", "transfer"};
  for (int i = 0; i < n; ++i) {
    const char *text = f.traceSpan(i);
    std::string t = text ? text : "";
    size_t a = t.find('\t'),
           b = a == std::string::npos ? a : t.find('\t', a + 1);
    TraceSpan span;
    if (b != std::string::npos) {
      span.category = t.substr(0, a);
      span.detail = t.substr(b + 1);
      char *end = nullptr;
      std::string mb = t.substr(a + 1, b - a - 1);
      span.microbatch = std::strtoll(mb.c_str(), &end, 10);
      if (mb.empty() || *end)
        b = std::string::npos;
    }
    if (b == std::string::npos ||
        std::find(std::begin(categories), std::end(categories),
                  span.category) == std::end(categories))
      fail(libraryPath_ + ": hetpar_trace_span(" + std::to_string(i) +
           ") is '" + t + "', not CATEGORY<TAB>MICROBATCH<TAB>DETAIL");
    traceSpans_.push_back(std::move(span));
  }
}

Status Program::enableTrace() {
  if (traceSpans_.empty())
    return Status::error(libraryName_ +
                         " has no trace points (only training programs have "
                         "them; recompile older programs)");
  traceTimes_.assign(traceSpans_.size() + 1, 0.0);
  if (abi_->trace(ctx_, traceTimes_.data()) != 0)
    return Status::error("turning the trace on failed: " +
                         programError(*abi_, ctx_));
  return Status::ok();
}

Status Program::runDevice() {
  if (abi_->run(ctx_, arena_, weights_, inputBuffers_.data(),
                outputBuffers_.data()) != 0)
    return Status::error("hetpar_run failed on the " + backend_ +
                         " backend: " + programError(*abi_, ctx_));
  return Status::ok();
}

Status Program::downloadOutputs(std::vector<HostTensor> &outputs) {
  try {
    outputs.resize(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      HostTensor &t = outputs[i];
      t.dtype = outputs_[i].dtype;
      t.shape = outputs_[i].shape;
      t.data.resize(tensorBytes(outputs_[i]));
      if (t.data.empty())
        continue;
      if (abi_->download(ctx_, t.data.data(), outputBuffers_[i],
                         t.data.size()) != 0)
        return Status::error("downloading output " + std::to_string(i) + " '" +
                             outputs_[i].name +
                             "' failed: " + programError(*abi_, ctx_));
    }
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory for the outputs");
  } catch (const std::exception &e) {
    return Status::error(std::string("downloading the outputs failed: ") +
                         e.what());
  }
}

Status Program::run(const std::vector<HostTensor> &inputs,
                    std::vector<HostTensor> &outputs) {
  Status st = uploadInputs(inputs);
  if (st.isOk())
    st = runDevice();
  if (st.isOk())
    st = downloadOutputs(outputs);
  return st;
}

Status detail::checkManifestText(const uint8_t *bytes, size_t size) {
  const std::string path = "manifest.json", outDir = "/nonexistent/hetpar";
  try {
    json doc = parseJsonText(bytes, size, path);
    parseManifestDoc(doc, path, outDir, /*countOnly=*/true, ProgramPart::Step);
    parseManifestDoc(doc, path, outDir, /*countOnly=*/false, ProgramPart::Step);
    if (doc.is_object() && doc.contains("training"))
      parseManifestDoc(doc, path, outDir, /*countOnly=*/false,
                       ProgramPart::Eval);
  } catch (const LoadError &e) {
    return Status::error(e.message);
  } catch (const std::exception &e) {
    return Status::error(e.what());
  }
  return Status::ok();
}

Status detail::checkWeightsIndexText(const uint8_t *text, size_t size,
                                     const uint8_t *weights,
                                     uint64_t weightsBytes) {
  const std::string path = "weights.json", bin = "weights.bin";
  try {
    checkWeightsCrc(parseWeightsIndex(parseJsonText(text, size, path), path,
                                      bin, bin, weightsBytes, "devices[0]"),
                    weights, bin);
  } catch (const LoadError &e) {
    return Status::error(e.message);
  } catch (const std::exception &e) {
    return Status::error(e.what());
  }
  return Status::ok();
}

} // namespace hetpar::rt
