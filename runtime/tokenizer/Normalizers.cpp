//===- Normalizers.cpp - tokenizer.json "normalizer" types ----------------===//
#include "Components.h"

#include "Regex.h"
#include "TokenizerError.h"
#include "Unicode.h"

namespace kiln::tok {

namespace {

class UnicodeNormalizer : public Normalizer {
public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(std::string &text) const override {
    text = normalizeUnicode(text, form_);
  }

private:
  NormalForm form_;
};

class Lowercase : public Normalizer {
public:
  void normalize(std::string &text) const override { text = toLowercase(text); }
};

class Strip : public Normalizer {
public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string &text) const override {
    size_t begin = 0, end = text.size(), length;
    if (left_)
      while (begin < end && isWhitespace(codePointAt(text, begin, length)))
        begin += length;
    if (right_)
      while (end > begin) {
        size_t last = end - 1;
        while (last > begin && (static_cast<unsigned char>(text[last]) & 0xC0) == 0x80)
          --last;
        if (!isWhitespace(codePointAt(text, last, length)))
          break;
        end = last;
      }
    text = text.substr(begin, end - begin);
  }

private:
  bool left_, right_;
};

std::string withoutCombiningMarks(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0, length; pos < text.size(); pos += length)
    if (!isCombiningMark(codePointAt(text, pos, length)))
      out.append(text.substr(pos, length));
  return out;
}

class StripAccents : public Normalizer {
public:
  void normalize(std::string &text) const override {
    text = withoutCombiningMarks(text);
  }
};

class Replace : public Normalizer {
public:
  Replace(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string &text) const override { pattern_->replaceAll(text, content_); }

private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string &text) const override {
    if (!text.empty())
      text.insert(0, prefix_);
  }

private:
  std::string prefix_;
};

// BERT's: drop control characters, make whitespace a plain space, surround CJK
// ideographs with spaces, strip accents, lowercase.
class BertNormalizer : public Normalizer {
public:
  BertNormalizer(bool cleanText, bool handleChineseChars, bool stripAccents,
                 bool lowercase)
      : cleanText_(cleanText), handleChineseChars_(handleChineseChars),
        stripAccents_(stripAccents), lowercase_(lowercase) {}
  void normalize(std::string &text) const override {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0, length; pos < text.size(); pos += length) {
      char32_t c = codePointAt(text, pos, length);
      if (cleanText_) {
        if (c == 0 || c == 0xFFFD || isControl(c))
          continue;
        if (isWhitespace(c)) {
          out += ' ';
          continue;
        }
      }
      if (handleChineseChars_ && isCjkIdeograph(c)) {
        out += ' ';
        out.append(text, pos, length);
        out += ' ';
        continue;
      }
      out.append(text, pos, length);
    }
    if (stripAccents_)
      out = withoutCombiningMarks(normalizeUnicode(out, NormalForm::NFD));
    if (lowercase_)
      out = toLowercase(out);
    text = std::move(out);
  }

private:
  bool cleanText_, handleChineseChars_, stripAccents_, lowercase_;
};

class NormalizerSequence : public Normalizer {
public:
  explicit NormalizerSequence(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void normalize(std::string &text) const override {
    for (const auto &step : steps_)
      step->normalize(text);
  }

private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

} // namespace

std::unique_ptr<Normalizer> makeNormalizer(const Json &config, const JsonPath &path) {
  if (config.is_null())
    return nullptr;
  std::string type = stringField(config, "type", path);
  if (type == "NFC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
  if (type == "NFD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
  if (type == "Lowercase")
    return std::make_unique<Lowercase>();
  if (type == "Strip")
    return std::make_unique<Strip>(boolField(config, "strip_left", true, path),
                                   boolField(config, "strip_right", true, path));
  if (type == "StripAccents")
    return std::make_unique<StripAccents>();
  if (type == "Replace")
    return std::make_unique<Replace>(patternField(config, path),
                                     stringField(config, "content", path));
  if (type == "Prepend")
    return std::make_unique<Prepend>(stringField(config, "prepend", path));
  if (type == "BertNormalizer") {
    bool lowercase = boolField(config, "lowercase", true, path);
    // A null strip_accents follows lowercase, as in the Rust library.
    return std::make_unique<BertNormalizer>(
        boolField(config, "clean_text", true, path),
        boolField(config, "handle_chinese_chars", true, path),
        boolField(config, "strip_accents", lowercase, path), lowercase);
  }
  if (type == "Sequence") {
    const Json &list = field(config, "normalizers", path);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = makeNormalizer(list[i], (path / "normalizers")[i]))
        steps.push_back(std::move(step));
    return std::make_unique<NormalizerSequence>(std::move(steps));
  }
  unsupported("normalizer", type, path,
              "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, "
              "Prepend, BertNormalizer and Sequence");
}

} // namespace kiln::tok
