//===- PreTokenizers.cpp - tokenizer.json "pre_tokenizer" types -----------===//
#include "Components.h"

#include "Regex.h"
#include "TokenizerError.h"
#include "Unicode.h"

namespace kiln::tok {

namespace {

// Runs `cut` on every piece and keeps the non-empty parts in order; a part
// begins the input only if it is the first part of a piece that did.
template <typename Cut>
void splitEach(std::vector<Piece> &pieces, const Cut &cut) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece &piece : pieces) {
    for (std::string_view part : cut(std::string_view(piece.text))) {
      if (part.empty())
        continue;
      bool atStart = piece.atStart && part.data() == piece.text.data();
      out.push_back({std::string(part), atStart});
    }
  }
  pieces = std::move(out);
}

// Each code point for which `predicate` holds is a match of its own, as a
// Rust `Fn(char) -> bool` pattern is.
template <typename Predicate>
std::vector<Span> charMatches(std::string_view text, const Predicate &predicate) {
  std::vector<Span> matches;
  for (size_t pos = 0, length; pos < text.size(); pos += length)
    if (predicate(codePointAt(text, pos, length)))
      matches.emplace_back(pos, pos + length);
  return matches;
}

const Regex &gpt2Pattern() {
  static const Regex pattern(
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)",
      false, "ByteLevel pre-tokenizer");
  return pattern;
}

class ByteLevel : public PreTokenizer {
public:
  ByteLevel(bool addPrefixSpace, bool useRegex)
      : addPrefixSpace_(addPrefixSpace), useRegex_(useRegex) {}
  void split(std::vector<Piece> &pieces) const override {
    if (addPrefixSpace_)
      for (Piece &piece : pieces)
        if (!piece.text.empty() && piece.text[0] != ' ')
          piece.text.insert(0, " ");
    if (useRegex_)
      splitEach(pieces, [](std::string_view text) {
        return splitAtMatches(text, gpt2Pattern().findAll(text),
                              SplitBehavior::Isolated, false);
      });
    const std::string *charOfByte = byteLevelChars();
    for (Piece &piece : pieces) {
      std::string mapped;
      mapped.reserve(piece.text.size() * 2);
      for (unsigned char byte : piece.text)
        mapped += charOfByte[byte];
      piece.text = std::move(mapped);
    }
  }

private:
  bool addPrefixSpace_, useRegex_;
};

class Split : public PreTokenizer {
public:
  Split(std::unique_ptr<Regex> pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void split(std::vector<Piece> &pieces) const override {
    splitEach(pieces, [&](std::string_view text) {
      return splitAtMatches(text, pattern_->findAll(text), behavior_, invert_);
    });
  }

private:
  std::unique_ptr<Regex> pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// Splits on code points a predicate picks out (whitespace, punctuation,
// digits).
template <typename Predicate>
class CharSplit : public PreTokenizer {
public:
  CharSplit(Predicate predicate, SplitBehavior behavior)
      : predicate_(predicate), behavior_(behavior) {}
  void split(std::vector<Piece> &pieces) const override {
    splitEach(pieces, [&](std::string_view text) {
      return splitAtMatches(text, charMatches(text, predicate_), behavior_, false);
    });
  }

private:
  Predicate predicate_;
  SplitBehavior behavior_;
};

template <typename Predicate>
std::unique_ptr<PreTokenizer> charSplit(Predicate predicate, SplitBehavior behavior) {
  return std::make_unique<CharSplit<Predicate>>(predicate, behavior);
}

// BERT's: whitespace ends a word and is dropped, and each punctuation
// character is a word of its own. The same as splitting on whitespace, then
// isolating punctuation, in one pass over the text.
class BertWords : public PreTokenizer {
public:
  void split(std::vector<Piece> &pieces) const override {
    splitEach(pieces, [](std::string_view text) {
      std::vector<std::string_view> words;
      size_t wordStart = 0;
      for (size_t pos = 0, length; pos < text.size(); pos += length) {
        char32_t c = codePointAt(text, pos, length);
        bool space = isWhitespace(c);
        if (!space && !isPunctuation(c))
          continue;
        words.push_back(text.substr(wordStart, pos - wordStart));
        if (!space)
          words.push_back(text.substr(pos, length));
        wordStart = pos + length;
      }
      words.push_back(text.substr(wordStart));
      return words;
    });
  }
};

// \w+|[^\w\s]+ kept, the rest (whitespace) dropped.
class Whitespace : public PreTokenizer {
public:
  void split(std::vector<Piece> &pieces) const override {
    static const Regex pattern(R"(\w+|[^\w\s]+)", false, "Whitespace pre-tokenizer");
    splitEach(pieces, [&](std::string_view text) {
      return splitAtMatches(text, pattern.findAll(text), SplitBehavior::Removed, true);
    });
  }
};

class Metaspace : public PreTokenizer {
public:
  enum class Prepend { Always, First, Never };
  Metaspace(std::string replacement, Prepend prepend, bool splitOnReplacement)
      : replacement_(std::move(replacement)), prepend_(prepend),
        split_(splitOnReplacement),
        literal_(replacement_, true, "Metaspace pre-tokenizer") {}
  void split(std::vector<Piece> &pieces) const override {
    for (Piece &piece : pieces) {
      std::string replaced;
      replaced.reserve(piece.text.size() + replacement_.size());
      for (char c : piece.text) {
        if (c == ' ')
          replaced += replacement_;
        else
          replaced += c;
      }
      bool prepend = prepend_ == Prepend::Always ||
                     (prepend_ == Prepend::First && piece.atStart);
      if (prepend && replaced.compare(0, replacement_.size(), replacement_) != 0)
        replaced.insert(0, replacement_);
      piece.text = std::move(replaced);
    }
    if (!split_)
      return;
    splitEach(pieces, [&](std::string_view text) {
      return splitAtMatches(text, literal_.findAll(text),
                            SplitBehavior::MergedWithNext, false);
    });
  }

private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
  Regex literal_;
};

class PreTokenizerSequence : public PreTokenizer {
public:
  explicit PreTokenizerSequence(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void split(std::vector<Piece> &pieces) const override {
    for (const auto &step : steps_)
      step->split(pieces);
  }

private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

SplitBehavior behaviorField(const Json &config, const JsonPath &path,
                            SplitBehavior fallback) {
  auto it = config.find("behavior");
  if (it == config.end() || it->is_null())
    return fallback;
  if (!it->is_string())
    throw TokenizerError((path / "behavior").text + ": expected a string");
  return parseSplitBehavior(it->get<std::string>(), path / "behavior");
}

std::unique_ptr<PreTokenizer> makeMetaspace(const Json &config, const JsonPath &path) {
  std::string replacement = stringField(config, "replacement", path);
  Metaspace::Prepend prepend = Metaspace::Prepend::Always;
  auto scheme = config.find("prepend_scheme");
  if (scheme != config.end() && scheme->is_string()) {
    std::string name = scheme->get<std::string>();
    if (name == "first")
      prepend = Metaspace::Prepend::First;
    else if (name == "never")
      prepend = Metaspace::Prepend::Never;
    else if (name != "always")
      throw TokenizerError((path / "prepend_scheme").text +
                           ": expected always, first or never");
  } else if (!boolField(config, "add_prefix_space", true, path)) {
    // Files written before prepend_scheme existed say add_prefix_space.
    prepend = Metaspace::Prepend::Never;
  }
  return std::make_unique<Metaspace>(replacement, prepend,
                                     boolField(config, "split", true, path));
}

} // namespace

std::unique_ptr<PreTokenizer> makePreTokenizer(const Json &config, const JsonPath &path) {
  if (config.is_null())
    return nullptr;
  std::string type = stringField(config, "type", path);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(
        boolField(config, "add_prefix_space", true, path),
        boolField(config, "use_regex", true, path));
  if (type == "Split")
    return std::make_unique<Split>(
        patternField(config, path),
        parseSplitBehavior(stringField(config, "behavior", path), path / "behavior"),
        boolField(config, "invert", false, path));
  if (type == "Metaspace")
    return makeMetaspace(config, path);
  if (type == "Whitespace")
    return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit")
    return charSplit(isWhitespace, SplitBehavior::Removed);
  if (type == "Punctuation")
    return charSplit(isPunctuation,
                     behaviorField(config, path, SplitBehavior::Isolated));
  if (type == "Digits")
    return charSplit(isNumeric, boolField(config, "individual_digits", false, path)
                                    ? SplitBehavior::Isolated
                                    : SplitBehavior::Contiguous);
  if (type == "BertPreTokenizer")
    return std::make_unique<BertWords>();
  if (type == "Sequence") {
    const Json &list = field(config, "pretokenizers", path);
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = makePreTokenizer(list[i], (path / "pretokenizers")[i]))
        steps.push_back(std::move(step));
    return std::make_unique<PreTokenizerSequence>(std::move(steps));
  }
  unsupported("pre-tokenizer", type, path,
              "ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit, "
              "Punctuation, Digits, BertPreTokenizer and Sequence");
}

} // namespace kiln::tok
