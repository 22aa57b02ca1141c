// allocator.cc: the caching device allocator, the Array buffer and Scratch.
//
// cudaMalloc synchronises the device and costs tens of microseconds, so a
// freed block goes to a per-device free list instead of back to the driver and
// the next request of a similar size reuses it: in steady-state training every
// step asks for the sizes of the step before and cudaMalloc is not called.
// Sizes are rounded up (512 B granules below 1 MiB, 2 MiB granules above) and
// kept in a size-ordered multimap; a request takes the smallest cached block
// that fits and is at most twice its size. Reuse without synchronisation is
// safe because all work of a device runs on its one stream, in order: a block
// freed by the host is only overwritten by work queued after the work that
// last used it. empty_cache() returns every cached block to the driver; a
// failed cudaMalloc empties the cache and tries once more before raising.
//
// LAMINA_CUDA_EXACT_ALLOC=1 (read once) turns the cache off: every buffer is
// its own cudaMalloc of exactly the bytes asked for, freed at once. Under the
// CPU emulation built with AddressSanitizer, a kernel that reads or writes one
// element past its buffer is then reported instead of landing in the slack of
// a rounded block, and a use after free is not hidden by reuse.
#include <cstdlib>
#include <map>
#include <mutex>

#include "common.cuh"

namespace lamina_cuda {

namespace {

constexpr std::size_t kSmall = 1 << 20;
constexpr std::size_t kSmallGranule = 512;
constexpr std::size_t kLargeGranule = 2 << 20;

struct Pool {
  std::multimap<std::size_t, void*> free_blocks;  // size -> block
  std::size_t allocated = 0;                      // bytes in live blocks
  std::size_t reserved = 0;                       // bytes held from cudaMalloc
  std::size_t peak = 0;
  std::size_t cuda_malloc_calls = 0;
  std::size_t cuda_free_calls = 0;
  std::size_t cache_hits = 0;
};

struct Allocator {
  std::mutex mutex;
  std::map<int, Pool> pools;
};

Allocator& allocator() {
  // Leaked on purpose: Arrays may be freed after static destructors have run.
  static Allocator* a = new Allocator();
  return *a;
}

bool exact_alloc() {
  static const bool exact = [] {
    const char* v = std::getenv("LAMINA_CUDA_EXACT_ALLOC");
    return v != nullptr && v[0] == '1';
  }();
  return exact;
}

std::size_t round_size(std::size_t bytes) {
  if (exact_alloc()) return bytes;
  const std::size_t g = bytes < kSmall ? kSmallGranule : kLargeGranule;
  return (bytes + g - 1) / g * g;
}

// Returns every cached block of pool to the driver (caller holds the lock).
void release_cached(int device, Pool& pool) {
  if (pool.free_blocks.empty()) return;
  set_device(device, "empty_cache");
  LAMINA_CUDA_CHECK(cudaStreamSynchronize(device_stream(device)), "empty_cache");
  for (auto& [size, ptr] : pool.free_blocks) {
    LAMINA_CUDA_CHECK(cudaFree(ptr), "empty_cache");
    pool.reserved -= size;
    ++pool.cuda_free_calls;
  }
  pool.free_blocks.clear();
}

}  // namespace

void* cached_alloc(int device, std::size_t bytes, std::size_t* granted) {
  *granted = 0;
  if (bytes == 0) return nullptr;
  const std::size_t size = round_size(bytes);
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  Pool& pool = a.pools[device];
  auto it = pool.free_blocks.lower_bound(size);
  void* ptr = nullptr;
  if (!exact_alloc() && it != pool.free_blocks.end() && it->first <= 2 * size) {
    ptr = it->second;
    *granted = it->first;
    pool.free_blocks.erase(it);
    ++pool.cache_hits;
  } else {
    set_device(device, "Array");
    cudaError_t err = cudaMalloc(&ptr, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached(device, pool);
      err = cudaMalloc(&ptr, size);
    }
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw std::runtime_error(cat("Array: out of memory on cuda:", device, " allocating ",
                                   bytes, " bytes (", pool.allocated,
                                   " bytes in use); free arrays or use a smaller batch"));
    }
    LAMINA_CUDA_CHECK(err, "Array");
    *granted = size;
    pool.reserved += size;
    ++pool.cuda_malloc_calls;
  }
  pool.allocated += *granted;
  if (pool.allocated > pool.peak) pool.peak = pool.allocated;
  return ptr;
}

void cached_free(int device, void* ptr, std::size_t granted) noexcept {
  if (ptr == nullptr) return;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  Pool& pool = a.pools[device];
  pool.allocated -= granted;
  if (!exact_alloc()) {
    pool.free_blocks.emplace(granted, ptr);
    return;
  }
  // cudaFree waits for the device, so work queued on the buffer is done.
  if (cudaFree(ptr) == cudaSuccess) {
    pool.reserved -= granted;
    ++pool.cuda_free_calls;
  } else {
    cudaGetLastError();  // noexcept: a failed free leaks the block rather than throw
  }
}

void empty_cache() {
  require_available("empty_cache");
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  for (auto& [device, pool] : a.pools) release_cached(device, pool);
}

std::map<std::string, std::size_t> memory_stats(int device) {
  require_available("memory_stats");
  if (device < 0 || device >= device_count())
    value_error("memory_stats: device cuda:", device, " does not exist; this machine has ",
                device_count(), " CUDA device(s)");
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  const Pool& p = a.pools[device];
  return {{"allocated", p.allocated},         {"reserved", p.reserved},
          {"peak", p.peak},                   {"cached", p.reserved - p.allocated},
          {"cuda_malloc_calls", p.cuda_malloc_calls},
          {"cuda_free_calls", p.cuda_free_calls}, {"cache_hits", p.cache_hits}};
}

// ---------------------------------------------------------------- Array, Scratch
Array::Array(int64_t size, const std::string& dtype, int device)
    : size_(size), dtype_(parse_dtype(dtype, "Array")), device_(device) {
  require_available("Array");
  if (size < 0) value_error("Array: size must be >= 0, got ", size);
  set_device(device, "Array");
  const std::size_t bytes = static_cast<std::size_t>(checked_mul(
      size, static_cast<int64_t>(dtype_itemsize(dtype_)), "Array"));
  ptr_ = cached_alloc(device, bytes, &granted_);
}

Array::~Array() { cached_free(device_, ptr_, granted_); }

Scratch::Scratch(int device, std::size_t bytes) : device_(device) {
  ptr_ = cached_alloc(device, bytes, &granted_);
}

Scratch::~Scratch() { cached_free(device_, ptr_, granted_); }

}  // namespace lamina_cuda
