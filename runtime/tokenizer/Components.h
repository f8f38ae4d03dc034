//===- Components.h - The stages of a Hugging Face tokenizer -------------===//
//
// tokenizer.json describes a pipeline, and Kiln keeps its shape:
//   added tokens are split out -> normalizer -> pre-tokenizer -> model
//   -> post-processor (special tokens),
// and for decoding, ids -> tokens -> decoder. Each stage is an interface here
// with one implementation per "type" the file can name; a type Kiln does not
// implement is refused when the file is loaded, naming its JSON path.
//
// Text stays UTF-8 bytes. Offsets are not tracked: Kiln's callers want ids
// and text, so where the Rust library consults an offset (Metaspace's
// "first" scheme) a piece carries the one fact it needs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_TOKENIZER_COMPONENTS_H
#define KILN_RUNTIME_TOKENIZER_COMPONENTS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tok {

using Json = nlohmann::json;

/// Where a component sits in the file, for error messages
/// ("tokenizer.json: pre_tokenizer.pretokenizers[1]").
struct JsonPath {
  std::string text;
  JsonPath operator/(const std::string &key) const { return {text + "." + key}; }
  JsonPath operator[](size_t index) const {
    return {text + "[" + std::to_string(index) + "]"};
  }
};

// Typed reads of a component's fields, failing with the field's path.
const Json &field(const Json &object, const char *key, const JsonPath &path);
std::string stringField(const Json &object, const char *key, const JsonPath &path);
bool boolField(const Json &object, const char *key, bool fallback, const JsonPath &path);
int64_t intField(const Json &object, const char *key, const JsonPath &path);
/// A {"String": s} or {"Regex": r} pattern, compiled.
class Regex;
std::unique_ptr<Regex> patternField(const Json &object, const JsonPath &path);
[[noreturn]] void unsupported(const std::string &kind, const std::string &type,
                              const JsonPath &path, const std::string &supported);

/// A stretch of text on its way to the model.
struct Piece {
  std::string text;
  /// Whether it begins the input (offset 0): Metaspace's "first" scheme adds
  /// its prefix only there.
  bool atStart = false;
};

class Normalizer {
public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string &text) const = 0;
};

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Splits (and may rewrite) every piece; empty pieces are dropped.
  virtual void split(std::vector<Piece> &pieces) const = 0;
};

class Model {
public:
  virtual ~Model() = default;
  /// Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<int32_t> &ids) const = 0;
  virtual std::optional<int32_t> tokenToId(std::string_view token) const = 0;
  virtual const std::string *idToToken(int32_t id) const = 0;
  virtual int32_t vocabSize() const = 0;
};

/// Token ids with the type id (segment) of each, as a model with token type
/// embeddings (BERT) takes them.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<int32_t> typeIds;
};

/// Joins the encoded sequences (the text, and the pair when there is one,
/// which arrive with type ids 0 and 1) and adds the special tokens. The
/// encodings are rewritten in place, perhaps merged into one; whatever is
/// left is concatenated. Type ids follow the processor's rules even without
/// the special tokens, as in the Rust library.
class PostProcessor {
public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<Encoding> &encodings, bool addSpecialTokens) const = 0;
};

class Decoder {
public:
  virtual ~Decoder() = default;
  /// Rewrites the token strings; the text is their concatenation.
  virtual void decode(std::vector<std::string> &tokens) const = 0;
};

std::unique_ptr<Normalizer> makeNormalizer(const Json &config, const JsonPath &path);
std::unique_ptr<PreTokenizer> makePreTokenizer(const Json &config, const JsonPath &path);
std::unique_ptr<Model> makeModel(const Json &config, const JsonPath &path);
std::unique_ptr<PostProcessor> makePostProcessor(const Json &config, const JsonPath &path);
std::unique_ptr<Decoder> makeDecoder(const Json &config, const JsonPath &path);

// Split behaviours shared by the Split, Punctuation, Digits and Metaspace
// pre-tokenizers, as the Rust library defines them.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };
SplitBehavior parseSplitBehavior(const std::string &name, const JsonPath &path);
/// Cuts `text` at the `matches` (sorted, non-overlapping) as `behavior` says;
/// with `invert`, the stretches between matches are the matches.
std::vector<std::string_view> splitAtMatches(std::string_view text,
                                             const std::vector<std::pair<size_t, size_t>> &matches,
                                             SplitBehavior behavior, bool invert);

/// GPT-2's byte-to-character table: bytes that are printable Latin-1 map to
/// themselves, the rest to U+0100 onwards, so any byte string is a string of
/// visible characters. Indexed by byte, 256 entries.
const std::string *byteLevelChars();
/// The inverse: the byte of a character of that table, or -1.
int byteLevelByte(char32_t c);

} // namespace kiln::tok

#endif
