//===- hetpar_collectives.h - multi-device collectives ----------*- C++ -*-===//
//
// Collectives and point-to-point exchanges of multi-device programs (MPI,
// NCCL).
//
// A part of hetpar_device.h, which includes its parts in order: a part
// may use what the parts before it define. Include hetpar_device.h.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_COLLECTIVES_H
#define HETPAR_DEVICE_COLLECTIVES_H
#ifndef HETPAR_DEVICE_H
#error "a part of hetpar/device/hetpar_device.h: include that header"
#endif

//===----------------------------------------------------------------------===//
// Collectives over explicit device groups, for multi-device programs (the
// local form of the dist dialect). Compiled only with HETPAR_MULTI_DEVICE, so
// one-device programs need no MPI. Both backends run them with MPI (one
// process per device; the rank in MPI_COMM_WORLD is the device's place in the
// mesh, hp_rank_of); on the GPU they run on NCCL where every rank has a GPU
// of its own (hp_collectives_init), else the buffers are staged through host
// memory (hp_staged), which also works with every rank on one GPU. Groups are
// ordered device lists, as in the dist ops;
// counts are elements. Every function returns 0, or non-zero with
// ctx->error set.
//===----------------------------------------------------------------------===//
#if defined(HETPAR_MULTI_DEVICE)
#include <dlfcn.h>
// The C API only: Open MPI's and MPICH's C++ bindings would add about 0.9 s
// of parsing to every device program's build.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

// C headers for the watchdog's thread and clock: <thread>, <mutex> and
// <chrono> would add about 0.4 s to every device program's build.
#include <algorithm>
#include <atomic>
#include <type_traits>

enum { HP_SUM, HP_MAX, HP_MIN, HP_PROD };

template <typename T> static MPI_Datatype hp_mpi_type();
template <> MPI_Datatype hp_mpi_type<float>() { return MPI_FLOAT; }
template <> MPI_Datatype hp_mpi_type<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype hp_mpi_type<int64_t>() { return MPI_INT64_T; }
template <> MPI_Datatype hp_mpi_type<int32_t>() { return MPI_INT32_T; }
template <> MPI_Datatype hp_mpi_type<int8_t>() { return MPI_INT8_T; }
template <> MPI_Datatype hp_mpi_type<uint8_t>() { return MPI_UINT8_T; }
template <> MPI_Datatype hp_mpi_type<bool>() { return MPI_C_BOOL; }
// 16-bit floats move as raw bits; their reductions widen to float32
// (hp_reduce_wide): MPI's integer sum of the bit patterns would be garbage.
template <> MPI_Datatype hp_mpi_type<hp_half>() { return MPI_UINT16_T; }
template <> MPI_Datatype hp_mpi_type<hp_bf16>() { return MPI_UINT16_T; }

template <typename T>
static constexpr bool hp_is_16bit_float =
    std::is_same<T, hp_half>::value || std::is_same<T, hp_bf16>::value;

/// A reduction of 16-bit floats, as the programs accumulate them: `reduce`
/// (an MPI reduction of float32 buffers, in == out allowed) on `in` (`inCount`
/// elements) widened to float32, its `outCount` results narrowed into `out`
/// (one rounding, whatever the group size). Returns non-zero on failure.
template <typename T, typename Reduce>
static int hp_reduce_wide(hp_ctx *ctx, const T *in, int64_t inCount, T *out,
                          int64_t outCount, Reduce reduce) {
  float *wide = (float *)malloc(sizeof(float) * (size_t)(inCount + 1));
  float *result = (float *)malloc(sizeof(float) * (size_t)(outCount + 1));
  if (!wide || !result) {
    free(wide);
    free(result);
    snprintf(ctx->error, sizeof ctx->error,
             "out of host memory widening a 16-bit reduction of %lld elements",
             (long long)inCount);
    return 1;
  }
  for (int64_t i = 0; i < inCount; ++i)
    wide[i] = (float)in[i];
  int rc = reduce(wide, result);
  if (!rc)
    for (int64_t i = 0; i < outCount; ++i)
      out[i] = T(result[i]);
  free(wide);
  free(result);
  return rc;
}

static MPI_Op hp_mpi_op(int op) {
  return op == HP_SUM   ? MPI_SUM
         : op == HP_MAX ? MPI_MAX
         : op == HP_MIN ? MPI_MIN
                        : MPI_PROD;
}

/// The process rank of device `id`: its place in the program's mesh
/// (HETPAR_MESH_DEVICES, the device ids in rank order, which the code
/// generator defines from dist.mesh), or the id itself without one.
#ifdef HETPAR_MESH_DEVICES
static const int64_t hp_mesh_devices[] = {HETPAR_MESH_DEVICES};
static int hp_rank_of(int64_t id) {
  for (size_t r = 0; r < sizeof hp_mesh_devices / sizeof *hp_mesh_devices; ++r)
    if (hp_mesh_devices[r] == id)
      return (int)r;
  return -1;
}
#else
static int hp_rank_of(int64_t id) { return (int)id; }
#endif

static int hp_mpi_status(hp_ctx *ctx, int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return 0;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  snprintf(ctx->error, sizeof ctx->error, "%s failed: %.*s", what, len, text);
  return 1;
}

/// The communicator of an ordered device group, created on first use by the
/// group's members only (MPI_Comm_create_group) and kept for the process's
/// life. Rank i of it is devices[i].
struct hp_group_cache {
  int64_t devices[64];
  int n;
  MPI_Comm comm;
  void *nccl; // its NCCL communicator, made on first NCCL use (GPU)
};
static hp_group_cache hp_groups[64];
static int hp_group_count = 0;

/// The device id of MPI rank `rank` (hp_rank_of inverted).
static int64_t hp_device_of(int rank) {
#ifdef HETPAR_MESH_DEVICES
  if (rank >= 0 &&
      (size_t)rank < sizeof hp_mesh_devices / sizeof *hp_mesh_devices)
    return hp_mesh_devices[rank];
#endif
  return rank;
}

/// Seconds a collective or exchange may take before the process gives up:
/// HETPAR_COLLECTIVE_TIMEOUT, 300 by default.
static double hp_timeout_s() {
  static double t = -1;
  if (t < 0) {
    const char *v = getenv("HETPAR_COLLECTIVE_TIMEOUT");
    t = v ? atof(v) : 300;
    if (!(t > 0))
      t = 300;
  }
  return t;
}

/// The watchdog: every collective and exchange (communicator creation
/// included) runs between hp_watch and hp_unwatch. A thread started on first
/// use checks the deadline; past it, it prints which device and which
/// collective (ctx->what, set by the generated code before each call) did not
/// finish and ends the process, and with it the job (mpirun stops the other
/// processes), so a dead, stuck or mismatched peer never hangs the others.
struct hp_watchdog_state {
  std::atomic<int64_t> deadline_ns{0}; // 0: nothing running
  std::atomic<const char *> what{nullptr}, call{nullptr};
  std::atomic<int> rank{-1};
  std::atomic<double> seconds{0}; // the limit of the call being watched
};
static hp_watchdog_state hp_watchdog;
static pthread_once_t hp_watchdog_started = PTHREAD_ONCE_INIT;
static int64_t hp_now_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static void *hp_watchdog_loop(void *) {
  const struct timespec period = {0, 50 * 1000 * 1000}; // 50 ms
  for (;;) {
    nanosleep(&period, nullptr);
    int64_t d = hp_watchdog.deadline_ns.load();
    if (d == 0 || hp_now_ns() < d)
      continue;
    int rank = hp_watchdog.rank.load();
    if (rank < 0)
      if (const char *v = getenv("OMPI_COMM_WORLD_RANK"))
        rank = atoi(v);
    const char *what = hp_watchdog.what.load();
    fprintf(stderr,
            "hetpar: error: device %lld (rank %d): %s (%s) did not finish "
            "within %g s (HETPAR_COLLECTIVE_TIMEOUT): a peer died, hangs, "
            "or runs another collective; ending every process\n",
            (long long)hp_device_of(rank), rank, what ? what : "a collective",
            hp_watchdog.call.load(), hp_watchdog.seconds.load());
    fflush(stderr);
    _exit(3);
  }
  return nullptr;
}
static void hp_watchdog_start() {
  pthread_t thread;
  if (pthread_create(&thread, nullptr, hp_watchdog_loop, nullptr) == 0)
    pthread_detach(thread);
}
/// Watches `call` for `factor` x the timeout.
static void hp_watch(hp_ctx *ctx, const char *call, double factor = 1) {
  pthread_once(&hp_watchdog_started, hp_watchdog_start);
  hp_watchdog.what = ctx->what;
  hp_watchdog.call = call;
  hp_watchdog.seconds = factor * hp_timeout_s();
  hp_watchdog.deadline_ns =
      hp_now_ns() + (int64_t)(hp_watchdog.seconds.load() * 1e9);
}
static void hp_unwatch() { hp_watchdog.deadline_ns = 0; }

/// Waits for `n` requests, yielding the core meanwhile (ranks may share
/// cores).
static int hp_wait(hp_ctx *ctx, MPI_Request *reqs, int n, const char *call) {
  for (;;) {
    int done = 0;
    int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
      return hp_mpi_status(ctx, rc, call);
    if (done)
      return 0;
    sched_yield();
  }
}

/// Starts MPI on first use (collectives and exchanges call it).
static int hp_mpi_start(hp_ctx *ctx) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized)
    return 0;
  int provided = 0, rank = 0;
  if (hp_mpi_status(ctx,
                    MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided),
                    "MPI_Init_thread"))
    return 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hp_watchdog.rank = rank;
  return 0;
}

static int hp_group_comm(hp_ctx *ctx, const int64_t *devices, int n,
                         MPI_Comm *out) {
  if (hp_mpi_start(ctx))
    return 1;
  for (int g = 0; g < hp_group_count; ++g)
    if (hp_groups[g].n == n &&
        !memcmp(hp_groups[g].devices, devices, sizeof(int64_t) * n)) {
      *out = hp_groups[g].comm;
      return 0;
    }
  if (n > 64 || hp_group_count == 64) {
    snprintf(ctx->error, sizeof ctx->error,
             "more than 64 device groups or devices per group");
    return 1;
  }
  int ranks[64];
  for (int i = 0; i < n; ++i)
    ranks[i] = hp_rank_of(devices[i]);
  MPI_Group world, group;
  MPI_Comm comm;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  if (hp_mpi_status(ctx, MPI_Group_incl(world, n, ranks, &group),
                    "MPI_Group_incl") ||
      hp_mpi_status(ctx, MPI_Comm_create_group(MPI_COMM_WORLD, group, 0, &comm),
                    "MPI_Comm_create_group"))
    return 1;
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  hp_group_cache &c = hp_groups[hp_group_count++];
  memcpy(c.devices, devices, sizeof(int64_t) * n);
  c.n = n;
  c.comm = comm;
  *out = comm;
  return 0;
}

/// The debug mode (HETPAR_CHECK_COLLECTIVES=1): before each collective, the
/// group's members exchange its signature (kind, element count, element
/// size, reduction, root) and every member fails, naming the first member
/// that disagrees, instead of running mismatched calls.
static int hp_check_signature(hp_ctx *ctx, MPI_Comm comm, int64_t kind,
                              int64_t count, int64_t size, int64_t op,
                              int64_t root, const int64_t *counts = nullptr) {
  static int enabled = -1;
  if (enabled < 0) {
    const char *v = getenv("HETPAR_CHECK_COLLECTIVES");
    enabled = v && *v && strcmp(v, "0") != 0;
  }
  if (!enabled)
    return 0;
  int n = 0, me = 0;
  MPI_Comm_size(comm, &n);
  MPI_Comm_rank(comm, &me);
  // Uneven collectives: every member passes the same per-member counts;
  // they take part as an FNV-1a hash.
  uint64_t hash = 1469598103934665603ull;
  for (int i = 0; counts && i < n; ++i) {
    hash ^= (uint64_t)counts[i];
    hash *= 1099511628211ull;
  }
  int64_t mine[6] = {kind, count, size, op, root, (int64_t)hash}, all[64 * 6];
  MPI_Request req;
  if (hp_mpi_status(
          ctx,
          MPI_Iallgather(mine, 6, MPI_INT64_T, all, 6, MPI_INT64_T, comm, &req),
          "MPI_Iallgather") ||
      hp_wait(ctx, &req, 1, "signature check"))
    return 1;
  static const char *kinds[] = {"all_reduce", "all_gather", "reduce_scatter",
                                "all_to_all", "broadcast"};
  for (int i = 0; i < n; ++i)
    if (memcmp(all + 6 * i, mine, sizeof mine) != 0) {
      MPI_Group g, world;
      int worldRank = 0;
      MPI_Comm_group(comm, &g);
      MPI_Comm_group(MPI_COMM_WORLD, &world);
      MPI_Group_translate_ranks(g, 1, &i, world, &worldRank);
      MPI_Group_free(&g);
      MPI_Group_free(&world);
      const int64_t *o = all + 6 * i;
      int myRank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
      snprintf(ctx->error, sizeof ctx->error,
               "device %lld: %s: %s of %lld elements of %lld bytes (op %lld, "
               "root %lld) here, but device %lld runs %s of %lld elements of "
               "%lld bytes (op %lld, root %lld)%s",
               (long long)hp_device_of(myRank),
               ctx->what ? ctx->what : "a collective", kinds[kind],
               (long long)count, (long long)size, (long long)op,
               (long long)root, (long long)hp_device_of(worldRank),
               o[0] >= 0 && o[0] < 5 ? kinds[o[0]] : "?", (long long)o[1],
               (long long)o[2], (long long)o[3], (long long)o[4],
               memcmp(o, mine, 5 * sizeof(int64_t)) == 0
                   ? " with other per-member counts"
                   : "");
      return 1;
    }
  return 0;
}

/// Element-wise reduction of `count` elements over the group; in == out is
/// allowed.
template <typename T>
static int hp_all_reduce_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                        int n, const T *in, T *out,
                                        int64_t count, int op) {
  if constexpr (hp_is_16bit_float<T>)
    return hp_reduce_wide(ctx, in, count, out, count, [&](float *w, float *r) {
      return hp_all_reduce_host_unwatched(ctx, devices, n, w, r, count, op);
    });
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm) ||
      hp_check_signature(ctx, comm, 0, count, sizeof(T), op, -1))
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Iallreduce(in == out ? MPI_IN_PLACE : in, out,
                                      (int)count, hp_mpi_type<T>(),
                                      hp_mpi_op(op), comm, &req),
                       "MPI_Iallreduce") ||
         hp_wait(ctx, &req, 1, "MPI_Iallreduce");
}

/// Concatenation of the members' blocks in group order; member i sends
/// counts[i] elements.
template <typename T>
static int hp_all_gather_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                        int n, const T *in, T *out,
                                        const int64_t *counts) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  int me = 0, c[64], d[64], at = 0;
  MPI_Comm_rank(comm, &me);
  for (int i = 0; i < n; ++i) {
    c[i] = (int)counts[i];
    d[i] = at;
    at += c[i];
  }
  if (hp_check_signature(ctx, comm, 1, at, sizeof(T), -1, -1, counts))
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Iallgatherv(in, c[me], hp_mpi_type<T>(), out, c, d,
                                       hp_mpi_type<T>(), comm, &req),
                       "MPI_Iallgatherv") ||
         hp_wait(ctx, &req, 1, "MPI_Iallgatherv");
}

/// Reduction over the group of sum(counts) elements; member i keeps block i
/// (counts[i] elements).
template <typename T>
static int hp_reduce_scatter_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                            int n, const T *in, T *out,
                                            const int64_t *counts, int op) {
  if constexpr (hp_is_16bit_float<T>) {
    MPI_Comm group;
    int me = 0;
    if (hp_group_comm(ctx, devices, n, &group))
      return 1;
    MPI_Comm_rank(group, &me);
    int64_t total = 0;
    for (int i = 0; i < n; ++i)
      total += counts[i];
    return hp_reduce_wide(ctx, in, total, out, counts[me],
                          [&](float *w, float *r) {
                            return hp_reduce_scatter_host_unwatched(
                                ctx, devices, n, w, r, counts, op);
                          });
  }
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  int c[64], total = 0;
  for (int i = 0; i < n; ++i)
    total += c[i] = (int)counts[i];
  if (hp_check_signature(ctx, comm, 2, total, sizeof(T), op, -1, counts))
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Ireduce_scatter(in, out, c, hp_mpi_type<T>(),
                                           hp_mpi_op(op), comm, &req),
                       "MPI_Ireduce_scatter") ||
         hp_wait(ctx, &req, 1, "MPI_Ireduce_scatter");
}

/// Member i sends sendCounts[j] elements (consecutive blocks of `in`) to
/// member j and receives recvCounts[j] from it (consecutive blocks of
/// `out`).
template <typename T>
static int hp_all_to_all_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                        int n, const T *in,
                                        const int64_t *sendCounts, T *out,
                                        const int64_t *recvCounts) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm) ||
      hp_check_signature(ctx, comm, 3, 0, sizeof(T), -1, -1))
    return 1;
  int sc[64], sd[64], rc[64], rd[64], sa = 0, ra = 0;
  for (int i = 0; i < n; ++i) {
    sc[i] = (int)sendCounts[i];
    sd[i] = sa;
    sa += sc[i];
    rc[i] = (int)recvCounts[i];
    rd[i] = ra;
    ra += rc[i];
  }
  return hp_mpi_status(ctx,
                       MPI_Ialltoallv(in, sc, sd, hp_mpi_type<T>(), out, rc, rd,
                                      hp_mpi_type<T>(), comm, &req),
                       "MPI_Ialltoallv") ||
         hp_wait(ctx, &req, 1, "MPI_Ialltoallv");
}

/// Every member gets the root's `count` elements (root is a device id).
template <typename T>
static int hp_broadcast_host_unwatched(hp_ctx *ctx, const int64_t *devices,
                                       int n, T *buf, int64_t count,
                                       int64_t root) {
  MPI_Comm comm;
  MPI_Request req;
  if (hp_group_comm(ctx, devices, n, &comm) ||
      hp_check_signature(ctx, comm, 4, count, sizeof(T), -1, root))
    return 1;
  int r = 0;
  while (r < n && devices[r] != root)
    ++r;
  return hp_mpi_status(
             ctx, MPI_Ibcast(buf, (int)count, hp_mpi_type<T>(), r, comm, &req),
             "MPI_Ibcast") ||
         hp_wait(ctx, &req, 1, "MPI_Ibcast");
}

/// The host collectives under the watchdog (hp_watch).
template <typename T>
static int hp_all_reduce_host(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, int64_t count, int op) {
  hp_watch(ctx, "MPI_Iallreduce");
  int rc = hp_all_reduce_host_unwatched(ctx, devices, n, in, out, count, op);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_all_gather_host(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, const int64_t *counts) {
  hp_watch(ctx, "MPI_Iallgatherv");
  int rc = hp_all_gather_host_unwatched(ctx, devices, n, in, out, counts);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_reduce_scatter_host(hp_ctx *ctx, const int64_t *devices, int n,
                                  const T *in, T *out, const int64_t *counts,
                                  int op) {
  hp_watch(ctx, "MPI_Ireduce_scatter");
  int rc =
      hp_reduce_scatter_host_unwatched(ctx, devices, n, in, out, counts, op);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_all_to_all_host(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, const int64_t *sendCounts, T *out,
                              const int64_t *recvCounts) {
  hp_watch(ctx, "MPI_Ialltoallv");
  int rc = hp_all_to_all_host_unwatched(ctx, devices, n, in, sendCounts, out,
                                        recvCounts);
  hp_unwatch();
  return rc;
}
template <typename T>
static int hp_broadcast_host(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                             int64_t count, int64_t root) {
  hp_watch(ctx, "MPI_Ibcast");
  int rc = hp_broadcast_host_unwatched(ctx, devices, n, buf, count, root);
  hp_unwatch();
  return rc;
}

/// The collectives on the program's buffers. On the CPU they are the MPI calls
/// above. On the GPU they run on NCCL when hp_collectives_init chose it;
/// otherwise every rank stages its buffers through host memory (device ->
/// host, MPI, host -> device): slower than NCCL, but it works with every rank
/// on one GPU, which NCCL refuses (scripts/gpu-check.sh runs multi-device
/// plans that way).
#if HP_CUDA
/// A host buffer of at least `bytes` (slot 0: inputs, 1: outputs), kept for
/// the process's life.
static void *hp_host_scratch(int slot, size_t bytes) {
  static void *buf[2];
  static size_t size[2];
  if (size[slot] < bytes) {
    free(buf[slot]);
    buf[slot] = malloc(bytes);
    size[slot] = buf[slot] ? bytes : 0;
  }
  return buf[slot];
}
static int hp_copy(hp_ctx *ctx, void *dst, const void *src, size_t bytes,
                   cudaMemcpyKind kind) {
  cudaError_t e = cudaSuccess;
  if (bytes)
    e = cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(ctx->stream);
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "staging a collective: %s",
             cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
/// Runs `body(hostIn, hostOut)` on host copies of `in` (inCount elements)
/// and copies the host result into `out` (outCount elements).
template <typename T, typename F>
static int hp_staged(hp_ctx *ctx, const T *in, int64_t inCount, T *out,
                     int64_t outCount, F body) {
  T *hin = (T *)hp_host_scratch(0, sizeof(T) * (size_t)inCount + 1);
  T *hout = (T *)hp_host_scratch(1, sizeof(T) * (size_t)outCount + 1);
  if (!hin || !hout) {
    snprintf(ctx->error, sizeof ctx->error,
             "out of host memory staging a "
             "collective");
    return 1;
  }
  if (hp_copy(ctx, hin, in, sizeof(T) * inCount, cudaMemcpyDeviceToHost) ||
      body(hin, hout) ||
      hp_copy(ctx, out, hout, sizeof(T) * outCount, cudaMemcpyHostToDevice))
    return 1;
  return 0;
}
static int hp_group_position(hp_ctx *ctx, const int64_t *devices, int n,
                             int *me) {
  MPI_Comm comm;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  MPI_Comm_rank(comm, me);
  return 0;
}
static int64_t hp_sum(const int64_t *v, int n) {
  int64_t s = 0;
  for (int i = 0; i < n; ++i)
    s += v[i];
  return s;
}
/// NCCL, loaded at run time (dlopen of libnccl.so.2, as IREE's CUDA driver
/// does): programs build and load without it. The few entry points used,
/// with the ABI of nccl.h (enum values, ncclUniqueId of 128 bytes by value).
struct hp_nccl_id {
  char internal[128];
};
struct hp_nccl_api {
  int (*getUniqueId)(hp_nccl_id *);
  int (*commInitRank)(void **, int, hp_nccl_id, int);
  int (*allReduce)(const void *, void *, size_t, int, int, void *,
                   cudaStream_t);
  int (*broadcast)(const void *, void *, size_t, int, int, void *,
                   cudaStream_t);
  int (*reduce)(const void *, void *, size_t, int, int, int, void *,
                cudaStream_t);
  int (*send)(const void *, size_t, int, int, void *, cudaStream_t);
  int (*recv)(void *, size_t, int, int, void *, cudaStream_t);
  int (*groupStart)(void);
  int (*groupEnd)(void);
  const char *(*getErrorString)(int);
};
static hp_nccl_api hp_nccl;
/// Which path the GPU collectives take, the same on every rank: 1 NCCL (one
/// GPU per rank on each node, NCCL found), 0 host-staged MPI.
static int hp_use_nccl = 0;
static bool hp_nccl_load() {
  void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    h = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return false;
  bool ok = true;
  auto get = [&](auto &fn, const char *name) {
    fn = (std::remove_reference_t<decltype(fn)>)dlsym(h, name);
    ok &= fn != nullptr;
  };
  get(hp_nccl.getUniqueId, "ncclGetUniqueId");
  get(hp_nccl.commInitRank, "ncclCommInitRank");
  get(hp_nccl.allReduce, "ncclAllReduce");
  get(hp_nccl.broadcast, "ncclBroadcast");
  get(hp_nccl.reduce, "ncclReduce");
  get(hp_nccl.send, "ncclSend");
  get(hp_nccl.recv, "ncclRecv");
  get(hp_nccl.groupStart, "ncclGroupStart");
  get(hp_nccl.groupEnd, "ncclGroupEnd");
  get(hp_nccl.getErrorString, "ncclGetErrorString");
  return ok;
}
/// Chooses the path once, at program creation, on every rank together:
/// HETPAR_COLLECTIVES=mpi or nccl forces one; otherwise NCCL when it loads
/// and this node has a GPU per local rank (NCCL refuses two ranks on one GPU).
static int hp_collectives_init(char *err, size_t errlen) {
  hp_ctx tmp = {};
  if (hp_mpi_start(&tmp)) {
    snprintf(err, errlen, "%s", tmp.error);
    return 1;
  }
  const char *forced = getenv("HETPAR_COLLECTIVES");
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  int local = 1;
  if (const char *v = getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = atoi(v);
  else if (const char *v = getenv("SLURM_NTASKS_PER_NODE"))
    local = atoi(v);
  bool loaded = hp_nccl_load();
  int want =
      forced ? strcmp(forced, "nccl") == 0 : (loaded && local <= gpus ? 1 : 0);
  if (want && !loaded) {
    snprintf(err, errlen,
             "HETPAR_COLLECTIVES=nccl but libnccl.so.2 does not "
             "load");
    return 1;
  }
  MPI_Allreduce(&want, &hp_use_nccl, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return 0;
}
static int hp_nccl_status(hp_ctx *ctx, int rc, const char *what) {
  if (rc == 0)
    return 0;
  snprintf(ctx->error, sizeof ctx->error, "%s failed: %s", what,
           hp_nccl.getErrorString ? hp_nccl.getErrorString(rc) : "NCCL error");
  return 1;
}
template <typename T> static int hp_nccl_type();
template <> int hp_nccl_type<int8_t>() { return 0; }
template <> int hp_nccl_type<uint8_t>() { return 1; }
template <> int hp_nccl_type<bool>() { return 1; }
template <> int hp_nccl_type<int32_t>() { return 2; }
template <> int hp_nccl_type<int64_t>() { return 4; }
template <> int hp_nccl_type<hp_half>() { return 6; }
template <> int hp_nccl_type<float>() { return 7; }
template <> int hp_nccl_type<double>() { return 8; }
template <> int hp_nccl_type<hp_bf16>() { return 9; }
static int hp_nccl_op(int op) { // ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3
  return op == HP_SUM ? 0 : op == HP_PROD ? 1 : op == HP_MAX ? 2 : 3;
}
/// The NCCL communicator of a group (made by its members on first use: the
/// first member's ncclUniqueId travels by MPI_Bcast) and this rank in it.
static int hp_group_nccl(hp_ctx *ctx, const int64_t *devices, int n, void **out,
                         int *me) {
  MPI_Comm comm;
  if (hp_group_comm(ctx, devices, n, &comm))
    return 1;
  MPI_Comm_rank(comm, me);
  hp_group_cache *c = nullptr;
  for (int g = 0; g < hp_group_count; ++g)
    if (hp_groups[g].comm == comm)
      c = &hp_groups[g];
  if (!c->nccl) {
    hp_nccl_id id;
    if (*me == 0 &&
        hp_nccl_status(ctx, hp_nccl.getUniqueId(&id), "ncclGetUniqueId"))
      return 1;
    if (hp_mpi_status(ctx, MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm),
                      "MPI_Bcast of the NCCL id") ||
        hp_nccl_status(ctx, hp_nccl.commInitRank(&c->nccl, n, id, *me),
                       "ncclCommInitRank"))
      return 1;
  }
  *out = c->nccl;
  return 0;
}
/// Ends an NCCL call: waits for the stream under the watchdog (a stuck peer
/// shows up here).
static int hp_nccl_finish(hp_ctx *ctx, int rc, const char *what) {
  if (hp_nccl_status(ctx, rc, what))
    return 1;
  hp_watch(ctx, what);
  cudaError_t e = cudaStreamSynchronize(ctx->stream);
  hp_unwatch();
  if (e != cudaSuccess) {
    snprintf(ctx->error, sizeof ctx->error, "%s: %s", what,
             cudaGetErrorString(e));
    return 1;
  }
  return 0;
}
template <typename T>
static int hp_nccl_all_reduce(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, int64_t count, int op) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  return hp_nccl_finish(ctx,
                        hp_nccl.allReduce(in, out, (size_t)count,
                                          hp_nccl_type<T>(), hp_nccl_op(op),
                                          comm, ctx->stream),
                        "ncclAllReduce");
}
/// Uneven all-gather: grouped send/recv of each member's block (NCCL's
/// AllGather wants equal counts).
template <typename T>
static int hp_nccl_all_gather(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, T *out, const int64_t *counts) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int64_t at[65] = {0};
  for (int i = 0; i < n; ++i)
    at[i + 1] = at[i] + counts[i];
  cudaMemcpyAsync(out + at[me], in, sizeof(T) * (size_t)counts[me],
                  cudaMemcpyDeviceToDevice, ctx->stream);
  int rc = hp_nccl.groupStart();
  for (int p = 0; p < n && rc == 0; ++p) {
    if (p == me)
      continue;
    rc = hp_nccl.send(in, (size_t)counts[me], hp_nccl_type<T>(), p, comm,
                      ctx->stream);
    if (rc == 0)
      rc = hp_nccl.recv(out + at[p], (size_t)counts[p], hp_nccl_type<T>(), p,
                        comm, ctx->stream);
  }
  int end = hp_nccl.groupEnd();
  return hp_nccl_finish(ctx, rc ? rc : end, "all_gather (ncclSend/ncclRecv)");
}
/// Uneven reduce-scatter: one ncclReduce per block to its owner, grouped.
template <typename T>
static int hp_nccl_reduce_scatter(hp_ctx *ctx, const int64_t *devices, int n,
                                  const T *in, T *out, const int64_t *counts,
                                  int op) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int rc = hp_nccl.groupStart();
  int64_t at = 0;
  for (int i = 0; i < n && rc == 0; at += counts[i], ++i)
    rc = hp_nccl.reduce(in + at, out, (size_t)counts[i], hp_nccl_type<T>(),
                        hp_nccl_op(op), i, comm, ctx->stream);
  int end = hp_nccl.groupEnd();
  return hp_nccl_finish(ctx, rc ? rc : end, "reduce_scatter (ncclReduce)");
}
template <typename T>
static int hp_nccl_all_to_all(hp_ctx *ctx, const int64_t *devices, int n,
                              const T *in, const int64_t *sendCounts, T *out,
                              const int64_t *recvCounts) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int rc = hp_nccl.groupStart();
  int64_t sa = 0, ra = 0;
  for (int p = 0; p < n && rc == 0; ++p) {
    rc = hp_nccl.send(in + sa, (size_t)sendCounts[p], hp_nccl_type<T>(), p,
                      comm, ctx->stream);
    if (rc == 0)
      rc = hp_nccl.recv(out + ra, (size_t)recvCounts[p], hp_nccl_type<T>(), p,
                        comm, ctx->stream);
    sa += sendCounts[p];
    ra += recvCounts[p];
  }
  int end = hp_nccl.groupEnd();
  return hp_nccl_finish(ctx, rc ? rc : end, "all_to_all (ncclSend/ncclRecv)");
}
template <typename T>
static int hp_nccl_broadcast(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                             int64_t count, int64_t root) {
  void *comm;
  int me;
  if (hp_group_nccl(ctx, devices, n, &comm, &me))
    return 1;
  int r = 0;
  while (r < n && devices[r] != root)
    ++r;
  return hp_nccl_finish(ctx,
                        hp_nccl.broadcast(buf, buf, (size_t)count,
                                          hp_nccl_type<T>(), r, comm,
                                          ctx->stream),
                        "ncclBroadcast");
}

template <typename T>
static int hp_all_reduce(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, int64_t count, int op) {
  if (hp_use_nccl)
    return hp_nccl_all_reduce(ctx, devices, n, in, out, count, op);
  return hp_staged(ctx, in, count, out, count, [&](T *hi, T *ho) {
    return hp_all_reduce_host(ctx, devices, n, hi, ho, count, op);
  });
}
template <typename T>
static int hp_all_gather(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, const int64_t *counts) {
  if (hp_use_nccl)
    return hp_nccl_all_gather(ctx, devices, n, in, out, counts);
  int me = 0;
  if (hp_group_position(ctx, devices, n, &me))
    return 1;
  return hp_staged(ctx, in, counts[me], out, hp_sum(counts, n),
                   [&](T *hi, T *ho) {
                     return hp_all_gather_host(ctx, devices, n, hi, ho, counts);
                   });
}
template <typename T>
static int hp_reduce_scatter(hp_ctx *ctx, const int64_t *devices, int n,
                             const T *in, T *out, const int64_t *counts,
                             int op) {
  if (hp_use_nccl)
    return hp_nccl_reduce_scatter(ctx, devices, n, in, out, counts, op);
  int me = 0;
  if (hp_group_position(ctx, devices, n, &me))
    return 1;
  return hp_staged(
      ctx, in, hp_sum(counts, n), out, counts[me], [&](T *hi, T *ho) {
        return hp_reduce_scatter_host(ctx, devices, n, hi, ho, counts, op);
      });
}
template <typename T>
static int hp_all_to_all(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, const int64_t *sendCounts, T *out,
                         const int64_t *recvCounts) {
  if (hp_use_nccl)
    return hp_nccl_all_to_all(ctx, devices, n, in, sendCounts, out, recvCounts);
  return hp_staged(ctx, in, hp_sum(sendCounts, n), out, hp_sum(recvCounts, n),
                   [&](T *hi, T *ho) {
                     return hp_all_to_all_host(ctx, devices, n, hi, sendCounts,
                                               ho, recvCounts);
                   });
}
template <typename T>
static int hp_broadcast(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                        int64_t count, int64_t root) {
  if (hp_use_nccl)
    return hp_nccl_broadcast(ctx, devices, n, buf, count, root);
  return hp_staged(ctx, buf, count, buf, count, [&](T *hi, T *ho) {
    memcpy(ho, hi, sizeof(T) * (size_t)count);
    return hp_broadcast_host(ctx, devices, n, ho, count, root);
  });
}
#else
template <typename T>
static int hp_all_reduce(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, int64_t count, int op) {
  return hp_all_reduce_host(ctx, devices, n, in, out, count, op);
}
template <typename T>
static int hp_all_gather(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, T *out, const int64_t *counts) {
  return hp_all_gather_host(ctx, devices, n, in, out, counts);
}
template <typename T>
static int hp_reduce_scatter(hp_ctx *ctx, const int64_t *devices, int n,
                             const T *in, T *out, const int64_t *counts,
                             int op) {
  return hp_reduce_scatter_host(ctx, devices, n, in, out, counts, op);
}
template <typename T>
static int hp_all_to_all(hp_ctx *ctx, const int64_t *devices, int n,
                         const T *in, const int64_t *sendCounts, T *out,
                         const int64_t *recvCounts) {
  return hp_all_to_all_host(ctx, devices, n, in, sendCounts, out, recvCounts);
}
template <typename T>
static int hp_broadcast(hp_ctx *ctx, const int64_t *devices, int n, T *buf,
                        int64_t count, int64_t root) {
  return hp_broadcast_host(ctx, devices, n, buf, count, root);
}
#endif

/// dist.all_to_all on a tensor viewed as [outer, extent, inner] around each
/// of its two dimensions: the operand is cut along its split dimension
/// (inOuter x inExtent x inInner elements; device j's piece has
/// splitSizes[j] of the inExtent indices) and the pieces received are
/// concatenated along the result's concat dimension (outOuter x outExtent x
/// outInner; device j's piece has concatSizes[j] indices). A piece that is
/// not contiguous (an outer extent above 1) is packed into `sendBuf`
/// (inOuter x inExtent x inInner elements) or received into `recvBuf`
/// (outOuter x outExtent x outInner) and unpacked: the buffers are unused
/// (and may be null) otherwise. Groups hold at most 64 devices
/// (hp_group_comm's limit).
template <typename T>
static int hp_all_to_all_along(hp_ctx *ctx, const int64_t *devices, int n,
                               const T *in, int64_t inOuter, int64_t inExtent,
                               int64_t inInner, const int64_t *splitSizes,
                               T *out, int64_t outOuter, int64_t outExtent,
                               int64_t outInner, const int64_t *concatSizes,
                               T *sendBuf, T *recvBuf) {
  if (n < 1 || n > 64) {
    snprintf(ctx->error, sizeof ctx->error,
             "all_to_all over %d devices (1 to 64)", n);
    return 1;
  }
  int64_t sendCounts[64], recvCounts[64], sendAt = 0, recvAt = 0;
  const bool pack = inOuter > 1, unpack = outOuter > 1;
  for (int j = 0; j < n; ++j) {
    sendCounts[j] = inOuter * splitSizes[j] * inInner;
    recvCounts[j] = outOuter * concatSizes[j] * outInner;
    // Piece j: [inOuter, splitSizes[j], inInner] out of the operand.
    hp_dims dims = {{inOuter, splitSizes[j], inInner}};
    hp_dims from = {{inExtent * inInner, inInner, 1}};
    hp_dims to = {{splitSizes[j] * inInner, inInner, 1}};
    hp_dims mods = {{inOuter, splitSizes[j], inInner}};
    if (pack)
      hp_copy_launch(ctx, sendCounts[j], 3, dims, from, mods, sendAt * inInner,
                     in, to, inOuter * sendAt * inInner, sendBuf);
    sendAt += splitSizes[j];
  }
  if (hp_all_to_all(ctx, devices, n, pack ? sendBuf : in, sendCounts,
                    unpack ? recvBuf : out, recvCounts))
    return 1;
  for (int j = 0; j < n && unpack; ++j) {
    // Piece j lands at [:, recvAt : recvAt + concatSizes[j], :].
    hp_dims dims = {{outOuter, concatSizes[j], outInner}};
    hp_dims from = {{concatSizes[j] * outInner, outInner, 1}};
    hp_dims to = {{outExtent * outInner, outInner, 1}};
    hp_copy_launch(ctx, recvCounts[j], 3, dims, from, dims,
                   outOuter * recvAt * outInner, (const T *)recvBuf, to,
                   recvAt * outInner, out);
    recvAt += concatSizes[j];
  }
  return 0;
}

/// Point-to-point exchanges of one step, posted together and completed by
/// hp_exchange_end (the MPI counterpart of ncclGroupStart/End: no ordering
/// between the two sides can deadlock).
/// A step holds any number of messages (the output device of a 64-way
/// data-parallel plan receives one per replica and output).
struct hp_exchange {
  std::vector<MPI_Request> requests;
  int n = 0; // messages posted
#if HP_CUDA
  // Host copies of each message; a receive's device buffer and size; with
  // NCCL the messages themselves (device buffer, bytes, peer, direction).
  std::vector<void *> host;
  std::vector<void *> device;
  std::vector<size_t> bytes;
  std::vector<int64_t> peer;
  std::vector<char> isSend;
#endif
};
/// Room for the step's next message.
static void hp_exchange_grow(hp_exchange *x) {
  size_t m = (size_t)x->n + 1;
  x->requests.resize(m, MPI_REQUEST_NULL);
#if HP_CUDA
  x->host.resize(m, nullptr);
  x->device.resize(m, nullptr);
  x->bytes.resize(m, 0);
  x->peer.resize(m, 0);
  x->isSend.resize(m, 0);
#endif
}
/// The host side of a message: on the GPU a host copy (a send's filled now).
static void *hp_exchange_buffer(hp_ctx *ctx, hp_exchange *x, const void *buf,
                                size_t bytes, bool send) {
#if HP_CUDA
  void *h = malloc(bytes + 1);
  x->host[x->n] = h;
  x->device[x->n] = send ? NULL : (void *)buf;
  x->bytes[x->n] = bytes;
  if (!h) {
    snprintf(ctx->error, sizeof ctx->error,
             "out of host memory staging a "
             "transfer");
    return NULL;
  }
  if (send && hp_copy(ctx, h, buf, bytes, cudaMemcpyDeviceToHost))
    return NULL;
  return h;
#else
  (void)ctx;
  (void)x;
  (void)bytes;
  (void)send;
  return (void *)buf;
#endif
}
#if HP_CUDA
/// With NCCL a message is only recorded; hp_exchange_end posts the step.
static int hp_exchange_nccl_add(hp_exchange *x, const void *buf, size_t bytes,
                                int64_t peer, bool send) {
  x->device[x->n] = (void *)buf;
  x->host[x->n] = nullptr;
  x->bytes[x->n] = bytes;
  x->peer[x->n] = peer;
  x->isSend[x->n] = send;
  x->requests[x->n++] = MPI_REQUEST_NULL;
  return 0;
}
#endif
template <typename T>
static int hp_exchange_send(hp_ctx *ctx, hp_exchange *x, const T *buf,
                            int64_t count, int64_t peer, int64_t tag) {
  hp_exchange_grow(x);
#if HP_CUDA
  if (hp_use_nccl)
    return hp_exchange_nccl_add(x, buf, sizeof(T) * (size_t)count, peer, true);
#endif
  if (hp_mpi_start(ctx))
    return 1;
  void *h = hp_exchange_buffer(ctx, x, buf, sizeof(T) * (size_t)count, true);
  if (!h)
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Isend(h, (int)count, hp_mpi_type<T>(),
                                 hp_rank_of(peer), (int)tag, MPI_COMM_WORLD,
                                 &x->requests[x->n++]),
                       "MPI_Isend");
}
template <typename T>
static int hp_exchange_recv(hp_ctx *ctx, hp_exchange *x, T *buf, int64_t count,
                            int64_t peer, int64_t tag) {
  hp_exchange_grow(x);
#if HP_CUDA
  if (hp_use_nccl)
    return hp_exchange_nccl_add(x, buf, sizeof(T) * (size_t)count, peer, false);
#endif
  if (hp_mpi_start(ctx))
    return 1;
  void *h = hp_exchange_buffer(ctx, x, buf, sizeof(T) * (size_t)count, false);
  if (!h)
    return 1;
  return hp_mpi_status(ctx,
                       MPI_Irecv(h, (int)count, hp_mpi_type<T>(),
                                 hp_rank_of(peer), (int)tag, MPI_COMM_WORLD,
                                 &x->requests[x->n++]),
                       "MPI_Irecv");
}
#if HP_CUDA
/// The NCCL step: a communicator per pair of devices (made in the order of
/// the pairs, so that no two devices wait on each other's first pair), then
/// every send and receive of the step between ncclGroupStart and
/// ncclGroupEnd (matched per pair in program order, as
/// hetpar-dist-verify-exchanges checks).
static int hp_exchange_end_nccl(hp_ctx *ctx, hp_exchange *x) {
  int myRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
  int64_t self = hp_device_of(myRank);
  std::vector<int64_t> peers;
  for (int i = 0; i < x->n; ++i)
    if (std::find(peers.begin(), peers.end(), x->peer[i]) == peers.end())
      peers.push_back(x->peer[i]);
  std::sort(peers.begin(), peers.end(), [&](int64_t a, int64_t b) {
    int64_t la = std::min(a, self), lb = std::min(b, self);
    return la != lb ? la < lb : std::max(a, self) < std::max(b, self);
  });
  int np = (int)peers.size();
  std::vector<void *> comms((size_t)np, nullptr);
  for (int j = 0; j < np; ++j) {
    int64_t pair[2] = {std::min(peers[j], self), std::max(peers[j], self)};
    int me;
    if (hp_group_nccl(ctx, pair, 2, &comms[j], &me))
      return 1;
  }
  int rc = hp_nccl.groupStart();
  for (int i = 0; i < x->n && rc == 0; ++i) {
    int j = 0;
    while (peers[j] != x->peer[i])
      ++j;
    int rank = x->peer[i] < self ? 0 : 1;
    rc = x->isSend[i] ? hp_nccl.send(x->device[i], x->bytes[i], 1, rank,
                                     comms[j], ctx->stream)
                      : hp_nccl.recv(x->device[i], x->bytes[i], 1, rank,
                                     comms[j], ctx->stream);
  }
  int end = hp_nccl.groupEnd();
  x->n = 0;
  return hp_nccl_finish(ctx, rc ? rc : end, "exchange (ncclSend/ncclRecv)");
}
#endif
static int hp_exchange_end(hp_ctx *ctx, hp_exchange *x) {
#if HP_CUDA
  if (hp_use_nccl)
    return hp_exchange_end_nccl(ctx, x);
#endif
  hp_watch(ctx, "MPI_Isend/MPI_Irecv");
  int failed = hp_wait(ctx, x->requests.data(), x->n, "MPI_Isend/MPI_Irecv");
  hp_unwatch();
#if HP_CUDA
  for (int i = 0; i < x->n; ++i) {
    if (!failed && x->device[i])
      failed = hp_copy(ctx, x->device[i], x->host[i], x->bytes[i],
                       cudaMemcpyHostToDevice);
    free(x->host[i]);
  }
#endif
  x->n = 0;
  return failed;
}

/// hetpar_agree (ProgramABI.h): at the end of a training step or an
/// inference request, every device of a multi-device program learns, with
/// one MPI_Iallreduce of an int over every process, whether any of them
/// finished a run of it with an index out of range (`failed`: this one did;
/// hetpar_run returned 3). If one did, every device fails the step or
/// request together: that one with its own error, the reporting device
/// naming it. So no device reports the loss, writes a checkpoint or writes
/// the outputs of a step or request that another device refused (a label out
/// of range on one data-parallel replica still joins the loss's all-reduce
/// with a clamped index; a bad index in stage 0 still sends its activations
/// on), and no device waits for a peer that has stopped. Once per step or
/// request, not per run: an inference pipeline runs every microbatch as a
/// run, and agreeing after each would make it wait for every stage. Returns
/// 0 when no device failed or this one is the first that did (the lowest
/// rank: it reports its own error, once, where every device of a
/// tensor-parallel group finds the same index), 2 when another did (its
/// message names that one), 1 on an MPI error. Under the watchdog for twice the
/// timeout: a device may wait here while its peers finish their step, and a
/// peer stuck in one of the step's collectives reports that collective first.
static int hp_agree(hp_ctx *ctx, int failed) {
  if (hp_mpi_start(ctx))
    return 1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int mine = failed ? rank : INT_MAX, first = INT_MAX;
  ctx->what = "all_reduce on every device (the end of the step: whether any "
              "device found an index out of range)";
  MPI_Request req;
  hp_watch(ctx, "MPI_Iallreduce", 2);
  int rc = hp_mpi_status(ctx,
                         MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN,
                                        MPI_COMM_WORLD, &req),
                         "MPI_Iallreduce") ||
           hp_wait(ctx, &req, 1, "MPI_Iallreduce");
  hp_unwatch();
  if (rc || first == INT_MAX || first == rank)
    return rc;
  snprintf(ctx->error, sizeof ctx->error,
           "device %lld (rank %d) found an index out of range (its error "
           "names the node and the value); every device discards the step",
           (long long)hp_device_of(first), first);
  return 2;
}
#endif // HETPAR_MULTI_DEVICE

#endif // HETPAR_DEVICE_COLLECTIVES_H
