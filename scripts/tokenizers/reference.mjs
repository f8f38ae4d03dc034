#!/usr/bin/env node
// Reference encoder for Kiln's tokenizer tests.
//
//   node scripts/tokenizers/reference.mjs --tokenizer DIR/NAME --corpus FILE.json
//        [--package gpt2|llama|claude|none] [--no-special] [--bench SECONDS [--no-cache]]
//        [--pairs]
//
// For each string of the corpus (a JSON array of strings) prints one line:
//   {"index": i, "ids": [...], "package_ids": [...], "decoded": "..."}
// ids:         @huggingface/tokenizers  tokenizer.encode(text, { add_special_tokens })
//              (add_special_tokens true unless --no-special)
// package_ids: the npm package's own encoder (only with --package), called so
//              that its special-token handling matches add_special_tokens:
//                gpt2:   new GPT3Tokenizer({ type: 'gpt3' }).encode(text).bpe
//                        (GPT-2 adds no special tokens either way)
//                llama:  llamaTokenizer.encode(text, add_bos, true)
//                        (add_bos = add_special_tokens; see the '' note below)
//                claude: getTokenizer().encode(text.normalize('NFKC'), 'all')
//                        (no BOS/EOS either way; 'all' = special tokens in
//                        the text are recognised, as HF does for added tokens)
// decoded:     tokenizer.decode(ids, { skip_special_tokens: false,
//                                      clean_up_tokenization_spaces: false })
//              ("" when ids is empty: tokenizers.js throws on an empty list)
//
// --pairs: the corpus is a JSON array of [text, pair] and each line is
//   {"index": i, "ids": [...], "type_ids": [...] or null}
// from tokenizer.encode(text, { text_pair: pair, add_special_tokens,
// return_token_type_ids: true }); type_ids is null where tokenizers.js gives
// none (its ByteLevel post-processor and a missing one return no type ids).
//
// --bench SECONDS: instead of the above, encode the whole corpus repeatedly
// with @huggingface/tokenizers for about that long (after a warm-up pass) and
// print {"bytes_per_s": X, "tokens_per_s": Y, ...} (UTF-8 bytes of input).
// tokenizers.js memoises BPE results per pre-token (LRU, 10k entries, pieces
// shorter than 256 UTF-16 units), so a repeated corpus mostly measures cache
// hits; --no-cache turns that memo off (BPE models only) for a cold-path rate.

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { Tokenizer } from '@huggingface/tokenizers';

const require = createRequire(import.meta.url);

function usage(msg) {
  if (msg) process.stderr.write(`reference.mjs: ${msg}\n`);
  process.stderr.write(
    'usage: node reference.mjs --tokenizer DIR --corpus FILE.json [--package gpt2|llama|claude|none] ' +
    '[--no-special] [--bench SECONDS [--no-cache]] [--pairs]\n');
  process.exit(2);
}

const args = process.argv.slice(2);
let tokDir = null;
let corpusPath = null;
let pkgName = 'none';
let addSpecial = true;
let benchSeconds = null;
let noCache = false;
let pairs = false;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--tokenizer') tokDir = args[++i];
  else if (a === '--corpus') corpusPath = args[++i];
  else if (a === '--package') pkgName = args[++i];
  else if (a === '--no-special') addSpecial = false;
  else if (a === '--bench') benchSeconds = Number(args[++i]);
  else if (a === '--no-cache') noCache = true;
  else if (a === '--pairs') pairs = true;
  else if (a === '-h' || a === '--help') usage();
  else usage(`unknown argument ${a}`);
}
if (!tokDir || !corpusPath) usage('--tokenizer and --corpus are required');
if (!['gpt2', 'llama', 'claude', 'none'].includes(pkgName)) usage(`unknown package ${pkgName}`);
if (benchSeconds !== null && !(benchSeconds > 0)) usage('--bench needs a positive number of seconds');

const readJson = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));
const tokenizerJson = readJson(path.join(tokDir, 'tokenizer.json'));
const configPath = path.join(tokDir, 'tokenizer_config.json');
const tokenizerConfig = fs.existsSync(configPath) ? readJson(configPath) : {};
const corpus = readJson(corpusPath);
const isPair = (p) => Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === 'string');
if (!Array.isArray(corpus) || !corpus.every(pairs ? isPair : (s) => typeof s === 'string')) {
  usage(`${corpusPath} is not a JSON array of ${pairs ? '[text, pair] lists' : 'strings'}`);
}

const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
if (noCache) {
  if (!('max_length_to_cache' in tokenizer.model)) usage('--no-cache only applies to BPE models');
  tokenizer.model.max_length_to_cache = 0;
  tokenizer.model.clear_cache();
}
const hfEncode = (text) => tokenizer.encode(text, { add_special_tokens: addSpecial }).ids;
const hfDecode = (ids) => (ids.length === 0
  ? ''
  : tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }));

async function packageEncoder(name) {
  if (name === 'none') return null;
  if (name === 'gpt2') {
    const GPT3Tokenizer = require('gpt3-tokenizer').default;
    const t = new GPT3Tokenizer({ type: 'gpt3' });
    return (text) => t.encode(text).bpe;
  }
  if (name === 'llama') {
    const llama = (await import('llama-tokenizer-js')).default;
    return (text) => {
      // llama-tokenizer-js returns [] for '' even when asked for BOS; HF's
      // TemplateProcessing still emits <s> for an empty input, so do the same.
      if (text === '') return addSpecial ? [1] : [];
      return llama.encode(text, addSpecial, true);
    };
  }
  if (name === 'claude') {
    const { getTokenizer } = require('@anthropic-ai/tokenizer');
    const t = getTokenizer(); // one instance for the run; freed below
    const encode = (text) => Array.from(t.encode(text.normalize('NFKC'), 'all'));
    encode.free = () => t.free();
    return encode;
  }
  throw new Error(name);
}

if (benchSeconds !== null) {
  const bytes = corpus.reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
  // Warm-up: one full pass, then keep going for 10% of the budget (JIT, caches).
  let warm = performance.now();
  do { for (const s of corpus) hfEncode(s); } while (performance.now() - warm < benchSeconds * 100);
  let passes = 0;
  let tokens = 0;
  const t0 = performance.now();
  let elapsed = 0;
  do {
    for (const s of corpus) tokens += hfEncode(s).length;
    passes++;
    elapsed = (performance.now() - t0) / 1000;
  } while (elapsed < benchSeconds);
  const out = {
    bytes_per_s: Math.round((bytes * passes) / elapsed),
    tokens_per_s: Math.round(tokens / elapsed),
    passes,
    seconds: Number(elapsed.toFixed(3)),
    corpus_bytes: bytes,
    corpus_strings: corpus.length,
    bpe_cache: !noCache,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

if (pairs) {
  const lines = corpus.map(([text, pair], index) => {
    const encoding = tokenizer.encode(text, {
      text_pair: pair, add_special_tokens: addSpecial, return_token_type_ids: true,
    });
    return JSON.stringify({ index, ids: encoding.ids, type_ids: encoding.token_type_ids ?? null });
  });
  process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''));
} else {
  const pkgEncode = await packageEncoder(pkgName);
  const lines = [];
  corpus.forEach((text, index) => {
    const ids = hfEncode(text);
    const rec = { index, ids };
    if (pkgEncode) rec.package_ids = pkgEncode(text);
    rec.decoded = hfDecode(ids);
    lines.push(JSON.stringify(rec));
  });
  if (pkgEncode && pkgEncode.free) pkgEncode.free();
  process.stdout.write(lines.join('\n') + (lines.length ? '\n' : ''));
}
