// The kiln_tokenizer_* and kiln_detokenizer_* C API over kiln::tok. No C++
// exception crosses it.
#include "kiln/tokenizer.h"

#include "Tokenizer.h"
#include "TokenizerError.h"

#include "runtime/src/Status.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

using kiln::rt::guarded;
using kiln::rt::makeStatus;
using kiln::tok::IncrementalDecoder;
using kiln::tok::NoChatTemplate;
using kiln::tok::Tokenizer;
using kiln::tok::TokenizerError;

struct kiln_tokenizer_s {
  std::unique_ptr<Tokenizer> tokenizer;
  int32_t bosId = -1, eosId = -1;
};

struct kiln_detokenizer_s {
  std::unique_ptr<IncrementalDecoder> decoder;
};

namespace {

// A tokenizer error is the caller's input (a file, text or id): an invalid
// argument; anything else is handled as every C API call handles it.
template <typename Body>
kiln_status_t tokenizerCall(const char *function, Body body) {
  return guarded(function, [&]() -> kiln_status_t {
    try {
      return body();
    } catch (const NoChatTemplate &e) {
      return makeStatus(KILN_STATUS_FAILED_PRECONDITION, e.what());
    } catch (const TokenizerError &e) {
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT, e.what());
    }
  });
}

kiln_status_t missing(const char *function, const char *what) {
  return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                    std::string(function) + ": " + what + " is NULL");
}

void setText(const std::string &text, kiln_text_t *out) {
  out->data = static_cast<char *>(std::malloc(text.size() + 1));
  if (!out->data)
    throw std::bad_alloc();
  std::memcpy(out->data, text.data(), text.size());
  out->data[text.size()] = '\0';
  out->length = text.size();
}

// A malloc'd copy the caller frees (never NULL, even for no ids).
int32_t *copyIds(const std::vector<int32_t> &ids) {
  auto *copy = static_cast<int32_t *>(std::malloc(std::max<size_t>(ids.size(), 1) * sizeof(int32_t)));
  if (!copy)
    throw std::bad_alloc();
  std::copy(ids.begin(), ids.end(), copy);
  return copy;
}

int32_t idOrMinusOne(const Tokenizer &tokenizer, const std::optional<std::string> &token) {
  if (!token)
    return -1;
  return tokenizer.tokenToId(*token).value_or(-1);
}

} // namespace

extern "C" {

void kiln_token_ids_free(kiln_token_ids_t *ids) {
  if (!ids)
    return;
  std::free(ids->ids);
  ids->ids = nullptr;
  ids->count = 0;
}

void kiln_encoding_free(kiln_encoding_t *encoding) {
  if (!encoding)
    return;
  std::free(encoding->ids);
  std::free(encoding->type_ids);
  *encoding = {};
}

void kiln_text_free(kiln_text_t *text) {
  if (!text)
    return;
  std::free(text->data);
  text->data = nullptr;
  text->length = 0;
}

kiln_status_t kiln_tokenizer_load(const char *path, kiln_tokenizer_t **out) {
  if (!path || !out)
    return missing("kiln_tokenizer_load", path ? "out" : "path");
  *out = nullptr;
  return tokenizerCall("kiln_tokenizer_load", [&]() -> kiln_status_t {
    auto handle = std::make_unique<kiln_tokenizer_s>();
    handle->tokenizer = Tokenizer::load(path);
    handle->bosId = idOrMinusOne(*handle->tokenizer, handle->tokenizer->config().bosToken);
    handle->eosId = idOrMinusOne(*handle->tokenizer, handle->tokenizer->config().eosToken);
    *out = handle.release();
    return nullptr;
  });
}

void kiln_tokenizer_release(kiln_tokenizer_t *tokenizer) { delete tokenizer; }

kiln_status_t kiln_tokenizer_encode(const kiln_tokenizer_t *tokenizer, const char *text,
                                    size_t length, int add_special_tokens,
                                    kiln_token_ids_t *out) {
  if (!tokenizer || !out || (!text && length))
    return missing("kiln_tokenizer_encode", !tokenizer ? "tokenizer" : !out ? "out" : "text");
  *out = {};
  return tokenizerCall("kiln_tokenizer_encode", [&]() -> kiln_status_t {
    std::vector<int32_t> ids = tokenizer->tokenizer->encode(
        std::string_view(text ? text : "", length), add_special_tokens != 0);
    out->ids = copyIds(ids);
    out->count = ids.size();
    return nullptr;
  });
}

kiln_status_t kiln_tokenizer_encode_pair(const kiln_tokenizer_t *tokenizer, const char *text,
                                         size_t length, const char *pair, size_t pair_length,
                                         int add_special_tokens, kiln_encoding_t *out) {
  if (!tokenizer || !out || (!text && length))
    return missing("kiln_tokenizer_encode_pair",
                   !tokenizer ? "tokenizer" : !out ? "out" : "text");
  *out = {};
  return tokenizerCall("kiln_tokenizer_encode_pair", [&]() -> kiln_status_t {
    std::optional<std::string_view> second;
    if (pair)
      second = std::string_view(pair, pair_length);
    kiln::tok::Encoding encoding = tokenizer->tokenizer->encode(
        std::string_view(text ? text : "", length), second, add_special_tokens != 0);
    kiln_encoding_t result = {};
    result.count = encoding.ids.size();
    try {
      result.ids = copyIds(encoding.ids);
      result.type_ids = copyIds(encoding.typeIds);
    } catch (...) {
      kiln_encoding_free(&result);
      throw;
    }
    *out = result;
    return nullptr;
  });
}

kiln_status_t kiln_tokenizer_decode(const kiln_tokenizer_t *tokenizer, const int32_t *ids,
                                    size_t count, int skip_special_tokens, kiln_text_t *out) {
  if (!tokenizer || !out || (!ids && count))
    return missing("kiln_tokenizer_decode", !tokenizer ? "tokenizer" : !out ? "out" : "ids");
  *out = {};
  return tokenizerCall("kiln_tokenizer_decode", [&]() -> kiln_status_t {
    setText(tokenizer->tokenizer->decode(std::vector<int32_t>(ids, ids + count),
                                         skip_special_tokens != 0),
            out);
    return nullptr;
  });
}

int32_t kiln_tokenizer_vocab_size(const kiln_tokenizer_t *tokenizer) {
  return tokenizer ? tokenizer->tokenizer->vocabSize() : 0;
}

int32_t kiln_tokenizer_token_to_id(const kiln_tokenizer_t *tokenizer, const char *token) {
  if (!tokenizer || !token)
    return -1;
  return tokenizer->tokenizer->tokenToId(token).value_or(-1);
}

const char *kiln_tokenizer_id_to_token(const kiln_tokenizer_t *tokenizer, int32_t id) {
  if (!tokenizer)
    return nullptr;
  const std::string *token = tokenizer->tokenizer->idToToken(id);
  return token ? token->c_str() : nullptr;
}

int kiln_tokenizer_is_special(const kiln_tokenizer_t *tokenizer, int32_t id) {
  return tokenizer && tokenizer->tokenizer->isSpecial(id);
}

int32_t kiln_tokenizer_bos_id(const kiln_tokenizer_t *tokenizer) {
  return tokenizer ? tokenizer->bosId : -1;
}

int32_t kiln_tokenizer_eos_id(const kiln_tokenizer_t *tokenizer) {
  return tokenizer ? tokenizer->eosId : -1;
}

kiln_status_t kiln_tokenizer_apply_chat_template(const kiln_tokenizer_t *tokenizer,
                                                 const char *context_json, kiln_text_t *out) {
  if (!tokenizer || !context_json || !out)
    return missing("kiln_tokenizer_apply_chat_template",
                   !tokenizer ? "tokenizer" : !out ? "out" : "context_json");
  *out = {};
  return tokenizerCall("kiln_tokenizer_apply_chat_template", [&]() -> kiln_status_t {
    auto context = nlohmann::ordered_json::parse(context_json, nullptr, false);
    if (context.is_discarded())
      throw TokenizerError("the chat template's context is not valid JSON");
    setText(tokenizer->tokenizer->applyChatTemplate(std::move(context)), out);
    return nullptr;
  });
}

kiln_status_t kiln_detokenizer_create(const kiln_tokenizer_t *tokenizer,
                                      const int32_t *context_ids, size_t context_count,
                                      int skip_special_tokens, kiln_detokenizer_t **out) {
  if (!tokenizer || !out || (!context_ids && context_count))
    return missing("kiln_detokenizer_create",
                   !tokenizer ? "tokenizer" : !out ? "out" : "context_ids");
  *out = nullptr;
  return tokenizerCall("kiln_detokenizer_create", [&]() -> kiln_status_t {
    auto handle = std::make_unique<kiln_detokenizer_s>();
    handle->decoder = std::make_unique<IncrementalDecoder>(
        *tokenizer->tokenizer, std::vector<int32_t>(context_ids, context_ids + context_count),
        skip_special_tokens != 0);
    *out = handle.release();
    return nullptr;
  });
}

void kiln_detokenizer_release(kiln_detokenizer_t *detokenizer) { delete detokenizer; }

kiln_status_t kiln_detokenizer_push(kiln_detokenizer_t *detokenizer, const int32_t *ids,
                                    size_t count, kiln_text_t *out) {
  if (!detokenizer || !out || (!ids && count))
    return missing("kiln_detokenizer_push",
                   !detokenizer ? "detokenizer" : !out ? "out" : "ids");
  *out = {};
  return tokenizerCall("kiln_detokenizer_push", [&]() -> kiln_status_t {
    setText(detokenizer->decoder->push(std::vector<int32_t>(ids, ids + count)), out);
    return nullptr;
  });
}

kiln_status_t kiln_detokenizer_finish(kiln_detokenizer_t *detokenizer, kiln_text_t *out) {
  if (!detokenizer || !out)
    return missing("kiln_detokenizer_finish", !detokenizer ? "detokenizer" : "out");
  *out = {};
  return tokenizerCall("kiln_detokenizer_finish", [&]() -> kiln_status_t {
    setText(detokenizer->decoder->finish(), out);
    return nullptr;
  });
}

} // extern "C"
