//===- ChatTemplate.h - Hugging Face chat templates, rendered in C++ ------===//
//
// A tokenizer_config.json's chat_template is a Jinja template that turns a
// conversation into the prompt a model was trained on. transformers renders
// it with Python's jinja2 (an ImmutableSandboxedEnvironment with trim_blocks
// and lstrip_blocks, loop controls, the `generation` tag, and its own
// tojson, raise_exception and strftime_now); this is the subset of that
// engine real chat templates use, with jinja2's semantics, so the prompt
// comes out byte for byte as transformers makes it.
//
// Parsing refuses whatever lies outside the subset (template inheritance,
// includes, call blocks, filters and tests Kiln does not implement) with the
// line and column of the construct, so an unsupported template fails when it
// is loaded rather than rendering something subtly different.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_TOKENIZER_CHATTEMPLATE_H
#define KILN_RUNTIME_TOKENIZER_CHATTEMPLATE_H

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace kiln::tok {

class ChatTemplate {
public:
  /// Parses a template (tokenizer_config.json's chat_template). Throws
  /// TokenizerError naming line:column and the construct when the template
  /// uses something outside the supported subset, or is malformed.
  explicit ChatTemplate(const std::string &source);
  ~ChatTemplate();
  ChatTemplate(ChatTemplate &&) noexcept;
  ChatTemplate &operator=(ChatTemplate &&) noexcept;

  /// Renders it. `context` is a JSON object of variables: transformers
  /// passes messages, tools and documents (null when absent),
  /// add_generation_prompt, the special tokens (bos_token, eos_token, ...)
  /// and any extra keyword arguments (date_string, ...). It is an
  /// ordered_json because key order shows in the prompt: a template that
  /// prints a tool's schema with tojson prints its keys in the order the
  /// request gave them, as Python's dicts keep them. Throws TokenizerError
  /// on run-time errors, with exactly the message of raise_exception(...)
  /// when the template raises one. Safe to call from several threads.
  std::string render(const nlohmann::ordered_json &context) const;

private:
  struct Program;
  std::unique_ptr<const Program> program_;
};

} // namespace kiln::tok

#endif
