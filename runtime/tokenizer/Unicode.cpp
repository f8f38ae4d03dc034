#include "Unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace kiln::tok {

char32_t codePointAt(std::string_view text, size_t pos, size_t &length) {
  const auto *bytes = reinterpret_cast<const unsigned char *>(text.data());
  unsigned char lead = bytes[pos];
  length = utf8Length(lead);
  switch (length) {
  case 1:
    return lead;
  case 2:
    return ((lead & 0x1Fu) << 6) | (bytes[pos + 1] & 0x3Fu);
  case 3:
    return ((lead & 0x0Fu) << 12) | ((bytes[pos + 1] & 0x3Fu) << 6) |
           (bytes[pos + 2] & 0x3Fu);
  default:
    return ((lead & 0x07u) << 18) | ((bytes[pos + 1] & 0x3Fu) << 12) |
           ((bytes[pos + 2] & 0x3Fu) << 6) | (bytes[pos + 3] & 0x3Fu);
  }
}

void appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out += (char)c;
  } else if (c < 0x800) {
    out += (char)(0xC0 | (c >> 6));
    out += (char)(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += (char)(0xE0 | (c >> 12));
    out += (char)(0x80 | ((c >> 6) & 0x3F));
    out += (char)(0x80 | (c & 0x3F));
  } else {
    out += (char)(0xF0 | (c >> 18));
    out += (char)(0x80 | ((c >> 12) & 0x3F));
    out += (char)(0x80 | ((c >> 6) & 0x3F));
    out += (char)(0x80 | (c & 0x3F));
  }
}

namespace {

// The length of the longest well-formed prefix of a UTF-8 sequence starting at
// `pos` (Unicode's table 3-7), and whether the sequence is complete. A prefix
// that stops at the end of the text is incomplete but not yet wrong.
size_t wellFormedPrefix(std::string_view text, size_t pos, bool &complete) {
  const auto *b = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size() - pos;
  unsigned char lead = b[pos];
  complete = true;
  if (lead < 0x80)
    return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 3;
    if (lead == 0xE0)
      lo = 0xA0;
    if (lead == 0xED)
      hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 4;
    if (lead == 0xF0)
      lo = 0x90;
    if (lead == 0xF4)
      hi = 0x8F;
  } else {
    complete = false;
    return 0;
  }
  size_t have = 1;
  while (have < need) {
    if (have >= n) {
      complete = false;
      return have;
    }
    unsigned char c = b[pos + have];
    unsigned char l = have == 1 ? lo : 0x80, h = have == 1 ? hi : 0xBF;
    if (c < l || c > h) {
      complete = false;
      return have;
    }
    ++have;
  }
  return have;
}

} // namespace

size_t firstInvalidUtf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    bool complete;
    size_t length = wellFormedPrefix(text, pos, complete);
    if (!complete)
      return pos;
    pos += length;
  }
  return text.size();
}

std::string utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    bool complete;
    size_t length = wellFormedPrefix(bytes, pos, complete);
    if (complete) {
      out.append(bytes.data() + pos, length);
      pos += length;
    } else {
      out += "\xEF\xBF\xBD";
      pos += length ? length : 1;
    }
  }
  return out;
}

namespace {

std::string normalizeChunk(std::string_view text, int options) {
  utf8proc_uint8_t *result = nullptr;
  utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
                   (utf8proc_ssize_t)text.size(), &result, (utf8proc_option_t)options);
  // The text was validated on the way in, so utf8proc cannot refuse it; only
  // an allocation can fail.
  if (length < 0)
    throw std::bad_alloc();
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(result, &std::free);
  return std::string(reinterpret_cast<const char *>(result), (size_t)length);
}

bool isAscii(char c) { return (unsigned char)c < 0x80; }

} // namespace

std::string normalizeUnicode(std::string_view text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
  case NormalForm::NFC:
    options |= UTF8PROC_COMPOSE;
    break;
  case NormalForm::NFD:
    options |= UTF8PROC_DECOMPOSE;
    break;
  case NormalForm::NFKC:
    options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    break;
  case NormalForm::NFKD:
    options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    break;
  }
  // ASCII is in every normal form, and an ASCII character is a starter that
  // composes with nothing before it. So only the non-ASCII runs need
  // normalizing, each with the ASCII character before it (which a combining
  // mark at the run's start may attach to).
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t run = pos;
    while (run < text.size() && isAscii(text[run]))
      ++run;
    if (run == text.size()) {
      out.append(text.substr(pos));
      break;
    }
    size_t chunkBegin = run > pos ? run - 1 : run;
    out.append(text.substr(pos, chunkBegin - pos));
    size_t chunkEnd = run;
    while (chunkEnd < text.size() && !isAscii(text[chunkEnd]))
      ++chunkEnd;
    out += normalizeChunk(text.substr(chunkBegin, chunkEnd - chunkBegin), options);
    pos = chunkEnd;
  }
  return out;
}

std::string toLowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0, length; pos < text.size(); pos += length) {
    char32_t c = codePointAt(text, pos, length);
    if (c < 0x80) {
      out += (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    appendUtf8(out, (char32_t)utf8proc_tolower((utf8proc_int32_t)c));
  }
  return out;
}

bool isWhitespace(char32_t c) {
  switch (c) {
  case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
  case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
  case 0x205F: case 0x3000:
    return true;
  default:
    return c >= 0x2000 && c <= 0x200A;
  }
}

namespace {
utf8proc_category_t category(char32_t c) {
  return utf8proc_category((utf8proc_int32_t)c);
}
} // namespace

bool isNumeric(char32_t c) {
  if (c < 0x80)
    return c >= '0' && c <= '9';
  auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}

bool isAlphanumeric(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  auto cat = category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

bool isPunctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
           (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  auto cat = category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool isControl(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r')
    return false;
  // ASCII's only control (Cc) characters; it has no Cf, Cn or Co.
  if (c < 0x80)
    return c < 0x20 || c == 0x7F;
  auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_CO;
}

bool isCombiningMark(char32_t c) { return c >= 0x80 && category(c) == UTF8PROC_CATEGORY_MN; }

bool isCjkIdeograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

} // namespace kiln::tok
