//===- Tokenizer.h - A Hugging Face tokenizer.json, read and run ----------===//
//
// The whole pipeline of the Rust `tokenizers` library, for encoding text to
// ids and decoding ids to text, with no Python at run time. Loaded once, a
// Tokenizer is immutable (its BPE word cache aside, which locks) and is used
// from any number of threads.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_TOKENIZER_TOKENIZER_H
#define KILN_RUNTIME_TOKENIZER_TOKENIZER_H

#include "ChatTemplate.h"
#include "Components.h"
#include "TokenizerError.h"

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool singleWord = false, lstrip = false, rstrip = false;
  bool normalized = false, special = false;
};

/// Finds added tokens in text: leftmost-longest, then each token's
/// single-word and whitespace-stripping rules.
class AddedTokenMatcher {
public:
  void add(const std::string &content, const AddedToken *token);
  bool empty() const { return byFirstByte_.empty(); }
  struct Match {
    size_t begin, end; // the stripped whitespace included
    const AddedToken *token;
  };
  std::vector<Match> find(std::string_view text) const;

private:
  // Candidates by first byte, longest first.
  std::unordered_map<unsigned char, std::vector<std::pair<std::string, const AddedToken *>>>
      byFirstByte_;
};

struct TokenizerConfig {
  std::optional<std::string> bosToken, eosToken, unkToken, padToken;
  /// The chat templates by name; a lone template is named "default".
  std::map<std::string, std::string> chatTemplates;
};

class Tokenizer {
public:
  /// Reads `path`: a tokenizer.json, or a directory holding one (and,
  /// optionally, tokenizer_config.json beside it).
  static std::unique_ptr<Tokenizer> load(const std::string &path);

  /// `text` must be UTF-8; the error names the first bad byte's offset.
  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens) const {
    return encode(text, std::nullopt, addSpecialTokens).ids;
  }
  /// A sequence and, optionally, its pair (a question and a passage, say),
  /// joined by the post-processor, with each token's type id. The error for
  /// bad UTF-8 names the sequence and the byte.
  Encoding encode(std::string_view text, std::optional<std::string_view> pair,
                  bool addSpecialTokens) const;
  /// Ids outside the vocabulary are an error naming the id.
  std::string decode(const std::vector<int32_t> &ids, bool skipSpecialTokens) const;
  /// The token of `id`, or the error decode gives for an id outside the
  /// vocabulary.
  const std::string &tokenOf(int32_t id) const;

  std::optional<int32_t> tokenToId(std::string_view token) const;
  const std::string *idToToken(int32_t id) const;
  bool isSpecial(int32_t id) const;
  /// One past the largest id of the model and the added tokens.
  int32_t vocabSize() const;
  const TokenizerConfig &config() const { return config_; }
  /// The chat template over `context` (messages, add_generation_prompt,
  /// tools), with bos_token and eos_token from the config. Of several named
  /// templates, "tool_use" serves a context with tools when there is one,
  /// and "default" serves the rest, as in transformers. Throws
  /// NoChatTemplate when there is none, or it is outside the supported
  /// subset; TokenizerError when it refuses the messages.
  /// The context is ordered: a template that prints a tool's schema prints
  /// its keys in the order the request gave them.
  std::string applyChatTemplate(nlohmann::ordered_json context) const;

private:
  Tokenizer() = default;
  void loadAddedTokens(const Json &list, const JsonPath &path);
  void encodeText(std::string_view text, bool atStart, std::vector<int32_t> &ids) const;
  /// One sequence's ids, before post-processing.
  std::vector<int32_t> encodeSequence(std::string_view text, const char *which) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> preTokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> postProcessor_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<AddedToken> addedTokens_;
  std::unordered_map<int32_t, const AddedToken *> addedById_;
  std::unordered_map<std::string, const AddedToken *> addedByContent_;
  AddedTokenMatcher rawMatcher_;        // matched before normalization
  AddedTokenMatcher normalizedMatcher_; // matched in normalized text
  TokenizerConfig config_;
  struct NamedChatTemplate {
    std::unique_ptr<ChatTemplate> parsed;
    std::string error; // why it could not be parsed
  };
  std::map<std::string, NamedChatTemplate> chatTemplates_;
  std::string configFile_; // tokenizer_config.json, for errors
};

/// The tokenizer has no chat template Kiln can render.
class NoChatTemplate : public TokenizerError {
public:
  using TokenizerError::TokenizerError;
};

/// Turns ids into text as they arrive, never splitting a character: a token
/// whose text would end in an incomplete UTF-8 sequence (decoded as U+FFFD)
/// waits for the next. The text is the difference between decoding a short
/// window that ends with the new ids and the same window without them, as
/// vLLM's detokenizer does, so each call costs the same however long the
/// sequence; the context ids (the prompt) give the first new token its
/// leading space. Only the end of the context that the window reaches is
/// kept, but every context id is checked.
class IncrementalDecoder {
public:
  IncrementalDecoder(const Tokenizer &tokenizer, const std::vector<int32_t> &context,
                     bool skipSpecialTokens);
  /// The text that the new ids complete (possibly empty).
  std::string push(const std::vector<int32_t> &ids);
  /// Whatever is still held back (an incomplete character at the very end
  /// comes out as U+FFFD, as a full decode gives it).
  std::string finish();

private:
  const Tokenizer &tokenizer_;
  std::vector<int32_t> ids_;
  size_t prefixOffset_, readOffset_;
  bool skipSpecialTokens_;
};

} // namespace kiln::tok

#endif
