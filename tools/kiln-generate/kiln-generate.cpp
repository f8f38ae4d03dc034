//===- kiln-generate.cpp - Generates tokens with the Kiln engine ----------===//
//
// kiln-generate MODEL.kiln --prompt-ids 1,2,3 [--prompt-ids ...]
//               [--max-tokens N] [sampling options] [engine options]
//               [--json] [--stream] [--stats]
//
// Every prompt becomes one request of one engine, all added at once and
// served together (continuous batching). Prints each request's generated
// ids in the order the prompts were given; with --json, one line per
// request: {"prompt_ids": [...], "output_ids": [...], "finish_reason": ...}.
// Any error is printed with what it concerns, and the exit code is 1 (also
// when a request failed; its line then carries "error").
//
//===----------------------------------------------------------------------===//
#include "kiln/engine.hpp"
#include "tools/common/EngineFlags.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: kiln-generate MODEL.kiln --prompt-ids IDS [--prompt-ids IDS ...]\n"
    "                     [options]\n"
    "\n"
    "Generates tokens for each prompt (comma-separated token ids) through the\n"
    "generation engine, all prompts at once.\n"
    "Sampling (per request, as OpenAI and vLLM define them):\n"
    "  --max-tokens N            tokens to generate at most (default 16)\n"
    "  --temperature T           0 is greedy (default 1)\n"
    "  --top-k K --top-p P --min-p M\n"
    "  --repetition-penalty R --presence-penalty P --frequency-penalty F\n"
    "  --seed S                  every request's seed: reproducible tokens\n"
    "  --stop-ids IDS            stop after any of these tokens\n"
    "  --logprobs N              the chosen token's and the N most likely\n"
    "                            tokens' log-probabilities (--json)\n"
    "Output:\n"
    "  --json                    one JSON line per request\n"
    "  --stream                  print each token as it is generated\n"
    "  --stats                   print the engine's counters to stderr\n";
const std::string kFullUsage =
    std::string(kUsage) + kiln::tools::FlagReader::kEngineUsage;

const char *finishName(kiln_finish_reason_t reason) {
  switch (reason) {
  case KILN_FINISH_STOP: return "stop";
  case KILN_FINISH_LENGTH: return "length";
  case KILN_FINISH_ABORT: return "abort";
  case KILN_FINISH_ERROR: return "error";
  default: return "none";
  }
}

struct Result {
  std::vector<int64_t> outputIds;
  nlohmann::json logprobs = nlohmann::json::array();
  kiln_finish_reason_t finish = KILN_FINISH_NONE;
  std::string error;
};

} // namespace

int main(int argc, char **argv) {
  std::string modelPath;
  std::vector<std::vector<int64_t>> prompts;
  kiln::SamplingParams params;
  std::vector<int64_t> stopIds;
  kiln::EngineOptions options;
  int threads = 0;
  bool json = false, stream = false, printStats = false;

  kiln::tools::FlagReader flags("kiln-generate", argc, argv);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kFullUsage.c_str(), stdout);
      return 0;
    } else if (flags.engineOption(i, options, threads)) {
    } else if (arg == "--prompt-ids") {
      prompts.push_back(flags.ids(i));
    } else if (arg == "--max-tokens") {
      params.max_tokens = (int32_t)flags.integer(i, 1, INT32_MAX);
    } else if (arg == "--temperature") {
      params.temperature = (float)flags.number(i);
    } else if (arg == "--top-k") {
      params.top_k = (int32_t)flags.integer(i, 0, INT32_MAX);
    } else if (arg == "--top-p") {
      params.top_p = (float)flags.number(i);
    } else if (arg == "--min-p") {
      params.min_p = (float)flags.number(i);
    } else if (arg == "--repetition-penalty") {
      params.repetition_penalty = (float)flags.number(i);
    } else if (arg == "--presence-penalty") {
      params.presence_penalty = (float)flags.number(i);
    } else if (arg == "--frequency-penalty") {
      params.frequency_penalty = (float)flags.number(i);
    } else if (arg == "--seed") {
      params.seed = (uint64_t)flags.integer(i, 0, INT64_MAX);
      params.has_seed = 1;
    } else if (arg == "--stop-ids") {
      stopIds = flags.ids(i);
    } else if (arg == "--logprobs") {
      params.logprobs = (int32_t)flags.integer(i, 0, 20);
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "--stream") {
      stream = true;
    } else if (arg == "--stats") {
      printStats = true;
    } else if (!arg.empty() && arg[0] == '-') {
      flags.fail("unknown option '" + arg + "'\n" + kFullUsage);
    } else if (modelPath.empty()) {
      modelPath = arg;
    } else {
      flags.fail("more than one model given ('" + modelPath + "' and '" + arg + "')");
    }
  }
  if (modelPath.empty())
    flags.fail("no model given\n" + kFullUsage);
  if (prompts.empty())
    flags.fail("no prompt given: pass --prompt-ids IDS at least once");
  params.stop_token_ids = stopIds.data();
  params.num_stop_token_ids = (int32_t)stopIds.size();

  std::vector<Result> results(prompts.size());
  try {
    kiln::Instance instance(threads);
    kiln::Model model(instance, modelPath);
    kiln::Engine engine(model, options);
    for (size_t index = 0; index < prompts.size(); ++index) {
      Result &result = results[index];
      bool wantLogprobs = params.logprobs >= 0;
      auto onEvent = [&result, index, stream, json,
                      wantLogprobs](const kiln_engine_event_t &event) {
        if (event.token_id >= 0) {
          result.outputIds.push_back(event.token_id);
          if (wantLogprobs) {
            nlohmann::json top = nlohmann::json::array();
            for (int32_t k = 0; k < event.num_top_logprobs; ++k)
              top.push_back({{"token_id", event.top_token_ids[k]},
                             {"logprob", event.top_logprobs[k]}});
            result.logprobs.push_back({{"token_id", event.token_id},
                                       {"logprob", event.logprob},
                                       {"top_logprobs", top}});
          }
          if (stream) {
            if (json)
              std::printf("%s\n", nlohmann::json({{"index", index},
                                                  {"token_id", event.token_id}})
                                      .dump()
                                      .c_str());
            else
              std::printf("[%zu] %lld\n", index, (long long)event.token_id);
            std::fflush(stdout);
          }
        }
        result.finish = event.finish_reason;
        if (event.error_message)
          result.error = event.error_message;
      };
      try {
        engine.addRequest(prompts[index], params, onEvent);
      } catch (const kiln::Error &e) {
        flags.fail("prompt " + std::to_string(index) + ": " + e.what());
      }
    }
    while (engine.step() > 0) {
    }
    if (printStats) {
      kiln_engine_stats_t stats = engine.stats();
      std::fprintf(stderr,
                   "steps %llu, computed tokens %llu, generated tokens %llu, "
                   "prefix-cache hit tokens %llu, preemptions %llu, peak running "
                   "%d, blocks %d (free %d, cached %d)\n",
                   (unsigned long long)stats.num_steps,
                   (unsigned long long)stats.num_computed_tokens,
                   (unsigned long long)stats.num_generated_tokens,
                   (unsigned long long)stats.num_prefix_cache_hit_tokens,
                   (unsigned long long)stats.num_preemptions, stats.peak_num_running,
                   stats.num_blocks_total, stats.num_blocks_free,
                   stats.num_blocks_cached);
    }
  } catch (const kiln::Error &e) {
    flags.fail(e.what());
  }

  bool failed = false;
  for (size_t index = 0; index < prompts.size(); ++index) {
    const Result &result = results[index];
    failed |= result.finish == KILN_FINISH_ERROR;
    if (json) {
      nlohmann::json line = {{"prompt_ids", prompts[index]},
                             {"output_ids", result.outputIds},
                             {"finish_reason", finishName(result.finish)}};
      if (params.logprobs >= 0)
        line["logprobs"] = result.logprobs;
      if (!result.error.empty())
        line["error"] = result.error;
      std::printf("%s\n", line.dump().c_str());
    } else {
      std::printf("request %zu (%zu prompt tokens, %s):", index,
                  prompts[index].size(), finishName(result.finish));
      for (int64_t id : result.outputIds)
        std::printf(" %lld", (long long)id);
      std::printf("\n");
      if (!result.error.empty())
        std::fprintf(stderr, "kiln-generate: error: request %zu: %s\n", index,
                     result.error.c_str());
    }
  }
  return failed ? 1 : 0;
}
