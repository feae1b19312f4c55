//===- hetpar_abi.h - ABI functions of a program ----------------*- C++ -*-===//
//
// The ABI functions (ProgramABI.h) shared by every generated program. The
// program defines hp_program_run, HP_ARENA_BYTES, HP_WEIGHTS_BYTES,
// HP_NUM_INPUTS, HP_NUM_OUTPUTS, HP_INPUT_BYTES and HP_OUTPUT_BYTES (byte
// counts, each followed by a comma) and HP_CHECKED_NODES (string literals
// naming the nodes whose kernels check indices, in their order, each followed
// by a comma; empty when none) before including hetpar_device.h a second
// time with HETPAR_DEFINE_ABI defined.
//
//===----------------------------------------------------------------------===//
#if defined(HETPAR_DEFINE_ABI) && !defined(HETPAR_DEVICE_ABI_DEFINED)
#define HETPAR_DEVICE_ABI_DEFINED
// The generated code's trace points and their spans (HP_TRACE); a program
// without them (inference) defines neither macro.
#ifndef HP_TRACE_POINTS
#define HP_TRACE_POINTS 0
#define HP_TRACE_SPANS
#endif
static int hp_program_run(hp_ctx *ctx, char *arena, char *weights,
                          const void *const *inputs, void *const *outputs);

extern "C" {
int hetpar_abi_version(void) { return HETPAR_ABI_VERSION; }
const char *hetpar_backend(void) { return HP_CUDA ? "cuda" : "cpu"; }
uint64_t hetpar_arena_bytes(void) { return HP_ARENA_BYTES; }
uint64_t hetpar_weights_bytes(void) { return HP_WEIGHTS_BYTES; }
int hetpar_num_inputs(void) { return HP_NUM_INPUTS; }
int hetpar_num_outputs(void) { return HP_NUM_OUTPUTS; }
uint64_t hetpar_input_bytes(int i) {
  static const uint64_t bytes[] = {HP_INPUT_BYTES 0};
  return i >= 0 && i < HP_NUM_INPUTS ? bytes[i] : 0;
}
uint64_t hetpar_output_bytes(int i) {
  static const uint64_t bytes[] = {HP_OUTPUT_BYTES 0};
  return i >= 0 && i < HP_NUM_OUTPUTS ? bytes[i] : 0;
}

#if HP_CUDA
/// Destroys the trace events of hetpar_trace.
static void hp_trace_release(hp_ctx *ctx) {
  if (!ctx->trace_events)
    return;
  for (int i = 0; i < HP_TRACE_POINTS + 2; ++i)
    cudaEventDestroy(ctx->trace_events[i]);
  free(ctx->trace_events);
  ctx->trace_events = NULL;
}

/// Drops the run's CUDA graph, if one was captured.
static void hp_graph_release(hp_ctx *ctx) {
  if (ctx->graph_exec)
    cudaGraphExecDestroy(ctx->graph_exec);
  ctx->graph_exec = NULL;
}
#endif

#if !HP_CUDA && defined(__x86_64__) && defined(__GNUC__)
/// The first instruction-set extension the CPU program was built for (the
/// -march of hetpar-compile --cpu-arch, "native" by default) that this CPU
/// lacks, or NULL. Without the check, a program built on a newer machine
/// dies of SIGILL in its first vector loop. The function itself is built
/// for the x86-64 baseline and never inlined into code built for more.
/// Clang before 18 knows neither "f16c" nor "avx512fp16" as feature names.
#if defined(__clang__) && __clang_major__ < 18
#define HP_ISA_NEW_NAMES 0
#else
#define HP_ISA_NEW_NAMES 1
#endif
__attribute__((target("arch=x86-64"), noinline)) static const char *
hp_cpu_missing() {
  __builtin_cpu_init();
// The extension `name` when the program uses it and this CPU lacks it.
#define HP_ISA(feature, name)                                                  \
  if (!__builtin_cpu_supports(feature))                                        \
  return name
#ifdef __SSE4_2__
  HP_ISA("sse4.2", "SSE4.2");
#endif
#ifdef __AVX__
  HP_ISA("avx", "AVX");
#endif
#ifdef __AVX2__
  HP_ISA("avx2", "AVX2");
#endif
#ifdef __FMA__
  HP_ISA("fma", "FMA");
#endif
#ifdef __BMI__
  HP_ISA("bmi", "BMI1");
#endif
#ifdef __BMI2__
  HP_ISA("bmi2", "BMI2");
#endif
#if defined(__F16C__) && HP_ISA_NEW_NAMES
  HP_ISA("f16c", "F16C");
#endif
#ifdef __AVX512F__
  HP_ISA("avx512f", "AVX-512F");
#endif
#ifdef __AVX512CD__
  HP_ISA("avx512cd", "AVX-512CD");
#endif
#ifdef __AVX512DQ__
  HP_ISA("avx512dq", "AVX-512DQ");
#endif
#ifdef __AVX512BW__
  HP_ISA("avx512bw", "AVX-512BW");
#endif
#ifdef __AVX512VL__
  HP_ISA("avx512vl", "AVX-512VL");
#endif
#ifdef __AVX512IFMA__
  HP_ISA("avx512ifma", "AVX-512IFMA");
#endif
#ifdef __AVX512VBMI__
  HP_ISA("avx512vbmi", "AVX-512VBMI");
#endif
#ifdef __AVX512VBMI2__
  HP_ISA("avx512vbmi2", "AVX-512VBMI2");
#endif
#ifdef __AVX512VNNI__
  HP_ISA("avx512vnni", "AVX-512VNNI");
#endif
#ifdef __AVX512BITALG__
  HP_ISA("avx512bitalg", "AVX-512BITALG");
#endif
#ifdef __AVX512VPOPCNTDQ__
  HP_ISA("avx512vpopcntdq", "AVX-512VPOPCNTDQ");
#endif
#ifdef __AVX512BF16__
  HP_ISA("avx512bf16", "AVX-512-BF16");
#endif
#if defined(__AVX512FP16__) && HP_ISA_NEW_NAMES
  HP_ISA("avx512fp16", "AVX-512-FP16");
#endif
#undef HP_ISA
  return NULL;
}
#endif

void *hetpar_create(char *err, size_t errlen) {
#if !HP_CUDA && defined(__x86_64__) && defined(__GNUC__)
  if (const char *isa = hp_cpu_missing()) {
    snprintf(err, errlen,
             "this CPU lacks %s, which the program was built for "
             "(hetpar-compile --cpu-arch, default native: the compiling "
             "machine's); recompile on this machine, or with "
             "--cpu-arch=x86-64 for any x86-64 CPU",
             isa);
    return NULL;
  }
#endif
  hp_ctx *ctx = (hp_ctx *)calloc(1, sizeof(hp_ctx));
  if (!ctx) {
    snprintf(err, errlen, "out of host memory");
    return NULL;
  }
#if HP_CUDA
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    snprintf(err, errlen, "no CUDA device: %s",
             e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    free(ctx);
    return NULL;
  }
#if defined(HETPAR_MULTI_DEVICE)
  // One process per device: the launcher's local rank picks this node's GPU
  // (all ranks share it when the node has one GPU).
  for (const char *var :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char *v = getenv(var)) {
      if ((e = cudaSetDevice(atoi(v) % count)) != cudaSuccess) {
        snprintf(err, errlen, "cudaSetDevice: %s", cudaGetErrorString(e));
        free(ctx);
        return NULL;
      }
      break;
    }
  // The collectives' path (NCCL or host-staged MPI), the same on every rank.
  if (hp_collectives_init(err, errlen)) {
    free(ctx);
    return NULL;
  }
#endif
  // Non-blocking: the legacy default stream's work (another thread's
  // cudaMemcpy) neither waits for this stream nor breaks a graph capture on
  // it; every copy here runs on this stream (hp_copy).
  if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) !=
      cudaSuccess) {
    snprintf(err, errlen, "cudaStreamCreateWithFlags: %s",
             cudaGetErrorString(e));
    free(ctx);
    return NULL;
  }
  if (cublasCreate(&ctx->blas) != CUBLAS_STATUS_SUCCESS) {
    snprintf(err, errlen, "cublasCreate failed");
    cudaStreamDestroy(ctx->stream);
    free(ctx);
    return NULL;
  }
  cublasSetStream(ctx->blas, ctx->stream);
  hp_gpu_libraries_init(ctx);
  // Runs as CUDA graphs (hp_run_graph) unless HETPAR_CUDA_GRAPHS=0, and
  // never on one device of several: the collectives run MPI on the host, and
  // the host-staged ones synchronize the stream.
#if defined(HETPAR_MULTI_DEVICE)
  ctx->graph.disabled = 1;
#else
  const char *graphs = getenv("HETPAR_CUDA_GRAPHS");
  ctx->graph.disabled = graphs && strcmp(graphs, "0") == 0;
#endif
  if ((e = cudaMalloc((void **)&ctx->index_error, sizeof(hp_index_error))) !=
      cudaSuccess) {
    snprintf(err, errlen, "cudaMalloc: %s", cudaGetErrorString(e));
    hp_gpu_libraries_release(ctx);
    cublasDestroy(ctx->blas);
    cudaStreamDestroy(ctx->stream);
    free(ctx);
    return NULL;
  }
#else
  ctx->index_error = (hp_index_error *)calloc(1, sizeof(hp_index_error));
  if (!ctx->index_error) {
    snprintf(err, errlen, "out of host memory");
    free(ctx);
    return NULL;
  }
#endif
  return ctx;
}

void hetpar_destroy(void *p) {
  hp_ctx *ctx = (hp_ctx *)p;
  if (!ctx)
    return;
#if defined(HETPAR_MULTI_DEVICE)
  // The collectives initialized MPI on first use; end it with the program.
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Finalize();
#endif
#if HP_CUDA
  hp_trace_release(ctx);
  hp_graph_release(ctx);
  free(ctx->graph.key);
  hp_gpu_libraries_release(ctx);
  cudaFree(ctx->index_error);
  cublasDestroy(ctx->blas);
  cudaStreamDestroy(ctx->stream);
#else
  free(ctx->index_error);
#endif
  free(ctx);
}

void *hetpar_alloc(void *p, uint64_t bytes) {
  hp_ctx *ctx = (hp_ctx *)p;
  size_t n = bytes ? (size_t)bytes : 1;
#if HP_CUDA
  void *ptr = NULL;
  cudaError_t e = cudaMalloc(&ptr, n);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "cudaMalloc(%llu): %s",
             (unsigned long long)bytes, cudaGetErrorString(e));
    return NULL;
  }
  return ptr;
#else
  void *ptr = aligned_alloc(256, (n + 255) / 256 * 256);
  if (!ptr)
    snprintf(ctx->error, sizeof ctx->error,
             "out of memory allocating %llu bytes", (unsigned long long)bytes);
  return ptr;
#endif
}

void hetpar_free(void *, void *ptr) {
#if HP_CUDA
  cudaFree(ptr);
#else
  free(ptr);
#endif
}

/// A synchronous copy in either direction (on the context's stream, which
/// then synchronizes; memcpy on the CPU).
static int hp_copy(void *p, void *dst, const void *src, uint64_t bytes,
                   int toDevice) {
#if HP_CUDA
  hp_ctx *ctx = (hp_ctx *)p;
  cudaError_t e = cudaMemcpyAsync(
      dst, src, bytes,
      toDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "%s: %s",
             toDevice ? "upload" : "download", cudaGetErrorString(e));
    return 1;
  }
#else
  (void)p;
  (void)toDevice;
  if (bytes)
    memcpy(dst, src, bytes);
#endif
  return 0;
}

int hetpar_upload(void *p, void *dst, const void *src, uint64_t bytes) {
  return hp_copy(p, dst, src, bytes, 1);
}

int hetpar_download(void *p, void *dst, const void *src, uint64_t bytes) {
  return hp_copy(p, dst, src, bytes, 0);
}

/// The message of the run's first out-of-range index, if any: "node 'x'
/// (Gather): index 7 at position 2 is outside [-3, 3)". Returns 1 then.
static int hp_report_index_error(hp_ctx *ctx, const hp_index_error &e) {
  static const char *const nodes[] = {HP_CHECKED_NODES ""};
  const int count = (int)(sizeof nodes / sizeof nodes[0]) - 1;
  if (e.node == 0)
    return 0;
  const char *what = e.node <= (unsigned long long)count ? nodes[e.node - 1]
                                                         : "an unnamed node";
#if defined(HETPAR_MULTI_DEVICE)
  // One device of several: which one, and that the position is in its own
  // part of the tensor (its rows of the batch, its shard).
  int rank = hp_watchdog.rank.load();
  snprintf(ctx->error, sizeof ctx->error,
           "device %lld (rank %d): %s: index %lld at position %lld of this "
           "device's part of the tensor is outside [%lld, %lld)",
           (long long)hp_device_of(rank), rank, what, e.value, e.element, e.lo,
           e.hi);
#else
  snprintf(ctx->error, sizeof ctx->error,
           "%s: index %lld at position %lld is outside [%lld, %lld)", what,
           e.value, e.element, e.lo, e.hi);
#endif
  return 1;
}

#if HP_CUDA
/// Captures hp_program_run's launches on the stream into ctx->graph_exec.
/// Returns 0, or non-zero when something in the run cannot be captured or
/// the graph not instantiated (nothing has run then, and the stream has left
/// capture mode).
static int hp_graph_capture(hp_ctx *ctx, char *arena, char *weights,
                            const void *const *inputs, void *const *outputs) {
  if (cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal) !=
      cudaSuccess)
    return 1;
  int rc = hp_program_run(ctx, arena, weights, inputs, outputs);
  cudaGraph_t graph = NULL;
  if (cudaStreamEndCapture(ctx->stream, &graph) != cudaSuccess || !graph)
    rc = 1;
  if (rc == 0 &&
      cudaGraphInstantiate(&ctx->graph_exec, graph, 0) != cudaSuccess) {
    ctx->graph_exec = NULL;
    rc = 1;
  }
  if (graph)
    cudaGraphDestroy(graph);
  return rc;
}

/// Runs the program on the stream, as one CUDA graph where it can
/// (docs/codegen.md, "CUDA graphs"): the first run on a set of buffers is
/// eager, the second captures its launches into a graph, and later runs on
/// the same buffers launch the graph, one launch instead of one per kernel
/// and cuBLAS call. Runs are eager while tracing (the trace events are
/// recorded between launches) and once a capture has failed (the capture is
/// dropped, the error cleared, and the run done eagerly; so is every later
/// one). Returns hp_program_run's status.
static int hp_run_graph(hp_ctx *ctx, char *arena, char *weights,
                        const void *const *inputs, void *const *outputs) {
  const void *ptrs[HP_NUM_INPUTS + HP_NUM_OUTPUTS + 2];
  int n = 0;
  ptrs[n++] = arena;
  ptrs[n++] = weights;
  for (int i = 0; i < HP_NUM_INPUTS; ++i)
    ptrs[n++] = inputs[i];
  for (int i = 0; i < HP_NUM_OUTPUTS; ++i)
    ptrs[n++] = outputs[i];
  hp_graph_action action = HP_GRAPH_EAGER;
  if (!ctx->trace_events) {
    action = hp_graph_next(&ctx->graph, ptrs, n);
    if (action == HP_GRAPH_EAGER)
      hp_graph_release(ctx); // captured on other buffers, or disabled
  }
  if (action == HP_GRAPH_CAPTURE &&
      hp_graph_capture(ctx, arena, weights, inputs, outputs) != 0) {
    (void)cudaGetLastError(); // the failed capture's error
    ctx->error[0] = 0;
    ctx->graph.disabled = 1;
    action = HP_GRAPH_EAGER;
  }
  if (action == HP_GRAPH_EAGER)
    return hp_program_run(ctx, arena, weights, inputs, outputs);
  cudaError_t e = cudaGraphLaunch(ctx->graph_exec, ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "cudaGraphLaunch: %s",
             cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
#endif

int hetpar_run(void *p, void *arena, void *weights, const void *const *inputs,
               void *const *outputs) {
  hp_ctx *ctx = (hp_ctx *)p;
  ctx->error[0] = 0;
  hp_index_error found;
#if HP_CUDA
  cudaError_t e = cudaMemsetAsync(ctx->index_error, 0, sizeof *ctx->index_error,
                                  ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "CUDA error: %s",
             cudaGetErrorString(e));
    return 1;
  }
  if (ctx->trace_events) {
    ctx->trace_start_us = hp_wall_us();
    cudaEventRecord(ctx->trace_events[HP_TRACE_POINTS + 1], ctx->stream);
  }
#else
  memset(ctx->index_error, 0, sizeof *ctx->index_error);
#if defined(HETPAR_MULTI_DEVICE)
  // Every device of a multi-device run joins MPI, also one whose program has
  // no collective of its own: the other ranks' MPI_Init waits for all of
  // the job's processes. At the first run, not at creation: a program that
  // is created and never run (a check of its folder) starts no MPI.
  if (hp_mpi_start(ctx))
    return 1;
#endif
#endif
#if HP_CUDA
  int rc = hp_run_graph(ctx, (char *)arena, (char *)weights, inputs, outputs);
#else
  int rc = hp_program_run(ctx, (char *)arena, (char *)weights, inputs, outputs);
#endif
  if (rc)
    return rc;
#if HP_CUDA
  e = cudaStreamSynchronize(ctx->stream);
  if (e == cudaSuccess)
    e = cudaGetLastError();
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(&found, ctx->index_error, sizeof found,
                        cudaMemcpyDeviceToHost, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "CUDA error: %s",
             cudaGetErrorString(e));
    return 1;
  }
#else
  found = *ctx->index_error;
#endif
#if HP_CUDA
  // The run has finished (cudaStreamSynchronize above): each trace point's
  // event, as wall time from the run's start event.
  if (ctx->trace_events && ctx->trace)
    for (int i = 0; i <= HP_TRACE_POINTS; ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, ctx->trace_events[HP_TRACE_POINTS + 1],
                           ctx->trace_events[i]);
      ctx->trace[i] = ctx->trace_start_us + 1e3 * (double)ms;
    }
#endif
  // 3: the program ran to its end (its exchanges and collectives done), but
  // its results are not to be trusted.
  return hp_report_index_error(ctx, found) ? 3 : 0;
}

// A program generated with --unchecked-indices (HP_UNCHECKED_INDICES, the
// same for every device of one compile) never finishes a run with an index
// out of range, so its devices have nothing to agree on: without
// hetpar_agree the runtime skips the step's all-reduce (Program::agree).
#if defined(HETPAR_MULTI_DEVICE) && !defined(HP_UNCHECKED_INDICES)
int hetpar_agree(void *p, int failed) { return hp_agree((hp_ctx *)p, failed); }
#endif

const char *hetpar_error(void *p) { return ((hp_ctx *)p)->error; }

// The measured timeline (ProgramABI.h, "Trace").
int hetpar_trace_points(void) { return HP_TRACE_POINTS; }

const char *hetpar_trace_span(int i) {
  static const char *const spans[] = {HP_TRACE_SPANS ""};
  return i >= 0 && i < HP_TRACE_POINTS ? spans[i] : NULL;
}

int hetpar_trace(void *p, double *times_us) {
  hp_ctx *ctx = (hp_ctx *)p;
#if HP_CUDA
  if (times_us && !ctx->trace_events && HP_TRACE_POINTS > 0) {
    const int n = HP_TRACE_POINTS + 2;
    cudaEvent_t *events = (cudaEvent_t *)calloc(n, sizeof(cudaEvent_t));
    if (!events) {
      snprintf(ctx->error, sizeof ctx->error, "out of host memory");
      return 1;
    }
    for (int i = 0; i < n; ++i) {
      cudaError_t e = cudaEventCreate(&events[i]);
      if (e != cudaSuccess) {
        for (int j = 0; j < i; ++j)
          cudaEventDestroy(events[j]);
        free(events);
        snprintf(ctx->error, sizeof ctx->error, "cudaEventCreate: %s",
                 cudaGetErrorString(e));
        return 1;
      }
    }
    ctx->trace_events = events;
  }
  if (!times_us)
    hp_trace_release(ctx);
#endif
  ctx->trace = times_us;
  return 0;
}
}
#endif // HETPAR_DEFINE_ABI
