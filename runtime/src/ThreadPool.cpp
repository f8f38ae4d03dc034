//===- ThreadPool.cpp - Worker threads for data-parallel kernels ----------===//
//
// A parallelFor publishes a Job on the caller's stack and wakes the workers;
// everyone, the caller included, claims chunks from the job's atomic counter
// until none are left. A worker registers with the job (under the mutex)
// before claiming, and the caller unpublishes the job only once every
// registered worker has left, so the job never outlives its users and a late
// worker never sees a finished one.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <exception>

namespace kiln::rt {
namespace {

/// How long a thread of the pool waits awake before it sleeps: a worker for
/// the next job, the caller for the workers to finish theirs. A decode
/// step's products come tens of microseconds apart, and waking a sleeping
/// thread costs about as much (a futex and a reschedule); a thread still
/// awake goes on without either. Bounded so an idle pool gives its cores
/// back.
constexpr std::chrono::microseconds kSpinTime{200};

/// Returns once `done()` holds or kSpinTime has passed.
template <typename Done> void spinUntil(Done &&done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  while (!done()) {
    // Read the clock only every few dozen pauses.
    for (int i = 0; i < 64; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return;
  }
}

} // namespace

struct ThreadPool::Job {
  Job(const std::function<void(int64_t, int64_t)> &body, int64_t count,
      int64_t numChunks)
      : body(body), count(count), numChunks(numChunks) {}

  const std::function<void(int64_t, int64_t)> &body;
  const int64_t count;
  const int64_t numChunks;
  std::atomic<int64_t> nextChunk{0};
  // Changed under the pool's mutex_; read without it by the caller while it
  // waits awake for the workers.
  std::atomic<int> activeWorkers{0};
  std::exception_ptr firstError;
};

ThreadPool::ThreadPool(int numThreads) {
  if (numThreads < 1)
    numThreads =
        static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers_.reserve(numThreads - 1);
  for (int i = 1; i < numThreads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  jobPosted_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::parallelFor(
    int64_t count, const std::function<void(int64_t, int64_t)> &body) {
  if (count <= 0)
    return;
  const int64_t numChunks = std::min<int64_t>(count, size());
  bool wasDispatching = false;
  if (numChunks == 1 || !dispatching_.compare_exchange_strong(
                            wasDispatching, true, std::memory_order_acquire)) {
    body(0, count);
    return;
  }

  Job job(body, count, numChunks);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    jobGeneration_.fetch_add(1, std::memory_order_release);
  }
  jobPosted_.notify_all();
  runChunks(job);
  // Every chunk is claimed: the workers that took one are finishing it.
  spinUntil([&] { return job.activeWorkers.load(std::memory_order_acquire) == 0; });
  {
    std::unique_lock<std::mutex> lock(mutex_);
    workersIdle_.wait(lock, [&] { return job.activeWorkers == 0; });
    job_ = nullptr;
  }
  dispatching_.store(false, std::memory_order_release);
  if (job.firstError)
    std::rethrow_exception(job.firstError);
}

void ThreadPool::runChunks(Job &job) {
  const int64_t baseLength = job.count / job.numChunks;
  const int64_t longChunks = job.count % job.numChunks;
  for (int64_t chunk = job.nextChunk.fetch_add(1, std::memory_order_relaxed);
       chunk < job.numChunks;
       chunk = job.nextChunk.fetch_add(1, std::memory_order_relaxed)) {
    // The first `longChunks` chunks are one element longer.
    const int64_t begin = chunk * baseLength + std::min(chunk, longChunks);
    const int64_t end = begin + baseLength + (chunk < longChunks ? 1 : 0);
    try {
      job.body(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!job.firstError)
        job.firstError = std::current_exception();
    }
  }
}

void ThreadPool::workerLoop() {
  uint64_t seenGeneration = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (!stopping_ && jobGeneration_ == seenGeneration) {
      lock.unlock();
      spinUntil([&] {
        return jobGeneration_.load(std::memory_order_acquire) != seenGeneration;
      });
      lock.lock();
    }
    jobPosted_.wait(
        lock, [&] { return stopping_ || jobGeneration_ != seenGeneration; });
    if (stopping_)
      return;
    seenGeneration = jobGeneration_;
    Job *job = job_;
    if (!job) // It finished before this worker woke up.
      continue;
    ++job->activeWorkers;
    lock.unlock();
    runChunks(*job);
    lock.lock();
    if (--job->activeWorkers == 0)
      workersIdle_.notify_one();
  }
}

namespace {
thread_local ThreadPool *threadCurrentPool = nullptr;
} // namespace

ThreadPool *currentThreadPool() { return threadCurrentPool; }

void setCurrentThreadPool(ThreadPool *pool) { threadCurrentPool = pool; }

} // namespace kiln::rt
