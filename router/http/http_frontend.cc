#include "router/http/http_frontend.h"

#include <httplib.h>

#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "common/security.h"
#include "router/http/generate_call.h"
#include "router/http/peer_watch.h"
#include "router/openai/openai_request.h"
#include "router/openai/openai_response.h"
#include "router/openai/text_stream.h"

namespace semmoe::router::http {
namespace {

using Json = nlohmann::ordered_json;
using openai::ApiError;
using openai::Endpoint;

void Reply(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(openai::JsonText(body), "application/json");
}

void Reply(httplib::Response& res, const ApiError& e) {
  if (e.http_status == 429) res.set_header("Retry-After", "1");
  Reply(res, e.http_status, e.ToJson());
}

// The router's gRPC answer as OpenAI's error.
ApiError FromGrpc(const grpc::Status& s) {
  ApiError e{.message = s.error_message()};
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      e.http_status = 400;
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      e.http_status = 429;
      e.type = "rate_limit_exceeded";
      e.code = "server_overloaded";
      break;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::FAILED_PRECONDITION:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "unavailable";
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      e.http_status = 504;
      e.type = "server_error";
      e.code = "timeout";
      break;
    case grpc::StatusCode::CANCELLED:
      e.http_status = 499;  // The client went away (nginx's code); it reads nothing.
      e.type = "cancelled";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
  }
  return e;
}

// Request ids: a random prefix per process and a counter.
std::string NewRequestId() {
  static absl::Mutex mu(absl::kConstInit);
  static uint64_t prefix = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  static uint64_t counter = 0;
  absl::MutexLock lock(&mu);
  return absl::StrFormat("%012x%08x", prefix & 0xffffffffffffull, ++counter);
}

// One completion request from its first event on; runs inside httplib's content provider.
class Completion {
 public:
  Completion(std::unique_ptr<GenerateCall> call, openai::ResponseHeader header,
             const openai::OpenAiRequest& request, const engine::model::Tokenizer& tokenizer,
             absl::Duration poll, const std::atomic<bool>& stopping)
      : call_(std::move(call)),
        header_(std::move(header)),
        stream_(request.stream),
        include_usage_(request.include_usage),
        text_(tokenizer, request.stop),
        poll_(poll),
        stopping_(stopping) {}

  // Queues the event the handler already took (the first).
  void SetFirst(GenerateCall::Event event, rpc::GenerateResponse message, grpc::Status status) {
    first_event_ = event;
    first_message_ = std::move(message);
    first_status_ = std::move(status);
  }

  // Writes the whole response to `sink`; false when the client went away (the call is then
  // cancelled).
  bool Run(httplib::DataSink& sink) {
    auto write = [&sink](const std::string& s) { return sink.write(s.data(), s.size()); };
    const bool chat = header_.endpoint == Endpoint::kChatCompletions;
    if (stream_ && chat &&
        !write(openai::SseEvent(openai::Chunk(header_, "", "", true, include_usage_)))) {
      return Abandon();
    }
    GenerateCall::Event event = first_event_;
    rpc::GenerateResponse message = std::move(first_message_);
    grpc::Status status = first_status_;
    while (event != GenerateCall::Event::kDone) {
      if (event == GenerateCall::Event::kMessage) {
        if (message.has_final()) final_ = message.final();
        if (stream_ && message.token_ids_size() > 0) {
          absl::StatusOr<std::string> piece = text_.Add(message.token_ids());
          if (piece.ok() && !piece->empty() &&
              !write(openai::SseEvent(openai::Chunk(header_, *piece, "", false, include_usage_)))) {
            return Abandon();
          }
        }
      } else if (stopping_.load() || !sink.is_writable()) {
        return Abandon();
      }
      event = call_->Next(poll_, &message, &status);
    }
    const openai::Usage usage{.prompt_tokens = final_.prompt_tokens(),
                              .completion_tokens = final_.completion_tokens()};
    const std::string reason = openai::FinishReason(final_.finish_reason());
    if (!stream_) {
      const Json body = status.ok() ? openai::FullResponse(header_, final_.text(), reason, usage)
                                    : FromGrpc(status).ToJson();
      if (!write(openai::JsonText(body))) return false;
      sink.done();
      return true;
    }
    if (status.ok()) {
      const std::string rest = text_.Finish(final_.text());
      if (!rest.empty() &&
          !write(openai::SseEvent(openai::Chunk(header_, rest, "", false, include_usage_)))) {
        return false;
      }
      if (!write(openai::SseEvent(openai::Chunk(header_, "", reason, false, include_usage_)))) {
        return false;
      }
      if (include_usage_ && !write(openai::SseEvent(openai::UsageChunk(header_, usage)))) {
        return false;
      }
    } else if (!write(openai::SseEvent(FromGrpc(status).ToJson()))) {
      return false;  // The stream had begun: the error is its last event.
    }
    if (!write(openai::kSseDone)) return false;
    sink.done();
    return true;
  }

 private:
  bool Abandon() {
    call_->Cancel();
    return false;
  }

  std::unique_ptr<GenerateCall> call_;
  const openai::ResponseHeader header_;
  const bool stream_;
  const bool include_usage_;
  openai::TextStream text_;
  const absl::Duration poll_;
  const std::atomic<bool>& stopping_;
  GenerateCall::Event first_event_ = GenerateCall::Event::kTimeout;
  rpc::GenerateResponse first_message_;
  grpc::Status first_status_;
  rpc::FinalRecord final_;
};

}  // namespace

namespace {

// HTTPS with the process's TLS identity (common/security.h), else plain HTTP. Clients are not
// asked for certificates: this is the door end users come through (docs/SECURITY.md).
std::unique_ptr<httplib::Server> NewServer() {
  const SecurityMaterial& m = Security();
  if (!m.tls()) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>(m.cert_file.c_str(), m.key_file.c_str());
}

}  // namespace

HttpFrontend::HttpFrontend(HttpFrontendOptions options)
    : options_(std::move(options)),
      stub_(rpc::RouterService::NewStub(options_.router)),
      server_(NewServer()) {}

HttpFrontend::~HttpFrontend() { Shutdown(); }

absl::StatusOr<std::unique_ptr<HttpFrontend>> HttpFrontend::Start(HttpFrontendOptions options) {
  if (options.tokenizer == nullptr || options.router == nullptr) {
    return absl::InvalidArgumentError("the HTTP frontend needs the tokenizer and the router");
  }
  if (options.served_model.empty()) {
    return absl::InvalidArgumentError("the HTTP frontend needs the served model's name");
  }
  if (options.threads < 1 || options.default_chat_max_tokens < 1) {
    return absl::InvalidArgumentError("threads and default_chat_max_tokens must be ≥ 1");
  }
  std::unique_ptr<HttpFrontend> f(new HttpFrontend(std::move(options)));
  if (!f->server_->is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP: cannot use the TLS certificate ",
                                                   Security().cert_file, " and key ",
                                                   Security().key_file));
  }
  const int threads = f->options_.threads;
  f->server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  f->server_->set_payload_max_length(f->options_.max_body_bytes);
  // Streamed events are small writes: without TCP_NODELAY, Nagle's algorithm holds each one
  // until the client's delayed ACK (~40 ms per event).
  f->server_->set_tcp_nodelay(true);
  f->Register();
  const HttpFrontendOptions& o = f->options_;
  if (o.port == 0) {
    f->port_ = f->server_->bind_to_any_port(o.listen);
  } else if (f->server_->bind_to_port(o.listen, o.port)) {
    f->port_ = o.port;
  }
  if (f->port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("HTTP: cannot listen on ", o.listen, ":", o.port));
  }
  httplib::Server* server = f->server_.get();
  f->thread_ = std::thread([server] { server->listen_after_bind(); });
  return f;
}

void HttpFrontend::Shutdown() {
  if (stopping_.exchange(true)) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpFrontend::Register() {
  server_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    rpc::RouterStats stats;
    const grpc::Status s = stub_->GetStats(&context, rpc::GetStatsRequest(), &stats);
    int usable = 0;
    for (const auto& r : stats.ranks()) usable += r.usable() ? 1 : 0;
    if (!s.ok() || usable == 0) {
      Reply(res, 503,
            {{"status", "unavailable"},
             {"reason", s.ok() ? "no engine rank can take requests" : s.error_message()},
             {"ranks", stats.ranks_size()},
             {"ranks_usable", usable}});
      return;
    }
    Reply(res, 200, {{"status", "ok"}, {"ranks", stats.ranks_size()}, {"ranks_usable", usable}});
  });
  if (options_.metrics) {
    server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(options_.metrics(), metrics::kTextContentType);
    });
  }
  server_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          {{"object", "list"},
           {"data", Json::array({{{"id", options_.served_model},
                                  {"object", "model"},
                                  {"created", 0},
                                  {"owned_by", "semmoe"}}})}});
  });
  auto completion = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      openai::OpenAiRequest r;
      if (std::optional<ApiError> e =
              openai::ParseRequest(endpoint, req.body, options_.served_model, &r)) {
        return Reply(res, *e);
      }
      rpc::GenerateRequest g;
      g.set_request_id(NewRequestId());
      if (endpoint == Endpoint::kChatCompletions) {
        if (options_.chat_template == nullptr) {
          return Reply(res, ApiError{.message = absl::StrCat("the model '", options_.served_model,
                                                             "' has no usable chat template (",
                                                             options_.chat_template_error.empty()
                                                                 ? "tokenizer_config.json"
                                                                 : options_.chat_template_error,
                                                             "); use /v1/completions"),
                                     .code = "chat_template_missing"});
        }
        absl::StatusOr<std::string> prompt =
            options_.chat_template->Apply(r.messages, r.add_generation_prompt, r.template_kwargs);
        if (!prompt.ok()) {
          return Reply(res, ApiError{.message = std::string(prompt.status().message()),
                                     .param = "messages"});
        }
        g.set_text(*prompt);
      } else if (!r.prompt_ids.empty()) {
        for (int32_t id : r.prompt_ids) g.add_token_ids(id);
      } else {
        g.set_text(r.prompt);
      }
      g.set_max_tokens(r.max_tokens_set                         ? r.max_tokens
                       : endpoint == Endpoint::kChatCompletions ? options_.default_chat_max_tokens
                                                                : r.max_tokens);
      g.mutable_sampling()->set_temperature(static_cast<float>(r.temperature));
      g.mutable_sampling()->set_top_p(static_cast<float>(r.top_p));
      g.mutable_sampling()->set_top_k(r.top_k);
      if (r.seed.has_value()) g.mutable_sampling()->set_seed(*r.seed);
      for (const std::string& s : r.stop) g.add_stop(s);
      g.set_ignore_eos(r.ignore_eos);
      g.set_user_key(r.user);

      auto call = std::make_unique<GenerateCall>(*stub_, g, absl::Now() + options_.request_timeout);
      // Wait for the first event before answering: errors before the first token get their own
      // HTTP status. The call's deadline bounds the wait; a client that leaves meanwhile (in
      // the queue, in prefill) has its call cancelled.
      rpc::GenerateResponse message;
      grpc::Status status;
      GenerateCall::Event event;
      std::optional<PeerWatch> peer;
      while ((event = call->Next(options_.poll_interval, &message, &status)) ==
             GenerateCall::Event::kTimeout) {
        if (!peer.has_value()) peer.emplace(req.remote_addr, req.remote_port, req.local_port);
        if (stopping_.load() || peer->Closed()) call->Cancel();
      }
      if (event == GenerateCall::Event::kDone && !status.ok()) return Reply(res, FromGrpc(status));
      openai::ResponseHeader header{.endpoint = endpoint,
                                    .id = openai::ResponseId(endpoint, g.request_id()),
                                    .created = absl::ToUnixSeconds(absl::Now()),
                                    .model = options_.served_model};
      auto done =
          std::make_shared<Completion>(std::move(call), std::move(header), r, *options_.tokenizer,
                                       options_.poll_interval, stopping_);
      done->SetFirst(event, std::move(message), std::move(status));
      res.status = 200;
      if (r.stream) {
        res.set_header("Cache-Control", "no-cache");
        res.set_header("X-Accel-Buffering", "no");  // Proxies: do not buffer the stream.
      }
      res.set_chunked_content_provider(
          r.stream ? "text/event-stream" : "application/json",
          [done](size_t, httplib::DataSink& sink) { return done->Run(sink); });
    };
  };
  server_->Post("/v1/completions", completion(Endpoint::kCompletions));
  server_->Post("/v1/chat/completions", completion(Endpoint::kChatCompletions));
  // Anything else: OpenAI's error shape, not httplib's empty 404.
  server_->set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    Reply(res, res.status,
          ApiError{.http_status = res.status,
                   .message =
                       absl::StrCat(req.method, " ", req.path,
                                    res.status == 404 ? ": no such endpoint" : ": request refused"),
                   .code = res.status == 404 ? "not_found" : ""}
              .ToJson());
  });
}

}  // namespace semmoe::router::http
