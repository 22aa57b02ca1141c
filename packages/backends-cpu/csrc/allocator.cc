// allocator.cc: the caching allocator (see allocator.h). Sizes are rounded up
// to a size class (4 classes per power of two, at least 64 bytes), so a block
// freed by one op serves the next op of a similar size; the cache is a map
// from class to a stack of free blocks, guarded by a mutex.
#include "allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace lamina_cpu {
namespace {

constexpr std::size_t kAlign = 64;
constexpr std::size_t kHuge = std::size_t(2) << 20;

struct Cache {
  std::mutex mu;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;
  std::size_t cap = std::size_t(1) << 30;
  std::size_t cached = 0, in_use = 0, peak = 0;
  int64_t allocs = 0, hits = 0, os_allocs = 0;

  Cache() {
    if (const char* env = std::getenv("LAMINA_CACHE_BYTES")) cap = std::strtoull(env, nullptr, 10);
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: blocks may be freed at interpreter exit
  return *c;
}

std::size_t size_class(std::size_t bytes) {
  if (bytes <= kAlign) return kAlign;
  std::size_t top = std::size_t(1) << (63 - __builtin_clzll(bytes - 1));  // < bytes <= 2*top
  std::size_t step = top / 4 < kAlign ? kAlign : top / 4;
  std::size_t rounded = (bytes + step - 1) / step * step;
  if (rounded >= kHuge) rounded = (rounded + kHuge - 1) / kHuge * kHuge;
  return rounded;
}

void* os_alloc(std::size_t bytes) {
  std::size_t align = bytes >= kHuge ? kHuge : kAlign;
  void* p = nullptr;
  if (posix_memalign(&p, align, bytes) != 0) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHuge) madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace

void* cached_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  Cache& c = cache();
  std::size_t cls = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.allocs;
    auto it = c.free_blocks.find(cls);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.cached -= cls;
      c.in_use += cls;
      if (c.in_use > c.peak) c.peak = c.in_use;
      ++c.hits;
      return p;
    }
  }
  void* p = os_alloc(cls);
  if (p == nullptr) {
    allocator_empty_cache();
    p = os_alloc(cls);
    if (p == nullptr) throw std::bad_alloc();
  }
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.os_allocs;
  c.in_use += cls;
  if (c.in_use > c.peak) c.peak = c.in_use;
  return p;
}

void cached_free(void* ptr, std::size_t bytes) {
  if (ptr == nullptr) return;
  Cache& c = cache();
  std::size_t cls = size_class(bytes);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.in_use -= cls;
    if (c.cached + cls <= c.cap) {
      c.free_blocks[cls].push_back(ptr);
      c.cached += cls;
      return;
    }
  }
  std::free(ptr);
}

std::map<std::string, int64_t> allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return {{"in_use_bytes", int64_t(c.in_use)},   {"cached_bytes", int64_t(c.cached)},
          {"peak_bytes", int64_t(c.peak)},       {"cache_limit_bytes", int64_t(c.cap)},
          {"allocations", c.allocs},             {"cache_hits", c.hits},
          {"os_allocations", c.os_allocs}};
}

void allocator_empty_cache() {
  Cache& c = cache();
  std::unordered_map<std::size_t, std::vector<void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    blocks.swap(c.free_blocks);
    c.cached = 0;
  }
  for (auto& kv : blocks)
    for (void* p : kv.second) std::free(p);
}

}  // namespace lamina_cpu
