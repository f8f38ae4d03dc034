#include "Metrics.h"

#include <cstdio>

namespace kiln::serve {

namespace {

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

void metric(std::string &out, const char *type, const std::string &name,
            const std::string &help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void gauge(std::string &out, const std::string &name, const std::string &help, double value) {
  metric(out, "gauge", name, help);
  out += name + " " + number(value) + "\n";
}

void counter(std::string &out, const std::string &name, const std::string &help, double value) {
  metric(out, "counter", name, help);
  out += name + " " + number(value) + "\n";
}

// Latency buckets in seconds, from a fast decode step to a long request.
std::vector<double> latencyBounds() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
          0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
}

} // namespace

void Histogram::observe(double value) {
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket])
    ++bucket;
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

void Histogram::write(std::string &out, const std::string &name,
                      const std::string &help) const {
  metric(out, "histogram", name, help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : timeToFirstToken_(latencyBounds()), interTokenLatency_(latencyBounds()),
      requestLatency_(latencyBounds()) {}

void Metrics::addPromptTokens(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  promptTokens_ += count;
}

void Metrics::addGenerationTokens(uint64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  generationTokens_ += count;
}

void Metrics::finished(const std::string &reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_[reason];
}

void Metrics::rejected(int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejected_[status];
}

void Metrics::observeTimeToFirstToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeToFirstToken_.observe(seconds);
}

void Metrics::observeInterTokenLatency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  interTokenLatency_.observe(seconds);
}

void Metrics::observeRequestLatency(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  requestLatency_.observe(seconds);
}

std::string Metrics::render(const kiln_engine_stats_t &engine, int64_t activeRequests,
                            int64_t maxActiveRequests) const {
  std::string out;
  gauge(out, "kiln_num_requests_running", "Sequences the engine is running.",
        engine.num_running);
  gauge(out, "kiln_num_requests_waiting", "Sequences waiting for the engine.",
        engine.num_waiting);
  gauge(out, "kiln_http_requests_active", "HTTP requests being served.", (double)activeRequests);
  gauge(out, "kiln_http_requests_max_active",
        "HTTP requests served at once at most (past it: 429).", (double)maxActiveRequests);
  gauge(out, "kiln_kv_blocks_total", "KV-cache blocks in the pool.", engine.num_blocks_total);
  gauge(out, "kiln_kv_blocks_used", "KV-cache blocks held by running sequences.",
        engine.num_blocks_used);
  gauge(out, "kiln_kv_blocks_free", "KV-cache blocks free (cached prefixes included).",
        engine.num_blocks_free);
  gauge(out, "kiln_kv_blocks_cached", "Free KV-cache blocks that still hold a cached prefix.",
        engine.num_blocks_cached);
  counter(out, "kiln_num_preemptions_total", "Sequences preempted for KV-cache space.",
          (double)engine.num_preemptions);
  counter(out, "kiln_prefix_cache_hit_tokens_total", "Prompt tokens found in the prefix cache.",
          (double)engine.num_prefix_cache_hit_tokens);
  std::lock_guard<std::mutex> lock(mutex_);
  counter(out, "kiln_prompt_tokens_total", "Prompt tokens of admitted requests.",
          (double)promptTokens_);
  counter(out, "kiln_generation_tokens_total", "Tokens generated.", (double)generationTokens_);
  metric(out, "counter", "kiln_request_success_total", "Requests finished, by reason.");
  for (const auto &[reason, count] : finished_)
    out += "kiln_request_success_total{finished_reason=\"" + reason + "\"} " +
           std::to_string(count) + "\n";
  metric(out, "counter", "kiln_request_rejected_total",
         "Requests refused before running, by HTTP status.");
  for (const auto &[status, count] : rejected_)
    out += "kiln_request_rejected_total{status=\"" + std::to_string(status) + "\"} " +
           std::to_string(count) + "\n";
  timeToFirstToken_.write(out, "kiln_time_to_first_token_seconds",
                          "From a request's arrival to its first token.");
  interTokenLatency_.write(out, "kiln_inter_token_latency_seconds",
                           "Between two tokens of one sequence.");
  requestLatency_.write(out, "kiln_e2e_request_latency_seconds",
                        "From a request's arrival to its last token.");
  return out;
}

} // namespace kiln::serve
