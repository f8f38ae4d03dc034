// Kiln tokenizer C++ wrapper: RAII handles over kiln_tokenizer_* and
// kiln_detokenizer_*, with failures thrown as kiln::Error. Thread safety is
// that of the C API (tokenizer.h).
#ifndef KILN_TOKENIZER_HPP
#define KILN_TOKENIZER_HPP

#include "kiln/runtime.hpp"
#include "kiln/tokenizer.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

namespace detail {
inline std::string takeText(kiln_text_t &text) {
  std::string result(text.data ? text.data : "", text.length);
  kiln_text_free(&text);
  return result;
}
} // namespace detail

class Tokenizer {
public:
  explicit Tokenizer(const std::string &path) {
    kiln_tokenizer_t *tokenizer = nullptr;
    check(kiln_tokenizer_load(path.c_str(), &tokenizer));
    handle_.reset(tokenizer);
  }
  const kiln_tokenizer_t *get() const { return handle_.get(); }

  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens = true) const {
    kiln_token_ids_t ids = {};
    check(kiln_tokenizer_encode(get(), text.data(), text.size(), addSpecialTokens, &ids));
    std::vector<int32_t> result(ids.ids, ids.ids + ids.count);
    kiln_token_ids_free(&ids);
    return result;
  }
  /// Ids and type ids (token_type_ids) of a text and, optionally, its pair
  /// (see kiln_tokenizer_encode_pair).
  struct Encoding {
    std::vector<int32_t> ids, typeIds;
  };
  Encoding encodePair(std::string_view text, std::optional<std::string_view> pair,
                      bool addSpecialTokens = true) const {
    kiln_encoding_t encoding = {};
    check(kiln_tokenizer_encode_pair(get(), text.data(), text.size(),
                                     // An empty pair is still a pair: never NULL.
                                     pair ? (pair->data() ? pair->data() : "") : nullptr,
                                     pair ? pair->size() : 0,
                                     addSpecialTokens, &encoding));
    Encoding result{{encoding.ids, encoding.ids + encoding.count},
                    {encoding.type_ids, encoding.type_ids + encoding.count}};
    kiln_encoding_free(&encoding);
    return result;
  }
  std::string decode(const std::vector<int32_t> &ids, bool skipSpecialTokens = false) const {
    kiln_text_t text = {};
    check(kiln_tokenizer_decode(get(), ids.data(), ids.size(), skipSpecialTokens, &text));
    return detail::takeText(text);
  }
  /// The chat template rendered over `contextJson` (see
  /// kiln_tokenizer_apply_chat_template).
  std::string applyChatTemplate(const std::string &contextJson) const {
    kiln_text_t text = {};
    check(kiln_tokenizer_apply_chat_template(get(), contextJson.c_str(), &text));
    return detail::takeText(text);
  }
  int32_t vocabSize() const { return kiln_tokenizer_vocab_size(get()); }
  std::optional<int32_t> tokenToId(const std::string &token) const {
    int32_t id = kiln_tokenizer_token_to_id(get(), token.c_str());
    return id < 0 ? std::nullopt : std::optional<int32_t>(id);
  }
  std::optional<std::string> idToToken(int32_t id) const {
    const char *token = kiln_tokenizer_id_to_token(get(), id);
    return token ? std::optional<std::string>(token) : std::nullopt;
  }
  bool isSpecial(int32_t id) const { return kiln_tokenizer_is_special(get(), id) != 0; }
  std::optional<int32_t> bosId() const { return optionalId(kiln_tokenizer_bos_id(get())); }
  std::optional<int32_t> eosId() const { return optionalId(kiln_tokenizer_eos_id(get())); }

private:
  static std::optional<int32_t> optionalId(int32_t id) {
    return id < 0 ? std::nullopt : std::optional<int32_t>(id);
  }
  struct Release {
    void operator()(kiln_tokenizer_t *p) const { kiln_tokenizer_release(p); }
  };
  std::unique_ptr<kiln_tokenizer_t, Release> handle_;
};

class Detokenizer {
public:
  Detokenizer(const Tokenizer &tokenizer, const std::vector<int32_t> &context = {},
              bool skipSpecialTokens = false) {
    kiln_detokenizer_t *detokenizer = nullptr;
    check(kiln_detokenizer_create(tokenizer.get(), context.data(), context.size(),
                                  skipSpecialTokens, &detokenizer));
    handle_.reset(detokenizer);
  }
  std::string push(int32_t id) { return push(std::vector<int32_t>{id}); }
  std::string push(const std::vector<int32_t> &ids) {
    kiln_text_t text = {};
    check(kiln_detokenizer_push(handle_.get(), ids.data(), ids.size(), &text));
    return detail::takeText(text);
  }
  std::string finish() {
    kiln_text_t text = {};
    check(kiln_detokenizer_finish(handle_.get(), &text));
    return detail::takeText(text);
  }

private:
  struct Release {
    void operator()(kiln_detokenizer_t *p) const { kiln_detokenizer_release(p); }
  };
  std::unique_ptr<kiln_detokenizer_t, Release> handle_;
};

} // namespace kiln

#endif // KILN_TOKENIZER_HPP
