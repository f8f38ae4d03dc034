//===- Metrics.h - kiln-serve's Prometheus metrics -------------------------===//
//
// Counters and latency histograms the server records as requests run, and
// the engine's own gauges read at scrape time, written in Prometheus' text
// format (GET /metrics). Names follow vLLM's where they mean the same.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_SERVE_METRICS_H
#define KILN_TOOLS_KILN_SERVE_METRICS_H

#include "kiln/engine.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::serve {

class Histogram {
public:
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double value);
  void write(std::string &out, const std::string &name, const std::string &help) const;

private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_; // the last counts values above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
public:
  Metrics();
  void addPromptTokens(uint64_t count);
  void addGenerationTokens(uint64_t count);
  void finished(const std::string &reason);
  void rejected(int status);
  void observeTimeToFirstToken(double seconds);
  void observeInterTokenLatency(double seconds);
  void observeRequestLatency(double seconds);
  /// Everything, with the engine's gauges and the server's own queue.
  std::string render(const kiln_engine_stats_t &engine, int64_t activeRequests,
                     int64_t maxActiveRequests) const;

private:
  mutable std::mutex mutex_;
  uint64_t promptTokens_ = 0, generationTokens_ = 0;
  std::map<std::string, uint64_t> finished_;
  std::map<int, uint64_t> rejected_;
  Histogram timeToFirstToken_, interTokenLatency_, requestLatency_;
};

} // namespace kiln::serve

#endif
