//===- kiln-serve.cpp - An OpenAI-compatible server over the engine -------===//
//
// kiln-serve MODEL.kiln [--tokenizer DIR_OR_FILE] [--host H] [--port P]
//            [--served-model-name NAME] [--max-active-requests N]
//            [--drain-timeout S] [engine options]
//
// Serves /v1/completions, /v1/chat/completions, /v1/models, /health and
// /metrics. Without --tokenizer, prompts are token ids and answers carry
// token_ids with empty text (vLLM's --skip-tokenizer-init). SIGTERM or SIGINT
// stops taking requests, lets those in flight finish for up to
// --drain-timeout seconds, aborts the rest, and exits 0.
//
//===----------------------------------------------------------------------===//
#include "Server.h"

#include "tools/common/EngineFlags.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <thread>

namespace {

const char *kUsage =
    "usage: kiln-serve MODEL.kiln [options]\n"
    "\n"
    "Serves the model over HTTP with OpenAI's API.\n"
    "  --tokenizer PATH          tokenizer.json, or its directory (with\n"
    "                            tokenizer_config.json: eos, chat template).\n"
    "                            Without it prompts are token ids.\n"
    "  --host H                  address to listen on (default 127.0.0.1)\n"
    "  --port P                  port (default 8000; 0: any free port)\n"
    "  --served-model-name NAME  the model's name in the API (default: the\n"
    "                            artifact's file name without .kiln)\n"
    "  --max-active-requests N   requests served at once; past it 429\n"
    "                            (default 256)\n"
    "  --drain-timeout S         on SIGTERM, seconds to let requests finish\n"
    "                            before aborting them (default 30)\n"
    "An encoder artifact (no logits) serves /v1/embeddings instead:\n"
    "  --pooling mean|first      the hidden states' mean over the tokens, or the\n"
    "                            first token's (default mean)\n"
    "  --max-queue-delay-us N    how long an input waits to be batched with\n"
    "                            others (default 1000)\n";

std::string defaultName(const std::string &path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".kiln") == 0)
    name.resize(name.size() - 5);
  return name;
}

// The width of the logits: the engine ran the model's checks, so the output
// exists and its last dim is the vocabulary (unbounded where it is dynamic).
int32_t vocabSize(const kiln::Model &model) {
  kiln_io_info_t info = model.output(kiln_model_find_output(model.get(), "logits"));
  int64_t width = info.dims[info.rank - 1].size;
  return width > 0 ? (int32_t)width : INT32_MAX;
}

} // namespace

int main(int argc, char **argv) {
  kiln::tools::FlagReader flags("kiln-serve", argc, argv);
  std::string modelPath, tokenizerPath, servedName;
  kiln::serve::ServerOptions options;
  kiln::EngineOptions engineOptions;
  int threads = 0;
  double drainSeconds = 30;
  kiln::serve::Pooling pooling = kiln::serve::Pooling::Mean;
  int64_t maxQueueDelayUs = 1000;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s%s", kUsage, kiln::tools::FlagReader::kEngineUsage);
      return 0;
    } else if (arg == "--tokenizer") {
      tokenizerPath = flags.value(i);
    } else if (arg == "--host") {
      options.host = flags.value(i);
    } else if (arg == "--port") {
      options.port = (int)flags.integer(i, 0, 65535);
    } else if (arg == "--served-model-name") {
      servedName = flags.value(i);
    } else if (arg == "--max-active-requests") {
      options.maxActiveRequests = flags.integer(i, 1, 100000);
    } else if (arg == "--drain-timeout") {
      drainSeconds = flags.number(i);
    } else if (arg == "--pooling") {
      std::string value = flags.value(i);
      if (value != "mean" && value != "first")
        flags.fail("--pooling expects mean or first, got '" + value + "'");
      pooling = value == "mean" ? kiln::serve::Pooling::Mean : kiln::serve::Pooling::First;
    } else if (arg == "--max-queue-delay-us") {
      maxQueueDelayUs = flags.integer(i, 0, 10000000);
    } else if (flags.engineOption(i, engineOptions, threads)) {
    } else if (!arg.empty() && arg[0] == '-') {
      flags.fail("unknown flag '" + arg + "' (see --help)");
    } else if (modelPath.empty()) {
      modelPath = arg;
    } else {
      flags.fail("unexpected argument '" + arg + "'");
    }
  }
  if (modelPath.empty())
    flags.fail("no model given (see --help)");

  // SIGTERM and SIGINT go to one thread that drains the server; every other
  // thread, created after this, has them blocked. A client that goes away
  // makes a write fail, not the process die.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  try {
    kiln::Instance instance(threads);
    kiln::Model model(instance, modelPath);
    std::unique_ptr<kiln::Tokenizer> tokenizer;
    if (!tokenizerPath.empty())
      tokenizer = std::make_unique<kiln::Tokenizer>(tokenizerPath);
    kiln::serve::ServedModel served;
    served.name = servedName.empty() ? defaultName(modelPath) : servedName;
    served.tokenizer = tokenizer.get();
    // A decoder generates through the engine; an encoder embeds through the
    // dynamic batcher.
    std::unique_ptr<kiln::Engine> engine;
    std::unique_ptr<kiln::serve::Embedder> embedder;
    if (kiln::serve::isEncoder(model)) {
      embedder = std::make_unique<kiln::serve::Embedder>(model, pooling, maxQueueDelayUs);
      kiln_io_info_t ids = model.input(model.inputIndex("input_ids"));
      served.maxModelLen = (int32_t)std::min<int64_t>(ids.dims[1].max, INT32_MAX);
      served.vocabSize = tokenizer ? tokenizer->vocabSize() : INT32_MAX;
    } else {
      engine = std::make_unique<kiln::Engine>(model, engineOptions);
      engine->start();
      served.maxModelLen = engine->stats().max_model_len;
      served.vocabSize = vocabSize(model);
      if (tokenizer && tokenizer->vocabSize() > served.vocabSize)
        flags.fail("the tokenizer has " + std::to_string(tokenizer->vocabSize()) +
                   " tokens, more than the model's " + std::to_string(served.vocabSize) +
                   " logits: they do not belong together");
    }
    if (tokenizer)
      served.eosId = tokenizer->eosId();
    kiln::serve::Server server(engine.get(), embedder.get(), served, options);
    int port = server.bind();
    if (port < 0)
      flags.fail("cannot listen on " + options.host + ":" + std::to_string(options.port));
    std::fprintf(stderr, "kiln-serve: serving %s on http://%s:%d (%s, max_model_len %d%s)\n",
                 served.name.c_str(), options.host.c_str(), port,
                 engine ? "generation" : "embeddings", served.maxModelLen,
                 tokenizer ? "" : ", token ids only: no --tokenizer");
    std::thread([&server, &stopSignals, drainSeconds] {
      int signal = 0;
      sigwait(&stopSignals, &signal);
      std::fprintf(stderr, "kiln-serve: %s: draining\n", strsignal(signal));
      server.drain(std::chrono::milliseconds((int64_t)(drainSeconds * 1000)));
    }).detach();
    server.listen();
    if (engine)
      engine->stop();
    std::fprintf(stderr, "kiln-serve: stopped\n");
  } catch (const kiln::Error &e) {
    flags.fail(e.what());
  }
  return 0;
}
