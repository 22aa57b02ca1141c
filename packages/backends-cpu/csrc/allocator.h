// allocator.h: the caching, 64-byte aligned host allocator behind Array.
// Blocks of 2 MiB and more are 2 MiB aligned and advised MADV_HUGEPAGE, so
// a fresh large output costs a few hundred page faults instead of thousands.
// Freed blocks go back to a cache bucketed by rounded size (capped, 1 GiB by
// default, LAMINA_CACHE_BYTES overrides; 0 disables caching, e.g. under ASan).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace lamina_cpu {

void* cached_alloc(std::size_t bytes);
void cached_free(void* ptr, std::size_t bytes);

// Counters exposed to Python as memory_stats().
std::map<std::string, int64_t> allocator_stats();
// Returns every cached block to the OS.
void allocator_empty_cache();

}  // namespace lamina_cpu
