//===- hetpar_launch.h - context, index checks, launch ----------*- C++ -*-===//
//
// The backend context (hp_ctx), index checks, tracing and kernel launch
// (HP_KERNEL, HP_FOR, hp_launch).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_LAUNCH_H
#define HETPAR_DEVICE_LAUNCH_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Backend context and kernel launch
//===----------------------------------------------------------------------===//

/// The first index from data that a kernel found outside its range during a
/// run (docs/reliability.md, "Indices"). `node` is 0 while none was found,
/// else the 1-based position of the node in the program's HP_CHECKED_NODES;
/// the first report wins (compare-and-swap on `node`), its other fields are
/// written by that reporter only. Device memory; hetpar_run clears it before
/// the program and reads it once after, so a step pays no host sync per
/// kernel.
struct hp_index_error {
  unsigned long long node;
  long long value;   ///< the index (or label) as read
  long long lo, hi;  ///< the valid range [lo, hi)
  long long element; ///< its position in the index tensor (row-major)
};

/// Reports index `value` at `element` of checked node `node` (1-based) as
/// outside [lo, hi). `e` null: the program was compiled without the
/// reports (--unchecked-indices); the caller's kernel still never reads or
/// writes outside its buffers.
HP_HD void hp_index_fault(hp_index_error *e, int node, long long value,
                          long long lo, long long hi, long long element) {
  if (!e)
    return;
#if HP_CUDA && defined(__CUDA_ARCH__)
  if (atomicCAS(&e->node, 0ULL, (unsigned long long)node) != 0ULL)
    return;
#else
  unsigned long long none = 0;
  if (!__atomic_compare_exchange_n(&e->node, &none, (unsigned long long)node,
                                   false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
    return;
#endif
  e->value = value;
  e->lo = lo;
  e->hi = hi;
  e->element = element;
}

/// Index `v` into an axis of `extent` (negative indices count from the end,
/// as ONNX's): its position in [0, extent), or -1 when v lies outside
/// [-extent, extent), which is then reported as element `at` of checked node
/// `node` (hp_index_fault; `e` null: not reported).
HP_HD int64_t hp_checked_index(long long v, int64_t extent, hp_index_error *e,
                               int node, long long at) {
  const long long c = v < 0 ? v + extent : v;
  if (c >= 0 && c < extent)
    return c;
  hp_index_fault(e, node, v, -extent, extent, at);
  return -1;
}

/// What hetpar_run does on the GPU with a CUDA graph of the whole run
/// (hp_graph_next): run the program's launches one by one, capture them into
/// a graph and launch that, or launch the graph captured before.
enum hp_graph_action { HP_GRAPH_EAGER, HP_GRAPH_CAPTURE, HP_GRAPH_REPLAY };

/// The buffers a run's graph was captured on (a graph's launches hold the
/// arena, weights, input and output pointers of its capture) and how far the
/// graph has got for them.
struct hp_graph_state {
  /// Never capture: HETPAR_CUDA_GRAPHS=0, or a capture that failed.
  int disabled;
  /// For `key`: 0 no run yet, 1 one eager run (the warm-up that loads the
  /// kernels and sizes cuBLAS's workspace), 2 captured.
  int runs;
  int n;
  const void **key;
};

/// The action for a run on the n buffers `ptrs`, and the state after it: the
/// first run on new buffers is eager (and records them), the second captures,
/// every later one replays; disabled, always eager. Out of host memory for
/// the key, graphs are disabled. A caller whose capture fails sets
/// `disabled` and runs eagerly.
static inline hp_graph_action hp_graph_next(hp_graph_state *s,
                                            const void *const *ptrs, int n) {
  if (s->disabled)
    return HP_GRAPH_EAGER;
  if (s->key && s->n == n &&
      memcmp(s->key, ptrs, sizeof(void *) * (size_t)n) == 0) {
    if (s->runs >= 2)
      return HP_GRAPH_REPLAY;
    s->runs = 2;
    return HP_GRAPH_CAPTURE;
  }
  if (!s->key || s->n != n) {
    free(s->key);
    s->key = (const void **)malloc(sizeof(void *) * (size_t)(n > 0 ? n : 1));
    if (!s->key) {
      s->disabled = 1;
      return HP_GRAPH_EAGER;
    }
  }
  memcpy(s->key, ptrs, sizeof(void *) * (size_t)n);
  s->n = n;
  s->runs = 1;
  return HP_GRAPH_EAGER;
}

struct hp_gpu_plans; // hetpar_gpu_libraries.h

struct hp_ctx {
  char error[512];
  /// The collective or exchange running now, for error messages ("all_reduce
  /// before node '/2/Gemm' on devices [0,1,2,3]"); set by the generated code.
  const char *what;
  /// Device memory for the run's first out-of-range index (hp_index_fault).
  hp_index_error *index_error;
  /// The measured timeline (hetpar_trace): when set, each HP_TRACE(ctx, i)
  /// of a run writes the wall-clock time of trace point i, in microseconds
  /// since the epoch, into trace[i] (HP_TRACE_POINTS + 1 entries).
  double *trace;
#if HP_CUDA
  cudaStream_t stream;
  cublasHandle_t blas;
  /// cuBLASLt for GEMMs with an epilogue (hp_gemm_lt) and cuDNN for
  /// convolutions and pooling (hp_conv_cudnn, hp_pool_cudnn), both on
  /// the stream; null where a library cannot start (its callers then take
  /// the other paths). hp_gpu_libraries_init (hetpar_gpu_libraries.h).
  cublasLtHandle_t lt;
  cudnnHandle_t dnn;
  /// The workspace of cuBLAS, cuBLASLt and cuDNN (workspace_bytes; shared,
  /// as they run in the stream's order), or null.
  void *workspace;
  size_t workspace_bytes;
  /// The cuBLASLt and cuDNN plans made so far, one per distinct call (null
  /// when it could not be allocated: the libraries' paths then decline).
  hp_gpu_plans *plans;
  /// One event per trace point and one at the run's start (created by
  /// hetpar_trace), and the host's wall clock when that one was recorded.
  cudaEvent_t *trace_events;
  double trace_start_us;
  /// The whole run as one CUDA graph (hetpar_run, hp_run_graph).
  hp_graph_state graph;
  cudaGraphExec_t graph_exec;
#endif
};

/// Wall-clock time in microseconds since the epoch (CLOCK_REALTIME, so that
/// the processes of one job share a time line).
static inline double hp_wall_us() {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/// Trace point i of the generated code: the start of span i, or the end of
/// the last span for i == HP_TRACE_POINTS (hetpar_trace). Costs one branch
/// when tracing is off. On CUDA an event on the stream, converted to wall
/// time once the run has finished.
#if HP_CUDA
#define HP_TRACE(ctx, i)                                                       \
  do {                                                                         \
    if ((ctx)->trace_events)                                                   \
      cudaEventRecord((ctx)->trace_events[i], (ctx)->stream);                  \
  } while (0)
#else
#define HP_TRACE(ctx, i)                                                       \
  do {                                                                         \
    if ((ctx)->trace)                                                          \
      (ctx)->trace[i] = hp_wall_us();                                          \
  } while (0)
#endif

struct hp_dims {
  int64_t v[HP_MAX_RANK];
};

#if HP_CUDA
/// Kernels are grid-stride loops; `hp_n` is the iteration count.
#define HP_KERNEL(name, ...) __global__ void name(int64_t hp_n, __VA_ARGS__)
#define HP_FOR(i)                                                              \
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < hp_n;   \
       i += (int64_t)blockDim.x * gridDim.x)
#define HP_FOR_W(i, work) HP_FOR(i)
#define HP_FOR_SIMD(i) HP_FOR(i)
#define HP_SIMD_REDUCE(op, v)
#define HP_SIMD
static inline unsigned hp_blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b > 65535 * 8 ? 65535 * 8 : b);
}
/// Launches kernel k over n iterations on the context's stream (nothing for
/// n == 0). A function, not a macro, so template arguments may hold commas.
template <typename... P, typename... A>
static void hp_launch(hp_ctx *ctx, void (*k)(int64_t, P...), int64_t n,
                      A... args) {
  if (n > 0)
    k<<<hp_blocks(n), 256, 0, ctx->stream>>>(n, args...);
}
#else
#define HP_KERNEL(name, ...) static void name(int64_t hp_n, __VA_ARGS__)
// Parallel only when the loop has enough work to pay for waking threads
// (16384 element-operations; a measurement on the 2-core dev machine put
// the break-even near 10^4).
// clang-format would split the _Pragma strings, which _Pragma refuses.
// clang-format off
#define HP_FOR(i)                                                              \
  _Pragma("omp parallel for schedule(static) if (hp_n >= 16384)")              \
      for (int64_t i = 0; i < hp_n; ++i)
#define HP_FOR_W(i, work)                                                      \
  const int64_t hp_work = (work);                                              \
  _Pragma("omp parallel for schedule(static) if (hp_n * hp_work >= 16384)")    \
      for (int64_t i = 0; i < hp_n; ++i)
// HP_FOR whose body has no inner loop or call that stops vectorization (the
// fused elementwise kernels): each thread's share runs as SIMD lanes, at any
// optimization level (GCC's -O2 vectorizes only loops without a remainder).
// The if clause names `parallel`: unnamed, OpenMP 5 applies it to the simd
// construct too, and small loops would run scalar.
#define HP_FOR_SIMD(i)                                                         \
  _Pragma("omp parallel for simd schedule(static) if (parallel : hp_n >= 16384)") \
      for (int64_t i = 0; i < hp_n; ++i)
// A loop over the rows of `width` elements each that the kernel's hp_n
// elements form (the generated broadcast elementwise kernels), parallel
// under the same 16384-element rule as HP_FOR.
#define HP_FOR_ROWS(row, width)                                                \
  _Pragma("omp parallel for schedule(static) if (hp_n >= 16384)")              \
      for (int64_t row = 0; row < hp_n / (width); ++row)
// clang-format on
#define HP_PRAGMA(x) _Pragma(#x)
/// Vectorizes the next loop, a reduction into v with op (+ or max): the
/// lanes' partial results are combined at the end, so the order of the
/// additions differs from a scalar loop.
#define HP_SIMD_REDUCE(op, v) HP_PRAGMA(omp simd reduction(op : v))
/// Vectorizes the next loop, whose iterations are independent.
#define HP_SIMD _Pragma("omp simd")
/// Runs kernel k over n iterations (nothing for n == 0).
template <typename... P, typename... A>
static void hp_launch(hp_ctx *, void (*k)(int64_t, P...), int64_t n,
                      A... args) {
  if (n > 0)
    k(n, args...);
}
#endif

#endif // HETPAR_DEVICE_LAUNCH_H
