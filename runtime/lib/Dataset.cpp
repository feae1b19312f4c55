//===- Dataset.cpp - Memory-mapped .npy training data ---------------------===//
//
// DIR/<input>.npy per program input, mapped read-only; a batch copies its
// samples out of the mapping, so the page cache (not the heap) holds the data
// and files larger than memory work.
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/Training.h"

#include "Internal.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hetpar::rt {

/// One mapped .npy file.
struct MappedNpy {
  std::string path;
  const uint8_t *base = nullptr;
  size_t size = 0;
  detail::NpyHeader header;
  uint64_t sampleBytes = 0;

  ~MappedNpy() {
    if (base && size)
      ::munmap(const_cast<uint8_t *>(base), size);
  }
  const uint8_t *sample(uint64_t i) const {
    return base + header.dataOffset + i * sampleBytes;
  }
};

namespace {

/// Maps `path` and parses its header.
Status mapNpy(const std::string &path, MappedNpy &out) {
  out.path = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error("cannot read '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error("cannot read '" + path + "': not a regular file");
  }
  out.size = size_t(st.st_size);
  void *p = out.size ? ::mmap(nullptr, out.size, PROT_READ, MAP_SHARED, fd, 0)
                     : nullptr;
  int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) {
    out.size = 0;
    return Status::error("cannot map '" + path + "': " + std::strerror(err));
  }
  out.base = static_cast<const uint8_t *>(p);
  Status s = detail::parseNpyHeader(out.base, out.size, out.header);
  if (s.isOk())
    s = detail::checkNpyData(out.header, out.size);
  if (!s.isOk())
    return Status::error(path + ": " + s.message());
  return Status::ok();
}

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + " " + formatShape(shape);
}

/// Checks one mapped file against `input` (batch on axis 0).
Status checkFile(MappedNpy &f, const TensorInfo &input) {
  const detail::NpyHeader &h = f.header;
  std::vector<int64_t> sample(input.shape.begin() + 1, input.shape.end());
  std::vector<int64_t> expected = sample;
  expected.insert(expected.begin(), -1);
  std::string want = describe(input.dtype, sample);
  bool bf16Bits = input.dtype == DType::BFloat16 && h.dtype == DType::UInt16;
  if (h.dtype != input.dtype && !bf16Bits)
    return Status::error(f.path + ": dtype " + dtypeName(h.dtype) +
                         ", expected " + dtypeName(input.dtype) + " (input '" +
                         input.name + "': samples of " + want + ")");
  std::vector<int64_t> found(h.shape.begin() + (h.shape.empty() ? 0 : 1),
                             h.shape.end());
  if (h.shape.empty() || found != sample)
    return Status::error(
        f.path + ": shape " + formatShape(h.shape) + ", expected [N" +
        (sample.empty() ? "" : "," + formatShape(sample).substr(1)) +
        (sample.empty() ? "]" : "") + " (input '" + input.name +
        "': a leading sample axis, then samples of " + want + ")");
  f.sampleBytes =
      uint64_t(shapeElements(sample).value_or(0)) * dtypeSize(input.dtype);
  return Status::ok();
}

} // namespace

Dataset::~Dataset() = default;

Status Dataset::open(const std::string &dir,
                     const std::vector<TensorInfo> &inputs,
                     const DatasetOptions &options,
                     std::unique_ptr<Dataset> &out) {
  out.reset();
  if (options.batchSize < 1)
    return Status::error("the batch size must be at least 1");
  if (options.chunks < 1 || options.batchSize % options.chunks != 0)
    return Status::error("a batch of " + std::to_string(options.batchSize) +
                         " samples is not " + std::to_string(options.chunks) +
                         " equal microbatches");
  int64_t chunk = options.batchSize / options.chunks;
  int64_t rows = options.rows ? options.rows : chunk;
  if (options.rowOffset < 0 || rows < 1 || rows > chunk - options.rowOffset)
    return Status::error("rows [" + std::to_string(options.rowOffset) + ", " +
                         std::to_string(options.rowOffset + rows) +
                         ") are not inside a " +
                         (options.chunks > 1 ? "microbatch" : "batch") +
                         " of " + std::to_string(chunk));
  int64_t stacked = rows * options.chunks;
  std::unique_ptr<Dataset> d(new Dataset());
  d->inputs_ = inputs;
  d->options_ = options;
  for (const TensorInfo &in : inputs)
    if (in.shape.empty() || in.shape[0] != stacked)
      return Status::error(
          "input '" + in.name + "' has shape " + formatShape(in.shape) +
          ": a training input needs its " + std::to_string(stacked) +
          " rows of the batch on axis 0");
  // Every file of the graph, in graph order; the program's own are kept.
  const std::vector<TensorInfo> &all =
      options.graphInputs.empty() ? inputs : options.graphInputs;
  std::vector<std::unique_ptr<MappedNpy>> files(inputs.size());
  std::string first; // the first file checked, for the count message
  for (const TensorInfo &graphInput : all) {
    auto own =
        std::find_if(inputs.begin(), inputs.end(), [&](const TensorInfo &in) {
          return in.name == graphInput.name;
        });
    const std::string &name = graphInput.name;
    if (name.empty() || name == "." || name == ".." ||
        name.find_first_of("/\\") != std::string::npos)
      return Status::error(
          "input '" + name +
          "' cannot be read from a data folder: its name is not a file name "
          "(<name>.npy); rename the graph input");
    auto f = std::make_unique<MappedNpy>();
    Status s = mapNpy(dir + "/" + name + ".npy", *f);
    if (s.isOk())
      s = checkFile(*f, own != inputs.end() ? *own : graphInput);
    if (!s.isOk())
      return s;
    uint64_t n = uint64_t(f->header.shape[0]);
    if (!first.empty() && n != d->samples_)
      return Status::error(f->path + ": " + std::to_string(n) +
                           " samples, but " + first + " has " +
                           std::to_string(d->samples_) +
                           " (every file needs the same count)");
    if (first.empty())
      first = f->path;
    d->samples_ = n;
    if (own != inputs.end())
      files[size_t(own - inputs.begin())] = std::move(f);
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!files[i])
      return Status::error("input '" + inputs[i].name +
                           "' is not among the graph's inputs");
  d->files_ = std::move(files);
  if (!all.empty() && d->samples_ < uint64_t(options.batchSize))
    return Status::error(dir + ": " + std::to_string(d->samples_) + " sample" +
                         (d->samples_ == 1 ? "" : "s") +
                         ", fewer than one batch of " +
                         std::to_string(options.batchSize));
  out = std::move(d);
  return Status::ok();
}

uint64_t Dataset::sampleAt(uint64_t index) {
  if (samples_ == 0)
    return 0; // a program without inputs
  uint64_t epoch = index / samples_, pos = index % samples_;
  if (!options_.shuffle)
    return pos;
  if (epoch != permutationEpoch_) {
    permutation_.resize(samples_);
    for (uint64_t i = 0; i < samples_; ++i)
      permutation_[i] = i;
    std::mt19937_64 rng(options_.seed + epoch * 0x9E3779B97F4A7C15ull);
    for (uint64_t i = samples_ - 1; i > 0; --i)
      std::swap(permutation_[i], permutation_[rng() % (i + 1)]);
    permutationEpoch_ = epoch;
  }
  return permutation_[pos];
}

Status Dataset::batch(uint64_t step, std::vector<HostTensor> &out) {
  try {
    out.resize(inputs_.size());
    uint64_t b = uint64_t(options_.batchSize);
    uint64_t chunks = uint64_t(options_.chunks), chunk = b / chunks;
    uint64_t first = uint64_t(options_.rowOffset);
    uint64_t rows = options_.rows ? uint64_t(options_.rows) : chunk;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      out[i].dtype = inputs_[i].dtype;
      out[i].shape = inputs_[i].shape;
      out[i].data.resize(size_t(files_[i]->sampleBytes * rows * chunks));
    }
    // Row j of microbatch c goes to row c * rows + j.
    for (uint64_t c = 0; c < chunks; ++c)
      for (uint64_t j = 0; j < rows; ++j) {
        uint64_t sample = sampleAt(step * b + c * chunk + first + j);
        for (size_t i = 0; i < inputs_.size(); ++i) {
          const MappedNpy &f = *files_[i];
          if (f.sampleBytes)
            std::memcpy(out[i].data.data() + (c * rows + j) * f.sampleBytes,
                        f.sample(sample), f.sampleBytes);
        }
      }
    return Status::ok();
  } catch (const std::bad_alloc &) {
    return Status::error("out of memory for a batch");
  }
}

} // namespace hetpar::rt
