// threading.cc: the process-wide thread count. It starts at
// LAMINA_NUM_THREADS when set (else the OpenMP default, normally the number
// of cores) and changes only through set_num_threads. Both take a whole
// number in [1, max_threads()]; LAMINA_NUM_THREADS outside that (or not a
// number) is reported by env_warnings() (a RuntimeWarning at import) and
// replaced by the default or the cap.
//
// The workers (run_parts) are the backend's own threads, started on first use.
// A worker that finds no work spins for LAMINA_SPIN_US microseconds (default
// 50: back-to-back kernels), then polls between yields of its core for
// LAMINA_YIELD_US more (default 1000: the gaps of a training step's Python
// between kernels), then sleeps until the next kernel wakes it, so an idle
// process takes no core from other work. A yield gives the core to any other
// thread that wants it; a longer spin took time from the caller's own thread
// beside a busy core, where a longer poll took less (bench_wait_policy.py).
// While the process shares its cores with other work, workers skip the poll
// (Pool::contended). The caller never waits for a worker to wake: it claims
// every part no worker has (threading.h). A forked child has no workers (they are not forked with it),
// so it runs every kernel on its calling thread.
#include "threading.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LAMINA_PAUSE() _mm_pause()
#else
#define LAMINA_PAUSE() std::this_thread::yield()
#endif

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

// ---------------------------------------------------------------- the workers

// One job at a time. state holds the job's generation (high 32 bits), its
// number of parts (16) and the next unclaimed part (low 16), in one word: a part
// is claimed by a compare-and-swap of that word, which fails once the generation
// moved on, and a finished job has no part left to claim, so a worker that read
// the fields while the next job was being set up can never run anything with them.
class Pool {
  using Clock = std::chrono::steady_clock;

 public:
  void run(int parts, detail::PartFn fn, void* ctx) {
    if (in_part_) {  // called from a part: as an OpenMP team of one, the whole range
      fn(ctx, 0, 1);
      return;
    }
    std::unique_lock<std::mutex> one(job_mu_, std::defer_lock);
    if (parts > 0xffff || !one.try_lock()) {  // another thread's job: every part, here
      for (int t = 0; t < parts; ++t) fn(ctx, t, parts);
      return;
    }
    grow(parts - 1);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    worker_ticks_.store(0, std::memory_order_relaxed);
    const uint64_t gen = ((state_.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffffu;
    // publish: part 0 is next
    state_.store(gen << 32 | static_cast<uint64_t>(parts) << 16, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      wake_.notify_all();
    }
    in_part_ = true;
    Clock::rep own = 0;
    int ran = work(gen, own);
    in_part_ = false;
    // Wait only for the parts that workers claimed and are running.
    for (int spins = 0; done_.load(std::memory_order_acquire) + ran < parts; ++spins) {
      if (spins < 4096) LAMINA_PAUSE();
      else std::this_thread::yield();
    }
    if (ran > 0 && ran < parts)
      compare_parts(own / ran, worker_ticks_.load(std::memory_order_relaxed) / (parts - ran));
  }

 private:
  // Claims and runs parts of job gen until none is left; returns how many it
  // ran and adds the time they took to `ticks`.
  int work(uint64_t gen, Clock::rep& ticks) {
    detail::PartFn fn = fn_.load(std::memory_order_relaxed);
    void* ctx = ctx_.load(std::memory_order_relaxed);
    const auto start = Clock::now();
    int ran = 0;
    uint64_t s = state_.load(std::memory_order_acquire);
    while ((s >> 32) == gen && (s & 0xffff) < ((s >> 16) & 0xffff)) {
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
      fn(ctx, static_cast<int>(s & 0xffff), static_cast<int>((s >> 16) & 0xffff));
      ++ran;
      s = state_.load(std::memory_order_acquire);
    }
    if (ran) ticks += (Clock::now() - start).count();
    return ran;
  }

  void grow(int workers) {
    while (static_cast<int>(threads_) < workers) {
      std::thread(&Pool::loop, this).detach();  // lives as long as the process
      ++threads_;
    }
  }

  void loop() {
    in_part_ = true;  // a kernel called from a part runs inline
    uint64_t seen = state_.load(std::memory_order_acquire) >> 32;
    for (;;) {
      wait_for_job(seen);
      const uint64_t s = state_.load(std::memory_order_acquire);
      seen = s >> 32;
      Clock::rep ticks = 0;
      const int ran = work(seen, ticks);
      if (ran) {
        worker_ticks_.fetch_add(ticks, std::memory_order_relaxed);
        done_.fetch_add(ran, std::memory_order_acq_rel);  // publishes the ticks too
      }
    }
  }

  void wait_for_job(uint64_t seen) {
    const auto spun = Clock::now() + std::chrono::microseconds(spin_microseconds());
    for (int i = 0;; ++i) {
      if ((state_.load(std::memory_order_acquire) >> 32) != seen) return;
      LAMINA_PAUSE();
      if ((i & 63) == 63 && Clock::now() >= spun) break;
    }
    // Then poll between yields: a thread of another process that wants this
    // core gets it at each yield, while on an idle core the next kernel still
    // finds this worker awake (waking a sleeper costs tens of microseconds).
    // Not while the process is contended (see kYieldTakenUs).
    auto now = Clock::now();
    const auto yielded = spun + std::chrono::microseconds(yield_microseconds());
    while (now < yielded && !contended(now)) {
      if ((state_.load(std::memory_order_acquire) >> 32) != seen) return;
      std::this_thread::yield();
      const auto before = now;
      now = Clock::now();
      if (now - before > std::chrono::microseconds(kYieldTakenUs)) sign(now);
    }
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return (state_.load(std::memory_order_seq_cst) >> 32) != seen; });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

  // Beside a busy core, a polling worker keeps a core that the caller's own
  // thread or another process wants: 3 runnable threads on 2 cores made a
  // 2-thread MLP step 0.85-0.97x its 1-thread time, where workers that sleep
  // at once made it 1.13-1.22x. So while the process is contended, workers
  // sleep right after their spin. The signs of it: a worker's yield that took
  // over kYieldTakenUs (another thread ran on its core), and a job whose parts
  // took over twice as long (plus kSlowerUs) on the caller as on the workers
  // or the other way round (one of them shared its core). One alone is not
  // enough: a quiet VM stalls a vCPU now and then. kSigns of them within
  // kWindowMs make the process contended for kContendedMs.
  static constexpr int kYieldTakenUs = 100, kSlowerUs = 20;
  static constexpr int kSigns = 3, kWindowMs = 100, kContendedMs = 200;

  static Clock::rep ticks(Clock::time_point t) { return t.time_since_epoch().count(); }
  template <class D>
  static Clock::rep ticks(D d) {
    return std::chrono::duration_cast<Clock::duration>(d).count();
  }
  bool contended(Clock::time_point now) const {
    return ticks(now) < contended_until_.load(std::memory_order_relaxed);
  }
  // Counts a sign of contention (a race between threads only loses one).
  void sign(Clock::time_point now) {
    const Clock::rep window = ticks(std::chrono::milliseconds(kWindowMs));
    if (ticks(now) - window_.load(std::memory_order_relaxed) > window) {
      window_.store(ticks(now), std::memory_order_relaxed);
      signs_.store(0, std::memory_order_relaxed);
    }
    if (signs_.fetch_add(1, std::memory_order_relaxed) + 1 >= kSigns)
      contended_until_.store(ticks(now) + ticks(std::chrono::milliseconds(kContendedMs)),
                             std::memory_order_relaxed);
  }
  // The parts of a job are of about equal size: compares the time per part
  // on the caller and on the workers.
  void compare_parts(Clock::rep caller, Clock::rep workers) {
    const Clock::rep slack = ticks(std::chrono::microseconds(kSlowerUs));
    if (caller > 2 * workers + slack || workers > 2 * caller + slack) sign(Clock::now());
  }

  std::atomic<Clock::rep> contended_until_{0}, window_{0}, worker_ticks_{0};
  std::atomic<long> signs_{0};
  std::mutex job_mu_;  // one job at a time
  std::atomic<uint64_t> state_{0};
  std::atomic<detail::PartFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int> done_{0};
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  std::size_t threads_ = 0;  // only the job's caller, holding job_mu_, grows it
  static thread_local bool in_part_;
};

thread_local bool Pool::in_part_ = false;

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: its workers outlive static destruction
  return *p;
}

}  // namespace

namespace detail {
void run_parts(int parts, PartFn fn, void* ctx) {
  if (parts <= 1 || in_forked_child()) {
    for (int t = 0; t < parts; ++t) fn(ctx, t, parts);
    return;
  }
  pool().run(parts, fn, ctx);
}
}  // namespace detail

namespace {
// The environment variable `name` as microseconds in [0, 10^7], else `fallback`
// (a malformed value is reported by env_warnings()).
int env_microseconds(const char* name, int fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || env[0] == '\0') return fallback;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || v < 0 || v > 10000000) {
    add_env_warning(std::string(name) + "='" + env +
                    "' is not a whole number of microseconds in [0, 10^7]; using " +
                    std::to_string(fallback));
    return fallback;
  }
  return static_cast<int>(v);
}
}  // namespace

int spin_microseconds() {
  static const int us = env_microseconds("LAMINA_SPIN_US", 50);
  return us;
}

int yield_microseconds() {
  static const int us = env_microseconds("LAMINA_YIELD_US", 1000);
  return us;
}

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
