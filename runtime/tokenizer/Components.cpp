#include "Components.h"

#include "Regex.h"
#include "TokenizerError.h"
#include "Unicode.h"

#include <algorithm>
#include <array>

namespace kiln::tok {

const Json &field(const Json &object, const char *key, const JsonPath &path) {
  auto it = object.find(key);
  if (it == object.end())
    throw TokenizerError((path / key).text + ": missing");
  return *it;
}

std::string stringField(const Json &object, const char *key, const JsonPath &path) {
  const Json &value = field(object, key, path);
  if (!value.is_string())
    throw TokenizerError((path / key).text + ": expected a string");
  return value.get<std::string>();
}

bool boolField(const Json &object, const char *key, bool fallback,
               const JsonPath &path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null())
    return fallback;
  if (!it->is_boolean())
    throw TokenizerError((path / key).text + ": expected true or false");
  return it->get<bool>();
}

int64_t intField(const Json &object, const char *key, const JsonPath &path) {
  const Json &value = field(object, key, path);
  if (!value.is_number_integer())
    throw TokenizerError((path / key).text + ": expected an integer");
  return value.get<int64_t>();
}

std::unique_ptr<Regex> patternField(const Json &object, const JsonPath &path) {
  const Json &pattern = field(object, "pattern", path);
  JsonPath where = path / "pattern";
  if (pattern.is_object() && pattern.contains("String"))
    return std::make_unique<Regex>(stringField(pattern, "String", where), true,
                                   (where / "String").text);
  if (pattern.is_object() && pattern.contains("Regex"))
    return std::make_unique<Regex>(stringField(pattern, "Regex", where), false,
                                   (where / "Regex").text);
  throw TokenizerError(where.text + ": expected {\"String\": ...} or {\"Regex\": ...}");
}

void unsupported(const std::string &kind, const std::string &type,
                 const JsonPath &path, const std::string &supported) {
  throw TokenizerError(path.text + ": " + kind + " type '" + type +
                       "' is not supported (Kiln reads " + supported + ")");
}

SplitBehavior parseSplitBehavior(const std::string &name, const JsonPath &path) {
  if (name == "Removed")
    return SplitBehavior::Removed;
  if (name == "Isolated")
    return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious")
    return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext")
    return SplitBehavior::MergedWithNext;
  if (name == "Contiguous")
    return SplitBehavior::Contiguous;
  throw TokenizerError(path.text + ": unknown split behavior '" + name + "'");
}

std::vector<std::string_view>
splitAtMatches(std::string_view text, const std::vector<Span> &matches,
               SplitBehavior behavior, bool invert) {
  // The text as alternating stretches, each marked as a match or not.
  struct Stretch {
    size_t begin, end;
    bool match;
  };
  std::vector<Stretch> stretches;
  stretches.reserve(matches.size() * 2 + 1);
  size_t previous = 0;
  for (auto [begin, end] : matches) {
    if (begin > previous)
      stretches.push_back({previous, begin, invert});
    stretches.push_back({begin, end, !invert});
    previous = end;
  }
  if (previous < text.size())
    stretches.push_back({previous, text.size(), invert});

  std::vector<Stretch> merged;
  merged.reserve(stretches.size());
  switch (behavior) {
  case SplitBehavior::Removed:
    for (const Stretch &s : stretches)
      if (!s.match)
        merged.push_back(s);
    break;
  case SplitBehavior::Isolated:
    merged = stretches;
    break;
  case SplitBehavior::MergedWithPrevious: {
    bool previousMatch = false;
    for (const Stretch &s : stretches) {
      if (s.match && !previousMatch && !merged.empty())
        merged.back().end = s.end;
      else
        merged.push_back(s);
      previousMatch = s.match;
    }
    break;
  }
  case SplitBehavior::MergedWithNext: {
    bool previousMatch = false;
    for (auto it = stretches.rbegin(); it != stretches.rend(); ++it) {
      if (it->match && !previousMatch && !merged.empty())
        merged.back().begin = it->begin;
      else
        merged.push_back(*it);
      previousMatch = it->match;
    }
    std::reverse(merged.begin(), merged.end());
    break;
  }
  case SplitBehavior::Contiguous: {
    bool previousMatch = false;
    for (const Stretch &s : stretches) {
      if (s.match == previousMatch && !merged.empty())
        merged.back().end = s.end;
      else
        merged.push_back(s);
      previousMatch = s.match;
    }
    break;
  }
  }
  std::vector<std::string_view> parts;
  parts.reserve(merged.size());
  for (const Stretch &s : merged)
    if (s.end > s.begin)
      parts.push_back(text.substr(s.begin, s.end - s.begin));
  return parts;
}

namespace {

struct ByteLevelTables {
  std::array<std::string, 256> charOfByte;
  std::array<int16_t, 512> byteOfChar; // characters are below U+0200
  ByteLevelTables() {
    byteOfChar.fill(-1);
    int next = 256;
    for (int byte = 0; byte < 256; ++byte) {
      bool printable = (byte >= '!' && byte <= '~') ||
                       (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
      char32_t c = printable ? (char32_t)byte : (char32_t)next++;
      appendUtf8(charOfByte[byte], c);
      byteOfChar[c] = (int16_t)byte;
    }
  }
};

const ByteLevelTables &byteLevelTables() {
  static const ByteLevelTables tables;
  return tables;
}

} // namespace

const std::string *byteLevelChars() { return byteLevelTables().charOfByte.data(); }

int byteLevelByte(char32_t c) {
  return c < 512 ? byteLevelTables().byteOfChar[c] : -1;
}

} // namespace kiln::tok
