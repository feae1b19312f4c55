//===- MemoryPlan.cpp - liveness-based arena layout -----------------------===//

#include "hetpar/Codegen/MemoryPlan.h"

#include <algorithm>
#include <numeric>

using namespace hetpar::codegen;

static int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

ArenaLayout hetpar::codegen::planArena(llvm::ArrayRef<BufferLifetime> buffers,
                                       int64_t alignment) {
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
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
