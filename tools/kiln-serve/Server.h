//===- Server.h - kiln-serve's HTTP endpoints ------------------------------===//
//
// The OpenAI-compatible API over one engine (a decoder): /v1/completions and
// /v1/chat/completions (streamed as server-sent events or answered whole);
// or over one encoder: /v1/embeddings; and /v1/models, /health and /metrics. At most max_active requests are served at
// once; past that a request gets 429 with Retry-After, and while draining
// (SIGTERM) 503. A client that goes away aborts its sequences.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_SERVE_SERVER_H
#define KILN_TOOLS_KILN_SERVE_SERVER_H

#include "Embeddings.h"
#include "Generation.h"
#include "Metrics.h"
#include "Protocol.h"

#include <httplib.h>

#include <atomic>
#include <set>

namespace kiln::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  int64_t maxActiveRequests = 256;
};

class Server {
public:
  /// Exactly one of `engine` and `embedder` is given.
  Server(kiln::Engine *engine, Embedder *embedder, ServedModel model, ServerOptions options);
  /// Binds the address (port 0: any free port); the port, or -1.
  int bind();
  /// Serves until drain() has stopped it.
  bool listen();
  /// Stops taking requests (503 for new ones), lets those in flight finish
  /// for up to `timeout`, then aborts what is left. Returns at once; listen()
  /// returns when the last request has been answered.
  void drain(std::chrono::milliseconds timeout);

private:
  void generate(const httplib::Request &request, httplib::Response &response, bool chat);
  void embed(const httplib::Request &request, httplib::Response &response);
  /// Takes a place among the active requests: false (and the answer given)
  /// while draining or full.
  bool admit(httplib::Response &response);
  void answerWhole(const std::shared_ptr<Generation> &generation, int clientSocket,
                   httplib::Response &response);
  void answerStream(const std::shared_ptr<Generation> &generation, int clientSocket,
                    std::shared_ptr<void> lease, httplib::Response &response);
  void reject(httplib::Response &response, const ApiError &error, int retryAfterSeconds = 0);

  kiln::Engine *engine_;
  Embedder *embedder_;
  ServedModel model_;
  ServerOptions options_;
  Metrics metrics_;
  httplib::Server http_;
  int listenSocket_ = -1;
  std::atomic<int64_t> active_{0};
  std::atomic<bool> draining_{false};
  std::mutex liveMutex_;
  std::set<Generation *> live_;
};

} // namespace kiln::serve

#endif
