#include "Regex.h"

#include "TokenizerError.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <new>

namespace kiln::tok {

struct Regex::Compiled {
  pcre2_code *code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<char *>(buffer);
}

// Deep backtracking over a long whitespace run must fail with an error, not
// run out of the default 32 KiB JIT stack; one megabyte a thread is plenty for
// the patterns tokenizers use.
// Only the whole match is read, so one offset pair serves every pattern
// (PCRE2 then returns 0 for a pattern with groups, and still sets the match).
struct MatchScratch {
  pcre2_match_context *context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack *stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_data *data = pcre2_match_data_create(1, nullptr);
  MatchScratch() {
    if (!context || !stack || !data)
      throw std::bad_alloc();
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchScratch() {
    pcre2_match_data_free(data);
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
  }
};

} // namespace

Regex::Regex(const std::string &pattern, bool literal, const std::string &where)
    : compiled_(new Compiled), where_(where) {
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  uint32_t options = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  compiled_->code = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
      &errorCode, &errorOffset, nullptr);
  if (!compiled_->code) {
    delete compiled_;
    throw TokenizerError(where + ": pattern does not compile at offset " +
                         std::to_string(errorOffset) + ": " +
                         pcre2Message(errorCode));
  }
  // Without JIT (an unsupported CPU) PCRE2 interprets: slower, same result.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

Regex::~Regex() { delete compiled_; }

std::vector<Span> Regex::findAll(std::string_view text) const {
  thread_local MatchScratch scratch;
  std::vector<Span> spans;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(compiled_->code, subject, text.size(), start,
                         PCRE2_NO_UTF_CHECK, scratch.data, scratch.context);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0)
      throw TokenizerError(where_ + ": matching failed: " + pcre2Message(rc));
    PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(scratch.data);
    size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      spans.emplace_back(begin, end);
      start = end;
      continue;
    }
    // An empty match: step over one code point and search again.
    if (begin >= text.size())
      break;
    size_t next = begin + 1;
    while (next < text.size() && (static_cast<unsigned char>(text[next]) & 0xC0) == 0x80)
      ++next;
    start = next;
  }
  return spans;
}

void Regex::replaceAll(std::string &text, const std::string &replacement) const {
  std::vector<Span> matches = findAll(text);
  if (matches.empty())
    return;
  std::string out;
  out.reserve(text.size());
  size_t previous = 0;
  for (auto [begin, end] : matches) {
    out.append(text, previous, begin - previous);
    out += replacement;
    previous = end;
  }
  out.append(text, previous, std::string::npos);
  text = std::move(out);
}

} // namespace kiln::tok
