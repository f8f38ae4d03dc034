#include "Protocol.h"

#include <cmath>

namespace kiln::serve {

Json ApiError::body() const {
  return {{"error",
           {{"message", what()},
            {"type", type},
            {"param", param.empty() ? Json(nullptr) : Json(param)},
            {"code", status}}}};
}

namespace {

// Typed reads of optional fields; null counts as absent, as OpenAI's clients
// send it.
const Json *optional(const Json &body, const char *key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

double number(const Json &body, const char *key, double fallback, double min, double max) {
  const Json *value = optional(body, key);
  if (!value)
    return fallback;
  if (!value->is_number())
    throw ApiError(400, std::string(key) + " must be a number", key);
  double result = value->get<double>();
  if (!std::isfinite(result) || result < min || result > max)
    throw ApiError(400,
                   std::string(key) + " must be in [" + Json(min).dump() + ", " +
                       Json(max).dump() + "], got " + value->dump(),
                   key);
  return result;
}

int64_t integer(const Json &body, const char *key, int64_t fallback, int64_t min, int64_t max) {
  const Json *value = optional(body, key);
  if (!value)
    return fallback;
  if (!value->is_number_integer())
    throw ApiError(400, std::string(key) + " must be an integer", key);
  int64_t result = value->get<int64_t>();
  if (result < min || result > max)
    throw ApiError(400,
                   std::string(key) + " must be in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "], got " + std::to_string(result),
                   key);
  return result;
}

bool boolean(const Json &body, const char *key, bool fallback) {
  const Json *value = optional(body, key);
  if (!value)
    return fallback;
  if (!value->is_boolean())
    throw ApiError(400, std::string(key) + " must be true or false", key);
  return value->get<bool>();
}

void checkModel(const Json &body, const ServedModel &model) {
  const Json *name = optional(body, "model");
  if (!name)
    return;
  if (!name->is_string())
    throw ApiError(400, "model must be a string", "model");
  if (name->get<std::string>() != model.name)
    throw ApiError(404, "The model `" + name->get<std::string>() + "` does not exist; this server serves `" + model.name + "`",
                   "model", "NotFoundError");
}

std::vector<int32_t> tokenIds(const Json &list, const ServedModel &model, const char *param) {
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (const Json &id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.vocabSize)
      throw ApiError(400, std::string(param) + " holds " + id.dump() +
                              ", which is not a token id of this model", param);
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

const kiln::Tokenizer &needTokenizer(const ServedModel &model, const std::string &what,
                                     const char *param) {
  if (!model.tokenizer)
    throw ApiError(400, what + " needs a tokenizer: start kiln-serve with --tokenizer" +
                            (std::string(param) == "prompt" ? ", or give token ids" : ""),
                   param);
  return *model.tokenizer;
}

void addTextPrompt(GenerationRequest &request, const ServedModel &model, const std::string &text) {
  const kiln::Tokenizer &tokenizer = needTokenizer(model, "a text prompt", "prompt");
  request.prompts.push_back(tokenizer.encode(text, /*addSpecialTokens=*/true));
  request.promptTexts.push_back(text);
}

// The prompt's text is decoded only for echo, the one field that returns it.
void addIdPrompt(GenerationRequest &request, const ServedModel &model, const Json &ids) {
  request.prompts.push_back(tokenIds(ids, model, "prompt"));
  request.promptTexts.push_back(request.echo && model.tokenizer
                                    ? model.tokenizer->decode(request.prompts.back())
                                    : std::string());
}

// prompt: a string, a list of strings, a list of ids, or a list of lists of
// ids, as the completions API allows.
void readPrompts(GenerationRequest &request, const Json &body, const ServedModel &model) {
  const Json *prompt = optional(body, "prompt");
  if (!prompt)
    throw ApiError(400, "prompt is required", "prompt");
  if (prompt->is_string()) {
    addTextPrompt(request, model, prompt->get<std::string>());
  } else if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_number()) {
    addIdPrompt(request, model, *prompt);
  } else if (prompt->is_array() && !prompt->empty()) {
    for (const Json &item : *prompt) {
      if (item.is_string())
        addTextPrompt(request, model, item.get<std::string>());
      else if (item.is_array())
        addIdPrompt(request, model, item);
      else
        throw ApiError(400, "prompt must be a string, a list of strings, a list of token ids "
                            "or a list of lists of token ids",
                       "prompt");
    }
  } else {
    throw ApiError(400, "prompt must be a string, a list of strings, a list of token ids or "
                        "a list of lists of token ids",
                   "prompt");
  }
  for (const auto &ids : request.prompts)
    if (ids.empty())
      throw ApiError(400, "prompt is empty: nothing to continue", "prompt");
}

void readStop(GenerationRequest &request, const Json &body, const ServedModel &model) {
  if (const Json *stop = optional(body, "stop")) {
    if (stop->is_string()) {
      request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const Json &item : *stop) {
        if (!item.is_string())
          throw ApiError(400, "stop must be a string or a list of strings", "stop");
        request.stop.push_back(item.get<std::string>());
      }
    } else {
      throw ApiError(400, "stop must be a string or a list of strings", "stop");
    }
    for (const std::string &text : request.stop)
      if (text.empty())
        throw ApiError(400, "stop holds an empty string", "stop");
    if (!request.stop.empty())
      needTokenizer(model, "stop", "stop");
  }
  if (const Json *ids = optional(body, "stop_token_ids")) {
    if (!ids->is_array())
      throw ApiError(400, "stop_token_ids must be a list of token ids", "stop_token_ids");
    for (int32_t id : tokenIds(*ids, model, "stop_token_ids"))
      request.stopTokenIds.push_back(id);
  }
  if (model.eosId && !boolean(body, "ignore_eos", false))
    request.stopTokenIds.push_back(*model.eosId);
}

// The fields both endpoints share: sampling, n, stop, streaming.
void readCommon(GenerationRequest &request, const Json &body, const ServedModel &model,
                int64_t defaultMaxTokens) {
  request.n = (int)integer(body, "n", 1, 1, 64);
  if (const Json *bestOf = optional(body, "best_of"))
    if (!bestOf->is_number_integer() || bestOf->get<int64_t>() != request.n)
      throw ApiError(400, "best_of other than n is not supported", "best_of");
  if (const Json *bias = optional(body, "logit_bias"))
    if (!bias->is_object() || !bias->empty())
      throw ApiError(400, "logit_bias is not supported", "logit_bias");

  kiln::SamplingParams &params = request.params;
  params.temperature = (float)number(body, "temperature", 1.0, 0.0, 2.0);
  params.top_p = (float)number(body, "top_p", 1.0, 1e-9, 1.0);
  int64_t topK = integer(body, "top_k", 0, -1, INT32_MAX);
  params.top_k = (int32_t)(topK < 0 ? 0 : topK);
  params.min_p = (float)number(body, "min_p", 0.0, 0.0, 1.0);
  params.presence_penalty = (float)number(body, "presence_penalty", 0.0, -2.0, 2.0);
  params.frequency_penalty = (float)number(body, "frequency_penalty", 0.0, -2.0, 2.0);
  params.repetition_penalty = (float)number(body, "repetition_penalty", 1.0, 1e-6, 100.0);
  if (optional(body, "seed")) {
    params.seed = (uint64_t)integer(body, "seed", 0, INT64_MIN, INT64_MAX);
    params.has_seed = 1;
  }

  const char *maxKey = optional(body, "max_completion_tokens") ? "max_completion_tokens"
                                                                : "max_tokens";
  int64_t longestPrompt = 0;
  for (const auto &ids : request.prompts)
    longestPrompt = std::max<int64_t>(longestPrompt, (int64_t)ids.size());
  int64_t room = model.maxModelLen - longestPrompt;
  if (room < 1)
    throw ApiError(400, "This model's maximum context length is " +
                            std::to_string(model.maxModelLen) + " tokens, and the prompt has " +
                            std::to_string(longestPrompt) + ": no room to generate",
                   request.chat ? "messages" : "prompt");
  int64_t maxTokens = integer(body, maxKey, std::min(defaultMaxTokens, room), 1, INT32_MAX);
  if (maxTokens > room)
    throw ApiError(400, "This model's maximum context length is " +
                            std::to_string(model.maxModelLen) + " tokens. However, you requested " +
                            std::to_string(longestPrompt + maxTokens) + " tokens (" +
                            std::to_string(longestPrompt) + " in the prompt, " +
                            std::to_string(maxTokens) + " in the completion)",
                   maxKey);
  params.max_tokens = (int32_t)maxTokens;

  readStop(request, body, model);
  request.stream = boolean(body, "stream", false);
  if (const Json *options = optional(body, "stream_options")) {
    if (!options->is_object())
      throw ApiError(400, "stream_options must be an object", "stream_options");
    if (!request.stream)
      throw ApiError(400, "stream_options is only allowed with stream", "stream_options");
    request.includeUsage = boolean(*options, "include_usage", false);
  }
  request.returnTokenIds = boolean(body, "return_token_ids", false) || !model.tokenizer;
}

} // namespace

GenerationRequest parseCompletion(const Json &body, const ServedModel &model) {
  if (!body.is_object())
    throw ApiError(400, "the body must be a JSON object");
  checkModel(body, model);
  GenerationRequest request;
  request.echo = boolean(body, "echo", false);
  readPrompts(request, body, model);
  readCommon(request, body, model, /*defaultMaxTokens=*/16);
  if (const Json *suffix = optional(body, "suffix"))
    if (!suffix->is_string() || !suffix->get<std::string>().empty())
      throw ApiError(400, "suffix is not supported", "suffix");
  request.logprobs = (int)integer(body, "logprobs", -1, 0, 20);
  return request;
}

GenerationRequest parseChat(const Json &body, const ServedModel &model) {
  if (!body.is_object())
    throw ApiError(400, "the body must be a JSON object");
  checkModel(body, model);
  GenerationRequest request;
  request.chat = true;
  const kiln::Tokenizer &tokenizer = needTokenizer(model, "chat", "messages");
  const Json *messages = optional(body, "messages");
  if (!messages || !messages->is_array() || messages->empty())
    throw ApiError(400, "messages must be a non-empty list", "messages");
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json &message = (*messages)[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string())
      throw ApiError(400, at + " must be an object with a role", at);
  }
  Json context = {{"messages", *messages},
                  {"add_generation_prompt", boolean(body, "add_generation_prompt", true)}};
  if (const Json *tools = optional(body, "tools"))
    context["tools"] = *tools;
  std::string text;
  try {
    text = tokenizer.applyChatTemplate(context.dump());
  } catch (const kiln::Error &e) {
    throw ApiError(400, e.what(), "messages");
  }
  request.prompts.push_back(tokenizer.encode(text, /*addSpecialTokens=*/false));
  request.promptTexts.push_back(text);
  readCommon(request, body, model, /*defaultMaxTokens=*/INT32_MAX);
  if (boolean(body, "logprobs", false))
    request.logprobs = (int)integer(body, "top_logprobs", 0, 0, 20);
  else if (optional(body, "top_logprobs"))
    throw ApiError(400, "top_logprobs needs logprobs: true", "top_logprobs");
  return request;
}

} // namespace kiln::serve
