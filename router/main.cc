// router: the client-facing gRPC frontend (RouterService) over the Attention-DP ranks of an
// engine group. It tokenises requests, places each on the rank its prompt fits best under the
// placement's affinity tables (rebatching), and streams the tokens back.
//
//   router --engines HOST:PORT[,...] --model DIR [--port 8000] [--listen 127.0.0.1]
//          [--policy semantic|round_robin|least_loaded] [--balance_eps 0.05]
//          [--window_ms 2] [--max_queue_ms 20] [--max_in_flight 4096]
//          [--planner HOST:PORT --model_name NAME]     (follow the active version's tables)
//          [--affinity FILE --placement FILE [--version V]]  (or fixed tables, e.g. exported)
//
// Exit status: 0 after Ctrl-C / SIGTERM, 1 when serving failed, 2 for bad usage.
#include <pthread.h>
#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/logging.h"
#include "engine/model/config.h"
#include "engine/model/tokenizer.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
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

int Run() {
  const std::vector<std::string> engines = absl::GetFlag(FLAGS_engines);
  if (engines.empty()) return Usage("--engines is required");
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
  const bool follow = !absl::GetFlag(FLAGS_planner).empty();
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

  TablesHolder tables;
  std::unique_ptr<PlannerWatch> watch;
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
      {.ranks = engines,
       .tokenizer = tokenizer->get(),
       .vocab_size = config->vocab_size,
       .rebatch = {.policy = *policy,
                   .balance_eps = absl::GetFlag(FLAGS_balance_eps),
                   .window = absl::Milliseconds(absl::GetFlag(FLAGS_window_ms)),
                   .max_window_requests = absl::GetFlag(FLAGS_max_window)},
       .max_in_flight = absl::GetFlag(FLAGS_max_in_flight),
       .default_max_queue = absl::Milliseconds(absl::GetFlag(FLAGS_max_queue_ms)),
       .poll_interval = absl::Milliseconds(absl::GetFlag(FLAGS_poll_ms)),
       .tables = &tables});
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
  std::cout << "router serving on " << absl::GetFlag(FLAGS_listen) << ":" << port << " over "
            << ranks << " ranks, policy " << PolicyName(*policy)
            << (follow  ? ", following the planner's active version"
                : fixed ? ", fixed tables"
                        : ", no tables (load only)")
            << std::endl;
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
