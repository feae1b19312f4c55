//===- ExportONNX.cpp - hetpar-run --export-onnx --------------------------===//
//
// The trained model as ONNX: the source model copy (training.model) with its
// parameters' initializers replaced by the weights buffer's values. Uses the
// protobuf classes of libonnx-dev's onnx.proto, generated at build time and
// linked with the static protobuf-lite, so that hetpar-run still needs only
// libc and libz (scripts/gpu-check.sh carries it to bare GPU machines).
//
//===----------------------------------------------------------------------===//
#include "Export.h"

#include "onnx.pb.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace hetpar::run {

using rt::Status;
namespace fs = std::filesystem;

namespace {

constexpr size_t kExternalBytes = size_t(1) << 20; // 1 MiB

/// Writes `bytes` to `path` through a temporary file, fsync and rename.
Status writeAtomically(const std::string &path, const std::string &bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("cannot write '" + path +
                         "': " + std::strerror(errno));
  const char *p = bytes.data();
  size_t left = bytes.size();
  bool ok = true;
  while (ok && left) {
    ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    ok = w > 0;
    if (ok) {
      p += w;
      left -= size_t(w);
    }
  }
  ok = ok && ::fsync(fd) == 0;
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(tmp.c_str(), path.c_str()) == 0)
    return Status::ok();
  err = err ? err : errno;
  ::unlink(tmp.c_str());
  return Status::error("cannot write '" + path + "': " + std::strerror(err));
}

Status readWhole(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in)
    return Status::error("cannot read '" + path + "'");
  out = ss.str();
  return Status::ok();
}

/// Brings an initializer stored in an external file (relative to `dir`)
/// into raw_data.
Status internalize(onnx::TensorProto &t, const fs::path &dir) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL)
    return Status::ok();
  std::string location;
  uint64_t offset = 0, length = UINT64_MAX;
  for (const onnx::StringStringEntryProto &e : t.external_data()) {
    if (e.key() == "location")
      location = e.value();
    else if (e.key() == "offset")
      offset = std::stoull(e.value());
    else if (e.key() == "length")
      length = std::stoull(e.value());
  }
  std::string bytes;
  Status s = readWhole((dir / location).string(), bytes);
  if (!s.isOk())
    return s;
  if (offset > bytes.size() ||
      (length != UINT64_MAX && length > bytes.size() - offset))
    return Status::error("initializer '" + t.name() +
                         "': its external data lies outside '" +
                         (dir / location).string() + "'");
  t.set_raw_data(
      bytes.substr(offset, length == UINT64_MAX ? std::string::npos : length));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return Status::ok();
}

/// Replaces the initializer of every trained tensor (a parameter, or a
/// buffer such as BatchNormalization's running statistics) with its values.
Status replaceParams(const TrainedTensors &trained, onnx::GraphProto &graph,
                     const std::string &modelPath) {
  for (const auto &[name, t] : trained) {
    onnx::TensorProto *init = nullptr;
    for (onnx::TensorProto &i : *graph.mutable_initializer())
      if (i.name() == name)
        init = &i;
    if (!init)
      return Status::error(modelPath + ": no initializer '" + name +
                           "' for the trained tensor of that name");
    std::vector<int64_t> dims(init->dims().begin(), init->dims().end());
    if (t.dtype != rt::DType::Float32 ||
        init->data_type() != onnx::TensorProto::FLOAT || dims != t.shape)
      return Status::error(modelPath + ": initializer '" + name +
                           "' is not float32 " + rt::formatShape(t.shape) +
                           " like the trained tensor");
    init->clear_float_data();
    init->clear_external_data();
    init->set_data_location(onnx::TensorProto::DEFAULT);
    init->set_raw_data(std::string(t.data.begin(), t.data.end()));
  }
  return Status::ok();
}

/// Moves initializers of kExternalBytes or more into `data` (the bytes of
/// the file named `location`).
void externalize(onnx::GraphProto &graph, const std::string &location,
                 std::string &data) {
  for (onnx::TensorProto &t : *graph.mutable_initializer()) {
    if (t.raw_data().size() < kExternalBytes)
      continue;
    auto add = [&](const char *key, const std::string &value) {
      onnx::StringStringEntryProto *e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", location);
    add("offset", std::to_string(data.size()));
    add("length", std::to_string(t.raw_data().size()));
    data += t.raw_data();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
  }
}

} // namespace

Status writeTrainedONNX(const std::string &outDir, const std::string &model,
                        const TrainedTensors &trained,
                        const std::string &file) {
  if (model.empty())
    return Status::error("--export-onnx: the program has no training.model "
                         "(the copy of its source model) in manifest.json");
  fs::path source = fs::path(outDir) / model;
  std::string bytes;
  Status s = readWhole(source.string(), bytes);
  if (!s.isOk())
    return s;
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes))
    return Status::error(source.string() + ": not a valid ONNX model");
  onnx::GraphProto &graph = *proto.mutable_graph();
  try {
    for (onnx::TensorProto &t : *graph.mutable_initializer())
      if (!(s = internalize(t, source.parent_path())).isOk())
        return s;
  } catch (const std::exception &) {
    return Status::error(source.string() + ": a bad external_data entry");
  }
  if (!(s = replaceParams(trained, graph, source.string())).isOk())
    return s;
  std::string location = fs::path(file).filename().string() + ".data";
  std::string data;
  externalize(graph, location, data);
  if (!data.empty() && !(s = writeAtomically(file + ".data", data)).isOk())
    return s;
  std::string out;
  if (!proto.SerializeToString(&out))
    return Status::error("cannot serialize the model for '" + file +
                         "' (over 2 GiB of inline data?)");
  return writeAtomically(file, out);
}

} // namespace hetpar::run
