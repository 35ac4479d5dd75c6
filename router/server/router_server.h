// RouterServer: everything `router` runs, as a library (like engine/server/rank_server.h and
// planner/server/serve.h): load the model's tokenizer and vocabulary, set up the engine groups
// (one, or one per A/B arm of a running experiment, read from the planner), their affinity
// tables (fixed files, the planner's active version followed live, or each arm's version), and
// serve RouterService (+ gRPC health and reflection) until Shutdown().
#ifndef SEMMOE_ROUTER_SERVER_ROUTER_SERVER_H_
#define SEMMOE_ROUTER_SERVER_ROUTER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "engine/text/chat_template.h"
#include "engine/text/special_text_mask.h"
#include "engine/text/tokenizer.h"
#include "grpcpp/grpcpp.h"
#include "router/core/router_core.h"
#include "router/http/http_frontend.h"
#include "router/rebatch/rebatcher.h"
#include "router/server/router_service.h"
#include "router/tables/engine_follow.h"
#include "router/tables/planner_watch.h"
#include "router/tables/router_tables.h"

namespace semmoe::router {

// The most HTTP I/O threads, and the most HTTP workers, a router takes.
inline constexpr int kMaxHttpThreads = 256;

struct RouterServerOptions {
  std::string model_dir;             // tokenizer.json and config.json (the vocabulary).
  std::vector<std::string> engines;  // The one group's engine ranks, rank order (no experiment).
  std::string listen = "127.0.0.1";
  int port = 8000;  // 0: any free port (port()).
  // The OpenAI-compatible HTTP frontend (router/http): −1 off, 0 any free port (http_port()).
  int http_port = -1;
  std::string served_model_name;  // What HTTP clients call the model; "": the model dir's name.
  int default_chat_max_tokens = 1024;
  // A Jinja chat template file used instead of tokenizer_config.json's ("": the model's own).
  std::string chat_template_file;
  // The format the model writes tool calls in: "auto" (by config.json's model_type: Qwen →
  // hermes, DeepSeek → deepseek_v3, Mixtral → mistral), a format's name (tool_use.h), or "none".
  std::string tool_call_parser = "auto";
  // Special-token text in a chat request's messages, tools and template arguments: "text" (kept
  // as text, so a tool result holding "<|im_start|>" cannot open a turn) or "control" (parsed
  // as control tokens, as Hugging Face's apply_chat_template does). docs/OPENAI.md.
  std::string message_special_tokens = "text";
  int http_threads = 2;  // The HTTP door's I/O threads (1..kMaxHttpThreads).
  int http_workers = 2;  // Its threads that parse, render and submit completions.
  // One chat template render's time (router --chat_template_render_ms; 1 ms..60 s); renders are
  // bounded by work too (engine/text/jinja/template.h).
  absl::Duration chat_template_render_timeout = absl::Milliseconds(1000);
  // Borrowed, optional: set (by a signal handler's thread) to stop renders in flight — also the
  // chat template's load-time probes while Start runs. Null: Shutdown stops them.
  const std::atomic<bool>* stop = nullptr;
  http::HttpLimits http_limits;  // Its connections, sizes and deadlines (http_server.h).
  RebatcherOptions rebatch;
  // --policy time: the cluster profile its step-cost model predicts with (lab, h100, h200 or a
  // profile file: planner/sim/cluster_profile.h); each group's predictor is built at Start from
  // it, the model's config.json and the group's ranks (rebatch.node_of's nodes).
  std::string cluster;
  int max_in_flight = 4096;
  absl::Duration default_max_queue = absl::Milliseconds(20);
  absl::Duration poll_interval = absl::Milliseconds(500);
  absl::Duration requeue = absl::Seconds(10);            // RouterOptions::requeue.
  absl::Duration max_predicted_wait = absl::Seconds(2);  // RouterOptions::max_predicted_wait.
  double slo_ttft_ms = 1000, slo_tpot_ms = 200;          // Goodput.
  absl::Duration load_window = absl::Seconds(60);        // GroupOptions::load_window.

  // Tables, at most one source. The planner's active version of `model_name`, followed live, or
  // with `version` (and no model_name) that version's tables, fixed:
  std::string planner;
  std::string model_name;
  // ... or fixed tables from files: the affinity file (planner export) and the placement JSON
  // they belong to, reported as `version`.
  std::string affinity_file;
  std::string placement_file;
  int64_t version = 0;

  // A/B: the running experiment `experiment` (with `planner`); each arm's engine ranks by name.
  int64_t experiment = 0;
  std::map<std::string, std::vector<std::string>> arms;
  absl::Duration report_interval = absl::Seconds(5);
};

// InvalidArgument naming the flag-level mistake (missing engines, two table sources, ...).
absl::Status ValidateRouterServerOptions(const RouterServerOptions& options);

// "A=HOST:PORT,...;B=..." → arm name → engine addresses; InvalidArgument naming a bad part.
absl::StatusOr<std::map<std::string, std::vector<std::string>>> ParseArms(absl::string_view arms);

class RouterServer {
 public:
  // Validates, loads, sets up the groups and their tables, and starts serving. Errors name what
  // failed (a model file, the planner, the experiment, the listening address).
  static absl::StatusOr<std::unique_ptr<RouterServer>> Start(const RouterServerOptions& options);
  ~RouterServer();

  int port() const { return port_; }
  int http_port() const { return http_ != nullptr ? http_->port() : -1; }
  // One line for the operator: address, policy, groups and where their tables come from.
  std::string Describe() const;
  // What GetStats answers.
  rpc::RouterStats Stats() const { return core_->Stats(); }
  // Stops serving, waiting up to 5 s for calls in flight.
  void Shutdown();

 private:
  RouterServer() = default;
  absl::Status StartHttp();

  RouterServerOptions options_;
  std::unique_ptr<engine::model::Tokenizer> tokenizer_;
  TablesHolder tables_;  // The one group's (no experiment).
  std::vector<std::unique_ptr<TablesHolder>> arm_tables_;
  std::vector<GroupOptions> groups_;
  std::unique_ptr<PlannerWatch> watch_;
  std::vector<std::unique_ptr<EngineFollow>> follows_;  // Per group, when it follows its engines.
  std::unique_ptr<RouterCore> core_;                    // Destroyed after both doors below.
  std::unique_ptr<RouterServiceImpl> service_;          // Destroyed after the server below.
  std::unique_ptr<grpc::Server> server_;
  // Set by Shutdown: chat template renders in flight (and load-time probes) stop.
  std::atomic<bool> stopping_{false};
  std::unique_ptr<engine::model::ChatTemplate> chat_template_;  // Null: none (chat_error_).
  // --message_special_tokens=text: the door's mask (null with =control).
  std::unique_ptr<engine::model::SpecialTextMask> special_text_;
  std::string chat_error_;
  std::optional<openai::ToolCallFormat> tool_call_format_;  // None: tool calls are not parsed.
  std::unique_ptr<http::HttpFrontend> http_;                // Stopped before the server above.
  int port_ = 0;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_SERVER_ROUTER_SERVER_H_
