//===- MemoryPlan.cpp - liveness-based arena layout -----------------------===//

#include "hetpar/Codegen/MemoryPlan.h"

#include <algorithm>
#include <numeric>

using namespace hetpar::codegen;

static int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Places `buffers` in `order`, each at the lowest aligned offset where it
/// overlaps no already-placed buffer whose lifetime intersects its own.
static ArenaLayout placeInOrder(llvm::ArrayRef<BufferLifetime> buffers,
                                llvm::ArrayRef<size_t> order,
                                int64_t alignment) {
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const BufferLifetime &b = buffers[i];
    int64_t size = alignUp(b.bytes, alignment);
    layout.totalBytes += size;
    if (size == 0)
      continue;
    // Intervals [offset, offset + size) of placed buffers alive at the same
    // time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const BufferLifetime &o = buffers[j];
      if (o.last < b.first || b.last < o.first)
        continue;
      busy.push_back(
          {layout.offsets[j], layout.offsets[j] + alignUp(o.bytes, alignment)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [lo, hi] : busy) {
      if (lo - offset >= size)
        break;
      offset = std::max(offset, hi);
    }
    layout.offsets[i] = offset;
    layout.arenaBytes = std::max(layout.arenaBytes, offset + size);
    placed.push_back(i);
  }
  return layout;
}

/// The buffer indices sorted by `before`, a strict weak order.
template <typename Less>
static std::vector<size_t> sortedIndices(size_t n, Less before) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), before);
  return order;
}

ArenaLayout hetpar::codegen::planArena(llvm::ArrayRef<BufferLifetime> buffers,
                                       int64_t alignment) {
  auto length = [&](size_t i) { return buffers[i].last - buffers[i].first; };
  ArenaLayout bySize =
      placeInOrder(buffers,
                   sortedIndices(buffers.size(),
                                 [&](size_t a, size_t b) {
                                   if (buffers[a].bytes != buffers[b].bytes)
                                     return buffers[a].bytes > buffers[b].bytes;
                                   return buffers[a].first < buffers[b].first;
                                 }),
                   alignment);
  ArenaLayout byLifetime =
      placeInOrder(buffers,
                   sortedIndices(buffers.size(),
                                 [&](size_t a, size_t b) {
                                   if (length(a) != length(b))
                                     return length(a) > length(b);
                                   return buffers[a].bytes > buffers[b].bytes;
                                 }),
                   alignment);
  return byLifetime.arenaBytes < bySize.arenaBytes ? byLifetime : bySize;
}
