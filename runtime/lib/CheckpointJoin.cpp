//===- CheckpointJoin.cpp - A checkpoint folder's files joined and recut --===//
//
// docs/training.md, "Checkpoint layout": the files of one checkpoint (a
// pipeline's stages, a sharded run's devices) joined into whole tensors by
// their layout index, and a program's own part cut back out of them, so that
// a run resumes or exports under a plan other than the one that wrote it.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

namespace hetpar::rt {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The elements of the (sliced) tensor that `p` places: the slice's when
/// the tensor is a tensor-parallel slice, else the whole tensor's.
int64_t slicedElements(const TensorPlacement &p) {
  int64_t n = product(p.wholeShape);
  if (p.sliceDim >= 0 && p.wholeShape[size_t(p.sliceDim)] > 0)
    n = n / p.wholeShape[size_t(p.sliceDim)] * p.sliceSize;
  return n;
}

/// Calls fn(piece, whole, count) for each run of `count` elements that are
/// contiguous both in the piece `p` places (its elements 0..pieceElements)
/// and in the whole tensor: `piece` and `whole` are element indices.
template <typename Fn>
void forEachRun(const TensorPlacement &p, int64_t pieceElements, Fn fn) {
  int64_t inner = product(p.wholeShape), extent = 1, start = 0, size = 1;
  if (p.sliceDim >= 0) {
    size_t d = size_t(p.sliceDim);
    inner = 1;
    for (size_t k = d + 1; k < p.wholeShape.size(); ++k)
      inner *= p.wholeShape[k];
    extent = p.wholeShape[d];
    start = p.sliceStart;
    size = p.sliceSize;
  }
  int64_t base = p.offset >= 0 ? p.offset : 0;
  for (int64_t e = 0; e < pieceElements;) {
    int64_t k = base + e;
    int64_t i = inner ? k % inner : 0;
    int64_t j = inner ? k / inner % size : 0;
    int64_t o = inner ? k / inner / size : 0;
    int64_t n = std::min(pieceElements - e, inner - i);
    fn(e, (o * extent + start + j) * inner + i, n);
    e += n;
  }
}

/// Why `p` cannot place a tensor of `shape` ("" when it can): the slice in
/// the whole shape, the piece's elements in the slice.
std::string placementProblem(const TensorPlacement &p,
                             const std::vector<int64_t> &shape) {
  const std::vector<int64_t> &whole = p.wholeShape;
  // At most 2^40 elements (4 TiB of float32): no product overflows.
  int64_t total = 1;
  for (int64_t d : whole)
    if (d < 0 || __builtin_mul_overflow(total, d, &total) ||
        total > (int64_t(1) << 40))
      return "whole shape " + formatShape(whole) + " is not a tensor shape";
  std::vector<int64_t> sliced = whole;
  if (p.sliceDim >= 0) {
    if (size_t(p.sliceDim) >= whole.size() || p.sliceStart < 0 ||
        p.sliceSize < 0 || p.sliceStart > whole[size_t(p.sliceDim)] ||
        p.sliceSize > whole[size_t(p.sliceDim)] - p.sliceStart)
      return "slice {dim " + std::to_string(p.sliceDim) + ", start " +
             std::to_string(p.sliceStart) + ", size " +
             std::to_string(p.sliceSize) + "} lies outside " +
             formatShape(whole);
    sliced[size_t(p.sliceDim)] = p.sliceSize;
  }
  if (p.offset < 0)
    return shape == sliced ? ""
                           : "shape " + formatShape(shape) +
                                 " is not the layout's " + formatShape(sliced);
  int64_t n = product(shape);
  if (n != p.elements || p.offset > slicedElements(p) ||
      p.elements > slicedElements(p) - p.offset)
    return "elements [" + std::to_string(p.offset) + ", +" +
           std::to_string(p.elements) + ") of " + std::to_string(n) +
           " do not lie in the " + std::to_string(slicedElements(p)) +
           " elements of " + formatShape(sliced);
  return "";
}

/// The placement a layout index entry gives (docs/training.md, "Checkpoint
/// layout"); throws json errors on a malformed entry.
TensorPlacement parsePlacement(const json &entry) {
  TensorPlacement p;
  p.wholeShape = entry.at("shape").get<std::vector<int64_t>>();
  if (entry.contains("slice")) {
    const json &s = entry.at("slice");
    p.sliceDim = s.at("dim").get<int64_t>();
    p.sliceStart = s.at("start").get<int64_t>();
    p.sliceSize = s.at("size").get<int64_t>();
  }
  if (entry.contains("offset")) {
    p.offset = entry.at("offset").get<int64_t>();
    p.elements = entry.at("elements").get<int64_t>();
  }
  if (p.sliceDim < -1 || p.offset < -1)
    throw std::out_of_range("negative dim or offset");
  return p;
}

/// The step of the checkpoint file at `path`, from its header. Errors: a
/// file that is not a HetPar checkpoint, or an unreadable header or step
/// (readSafetensors names what is wrong with the file).
Status stepOf(const std::string &path, int64_t &step) {
  std::map<std::string, std::string> meta = detail::headerMetadata(path);
  if (meta.empty()) {
    SafetensorsFile file;
    Status s = readSafetensors(path, file);
    if (!s.isOk())
      return s;
  }
  if (meta["format"] != "hetpar-checkpoint")
    return Status::error(path + ": not a HetPar checkpoint (__metadata__." +
                         "format is '" + meta["format"] +
                         "', expected 'hetpar-checkpoint')");
  char *end = nullptr;
  long long v = std::strtoll(meta["step"].c_str(), &end, 10);
  if (meta["step"].empty() || *end || v < 0)
    return Status::error(path + ": __metadata__.step '" + meta["step"] +
                         "' is not a step count");
  step = int64_t(v);
  return Status::ok();
}

uint32_t crcOf(const std::vector<uint8_t> &data) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return uint32_t(crc32_z(crc, data.data(), z_size_t(data.size())));
}

/// Checks one file of the checkpoint (format, version, CRC-32s) and returns
/// its layout index.
Status checkFile(const std::string &path, const SafetensorsFile &file,
                 json &layout) {
  auto meta = [&](const char *key) {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? std::string() : it->second;
  };
  if (meta("format") != "hetpar-checkpoint" || meta("version") != "1")
    return Status::error(path + ": not a HetPar checkpoint of version 1");
  json crcs = json::parse(meta("crc32"), nullptr, false);
  layout = file.metadata.count("layout")
               ? json::parse(meta("layout"), nullptr, false)
               : json::object();
  if (!crcs.is_object() || !layout.is_object())
    return Status::error(path + ": __metadata__.crc32 or .layout is not a "
                                "JSON object");
  for (const NamedTensor &t : file.tensors) {
    auto c = crcs.find(t.name);
    if (c == crcs.end() || !c->is_number_unsigned() ||
        c->get<uint64_t>() != crcOf(t.tensor.data))
      return Status::error(path + ": tensor '" + t.name +
                           "' fails its CRC-32 check (the file is corrupt)");
  }
  return Status::ok();
}

/// Adds `t` of file `path`, placed by `p`, to the joined tensors. Elements
/// that an earlier file holds must be equal.
Status addPiece(JoinedCheckpoint &out, const std::string &path,
                const NamedTensor &t, const TensorPlacement &p) {
  if (std::string why = placementProblem(p, t.tensor.shape); !why.empty())
    return Status::error(path + ": the layout of tensor '" + t.name +
                         "': " + why);
  auto [it, fresh] = out.tensors.try_emplace(t.name);
  JoinedCheckpoint::Tensor &j = it->second;
  if (fresh) {
    j.whole.dtype = t.tensor.dtype;
    j.whole.shape = p.wholeShape;
    j.whole.data.assign(
        size_t(product(p.wholeShape)) * dtypeSize(j.whole.dtype), 0);
    j.covered.assign(size_t(product(p.wholeShape)), 0);
    j.firstFile = path;
  } else if (j.whole.dtype != t.tensor.dtype || j.whole.shape != p.wholeShape) {
    return Status::error(path + ": tensor '" + t.name + "' is a part of " +
                         dtypeName(t.tensor.dtype) + " " +
                         formatShape(p.wholeShape) + " but " + j.firstFile +
                         " holds it as part of " + dtypeName(j.whole.dtype) +
                         " " + formatShape(j.whole.shape));
  }
  size_t es = dtypeSize(t.tensor.dtype);
  bool agree = true;
  forEachRun(p, product(t.tensor.shape), [&](int64_t e, int64_t w, int64_t n) {
    const uint8_t *src = t.tensor.data.data() + size_t(e) * es;
    uint8_t *dst = j.whole.data.data() + size_t(w) * es;
    for (int64_t k = 0; k < n; ++k) {
      uint8_t &seen = j.covered[size_t(w + k)];
      if (seen && std::memcmp(dst + k * es, src + k * es, es) != 0)
        agree = false;
      std::memcpy(dst + k * es, src + k * es, es);
      seen = 1;
    }
  });
  if (!agree)
    return Status::error(path + " and " + j.firstFile +
                         " hold different values of the same elements of '" +
                         t.name + "' (they are not one checkpoint)");
  return Status::ok();
}

} // namespace

std::map<std::string, std::string>
detail::headerMetadata(const std::string &path) {
  std::map<std::string, std::string> out;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return out;
  uint64_t n = 0;
  std::string header;
  if (std::fread(&n, 8, 1, f) == 1 && n < (uint64_t(1) << 27)) {
    header.resize(n);
    if (std::fread(header.data(), 1, n, f) != n)
      header.clear();
  }
  std::fclose(f);
  json j = json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("__metadata__") ||
      !j["__metadata__"].is_object())
    return out;
  for (auto &[k, v] : j["__metadata__"].items())
    if (v.is_string())
      out[k] = v.get<std::string>();
  return out;
}

TensorPlacement placementOf(const std::vector<WeightTensor> &tensors,
                            const WeightTensor &w) {
  const WeightTensor *param = &w;
  if (!w.of.empty()) {
    param = nullptr;
    for (const WeightTensor &t : tensors)
      if (t.name == w.of)
        param = &t;
  }
  bool split = param && param->tensorDim >= 0;
  TensorPlacement p;
  p.wholeShape = w.shape;
  // A tensor-parallel parameter, or its optimizer state of its shape.
  if (split && (w.shardOffset >= 0 || param->shape == w.shape)) {
    p.wholeShape = param->wholeShape;
    p.sliceDim = param->tensorDim;
    p.sliceStart = param->tensorStart;
    p.sliceSize = param->shape[size_t(param->tensorDim)];
  }
  if (w.shardOffset >= 0) {
    if (!split)
      p.wholeShape = param ? param->shape : std::vector<int64_t>();
    p.offset = w.shardOffset;
    p.elements = product(w.shape);
  }
  return p;
}

Status joinCheckpoint(const std::string &dir, JoinedCheckpoint &out) {
  out = JoinedCheckpoint();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return Status::error("cannot resume from '" + dir + "': " +
                         (std::filesystem::exists(dir, ec)
                              ? "not a folder (give the --checkpoint folder)"
                              : "no such folder"));
  std::vector<std::string> files = detail::checkpointFiles(dir);
  if (files.empty())
    return Status::error("cannot resume from '" + dir +
                         "': it holds no checkpoint*.safetensors file");
  // The newest step's files are the checkpoint; older ones are left out.
  std::vector<int64_t> steps(files.size());
  for (size_t i = 0; i < files.size(); ++i)
    if (Status s = stepOf(files[i], steps[i]); !s.isOk())
      return s;
  out.step = *std::max_element(steps.begin(), steps.end());
  for (size_t i = 0; i < files.size(); ++i)
    (steps[i] == out.step ? out.files : out.leftOut).push_back(files[i]);
  try {
    for (const std::string &path : out.files) {
      SafetensorsFile file;
      json layout;
      Status s = readSafetensors(path, file);
      if (s.isOk())
        s = checkFile(path, file, layout);
      for (size_t i = 0; s.isOk() && i < file.tensors.size(); ++i) {
        const NamedTensor &t = file.tensors[i];
        TensorPlacement p;
        p.wholeShape = t.tensor.shape;
        if (layout.contains(t.name))
          p = parsePlacement(layout.at(t.name));
        s = addPiece(out, path, t, p);
      }
      if (!s.isOk())
        return s;
    }
  } catch (const std::exception &e) {
    return Status::error("'" + dir +
                         "': a checkpoint's layout index is "
                         "malformed (" +
                         e.what() + ")");
  }
  return Status::ok();
}

Status cutFromJoined(const JoinedCheckpoint &joined, const std::string &name,
                     const TensorPlacement &p, DType dtype,
                     std::vector<int64_t> shape, HostTensor &out) {
  auto files = [&] {
    std::string s;
    for (const std::string &f : joined.files)
      s += (s.empty() ? "" : ", ") + fs::path(f).filename().string();
    return s;
  };
  auto it = joined.tensors.find(name);
  if (it == joined.tensors.end())
    return Status::error("the checkpoint of step " +
                         std::to_string(joined.step) + " (" + files() +
                         ") has no tensor '" + name +
                         "' (it was written for another model, optimizer or "
                         "precision, or a file of it is missing)");
  const JoinedCheckpoint::Tensor &j = it->second;
  if (j.whole.dtype != dtype || j.whole.shape != p.wholeShape)
    return Status::error("tensor '" + name + "' is " +
                         dtypeName(j.whole.dtype) + " " +
                         formatShape(j.whole.shape) + " in the checkpoint (" +
                         files() + "), this program's is " + dtypeName(dtype) +
                         " " + formatShape(p.wholeShape));
  if (std::string why = placementProblem(p, shape); !why.empty())
    return Status::error("tensor '" + name + "': " + why);
  out.dtype = dtype;
  out.shape = std::move(shape);
  size_t es = dtypeSize(dtype);
  out.data.assign(size_t(out.numElements()) * es, 0);
  bool covered = true;
  forEachRun(p, out.numElements(), [&](int64_t e, int64_t w, int64_t n) {
    for (int64_t k = 0; k < n; ++k)
      covered &= j.covered[size_t(w + k)] != 0;
    std::memcpy(out.data.data() + size_t(e) * es,
                j.whole.data.data() + size_t(w) * es, size_t(n) * es);
  });
  if (covered)
    return Status::ok();
  std::string older;
  for (const std::string &f : joined.leftOut)
    older += (older.empty() ? "" : ", ") + fs::path(f).filename().string();
  return Status::error(
      "the checkpoint of step " + std::to_string(joined.step) + " (" + files() +
      ") does not hold all of '" + name +
      "': a device's or stage's file of that step is missing" +
      (older.empty() ? std::string()
                     : " (files of older steps were left out: " + older + ")"));
}

std::vector<std::string> detail::checkpointFiles(const std::string &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("checkpoint", 0) == 0 && name.size() > 12 &&
        name.compare(name.size() - 12, 12, ".safetensors") == 0)
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace hetpar::rt
