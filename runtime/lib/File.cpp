//===- File.cpp - Whole-file reads ----------------------------------------===//
#include "Internal.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <unistd.h>

namespace hetpar::rt {

Status checkOutputFolder(const std::string &flag, const std::string &path) {
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty())
    folder = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec))
    return Status::error(flag + " '" + path + "': the folder '" +
                         folder.string() + "' does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    return Status::error(flag + " '" + path + "': cannot write in '" +
                         folder.string() + "': " + std::strerror(errno));
  return Status::ok();
}

} // namespace hetpar::rt

namespace hetpar::rt::detail {

Status readFile(const std::string &path, std::vector<uint8_t> &out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::error("cannot read '" + path + "': it is a directory");
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec)
    return Status::error("cannot read '" + path + "': " + ec.message());
  std::vector<uint8_t> data(static_cast<size_t>(size));
  Status st = readFileInto(path, data.data(), size);
  if (st.isOk())
    out = std::move(data);
  return st;
}

Status readFileInto(const std::string &path, void *dst, uint64_t bytes) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error("cannot read '" + path + "': " + std::strerror(errno));
  uint8_t *p = static_cast<uint8_t *>(dst);
  uint64_t done = 0;
  while (done < bytes) {
    size_t chunk = size_t(std::min<uint64_t>(bytes - done, 1u << 26));
    size_t n = std::fread(p + done, 1, chunk, f);
    done += n;
    if (n < chunk)
      break;
  }
  bool failed = std::ferror(f);
  int err = errno;
  std::fclose(f);
  if (failed)
    return Status::error("cannot read '" + path + "': " + std::strerror(err));
  if (done < bytes)
    return Status::error("cannot read '" + path + "': it ends after " +
                         std::to_string(done) + " of " + std::to_string(bytes) +
                         " bytes");
  return Status::ok();
}

} // namespace hetpar::rt::detail
