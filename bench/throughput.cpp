//===- throughput.cpp - The engine's offline throughput (kiln-bench-throughput)
//
// kiln-bench-throughput MODEL.kiln --num-prompts N --input-len A:B
//     --output-len C:D [--kv-cache-bytes X] [--batching continuous|static]
//     [--seed S] [--temperature T] [engine options] [--json]
// kiln-bench-throughput MODEL.kiln --requests FILE.json [...]
//
// Like vLLM's benchmark_throughput: N requests with random prompts of A to B
// tokens, each generating exactly its output length (C to D tokens; no stop
// token), all available at the start. --requests reads them instead from
// {"requests": [{"prompt_ids": [...], "max_tokens": N}, ...]}, the file
// bench/ort/generate_ort.js runs through ONNX Runtime. With --batching continuous they go to
// the engine at once and it admits them as blocks and its budget allow.
// With --batching static, the baseline of a server that reserves every
// sequence's longest KV (prompt B + output D tokens) contiguously, as a
// dense past tensor would (the longest of the file's requests with
// --requests): a batch of as many requests as those
// reservations fit in the same KV bytes (and max-num-seqs allow) runs to
// its end before the next is admitted.
//
// Prints the requests and output tokens per second, the peak of concurrent
// sequences, preemptions, the KV waste at steady state: over the steps
// where requests were waiting, the mean of (slots the running requests hold
// minus slots holding a token) / the pool's slots; and the median time of a
// decode-only step (every running request computes one token) at the
// largest batch such steps had.
//
//===----------------------------------------------------------------------===//
#include "kiln/engine.hpp"
#include "tools/common/EngineFlags.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: kiln-bench-throughput MODEL.kiln --num-prompts N --input-len A:B\n"
    "                             --output-len C:D [options]\n"
    "\n"
    "Serves N random requests through the generation engine and prints its\n"
    "throughput.\n"
    "  --batching continuous|static  (default continuous; see the source's\n"
    "                            header for the static baseline)\n"
    "  --requests FILE.json      the requests, instead of random ones\n"
    "  --seed S                  the prompts' and lengths' seed (default 0)\n"
    "  --temperature T           0 (the default) samples greedily\n"
    "  --json                    print one JSON object\n";

} // namespace

int main(int argc, char **argv) {
  kiln::tools::FlagReader flags("kiln-bench-throughput", argc, argv);
  const std::string usage = std::string(kUsage) + kiln::tools::FlagReader::kEngineUsage;
  std::string modelPath, batching = "continuous", requestsPath;
  int64_t numPrompts = 0, seed = 0;
  std::pair<int64_t, int64_t> inputLen{0, 0}, outputLen{0, 0};
  double temperature = 0.0;
  kiln::EngineOptions options;
  int threads = 0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(usage.c_str(), stdout);
      return 0;
    } else if (flags.engineOption(i, options, threads)) {
    } else if (arg == "--requests") {
      requestsPath = flags.value(i);
    } else if (arg == "--num-prompts") {
      numPrompts = flags.integer(i, 1, 10000000);
    } else if (arg == "--input-len") {
      inputLen = flags.range(i, 1, INT32_MAX);
    } else if (arg == "--output-len") {
      outputLen = flags.range(i, 1, INT32_MAX);
    } else if (arg == "--batching") {
      batching = flags.value(i);
      if (batching != "continuous" && batching != "static")
        flags.fail("--batching expects continuous or static, got '" + batching + "'");
    } else if (arg == "--seed") {
      seed = flags.integer(i, 0, INT64_MAX);
    } else if (arg == "--temperature") {
      temperature = flags.number(i);
    } else if (arg == "--json") {
      json = true;
    } else if (!arg.empty() && arg[0] == '-') {
      flags.fail("unknown option '" + arg + "'\n" + usage);
    } else if (modelPath.empty()) {
      modelPath = arg;
    } else {
      flags.fail("more than one model given ('" + modelPath + "' and '" + arg + "')");
    }
  }
  if (modelPath.empty())
    flags.fail("no model given\n" + usage);
  if (requestsPath.empty() && (!numPrompts || !inputLen.first || !outputLen.first))
    flags.fail("--num-prompts, --input-len and --output-len are required without --requests");

  try {
    kiln::Instance instance(threads);
    kiln::Model model(instance, modelPath);
    kiln::Engine engine(model, options);
    kiln_engine_stats_t initial = engine.stats();
    int32_t vocab = model.output(kiln_model_find_output(model.get(), "logits")).dims[2].size;

    std::vector<std::vector<int64_t>> prompts;
    std::vector<int32_t> outputLens;
    if (!requestsPath.empty()) {
      std::ifstream file(requestsPath);
      if (!file)
        flags.fail("cannot read " + requestsPath);
      try {
        nlohmann::json requests = nlohmann::json::parse(file).at("requests");
        for (const nlohmann::json &request : requests) {
          prompts.push_back(request.at("prompt_ids").get<std::vector<int64_t>>());
          outputLens.push_back(request.at("max_tokens").get<int32_t>());
        }
      } catch (const nlohmann::json::exception &e) {
        flags.fail(requestsPath + ": " + e.what());
      }
      numPrompts = (int64_t)prompts.size();
    } else {
      std::mt19937_64 random(seed);
      auto uniform = [&random](std::pair<int64_t, int64_t> bounds) {
        return std::uniform_int_distribution<int64_t>(bounds.first, bounds.second)(random);
      };
      prompts.resize(numPrompts);
      outputLens.resize(numPrompts);
      for (int64_t r = 0; r < numPrompts; ++r) {
        prompts[r].resize(uniform(inputLen));
        for (int64_t &token : prompts[r])
          token = uniform({0, vocab - 1});
        outputLens[r] = (int32_t)uniform(outputLen);
      }
    }
    int64_t longest = 0;
    for (int64_t r = 0; r < numPrompts; ++r)
      longest = std::max<int64_t>(longest, (int64_t)prompts[r].size() + outputLens[r]);
    if (longest > initial.max_model_len)
      flags.fail("a request may reach " + std::to_string(longest) +
                 " tokens, more than the model's longest sequence (" +
                 std::to_string(initial.max_model_len) + ")");

    // The static baseline's batch: every sequence reserves `longest` slots.
    const uint64_t poolSlots = (uint64_t)initial.num_blocks_total * initial.block_size;
    const int64_t staticBatch =
        std::min<int64_t>(initial.max_num_seqs, (int64_t)(poolSlots / longest));
    if (batching == "static" && staticBatch < 1)
      flags.fail("the KV pool cannot reserve one sequence of " + std::to_string(longest) +
                 " tokens");

    int64_t finished = 0, generated = 0;
    double wasteSum = 0.0;
    int64_t saturatedSteps = 0;
    int64_t next = 0;
    auto addRequest = [&](int64_t r) {
      kiln::SamplingParams params;
      params.temperature = (float)temperature;
      params.max_tokens = outputLens[r];
      params.seed = (uint64_t)(seed + r);
      params.has_seed = 1;
      engine.addRequest(prompts[r], params, [&](const kiln_engine_event_t &event) {
        generated += event.token_id >= 0;
        if (event.finish_reason == KILN_FINISH_ERROR)
          flags.fail(std::string("a request failed: ") + event.error_message);
        finished += event.finish_reason != KILN_FINISH_NONE;
      });
    };
    // Decode-only steps' durations, by batch.
    std::vector<std::vector<double>> decodeSteps(initial.max_num_seqs + 1);
    kiln_engine_stats_t before = initial;
    auto start = std::chrono::steady_clock::now();
    if (batching == "continuous")
      for (; next < numPrompts; ++next)
        addRequest(next);
    while (finished < numPrompts) {
      if (batching == "static" && !engine.hasUnfinished())
        for (int64_t end = std::min(numPrompts, next + staticBatch); next < end; ++next)
          addRequest(next);
      auto stepStart = std::chrono::steady_clock::now();
      engine.step();
      double stepMs = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - stepStart)
                          .count();
      kiln_engine_stats_t stats = engine.stats();
      uint64_t computed = stats.num_computed_tokens - before.num_computed_tokens;
      uint64_t sampled = stats.num_generated_tokens - before.num_generated_tokens;
      if (computed > 0 && computed == sampled &&
          computed == (uint64_t)before.num_running && computed < decodeSteps.size())
        decodeSteps[computed].push_back(stepMs);
      before = stats;
      if (stats.num_waiting > 0 || (batching == "static" && next < numPrompts)) {
        wasteSum += (double)(stats.num_slots_allocated - stats.num_slots_used) / poolSlots;
        ++saturatedSteps;
      }
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    kiln_engine_stats_t stats = engine.stats();

    int64_t decodeBatch = (int64_t)decodeSteps.size() - 1;
    while (decodeBatch > 0 && decodeSteps[decodeBatch].empty())
      --decodeBatch;
    nlohmann::json decodeStepMs;
    if (decodeBatch > 0) {
      std::vector<double> &times = decodeSteps[decodeBatch];
      std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
      decodeStepMs = times[times.size() / 2];
    }

    int64_t promptTokens = 0;
    for (const auto &prompt : prompts)
      promptTokens += (int64_t)prompt.size();
    nlohmann::json result = {
        {"batching", batching},
        {"num_prompts", numPrompts},
        {"prompt_tokens", promptTokens},
        {"output_tokens", generated},
        {"seconds", seconds},
        {"requests_per_s", numPrompts / seconds},
        {"output_tokens_per_s", generated / seconds},
        {"total_tokens_per_s", (promptTokens + generated) / seconds},
        {"peak_concurrent_sequences", stats.peak_num_running},
        {"static_batch", staticBatch},
        {"preemptions", stats.num_preemptions},
        {"kv_pool_slots", poolSlots},
        {"kv_waste_steady_state",
         saturatedSteps ? nlohmann::json(wasteSum / saturatedSteps) : nlohmann::json()},
        {"steps", stats.num_steps},
        {"decode_step_batch", decodeBatch},
        {"decode_step_ms", decodeStepMs},
        {"computed_tokens", stats.num_computed_tokens},
        {"prefix_cache_hit_tokens", stats.num_prefix_cache_hit_tokens}};
    if (json) {
      std::printf("%s\n", result.dump().c_str());
    } else {
      std::printf("%s batching: %lld requests in %.2f s: %.2f requests/s, %.1f output "
                  "tokens/s, %.1f tokens/s in all\n",
                  batching.c_str(), (long long)numPrompts, seconds, numPrompts / seconds,
                  generated / seconds, (promptTokens + generated) / seconds);
      std::printf("peak concurrent sequences %d, preemptions %llu, KV waste at steady "
                  "state %s\n",
                  stats.peak_num_running, (unsigned long long)stats.num_preemptions,
                  saturatedSteps ? (std::to_string(100.0 * wasteSum / saturatedSteps) + "%").c_str()
                                 : "n/a (never saturated)");
      if (decodeBatch > 0)
        std::printf("decode-only step at batch %lld: median %.3f ms\n",
                    (long long)decodeBatch, decodeStepMs.get<double>());
    }
  } catch (const kiln::Error &e) {
    flags.fail(e.what());
  }
  return 0;
}
