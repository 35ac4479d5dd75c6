// router: the client-facing gRPC frontend (RouterService) over the Attention-DP ranks of an
// engine group. It tokenises requests, places each on the rank its prompt fits best under the
// placement's affinity tables (rebatching), and streams the tokens back.
//
//   router --engines HOST:PORT[,...] --model DIR [--port 8000] [--listen 127.0.0.1]
//          [--policy semantic|round_robin|least_loaded] [--balance_eps 0.05]
//          [--window_ms 2] [--max_queue_ms 20] [--max_in_flight 4096]
//          [--planner HOST:PORT --model_name NAME]     (follow the active version's tables)
//          [--affinity FILE --placement FILE [--version V]]  (or fixed tables, e.g. exported)
//   router --experiment ID --planner HOST:PORT --arms A=HOST:PORT,...;B=HOST:PORT,... --model DIR
//          (an A/B test: each arm's engine group runs its arm's version; the router splits
//           traffic by the experiment's shares, places with each version's tables, and records
//           each arm's metrics in the experiment)
//
// Exit status: 0 after Ctrl-C / SIGTERM, 1 when serving failed, 2 for bad usage.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "engine/model/config.h"
#include "engine/model/tokenizer.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "planner/proto/planner.grpc.pb.h"
#include "router/server/router_service.h"
#include "router/tables/planner_watch.h"
#include "router/tables/router_tables.h"

ABSL_FLAG(std::vector<std::string>, engines, {}, "engine rank addresses, rank order");
ABSL_FLAG(std::string, model, "", "model directory (tokenizer.json, config.json)");
ABSL_FLAG(std::string, listen, "127.0.0.1", "address to listen on");
ABSL_FLAG(int, port, 8000, "port (0: pick a free one)");
ABSL_FLAG(std::string, port_file, "", "write the bound port here once serving");
ABSL_FLAG(std::string, policy, "semantic", "semantic, round_robin or least_loaded");
ABSL_FLAG(double, balance_eps, 0.05, "semantic: rank load ≤ (1 + eps) × mean + one request");
ABSL_FLAG(double, window_ms, 2, "rebatching window, ms");
ABSL_FLAG(int, max_window, 256, "requests per window at most");
ABSL_FLAG(double, max_queue_ms, 20, "default longest wait in the window, ms");
ABSL_FLAG(int, max_in_flight, 4096, "requests admitted at once; beyond: RESOURCE_EXHAUSTED");
ABSL_FLAG(int, poll_ms, 500, "engine stats polling period, ms");
ABSL_FLAG(std::string, planner, "", "planner address: follow the active version's tables");
ABSL_FLAG(std::string, model_name, "", "with --planner: the model's name in the planner");
ABSL_FLAG(std::string, affinity, "", "fixed tables: affinity file (planner export)");
ABSL_FLAG(std::string, placement, "", "fixed tables: the placement JSON they belong to");
ABSL_FLAG(int64_t, version, 0, "fixed tables: the placement version they are (for reports)");
ABSL_FLAG(int64_t, experiment, 0, "A/B: the running experiment (with --planner and --arms)");
ABSL_FLAG(std::string, arms, "", "A/B: NAME=HOST:PORT,...;NAME=... (each arm's engine ranks)");
ABSL_FLAG(double, report_s, 5, "A/B: seconds between arm metric reports to the planner");
ABSL_FLAG(double, slo_ttft_ms, 1000, "goodput SLO: time to first token");
ABSL_FLAG(double, slo_tpot_ms, 200, "goodput SLO: time per output token");

namespace semmoe::router {
namespace {

int Usage(const std::string& message) {
  std::cerr << "router: " << message << "\n(see --helpfull)\n";
  return 2;
}

int Fail(const absl::Status& status) {
  std::cerr << "router: " << status << "\n";
  return 1;
}

// The experiment's arms from the planner, each with its engines (from --arms) and its version's
// tables.
absl::StatusOr<std::vector<GroupOptions>> ExperimentGroups(
    const std::string& planner, int64_t id, const std::string& arms_flag, uint32_t vocab,
    const RebatcherOptions& rebatch, std::vector<std::unique_ptr<TablesHolder>>& tables) {
  std::map<std::string, std::vector<std::string>> engines;
  for (absl::string_view arm : absl::StrSplit(arms_flag, ';', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(arm, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty() || kv[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--arms: '", arm, "' is not NAME=HOST:PORT,..."));
    }
    engines[kv[0]] = absl::StrSplit(kv[1], ',', absl::SkipEmpty());
  }
  auto stub = planner::rpc::PlannerService::NewStub(
      grpc::CreateChannel(planner, grpc::InsecureChannelCredentials()));
  auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(10); };
  planner::rpc::ExperimentId eid;
  eid.set_id(id);
  planner::rpc::Experiment experiment;
  {
    grpc::ClientContext context;
    context.set_deadline(deadline());
    RETURN_IF_ERROR(FromGrpcStatus(stub->GetExperiment(&context, eid, &experiment)));
  }
  if (experiment.status() != "running") {
    return absl::FailedPreconditionError(
        absl::StrCat("experiment ", id, " is ", experiment.status(),
                     "; start it first (planner experiment start)"));
  }
  std::vector<GroupOptions> groups;
  for (const planner::rpc::ExperimentArm& arm : experiment.arms()) {
    auto it = engines.find(arm.name());
    if (it == engines.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--arms names no engines for arm '", arm.name(), "'"));
    }
    planner::rpc::GetVersionRequest get;
    get.set_version(arm.version());
    planner::rpc::PlacementVersion version;
    {
      grpc::ClientContext context;
      context.set_deadline(deadline());
      RETURN_IF_ERROR(FromGrpcStatus(stub->GetVersion(&context, get, &version)));
    }
    tables.push_back(std::make_unique<TablesHolder>());
    planner::rpc::AffinityTables affinity;
    grpc::ClientContext context;
    context.set_deadline(deadline());
    if (stub->GetAffinityTables(&context, get, &affinity).ok()) {
      ASSIGN_OR_RETURN(auto built,
                       BuildRouterTables(arm.version(), affinity.data(), version.placement_json(),
                                         static_cast<int>(it->second.size()), vocab));
      tables.back()->Set(std::move(built));
    }
    groups.push_back({.name = arm.name(),
                      .share_percent = arm.share_percent(),
                      .ranks = it->second,
                      .tables = tables.back().get(),
                      .rebatch = rebatch});
  }
  return groups;
}

int Run() {
  const std::vector<std::string> engines = absl::GetFlag(FLAGS_engines);
  const int64_t experiment = absl::GetFlag(FLAGS_experiment);
  if (experiment > 0) {
    if (absl::GetFlag(FLAGS_planner).empty() || absl::GetFlag(FLAGS_arms).empty()) {
      return Usage("--experiment needs --planner and --arms");
    }
    if (!engines.empty() || !absl::GetFlag(FLAGS_affinity).empty()) {
      return Usage("--experiment takes its engines from --arms and its tables from the planner");
    }
  } else if (engines.empty()) {
    return Usage("--engines is required");
  }
  const std::string model_dir = UserPath(absl::GetFlag(FLAGS_model));
  if (model_dir.empty()) return Usage("--model is required (for the tokenizer and vocabulary)");
  absl::StatusOr<Policy> policy = ParsePolicy(absl::GetFlag(FLAGS_policy));
  if (!policy.ok()) return Usage(std::string(policy.status().message()));
  if (absl::GetFlag(FLAGS_balance_eps) < 0 || absl::GetFlag(FLAGS_window_ms) < 0 ||
      absl::GetFlag(FLAGS_max_queue_ms) < 0 || absl::GetFlag(FLAGS_max_window) <= 0 ||
      absl::GetFlag(FLAGS_max_in_flight) <= 0 || absl::GetFlag(FLAGS_poll_ms) <= 0) {
    return Usage(
        "--balance_eps, --window_ms and --max_queue_ms must be ≥ 0; --max_window, "
        "--max_in_flight and --poll_ms > 0");
  }
  const bool follow = experiment == 0 && !absl::GetFlag(FLAGS_planner).empty();
  const bool fixed = !absl::GetFlag(FLAGS_affinity).empty();
  if (follow && absl::GetFlag(FLAGS_model_name).empty()) {
    return Usage("--planner needs --model_name");
  }
  if (follow && fixed) return Usage("give --planner or --affinity, not both");
  if (fixed != !absl::GetFlag(FLAGS_placement).empty()) {
    return Usage("--affinity and --placement go together");
  }
  absl::StatusOr<engine::model::ModelConfig> config = engine::model::LoadModelConfig(model_dir);
  if (!config.ok()) return Fail(config.status());
  absl::StatusOr<std::unique_ptr<engine::model::Tokenizer>> tokenizer =
      engine::model::Tokenizer::FromDirectory(model_dir);
  if (!tokenizer.ok()) return Fail(tokenizer.status());
  const int ranks = static_cast<int>(engines.size());
  const auto vocab = static_cast<uint32_t>(config->vocab_size);

  const RebatcherOptions rebatch = {.policy = *policy,
                                    .balance_eps = absl::GetFlag(FLAGS_balance_eps),
                                    .window = absl::Milliseconds(absl::GetFlag(FLAGS_window_ms)),
                                    .max_window_requests = absl::GetFlag(FLAGS_max_window)};
  TablesHolder tables;
  std::vector<std::unique_ptr<TablesHolder>> arm_tables;
  std::vector<GroupOptions> groups;
  std::unique_ptr<PlannerWatch> watch;
  if (experiment > 0) {
    absl::StatusOr<std::vector<GroupOptions>> arms =
        ExperimentGroups(absl::GetFlag(FLAGS_planner), experiment, absl::GetFlag(FLAGS_arms), vocab,
                         rebatch, arm_tables);
    if (!arms.ok()) return Fail(arms.status());
    groups = *std::move(arms);
  } else {
    groups.push_back({.ranks = engines, .tables = &tables, .rebatch = rebatch});
  }
  for (GroupOptions& g : groups) {
    g.slo_ttft_ms = absl::GetFlag(FLAGS_slo_ttft_ms);
    g.slo_tpot_ms = absl::GetFlag(FLAGS_slo_tpot_ms);
  }
  if (fixed) {
    absl::StatusOr<std::string> affinity = ReadFile(UserPath(absl::GetFlag(FLAGS_affinity)));
    if (!affinity.ok()) return Fail(affinity.status());
    absl::StatusOr<std::string> placement = ReadFile(UserPath(absl::GetFlag(FLAGS_placement)));
    if (!placement.ok()) return Fail(placement.status());
    auto built =
        BuildRouterTables(absl::GetFlag(FLAGS_version), *affinity, *placement, ranks, vocab);
    if (!built.ok()) return Fail(built.status());
    tables.Set(*built);
  } else if (follow) {
    watch = std::make_unique<PlannerWatch>(absl::GetFlag(FLAGS_planner),
                                           absl::GetFlag(FLAGS_model_name), ranks, vocab, tables);
  }

  // Block the stop signals before gRPC starts its threads, then wait for one here.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  RouterServiceImpl service(
      {.groups = groups,
       .tokenizer = tokenizer->get(),
       .vocab_size = config->vocab_size,
       .max_in_flight = absl::GetFlag(FLAGS_max_in_flight),
       .default_max_queue = absl::Milliseconds(absl::GetFlag(FLAGS_max_queue_ms)),
       .poll_interval = absl::Milliseconds(absl::GetFlag(FLAGS_poll_ms)),
       .experiment_id = experiment,
       .planner = absl::GetFlag(FLAGS_planner),
       .report_interval = absl::Seconds(absl::GetFlag(FLAGS_report_s))});
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(
      absl::StrCat(absl::GetFlag(FLAGS_listen), ":", absl::GetFlag(FLAGS_port)),
      grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port <= 0) {
    return Fail(absl::UnavailableError(absl::StrCat(
        "cannot listen on ", absl::GetFlag(FLAGS_listen), ":", absl::GetFlag(FLAGS_port))));
  }
  std::cout << "router serving on " << absl::GetFlag(FLAGS_listen) << ":" << port << ", policy "
            << PolicyName(*policy);
  if (experiment > 0) {
    std::cout << ", experiment " << experiment << ":";
    for (const GroupOptions& g : groups) {
      std::cout << " arm " << g.name << " (" << g.share_percent << "%, " << g.ranks.size()
                << " ranks)";
    }
  } else {
    std::cout << " over " << ranks << " ranks"
              << (follow  ? ", following the planner's active version"
                  : fixed ? ", fixed tables"
                          : ", no tables (load only)");
  }
  std::cout << std::endl;
  if (!absl::GetFlag(FLAGS_port_file).empty()) {
    absl::Status written =
        WriteFileAtomically(UserPath(absl::GetFlag(FLAGS_port_file)), absl::StrCat(port, "\n"));
    if (!written.ok()) return Fail(written);
  }
  int signal = 0;
  sigwait(&stop, &signal);
  std::cout << "router: stopping on signal " << signal << std::endl;
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace semmoe::router

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("router --engines HOST:PORT,... --model DIR [flags]");
  absl::ParseCommandLine(argc, argv);
  semmoe::InitLogging(argv[0], {.stderr_threshold = 1});
  return semmoe::router::Run();
}
