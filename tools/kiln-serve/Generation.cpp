#include "Generation.h"

#include <algorithm>
#include <random>

namespace kiln::serve {

namespace {

std::string randomId() {
  static thread_local std::mt19937_64 random(std::random_device{}());
  char buffer[33];
  std::snprintf(buffer, sizeof buffer, "%016llx%016llx", (unsigned long long)random(),
                (unsigned long long)random());
  return buffer;
}

const char *finishName(kiln_finish_reason_t reason) {
  switch (reason) {
  case KILN_FINISH_STOP:
    return "stop";
  case KILN_FINISH_LENGTH:
    return "length";
  case KILN_FINISH_ABORT:
    return "abort";
  default:
    return "error";
  }
}

} // namespace

Generation::Generation(kiln::Engine &engine, const ServedModel &model, Metrics &metrics,
                       GenerationRequest request)
    : engine_(engine), model_(model), metrics_(metrics), request_(std::move(request)),
      id_((request_.chat ? "chatcmpl-" : "cmpl-") + randomId()),
      created_((int64_t)std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      arrival_(Clock::now()) {
  for (const std::string &stop : request_.stop)
    longestStop_ = std::max(longestStop_, stop.size());
  for (size_t prompt = 0; prompt < request_.prompts.size(); ++prompt)
    for (int i = 0; i < request_.n; ++i) {
      Choice choice;
      choice.prompt = prompt;
      if (model_.tokenizer)
        choice.detokenizer = std::make_unique<kiln::Detokenizer>(
            *model_.tokenizer, request_.prompts[prompt], /*skipSpecialTokens=*/true);
      choices_.push_back(std::move(choice));
    }
}

Generation::~Generation() {
  abort();
  waitForEngine();
}

void Generation::start() {
  kiln::SamplingParams params = request_.params;
  params.stop_token_ids = request_.stopTokenIds.data();
  params.num_stop_token_ids = (int32_t)request_.stopTokenIds.size();
  params.logprobs = request_.logprobs;
  for (size_t index = 0; index < choices_.size(); ++index) {
    Choice &choice = choices_[index];
    const std::vector<int32_t> &prompt = request_.prompts[choice.prompt];
    kiln::SamplingParams choiceParams = params;
    // n choices of one seeded request differ from each other, and each is
    // reproducible.
    if (params.has_seed)
      choiceParams.seed = params.seed + index % request_.n;
    try {
      choice.engineId = engine_.addRequest(
          std::vector<int64_t>(prompt.begin(), prompt.end()), choiceParams,
          [this, index](const kiln_engine_event_t &event) {
            Event copy{index, event.token_id, event.logprob, {}, event.finish_reason,
                       event.error_message ? event.error_message : "", Clock::now()};
            for (int32_t i = 0; i < event.num_top_logprobs; ++i)
              copy.top.emplace_back((int32_t)event.top_token_ids[i], event.top_logprobs[i]);
            onEvent(std::move(copy));
          });
      choice.added = true;
    } catch (const kiln::Error &e) {
      abort();
      waitForEngine();
      choices_.clear();
      throw ApiError(e.code() == KILN_STATUS_RESOURCE_EXHAUSTED ? 503 : 400,
                     std::string("the engine refused the request: ") + e.what(),
                     request_.chat ? "messages" : "prompt");
    }
  }
  for (const auto &prompt : request_.prompts)
    metrics_.addPromptTokens(prompt.size());
}

void Generation::onEvent(Event event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

std::vector<Delta> Generation::next(std::chrono::milliseconds timeout) {
  std::deque<Event> events;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
    events.swap(events_);
  }
  std::vector<Delta> deltas;
  for (Event &event : events)
    apply(event, deltas);
  return deltas;
}

Delta &Generation::deltaFor(size_t choice, std::vector<Delta> &deltas) {
  for (Delta &delta : deltas)
    if (delta.choice == choice)
      return delta;
  deltas.push_back(Delta{choice, {}, {}, {}, std::nullopt});
  return deltas.back();
}

void Generation::apply(Event &event, std::vector<Delta> &deltas) {
  Choice &choice = choices_[event.choice];
  if (event.finish != KILN_FINISH_NONE)
    choice.engineDone = true;
  // After a stop string the engine may still deliver a token or two before
  // the abort lands; they are not part of the answer.
  if (choice.finishReason)
    return;
  Delta &delta = deltaFor(event.choice, deltas);
  if (event.token >= 0) {
    int32_t token = (int32_t)event.token;
    if (choice.numTokens == 0)
      metrics_.observeTimeToFirstToken(
          std::chrono::duration<double>(event.at - arrival_).count());
    else
      metrics_.observeInterTokenLatency(
          std::chrono::duration<double>(event.at - choice.lastToken).count());
    choice.lastToken = event.at;
    ++choice.numTokens;
    metrics_.addGenerationTokens(1);
    delta.ids.push_back(token);
    if (request_.logprobs >= 0)
      delta.logprobs.push_back({token, event.logprob, event.top,
                                choice.text.size() + choice.held.size()});
    if (choice.detokenizer)
      choice.held += choice.detokenizer->push(token);
  }
  bool final = event.finish != KILN_FINISH_NONE;
  if (final && choice.detokenizer)
    choice.held += choice.detokenizer->finish();
  release(choice, delta, final);
  if (final && !choice.finishReason) {
    choice.finishReason = finishName(event.finish);
    if (event.finish == KILN_FINISH_ERROR && !error_)
      error_ = event.error;
  }
  if (choice.finishReason) {
    delta.finishReason = choice.finishReason;
    metrics_.finished(*choice.finishReason);
    metrics_.observeRequestLatency(std::chrono::duration<double>(event.at - arrival_).count());
  }
}

void Generation::release(Choice &choice, Delta &delta, bool final) {
  if (choice.held.empty())
    return;
  if (!request_.stop.empty()) {
    // A stop string may begin in text handed out already, up to its length
    // minus one bytes back.
    std::string window = choice.text.substr(
        choice.text.size() - std::min(choice.text.size(), longestStop_ - 1));
    window += choice.held;
    size_t heldStart = window.size() - choice.held.size();
    size_t first = std::string::npos;
    for (const std::string &stop : request_.stop)
      first = std::min(first, window.find(stop));
    if (first != std::string::npos) {
      // The answer ends before the stop string, which it does not include.
      std::string kept = first > heldStart ? window.substr(heldStart, first - heldStart) : "";
      choice.text += kept;
      delta.text += kept;
      choice.held.clear();
      choice.finishReason = "stop";
      engine_.abort(choice.engineId);
      return;
    }
    if (!final) {
      // Hold back the longest end of the text that begins a stop string.
      size_t hold = 0;
      for (const std::string &stop : request_.stop)
        for (size_t length = std::min(stop.size() - 1, choice.held.size()); length > hold; --length)
          if (choice.held.compare(choice.held.size() - length, length, stop, 0, length) == 0) {
            hold = length;
            break;
          }
      std::string released = choice.held.substr(0, choice.held.size() - hold);
      choice.text += released;
      delta.text += released;
      choice.held.erase(0, released.size());
      return;
    }
  }
  choice.text += choice.held;
  delta.text += choice.held;
  choice.held.clear();
}

bool Generation::done() const {
  return std::all_of(choices_.begin(), choices_.end(),
                     [](const Choice &choice) { return choice.finishReason.has_value(); });
}

void Generation::abort() {
  for (Choice &choice : choices_)
    if (choice.added && !choice.engineDone && !choice.finishReason) {
      try {
        engine_.abort(choice.engineId);
      } catch (const kiln::Error &) {
        // Already finished in the engine: its last event is on its way.
      }
    }
}

void Generation::waitForEngine() {
  auto allDone = [&] {
    return std::all_of(choices_.begin(), choices_.end(), [](const Choice &choice) {
      return !choice.added || choice.engineDone;
    });
  };
  while (!allDone()) {
    std::vector<Delta> ignored;
    std::deque<Event> events;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return !events_.empty(); });
      events.swap(events_);
    }
    for (Event &event : events) {
      Choice &choice = choices_[event.choice];
      if (event.finish == KILN_FINISH_NONE)
        continue;
      choice.engineDone = true;
      // Nobody reads these any more (the client left): only counted.
      if (!choice.finishReason) {
        choice.finishReason = finishName(event.finish);
        metrics_.finished(*choice.finishReason);
      }
    }
  }
}

Json Generation::usage() const {
  size_t promptTokens = 0, completionTokens = 0;
  for (const auto &prompt : request_.prompts)
    promptTokens += prompt.size();
  for (const Choice &choice : choices_)
    completionTokens += choice.numTokens;
  return {{"prompt_tokens", promptTokens},
          {"completion_tokens", completionTokens},
          {"total_tokens", promptTokens + completionTokens}};
}

std::string Generation::tokenText(int32_t token) const {
  if (!model_.tokenizer)
    return "token_id:" + std::to_string(token);
  return model_.tokenizer->decode({token});
}

} // namespace kiln::serve
