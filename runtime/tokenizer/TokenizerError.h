//===- TokenizerError.h - The tokenizer's one error type -----------------===//
#ifndef KILN_RUNTIME_TOKENIZER_TOKENIZERERROR_H
#define KILN_RUNTIME_TOKENIZER_TOKENIZERERROR_H

#include <stdexcept>

namespace kiln::tok {

/// A tokenizer file or a call's input that Kiln cannot take. The message
/// names the culprit: the file and JSON path, or the byte offset or id.
class TokenizerError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace kiln::tok

#endif
