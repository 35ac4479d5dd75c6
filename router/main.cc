// router: the client-facing gRPC frontend (RouterService) over the Attention-DP ranks of an
// engine group. It tokenises requests, places each on the rank its prompt fits best under the
// placement's affinity tables (rebatching), and streams the tokens back.
//
//   router --engines HOST:PORT[,...] --model DIR [--port 8000] [--listen 127.0.0.1]
//          [--http_port 8080]     (OpenAI-compatible HTTP beside gRPC; docs/OPENAI.md)
//          [--policy semantic|round_robin|least_loaded] [--balance_eps 0.05]
//          [--window_ms 2] [--max_queue_ms 20] [--max_in_flight 4096]
//          [--planner HOST:PORT --model_name NAME]     (follow the active version's tables)
//          [--planner HOST:PORT --version V]           (or one version's tables, fixed)
//          [--affinity FILE --placement FILE [--version V]]  (or fixed tables, e.g. exported)
//   router --experiment ID --planner HOST:PORT --arms A=HOST:PORT,...;B=HOST:PORT,... --model DIR
//          (an A/B test: each arm's engine group runs its arm's version; the router splits
//           traffic by the experiment's shares, places with each version's tables, and records
//           each arm's metrics in the experiment)
//
// Exit status: 0 after Ctrl-C / SIGTERM, 1 when serving failed, 2 for bad usage.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/logging.h"
#include "common/security.h"
#include "common/security_flags.h"
#include "common/stop_signals.h"
#include "planner/placement/topology.h"
#include "planner/sim/cluster_profile.h"
#include "router/server/router_server.h"

ABSL_FLAG(std::vector<std::string>, engines, {}, "engine rank addresses, rank order");
ABSL_FLAG(std::string, topology, "",
          "which engine ranks share a node, as the engines' --topology (NxM or a topology file): "
          "with --policy semantic a request goes to the node its prompt fits best, then to the "
          "best-fitting rank with room there; empty: by rank alone");
ABSL_FLAG(std::string, model, "", "model directory (tokenizer.json, config.json)");
ABSL_FLAG(std::string, listen, "127.0.0.1", "address to listen on");
ABSL_FLAG(int, port, 8000, "port (0: pick a free one)");
ABSL_FLAG(std::string, port_file, "", "write the bound port here once serving");
ABSL_FLAG(int, http_port, -1,
          "OpenAI-compatible HTTP (/v1/completions, /v1/chat/completions, /v1/models, /health) "
          "on this port (0: a free one; -1: off)");
ABSL_FLAG(std::string, http_port_file, "", "write the bound HTTP port here once serving");
ABSL_FLAG(std::string, served_model_name, "",
          "the model's name for HTTP clients (\"model\"); default: the model directory's name");
ABSL_FLAG(int, default_chat_max_tokens, 1024, "HTTP chat requests without max_tokens");
ABSL_FLAG(std::string, chat_template, "",
          "HTTP chat: a Jinja chat template file to use instead of the model's "
          "tokenizer_config.json one (e.g. one that renders tools)");
ABSL_FLAG(std::string, tool_call_parser, "auto",
          "HTTP chat: the format the model writes tool calls in: hermes, deepseek_v3, mistral, "
          "auto (by config.json's model_type) or none (requests with tools refused)");
ABSL_FLAG(std::string, message_special_tokens, "text",
          "special-token text (\"<|im_start|>\") inside a chat request's messages, tools and "
          "chat_template_kwargs: text (kept as text: a tool result cannot open a turn) or "
          "control (parsed as control tokens, as Hugging Face's apply_chat_template does)");
ABSL_FLAG(double, chat_template_render_ms, 1000,
          "HTTP chat: the most time one chat template render may take (1 to 60000; a request "
          "past it gets a 400 saying so; renders are also bounded by work and output)");
ABSL_FLAG(int, http_threads, 2, "HTTP: I/O threads (every connection shares them; 1 to 256)");
ABSL_FLAG(int, http_workers, 2,
          "HTTP: threads that parse completions, render chat templates and tokenise prompts "
          "(1 to 256)");
ABSL_FLAG(int, http_max_connections, 16384, "HTTP: open connections; more are closed at once");
ABSL_FLAG(int64_t, http_max_header_bytes, 16 << 10, "HTTP: request line and headers (431 beyond)");
ABSL_FLAG(int64_t, http_max_body_bytes, 32 << 20, "HTTP: a request body (413 beyond)");
ABSL_FLAG(int, http_max_requests_per_connection, 10000, "HTTP: then Connection: close");
ABSL_FLAG(double, http_header_timeout_s, 10, "HTTP: a new connection's headers must arrive within");
ABSL_FLAG(double, http_idle_timeout_s, 30, "HTTP: a kept-alive connection's next request within");
ABSL_FLAG(double, http_body_timeout_s, 60, "HTTP: a request body within, after its headers");
ABSL_FLAG(double, http_write_timeout_s, 30, "HTTP: each response write within (slow readers)");
ABSL_FLAG(std::string, policy, "semantic",
          "semantic, round_robin, least_loaded, or time (each window placed where the step-cost "
          "model predicts the next MoE layer shortest, never slower than least_loaded or "
          "round_robin predict: needs --cluster)");
ABSL_FLAG(std::string, cluster, "",
          "--policy time: the cluster profile it predicts with (lab, h100, h200 or a profile "
          "file, as tools/simulate --cluster)");
ABSL_FLAG(double, balance_eps, 0.05, "semantic: rank load ≤ (1 + eps) × mean + one request");
ABSL_FLAG(double, window_ms, 2, "rebatching window, ms");
ABSL_FLAG(int, max_window, 256, "requests per window at most");
ABSL_FLAG(double, max_queue_ms, 20, "default longest wait in the window, ms");
ABSL_FLAG(int, max_in_flight, 4096, "requests admitted at once; beyond: RESOURCE_EXHAUSTED");
ABSL_FLAG(int, poll_ms, 500, "engine stats polling period, ms");
ABSL_FLAG(double, max_predicted_wait_ms, 2000,
          "admission: refuse a request at once (RESOURCE_EXHAUSTED) when its group's predicted "
          "wait (queue over completion rate) exceeds this, or its deadline (0: deadlines only)");
ABSL_FLAG(double, requeue_s, 10,
          "a request no engine rank can take (a group re-forming, a rank restarting) waits this "
          "long, within its deadline, for one to come back; then UNAVAILABLE (0: at once)");
ABSL_FLAG(std::string, planner, "", "planner address: follow the active version's tables");
ABSL_FLAG(std::string, model_name, "", "with --planner: the model's name in the planner");
ABSL_FLAG(std::string, affinity, "", "fixed tables: affinity file (planner export)");
ABSL_FLAG(std::string, placement, "", "fixed tables: the placement JSON they belong to");
ABSL_FLAG(int64_t, version, 0,
          "with --planner: this version's tables (fixed); with --affinity: the version they are");
ABSL_FLAG(int64_t, experiment, 0, "A/B: the running experiment (with --planner and --arms)");
ABSL_FLAG(std::string, arms, "", "A/B: NAME=HOST:PORT,...;NAME=... (each arm's engine ranks)");
ABSL_FLAG(double, report_s, 5, "A/B: seconds between arm metric reports to the planner");
ABSL_FLAG(double, slo_ttft_ms, 1000, "goodput SLO: time to first token");
ABSL_FLAG(double, slo_tpot_ms, 200, "goodput SLO: time per output token");
ABSL_FLAG(double, load_window_s, 60,
          "the expert load in stats, /metrics and the console covers the last half to whole of "
          "this many seconds (not the time since the engines started)");

namespace semmoe::router {
namespace {

// SIGINT/SIGTERM to exit, whatever the router is doing.
constexpr absl::Duration kStopBound = absl::Seconds(5);

int Usage(const std::string& message) {
  std::cerr << "router: " << message << "\n(see --helpfull)\n";
  return 2;
}

int Fail(const absl::Status& status) {
  std::cerr << "router: " << status << "\n";
  return 1;
}

// Every floating-point flag finite and in its range (a NaN passed the "≥ 0" checks below and
// became an infinite window), each error naming its flag. The 0 floors are the checks that
// follow (they are inclusive or exclusive there).
absl::Status CheckNumberFlags() {
  struct Range {
    const char* name;
    double value, min, max;
  };
  const Range ranges[] = {
      {"chat_template_render_ms", absl::GetFlag(FLAGS_chat_template_render_ms), 1, 60000},
      {"http_header_timeout_s", absl::GetFlag(FLAGS_http_header_timeout_s), 0, 86400},
      {"http_idle_timeout_s", absl::GetFlag(FLAGS_http_idle_timeout_s), 0, 86400},
      {"http_body_timeout_s", absl::GetFlag(FLAGS_http_body_timeout_s), 0, 86400},
      {"http_write_timeout_s", absl::GetFlag(FLAGS_http_write_timeout_s), 0, 86400},
      {"balance_eps", absl::GetFlag(FLAGS_balance_eps), 0, 100},
      {"window_ms", absl::GetFlag(FLAGS_window_ms), 0, 60000},
      {"max_queue_ms", absl::GetFlag(FLAGS_max_queue_ms), 0, 3.6e6},
      {"max_predicted_wait_ms", absl::GetFlag(FLAGS_max_predicted_wait_ms), -1e300, 8.64e7},
      {"requeue_s", absl::GetFlag(FLAGS_requeue_s), -1e300, 86400},
      {"report_s", absl::GetFlag(FLAGS_report_s), 0.01, 86400},
      {"slo_ttft_ms", absl::GetFlag(FLAGS_slo_ttft_ms), 0.001, 8.64e7},
      {"slo_tpot_ms", absl::GetFlag(FLAGS_slo_tpot_ms), 0.001, 8.64e7},
      {"load_window_s", absl::GetFlag(FLAGS_load_window_s), 0, 86400 * 7},
      {"poll_ms", static_cast<double>(absl::GetFlag(FLAGS_poll_ms)), 0, 3.6e6},
  };
  for (const Range& r : ranges) {
    if (!std::isfinite(r.value) || r.value < r.min || r.value > r.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", r.name, " ", r.value, " must be a finite number",
          r.min > -1e300 ? absl::StrCat(" from ", r.min) : std::string(), " up to ", r.max));
    }
  }
  for (const auto& [name, port] : {std::pair<const char*, int>{"port", absl::GetFlag(FLAGS_port)},
                                   {"http_port", absl::GetFlag(FLAGS_http_port)}}) {
    if (port < -1 || port > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " ", port, " is not a TCP port (0 to 65535; 0: any free one)"));
    }
  }
  return absl::OkStatus();
}

// Flags → RouterServerOptions; everything else is router/server/router_server.h.
int Run() {
  if (absl::Status numbers = CheckNumberFlags(); !numbers.ok()) {
    return Usage(std::string(numbers.message()));
  }
  RouterServerOptions o;
  o.engines = absl::GetFlag(FLAGS_engines);
  o.model_dir = UserPath(absl::GetFlag(FLAGS_model));
  o.listen = absl::GetFlag(FLAGS_listen);
  o.port = absl::GetFlag(FLAGS_port);
  o.http_port = absl::GetFlag(FLAGS_http_port);
  o.served_model_name = absl::GetFlag(FLAGS_served_model_name);
  o.default_chat_max_tokens = absl::GetFlag(FLAGS_default_chat_max_tokens);
  o.chat_template_file = UserPath(absl::GetFlag(FLAGS_chat_template));
  o.tool_call_parser = absl::GetFlag(FLAGS_tool_call_parser);
  o.message_special_tokens = absl::GetFlag(FLAGS_message_special_tokens);
  o.http_threads = absl::GetFlag(FLAGS_http_threads);
  o.http_workers = absl::GetFlag(FLAGS_http_workers);
  const double render_ms = absl::GetFlag(FLAGS_chat_template_render_ms);
  if (!std::isfinite(render_ms)) return Usage("--chat_template_render_ms must be a finite number");
  o.chat_template_render_timeout = absl::Milliseconds(render_ms);
  o.http_limits = {
      .max_connections = absl::GetFlag(FLAGS_http_max_connections),
      .max_header_bytes = absl::GetFlag(FLAGS_http_max_header_bytes),
      .max_body_bytes = absl::GetFlag(FLAGS_http_max_body_bytes),
      .max_requests_per_connection = absl::GetFlag(FLAGS_http_max_requests_per_connection),
      .header_timeout = absl::Seconds(absl::GetFlag(FLAGS_http_header_timeout_s)),
      .idle_timeout = absl::Seconds(absl::GetFlag(FLAGS_http_idle_timeout_s)),
      .body_timeout = absl::Seconds(absl::GetFlag(FLAGS_http_body_timeout_s)),
      .write_timeout = absl::Seconds(absl::GetFlag(FLAGS_http_write_timeout_s))};
  absl::StatusOr<Policy> policy = ParsePolicy(absl::GetFlag(FLAGS_policy));
  if (!policy.ok()) return Usage(std::string(policy.status().message()));
  o.rebatch = {.policy = *policy,
               .balance_eps = absl::GetFlag(FLAGS_balance_eps),
               .window = absl::Milliseconds(absl::GetFlag(FLAGS_window_ms)),
               .max_window_requests = absl::GetFlag(FLAGS_max_window)};
  if (const std::string spec = absl::GetFlag(FLAGS_topology); !spec.empty()) {
    absl::StatusOr<planner::Topology> topology = planner::Topology::FromFlag(spec);
    if (!topology.ok()) return Usage(absl::StrCat("--topology: ", topology.status().message()));
    for (int r = 0; r < topology->num_ranks(); ++r) {
      o.rebatch.node_of.push_back(topology->NodeOf(r));
    }
  }
  o.cluster = planner::sim::ClusterFlagValue(absl::GetFlag(FLAGS_cluster));
  o.max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  o.default_max_queue = absl::Milliseconds(absl::GetFlag(FLAGS_max_queue_ms));
  o.poll_interval = absl::Milliseconds(absl::GetFlag(FLAGS_poll_ms));
  o.requeue = absl::Seconds(std::max(0.0, absl::GetFlag(FLAGS_requeue_s)));
  o.max_predicted_wait =
      absl::Milliseconds(std::max(0.0, absl::GetFlag(FLAGS_max_predicted_wait_ms)));
  o.slo_ttft_ms = absl::GetFlag(FLAGS_slo_ttft_ms);
  o.slo_tpot_ms = absl::GetFlag(FLAGS_slo_tpot_ms);
  o.load_window = absl::Seconds(absl::GetFlag(FLAGS_load_window_s));
  o.planner = absl::GetFlag(FLAGS_planner);
  o.model_name = absl::GetFlag(FLAGS_model_name);
  o.affinity_file = UserPath(absl::GetFlag(FLAGS_affinity));
  o.placement_file = UserPath(absl::GetFlag(FLAGS_placement));
  o.version = absl::GetFlag(FLAGS_version);
  o.experiment = absl::GetFlag(FLAGS_experiment);
  auto arms = ParseArms(absl::GetFlag(FLAGS_arms));
  if (!arms.ok()) return Usage(std::string(arms.status().message()));
  o.arms = *std::move(arms);
  o.report_interval = absl::Seconds(absl::GetFlag(FLAGS_report_s));
  const absl::Status valid = ValidateRouterServerOptions(o);
  if (!valid.ok()) return Usage(std::string(valid.message()));

  // The stop signals are taken by a thread of their own before gRPC starts its threads, even
  // while the start runs (it probes the chat template; RouterServer::Start is bounded, but an
  // operator's Ctrl-C must not wait for it): the first one stops the router (and cancels chat
  // template renders), and if the stop has not finished kStopBound later (a worker stuck in
  // something unbounded: a bug), the process exits anyway, saying so.
  StopSignals& stop = WatchStopSignals("router", kStopBound);
  o.stop = &stop.stopping();

  // One descriptor per HTTP connection: the soft limit (often 1,024) up to the hard one.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  WarnIfPlaintext(o.listen, "the router");
  absl::StatusOr<std::unique_ptr<RouterServer>> server = RouterServer::Start(o);
  if (!server.ok()) {
    if (stop.stopped().HasBeenNotified()) {
      std::cout << "router: stopped on signal " << stop.signal() << " while starting" << std::endl;
      return 0;
    }
    return Fail(server.status());
  }
  std::cout << (*server)->Describe() << std::endl;
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    absl::Status written = WriteFileAtomically(UserPath(absl::GetFlag(FLAGS_port_file)),
                                               absl::StrCat((*server)->port(), "\n"));
    if (!written.ok()) return Fail(written);
  }
  if (!absl::GetFlag(FLAGS_http_port_file).empty()) {
    absl::Status written = WriteFileAtomically(UserPath(absl::GetFlag(FLAGS_http_port_file)),
                                               absl::StrCat((*server)->http_port(), "\n"));
    if (!written.ok()) return Fail(written);
  }
  stop.stopped().WaitForNotification();
  std::cout << "router: stopping on signal " << stop.signal() << std::endl;
  (*server)->Shutdown();
  return 0;
}

}  // namespace
}  // namespace semmoe::router

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("router --engines HOST:PORT,... --model DIR [flags]");
  // Logged before parsing: how this router was started, for whoever restarts it by hand.
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i > 0 ? " " : "") + std::string(argv[i]);
  absl::ParseCommandLine(argc, argv);
  semmoe::InitLogging(argv[0], {.stderr_threshold = 1});
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "router: " << security.message() << "\n";
    return 2;
  }
  std::cout << "router: started as: " << command_line << std::endl;
  return semmoe::router::Run();
}
