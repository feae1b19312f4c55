//===- Program.cpp - Load and run a compiled device program ---------------===//
#include "hetpar/runtime/Runtime.h"

#include "Internal.h"
#include "Manifest.h"
#include "hetpar/runtime/ProgramABI.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <limits>
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
  // Optional (ProgramABI.h): several devices' agreement on a step.
  decltype(&hetpar_agree) agree = nullptr;
  // Optional (ProgramABI.h, "Trace").
  decltype(&hetpar_trace_points) tracePoints = nullptr;
  decltype(&hetpar_trace_span) traceSpan = nullptr;
  decltype(&hetpar_trace) trace = nullptr;
};

namespace {

std::string describe(const std::vector<TensorInfo> &infos) {
  std::string s;
  for (size_t i = 0; i < infos.size(); ++i)
    s += (i ? ", " : "") + infos[i].name;
  return s;
}

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

} // namespace

using namespace detail;

Program::Program() : abi_(std::make_unique<ProgramABIFunctions>()) {}

Program::~Program() {
  // One device of several failed a run: its peers may wait in an exchange
  // for it, and hetpar_destroy's MPI_Finalize would wait for them. It leaves
  // without either, so that the launcher sees it end and ends the job (the
  // process is exiting: nothing needs freeing).
  if (runFailed_ && numDevices_ > 1)
    return;
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
  f.agree =
      reinterpret_cast<decltype(f.agree)>(dlsym(library_, "hetpar_agree"));
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
  int rc = abi_->run(ctx_, arena_, weights_, inputBuffers_.data(),
                     outputBuffers_.data());
  lastRunFinished_ = rc == 0 || rc == 3;
  if (rc != 0) {
    runFailed_ = true;
    return Status::error("hetpar_run failed on the " + backend_ +
                         " backend: " + programError(*abi_, ctx_));
  }
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

Status Program::runInStep(Status &refused) {
  Status s = runDevice();
  if (s.isOk() || !lastRunFinished_)
    return s;
  if (refused.isOk())
    refused = s;
  return Status::ok();
}

Status Program::agree(Status mine) {
  if (numDevices_ <= 1 || !abi_->agree)
    return mine;
  int rc = abi_->agree(ctx_, mine.isOk() ? 0 : 1);
  if (rc == 0)
    return mine;
  runFailed_ = true;
  // Another device failed first (a tensor-parallel group finds the same
  // index on every device): that one reports, this one's error is dropped.
  if (rc == 2)
    return Status::peerFailure(programError(*abi_, ctx_));
  if (!mine.isOk())
    return mine;
  return Status::error("hetpar_agree failed on the " + backend_ +
                       " backend: " + programError(*abi_, ctx_));
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

} // namespace hetpar::rt
