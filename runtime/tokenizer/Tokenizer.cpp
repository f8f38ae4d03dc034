#include "Tokenizer.h"

#include "TokenizerError.h"
#include "Unicode.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace kiln::tok {

//===----------------------------------------------------------------------===//
// Added tokens
//===----------------------------------------------------------------------===//

void AddedTokenMatcher::add(const std::string &content, const AddedToken *token) {
  if (content.empty())
    return;
  auto &candidates = byFirstByte_[(unsigned char)content[0]];
  candidates.emplace_back(content, token);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto &a, const auto &b) { return a.first.size() > b.first.size(); });
}

namespace {

bool isWordChar(char32_t c) { return c == '_' || isAlphanumeric(c); }

// The code point that ends text[0, end).
char32_t codePointBefore(std::string_view text, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && ((unsigned char)text[begin] & 0xC0) == 0x80)
    --begin;
  size_t length;
  return codePointAt(text, begin, length);
}

} // namespace

std::vector<AddedTokenMatcher::Match> AddedTokenMatcher::find(std::string_view text) const {
  std::vector<Match> matches;
  if (byFirstByte_.empty())
    return matches;
  size_t consumed = 0; // the end of the previous match, stripping included
  for (size_t pos = 0; pos < text.size();) {
    auto candidates = byFirstByte_.find((unsigned char)text[pos]);
    const std::pair<std::string, const AddedToken *> *hit = nullptr;
    if (candidates != byFirstByte_.end())
      for (const auto &candidate : candidates->second)
        if (text.compare(pos, candidate.first.size(), candidate.first) == 0) {
          hit = &candidate;
          break;
        }
    if (!hit) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + hit->first.size();
    pos = end;
    const AddedToken &token = *hit->second;
    if (token.singleWord) {
      size_t length;
      bool wordBefore = begin > 0 && isWordChar(codePointBefore(text, begin));
      bool wordAfter = end < text.size() && isWordChar(codePointAt(text, end, length));
      if (wordBefore || wordAfter)
        continue;
    }
    if (token.lstrip) {
      while (begin > consumed && isWhitespace(codePointBefore(text, begin))) {
        size_t previous = begin - 1;
        while (previous > 0 && ((unsigned char)text[previous] & 0xC0) == 0x80)
          --previous;
        begin = previous;
      }
    }
    if (token.rstrip) {
      size_t length;
      while (end < text.size() && isWhitespace(codePointAt(text, end, length)))
        end += length;
      pos = end;
    }
    matches.push_back({begin, end, &token});
    consumed = end;
  }
  return matches;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

namespace {

bool isDirectory(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::optional<Json> readJson(const std::string &path, bool required) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    if (!required)
      return std::nullopt;
    throw TokenizerError(path + ": cannot open");
  }
  std::stringstream contents;
  contents << file.rdbuf();
  try {
    return Json::parse(contents.str());
  } catch (const Json::parse_error &error) {
    throw TokenizerError(path + ": not JSON: " + error.what());
  }
}

// tokenizer_config.json names special tokens as a string or as an added-token
// object with a "content".
std::optional<std::string> tokenName(const Json &config, const char *key,
                                     const std::string &file) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null())
    return std::nullopt;
  if (it->is_string())
    return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  throw TokenizerError(file + ": " + key + ": expected a string or {\"content\": ...}");
}

TokenizerConfig readConfig(const Json &config, const std::string &file) {
  TokenizerConfig result;
  result.bosToken = tokenName(config, "bos_token", file);
  result.eosToken = tokenName(config, "eos_token", file);
  result.unkToken = tokenName(config, "unk_token", file);
  result.padToken = tokenName(config, "pad_token", file);
  auto chat = config.find("chat_template");
  if (chat != config.end() && !chat->is_null()) {
    if (chat->is_string()) {
      result.chatTemplates["default"] = chat->get<std::string>();
    } else if (chat->is_array()) {
      // Several named templates, [{"name": ..., "template": ...}, ...].
      for (size_t i = 0; i < chat->size(); ++i) {
        const Json &entry = (*chat)[i];
        std::string at = file + ": chat_template[" + std::to_string(i) + "]";
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
            !entry.contains("template") || !entry["template"].is_string())
          throw TokenizerError(at + ": expected {\"name\": string, \"template\": string}");
        result.chatTemplates[entry["name"].get<std::string>()] =
            entry["template"].get<std::string>();
      }
    } else {
      throw TokenizerError(file + ": chat_template: expected a string or a list");
    }
  }
  return result;
}

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string &path) {
  std::string tokenizerFile = path, configFile;
  if (isDirectory(path)) {
    tokenizerFile = path + "/tokenizer.json";
    configFile = path + "/tokenizer_config.json";
  } else {
    size_t slash = path.find_last_of('/');
    configFile = (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) +
                 "tokenizer_config.json";
  }
  Json json = *readJson(tokenizerFile, true);
  if (!json.is_object())
    throw TokenizerError(tokenizerFile + ": expected a JSON object");
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer);
  auto part = [&](const char *key) -> const Json & {
    static const Json null;
    auto it = json.find(key);
    return it == json.end() ? null : *it;
  };
  auto at = [&](const char *key) { return JsonPath{tokenizerFile + ": " + key}; };
  tokenizer->normalizer_ = makeNormalizer(part("normalizer"), at("normalizer"));
  tokenizer->preTokenizer_ = makePreTokenizer(part("pre_tokenizer"), at("pre_tokenizer"));
  tokenizer->model_ = makeModel(part("model"), at("model"));
  tokenizer->postProcessor_ = makePostProcessor(part("post_processor"), at("post_processor"));
  tokenizer->decoder_ = makeDecoder(part("decoder"), at("decoder"));
  tokenizer->loadAddedTokens(part("added_tokens"), at("added_tokens"));
  if (std::optional<Json> config = readJson(configFile, false))
    tokenizer->config_ = readConfig(*config, configFile);
  // A template outside the supported subset does not stop the tokenizer from
  // encoding; rendering it reports why.
  tokenizer->configFile_ = configFile;
  for (const auto &[name, source] : tokenizer->config_.chatTemplates) {
    NamedChatTemplate &named = tokenizer->chatTemplates_[name];
    try {
      named.parsed = std::make_unique<ChatTemplate>(source);
    } catch (const TokenizerError &error) {
      named.error = configFile + ": chat_template" +
                    (tokenizer->config_.chatTemplates.size() > 1 ? " '" + name + "'" : "") +
                    ": " + error.what();
    }
  }
  return tokenizer;
}

void Tokenizer::loadAddedTokens(const Json &list, const JsonPath &path) {
  if (list.is_null())
    return;
  if (!list.is_array())
    throw TokenizerError(path.text + ": expected a list");
  addedTokens_.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    JsonPath at = path[i];
    AddedToken token;
    int64_t id = intField(list[i], "id", at);
    if (id < 0 || id > INT32_MAX)
      throw TokenizerError((at / "id").text + ": out of range");
    token.id = (int32_t)id;
    token.content = stringField(list[i], "content", at);
    if (token.content.empty())
      throw TokenizerError((at / "content").text + ": empty");
    token.singleWord = boolField(list[i], "single_word", false, at);
    token.lstrip = boolField(list[i], "lstrip", false, at);
    token.rstrip = boolField(list[i], "rstrip", false, at);
    token.special = boolField(list[i], "special", false, at);
    token.normalized = boolField(list[i], "normalized", !token.special, at);
    addedTokens_.push_back(std::move(token));
  }
  for (const AddedToken &token : addedTokens_) {
    addedById_[token.id] = &token;
    addedByContent_[token.content] = &token;
    if (!token.normalized) {
      rawMatcher_.add(token.content, &token);
      continue;
    }
    std::string normalized = token.content;
    if (normalizer_)
      normalizer_->normalize(normalized);
    normalizedMatcher_.add(normalized, &token);
  }
}

//===----------------------------------------------------------------------===//
// Encoding and decoding
//===----------------------------------------------------------------------===//

void Tokenizer::encodeText(std::string_view text, bool atStart,
                           std::vector<int32_t> &ids) const {
  std::vector<Piece> pieces;
  pieces.push_back({std::string(text), atStart});
  if (preTokenizer_)
    preTokenizer_->split(pieces);
  for (const Piece &piece : pieces)
    if (!piece.text.empty())
      model_->tokenize(piece.text, ids);
}

std::vector<int32_t> Tokenizer::encodeSequence(std::string_view text, const char *which) const {
  size_t bad = firstInvalidUtf8(text);
  if (bad != text.size())
    throw TokenizerError(std::string(which) + " is not valid UTF-8 at byte " +
                         std::to_string(bad));
  std::vector<int32_t> ids;
  // Each stretch between raw added tokens is normalized, then searched for
  // the normalized added tokens, and what remains goes to the model.
  auto encodeStretch = [&](std::string_view stretch, bool atStart) {
    std::string normalized(stretch);
    if (normalizer_)
      normalizer_->normalize(normalized);
    size_t previous = 0;
    for (const auto &match : normalizedMatcher_.find(normalized)) {
      if (match.begin > previous)
        encodeText(std::string_view(normalized).substr(previous, match.begin - previous),
                   atStart && previous == 0, ids);
      ids.push_back(match.token->id);
      previous = match.end;
    }
    if (previous < normalized.size())
      encodeText(std::string_view(normalized).substr(previous), atStart && previous == 0,
                 ids);
  };
  size_t previous = 0;
  for (const auto &match : rawMatcher_.find(text)) {
    if (match.begin > previous)
      encodeStretch(text.substr(previous, match.begin - previous), previous == 0);
    ids.push_back(match.token->id);
    previous = match.end;
  }
  if (previous < text.size())
    encodeStretch(text.substr(previous), previous == 0);
  return ids;
}

Encoding Tokenizer::encode(std::string_view text, std::optional<std::string_view> pair,
                           bool addSpecialTokens) const {
  // The sequences enter the post-processor with type ids 0 and 1.
  std::vector<Encoding> encodings;
  encodings.reserve(2);
  encodings.push_back({encodeSequence(text, "text"), {}});
  if (pair)
    encodings.push_back({encodeSequence(*pair, "pair"), {}});
  for (size_t i = 0; i < encodings.size(); ++i)
    encodings[i].typeIds.assign(encodings[i].ids.size(), (int32_t)i);
  if (postProcessor_)
    postProcessor_->process(encodings, addSpecialTokens);
  Encoding joined = std::move(encodings[0]);
  for (size_t i = 1; i < encodings.size(); ++i) {
    joined.ids.insert(joined.ids.end(), encodings[i].ids.begin(), encodings[i].ids.end());
    joined.typeIds.insert(joined.typeIds.end(), encodings[i].typeIds.begin(),
                          encodings[i].typeIds.end());
  }
  return joined;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecialTokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    auto added = addedById_.find(id);
    if (added != addedById_.end()) {
      if (!(skipSpecialTokens && added->second->special))
        tokens.push_back(added->second->content);
      continue;
    }
    tokens.push_back(tokenOf(id));
  }
  if (!decoder_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i)
      joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  decoder_->decode(tokens);
  std::string text;
  for (const std::string &token : tokens)
    text += token;
  return text;
}

const std::string &Tokenizer::tokenOf(int32_t id) const {
  const std::string *token = idToToken(id);
  if (!token)
    throw TokenizerError("token id " + std::to_string(id) + " is not in the vocabulary (" +
                         std::to_string(vocabSize()) + " ids)");
  return *token;
}

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  auto added = addedByContent_.find(std::string(token));
  if (added != addedByContent_.end())
    return added->second->id;
  return model_->tokenToId(token);
}

const std::string *Tokenizer::idToToken(int32_t id) const {
  auto added = addedById_.find(id);
  if (added != addedById_.end())
    return &added->second->content;
  return model_->idToToken(id);
}

bool Tokenizer::isSpecial(int32_t id) const {
  auto added = addedById_.find(id);
  return added != addedById_.end() && added->second->special;
}

int32_t Tokenizer::vocabSize() const {
  int32_t size = model_->vocabSize();
  for (const AddedToken &token : addedTokens_)
    size = std::max(size, token.id + 1);
  return size;
}

std::string Tokenizer::applyChatTemplate(nlohmann::ordered_json context) const {
  if (chatTemplates_.empty())
    throw NoChatTemplate("the tokenizer has no chat template (" + configFile_ + " names none)");
  if (!context.is_object())
    throw TokenizerError("the chat template's context must be a JSON object");
  // As transformers chooses among named templates: "tool_use" when the
  // request brings tools and there is one, else "default".
  auto tools = context.find("tools");
  bool withTools = tools != context.end() && !tools->is_null();
  auto chosen = chatTemplates_.end();
  if (withTools)
    chosen = chatTemplates_.find("tool_use");
  if (chosen == chatTemplates_.end())
    chosen = chatTemplates_.find("default");
  if (chosen == chatTemplates_.end()) {
    std::string names;
    for (const auto &named : chatTemplates_)
      names += (names.empty() ? "'" : ", '") + named.first + "'";
    throw NoChatTemplate(configFile_ + ": chat_template has several templates (" + names +
                         ") and none is named 'default'" +
                         (withTools ? " or 'tool_use'" : ""));
  }
  if (!chosen->second.parsed)
    throw NoChatTemplate(chosen->second.error);
  context["bos_token"] = config_.bosToken.value_or("");
  context["eos_token"] = config_.eosToken.value_or("");
  try {
    return chosen->second.parsed->render(context);
  } catch (const TokenizerError &error) {
    throw TokenizerError(std::string("chat template: ") + error.what());
  }
}

//===----------------------------------------------------------------------===//
// Incremental decoding
//===----------------------------------------------------------------------===//

namespace {
// vLLM's window: a few context tokens before the first new one are enough to
// give it the spacing it has in the whole text.
constexpr size_t kContextWindow = 5;

bool endsWithReplacement(const std::string &text) {
  return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
} // namespace

IncrementalDecoder::IncrementalDecoder(const Tokenizer &tokenizer,
                                       const std::vector<int32_t> &context,
                                       bool skipSpecialTokens)
    : tokenizer_(tokenizer),
      ids_(context.end() - std::min(context.size(), kContextWindow), context.end()),
      prefixOffset_(0), readOffset_(ids_.size()), skipSpecialTokens_(skipSpecialTokens) {
  // A bad context id fails here, not at the first push.
  for (int32_t id : context)
    tokenizer_.tokenOf(id);
}

std::string IncrementalDecoder::push(const std::vector<int32_t> &ids) {
  // Decoding checks the ids, so a bad one leaves the decoder as it was.
  std::vector<int32_t> window(ids_.begin() + prefixOffset_, ids_.end());
  window.insert(window.end(), ids.begin(), ids.end());
  std::string text = tokenizer_.decode(window, skipSpecialTokens_);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  std::string prefix = tokenizer_.decode(
      std::vector<int32_t>(ids_.begin() + prefixOffset_, ids_.begin() + readOffset_),
      skipSpecialTokens_);
  if (text.size() <= prefix.size() || endsWithReplacement(text) ||
      text.compare(0, prefix.size(), prefix) != 0)
    return {};
  prefixOffset_ = readOffset_;
  readOffset_ = ids_.size();
  return text.substr(prefix.size());
}

std::string IncrementalDecoder::finish() {
  std::string text = tokenizer_.decode(
      std::vector<int32_t>(ids_.begin() + prefixOffset_, ids_.end()), skipSpecialTokens_);
  std::string prefix = tokenizer_.decode(
      std::vector<int32_t>(ids_.begin() + prefixOffset_, ids_.begin() + readOffset_),
      skipSpecialTokens_);
  prefixOffset_ = readOffset_ = ids_.size();
  if (text.size() <= prefix.size() || text.compare(0, prefix.size(), prefix) != 0)
    return {};
  return text.substr(prefix.size());
}

} // namespace kiln::tok
