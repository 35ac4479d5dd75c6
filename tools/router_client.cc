// router_client: talk to the router's RouterService (what clients of a Sem-MoE cluster use).
//
//   router_client generate --target HOST:PORT (--prompt TEXT | --token_ids 1,2,3)
//                 [--max_tokens N] [--temperature T] [--seed S] [--user KEY] [--json]
//   router_client stats --target HOST:PORT [--json]
//
// Exit status: 0 on success, 1 when the RPC failed (the status is printed), 2 for bad usage.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/security.h"
#include "common/security_flags.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "router/proto/router.grpc.pb.h"
#include "tools/client/generate_flags.h"

ABSL_FLAG(std::string, target, "127.0.0.1:8000", "router address");
ABSL_FLAG(std::string, user, "", "generate: user key (A/B arms are assigned by it)");

namespace {

namespace rpc = semmoe::router::rpc;

int Usage(const std::string& message) {
  std::cerr << "router_client: " << message
            << "\nusage: router_client generate|stats --target HOST:PORT [flags]\n";
  return 2;
}

int Generate(rpc::RouterService::Stub& stub, grpc::ClientContext& context) {
  rpc::GenerateRequest request;
  const absl::Status filled = semmoe::tools::FillGenerateRequest(request);
  if (!filled.ok()) return Usage(std::string(filled.message()));
  request.set_user_key(absl::GetFlag(FLAGS_user));
  auto reader = stub.Generate(&context, request);
  std::vector<int32_t> tokens;
  rpc::FinalRecord final;
  const grpc::Status status = semmoe::tools::ReadGeneration(*reader, tokens, final);
  if (!status.ok()) return semmoe::tools::RpcFailed("router_client", status);
  if (absl::GetFlag(FLAGS_json)) {  // {"token_ids": [...], "final": {...}}
    std::cout << "{\"token_ids\":[" << absl::StrJoin(tokens, ",")
              << "],\"final\":" << semmoe::tools::ProtoJson(final) << "}\n";
  } else {
    std::cout << final.text() << "\n[" << absl::StrJoin(tokens, " ") << "] "
              << final.finish_reason() << ", rank " << final.rank() << ", ttft " << final.ttft_ms()
              << " ms, tpot " << final.tpot_ms() << " ms, e2e " << final.e2e_ms() << " ms, LAR "
              << final.lar() << " (placed with version " << final.placement_version() << ")\n";
  }
  return 0;
}

int Stats(rpc::RouterService::Stub& stub, grpc::ClientContext& context) {
  rpc::RouterStats stats;
  const grpc::Status status = stub.GetStats(&context, rpc::GetStatsRequest(), &stats);
  if (!status.ok()) return semmoe::tools::RpcFailed("router_client", status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << semmoe::tools::ProtoJson(stats) << "\n";
    return 0;
  }
  std::cout << "policy " << stats.policy();
  if (stats.experiment_id() > 0) {
    std::cout << ", experiment " << stats.experiment_id() << " (";
    for (int i = 0; i < stats.arms_size(); ++i) {
      std::cout << (i > 0 ? ", " : "") << "arm " << stats.arms(i).name() << ": tables of version "
                << stats.arms(i).placement_version();
    }
    std::cout << ")";
  } else {
    std::cout << ", tables of version " << stats.placement_version();
  }
  std::cout << ": received " << stats.received() << ", completed " << stats.completed()
            << ", failed " << stats.failed() << ", rejected " << stats.rejected() << ", retried "
            << stats.retried() << "\n  TTFT p50/p99 " << stats.ttft_ms().p50() << "/"
            << stats.ttft_ms().p99() << " ms, TPOT p50 " << stats.tpot_ms().p50()
            << " ms, E2E p50/p99 " << stats.e2e_ms().p50() << "/" << stats.e2e_ms().p99()
            << " ms\n";
  if (!stats.tables_error().empty()) std::cout << "  TABLES: " << stats.tables_error() << "\n";
  for (const rpc::RankStats& r : stats.ranks()) {
    std::cout << "  rank " << r.rank() << " " << r.address() << (r.usable() ? "" : " (down)")
              << ": " << r.requests_in_flight() << " in flight, " << r.assigned()
              << " assigned, LAR " << r.lar() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "router_client: " << security.message() << "\n";
    return 2;
  }
  if (args.size() != 2) return Usage("expected one command");
  const std::string command = args[1];
  auto stub = rpc::RouterService::NewStub(semmoe::NewChannel(absl::GetFlag(FLAGS_target)));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::GetFlag(FLAGS_deadline_ms)));
  if (command == "generate") return Generate(*stub, context);
  if (command == "stats") return Stats(*stub, context);
  return Usage(absl::StrCat("unknown command '", command, "'"));
}
