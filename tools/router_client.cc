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
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "router/proto/router.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:8000", "router address");
ABSL_FLAG(std::string, prompt, "", "generate: prompt text");
ABSL_FLAG(std::vector<std::string>, token_ids, {}, "generate: prompt token ids (comma-separated)");
ABSL_FLAG(int, max_tokens, 32, "generate: tokens to generate at most");
ABSL_FLAG(float, temperature, 0, "generate: 0 for greedy");
ABSL_FLAG(uint64_t, seed, 0, "generate: sampling seed");
ABSL_FLAG(std::string, id, "", "generate: request id (empty: the router names it)");
ABSL_FLAG(std::string, user, "", "generate: user key (A/B arms are assigned by it)");
ABSL_FLAG(int, deadline_ms, 60000, "RPC deadline");
ABSL_FLAG(bool, json, false, "print protobuf JSON");

namespace {

namespace rpc = semmoe::router::rpc;

int Usage(const std::string& message) {
  std::cerr << "router_client: " << message
            << "\nusage: router_client generate|stats --target HOST:PORT [flags]\n";
  return 2;
}

int Failed(const grpc::Status& status) {
  std::cerr << "router_client: " << status.error_code() << ": " << status.error_message() << "\n";
  return 1;
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

int Generate(rpc::RouterService::Stub& stub, grpc::ClientContext& context) {
  rpc::GenerateRequest request;
  request.set_request_id(absl::GetFlag(FLAGS_id));
  request.set_user_key(absl::GetFlag(FLAGS_user));
  request.set_text(absl::GetFlag(FLAGS_prompt));
  for (const std::string& id : absl::GetFlag(FLAGS_token_ids)) {
    int value = 0;
    if (!absl::SimpleAtoi(id, &value)) return Usage(absl::StrCat("bad token id '", id, "'"));
    request.add_token_ids(value);
  }
  request.set_max_tokens(absl::GetFlag(FLAGS_max_tokens));
  request.mutable_sampling()->set_temperature(absl::GetFlag(FLAGS_temperature));
  request.mutable_sampling()->set_seed(absl::GetFlag(FLAGS_seed));
  auto reader = stub.Generate(&context, request);
  rpc::GenerateResponse response;
  std::vector<int32_t> tokens;
  rpc::FinalRecord final;
  while (reader->Read(&response)) {
    tokens.insert(tokens.end(), response.token_ids().begin(), response.token_ids().end());
    if (response.has_final()) final = response.final();
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return Failed(status);
  if (absl::GetFlag(FLAGS_json)) {  // {"token_ids": [...], "final": {...}}
    std::cout << "{\"token_ids\":[" << absl::StrJoin(tokens, ",") << "],\"final\":" << Json(final)
              << "}\n";
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
  if (!status.ok()) return Failed(status);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << Json(stats) << "\n";
    return 0;
  }
  std::cout << "policy " << stats.policy() << ", tables of version " << stats.placement_version()
            << ": received " << stats.received() << ", completed " << stats.completed()
            << ", failed " << stats.failed() << ", rejected " << stats.rejected() << ", retried "
            << stats.retried() << "\n  TTFT p50/p99 " << stats.ttft_ms().p50() << "/"
            << stats.ttft_ms().p99() << " ms, TPOT p50 " << stats.tpot_ms().p50()
            << " ms, E2E p50/p99 " << stats.e2e_ms().p50() << "/" << stats.e2e_ms().p99()
            << " ms\n";
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
  if (args.size() != 2) return Usage("expected one command");
  const std::string command = args[1];
  auto stub = rpc::RouterService::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::GetFlag(FLAGS_deadline_ms)));
  if (command == "generate") return Generate(*stub, context);
  if (command == "stats") return Stats(*stub, context);
  return Usage(absl::StrCat("unknown command '", command, "'"));
}
