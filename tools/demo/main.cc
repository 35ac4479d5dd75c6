// demo: what `./semmoe demo` runs. On the default model (or --model DIR) it
//   1. makes a workload (prompt file, or text already on this machine), half to profile, half
//      to serve;
//   2. builds a semantic DP placement from a routing trace of the profile half, unless the
//      database already has one for this model and group size;
//   3. runs the serve half once on vanilla placement + round-robin routing and once on the
//      semantic placement + affinity-aware rebatching (each a fresh local cluster: planner,
//      engine ranks, router), with the same closed-loop load;
//   4. prints the two side by side — LAR, all-to-all bytes per token, throughput, TTFT and E2E
//      p50/p99, goodput — and keeps the semantic cluster serving until Ctrl-C (unless
//      --noserve).
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/security.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "planner/store/placement_store.h"
#include "tools/cluster/binaries.h"
#include "tools/cluster/process.h"
#include "tools/demo/corpus.h"
#include "tools/loadgen/load_runner.h"
#include "tools/loadgen/workload.h"

ABSL_FLAG(std::string, model, "", "model directory (Hugging Face layout)");
ABSL_FLAG(std::string, model_name, "", "its name in the planner database (default: the dir name)");
ABSL_FLAG(std::string, db, ".semmoe/planner.db", "planner database");
ABSL_FLAG(std::string, run_dir, ".semmoe/run", "logs, traces and cluster state");
ABSL_FLAG(int, ranks, 4, "engine ranks (Attention-DP)");
ABSL_FLAG(std::string, prompts, "", "JSONL prompts (\"text\"); default: text on this machine");
ABSL_FLAG(std::vector<std::string>, corpus,
          std::vector<std::string>({"/usr/share/common-licenses", "/usr/include/linux",
                                    "/usr/lib/python3.11/json", "/usr/share/perl5"}),
          "files or directories to cut prompts from when --prompts is not given");
ABSL_FLAG(int, num_prompts, 400, "prompts (half profiled, half served)");
ABSL_FLAG(int, prompt_chars, 400, "characters per prompt cut from the corpus");
ABSL_FLAG(int, concurrency, 8, "requests in flight during each run");
ABSL_FLAG(double, duration_s, 15, "seconds of load per run");
ABSL_FLAG(int, max_tokens, 32, "tokens generated per request");
ABSL_FLAG(double, slo_ttft_ms, 1000, "goodput SLO: time to first token");
ABSL_FLAG(double, slo_tpot_ms, 200, "goodput SLO: time per output token");
ABSL_FLAG(bool, serve, true, "keep the semantic cluster serving after the table");
ABSL_FLAG(bool, autopilot, true,
          "the semantic cluster follows the model's active version and the planner re-plans it by "
          "itself when the traffic drifts (planner serve --autopilot; both clusters sample a "
          "quarter of their requests' routing, so the comparison stays fair)");
ABSL_FLAG(int, http_port, 8080,
          "the semantic cluster's OpenAI-compatible HTTP port (0: a free one; the vanilla "
          "cluster's is always a free one)");
ABSL_FLAG(std::string, local_cluster_binary, "", "default: from the runfiles / bazel-bin");
ABSL_FLAG(std::string, engine_binary, "", "default: from the runfiles / bazel-bin");
ABSL_FLAG(std::string, planner_binary, "", "default: from the runfiles / bazel-bin");

namespace semmoe::tools {
namespace {

std::string argv0;
sigset_t stop_signals;

void Say(const std::string& line) { std::cout << "[demo] " << line << std::endl; }

bool Interrupted() {
  timespec none = {0, 0};
  return sigtimedwait(&stop_signals, nullptr, &none) > 0;
}

absl::Status RunToEnd(const std::vector<std::string>& argv, const std::string& log,
                      const std::string& what) {
  ASSIGN_OR_RETURN(auto p, Process::Spawn(argv, log));
  while (!p->WaitFor(absl::Milliseconds(200))) {
    if (Interrupted()) return absl::CancelledError(absl::StrCat("interrupted while ", what));
  }
  if (!p->exited_ok()) {
    return absl::InternalError(
        absl::StrCat(what, " failed (", *p->Poll(), "); ", log, ":\n", Tail(log, 15)));
  }
  return absl::OkStatus();
}

absl::Status WriteJsonl(const std::string& path, const std::vector<std::string>& texts) {
  std::string out;
  for (size_t i = 0; i < texts.size(); ++i) {
    out += nlohmann::json({{"id", i}, {"text", texts[i]}})
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += "\n";
  }
  return WriteFile(path, out);
}

// The semantic DP version for this model and group size: found in the database, or built.
absl::StatusOr<int64_t> SemanticVersion(const std::string& model, const std::string& name,
                                        const std::string& profile, const std::string& run_dir) {
  const std::string db = absl::GetFlag(FLAGS_db);
  const int g = absl::GetFlag(FLAGS_ranks);
  const std::string version_name = absl::StrCat("demo-semantic-dp-g", g);
  auto find = [&]() -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(auto store, planner::PlacementStore::Open(db));
    auto versions = store->List(name);
    if (!versions.ok()) return int64_t{0};  // No such model yet.
    for (const planner::PlacementVersion& v : *versions) {
      if (v.name == version_name && v.placement.num_devices() == g) return v.version;
    }
    return int64_t{0};
  };
  ASSIGN_OR_RETURN(int64_t version, find());
  if (version > 0) {
    Say(absl::StrCat("using semantic placement version ", version, " (", version_name, ") from ",
                     db));
    return version;
  }
  ASSIGN_OR_RETURN(const std::string engine,
                   FindBinary(argv0, absl::GetFlag(FLAGS_engine_binary), "engine/engine"));
  ASSIGN_OR_RETURN(const std::string planner,
                   FindBinary(argv0, absl::GetFlag(FLAGS_planner_binary), "planner/planner"));
  const std::string trace = JoinPath(run_dir, "profile.trace");
  Say("tracing the profile prompts on one device (engine trace) ...");
  RETURN_IF_ERROR(
      RunToEnd({engine, "trace", "--model", model, "--prompts", profile, "--out", trace},
               JoinPath(run_dir, "trace.log"), "tracing"));
  Say(absl::StrCat("planning a semantic DP placement for ", g, " ranks (planner build) ..."));
  RETURN_IF_ERROR(RunToEnd({planner, "build", "--db", db, "--model", name, "--traces", trace,
                            "--devices", absl::StrCat(g), "--mode", "dp", "--algo", "semantic",
                            "--name", version_name, "--model_dir", model},
                           JoinPath(run_dir, "plan.log"), "planning"));
  ASSIGN_OR_RETURN(version, find());
  if (version == 0) return absl::InternalError("planner build stored no version");
  Say(absl::StrCat("stored version ", version, " in ", db));
  return version;
}

struct Arm {
  std::string label;
  std::unique_ptr<Process> cluster;
  std::string router;
  std::string http;  // host:port of the router's OpenAI-compatible HTTP ("" if none).
  LoadResult load;
};

// Starts a local cluster (its output in DIR/cluster.log) and waits for its endpoints.
absl::Status StartCluster(Arm& arm, const std::vector<std::string>& extra, const std::string& dir) {
  ASSIGN_OR_RETURN(
      const std::string bin,
      FindBinary(argv0, absl::GetFlag(FLAGS_local_cluster_binary), "tools/local_cluster"));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string endpoints = JoinPath(dir, "endpoints.json");
  unlink(endpoints.c_str());
  std::vector<std::string> argv = {bin,
                                   "--model",
                                   absl::GetFlag(FLAGS_model),
                                   "--ranks",
                                   absl::StrCat(absl::GetFlag(FLAGS_ranks)),
                                   "--attn",
                                   "dp",
                                   "--run_dir",
                                   dir,
                                   "--endpoints_file",
                                   endpoints};
  if (!absl::GetFlag(FLAGS_engine_binary).empty()) {
    argv.insert(argv.end(), {"--engine_binary", absl::GetFlag(FLAGS_engine_binary)});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  const std::string log = JoinPath(dir, "cluster.log");
  ASSIGN_OR_RETURN(arm.cluster, Process::Spawn(argv, log));
  const absl::Time deadline = absl::Now() + absl::Minutes(5);
  while (true) {
    absl::StatusOr<std::string> text = ReadFile(endpoints);
    if (text.ok()) {
      nlohmann::json j = ParseJsonOrDiscarded(*text);
      if (j.is_object() && j.contains("router") && j["router"].is_string()) {
        arm.router = j["router"].get<std::string>();
        if (j.contains("http") && j["http"].is_string()) arm.http = j["http"].get<std::string>();
        return absl::OkStatus();
      }
    }
    if (auto status = arm.cluster->Poll()) {
      return absl::UnavailableError(absl::StrCat("the ", arm.label, " cluster exited (", *status,
                                                 "); ", log, ":\n", Tail(log, 15)));
    }
    if (Interrupted()) return absl::CancelledError("interrupted while starting a cluster");
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the ", arm.label, " cluster did not start; ", log, ":\n", Tail(log, 15)));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

void StopCluster(Arm& arm) {
  if (arm.cluster == nullptr) return;
  arm.cluster->Signal(SIGINT);
  if (!arm.cluster->WaitFor(absl::Seconds(60))) arm.cluster->Signal(SIGKILL);
  arm.cluster->WaitFor(absl::Seconds(5));
}

absl::Status RunArm(Arm& arm, const std::vector<Prompt>& serve) {
  auto stub = router::rpc::RouterService::NewStub(semmoe::NewChannel(arm.router));
  Say(absl::StrCat(arm.label, ": ", absl::GetFlag(FLAGS_concurrency), " requests in flight for ",
                   absl::GetFlag(FLAGS_duration_s), " s ..."));
  ASSIGN_OR_RETURN(arm.load, RunLoad(*stub, serve,
                                     {.concurrency = absl::GetFlag(FLAGS_concurrency),
                                      .duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s)),
                                      .max_tokens = absl::GetFlag(FLAGS_max_tokens),
                                      .slo_ttft_ms = absl::GetFlag(FLAGS_slo_ttft_ms),
                                      .slo_tpot_ms = absl::GetFlag(FLAGS_slo_tpot_ms)}));
  if (arm.load.completed == 0) {
    return absl::UnavailableError(
        absl::StrCat(arm.label, ": no request completed",
                     arm.load.errors.empty() ? "" : absl::StrCat(" (", arm.load.errors[0], ")")));
  }
  return absl::OkStatus();
}

void PrintTable(const std::vector<Arm*>& arms) {
  std::printf("\n%-34s %7s %11s %8s %8s %10s %10s %9s %9s %8s\n", "placement + routing", "LAR",
              "a2a B/tok", "req/s", "tok/s", "TTFT p50", "TTFT p99", "E2E p50", "E2E p99",
              "goodput");
  for (const Arm* a : arms) {
    const LoadResult& r = a->load;
    std::printf("%-34s %7.3f %11.0f %8.2f %8.1f %8.1fms %8.1fms %7.0fms %7.0fms %8.2f\n",
                a->label.c_str(), r.lar, r.a2a_bytes_per_token, r.throughput_rps,
                r.output_tokens_per_s, r.ttft_ms.p50, r.ttft_ms.p99, r.e2e_ms.p50, r.e2e_ms.p99,
                r.goodput_rps);
  }
  std::printf(
      "(%d ranks, Attention-DP; %d tokens per request; goodput: requests/s with TTFT ≤ "
      "%.0f ms and TPOT ≤ %.0f ms)\n\n",
      absl::GetFlag(FLAGS_ranks), absl::GetFlag(FLAGS_max_tokens), absl::GetFlag(FLAGS_slo_ttft_ms),
      absl::GetFlag(FLAGS_slo_tpot_ms));
}

absl::Status Main(Arm& vanilla, Arm& semantic) {
  const std::string model = absl::GetFlag(FLAGS_model);
  std::string name = absl::GetFlag(FLAGS_model_name);
  if (name.empty()) name = BaseName(model);
  const std::string run_dir = absl::GetFlag(FLAGS_run_dir);
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("cannot create ", run_dir, ": ", ec.message()));

  // 1. The workload.
  std::vector<std::string> texts;
  if (!absl::GetFlag(FLAGS_prompts).empty()) {
    ASSIGN_OR_RETURN(std::vector<Prompt> all,
                     LoadPrompts(absl::GetFlag(FLAGS_prompts),
                                 {.max_prompts = absl::GetFlag(FLAGS_num_prompts),
                                  .max_prompt_chars = absl::GetFlag(FLAGS_prompt_chars)}));
    for (const Prompt& p : all) {
      if (!p.text.empty()) texts.push_back(p.text);
    }
  } else {
    ASSIGN_OR_RETURN(texts,
                     CollectPrompts(absl::GetFlag(FLAGS_corpus), absl::GetFlag(FLAGS_num_prompts),
                                    absl::GetFlag(FLAGS_prompt_chars)));
  }
  if (texts.size() < 4) return absl::InvalidArgumentError("the workload needs at least 4 prompts");
  std::vector<std::string> profile, serve_texts;
  for (size_t i = 0; i < texts.size(); ++i)
    (i % 2 == 0 ? profile : serve_texts).push_back(texts[i]);
  const std::string profile_path = JoinPath(run_dir, "profile.jsonl");
  const std::string serve_path = JoinPath(run_dir, "serve.jsonl");
  RETURN_IF_ERROR(WriteJsonl(profile_path, profile));
  RETURN_IF_ERROR(WriteJsonl(serve_path, serve_texts));
  Say(absl::StrCat(texts.size(), " prompts: ", profile.size(), " to profile, ", serve_texts.size(),
                   " to serve (", run_dir, ")"));
  std::vector<Prompt> serve;
  for (std::string& t : serve_texts) serve.push_back({.text = std::move(t)});

  // 2. The semantic placement.
  ASSIGN_OR_RETURN(const int64_t version, SemanticVersion(model, name, profile_path, run_dir));

  // The autopilot re-plans the model's active version: the demo's version unless one is active
  // (an earlier run's autopilot may have rolled out its own).
  std::vector<std::string> sampling, autopilot;
  int64_t serving = version;
  if (absl::GetFlag(FLAGS_autopilot)) {
    ASSIGN_OR_RETURN(auto store, planner::PlacementStore::Open(absl::GetFlag(FLAGS_db)));
    ASSIGN_OR_RETURN(std::optional<planner::PlacementVersion> active, store->Active(name));
    if (!active.has_value() || active->placement.num_devices() != absl::GetFlag(FLAGS_ranks)) {
      RETURN_IF_ERROR(store->Activate(version));
    } else {
      serving = active->version;
    }
    sampling = {"--sample_routing", "0.25", "--routing_sample_tokens", "8192"};
    autopilot = {"--autopilot"};
    Say(absl::StrCat("the autopilot follows version ", serving,
                     " (active) and re-plans it on drift: console autopilot status --model ",
                     name));
  }

  // 3. Vanilla + round-robin, then semantic + rebatching.
  Say("starting the vanilla cluster (vanilla placement, round-robin routing) ...");
  std::vector<std::string> vanilla_flags = {"--placement", "vanilla", "--router_policy",
                                            "round_robin"};
  vanilla_flags.insert(vanilla_flags.end(), sampling.begin(), sampling.end());
  RETURN_IF_ERROR(StartCluster(vanilla, vanilla_flags, JoinPath(run_dir, "vanilla")));
  RETURN_IF_ERROR(RunArm(vanilla, serve));
  StopCluster(vanilla);
  if (Interrupted()) return absl::CancelledError("interrupted");
  Say(absl::StrCat("starting the semantic cluster (version ", serving,
                   ", affinity-aware rebatching) ..."));
  std::vector<std::string> semantic_flags = {"--db",
                                             absl::GetFlag(FLAGS_db),
                                             "--placement",
                                             absl::StrCat(serving),
                                             "--router_policy",
                                             "semantic",
                                             "--http_port",
                                             absl::StrCat(absl::GetFlag(FLAGS_http_port))};
  semantic_flags.insert(semantic_flags.end(), sampling.begin(), sampling.end());
  semantic_flags.insert(semantic_flags.end(), autopilot.begin(), autopilot.end());
  RETURN_IF_ERROR(StartCluster(semantic, semantic_flags, JoinPath(run_dir, "semantic")));
  RETURN_IF_ERROR(RunArm(semantic, serve));

  // 4. The table; then serve.
  PrintTable({&vanilla, &semantic});
  if (!absl::GetFlag(FLAGS_serve)) return absl::OkStatus();
  std::cout << "The semantic cluster keeps serving: router " << semantic.router
            << "\n  bazel run //tools:router_client -- generate --target " << semantic.router
            << " --prompt 'The history of' --max_tokens 32\n  bazel run //tools:router_client -- "
               "stats --target "
            << semantic.router << "\n";
  if (!semantic.http.empty()) {
    std::cout << "OpenAI-compatible HTTP: http://" << semantic.http << "/v1 (model '"
              << BaseName(absl::GetFlag(FLAGS_model)) << "')\n  curl http://" << semantic.http
              << "/v1/chat/completions -H 'Content-Type: application/json' -d '{\"messages\": "
                 "[{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 32}'\n";
  }
  std::cout << "Ctrl-C stops it." << std::endl;
  while (true) {
    timespec tick = {0, 200 * 1000 * 1000};
    if (sigtimedwait(&stop_signals, nullptr, &tick) > 0) return absl::OkStatus();
    if (auto status = semantic.cluster->Poll()) {
      return absl::UnavailableError(absl::StrCat("the cluster exited (", *status, ")"));
    }
  }
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace semmoe::tools;  // NOLINT: main only.
  char resolved[PATH_MAX];
  argv0 = realpath(argv[0], resolved) != nullptr ? resolved : argv[0];
  if (absl::GetFlag(FLAGS_model).empty()) {
    std::cerr << "demo: --model is required\n";
    return 2;
  }
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  Arm vanilla{.label = "vanilla + round-robin"};
  Arm semantic{.label = "semantic + rebatching"};
  const absl::Status status = Main(vanilla, semantic);
  StopCluster(vanilla);
  StopCluster(semantic);
  if (!status.ok()) {
    std::cerr << "demo: " << status.message() << "\n";
    return absl::IsCancelled(status) ? 130 : 1;
  }
  Say("stopped");
  return 0;
}
