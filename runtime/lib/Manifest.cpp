//===- Manifest.cpp - Reading a program folder's manifest -----------------===//
//
// manifest.json and weights.json as the runtime reads them (Manifest.h), and
// the fuzzing entry points over the same parsers (Internal.h).
//
//===----------------------------------------------------------------------===//
#include "Manifest.h"

#include "Internal.h"

#include <zlib.h>

#include <sys/stat.h>

#include <cstdlib>
#include <limits>
#include <map>

namespace hetpar::rt {
namespace detail {

[[noreturn]] void fail(std::string message, bool unavailable) {
  throw LoadError{std::move(message), unavailable};
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (!name.empty() && name[0] == '/')
    return name;
  if (dir.empty())
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

uint64_t tensorBytes(const TensorInfo &t) {
  return uint64_t(shapeElements(t.shape).value_or(0)) * dtypeSize(t.dtype);
}

namespace {

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

} // namespace

json parseJsonFile(const std::string &path) {
  std::vector<uint8_t> bytes;
  Status st = detail::readFile(path, bytes);
  if (!st.isOk())
    fail(st.message());
  return parseJsonText(bytes.data(), bytes.size(), path);
}

namespace {

/// The zlib CRC-32 of `n` bytes (any size).
uint32_t crc32Of(const uint8_t *data, uint64_t n) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return uint32_t(crc32_z(crc, data, z_size_t(n)));
}

/// weights.json's "tensor_shard" of `w` ({"dim", "start", "size", "shape"}:
/// `w` is indices [start, start + size) of dimension dim of a tensor of
/// `shape`): checked against w's own shape, stored in `w`.
void parseTensorShard(const Node &shard, WeightTensor &w) {
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

} // namespace

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

namespace {

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

} // namespace

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

namespace {

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

} // namespace

DeviceManifest parseManifest(const std::string &outDir, bool countOnly,
                             ProgramPart part) {
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

namespace {

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

} // namespace detail

using namespace detail;

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
