//===- EngineFlags.h - Command-line parsing shared by the engine's tools --===//
//
// kiln-generate and kiln-bench-throughput read the same engine options and
// numbers the same way; an error names the flag and the value and exits 1.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_COMMON_ENGINEFLAGS_H
#define KILN_TOOLS_COMMON_ENGINEFLAGS_H

#include "kiln/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace kiln::tools {

class FlagReader {
public:
  FlagReader(const char *tool, int argc, char **argv)
      : tool_(tool), argc_(argc), argv_(argv) {}

  [[noreturn]] void fail(const std::string &message) const {
    std::fprintf(stderr, "%s: error: %s\n", tool_, message.c_str());
    std::exit(1);
  }
  /// The value after the flag at argv[i], which i then points to.
  std::string value(int &i) const {
    if (i + 1 >= argc_)
      fail(std::string(argv_[i]) + " expects a value");
    return argv_[++i];
  }
  double number(int &i) const {
    std::string flag = argv_[i], text = value(i);
    char *end = nullptr;
    double result = std::strtod(text.c_str(), &end);
    if (text.empty() || *end || !std::isfinite(result))
      fail(flag + " expects a number, got '" + text + "'");
    return result;
  }
  int64_t integer(int &i, int64_t min, int64_t max) const {
    std::string flag = argv_[i];
    return parseInteger(flag, value(i), min, max);
  }
  /// Comma-separated non-negative integers ("1,2,3").
  std::vector<int64_t> ids(int &i) const {
    std::string flag = argv_[i], text = value(i);
    std::vector<int64_t> result;
    for (size_t start = 0; start <= text.size();) {
      size_t comma = std::min(text.find(',', start), text.size());
      result.push_back(parseInteger(flag, text.substr(start, comma - start), 0, INT64_MAX));
      start = comma + 1;
    }
    return result;
  }
  /// A range "A:B" with min <= A <= B.
  std::pair<int64_t, int64_t> range(int &i, int64_t min, int64_t max) const {
    std::string flag = argv_[i], text = value(i);
    size_t colon = text.find(':');
    if (colon == std::string::npos)
      fail(flag + " expects MIN:MAX, got '" + text + "'");
    int64_t low = parseInteger(flag, text.substr(0, colon), min, max);
    int64_t high = parseInteger(flag, text.substr(colon + 1), low, max);
    return {low, high};
  }

  /// Reads the engine option at argv[i] into `options` or `threads`; false
  /// when argv[i] is not one.
  bool engineOption(int &i, kiln::EngineOptions &options, int &threads) const {
    std::string flag = argv_[i];
    if (flag == "--threads")
      threads = (int)integer(i, 0, 1024);
    else if (flag == "--block-size")
      options.block_size = (int32_t)integer(i, 1, 4096);
    else if (flag == "--kv-cache-bytes")
      options.kv_cache_bytes = (uint64_t)integer(i, 1, INT64_MAX);
    else if (flag == "--max-num-seqs")
      options.max_num_seqs = (int32_t)integer(i, 1, INT32_MAX);
    else if (flag == "--max-num-batched-tokens")
      options.max_num_batched_tokens = (int32_t)integer(i, 1, INT32_MAX);
    else if (flag == "--no-prefix-caching")
      options.enable_prefix_caching = 0;
    else
      return false;
    return true;
  }
  static constexpr const char *kEngineUsage =
      "Engine:\n"
      "  --threads N               worker threads (0: one per core)\n"
      "  --block-size N            tokens per KV block (default: a paged\n"
      "                            artifact's, or 16)\n"
      "  --kv-cache-bytes N        the KV pool (default: max-num-seqs sequences\n"
      "                            of the model's longest length)\n"
      "  --max-num-seqs N          running sequences at most (default: the\n"
      "                            model's batch bound, at most 256)\n"
      "  --max-num-batched-tokens N  tokens per step (default 512)\n"
      "  --no-prefix-caching       do not share the blocks of equal prefixes\n";

private:
  int64_t parseInteger(const std::string &flag, const std::string &text,
                       int64_t min, int64_t max) const {
    char *end = nullptr;
    errno = 0;
    long long result = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end || errno || result < min || result > max)
      fail(flag + " expects an integer in [" + std::to_string(min) + ", " +
           std::to_string(max) + "], got '" + text + "'");
    return result;
  }

  const char *tool_;
  int argc_;
  char **argv_;
};

} // namespace kiln::tools

#endif // KILN_TOOLS_COMMON_ENGINEFLAGS_H
