//===- Regex.h - PCRE2 patterns for pre-tokenizers and replacements -------===//
//
// tokenizer.json patterns are written for Oniguruma (the Rust library's
// engine). PCRE2 with UTF and UCP reads the same syntax for what these files
// use: \p{L}, \p{N}, (?i:...), possessive quantifiers and lookahead, which the
// GPT-2 and Llama 3 patterns need (RE2 has no lookahead). Patterns are JIT
// compiled once; a match runs with match data of its own, so one Regex serves
// many threads.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_TOKENIZER_REGEX_H
#define KILN_RUNTIME_TOKENIZER_REGEX_H

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::tok {

using Span = std::pair<size_t, size_t>; // [begin, end) in bytes

class Regex {
public:
  /// Compiles `pattern`, or matches it literally when `literal` is set.
  /// Throws TokenizerError naming `where` when PCRE2 refuses the pattern.
  Regex(const std::string &pattern, bool literal, const std::string &where);
  ~Regex();
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  /// The non-empty, non-overlapping matches in `text`, left to right.
  /// `text` must be valid UTF-8.
  std::vector<Span> findAll(std::string_view text) const;
  /// Every match in `text` replaced by `replacement`.
  void replaceAll(std::string &text, const std::string &replacement) const;

private:
  struct Compiled;
  Compiled *compiled_;
  std::string where_;
};

} // namespace kiln::tok

#endif
