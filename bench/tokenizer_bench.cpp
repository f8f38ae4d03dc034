//===- tokenizer_bench.cpp - Encoding throughput of the tokenizer ---------===//
//
//   kiln-tokenizer-bench TOKENIZER CORPUS.json [--seconds S]
//
// Encodes every string of the corpus (a JSON list of strings), with special
// tokens, over and over for about S seconds (default 3) on one thread, after
// one warm-up pass, and prints one JSON line: UTF-8 input bytes and tokens per
// second, and the rate of the first pass (a fresh tokenizer, whose BPE word
// cache starts empty). bench/tokenizer.py runs it beside the JavaScript
// reference.
//
//===----------------------------------------------------------------------===//
#include "kiln/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-tokenizer-bench TOKENIZER CORPUS.json [--seconds S]\n");
    return 1;
  }
  double seconds = 3.0;
  for (int i = 3; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--seconds")
      seconds = std::stod(argv[i + 1]);
  try {
    std::ifstream file(argv[2]);
    std::vector<std::string> corpus = nlohmann::json::parse(file).get<std::vector<std::string>>();
    size_t corpusBytes = 0;
    for (const std::string &text : corpus)
      corpusBytes += text.size();

    using Clock = std::chrono::steady_clock;
    kiln::Tokenizer tokenizer(argv[1]);
    auto pass = [&] {
      size_t tokens = 0;
      for (const std::string &text : corpus)
        tokens += tokenizer.encode(text).size();
      return tokens;
    };
    Clock::time_point start = Clock::now();
    pass();
    double firstPass = std::chrono::duration<double>(Clock::now() - start).count();

    size_t bytes = 0, tokens = 0;
    start = Clock::now();
    double elapsed = 0;
    do {
      tokens += pass();
      bytes += corpusBytes;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < seconds);
    std::printf("{\"bytes_per_s\": %.0f, \"tokens_per_s\": %.0f, "
                "\"first_pass_bytes_per_s\": %.0f, \"corpus_bytes\": %zu, \"seconds\": %.2f}\n",
                bytes / elapsed, tokens / elapsed, corpusBytes / firstPass, corpusBytes, elapsed);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-tokenizer-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
