#include "router/http/http_frontend.h"

#include <atomic>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/escaped_exception.h"
#include "common/metrics.h"
#include "router/openai/openai_response.h"
#include "router/openai/tool_use.h"

namespace semmoe::router::http {
namespace {

using Json = nlohmann::ordered_json;
using openai::ApiError;
using openai::Endpoint;

void Reply(HttpResponse& res, int status, const Json& body) {
  res.Send(status, "application/json", openai::JsonText(body));
}

void Reply(HttpResponse& res, const ApiError& e) {
  HttpHeaders headers;
  if (e.http_status == 429) headers.emplace_back("Retry-After", "1");
  res.Send(e.http_status, "application/json", openai::JsonText(e.ToJson()), std::move(headers));
}

// Exceptions that escaped the door's own code (its workers and the sinks the core calls), each
// answered as a 500: a bug, counted in /metrics beside the server's own (handler_exceptions).
using EscapedCounter = std::shared_ptr<std::atomic<int64_t>>;

// Runs `fn` for one request; an exception escaping it fails that request alone (a 500, or a
// begun stream cut short), is logged and counted — it never reaches std::terminate.
template <typename Fn>
void Guarded(const char* where, const EscapedCounter& escaped, HttpResponse& res, Fn&& fn) {
  if (CatchEscaped(where, fn).empty()) return;
  escaped->fetch_add(1);
  const ApiError e{.http_status = 500,
                   .message = "internal server error (logged; the router goes on serving)",
                   .type = "server_error",
                   .code = "internal_error"};
  res.Fail(500, "application/json", openai::JsonText(e.ToJson()));
}

// Request ids: a random prefix per process and a counter.
std::string NewRequestId() {
  static absl::Mutex mu(absl::kConstInit);
  static uint64_t prefix = std::random_device{}() * 0x9E3779B97F4A7C15ull ^ std::random_device{}();
  static uint64_t counter = 0;
  absl::MutexLock lock(&mu);
  return absl::StrFormat("%012x%08x", prefix & 0xffffffffffffull, ++counter);
}

// One completion's answer: the core's sink. Streamed, the head goes out with the first token (or
// the end), then the text as the engine decoded it (the door decodes nothing); whole, the body
// at the end. The core calls it from one thread at a time; `mu_` makes that a rule rather than a
// promise.
class CompletionSink : public CallSink {
 public:
  // `tools`: the request's calls are parsed from the text (null: the text is content).
  CompletionSink(std::shared_ptr<HttpResponse> res, openai::ResponseHeader header,
                 const openai::OpenAiRequest& request,
                 std::unique_ptr<openai::ToolCallStream> tools, EscapedCounter escaped)
      : escaped_(std::move(escaped)),
        res_(std::move(res)),
        header_(std::move(header)),
        stream_(request.stream),
        include_usage_(request.include_usage),
        tools_(std::move(tools)) {}

  void OnTokens(absl::Span<const int32_t> ids, absl::string_view text) override {
    Guarded("the door's token sink", escaped_, *res_, [&] { Tokens(ids, text); });
  }

  void OnEnd(const absl::Status& status, const rpc::FinalRecord* final) override {
    Guarded("the door's end sink", escaped_, *res_, [&] { End(status, final); });
  }

 private:
  void Tokens(absl::Span<const int32_t>, absl::string_view text) {
    absl::MutexLock lock(&mu_);
    if (!stream_) return;
    Begin();
    if (tools_ != nullptr) return Say(tools_->Feed(text));
    if (!text.empty()) Event(openai::Chunk(header_, std::string(text), "", false, include_usage_));
  }

  void End(const absl::Status& status, const rpc::FinalRecord* final) {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && !began_) return Reply(*res_, FromStatus(status));
    if (!stream_) {
      const openai::Usage usage{.prompt_tokens = final->prompt_tokens(),
                                .completion_tokens = final->completion_tokens()};
      if (tools_ == nullptr) {
        return Reply(*res_, 200,
                     openai::FullResponse(header_, final->text(),
                                          openai::FinishReason(final->finish_reason()), usage));
      }
      openai::ToolCallStream::Out out = tools_->Feed(final->text());
      openai::ToolCallStream::Out rest = tools_->Finish();
      out.content += rest.content;
      for (auto& c : rest.calls) out.calls.push_back(std::move(c));
      return Reply(
          *res_, 200,
          openai::FullResponse(header_, out.content,
                               openai::FinishReason(final->finish_reason(), !out.calls.empty()),
                               usage, out.calls));
    }
    Begin();
    if (tools_ != nullptr) Say(tools_->Finish());
    if (status.ok()) {
      const bool calls = tools_ != nullptr && tools_->calls() > 0;
      Event(openai::Chunk(header_, "", openai::FinishReason(final->finish_reason(), calls), false,
                          include_usage_));
      if (include_usage_) {
        Event(openai::UsageChunk(header_, {.prompt_tokens = final->prompt_tokens(),
                                           .completion_tokens = final->completion_tokens()}));
      }
    } else {
      Event(FromStatus(status).ToJson());  // The stream had begun: the error is its last event.
    }
    res_->Write(openai::kSseDone);
    res_->End();
  }

  void Begin() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (began_) return;
    began_ = true;
    // Proxies: do not buffer the stream.
    res_->StartStream(200, "text/event-stream",
                      {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
    if (header_.endpoint == Endpoint::kChatCompletions) {
      Event(openai::Chunk(header_, "", "", true, include_usage_));
    }
  }
  void Event(const Json& data) { res_->Write(openai::SseEvent(data)); }
  void Say(const openai::ToolCallStream::Out& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!out.content.empty()) Event(openai::Chunk(header_, out.content, "", false, include_usage_));
    for (const openai::ResponseToolCall& call : out.calls) {
      for (const Json& chunk : openai::ToolCallChunks(header_, call, include_usage_)) Event(chunk);
    }
  }

  const EscapedCounter escaped_;
  absl::Mutex mu_;
  const std::shared_ptr<HttpResponse> res_;
  const openai::ResponseHeader header_;
  const bool stream_;
  const bool include_usage_;
  const std::unique_ptr<openai::ToolCallStream> tools_ ABSL_PT_GUARDED_BY(mu_);
  bool began_ ABSL_GUARDED_BY(mu_) = false;
};

// The door's own series, after the router's.
std::string DoorMetrics(const HttpCounters& c, const WorkQueue* work, int64_t escaped,
                        int64_t literal_special) {
  std::string out;
  auto series = [&out](const char* name, const char* type, const char* help, int64_t v) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ",
                    v, "\n");
  };
  series("semmoe_router_http_connections", "gauge", "Open HTTP connections.", c.connections_open);
  series("semmoe_router_http_connections_accepted_total", "counter", "HTTP connections accepted.",
         c.connections_accepted);
  series("semmoe_router_http_connections_refused_total", "counter",
         "HTTP connections closed at once: past the connection limit.", c.connections_refused);
  series("semmoe_router_http_requests_total", "counter", "HTTP requests read whole.", c.requests);
  series("semmoe_router_http_timeouts_total", "counter",
         "HTTP connections dropped by a header, body, idle or write deadline.", c.timeouts);
  series("semmoe_router_http_refused_requests_total", "counter",
         "HTTP requests the server refused itself: malformed (400), body (413) or headers (431) "
         "too large.",
         c.refused_requests);
  series("semmoe_router_http_abandoned_total", "counter",
         "HTTP responses whose client went away before their end.", c.abandoned);
  series("semmoe_router_http_internal_errors_total", "counter",
         "HTTP requests answered 500 because an exception escaped the door's code (a bug; each "
         "is logged with its type and stack).",
         c.handler_exceptions + escaped);
  series("semmoe_router_http_literal_special_tokens_total", "counter",
         "Special-token texts (\"<|im_start|>\") found in chat requests' messages, tools or "
         "template arguments and kept as text, not control tokens (--message_special_tokens).",
         literal_special);
  series("semmoe_router_http_work_queued", "gauge",
         "HTTP completions waiting for a worker thread (parse, chat template, tokenise).",
         work != nullptr ? work->queued() : 0);
  return out;
}

// What every request of one door shares.
struct Context {
  HttpFrontendOptions options;
  std::function<HttpCounters()> counters;
  WorkQueue* work = nullptr;  // Null: completions run on the calling thread.
  EscapedCounter escaped = std::make_shared<std::atomic<int64_t>>(0);
  // Special-token texts kept as text (options.message_special_text).
  std::shared_ptr<std::atomic<int64_t>> literal_special = std::make_shared<std::atomic<int64_t>>(0);

  void Health(HttpResponse& res) const {
    const rpc::RouterStats stats = options.router->Stats();
    int usable = 0;
    for (const auto& r : stats.ranks()) usable += r.usable() ? 1 : 0;
    if (usable == 0) {
      return Reply(res, 503,
                   {{"status", "unavailable"},
                    {"reason", "no engine rank can take requests"},
                    {"ranks", stats.ranks_size()},
                    {"ranks_usable", usable}});
    }
    Reply(res, 200, {{"status", "ok"}, {"ranks", stats.ranks_size()}, {"ranks_usable", usable}});
  }

  void Models(HttpResponse& res) const {
    Reply(res, 200,
          {{"object", "list"},
           {"data", Json::array({{{"id", options.served_model},
                                  {"object", "model"},
                                  {"created", 0},
                                  {"owned_by", "semmoe"}}})}});
  }

  void Completion(Endpoint endpoint, const HttpRequest& req,
                  std::shared_ptr<HttpResponse> res) const {
    openai::OpenAiRequest r;
    if (std::optional<ApiError> e =
            openai::ParseRequest(endpoint, req.body, options.served_model, &r)) {
      return Reply(*res, *e);
    }
    rpc::GenerateRequest g;
    g.set_request_id(NewRequestId());
    // Tool calls parsed from the answer; tool_choice "required" or named: opened in the prompt.
    const bool tool_calls = ParsesToolCalls(r);
    const std::string opening =
        tool_calls
            ? openai::ForcedOpening(*options.tool_call_format, r.tool_choice, r.tool_choice_name)
            : "";
    if (endpoint == Endpoint::kChatCompletions) {
      if (options.chat_template == nullptr) {
        return Reply(*res, ApiError{.message = absl::StrCat("the model '", options.served_model,
                                                            "' has no usable chat template (",
                                                            options.chat_template_error.empty()
                                                                ? "tokenizer_config.json"
                                                                : options.chat_template_error,
                                                            "); use /v1/completions"),
                                    .code = "chat_template_missing"});
      }
      std::string prompt;
      std::vector<std::pair<size_t, size_t>> literal;
      if (std::optional<ApiError> e = ChatPrompt(r, opening, &prompt, &literal)) {
        return Reply(*res, *e);
      }
      g.set_text(std::move(prompt));
      for (const auto& [begin, end] : literal) {
        rpc::TextSpan* span = g.add_literal_spans();
        span->set_begin(begin);
        span->set_end(end);
      }
    } else if (!r.prompt_ids.empty()) {
      g.mutable_token_ids()->Add(r.prompt_ids.begin(), r.prompt_ids.end());
    } else {
      g.set_text(r.prompt);
    }
    g.set_max_tokens(r.max_tokens_set                         ? r.max_tokens
                     : endpoint == Endpoint::kChatCompletions ? options.default_chat_max_tokens
                                                              : r.max_tokens);
    g.mutable_sampling()->set_temperature(static_cast<float>(r.temperature));
    g.mutable_sampling()->set_top_p(static_cast<float>(r.top_p));
    g.mutable_sampling()->set_top_k(r.top_k);
    if (r.seed.has_value()) g.mutable_sampling()->set_seed(*r.seed);
    for (const std::string& s : r.stop) g.add_stop(s);
    g.set_ignore_eos(r.ignore_eos);
    g.set_user_key(r.user);

    openai::ResponseHeader header{.endpoint = endpoint,
                                  .id = openai::ResponseId(endpoint, g.request_id()),
                                  .created = absl::ToUnixSeconds(absl::Now()),
                                  .model = options.served_model};
    std::unique_ptr<openai::ToolCallStream> tools;
    if (tool_calls) {
      tools = std::make_unique<openai::ToolCallStream>(*options.tool_call_format, opening,
                                                       r.parallel_tool_calls, g.request_id());
    }
    auto sink =
        std::make_shared<CompletionSink>(res, std::move(header), r, std::move(tools), escaped);
    absl::StatusOr<std::shared_ptr<CallHandle>> handle =
        options.router->Submit(g, absl::Now() + options.request_timeout, std::move(sink));
    if (!handle.ok()) return Reply(*res, FromStatus(handle.status()));
    // Released with the response's end; a client that leaves first cancels the call.
    res->OnAbandon([handle = *std::move(handle)] { handle->Cancel(); });
  }

  bool ParsesToolCalls(const openai::OpenAiRequest& r) const {
    return !r.tools.is_null() && r.tool_choice != openai::ToolChoice::kNone &&
           options.tool_call_format.has_value();
  }

  // A chat request's prompt: its messages (and tools) through the model's template, refused
  // where the template would drop what the conversation holds; then `opening`, which forces a
  // call (tool_choice "required" or named; "" otherwise).
  std::optional<ApiError> ChatPrompt(const openai::OpenAiRequest& r, const std::string& opening,
                                     std::string* prompt,
                                     std::vector<std::pair<size_t, size_t>>* literal) const {
    const engine::model::ToolSupport& support = options.chat_template->tool_support();
    auto refuse = [&](const std::string& param, const std::string& why) {
      return ApiError{
          .message = absl::StrCat("the chat template of '", options.served_model, "' ", why,
                                  " (serve it with one that does: router "
                                  "--chat_template=FILE)"),
          .param = param,
          .code = "tools_unsupported"};
    };
    const bool wants_calls = !r.tools.is_null() && r.tool_choice != openai::ToolChoice::kNone;
    if (wants_calls && !support.tools_list) {
      return refuse("tools", "does not show the model a 'tools' list");
    }
    if (wants_calls && !options.tool_call_format.has_value()) {
      return ApiError{
          .message = absl::StrCat("this server parses no tool calls for '", options.served_model,
                                  "' (router --tool_call_parser names the format)"),
          .param = "tools",
          .code = "tools_unsupported"};
    }
    Json messages = r.messages;
    for (size_t i = 0; i < messages.size(); ++i) {
      Json& m = messages[i];
      if (m["role"] == "tool" && !support.results) {
        return refuse(absl::StrCat("messages[", i, "]"), "does not render tool results");
      }
      if (!m.contains("tool_calls") || m["tool_calls"].is_null()) continue;
      if (!support.calls) {
        return refuse(absl::StrCat("messages[", i, "].tool_calls"),
                      "does not render an assistant's tool calls");
      }
      // OpenAI clients send content null (or "") beside calls; give the template the one it
      // renders calls with.
      Json& content = m["content"];
      if (content.is_null() || content == "") {
        content = support.calls_want_null_content ? Json() : Json("");
      }
    }
    Json extra = r.template_kwargs.is_object() ? r.template_kwargs : Json::object();
    if (!r.tools.is_null() && support.tools_list) extra["tools"] = r.tools;
    const engine::model::SpecialTextMask* mask = options.message_special_text;
    if (mask != nullptr) {  // Every string the client sent; the template's own stay control.
      int64_t in_messages = 0, in_extra = 0;
      messages = mask->Mask(messages, &in_messages);
      extra = mask->Mask(extra, &in_extra);
      literal_special->fetch_add(in_messages + in_extra);
    }
    absl::StatusOr<std::string> text =
        options.chat_template->Apply(messages, r.add_generation_prompt, extra);
    if (!text.ok()) {
      return ApiError{.message = std::string(text.status().message()), .param = "messages"};
    }
    if (mask != nullptr) {
      absl::StatusOr<engine::model::SpecialTextMask::Unmasked> u = mask->Unmask(*text);
      if (!u.ok())
        return ApiError{.message = std::string(u.status().message()), .param = "messages"};
      *text = std::move(u->text);
      *literal = std::move(u->literal_spans);
    }
    *prompt = absl::StrCat(*text, opening);
    return std::nullopt;
  }

  static void Serve(std::shared_ptr<const Context> self, HttpRequest req,
                    std::shared_ptr<HttpResponse> res) {
    if (req.path == "/v1/completions" || req.path == "/v1/chat/completions") {
      if (req.method != "POST") return MethodNotAllowed(req, *res, "POST");
      const Endpoint endpoint =
          req.path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChatCompletions;
      auto run = [self, endpoint](const HttpRequest& req, std::shared_ptr<HttpResponse> res) {
        Guarded("an HTTP door worker", self->escaped, *res,
                [&] { self->Completion(endpoint, req, res); });
      };
      if (self->work == nullptr) return run(req, std::move(res));
      WorkQueue* work = self->work;
      work->Post([run = std::move(run), req = std::move(req), res = std::move(res)]() mutable {
        run(req, std::move(res));
      });
      return;
    }
    self->ServeCheap(req, *res);
  }

  // The endpoints cheap enough for the I/O thread.
  void ServeCheap(const HttpRequest& req, HttpResponse& res) const {
    if (req.path == "/health" || req.path == "/v1/models" || req.path == "/metrics") {
      if (req.method != "GET") return MethodNotAllowed(req, res, "GET");
      if (req.path == "/health") return Health(res);
      if (req.path == "/v1/models") return Models(res);
      return res.Send(200, metrics::kTextContentType,
                      options.router->MetricsText() +
                          DoorMetrics(counters(), work, escaped->load(), literal_special->load()));
    }
    Reply(res, ApiError{.http_status = 404,
                        .message = absl::StrCat(req.method, " ", req.path, ": no such endpoint"),
                        .code = "not_found"});
  }

  static void MethodNotAllowed(const HttpRequest& req, HttpResponse& res, const char* allowed) {
    const ApiError e{.http_status = 405,
                     .message = absl::StrCat(req.method, " ", req.path, ": use ", allowed)};
    res.Send(405, "application/json", openai::JsonText(e.ToJson()), {{"Allow", allowed}});
  }
};

}  // namespace

ApiError FromStatus(const absl::Status& s) {
  ApiError e{.message = std::string(s.message())};
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      e.http_status = 400;
      break;
    case absl::StatusCode::kOutOfRange:  // The prompt (or the output it asks for) cannot fit.
      e.http_status = 400;
      e.code = "context_length_exceeded";
      break;
    case absl::StatusCode::kResourceExhausted:  // Overloaded now: worth retrying.
      e.http_status = 429;
      e.type = "rate_limit_exceeded";
      e.code = "server_overloaded";
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kFailedPrecondition:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "unavailable";
      break;
    case absl::StatusCode::kDeadlineExceeded:
      e.http_status = 504;
      e.type = "server_error";
      e.code = "timeout";
      break;
    case absl::StatusCode::kCancelled:
      e.http_status = 499;  // The client went away (nginx's code); it reads nothing.
      e.type = "cancelled";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
  }
  return e;
}

HttpHandler HttpFrontend::Handler(const HttpFrontendOptions& options,
                                  std::function<HttpCounters()> counters, WorkQueue* work) {
  auto context = std::make_shared<const Context>(Context{options, std::move(counters), work});
  return [context](HttpRequest req, std::shared_ptr<HttpResponse> res) {
    Context::Serve(context, std::move(req), std::move(res));
  };
}

HttpErrorBody HttpFrontend::ErrorBody() {
  return [](int status, const std::string& message) {
    ApiError e{.http_status = status, .message = message};
    if (status == 413) e.code = "request_too_large";
    if (status == 431) e.code = "headers_too_large";
    return std::make_pair(std::string("application/json"), openai::JsonText(e.ToJson()));
  };
}

absl::StatusOr<std::unique_ptr<HttpFrontend>> HttpFrontend::Start(HttpFrontendOptions options) {
  if (options.router == nullptr) {
    return absl::InvalidArgumentError("the HTTP frontend needs the router");
  }
  if (options.workers < 1) return absl::InvalidArgumentError("the HTTP door needs ≥ 1 worker");
  if (options.served_model.empty()) {
    return absl::InvalidArgumentError("the HTTP frontend needs the served model's name");
  }
  if (options.default_chat_max_tokens < 1) {
    return absl::InvalidArgumentError("default_chat_max_tokens must be ≥ 1");
  }
  // The counters are the server's, which exists only once started: read through a holder.
  auto server_holder = std::make_shared<std::atomic<HttpServer*>>(nullptr);
  auto counters = [server_holder] {
    HttpServer* server = server_holder->load();
    return server != nullptr ? server->counters() : HttpCounters{};
  };
  absl::StatusOr<std::unique_ptr<WorkQueue>> created = WorkQueue::Create(options.workers);
  if (!created.ok()) return created.status();
  std::unique_ptr<WorkQueue> work = *std::move(created);
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start({.listen = options.listen,
                         .port = options.port,
                         .threads = options.threads,
                         .limits = options.limits,
                         .tls_cert_file = options.tls_cert_file,
                         .tls_key_file = options.tls_key_file,
                         .handler = Handler(options, counters, work.get()),
                         .error_body = ErrorBody()});
  if (!server.ok()) return server.status();
  server_holder->store(server->get());
  return std::unique_ptr<HttpFrontend>(new HttpFrontend(std::move(work), *std::move(server)));
}

HttpFrontend::~HttpFrontend() { Shutdown(); }

void HttpFrontend::Shutdown() { server_->Shutdown(); }

}  // namespace semmoe::router::http
