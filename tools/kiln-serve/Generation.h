//===- Generation.h - One HTTP request's sequences in the engine ----------===//
//
// A completions or chat request becomes n engine requests per prompt (its
// "choices"). The engine's callbacks run on its loop thread and only queue
// the events; the HTTP thread takes them, detokenizes incrementally, watches
// for stop strings (holding back text that may begin one), and hands out
// deltas: new text, ids and log-probabilities per choice, and finish reasons.
// A Generation outlives its callbacks: its destructor aborts whatever is
// still running and waits for the engine's last event of every choice.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_SERVE_GENERATION_H
#define KILN_TOOLS_KILN_SERVE_GENERATION_H

#include "Metrics.h"
#include "Protocol.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

namespace kiln::serve {

using Clock = std::chrono::steady_clock;

struct LogprobEntry {
  int32_t token;
  float logprob;
  std::vector<std::pair<int32_t, float>> top;
  size_t textOffset; // where the choice's text stood when the token came
};

struct Delta {
  size_t choice;
  std::string text;
  std::vector<int32_t> ids;
  std::vector<LogprobEntry> logprobs;
  std::optional<std::string> finishReason;
};

class Generation {
public:
  Generation(kiln::Engine &engine, const ServedModel &model, Metrics &metrics,
             GenerationRequest request);
  ~Generation();
  Generation(const Generation &) = delete;
  Generation &operator=(const Generation &) = delete;

  /// Adds every choice to the engine. An engine refusal is an ApiError (400
  /// for a bad request, 503 when the engine is out of room), and the choices
  /// already added are aborted.
  void start();
  /// Waits up to `timeout` for events, and returns the deltas they make.
  std::vector<Delta> next(std::chrono::milliseconds timeout);
  /// Every choice has finished (stopped, or its engine request ended).
  bool done() const;
  /// Stops every running choice (the client left, or the server is
  /// draining); their finish reason is "abort".
  void abort();
  /// The first run-time failure of a choice, if any.
  const std::optional<std::string> &error() const { return error_; }

  const GenerationRequest &request() const { return request_; }
  size_t numChoices() const { return choices_.size(); }
  /// usage: prompt tokens once per prompt, and every choice's tokens.
  Json usage() const;
  std::string id() const { return id_; }
  int64_t created() const { return created_; }
  /// The text of one token, for log-probabilities ("token_id:N" without a
  /// tokenizer, as vLLM writes it).
  std::string tokenText(int32_t token) const;

private:
  struct Event {
    size_t choice;
    int64_t token;
    float logprob;
    std::vector<std::pair<int32_t, float>> top;
    kiln_finish_reason_t finish;
    std::string error;
    Clock::time_point at;
  };
  struct Choice {
    size_t prompt;
    kiln_request_id_t engineId = 0;
    bool added = false, engineDone = false;
    std::unique_ptr<kiln::Detokenizer> detokenizer;
    std::string text;  // handed out
    std::string held;  // decoded, held back: it may begin a stop string
    size_t numTokens = 0;
    std::optional<std::string> finishReason;
    Clock::time_point lastToken;
  };

  void onEvent(Event event);
  void apply(Event &event, std::vector<Delta> &deltas);
  Delta &deltaFor(size_t choice, std::vector<Delta> &deltas);
  /// Moves what is safe from `held` to the delta; stops at a stop string.
  void release(Choice &choice, Delta &delta, bool final);
  void waitForEngine();

  kiln::Engine &engine_;
  const ServedModel &model_;
  Metrics &metrics_;
  GenerationRequest request_;
  std::vector<Choice> choices_;
  std::string id_;
  int64_t created_;
  Clock::time_point arrival_;
  size_t longestStop_ = 0;
  std::optional<std::string> error_;

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
};

} // namespace kiln::serve

#endif
