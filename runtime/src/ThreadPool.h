//===- ThreadPool.h - Worker threads for data-parallel kernels -*- C++ -*-===//
//
// A fixed set of worker threads that run parallelFor chunks together with the
// calling thread, and the per-thread "current pool" that kernels called from
// compiled model code (which cannot pass a pool) use.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_THREADPOOL_H
#define KILN_RUNTIME_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::rt {

class ThreadPool {
public:
  /// A pool of `numThreads` threads, the caller of parallelFor counted as one,
  /// so it starts numThreads - 1 workers. numThreads < 1 means one per
  /// hardware thread.
  explicit ThreadPool(int numThreads);
  /// Stops and joins the workers; no parallelFor may be running.
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The threads a parallelFor can use, the caller included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Splits [0, count) into min(count, size()) contiguous chunks of nearly
  /// equal length and runs body(begin, end) once per chunk on the workers and
  /// the calling thread; returns when every chunk is done. Idle threads steal
  /// chunks that late workers have not claimed, so a descheduled worker
  /// delays nothing. If the pool is already running a parallelFor (a call from
  /// another thread, or a nested call from inside a body), the whole range
  /// runs inline on the calling thread instead, so callers never wait for one
  /// another and nesting never deadlocks. The first exception thrown by a
  /// chunk is rethrown here once all chunks have finished.
  void parallelFor(int64_t count,
                   const std::function<void(int64_t begin, int64_t end)> &body);

private:
  struct Job;

  void workerLoop();
  void runChunks(Job &job);

  std::vector<std::thread> workers_;
  /// Set while a parallelFor owns the workers; a second one runs inline.
  std::atomic<bool> dispatching_{false};

  std::mutex mutex_;
  std::condition_variable jobPosted_;
  std::condition_variable workersIdle_;
  // Guarded by mutex_.
  Job *job_ = nullptr;
  bool stopping_ = false;
  // Changed under mutex_ (the workers wait on it); read without it by a
  // worker spinning for the next job.
  std::atomic<uint64_t> jobGeneration_{0};
};

/// The pool that kernels running on this thread parallelize over; nullptr (the
/// default, and on pool workers) means they run serially.
ThreadPool *currentThreadPool();
void setCurrentThreadPool(ThreadPool *pool);

/// Makes `pool` this thread's current pool for the lifetime of the object.
class ScopedThreadPool {
public:
  explicit ScopedThreadPool(ThreadPool *pool) : previous_(currentThreadPool()) {
    setCurrentThreadPool(pool);
  }
  ~ScopedThreadPool() { setCurrentThreadPool(previous_); }
  ScopedThreadPool(const ScopedThreadPool &) = delete;
  ScopedThreadPool &operator=(const ScopedThreadPool &) = delete;

private:
  ThreadPool *previous_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_THREADPOOL_H
