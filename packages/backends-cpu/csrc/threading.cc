// threading.cc: the process-wide thread count. It starts at
// LAMINA_NUM_THREADS when set (else the OpenMP default, normally the number
// of cores) and changes only through set_num_threads.
//
// GNU OpenMP is not fork-safe: a child forked after the parent ran a parallel
// region hangs in its first one (DataLoader workers do exactly this). So a
// forked child runs every kernel on its calling thread.
#include "threading.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace lamina_cpu {
namespace {

int initial_threads() {
  if (const char* env = std::getenv("LAMINA_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
#if defined(LAMINA_HAVE_OPENMP)
  return std::max(1, omp_get_max_threads());
#else
  return 1;
#endif
}

int& thread_count() {
  static int n = initial_threads();
  return n;
}

std::atomic<bool> forked_child{false};
const int fork_handler_registered = pthread_atfork(nullptr, nullptr, [] { forked_child = true; });

}  // namespace

bool in_forked_child() { return forked_child.load(std::memory_order_relaxed); }

int num_threads() { return in_forked_child() ? 1 : thread_count(); }

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: n must be >= 1, got " + std::to_string(n));
  thread_count() = n;
}

bool have_openmp() {
#if defined(LAMINA_HAVE_OPENMP)
  return true;
#else
  return false;
#endif
}

}  // namespace lamina_cpu
