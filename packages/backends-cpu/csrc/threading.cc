// threading.cc: the process-wide thread count. It starts at
// LAMINA_NUM_THREADS when set (else the OpenMP default, normally the number
// of cores) and changes only through set_num_threads. Both take a whole
// number in [1, max_threads()]; LAMINA_NUM_THREADS outside that (or not a
// number) is reported by env_warnings() (a RuntimeWarning at import) and
// replaced by the default or the cap.
//
// GNU OpenMP is not fork-safe: a child forked after the parent ran a parallel
// region hangs in its first one (DataLoader workers do exactly this). So a
// forked child runs every kernel on its calling thread.
#include "threading.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "isa.h"

namespace lamina_cpu {
namespace {

int default_threads() {
#if defined(LAMINA_HAVE_OPENMP)
  return std::max(1, std::min(omp_get_max_threads(), max_threads()));
#else
  return 1;
#endif
}

int initial_threads() {
  const char* env = std::getenv("LAMINA_NUM_THREADS");
  if (env == nullptr || env[0] == '\0') return default_threads();
  const std::string text(env);
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(env, &end, 10);
  const bool whole = end != env && *end == '\0' && errno == 0;
  if (!whole || n < 1) {
    add_env_warning("LAMINA_NUM_THREADS='" + text + "' is not a whole number >= 1; using " +
                    std::to_string(default_threads()) + " threads");
    return default_threads();
  }
  if (n > max_threads()) {
    add_env_warning("LAMINA_NUM_THREADS=" + text + " is more than the cap of " +
                    std::to_string(max_threads()) + " (4 per logical CPU); using " +
                    std::to_string(max_threads()));
    return max_threads();
  }
  return static_cast<int>(n);
}

int& thread_count() {
  static int n = initial_threads();
  return n;
}

std::atomic<bool> forked_child{false};
const int fork_handler_registered = pthread_atfork(nullptr, nullptr, [] { forked_child = true; });

}  // namespace

int max_threads() {
  static const int cap = 4 * std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return cap;
}

bool in_forked_child() { return forked_child.load(std::memory_order_relaxed); }

int num_threads() { return in_forked_child() ? 1 : thread_count(); }

void set_num_threads(int64_t n) {
  if (n < 1 || n > max_threads())
    throw std::invalid_argument("set_num_threads: n must be in [1, " + std::to_string(max_threads()) +
                                "] (4 per logical CPU), got " + std::to_string(n));
  thread_count() = static_cast<int>(n);
}

std::string openmp_library() {
#if defined(LAMINA_HAVE_OPENMP)
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&omp_get_max_threads), &info) != 0 && info.dli_fname)
    return info.dli_fname;
#endif
  return "";
}

bool have_openmp() {
#if defined(LAMINA_HAVE_OPENMP)
  return true;
#else
  return false;
#endif
}

}  // namespace lamina_cpu
