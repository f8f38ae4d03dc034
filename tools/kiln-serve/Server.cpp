#include "Server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace kiln::serve {

namespace {

// Debian's cpp-httplib (0.11) gives a handler neither its socket nor a way to
// ask whether the client is still there, so the socket is found among the
// process's descriptors by its peer address. A peer that has closed reads as
// end of file.
int findClientSocket(const std::string &address, int port) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return -1;
  int found = -1;
  while (dirent *entry = readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    struct stat info;
    if (fd <= 2 || fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode))
      continue;
    sockaddr_storage peer{};
    socklen_t length = sizeof peer;
    if (getpeername(fd, reinterpret_cast<sockaddr *>(&peer), &length) != 0)
      continue;
    char text[INET6_ADDRSTRLEN] = {};
    int peerPort = -1;
    if (peer.ss_family == AF_INET) {
      auto *in = reinterpret_cast<sockaddr_in *>(&peer);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
      peerPort = ntohs(in->sin_port);
    } else if (peer.ss_family == AF_INET6) {
      auto *in = reinterpret_cast<sockaddr_in6 *>(&peer);
      inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
      peerPort = ntohs(in->sin6_port);
    }
    if (peerPort == port && address == text) {
      found = fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

bool clientGone(int fd) {
  if (fd < 0)
    return false;
  char byte;
  ssize_t got = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

constexpr auto kPoll = std::chrono::milliseconds(100);

Json logprobsJson(const Generation &generation, const std::vector<LogprobEntry> &entries) {
  if (generation.request().chat) {
    Json content = Json::array();
    for (const LogprobEntry &entry : entries) {
      auto tokenJson = [&](int32_t token, float logprob) {
        std::string text = generation.tokenText(token);
        Json bytes = Json::array();
        for (unsigned char byte : text)
          bytes.push_back((int)byte);
        return Json{{"token", text}, {"logprob", logprob}, {"bytes", bytes}};
      };
      Json item = tokenJson(entry.token, entry.logprob);
      item["top_logprobs"] = Json::array();
      for (auto [token, logprob] : entry.top)
        item["top_logprobs"].push_back(tokenJson(token, logprob));
      content.push_back(std::move(item));
    }
    return {{"content", content}};
  }
  Json tokens = Json::array(), logprobs = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (const LogprobEntry &entry : entries) {
    tokens.push_back(generation.tokenText(entry.token));
    logprobs.push_back(entry.logprob);
    Json top = Json::object();
    for (auto [token, logprob] : entry.top)
      top[generation.tokenText(token)] = logprob;
    tops.push_back(generation.request().logprobs > 0 ? top : Json(nullptr));
    offsets.push_back(entry.textOffset);
  }
  return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", tops},
          {"text_offset", offsets}};
}

// One choice of a response or of a stream chunk.
Json choiceJson(const Generation &generation, size_t index, const std::string &text,
                const std::vector<int32_t> &ids, const std::vector<LogprobEntry> &logprobs,
                const std::optional<std::string> &finishReason, bool chunk, bool firstChunk) {
  const GenerationRequest &request = generation.request();
  Json choice = {{"index", index}};
  if (request.chat) {
    Json message = Json::object();
    if (!chunk || firstChunk)
      message["role"] = "assistant";
    if (!chunk || !text.empty() || firstChunk)
      message["content"] = text;
    choice[chunk ? "delta" : "message"] = message;
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = request.logprobs >= 0 ? logprobsJson(generation, logprobs) : Json(nullptr);
  choice["finish_reason"] = finishReason ? Json(*finishReason) : Json(nullptr);
  if (request.returnTokenIds)
    choice["token_ids"] = ids;
  return choice;
}

Json envelope(const Generation &generation, const std::string &model, bool chunk) {
  const char *object = generation.request().chat
                           ? (chunk ? "chat.completion.chunk" : "chat.completion")
                           : "text_completion";
  return {{"id", generation.id()},
          {"object", object},
          {"created", generation.created()},
          {"model", model}};
}

std::string serverSentEvent(const Json &data) {
  return "data: " + data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n";
}

} // namespace

Server::Server(kiln::Engine *engine, Embedder *embedder, ServedModel model,
               ServerOptions options)
    : engine_(engine), embedder_(embedder), model_(std::move(model)),
      options_(std::move(options)) {
  // Every request being served holds a worker; a few more answer 429 and
  // the cheap endpoints while all of those are busy.
  size_t workers = (size_t)options_.maxActiveRequests + 8;
  http_.new_task_queue = [workers] { return new httplib::ThreadPool(workers); };
  http_.set_payload_max_length(64 << 20);
  // Remembers the listening socket, whose backlog bind() raises.
  http_.set_socket_options([this](socket_t socket) {
    httplib::default_socket_options(socket);
    listenSocket_ = socket;
  });

  http_.Get("/health", [this](const httplib::Request &, httplib::Response &response) {
    if (draining_) {
      reject(response, ApiError(503, "the server is shutting down", "", "service_unavailable"), 5);
      return;
    }
    response.set_content("{\"status\":\"ok\"}", "application/json");
  });
  http_.Get("/v1/models", [this](const httplib::Request &, httplib::Response &response) {
    Json model = {{"id", model_.name},
                  {"object", "model"},
                  {"created", 0},
                  {"owned_by", "kiln"},
                  {"max_model_len", model_.maxModelLen}};
    response.set_content(Json{{"object", "list"}, {"data", {model}}}.dump(), "application/json");
  });
  http_.Get("/metrics", [this](const httplib::Request &, httplib::Response &response) {
    kiln_engine_stats_t stats = {};
    if (engine_)
      stats = engine_->stats();
    response.set_content(metrics_.render(stats, active_, options_.maxActiveRequests),
                         "text/plain; version=0.0.4");
  });
  http_.Post("/v1/completions", [this](const httplib::Request &request, httplib::Response &response) {
    generate(request, response, /*chat=*/false);
  });
  http_.Post("/v1/chat/completions",
             [this](const httplib::Request &request, httplib::Response &response) {
               generate(request, response, /*chat=*/true);
             });
  http_.Post("/v1/embeddings", [this](const httplib::Request &request, httplib::Response &response) {
    embed(request, response);
  });
  http_.set_error_handler([](const httplib::Request &request, httplib::Response &response) {
    if (!response.body.empty())
      return;
    std::string message = response.status == 404
                              ? "no such endpoint: " + request.method + " " + request.path
                              : "HTTP " + std::to_string(response.status);
    response.set_content(ApiError(response.status, message).body().dump(), "application/json");
  });
}

int Server::bind() {
  int port = options_.port == 0 ? http_.bind_to_any_port(options_.host)
                                : (http_.bind_to_port(options_.host, options_.port) ? options_.port
                                                                                    : -1);
  // Debian's cpp-httplib listens with a backlog of 5: a burst of clients
  // past it has its handshakes dropped, and a client may see its connection
  // reset instead of a 429. Listening again on the bound socket raises it.
  if (port >= 0 && listenSocket_ >= 0)
    ::listen(listenSocket_, SOMAXCONN);
  return port;
}

bool Server::listen() { return http_.listen_after_bind(); }

void Server::drain(std::chrono::milliseconds timeout) {
  if (draining_.exchange(true))
    return;
  std::thread([this, timeout] {
    Clock::time_point deadline = Clock::now() + timeout;
    while (active_ > 0 && Clock::now() < deadline)
      std::this_thread::sleep_for(kPoll);
    {
      std::lock_guard<std::mutex> lock(liveMutex_);
      for (Generation *generation : live_)
        generation->abort();
    }
    http_.stop();
  }).detach();
}

void Server::reject(httplib::Response &response, const ApiError &error, int retryAfterSeconds) {
  metrics_.rejected(error.status);
  response.status = error.status;
  if (retryAfterSeconds > 0)
    response.set_header("Retry-After", std::to_string(retryAfterSeconds));
  response.set_content(error.body().dump(-1, ' ', false, Json::error_handler_t::replace),
                       "application/json");
}

bool Server::admit(httplib::Response &response) {
  if (draining_) {
    reject(response, ApiError(503, "the server is shutting down", "", "service_unavailable"), 5);
    return false;
  }
  if (active_.fetch_add(1) >= options_.maxActiveRequests) {
    active_.fetch_sub(1);
    reject(response,
           ApiError(429,
                    "the server is serving " + std::to_string(options_.maxActiveRequests) +
                        " requests, its most; retry later",
                    "", "rate_limit_exceeded"),
           1);
    return false;
  }
  return true;
}

void Server::embed(const httplib::Request &request, httplib::Response &response) {
  if (!embedder_) {
    reject(response, ApiError(400, "this server serves a decoder (" + model_.name +
                                       "): embeddings need an encoder artifact"));
    return;
  }
  if (!admit(response))
    return;
  try {
    Json body = Json::parse(request.body, nullptr, false);
    if (body.is_discarded())
      throw ApiError(400, "the body is not valid JSON");
    response.set_content(embedder_->embed(body, model_).dump(), "application/json");
  } catch (const ApiError &error) {
    reject(response, error);
  } catch (const std::exception &error) {
    reject(response, ApiError(500, error.what(), "", "internal_server_error"));
  }
  active_.fetch_sub(1);
}

void Server::generate(const httplib::Request &request, httplib::Response &response, bool chat) {
  if (!engine_) {
    reject(response, ApiError(400, "this server serves an encoder (" + model_.name +
                                       "): use /v1/embeddings"));
    return;
  }
  if (!admit(response))
    return;
  std::shared_ptr<Generation> generation;
  try {
    Json body = Json::parse(request.body, nullptr, false);
    if (body.is_discarded())
      throw ApiError(400, "the body is not valid JSON");
    GenerationRequest parsed = chat ? parseChat(body, model_) : parseCompletion(body, model_);
    generation = std::make_shared<Generation>(*engine_, model_, metrics_, std::move(parsed));
    generation->start();
  } catch (const ApiError &error) {
    active_.fetch_sub(1);
    reject(response, error);
    return;
  } catch (const kiln::Error &error) {
    active_.fetch_sub(1);
    reject(response, ApiError(400, error.what()));
    return;
  } catch (const std::exception &error) {
    active_.fetch_sub(1);
    reject(response, ApiError(500, error.what(), "", "internal_server_error"));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(liveMutex_);
    live_.insert(generation.get());
  }
  // Held until the response has been written (a stream's, after this
  // handler returns): then the request no longer counts as active, and the
  // drain no longer aborts it.
  auto lease = std::shared_ptr<void>(nullptr, [this, raw = generation.get()](void *) {
    {
      std::lock_guard<std::mutex> lock(liveMutex_);
      live_.erase(raw);
    }
    active_.fetch_sub(1);
  });
  int clientSocket = findClientSocket(request.remote_addr, request.remote_port);
  if (generation->request().stream)
    answerStream(generation, clientSocket, std::move(lease), response);
  else
    answerWhole(generation, clientSocket, response);
}

void Server::answerWhole(const std::shared_ptr<Generation> &generation, int clientSocket,
                         httplib::Response &response) {
  struct Accumulated {
    std::string text;
    std::vector<int32_t> ids;
    std::vector<LogprobEntry> logprobs;
    std::optional<std::string> finishReason;
  };
  std::vector<Accumulated> choices(generation->numChoices());
  while (!generation->done()) {
    for (Delta &delta : generation->next(kPoll)) {
      Accumulated &choice = choices[delta.choice];
      choice.text += delta.text;
      choice.ids.insert(choice.ids.end(), delta.ids.begin(), delta.ids.end());
      choice.logprobs.insert(choice.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
      if (delta.finishReason)
        choice.finishReason = delta.finishReason;
    }
    if (!generation->done() && clientGone(clientSocket))
      generation->abort();
  }
  if (generation->error()) {
    reject(response, ApiError(500, "generation failed: " + *generation->error(), "",
                              "internal_server_error"));
    return;
  }
  const GenerationRequest &request = generation->request();
  Json body = envelope(*generation, model_.name, /*chunk=*/false);
  body["choices"] = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    std::string text = choices[i].text;
    if (request.echo)
      text = request.promptTexts[i / request.n] + text;
    body["choices"].push_back(choiceJson(*generation, i, text, choices[i].ids, choices[i].logprobs,
                                         choices[i].finishReason, false, false));
  }
  body["usage"] = generation->usage();
  response.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace),
                       "application/json");
}

void Server::answerStream(const std::shared_ptr<Generation> &generation, int clientSocket,
                          std::shared_ptr<void> lease, httplib::Response &response) {
  response.set_header("Cache-Control", "no-cache");
  auto started = std::make_shared<std::vector<bool>>(generation->numChoices(), false);
  response.set_chunked_content_provider(
      "text/event-stream",
      [this, generation, clientSocket, started](size_t, httplib::DataSink &sink) {
        const GenerationRequest &request = generation->request();
        auto send = [&](const Json &data) {
          std::string event = serverSentEvent(data);
          return sink.write(event.data(), event.size());
        };
        bool connected = true;
        while (connected && !generation->done()) {
          for (Delta &delta : generation->next(kPoll)) {
            bool first = !(*started)[delta.choice];
            (*started)[delta.choice] = true;
            std::string text = delta.text;
            if (first && request.echo)
              text = request.promptTexts[delta.choice / request.n] + text;
            if (!first && text.empty() && delta.ids.empty() && !delta.finishReason)
              continue;
            Json chunk = envelope(*generation, model_.name, /*chunk=*/true);
            chunk["choices"] = {choiceJson(*generation, delta.choice, text, delta.ids,
                                           delta.logprobs, delta.finishReason, true, first)};
            if (request.includeUsage)
              chunk["usage"] = nullptr;
            connected = connected && send(chunk);
          }
          if (connected && clientGone(clientSocket))
            connected = false;
        }
        if (!connected) {
          // The client left: stop its sequences; the Generation waits for
          // the engine when it goes.
          generation->abort();
          return false;
        }
        if (generation->error())
          send(ApiError(500, "generation failed: " + *generation->error(), "",
                        "internal_server_error")
                   .body());
        if (request.includeUsage) {
          Json chunk = envelope(*generation, model_.name, /*chunk=*/true);
          chunk["choices"] = Json::array();
          chunk["usage"] = generation->usage();
          send(chunk);
        }
        static const std::string done = "data: [DONE]\n\n";
        sink.write(done.data(), done.size());
        sink.done();
        return true;
      },
      [generation, lease](bool) {});
}

} // namespace kiln::serve
