#!/usr/bin/env python3
"""The tokenizer's encoding throughput beside the JavaScript reference, in
one run:

- kiln-tokenizer-bench (C++, one thread);
- @huggingface/tokenizers (scripts/tokenizers/reference.mjs --bench, Node,
  one thread), on the same tokenizer.json.

Both encode test/tokenizer/corpus.json (226 strings, 32.5 KB: prose in
fifteen languages, emoji, code and whitespace runs) over and over, with
special tokens, after a warm-up; both memoize BPE words, so this is the
steady-state rate of a server that sees the same words again. Rounds
alternate the two and the best of each stands. Prints a table (MB/s of UTF-8
input, and kiln/JS) and writes WORK/tokenizer.json.

    python3 bench/tokenizer.py [--seconds 3] [--rounds 3]
"""
import argparse
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCABULARIES = ["gpt2", "llama", "llama-unigram", "claude", "bert-wordpiece"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--corpus", default=os.path.join(ROOT, "test", "tokenizer", "corpus.json"))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work-dir", default=os.path.join(ROOT, "build", "bench_tokenizer"))
    args = parser.parse_args()

    bench = os.path.join(args.build, "bin", "kiln-tokenizer-bench")
    reference = os.path.join(ROOT, "scripts", "tokenizers", "reference.mjs")
    results = {}
    for name in VOCABULARIES:
        vocabulary = os.path.join(args.build, "tokenizers", name)
        best = {"kiln": 0.0, "js": 0.0}
        for _ in range(args.rounds):
            kiln = json.loads(subprocess.run(
                [bench, vocabulary, args.corpus, "--seconds", str(args.seconds)],
                capture_output=True, text=True, check=True).stdout)
            js = json.loads(subprocess.run(
                ["node", reference, "--tokenizer", vocabulary, "--corpus", args.corpus,
                 "--bench", str(args.seconds)],
                capture_output=True, text=True, check=True).stdout)
            best["kiln"] = max(best["kiln"], kiln["bytes_per_s"])
            best["js"] = max(best["js"], js["bytes_per_s"])
        results[name] = best

    print(f"{'vocabulary':<16} {'kiln MB/s':>10} {'JS MB/s':>9} {'kiln/JS':>8}")
    for name, best in results.items():
        print(f"{name:<16} {best['kiln'] / 1e6:>10.2f} {best['js'] / 1e6:>9.2f} "
              f"{best['kiln'] / best['js']:>8.2f}")
    os.makedirs(args.work_dir, exist_ok=True)
    with open(os.path.join(args.work_dir, "tokenizer.json"), "w") as out:
        json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
