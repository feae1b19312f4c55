//===- MemoryPlanTest.cpp - the liveness-based arena planner
//---------------===//

#include "hetpar/Codegen/MemoryPlan.h"

#include <gtest/gtest.h>

#include <random>

using namespace hetpar::codegen;

// A chain a -> b -> c where each value dies after its user: a and c never
// live at the same time and share bytes; b overlaps both. Peak by hand:
// 2 x 256 (alignment 256), against 3 x 256 without reuse.
TEST(MemoryPlan, ChainReusesDeadBuffers) {
  ArenaLayout l = planArena({{100, 0, 1}, {100, 1, 2}, {100, 2, 3}});
  EXPECT_EQ(l.arenaBytes, 512);
  EXPECT_EQ(l.totalBytes, 768);
  EXPECT_EQ(l.offsets[0], l.offsets[2]);
  EXPECT_NE(l.offsets[0], l.offsets[1]);
}

// The largest buffer goes first at offset 0; a small one that lives beside
// it goes above it; a later one reuses the space of the dead large buffer.
TEST(MemoryPlan, LargestFirst) {
  ArenaLayout l = planArena({{1000, 0, 2}, {10, 1, 3}, {900, 3, 4}}, 1);
  EXPECT_EQ(l.offsets[0], 0);
  EXPECT_EQ(l.offsets[1], 1000);
  EXPECT_EQ(l.offsets[2], 0);
  EXPECT_EQ(l.arenaBytes, 1010);
}

// Where largest-first fragments: C (50, steps 4-6) and A (40, 1-2) go to
// offset 0, B (30, 2-6) above both at 50, and D (20, 1-2) fits neither the
// 10 bytes between A and B nor below: 80, a peak of 100. Longest-lived first
// puts B (5 steps) at 0, C at 30, A at 30, D at 70: a peak of 90, the
// largest live set (A + B + D at step 2), which planArena keeps.
TEST(MemoryPlan, LongestLivedFirstWhereSmaller) {
  ArenaLayout l =
      planArena({{40, 1, 2}, {30, 2, 6}, {50, 4, 6}, {20, 1, 2}}, 1);
  EXPECT_EQ(l.arenaBytes, 90);
  EXPECT_EQ(l.offsets[1], 0);
  EXPECT_EQ(l.offsets[3], 70);
}

TEST(MemoryPlan, ZeroBytesNeedNoSpace) {
  ArenaLayout l = planArena({{0, 0, 5}, {64, 0, 5}}, 64);
  EXPECT_EQ(l.arenaBytes, 64);
}

// Property: on random lifetimes no two simultaneously live buffers overlap,
// offsets are aligned, and the peak is at least the largest live set.
TEST(MemoryPlan, RandomLayoutsAreValid) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferLifetime> bufs;
    int n = 1 + rng() % 30;
    for (int i = 0; i < n; ++i) {
      int64_t first = rng() % 40;
      bufs.push_back({static_cast<int64_t>(rng() % 5000), first,
                      first + static_cast<int64_t>(rng() % 10)});
    }
    ArenaLayout l = planArena(bufs, 256);
    int64_t maxLive = 0;
    for (int64_t s = 0; s < 50; ++s) {
      int64_t live = 0;
      for (const BufferLifetime &b : bufs)
        if (b.first <= s && s <= b.last)
          live += (b.bytes + 255) / 256 * 256;
      maxLive = std::max(maxLive, live);
    }
    EXPECT_GE(l.arenaBytes, maxLive);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(l.offsets[i] % 256, 0);
      EXPECT_LE(l.offsets[i] + bufs[i].bytes, l.arenaBytes);
      for (int j = i + 1; j < n; ++j) {
        const BufferLifetime &a = bufs[i], &b = bufs[j];
        if (a.bytes == 0 || b.bytes == 0 || a.last < b.first ||
            b.last < a.first)
          continue;
        bool apart = l.offsets[i] + a.bytes <= l.offsets[j] ||
                     l.offsets[j] + b.bytes <= l.offsets[i];
        EXPECT_TRUE(apart) << "trial " << trial << " buffers " << i << ", "
                           << j;
      }
    }
  }
}
