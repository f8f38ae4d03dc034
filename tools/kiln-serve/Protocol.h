//===- Protocol.h - OpenAI request fields, read and checked ---------------===//
//
// The completions and chat completions bodies, turned into what the engine
// runs. Fields are read as OpenAI defines them, with vLLM's extensions
// (top_k, min_p, repetition_penalty, stop_token_ids, ignore_eos,
// return_token_ids); fields Kiln does not know are ignored, as OpenAI ignores
// them. A field with a wrong type or value is an ApiError (HTTP 400) that
// names it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_SERVE_PROTOCOL_H
#define KILN_TOOLS_KILN_SERVE_PROTOCOL_H

#include "kiln/engine.hpp"
#include "kiln/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::serve {

// Ordered, so that a request's objects (a tool's schema, which a chat
// template may print) keep their key order, and answers list their fields
// in OpenAI's order.
using Json = nlohmann::ordered_json;

/// An error answered with an OpenAI-style body:
/// {"error": {"message", "type", "param", "code"}}.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "",
           std::string type = "invalid_request_error")
      : std::runtime_error(message), status(status), param(std::move(param)),
        type(std::move(type)) {}
  int status;
  std::string param, type;
  Json body() const;
};

/// What the server serves, for checking requests against it.
struct ServedModel {
  std::string name;
  const kiln::Tokenizer *tokenizer = nullptr; // null: prompts are token ids
  int32_t maxModelLen = 0;
  int32_t vocabSize = 0; // the logits' width: token ids are below it
  std::optional<int32_t> eosId;
};

struct GenerationRequest {
  bool chat = false;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> promptTexts; // what echo returns, per prompt (with echo)
  int n = 1;
  /// Sampling; its stop ids and logprobs are set from the fields below when
  /// the request is added to the engine.
  kiln::SamplingParams params;
  std::vector<int64_t> stopTokenIds;
  std::vector<std::string> stop;     // stop strings (need a tokenizer)
  bool stream = false, includeUsage = false, echo = false, returnTokenIds = false;
  /// Log-probabilities: none, the chosen token's (0), or also the n most
  /// likely (n > 0).
  int logprobs = -1;
};

/// Reads a /v1/completions body.
GenerationRequest parseCompletion(const Json &body, const ServedModel &model);
/// Reads a /v1/chat/completions body; the messages go through the
/// tokenizer's chat template.
GenerationRequest parseChat(const Json &body, const ServedModel &model);

} // namespace kiln::serve

#endif
