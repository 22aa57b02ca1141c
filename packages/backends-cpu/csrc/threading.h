// threading.h: the thread count (LAMINA_NUM_THREADS, set_num_threads),
// run_threads, which runs the parts of a kernel on the calling thread and the
// backend's own workers (threading.cc), and parallel_for, which splits [0, n)
// into contiguous chunks, one per part, when the work is large enough to pay
// for waking a worker.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#if defined(LAMINA_HAVE_OPENMP)
#include <omp.h>
#endif

namespace lamina_cpu {

// 1 in a process forked from the one that loaded the module (see threading.cc).
int num_threads();
bool in_forked_child();
// Raises ValueError unless 1 <= n <= max_threads().
void set_num_threads(int64_t n);
// nt, less the cores other processes keep busy (the load sample of threading.cc, taken
// again when due): the threads to plan for in a kernel whose result does not depend on
// its thread count (the GEMMs). Split for more, its parts would all run on the caller
// beside a busy core, each packing its own operands. 1 inside a part.
int free_threads(int nt);
// The most threads a kernel may use: 4 per logical CPU (more only thrash).
int max_threads();
bool have_openmp();
// How long an idle worker spins before it sleeps: LAMINA_SPIN_US, default 50.
int spin_microseconds();
// How long it then polls between yields of its core: LAMINA_YIELD_US, default 1000.
int yield_microseconds();
// The file of the OpenMP runtime the kernels run on ("" without OpenMP). A
// process that loaded PyTorch first runs Lamina on PyTorch's bundled libgomp
// (same soname), whose wait policy was fixed when PyTorch loaded it.
std::string openmp_library();

// Work per thread (in elements) below which a kernel stays serial: waking a
// sleeping worker costs 5-50 us, much more when the other core is busy.
// kParallelGrain is for kernels doing real work per element (reductions,
// transcendentals); kCopyGrain for memory-bound ones (copies, add, fill).
constexpr int64_t kParallelGrain = 32768;
constexpr int64_t kCopyGrain = 131072;

// Threads to use for `work` units when each thread should get >= grain units.
inline int threads_for(int64_t work, int64_t grain) {
  int nt = num_threads();
  if (nt <= 1 || work < 2 * grain) return 1;
  int64_t by_work = work / grain;
  return static_cast<int>(std::min<int64_t>(nt, by_work));
}

namespace detail {
using PartFn = void (*)(void* ctx, int part, int parts);
// Runs fn(ctx, t, parts) once for each t in [0, parts) on the calling thread and
// the backend's workers (threading.cc).
void run_parts(int parts, PartFn fn, void* ctx);
}  // namespace detail

// Runs body(t, tn) once for each part t in [0, tn), tn = nt (inline when nt <= 1),
// on the calling thread and up to nt - 1 workers. Parts are claimed, not assigned:
// the caller starts on them at once and takes any part no worker has claimed yet,
// so a worker that is slow to wake (after idle, or beside a busy core) costs at most
// the parts it did claim, never a wait for it to show up. Each part runs on one
// thread, so results do not depend on which. A call made inside a part (nested)
// runs body(0, 1). The first exception of any part is rethrown here after the rest.
template <class F>
void run_threads(int nt, F&& body) {
  if (nt <= 1) {
    body(0, 1);
    return;
  }
  struct Ctx {
    F* body;
    std::exception_ptr error;
    std::mutex mu;
  } ctx{&body, nullptr, {}};
  detail::run_parts(nt, [](void* c, int t, int tn) {
    Ctx& x = *static_cast<Ctx*>(c);
    try {
      (*x.body)(t, tn);
    } catch (...) {
      std::lock_guard<std::mutex> lock(x.mu);
      if (!x.error) x.error = std::current_exception();
    }
  }, &ctx);
  if (ctx.error) std::rethrow_exception(ctx.error);
}

namespace detail {
// f(begin, end) over nt contiguous chunks of [0, n), boundaries multiples of align.
template <class F>
void split_for(int nt, int64_t n, F&& f, int64_t align) {
  run_threads(nt, [&](int t, int tn) {
    int64_t chunk = (n + tn - 1) / tn;
    chunk = (chunk + align - 1) / align * align;
    const int64_t b = std::min<int64_t>(n, t * chunk);
    const int64_t e = std::min<int64_t>(n, b + chunk);
    if (b < e) f(b, e);
  });
}
}  // namespace detail

// Calls f(begin, end) over contiguous chunks of [0, n); chunk boundaries are
// multiples of `align` so SIMD loops see aligned-length pieces.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f, int64_t align = 16) {
  if (n > 0) detail::split_for(threads_for(n, grain), n, f, align);
}

// parallel_for split only for the cores left free (free_threads), for a kernel whose
// parts each redo work shared by the whole range (pack the same operand): beside a
// busy core its parts would run one after another on the caller, each paying for
// that work again. Its result must not depend on the split.
template <class F>
void parallel_for_free(int64_t n, int64_t grain, F&& f, int64_t align = 16) {
  if (n > 0) detail::split_for(free_threads(threads_for(n, grain)), n, f, align);
}

}  // namespace lamina_cpu
