//===- Decoders.cpp - tokenizer.json "decoder" types -----------------------===//
#include "Components.h"

#include "Regex.h"
#include "TokenizerError.h"
#include "Unicode.h"

namespace kiln::tok {

namespace {

// Characters back to bytes; a token holding a character outside the table
// (an added token's text) keeps its own bytes. The result is one token, made
// valid UTF-8 as the Rust library makes it.
class ByteLevelDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::string bytes;
    for (const std::string &token : tokens) {
      size_t start = bytes.size();
      bool mapped = true;
      for (size_t pos = 0, length; pos < token.size() && mapped; pos += length) {
        int byte = byteLevelByte(codePointAt(token, pos, length));
        if (byte < 0)
          mapped = false;
        else
          bytes += (char)byte;
      }
      if (!mapped) {
        bytes.resize(start);
        bytes += token;
      }
    }
    tokens.assign(1, utf8Lossy(bytes));
  }
};

// Runs of <0xHH> tokens become the text their bytes spell, or one U+FFFD per
// byte when they spell no valid UTF-8.
class ByteFallback : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string bytes;
    auto flush = [&] {
      if (bytes.empty())
        return;
      if (firstInvalidUtf8(bytes) == bytes.size())
        out.push_back(bytes);
      else
        for (size_t i = 0; i < bytes.size(); ++i)
          out.push_back("\xEF\xBF\xBD");
      bytes.clear();
    };
    for (std::string &token : tokens) {
      int byte = byteOf(token);
      if (byte >= 0) {
        bytes += (char)byte;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }

private:
  static int hexDigit(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }
  static int byteOf(const std::string &token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
      return -1;
    int high = hexDigit(token[3]), low = hexDigit(token[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
  }
};

class Fuse : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::string joined;
    for (const std::string &token : tokens)
      joined += token;
    tokens.assign(1, std::move(joined));
  }
};

// Removes up to `start` leading and `stop` trailing copies of one character
// from every token.
class StripDecoder : public Decoder {
public:
  StripDecoder(std::string content, int64_t start, int64_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) {
      size_t begin = 0, end = token.size();
      for (int64_t i = 0; i < start_ && token.compare(begin, content_.size(), content_) == 0 &&
                          begin < end;
           ++i)
        begin += content_.size();
      for (int64_t i = 0; i < stop_ && end >= begin + content_.size() &&
                          token.compare(end - content_.size(), content_.size(), content_) == 0;
           ++i)
        end -= content_.size();
      token = token.substr(begin, end - begin);
    }
  }

private:
  std::string content_;
  int64_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
public:
  ReplaceDecoder(std::unique_ptr<Regex> pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens)
      pattern_->replaceAll(token, content_);
  }

private:
  std::unique_ptr<Regex> pattern_;
  std::string content_;
};

// The replacement character back to spaces; in the first token, when a prefix
// was added, every replacement character is dropped (the Rust library's rule).
class MetaspaceDecoder : public Decoder {
public:
  MetaspaceDecoder(std::string replacement, bool prefixAdded)
      : replacement_(std::move(replacement)), prefixAdded_(prefixAdded) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string &token = tokens[i];
      std::string out;
      out.reserve(token.size());
      for (size_t pos = 0; pos < token.size();) {
        if (token.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && prefixAdded_))
            out += ' ';
          pos += replacement_.size();
        } else {
          out += token[pos++];
        }
      }
      token = std::move(out);
    }
  }

private:
  std::string replacement_;
  bool prefixAdded_;
};

class WordPieceDecoder : public Decoder {
public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string &token = tokens[i];
      if (i != 0) {
        if (token.compare(0, prefix_.size(), prefix_) == 0)
          token.erase(0, prefix_.size());
        else
          token.insert(0, " ");
      }
      if (cleanup_)
        token = cleanedUp(token);
    }
  }

  // BERT's clean_up_tokenization: spaces before punctuation and
  // contractions come out.
  static std::string cleanedUp(std::string text) {
    static const std::pair<const char *, const char *> rules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (auto [from, to] : rules) {
      std::string f = from, t = to;
      for (size_t pos = 0; (pos = text.find(f, pos)) != std::string::npos; pos += t.size())
        text.replace(pos, f.size(), t);
    }
    return text;
  }

private:
  std::string prefix_;
  bool cleanup_;
};

// Classic BPE's end-of-word suffix becomes a space, except at the end.
class BpeDecoder : public Decoder {
public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string &token = tokens[i];
      std::string replacement = i + 1 == tokens.size() ? "" : " ";
      for (size_t pos = 0; (pos = token.find(suffix_, pos)) != std::string::npos;
           pos += replacement.size())
        token.replace(pos, suffix_.size(), replacement);
    }
  }

private:
  std::string suffix_;
};

class DecoderSequence : public Decoder {
public:
  explicit DecoderSequence(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decode(std::vector<std::string> &tokens) const override {
    for (const auto &step : steps_)
      step->decode(tokens);
  }

private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::unique_ptr<Decoder> makeMetaspaceDecoder(const Json &config, const JsonPath &path) {
  bool prefixAdded = boolField(config, "add_prefix_space", true, path);
  auto scheme = config.find("prepend_scheme");
  if (scheme != config.end() && scheme->is_string())
    prefixAdded = scheme->get<std::string>() != "never";
  return std::make_unique<MetaspaceDecoder>(stringField(config, "replacement", path),
                                            prefixAdded);
}

} // namespace

std::unique_ptr<Decoder> makeDecoder(const Json &config, const JsonPath &path) {
  if (config.is_null())
    return nullptr;
  std::string type = stringField(config, "type", path);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelDecoder>();
  if (type == "ByteFallback")
    return std::make_unique<ByteFallback>();
  if (type == "Fuse")
    return std::make_unique<Fuse>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(stringField(config, "content", path),
                                          intField(config, "start", path),
                                          intField(config, "stop", path));
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(patternField(config, path),
                                            stringField(config, "content", path));
  if (type == "Metaspace")
    return makeMetaspaceDecoder(config, path);
  if (type == "WordPiece")
    return std::make_unique<WordPieceDecoder>(
        config.contains("prefix") ? stringField(config, "prefix", path) : "##",
        boolField(config, "cleanup", true, path));
  if (type == "BPEDecoder")
    return std::make_unique<BpeDecoder>(
        config.contains("suffix") ? stringField(config, "suffix", path) : "</w>");
  if (type == "Sequence") {
    const Json &list = field(config, "decoders", path);
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = makeDecoder(list[i], (path / "decoders")[i]))
        steps.push_back(std::move(step));
    return std::make_unique<DecoderSequence>(std::move(steps));
  }
  unsupported("decoder", type, path,
              "ByteLevel, ByteFallback, Fuse, Strip, Replace, Metaspace, "
              "WordPiece, BPEDecoder and Sequence");
}

} // namespace kiln::tok
