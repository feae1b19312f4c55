//===- CollectivesTest.cpp - the MPI collectives of hetpar_device.h -------===//
//
// Run under mpirun with 4 processes (test/Unit/collectives.test). Every
// expected value is computed by hand from what each rank contributes; each
// rank prints "rank R: ok" or the first mismatch.
//
//===----------------------------------------------------------------------===//

#define HETPAR_MULTI_DEVICE
#include "hetpar/device/hetpar_device.h"

#include <cstdio>
#include <string>
#include <vector>

static int rank_ = 0;
static bool failed_ = false;

template <typename T>
static void expect(const char *what, const std::vector<T> &got,
                   const std::vector<T> &want) {
  if (got == want)
    return;
  std::string g, w;
  for (T v : got)
    g += std::to_string(v) + " ";
  for (T v : want)
    w += std::to_string(v) + " ";
  std::printf("rank %d: %s: got [ %s] expected [ %s]\n", rank_, what, g.c_str(),
              w.c_str());
  failed_ = true;
}

static void check(hp_ctx *ctx, int rc) {
  if (rc) {
    std::printf("rank %d: error: %s\n", rank_, ctx->error);
    failed_ = true;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) {
    std::printf("run with 4 processes, not %d\n", size);
    MPI_Finalize();
    return 2;
  }
  hp_ctx ctx{};
  const int64_t all[] = {0, 1, 2, 3};
  float r = float(rank_);

  // all_reduce over everyone: 1 + 2 + 3 + 4 = 10; in place as well.
  std::vector<float> in(3, r + 1), out(3);
  check(&ctx, hp_all_reduce(&ctx, all, 4, in.data(), out.data(), 3, HP_SUM));
  expect("all_reduce sum", out, std::vector<float>(3, 10.0f));
  check(&ctx, hp_all_reduce(&ctx, all, 4, in.data(), in.data(), 3, HP_MAX));
  expect("all_reduce max in place", in, std::vector<float>(3, 4.0f));

  // A sub-group [3, 1] (order as given): only ranks 1 and 3 take part.
  if (rank_ == 1 || rank_ == 3) {
    const int64_t pair[] = {3, 1};
    std::vector<int64_t> v(2, rank_), o(2);
    check(&ctx, hp_all_reduce(&ctx, pair, 2, v.data(), o.data(), 2, HP_SUM));
    expect("sub-group all_reduce", o, std::vector<int64_t>(2, 4));
  }

  // Uneven all_gather: rank r contributes counts[r] copies of r.
  const int64_t counts[] = {3, 2, 1, 2};
  std::vector<float> mine(counts[rank_], r), gathered(8);
  check(&ctx,
        hp_all_gather(&ctx, all, 4, mine.data(), gathered.data(), counts));
  expect("all_gather", gathered, std::vector<float>{0, 0, 0, 1, 1, 2, 3, 3});

  // reduce_scatter of x_r[i] = 10 r + i over 4 elements: the sums are
  // 60 + 4 i = 60, 64, 68, 72, split 2 / 1 / 1 / 0.
  const int64_t split[] = {2, 1, 1, 0};
  std::vector<double> x(4);
  for (int i = 0; i < 4; ++i)
    x[i] = 10.0 * rank_ + i;
  std::vector<double> part(std::max<int64_t>(split[rank_], 1));
  check(&ctx,
        hp_reduce_scatter(&ctx, all, 4, x.data(), part.data(), split, HP_SUM));
  part.resize(split[rank_]);
  const std::vector<std::vector<double>> wantParts = {{60, 64}, {68}, {72}, {}};
  expect("reduce_scatter", part, wantParts[rank_]);

  // all_to_all: rank r sends j + 1 copies of 100 r + j to rank j, so it
  // receives r + 1 copies of 100 j + r from every j.
  std::vector<int64_t> send, recvCounts(4), sendCounts(4);
  for (int j = 0; j < 4; ++j) {
    sendCounts[j] = j + 1;
    recvCounts[j] = rank_ + 1;
    for (int k = 0; k <= j; ++k)
      send.push_back(100 * rank_ + j);
  }
  std::vector<int64_t> recv(4 * (rank_ + 1)), wantRecv;
  for (int j = 0; j < 4; ++j)
    for (int k = 0; k <= rank_; ++k)
      wantRecv.push_back(100 * j + rank_);
  check(&ctx, hp_all_to_all(&ctx, all, 4, send.data(), sendCounts.data(),
                            recv.data(), recvCounts.data()));
  expect("all_to_all", recv, wantRecv);

  // all_to_all_along: a 4 x 6 tensor G[i][j] = 10 i + j split by columns
  // 3 / 1 / 2 / 0 becomes split by rows 2 / 1 / 1 / 0 (the rows' outer
  // extent of rank 0's result is 2: received pieces are unpacked), and back
  // (the operand's outer extent is 2 on rank 0: pieces are packed).
  const int64_t cols[] = {3, 1, 2, 0}, rows[] = {2, 1, 1, 0};
  int64_t c0 = 0, r0 = 0;
  for (int j = 0; j < rank_; ++j) {
    c0 += cols[j];
    r0 += rows[j];
  }
  std::vector<float> byCols, byRows;
  for (int i = 0; i < 4; ++i)
    for (int j = c0; j < c0 + cols[rank_]; ++j)
      byCols.push_back(10.0f * i + j);
  for (int i = r0; i < r0 + rows[rank_]; ++i)
    for (int j = 0; j < 6; ++j)
      byRows.push_back(10.0f * i + j);
  std::vector<float> gotRows(byRows.size() + 1), gotCols(byCols.size() + 1),
      sendBuf(24), recvBuf(24);
  // Operand [4, cols[r]]: split along dim 0 (outer 1), concat along dim 1
  // of the result [rows[r], 6] (outer rows[r]).
  check(&ctx,
        hp_all_to_all_along(&ctx, all, 4, byCols.data(), 1, 4, cols[rank_],
                            rows, gotRows.data(), rows[rank_], 6, 1, cols,
                            sendBuf.data(), recvBuf.data()));
  gotRows.resize(byRows.size());
  expect("all_to_all_along columns to rows", gotRows, byRows);
  check(&ctx, hp_all_to_all_along(&ctx, all, 4, byRows.data(), rows[rank_], 6,
                                  1, cols, gotCols.data(), 1, 4, cols[rank_],
                                  rows, sendBuf.data(), recvBuf.data()));
  gotCols.resize(byCols.size());
  expect("all_to_all_along rows to columns", gotCols, byCols);

  // broadcast from device 2.
  std::vector<int32_t> b(2, rank_ == 2 ? 42 : -1);
  check(&ctx, hp_broadcast(&ctx, all, 4, b.data(), 2, 2));
  expect("broadcast", b, std::vector<int32_t>(2, 42));

  // A ring exchange posted as one step: send to r + 1, receive from r - 1.
  hp_exchange step{};
  std::vector<float> token(1, r), got(1, -1);
  check(&ctx,
        hp_exchange_send(&ctx, &step, token.data(), 1, (rank_ + 1) % 4, 5));
  check(&ctx, hp_exchange_recv(&ctx, &step, got.data(), 1, (rank_ + 3) % 4, 5));
  check(&ctx, hp_exchange_end(&ctx, &step));
  expect("ring exchange", got, std::vector<float>(1, float((rank_ + 3) % 4)));

  // A step of 300 messages (a wide data-parallel plan's output device
  // receives one per replica and output; the runtime once stopped at 64):
  // 50 sends to and 50 receives from each other device, one element each,
  // tagged by their index.
  hp_exchange wide{};
  std::vector<float> wideOut(150), wideIn(150, -1), want(150);
  int k = 0;
  for (int peer = 0; peer < 4; ++peer) {
    if (peer == rank_)
      continue;
    for (int m = 0; m < 50; ++m, ++k) {
      wideOut[k] = 1000.0f * r + 10.0f * m + peer;
      want[k] = 1000.0f * peer + 10.0f * m + rank_;
      check(&ctx, hp_exchange_send(&ctx, &wide, &wideOut[k], 1, peer, m));
      check(&ctx, hp_exchange_recv(&ctx, &wide, &wideIn[k], 1, peer, m));
    }
  }
  check(&ctx, hp_exchange_end(&ctx, &wide));
  expect("exchange step of 300 messages", wideIn, want);

  if (!failed_)
    std::printf("rank %d: ok\n", rank_);
  std::fflush(stdout);
  MPI_Finalize();
  return failed_ ? 1 : 0;
}
