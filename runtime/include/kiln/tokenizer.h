/* Kiln tokenizer C API: Hugging Face tokenizer.json files, read and run in
 * C++ with no Python: encoding text to token ids, decoding ids to text, and
 * decoding a stream of ids as they are generated.
 *
 * Supported (anything else is refused at load, naming its JSON path):
 *   models          BPE (byte-level, or SentencePiece-style with byte
 *                   fallback), WordPiece, WordLevel, Unigram
 *   normalizers     NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents,
 *                   Replace, Prepend, BertNormalizer, Sequence
 *   pre-tokenizers  ByteLevel, Split (PCRE2 patterns), Metaspace, Whitespace,
 *                   WhitespaceSplit, Punctuation, Digits, BertPreTokenizer,
 *                   Sequence
 *   post-processors TemplateProcessing, BertProcessing, RobertaProcessing,
 *                   ByteLevel, Sequence (single sequences and pairs)
 *   decoders        ByteLevel, ByteFallback, Fuse, Strip, Replace,
 *                   Metaspace, WordPiece, BPEDecoder, Sequence
 *   added tokens    single_word, lstrip, rstrip, normalized, special
 *
 * Token ids are int32_t, as vocabularies are; the engine's int64_t prompt
 * ids take them as they are.
 *
 * Thread safety:
 *   - a loaded kiln_tokenizer_t is immutable: encode, decode and the queries
 *     may be called from any number of threads at once;
 *   - a kiln_detokenizer_t is used by one thread at a time, and must not
 *     outlive its tokenizer.
 * Strings and id arrays that the API returns belong to the caller, who frees
 * them with kiln_text_free, kiln_token_ids_free and kiln_encoding_free.
 */
#ifndef KILN_TOKENIZER_H
#define KILN_TOKENIZER_H

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_tokenizer_s kiln_tokenizer_t;
typedef struct kiln_detokenizer_s kiln_detokenizer_t;

typedef struct kiln_token_ids_s {
  int32_t *ids;
  size_t count;
} kiln_token_ids_t;

typedef struct kiln_text_s {
  char *data; /* UTF-8, NUL-terminated; length excludes the NUL */
  size_t length;
} kiln_text_t;

/* Ids with the type id (segment) of each, as token_type_ids. */
typedef struct kiln_encoding_s {
  int32_t *ids;
  int32_t *type_ids;
  size_t count;
} kiln_encoding_t;

KILN_API void kiln_token_ids_free(kiln_token_ids_t *ids);
KILN_API void kiln_encoding_free(kiln_encoding_t *encoding);
KILN_API void kiln_text_free(kiln_text_t *text);

/* `path` is a tokenizer.json, or a directory holding one. A
 * tokenizer_config.json beside it, when present, names the special tokens
 * (bos, eos) and the chat template. */
KILN_API kiln_status_t kiln_tokenizer_load(const char *path, kiln_tokenizer_t **out);
KILN_API void kiln_tokenizer_release(kiln_tokenizer_t *tokenizer);

/* `text` is UTF-8 (an ill-formed byte is an INVALID_ARGUMENT naming its
 * offset). With add_special_tokens, the post-processor's tokens (BOS, CLS,
 * SEP) are added. Special tokens written in the text are always recognized. */
KILN_API kiln_status_t kiln_tokenizer_encode(const kiln_tokenizer_t *tokenizer,
                                             const char *text, size_t length,
                                             int add_special_tokens,
                                             kiln_token_ids_t *out);
/* A sequence and its pair (a question and a passage, a query and a
 * document), joined as the post-processor says ([CLS] A [SEP] B [SEP] for
 * BERT), with each token's type id: the pair's tokens are of type 1 unless
 * the post-processor says otherwise (RoBERTa's are all 0). `pair` may be
 * NULL: then the text alone, with its type ids. */
KILN_API kiln_status_t kiln_tokenizer_encode_pair(const kiln_tokenizer_t *tokenizer,
                                                  const char *text, size_t length,
                                                  const char *pair, size_t pair_length,
                                                  int add_special_tokens,
                                                  kiln_encoding_t *out);
/* Ids outside the vocabulary are an INVALID_ARGUMENT naming the id. */
KILN_API kiln_status_t kiln_tokenizer_decode(const kiln_tokenizer_t *tokenizer,
                                             const int32_t *ids, size_t count,
                                             int skip_special_tokens,
                                             kiln_text_t *out);

KILN_API int32_t kiln_tokenizer_vocab_size(const kiln_tokenizer_t *tokenizer);
/* -1 when the token is not in the vocabulary. */
KILN_API int32_t kiln_tokenizer_token_to_id(const kiln_tokenizer_t *tokenizer,
                                            const char *token);
/* NULL when the id is not in the vocabulary; valid while the tokenizer is. */
KILN_API const char *kiln_tokenizer_id_to_token(const kiln_tokenizer_t *tokenizer,
                                                int32_t id);
KILN_API int kiln_tokenizer_is_special(const kiln_tokenizer_t *tokenizer, int32_t id);
/* The ids of tokenizer_config.json's bos_token and eos_token; -1 when it
 * names none. */
KILN_API int32_t kiln_tokenizer_bos_id(const kiln_tokenizer_t *tokenizer);
KILN_API int32_t kiln_tokenizer_eos_id(const kiln_tokenizer_t *tokenizer);

/* Renders tokenizer_config.json's chat template (a Jinja subset, as
 * Hugging Face's apply_chat_template does). `context_json` is a JSON object:
 * {"messages": [{"role": ..., "content": ...}, ...],
 *  "add_generation_prompt": true, "tools": ...}; bos_token and eos_token are
 * added from the config. The text is meant to be encoded without special
 * tokens (the template writes them). FAILED_PRECONDITION when the tokenizer
 * has no template; INVALID_ARGUMENT, with the template's own message, when it
 * refuses the messages. */
KILN_API kiln_status_t kiln_tokenizer_apply_chat_template(const kiln_tokenizer_t *tokenizer,
                                                          const char *context_json,
                                                          kiln_text_t *out);

/* Incremental detokenization, for streaming: each push returns the text its
 * ids complete, never half a UTF-8 character; finish returns what is still
 * held back. The pushed texts, concatenated with finish's, are the decode of
 * all pushed ids in the context of the `context` ids (usually the prompt),
 * which are not returned themselves: they give the first new token the
 * leading space it has after them. */
KILN_API kiln_status_t kiln_detokenizer_create(const kiln_tokenizer_t *tokenizer,
                                               const int32_t *context_ids,
                                               size_t context_count,
                                               int skip_special_tokens,
                                               kiln_detokenizer_t **out);
KILN_API void kiln_detokenizer_release(kiln_detokenizer_t *detokenizer);
KILN_API kiln_status_t kiln_detokenizer_push(kiln_detokenizer_t *detokenizer,
                                             const int32_t *ids, size_t count,
                                             kiln_text_t *out);
KILN_API kiln_status_t kiln_detokenizer_finish(kiln_detokenizer_t *detokenizer,
                                               kiln_text_t *out);

#ifdef __cplusplus
}
#endif

#endif /* KILN_TOKENIZER_H */
