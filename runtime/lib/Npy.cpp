//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// The format:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// "\x93NUMPY", major and minor version bytes, the header length (uint16 LE in
// 1.0, uint32 LE in 2.0 and 3.0), then a Python dict literal with the keys
// 'descr', 'fortran_order' and 'shape', padded with spaces and a newline so
// that the data starts at a multiple of 64 bytes.
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/Runtime.h"

#include "Internal.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>

#include <fcntl.h>
#include <unistd.h>

namespace hetpar::rt {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;
// numpy >= 1.23 leaves room to grow the first axis in place.
constexpr size_t kGrowthAxisMaxDigits = 21;

const char *npyDescr(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return "<f4";
  case DType::Float16:
    return "<f2";
  case DType::Float64:
    return "<f8";
  case DType::Int64:
    return "<i8";
  case DType::Int32:
    return "<i4";
  case DType::Int16:
    return "<i2";
  case DType::Int8:
    return "|i1";
  case DType::UInt8:
    return "|u1";
  case DType::UInt16:
    return "<u2";
  case DType::UInt32:
    return "<u4";
  case DType::UInt64:
    return "<u8";
  case DType::Bool:
    return "|b1";
  case DType::BFloat16:
    return "<u2"; // the raw bits, as onnx.numpy_helper stores bfloat16
  }
  return nullptr;
}

constexpr const char *kSupported =
    "float32 '<f4', float16 '<f2', float64 '<f8', int64 '<i8', int32 '<i4', "
    "int16 '<i2', int8 '|i1', uint8 '|u1', uint16 '<u2', uint32 '<u4', "
    "uint64 '<u8', bool '|b1'";

/// Maps a descr string to a dtype; an error message otherwise.
Status dtypeFromDescr(const std::string &descr, DType &out) {
  std::string body = descr;
  char order = '|';
  if (!body.empty() && std::strchr("<>|=", body[0])) {
    order = body[0];
    body = body.substr(1);
  }
  struct Kind {
    const char *code;
    DType dtype;
  };
  static const Kind kinds[] = {
      {"f4", DType::Float32}, {"f2", DType::Float16}, {"f8", DType::Float64},
      {"i8", DType::Int64},   {"i4", DType::Int32},   {"i2", DType::Int16},
      {"i1", DType::Int8},    {"u1", DType::UInt8},   {"b1", DType::Bool},
      {"u2", DType::UInt16},  {"u4", DType::UInt32},  {"u8", DType::UInt64},
      {"?", DType::Bool},     {"b", DType::Int8},     {"B", DType::UInt8}};
  for (const Kind &k : kinds) {
    if (body != k.code)
      continue;
    if (order == '>' && dtypeSize(k.dtype) > 1)
      return Status::error("big-endian data ('" + descr +
                           "') is not supported; convert it with "
                           "arr.astype(arr.dtype.newbyteorder('<'))");
    out = k.dtype;
    return Status::ok();
  }
  return Status::error("dtype '" + descr +
                       "' is not supported (supported: " + kSupported +
                       "; bfloat16 travels as its raw bits in uint16)");
}

/// A parser for the header's Python dict literal, e.g.
/// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : s(text) {}

  Status parse(std::string &descr, bool &fortranOrder,
               std::vector<int64_t> &shape) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    skipSpace();
    if (!consume('{'))
      return bad("expected '{'");
    for (;;) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return bad("expected a quoted key");
      skipSpace();
      if (!consume(':'))
        return bad("expected ':' after '" + key + "'");
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          return Status::error(
              "structured dtypes (a list descr) are not supported");
        if (!parseString(descr))
          return bad("'descr' is not a string");
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (consumeWord("True"))
          fortranOrder = true;
        else if (consumeWord("False"))
          fortranOrder = false;
        else
          return bad("'fortran_order' is not True or False");
        haveOrder = true;
      } else if (key == "shape") {
        Status st = parseShape(shape);
        if (!st.isOk())
          return st;
        haveShape = true;
      } else {
        return bad("unexpected key '" + key + "'");
      }
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume('}'))
        break;
      return bad("expected ',' or '}'");
    }
    skipSpace();
    if (i != s.size())
      return bad("text after the closing '}'");
    if (!haveDescr || !haveOrder || !haveShape)
      return bad("it needs the keys 'descr', 'fortran_order' and 'shape'");
    return Status::ok();
  }

private:
  Status bad(const std::string &what) {
    return Status::error("malformed header (" + what + " at offset " +
                         std::to_string(i) + ")");
  }
  char peek() const { return i < s.size() ? s[i] : '\0'; }
  void skipSpace() {
    while (i < s.size() &&
           (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
      ++i;
  }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++i;
    return true;
  }
  bool consumeWord(const char *w) {
    size_t n = std::strlen(w);
    if (s.compare(i, n, w) != 0)
      return false;
    i += n;
    return true;
  }
  bool parseString(std::string &out) {
    char q = peek();
    if (q != '\'' && q != '"')
      return false;
    size_t end = s.find(q, i + 1);
    if (end == std::string::npos)
      return false;
    out = s.substr(i + 1, end - i - 1);
    i = end + 1;
    return true;
  }
  Status parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    if (!consume('('))
      return bad("'shape' is not a tuple");
    for (;;) {
      skipSpace();
      if (consume(')'))
        return Status::ok();
      if (peek() < '0' || peek() > '9')
        return bad("a dimension of 'shape' is not a non-negative integer");
      int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        int digit = peek() - '0';
        if (d > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return bad("a dimension of 'shape' is too large");
        d = d * 10 + digit;
        ++i;
      }
      // Python 2 era files may write long integers as 3L.
      consume('L');
      shape.push_back(d);
      skipSpace();
      if (consume(','))
        continue;
      skipSpace();
      if (consume(')'))
        return Status::ok();
      return bad("expected ',' or ')' in 'shape'");
    }
  }

  const std::string &s;
  size_t i = 0;
};

uint32_t readLE(const uint8_t *p, size_t n) {
  uint32_t v = 0;
  for (size_t k = 0; k < n; ++k)
    v |= uint32_t(p[k]) << (8 * k);
  return v;
}

} // namespace

namespace detail {

Status parseNpyHeader(const uint8_t *bytes, size_t size, NpyHeader &out) {
  if (size < kMagicLen + 2 || std::memcmp(bytes, kMagic, kMagicLen) != 0)
    return Status::error("not a .npy file (bad magic)");
  unsigned major = bytes[6], minor = bytes[7];
  size_t lenBytes;
  if (major == 1)
    lenBytes = 2;
  else if (major == 2 || major == 3)
    lenBytes = 4;
  else
    return Status::error(".npy format version " + std::to_string(major) + "." +
                         std::to_string(minor) +
                         " is not supported (1.0, 2.0 and 3.0 are)");
  size_t prefix = kMagicLen + 2 + lenBytes;
  if (size < prefix)
    return Status::error("truncated header");
  size_t headerLen = readLE(bytes + 8, lenBytes);
  if (size - prefix < headerLen)
    return Status::error("truncated header (" + std::to_string(headerLen) +
                         " bytes announced, " + std::to_string(size - prefix) +
                         " present)");
  std::string header(reinterpret_cast<const char *>(bytes + prefix), headerLen);
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  Status st = HeaderParser(header).parse(descr, fortranOrder, shape);
  if (!st.isOk())
    return st;
  DType dtype;
  st = dtypeFromDescr(descr, dtype);
  if (!st.isOk())
    return st;
  if (fortranOrder)
    return Status::error("fortran_order arrays are not supported; save a "
                         "C-ordered array (np.ascontiguousarray)");
  std::optional<int64_t> elements = shapeElements(shape);
  size_t elemSize = dtypeSize(dtype);
  if (!elements ||
      uint64_t(*elements) > std::numeric_limits<size_t>::max() / elemSize)
    return Status::error("shape " + formatShape(shape) + " is too large");
  out.dtype = dtype;
  out.shape = std::move(shape);
  out.dataOffset = prefix + headerLen;
  out.dataBytes = uint64_t(*elements) * elemSize;
  return Status::ok();
}

Status checkNpyData(const NpyHeader &header, uint64_t fileBytes) {
  uint64_t have = fileBytes - std::min<uint64_t>(fileBytes, header.dataOffset);
  if (have < header.dataBytes)
    return Status::error("truncated data: " + std::to_string(have) +
                         " bytes, " + std::to_string(header.dataBytes) +
                         " expected for " + dtypeName(header.dtype) + " " +
                         formatShape(header.shape));
  return Status::ok();
}

} // namespace detail

namespace {

Status readNpyImpl(const std::string &path, HostTensor &out) {
  std::vector<uint8_t> bytes;
  Status st = detail::readFile(path, bytes);
  if (!st.isOk())
    return st;
  detail::NpyHeader h;
  st = detail::parseNpyHeader(bytes.data(), bytes.size(), h);
  if (!st.isOk())
    return Status::error(path + ": " + st.message());
  st = detail::checkNpyData(h, bytes.size());
  if (!st.isOk())
    return Status::error(path + ": " + st.message());
  out.dtype = h.dtype;
  out.shape = std::move(h.shape);
  out.data.assign(bytes.begin() + h.dataOffset,
                  bytes.begin() + h.dataOffset + h.dataBytes);
  return Status::ok();
}

std::string npyHeader(const HostTensor &t, const char *descr) {
  std::string shape = "(";
  for (size_t k = 0; k < t.shape.size(); ++k) {
    if (k)
      shape += ", ";
    shape += std::to_string(t.shape[k]);
  }
  if (t.shape.size() == 1)
    shape += ",";
  shape += ")";
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  if (!t.shape.empty()) {
    size_t digits = std::to_string(t.shape[0]).size();
    if (digits < kGrowthAxisMaxDigits)
      dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // Version 1.0 while the header length fits in 16 bits, as numpy does.
  for (int major : {1, 2}) {
    size_t prefix = kMagicLen + 2 + (major == 1 ? 2 : 4);
    size_t hlen = dict.size() + 1;
    size_t pad = kAlign - (prefix + hlen) % kAlign;
    size_t total = hlen + pad;
    if (major == 1 && total > 0xffff)
      continue;
    std::string out(kMagic, kMagicLen);
    out += char(major);
    out += char(0);
    for (size_t k = 0; k < prefix - kMagicLen - 2; ++k)
      out += char((total >> (8 * k)) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
  }
  return {};
}

bool writeAll(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += w;
    n -= size_t(w);
  }
  return true;
}

Status writeNpyImpl(const std::string &path, const HostTensor &t,
                    const std::string &shown) {
  const char *descr = npyDescr(t.dtype);
  if (!descr)
    return Status::error("cannot write '" + shown +
                         "': its dtype has no NumPy equivalent");
  std::optional<int64_t> elements = shapeElements(t.shape);
  if (!elements)
    return Status::error("cannot write '" + shown + "': invalid shape " +
                         formatShape(t.shape));
  size_t want = size_t(*elements) * dtypeSize(t.dtype);
  if (t.data.size() != want)
    return Status::error("cannot write '" + shown + "': the tensor holds " +
                         std::to_string(t.data.size()) + " bytes, " +
                         std::to_string(want) + " expected for " +
                         dtypeName(t.dtype) + " " + formatShape(t.shape));
  std::string header = npyHeader(t, descr);

  static unsigned counter = 0;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    return Status::error("cannot write '" + shown +
                         "': " + std::strerror(errno));
  bool ok = writeAll(fd, header.data(), header.size()) &&
            writeAll(fd, t.data.data(), t.data.size());
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
    return Status::error("cannot write '" + shown + "': " + std::strerror(err));
  }
  return Status::ok();
}

} // namespace

Status readNpy(const std::string &path, HostTensor &out) {
  try {
    return readNpyImpl(path, out);
  } catch (const std::bad_alloc &) {
    return Status::error("cannot read '" + path + "': out of memory");
  } catch (const std::exception &e) {
    return Status::error("cannot read '" + path + "': " + e.what());
  } catch (...) {
    return Status::error("cannot read '" + path + "'");
  }
}

Status writeNpy(const std::string &path, const HostTensor &tensor,
                const std::string &nameInErrors) {
  const std::string &shown = nameInErrors.empty() ? path : nameInErrors;
  try {
    return writeNpyImpl(path, tensor, shown);
  } catch (const std::bad_alloc &) {
    return Status::error("cannot write '" + shown + "': out of memory");
  } catch (const std::exception &e) {
    return Status::error("cannot write '" + shown + "': " + e.what());
  } catch (...) {
    return Status::error("cannot write '" + shown + "'");
  }
}

} // namespace hetpar::rt
