//===- Unicode.h - UTF-8 and Unicode properties for the tokenizer --------===//
//
// The tokenizer keeps text as UTF-8 bytes throughout; these helpers step
// through it by code point and answer the property questions Hugging Face's
// components ask (Rust's char::is_whitespace, is_numeric, the BERT
// punctuation and CJK sets), with utf8proc's tables.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_TOKENIZER_UNICODE_H
#define KILN_RUNTIME_TOKENIZER_UNICODE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::tok {

/// The code point at `pos` and its byte length; `text` must be valid UTF-8.
char32_t codePointAt(std::string_view text, size_t pos, size_t &length);
/// The byte length of the UTF-8 sequence whose lead byte is `lead`.
inline size_t utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}
void appendUtf8(std::string &out, char32_t codePoint);

/// The offset of the first byte that does not start a well-formed UTF-8
/// sequence, or text.size() when the whole text is well formed.
size_t firstInvalidUtf8(std::string_view text);
/// Rust's String::from_utf8_lossy: every maximal ill-formed subsequence
/// becomes one U+FFFD.
std::string utf8Lossy(std::string_view bytes);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalizeUnicode(std::string_view text, NormalForm form);
/// Simple (one code point to one) lowercase mapping of every code point.
std::string toLowercase(std::string_view text);

bool isWhitespace(char32_t c);      // Unicode White_Space (Rust char::is_whitespace)
bool isNumeric(char32_t c);         // general category N*
bool isAlphanumeric(char32_t c);    // L* or N* (Rust char::is_alphanumeric)
bool isPunctuation(char32_t c);     // ASCII punctuation or general category P*
bool isControl(char32_t c);         // BERT's control test: C* except \t \n \r
bool isCombiningMark(char32_t c);   // general category Mn
bool isCjkIdeograph(char32_t c);    // BERT's "Chinese character" blocks

} // namespace kiln::tok

#endif
