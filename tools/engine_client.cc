// engine_client: talk to one engine rank's EngineService.
//
//   engine_client generate --target HOST:PORT (--prompt TEXT | --token_ids 1,2,3)
//                 [--max_tokens N] [--temperature T] [--seed S] [--json]
//   engine_client stats --target HOST:PORT [--json]
//
// Exit status: 0 on success, 1 when the RPC failed (the status is printed), 2 for bad usage.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/security.h"
#include "common/security_flags.h"
#include "engine/proto/engine.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "tools/client/generate_flags.h"

ABSL_FLAG(std::string, target, "127.0.0.1:7800", "engine rank address");

namespace {

namespace rpc = semmoe::engine::rpc;

int Usage(const std::string& message) {
  std::cerr << "engine_client: " << message
            << "\nusage: engine_client generate|stats --target HOST:PORT [flags]\n";
  return 2;
}

int Generate(rpc::EngineService::Stub& stub, grpc::ClientContext& context) {
  rpc::GenerateRequest request;
  const absl::Status filled = semmoe::tools::FillGenerateRequest(request);
  if (!filled.ok()) return Usage(std::string(filled.message()));
  auto reader = stub.Generate(&context, request);
  std::vector<int32_t> tokens;
  rpc::FinalRecord final;
  const grpc::Status status = semmoe::tools::ReadGeneration(*reader, tokens, final);
  if (!status.ok()) return semmoe::tools::RpcFailed("engine_client", status);
  if (absl::GetFlag(FLAGS_json)) {  // {"token_ids": [...], "final": {...}}
    std::cout << "{\"token_ids\":[" << absl::StrJoin(tokens, ",")
              << "],\"final\":" << semmoe::tools::ProtoJson(final) << "}\n";
  } else {
    std::cout << final.text() << "\n[" << absl::StrJoin(tokens, " ") << "] "
              << final.finish_reason() << ", rank " << final.rank() << ", ttft " << final.ttft_ms()
              << " ms, e2e " << final.e2e_ms() << " ms\n";
  }
  return 0;
}

int Stats(rpc::EngineService::Stub& stub, grpc::ClientContext& context) {
  rpc::EngineStats stats;
  const grpc::Status status = stub.GetStats(&context, rpc::GetStatsRequest(), &stats);
  if (!status.ok()) return semmoe::tools::RpcFailed("engine_client", status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << semmoe::tools::ProtoJson(stats) << "\n";
    return 0;
  }
  std::cout << "rank " << stats.rank() << "/" << stats.ranks() << " (" << stats.attention()
            << "): completed " << stats.completed() << ", running " << stats.running()
            << ", forward passes " << stats.forward_passes() << ", LAR " << stats.lar() << "\n";
  for (const rpc::MoeLayerStats& l : stats.layers()) {
    std::cout << "  layer " << l.layer() << ": LAR " << l.lar() << ", dispatch "
              << l.dispatch_bytes_sent() << " B sent, combine " << l.combine_bytes_sent()
              << " B sent\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "engine_client: " << security.message() << "\n";
    return 2;
  }
  if (args.size() != 2) return Usage("expected one command");
  const std::string command = args[1];
  auto channel = semmoe::NewChannel(absl::GetFlag(FLAGS_target));
  auto stub = rpc::EngineService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::GetFlag(FLAGS_deadline_ms)));
  if (command == "generate") return Generate(*stub, context);
  if (command == "stats") return Stats(*stub, context);
  return Usage(absl::StrCat("unknown command '", command, "'"));
}
