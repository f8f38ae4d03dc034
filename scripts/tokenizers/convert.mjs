#!/usr/bin/env node
// Converts the vocabularies shipped in npm tokenizer packages into Hugging Face
// `tokenizer.json` + `tokenizer_config.json` pairs, laid out the way the Rust
// `tokenizers` library (tokenizer.json) and transformers' save_pretrained
// (tokenizer_config.json) write them.
//
//   node scripts/tokenizers/convert.mjs --out DIR [--only NAME[,NAME...]]
//                                       [--merges pairs|strings]
//
// Writes DIR/{gpt2,llama,llama-metaspace,llama-unigram,claude,bert-wordpiece}/.
// Output is deterministic (no timestamps, fixed key and entry order).
// --merges strings writes BPE merges in the pre-0.20 "a b" string form instead
// of the [a, b] pairs current `tokenizers` writes (both are valid input).

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------
// JSON writers

// An object whose entries are written in insertion order even when the keys
// look like array indices (a plain JS object would put "0", "1", ... first).
class Ordered {
  constructor(entries) { this.entries = entries; }
}

// serde_json's pretty printer (2-space indent, ": ", one element per line,
// "[]"/"{}" when empty, non-ASCII unescaped) produces the same text as
// JSON.stringify(x, null, 2) for the values used here; this writer adds
// Ordered maps.
function toJson(value, indent = '') {
  if (value instanceof Ordered) {
    if (value.entries.length === 0) return '{}';
    const inner = indent + '  ';
    const parts = value.entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${toJson(v, inner)}`);
    return `{\n${parts.join(',\n')}\n${indent}}`;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const inner = indent + '  ';
    return `[\n${value.map((v) => inner + toJson(v, inner)).join(',\n')}\n${indent}]`;
  }
  if (value !== null && typeof value === 'object') {
    return toJson(new Ordered(Object.entries(value)), indent);
  }
  // Scores are floats, written as the shortest text that reads back as the
  // same double (as serde_json's ryu does); ids must be exact integers.
  if (typeof value === 'number' && !(Number.isInteger(value) ? Number.isSafeInteger(value)
    : Number.isFinite(value))) {
    throw new Error(`refusing to write unsafe or non-finite number ${value}`);
  }
  return JSON.stringify(value);
}

// transformers writes tokenizer_config.json with json.dumps(indent=2,
// sort_keys=True, ensure_ascii=False) + "\n".
function sortKeysDeep(value) {
  if (Array.isArray(value)) return value.map(sortKeysDeep);
  if (value !== null && typeof value === 'object') {
    const out = [];
    for (const k of Object.keys(value).sort()) out.push([k, sortKeysDeep(value[k])]);
    return new Ordered(out);
  }
  return value;
}

// ---------------------------------------------------------------------------
// Shared pieces

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the
// rest to U+0100 + n in byte order.
const BYTE_TO_UNICODE = (() => {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); n++; }
  }
  const table = new Array(256);
  bs.forEach((b, i) => { table[b] = String.fromCharCode(cs[i]); });
  return table;
})();
const bytesToUnicode = (bytes) => Array.from(bytes, (b) => BYTE_TO_UNICODE[b]).join('');

function addedToken(id, content, { normalized = false, special = true } = {}) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized, special };
}

function addedTokensDecoder(added) {
  const out = {};
  for (const t of added) {
    out[String(t.id)] = {
      content: t.content, lstrip: t.lstrip, normalized: t.normalized,
      rstrip: t.rstrip, single_word: t.single_word, special: t.special,
    };
  }
  return out;
}

function vocabMap(tokensById) {
  // tokensById: array of [token, id] sorted by id (Rust writes vocab by id).
  return new Ordered(tokensById.map(([t, id]) => [t, id]));
}

let mergesFormat = 'pairs';
const writeMerges = (pairs) => (mergesFormat === 'pairs' ? pairs : pairs.map(([a, b]) => `${a} ${b}`));

function bpeModel({ unk_token, continuing_subword_prefix, end_of_word_suffix, fuse_unk, byte_fallback,
  ignore_merges, vocab, merges }) {
  return {
    type: 'BPE', dropout: null, unk_token, continuing_subword_prefix, end_of_word_suffix,
    fuse_unk, byte_fallback, ignore_merges, vocab: vocabMap(vocab), merges: writeMerges(merges),
  };
}

function tokenizerJson({ added_tokens, normalizer, pre_tokenizer, post_processor, decoder, model }) {
  return {
    version: '1.0', truncation: null, padding: null, added_tokens, normalizer, pre_tokenizer,
    post_processor, decoder, model,
  };
}

function checkBpe(name, vocab, merges) {
  const ids = new Map();
  for (const [t, id] of vocab) {
    if (ids.has(t)) throw new Error(`${name}: duplicate vocab entry ${JSON.stringify(t)}`);
    ids.set(t, id);
  }
  const seen = new Set();
  for (const [a, b] of merges) {
    const key = a + '\u0000' + b;
    if (seen.has(key)) throw new Error(`${name}: duplicate merge ${a} ${b}`);
    seen.add(key);
    if (!ids.has(a) || !ids.has(b) || !ids.has(a + b)) {
      throw new Error(`${name}: merge ${JSON.stringify([a, b])} refers to a token outside the vocab`);
    }
    if (mergesFormat === 'strings' && (a.includes(' ') || b.includes(' '))) {
      throw new Error(`${name}: merge part contains a space; use --merges pairs`);
    }
  }
}

// ---------------------------------------------------------------------------
// gpt2 (gpt3-tokenizer: the r50k/GPT-2 vocabulary)

function buildGpt2() {
  const GPT3Tokenizer = require('gpt3-tokenizer').default;
  // The constructor parses src/encodings.ts (token -> id) and src/bpe-vocab.ts
  // (merges text) exactly as its encoder uses them; read those fields.
  const tok = new GPT3Tokenizer({ type: 'gpt3' });
  const encodings = tok.encodings;
  const lines = tok.vocab.split('\n');
  if (!lines[0].startsWith('#version')) throw new Error('gpt2: unexpected merges header');
  const merges = lines.slice(1, lines.length - 1).map((line) => {
    const parts = line.split(/(\s+)/).filter((p) => p.trim().length > 0);
    if (parts.length !== 2) throw new Error(`gpt2: bad merge line ${JSON.stringify(line)}`);
    return parts;
  });
  const vocab = Object.entries(encodings).sort((a, b) => a[1] - b[1]);
  if (vocab.length !== 50257) throw new Error(`gpt2: expected 50257 tokens, got ${vocab.length}`);
  vocab.forEach(([, id], i) => { if (id !== i) throw new Error('gpt2: ids are not 0..50256'); });
  const eot = '<|endoftext|>';
  if (encodings[eot] !== 50256) throw new Error('gpt2: <|endoftext|> is not 50256');
  checkBpe('gpt2', vocab, merges);

  const added = [addedToken(50256, eot, { normalized: true, special: true })];
  const byteLevel = (add_prefix_space, trim_offsets) => ({
    type: 'ByteLevel', add_prefix_space, trim_offsets, use_regex: true,
  });
  const json = tokenizerJson({
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: byteLevel(false, true),
    post_processor: byteLevel(true, false),
    decoder: byteLevel(false, true),
    model: bpeModel({
      unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false,
      byte_fallback: false, ignore_merges: false, vocab, merges,
    }),
  });
  const config = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: addedTokensDecoder(added),
    bos_token: eot,
    clean_up_tokenization_spaces: false,
    eos_token: eot,
    errors: 'replace',
    model_max_length: 1024,
    pad_token: null,
    tokenizer_class: 'GPT2Tokenizer',
    unk_token: eot,
  };
  return { json, config, stats: { vocab: vocab.length, merges: merges.length, added: added.length } };
}

// ---------------------------------------------------------------------------
// llama / llama-metaspace (llama-tokenizer-js: the LLaMA / Llama-2 vocabulary)

// The Llama-2-chat template as it appears in meta-llama/Llama-2-*-chat-hf
// tokenizer_config.json.
const LLAMA2_CHAT_TEMPLATE =
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}" +
  "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}" +
  "{% set system_message = false %}{% endif %}{% for message in loop_messages %}" +
  "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}" +
  "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}" +
  "{% if loop.index0 == 0 and system_message != false %}" +
  "{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}" +
  "{% else %}{% set content = message['content'] %}{% endif %}" +
  "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}" +
  "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

let llamaCache = null;
function loadLlama() {
  if (llamaCache) return llamaCache;
  // llama-tokenizer-js decodes its embedded data on import: vocabById is the
  // base64 '\n'-joined vocabulary (index = id); merges maps "left right" to the
  // merge priority (2*i+1 for the i-th uint16 pair of merges_binary).
  return import('llama-tokenizer-js').then((mod) => {
    const t = mod.default;
    const vocabById = t.vocabById;
    if (vocabById.length !== 32000) throw new Error(`llama: expected 32000 tokens, got ${vocabById.length}`);
    const entries = [...t.merges.entries()].sort((a, b) => a[1] - b[1]);
    const merges = entries.map(([k]) => {
      const parts = k.split(' ');
      if (parts.length !== 2) throw new Error(`llama: ambiguous merge ${JSON.stringify(k)}`);
      return parts;
    });
    llamaCache = { vocabById, merges };
    return llamaCache;
  });
}

function llamaConfig(legacy) {
  return {
    add_bos_token: true,
    add_eos_token: false,
    added_tokens_decoder: addedTokensDecoder(llamaAdded()),
    bos_token: '<s>',
    chat_template: LLAMA2_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '</s>',
    legacy,
    model_max_length: 4096,
    pad_token: null,
    padding_side: 'right',
    sp_model_kwargs: {},
    spaces_between_special_tokens: false,
    tokenizer_class: 'LlamaTokenizer',
    unk_token: '<unk>',
    use_default_system_prompt: false,
  };
}

function llamaAdded() {
  return [addedToken(0, '<unk>'), addedToken(1, '<s>'), addedToken(2, '</s>')];
}

const LLAMA_DECODER = {
  type: 'Sequence',
  decoders: [
    { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
    { type: 'ByteFallback' },
    { type: 'Fuse' },
    { type: 'Strip', content: ' ', start: 1, stop: 0 },
  ],
};

const LLAMA_POST_PROCESSOR = {
  type: 'TemplateProcessing',
  single: [
    { SpecialToken: { id: '<s>', type_id: 0 } },
    { Sequence: { id: 'A', type_id: 0 } },
  ],
  pair: [
    { SpecialToken: { id: '<s>', type_id: 0 } },
    { Sequence: { id: 'A', type_id: 0 } },
    { SpecialToken: { id: '<s>', type_id: 1 } },
    { Sequence: { id: 'B', type_id: 1 } },
  ],
  special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
};

async function buildLlama(legacy) {
  const { vocabById, merges } = await loadLlama();
  const vocab = vocabById.map((t, i) => [t, i]);
  checkBpe('llama', vocab, merges);
  const added = llamaAdded();
  added.forEach((a) => { if (vocabById[a.id] !== a.content) throw new Error(`llama: id ${a.id} is not ${a.content}`); });
  const json = tokenizerJson({
    added_tokens: added,
    normalizer: legacy
      ? {
        type: 'Sequence',
        normalizers: [
          { type: 'Prepend', prepend: '\u2581' },
          { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
        ],
      }
      : null,
    pre_tokenizer: legacy ? null : { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
    post_processor: LLAMA_POST_PROCESSOR,
    decoder: LLAMA_DECODER,
    model: bpeModel({
      unk_token: '<unk>', continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true,
      byte_fallback: true, ignore_merges: false, vocab, merges,
    }),
  });
  return { json, config: llamaConfig(legacy), stats: { vocab: vocab.length, merges: merges.length, added: added.length } };
}

// ---------------------------------------------------------------------------
// llama-unigram (the llama pieces as a SentencePiece unigram model, laid out
// as XLM-RoBERTa's tokenizer.json is)
//
// No npm package ships a unigram vocabulary, so the llama pieces get scores:
// a piece's merge order stands in for its frequency, and its score is the
// log of a Zipf probability, -ln(rank + 1), rounded to a multiple of 2^-20
// so that every sum of scores is exact: the Rust library's Viterbi (which
// keeps the best score ending at each position) and tokenizers.js's (which
// keeps the best predecessor of each piece) then make the same choices, ties
// included, where with rounding errors they can part. Byte pieces score 0,
// as SentencePiece gives them; they match only their literal "<0xNN>" text.
// XLM-R's Precompiled normalizer (a compiled SentencePiece charsmap) becomes
// NFKC, the rule it was compiled from, and its Metaspace splits nothing, so
// that @huggingface/tokenizers (which ignores both) reads the same model.

async function buildUnigram() {
  const { vocabById } = await loadLlama();
  const firstMerged = 3 + 256; // <unk> <s> </s>, then the byte pieces
  const vocab = vocabById.map((piece, id) =>
    [piece, id < firstMerged ? 0 : Math.round(-Math.log(id - firstMerged + 2) * 2 ** 20) / 2 ** 20]);
  const added = llamaAdded();
  const json = tokenizerJson({
    added_tokens: added,
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'NFKC' },
        { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
      ],
    },
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: false },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '<s>', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } },
        { SpecialToken: { id: '</s>', type_id: 0 } },
      ],
      special_tokens: {
        '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] },
        '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] },
      },
    },
    decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: false },
    model: { type: 'Unigram', unk_id: 0, vocab, byte_fallback: false },
  });
  const config = {
    added_tokens_decoder: addedTokensDecoder(added),
    bos_token: '<s>',
    clean_up_tokenization_spaces: false,
    cls_token: '<s>',
    eos_token: '</s>',
    model_max_length: 512,
    sep_token: '</s>',
    tokenizer_class: 'XLMRobertaTokenizer',
    unk_token: '<unk>',
  };
  return { json, config, stats: { vocab: vocab.length, merges: 0, added: added.length } };
}

// ---------------------------------------------------------------------------
// bert-wordpiece (synthetic WordPiece vocabulary derived from the llama one)

async function buildBert() {
  const { vocabById } = await loadLlama();
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  const seen = new Set(specials);
  const tokens = specials.slice();
  vocabById.forEach((t, id) => {
    if (id < 3) return; // <unk> <s> </s>
    if (/^<0x[0-9A-F]{2}>$/.test(t)) return; // byte-fallback tokens
    let w = t.startsWith('\u2581') ? t.slice(1) : '##' + t;
    if (w === '' || w === '##') return;
    w = w.toLowerCase();
    if (seen.has(w)) return;
    seen.add(w);
    tokens.push(w);
  });
  const vocab = tokens.map((t, i) => [t, i]);
  const added = specials.map((s, i) => addedToken(i, s));
  const json = tokenizerJson({
    added_tokens: added,
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [2], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [3], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100,
      vocab: vocabMap(vocab),
    },
  });
  const config = {
    added_tokens_decoder: addedTokensDecoder(added),
    clean_up_tokenization_spaces: true,
    cls_token: '[CLS]',
    do_basic_tokenize: true,
    do_lower_case: true,
    mask_token: '[MASK]',
    model_max_length: 512,
    never_split: null,
    pad_token: '[PAD]',
    sep_token: '[SEP]',
    strip_accents: null,
    tokenize_chinese_chars: true,
    tokenizer_class: 'BertTokenizer',
    unk_token: '[UNK]',
  };
  return { json, config, stats: { vocab: vocab.length, merges: 0, added: added.length } };
}

// ---------------------------------------------------------------------------
// claude (@anthropic-ai/tokenizer: tiktoken-format ranks)

// Same parse as tiktoken's wasm CoreBPEConstructor::parse_bfe: if the text
// starts with '!', every line is "! <offset> <b64> <b64> ..." and the k-th
// token on the line gets rank offset+k; otherwise every line is "<b64> <rank>".
// Later duplicates overwrite earlier ones (HashMap insert).
function parseTiktokenRanks(text) {
  const ranks = new Map(); // latin1 string of the token bytes -> rank
  const lines = text.split('\n').filter((l, i, a) => !(l === '' && i === a.length - 1));
  const b64 = (s) => {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw new Error(`claude: bad base64 ${JSON.stringify(s)}`);
    return Buffer.from(s, 'base64').toString('latin1');
  };
  if (text[0] === '!') {
    for (const line of lines) {
      const parts = line.split(' ');
      const offset = Number.parseInt(parts[1], 10);
      if (!Number.isInteger(offset)) throw new Error(`claude: bad offset line ${line.slice(0, 40)}`);
      for (let k = 2; k < parts.length; k++) ranks.set(b64(parts[k]), offset + (k - 2));
    }
  } else {
    for (const line of lines) {
      const [tok, rank] = line.split(' ');
      ranks.set(b64(tok), Number.parseInt(rank, 10));
    }
  }
  return ranks;
}

function buildClaude() {
  const claude = require('@anthropic-ai/tokenizer/claude.json');
  const ranks = parseTiktokenRanks(claude.bpe_ranks);
  const byRank = [...ranks.entries()].sort((a, b) => a[1] - b[1]);
  const rankValues = new Set(byRank.map(([, r]) => r));
  if (rankValues.size !== byRank.length) throw new Error('claude: two tokens share a rank');
  const specialIds = Object.values(claude.special_tokens);
  for (const id of specialIds) if (rankValues.has(id)) throw new Error(`claude: special id ${id} collides with a rank`);
  for (let b = 0; b < 256; b++) {
    if (!ranks.has(String.fromCharCode(b))) throw new Error(`claude: byte ${b} has no token`);
  }
  const toStr = (latin1) => bytesToUnicode(Array.from(latin1, (c) => c.charCodeAt(0)));

  // transformers' TikTokenConverter.generate_vocab_and_merges.
  const vocab = byRank.map(([tok, rank]) => [toStr(tok), rank]);
  const merges = [];
  for (const [tok, rank] of byRank) {
    if (tok.length === 1) continue;
    const local = [];
    for (let i = 1; i < tok.length; i++) {
      const l = tok.slice(0, i);
      const r = tok.slice(i);
      if (ranks.has(l) && ranks.has(r)) local.push([l, r, rank]);
    }
    local.sort((x, y) => (ranks.get(x[0]) - ranks.get(y[0])) || (ranks.get(x[1]) - ranks.get(y[1])));
    merges.push(...local);
  }
  // Stable sort by the merged token's rank (byRank is already in rank order,
  // so this is a no-op kept for fidelity to the converter).
  merges.sort((x, y) => x[2] - y[2]);
  const mergePairs = merges.map(([l, r]) => [toStr(l), toStr(r)]);
  checkBpe('claude', vocab, mergePairs);

  const added = Object.entries(claude.special_tokens)
    .sort((a, b) => a[1] - b[1])
    .map(([content, id]) => addedToken(id, content, { normalized: false, special: true }));
  const json = tokenizerJson({
    added_tokens: added,
    normalizer: { type: 'NFKC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: claude.pat_str }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: bpeModel({
      unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false,
      byte_fallback: false, ignore_merges: true, vocab, merges: mergePairs,
    }),
  });
  const config = {
    added_tokens_decoder: addedTokensDecoder(added),
    bos_token: null,
    clean_up_tokenization_spaces: false,
    eos_token: '<EOT>',
    model_max_length: 100000,
    pad_token: null,
    tokenizer_class: 'PreTrainedTokenizerFast',
    unk_token: null,
  };
  return { json, config, stats: { vocab: vocab.length, merges: mergePairs.length, added: added.length } };
}

// ---------------------------------------------------------------------------

const BUILDERS = {
  gpt2: buildGpt2,
  llama: () => buildLlama(true),
  'llama-metaspace': () => buildLlama(false),
  'llama-unigram': buildUnigram,
  claude: buildClaude,
  'bert-wordpiece': buildBert,
};

function usage(msg) {
  if (msg) process.stderr.write(`convert.mjs: ${msg}\n`);
  process.stderr.write('usage: node convert.mjs --out DIR [--only NAME[,NAME...]] [--merges pairs|strings]\n');
  process.exit(2);
}

async function main() {
  const args = process.argv.slice(2);
  let out = null;
  let only = Object.keys(BUILDERS);
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--out') out = args[++i];
    else if (a === '--only') only = args[++i].split(',');
    else if (a === '--merges') mergesFormat = args[++i];
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument ${a}`);
  }
  if (!out) usage('--out is required');
  if (!['pairs', 'strings'].includes(mergesFormat)) usage('--merges must be pairs or strings');
  for (const n of only) if (!BUILDERS[n]) usage(`unknown vocabulary ${n}`);

  for (const name of only) {
    const t0 = performance.now();
    const { json, config, stats } = await BUILDERS[name]();
    const dir = path.join(out, name);
    fs.mkdirSync(dir, { recursive: true });
    const text = toJson(json);
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), text);
    fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), toJson(sortKeysDeep(config)) + '\n');
    const ms = performance.now() - t0;
    process.stderr.write(
      `${name}: vocab ${stats.vocab}, merges ${stats.merges}, added ${stats.added}, ` +
      `tokenizer.json ${Buffer.byteLength(text)} bytes, ${ms.toFixed(0)} ms\n`);
  }
}

main().catch((e) => { process.stderr.write(`convert.mjs: ${e.stack || e}\n`); process.exit(1); });
