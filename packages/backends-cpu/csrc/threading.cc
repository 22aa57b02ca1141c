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
// While other processes keep cores busy, a kernel runs on only as many
// threads as there are cores left free, workers skip the poll
// (Pool::watch_load), and a GEMM splits C for that many threads
// (free_threads). The caller never waits for a worker to wake: it claims
// every part no worker has (threading.h). A forked child has no workers (they
// are not forked with it), so it runs every kernel on its calling thread.
#include "threading.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// The CPUs this process may run on (its affinity mask: taskset, cpusets) and
// the seconds they spent busy since boot (all but idle and iowait), from their
// cpuN lines of /proc/stat, in clock ticks. False where it cannot be read.
// A cgroup CPU quota is not seen: its cores look free until the quota bites.
bool allowed_busy_seconds(double& out, int& cpus) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  const bool masked = sched_getaffinity(0, sizeof mask, &mask) == 0;
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return false;
  unsigned long long ticks = 0;
  cpus = 0;
  char line[512];
  while (std::fgets(line, sizeof line, f) != nullptr && std::strncmp(line, "cpu", 3) == 0) {
    int id = -1;
    unsigned long long v[8] = {};  // user nice system idle iowait irq softirq steal
    const int got = std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &id, &v[0],
                                &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    if (got < 5 || id < 0) continue;  // the all-CPUs line has no number
    if (masked && (id >= CPU_SETSIZE || !CPU_ISSET(id, &mask))) continue;
    ++cpus;
    ticks += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  }
  std::fclose(f);
  static const long tick = sysconf(_SC_CLK_TCK);
  if (cpus == 0 || tick <= 0) return false;
  out = double(ticks) / double(tick);
  return true;
}

// CPU seconds this process used, user and system.
bool process_seconds(double& out) {
  rusage use{};
  if (getrusage(RUSAGE_SELF, &use) != 0) return false;
  auto sec = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  out = sec(use.ru_utime) + sec(use.ru_stime);
  return true;
}

// One job at a time. state holds the job's generation (high 32 bits), its
// number of parts (16) and the next unclaimed part (low 16), in one word: a part
// is claimed by a compare-and-swap of that word, which fails once the generation
// moved on, and a finished job has no part left to claim, so a worker that read
// the fields while the next job was being set up can never run anything with them.
class Pool {
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
    const int threads = std::min(parts, watch_load(parts));
    if (threads <= 1) {  // no core to spare: every part here, no worker woken
      in_part_ = true;
      for (int t = 0; t < parts; ++t) fn(ctx, t, parts);
      in_part_ = false;
      return;
    }
    grow(threads - 1);
    fn_.store(fn, std::memory_order_relaxed);
    ctx_.store(ctx, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    seats_.store(threads - 1, std::memory_order_relaxed);
    const uint64_t gen = ((state_.load(std::memory_order_relaxed) >> 32) + 1) & 0xffffffffu;
    // publish: part 0 is next
    state_.store(gen << 32 | static_cast<uint64_t>(parts) << 16, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      wake_.notify_all();
    }
    in_part_ = true;
    int ran = work(gen);
    in_part_ = false;
    // Wait only for the parts that workers claimed and are running.
    for (int spins = 0; done_.load(std::memory_order_acquire) + ran < parts; ++spins) {
      if (spins < 4096) LAMINA_PAUSE();
      else std::this_thread::yield();
    }
  }

  // See free_threads (threading.h).
  int free_threads(int nt) {
    if (nt <= 1 || in_part_) return 1;  // in_part_ first: the caller holds job_mu_
    std::unique_lock<std::mutex> one(job_mu_, std::defer_lock);
    if (one.try_lock()) return std::min(nt, watch_load(nt));
    return std::min(nt, room_.load(std::memory_order_relaxed));  // another thread's job
  }

 private:
  // Claims and runs parts of job gen until none is left; returns how many it ran.
  int work(uint64_t gen) {
    detail::PartFn fn = fn_.load(std::memory_order_relaxed);
    void* ctx = ctx_.load(std::memory_order_relaxed);
    int ran = 0;
    uint64_t s = state_.load(std::memory_order_acquire);
    while ((s >> 32) == gen && (s & 0xffff) < ((s >> 16) & 0xffff)) {
      if (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
      fn(ctx, static_cast<int>(s & 0xffff), static_cast<int>((s >> 16) & 0xffff));
      ++ran;
      s = state_.load(std::memory_order_acquire);
    }
    return ran;
  }

  void grow(int workers) {
    while (threads_ < workers) {
      std::thread(&Pool::loop, this, threads_).detach();  // lives as long as the process
      ++threads_;
    }
  }

  // Worker `seat` takes part in the jobs that have a seat for it (seats_): while
  // the machine is crowded, a job leaves out the workers it has no core for.
  void loop(int seat) {
    in_part_ = true;  // a kernel called from a part runs inline
    uint64_t seen = state_.load(std::memory_order_acquire) >> 32;
    for (;;) {
      wait_for_job(seen);
      const uint64_t s = state_.load(std::memory_order_acquire);
      seen = s >> 32;
      // A seat count of a later job than `seen` means seen has no part left to claim.
      if (seat >= seats_.load(std::memory_order_acquire)) continue;
      const int ran = work(seen);
      if (ran) done_.fetch_add(ran, std::memory_order_acq_rel);
    }
  }

  void wait_for_job(uint64_t seen) {
    using clock = std::chrono::steady_clock;
    const auto spun = clock::now() + std::chrono::microseconds(spin_microseconds());
    for (int i = 0;; ++i) {
      if ((state_.load(std::memory_order_acquire) >> 32) != seen) return;
      LAMINA_PAUSE();
      if ((i & 63) == 63 && clock::now() >= spun) break;
    }
    // Then poll between yields: a thread of another process that wants this
    // core gets it at each yield, while on an idle core the next kernel still
    // finds this worker awake (waking a sleeper costs tens of microseconds).
    const auto yielded = spun + std::chrono::microseconds(yield_microseconds());
    while (!crowded_.load(std::memory_order_relaxed) && clock::now() < yielded) {
      if ((state_.load(std::memory_order_acquire) >> 32) != seen) return;
      std::this_thread::yield();
    }
    std::unique_lock<std::mutex> lock(mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    wake_.wait(lock, [&] { return (state_.load(std::memory_order_seq_cst) >> 32) != seen; });
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

  // Beside a busy core, a worker that polls keeps a core that the caller's own
  // thread or another process wants: 3 runnable threads on 2 cores made a
  // 2-thread MLP step 0.85-0.97x its 1-thread time where workers that sleep at
  // once made it 1.04-1.22x, and a worker that shares its core with another
  // process holds up every job that waits for its part (0.93x when workers
  // slept at once; bench_wait_policy.py). So a job takes only the cores the
  // machine leaves free, room_, and while that is fewer than the job's parts
  // (crowded_), idle workers sleep right after their spin. room_: the cores of
  // this process's affinity mask that other processes left idle over the last
  // sample (at least kSampleMs, taken by a job's caller), rounded down unless
  // within a quarter of a core of the next; /proc/stat gives those cores' busy
  // time (steal included), getrusage this process's. Returns the threads the
  // job may use.
  static constexpr int kSampleMs = 200;
  int watch_load(int parts) {
    using clock = std::chrono::steady_clock;
    const auto now = clock::now();
    if (now - sampled_at_ >= std::chrono::milliseconds(kSampleMs)) {
      double busy = 0, ours = 0;
      int cpus = 0;
      if (allowed_busy_seconds(busy, cpus) && process_seconds(ours)) {
        if (sampled_at_ != clock::time_point{}) {
          const double wall = std::chrono::duration<double>(now - sampled_at_).count();
          const double others = (busy - busy_) / wall - (ours - ours_) / wall;  // cores
          room_.store(std::max(1, static_cast<int>(cpus - others + 0.25)),
                      std::memory_order_relaxed);
        }
        sampled_at_ = now;
        busy_ = busy;
        ours_ = ours;
      }
    }
    const int room = room_.load(std::memory_order_relaxed);
    crowded_.store(room < parts, std::memory_order_relaxed);
    return room;
  }

  std::chrono::steady_clock::time_point sampled_at_{};  // the fields of the last sample
  double busy_ = 0, ours_ = 0;
  std::atomic<int> room_{1 << 16};  // no sample yet: every part may have a thread
  std::atomic<bool> crowded_{false};
  std::mutex job_mu_;  // one job at a time, and the load samples
  std::atomic<uint64_t> state_{0};
  std::atomic<detail::PartFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<int> done_{0};
  std::atomic<int> seats_{0};  // workers the job may use
  std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  int threads_ = 0;  // only the job's caller, holding job_mu_, grows it
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

int free_threads(int nt) { return nt <= 1 || in_forked_child() ? 1 : pool().free_threads(nt); }

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
