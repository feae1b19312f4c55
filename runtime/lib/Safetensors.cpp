//===- Safetensors.cpp - The safetensors file format ----------------------===//
//
// https://github.com/huggingface/safetensors: u64 little-endian header size
// n, n bytes of UTF-8 JSON, then the data. Each JSON key but __metadata__ is a
// tensor {"dtype": "F32", "shape": [2], "data_offsets": [begin, end]} with
// offsets relative to the start of the data.
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/Training.h"

#include "Internal.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <thread>
#include <tuple>

#include <fcntl.h>
#include <unistd.h>

namespace hetpar::rt {

namespace {

using json = nlohmann::json;

struct DTypeName {
  DType dtype;
  const char *name;
};
constexpr DTypeName kNames[] = {
    {DType::Float32, "F32"}, {DType::Float16, "F16"}, {DType::BFloat16, "BF16"},
    {DType::Float64, "F64"}, {DType::Int64, "I64"},   {DType::Int32, "I32"},
    {DType::Int16, "I16"},   {DType::Int8, "I8"},     {DType::UInt8, "U8"},
    {DType::UInt16, "U16"},  {DType::UInt32, "U32"},  {DType::UInt64, "U64"},
    {DType::Bool, "BOOL"}};

/// The JSON header, padded with spaces to a multiple of 8 bytes.
std::string makeHeader(const SafetensorsFile &file) {
  json header = json::object();
  uint64_t offset = 0;
  for (const NamedTensor &t : file.tensors) {
    uint64_t end = offset + t.tensor.data.size();
    header[t.name] = {{"dtype", safetensorsDType(t.tensor.dtype)},
                      {"shape", t.tensor.shape},
                      {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!file.metadata.empty())
    header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

bool writeAll(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

/// Writes header and data to the open `fd` and fsyncs it.
bool writeContents(int fd, const std::string &header,
                   const SafetensorsFile &file) {
  uint8_t size[8];
  for (int k = 0; k < 8; ++k)
    size[k] = uint8_t((uint64_t(header.size()) >> (8 * k)) & 0xff);
  if (!writeAll(fd, size, 8) || !writeAll(fd, header.data(), header.size()))
    return false;
  for (const NamedTensor &t : file.tensors)
    if (!writeAll(fd, t.tensor.data.data(), t.tensor.data.size()))
      return false;
  return ::fsync(fd) == 0;
}

/// fsyncs the folder holding `path`, so that a rename survives a crash.
void syncParent(const std::string &path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  int fd = ::open(dir.empty() ? "/" : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

const char *safetensorsDType(DType dtype) {
  for (const DTypeName &n : kNames)
    if (n.dtype == dtype)
      return n.name;
  return "?";
}

namespace {

volatile sig_atomic_t heldSignal = 0;
extern "C" void noteSignal(int sig) { heldSignal = sig; }

/// While it lives, SIGINT, SIGTERM and SIGHUP are noted instead of acted on
/// (by whichever thread gets them: OpenMP's and the watchdog's threads too);
/// when it ends the old handlers come back and a noted signal is raised
/// again, so it takes effect after the file is complete.
class InterruptsHeld {
public:
  InterruptsHeld() {
    heldSignal = 0;
    struct sigaction note = {};
    note.sa_handler = noteSignal;
    sigemptyset(&note.sa_mask);
    for (size_t k = 0; k < 3; ++k)
      sigaction(kSignals[k], &note, &old_[k]);
  }
  ~InterruptsHeld() {
    for (size_t k = 0; k < 3; ++k)
      sigaction(kSignals[k], &old_[k], nullptr);
    if (int sig = heldSignal)
      ::raise(sig);
  }
  InterruptsHeld(const InterruptsHeld &) = delete;
  InterruptsHeld &operator=(const InterruptsHeld &) = delete;

private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

/// Whether process `pid` has ended: it does not exist, or it is a zombie
/// (killed, not yet reaped by its parent; kill(pid, 0) still succeeds on
/// one, and mpirun may return before the kernel has reaped a rank it
/// killed).
bool processEnded(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return errno == ESRCH;
  std::FILE *f =
      std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f)
    return false;
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, the state
  // follows the last ')'.
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char *close = std::strrchr(buf, ')');
  return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

/// Removes the files NAME.tmp.<pid> in `dir` for which `ours(NAME)` holds
/// and whose process has ended (one killed by SIGKILL while it wrote): they
/// would pile up run after run. Returns how many such files belong to a
/// process that is still running.
int removeStale(const std::filesystem::path &dir,
                const std::function<bool(const std::string &)> &ours) {
  std::error_code ec;
  int running = 0;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || !ours(name.substr(0, at)))
      continue;
    char *end = nullptr;
    long pid = std::strtol(name.c_str() + at + 5, &end, 10);
    if (pid <= 0 || *end)
      continue;
    if (processEnded(pid_t(pid)))
      std::filesystem::remove(entry.path(), ec);
    else
      ++running;
  }
  return running;
}

/// removeStale for the temporaries of `path`.
void removeStaleTemporariesOf(const std::string &path) {
  std::filesystem::path p(path);
  std::string file = p.filename().string();
  removeStale(p.has_parent_path() ? p.parent_path() : ".",
              [&](const std::string &name) { return name == file; });
}

} // namespace

void removeStaleTemporaries(const std::string &dir, double waitSeconds) {
  const std::string ext = ".safetensors";
  auto ours = [&](const std::string &name) {
    return name.size() > ext.size() &&
           name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(waitSeconds);
  while (removeStale(dir, ours) > 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

Status writeSafetensors(const std::string &path, const SafetensorsFile &file) {
  for (const NamedTensor &t : file.tensors)
    if (t.tensor.data.size() != t.tensor.numBytes())
      return Status::error("cannot write '" + path + "': tensor '" + t.name +
                           "' holds " + std::to_string(t.tensor.data.size()) +
                           " bytes, its shape needs " +
                           std::to_string(t.tensor.numBytes()));
  std::string header;
  try {
    header = makeHeader(file);
  } catch (const std::exception &e) {
    return Status::error("cannot write '" + path + "': " + e.what());
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  removeStaleTemporariesOf(path);
  // Ctrl-C, a terminal hang-up or a TERM (mpirun forwards them to every
  // rank) take effect once the file is renamed or removed: an interrupt
  // never leaves the temporary behind.
  InterruptsHeld held;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("cannot write '" + path +
                         "': " + std::strerror(errno));
  bool ok = writeContents(fd, header, file);
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    return Status::error("cannot write '" + path + "': " + std::strerror(err) +
                         " (the previous file, if any, is unchanged)");
  }
  syncParent(path);
  return Status::ok();
}

namespace {

/// Parses one tensor entry of the header; `data` spans the data section.
Status readEntry(const std::string &name, const json &entry,
                 const uint8_t *data, uint64_t dataBytes, NamedTensor &out) {
  auto bad = [&](const std::string &what) {
    return Status::error("tensor '" + name + "': " + what);
  };
  if (!entry.is_object() || !entry.contains("dtype") ||
      !entry.contains("shape") || !entry.contains("data_offsets"))
    return bad("needs dtype, shape and data_offsets");
  const json &dt = entry["dtype"], &shape = entry["shape"],
             &offs = entry["data_offsets"];
  const DTypeName *kind = nullptr;
  for (const DTypeName &n : kNames)
    if (dt.is_string() && dt.get<std::string>() == n.name)
      kind = &n;
  if (!kind)
    return bad("unsupported dtype " + dt.dump());
  out.name = name;
  out.tensor.dtype = kind->dtype;
  out.tensor.shape.clear();
  if (!shape.is_array())
    return bad("shape is not an array");
  for (const json &d : shape) {
    if (!d.is_number_unsigned())
      return bad("shape " + shape.dump() + " is not non-negative integers");
    out.tensor.shape.push_back(int64_t(d.get<uint64_t>()));
  }
  std::optional<int64_t> n = shapeElements(out.tensor.shape);
  if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() ||
      !offs[1].is_number_unsigned())
    return bad("data_offsets is not [begin, end]");
  uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
  if (begin > end || end > dataBytes)
    return bad("data_offsets [" + std::to_string(begin) + ", " +
               std::to_string(end) + "] lie outside the " +
               std::to_string(dataBytes) + " data bytes (truncated file?)");
  if (!n || uint64_t(*n) * dtypeSize(kind->dtype) != end - begin)
    return bad(std::to_string(end - begin) + " bytes do not match " +
               kind->name + " " + formatShape(out.tensor.shape));
  out.tensor.data.assign(data + begin, data + end);
  return Status::ok();
}

/// Parses the safetensors bytes [bytes, bytes + size) of the file `path`.
Status parseSafetensorsImpl(const std::string &path, const uint8_t *bytes,
                            size_t size, SafetensorsFile &out) {
  uint64_t n = 0;
  for (int k = 0; k < 8 && size_t(k) < size; ++k)
    n |= uint64_t(bytes[k]) << (8 * k);
  if (size < 8 || n > size - 8)
    return Status::error(path + ": truncated: " + std::to_string(size) +
                         " bytes, too short for its header (not a "
                         "safetensors file?)");
  json header = json::parse(bytes + 8, bytes + 8 + n, nullptr,
                            /*allow_exceptions=*/false);
  if (!header.is_object())
    return Status::error(path + ": the header is not a JSON object");
  SafetensorsFile file;
  const uint8_t *data = bytes + 8 + n;
  uint64_t dataBytes = size - 8 - n;
  std::vector<NamedTensor> tensors;
  std::vector<std::tuple<uint64_t, uint64_t, size_t>> spans; // begin, end, #
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object())
        return Status::error(path + ": __metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return Status::error(path + ": __metadata__." + m.key() +
                               " is not a string");
        file.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    NamedTensor t;
    Status st = readEntry(it.key(), *it, data, dataBytes, t);
    if (!st.isOk())
      return Status::error(path + ": " + st.message());
    spans.emplace_back((*it)["data_offsets"][0], (*it)["data_offsets"][1],
                       tensors.size());
    tensors.push_back(std::move(t));
  }
  // File order: by offset.
  std::sort(spans.begin(), spans.end());
  for (size_t k = 0; k < spans.size(); ++k) {
    if (k && std::get<0>(spans[k]) < std::get<1>(spans[k - 1]))
      return Status::error(path + ": tensors overlap in the data");
    file.tensors.push_back(std::move(tensors[std::get<2>(spans[k])]));
  }
  out = std::move(file);
  return Status::ok();
}

} // namespace

Status detail::parseSafetensors(const std::string &name, const uint8_t *bytes,
                                size_t size, SafetensorsFile &out) {
  try {
    return parseSafetensorsImpl(name, bytes, size, out);
  } catch (const std::bad_alloc &) {
    return Status::error("cannot read '" + name + "': out of memory");
  } catch (const std::exception &e) {
    return Status::error("cannot read '" + name + "': " + e.what());
  }
}

Status readSafetensors(const std::string &path, SafetensorsFile &out) {
  std::vector<uint8_t> bytes;
  Status st = detail::readFile(path, bytes);
  if (!st.isOk())
    return st;
  return detail::parseSafetensors(path, bytes.data(), bytes.size(), out);
}

} // namespace hetpar::rt
