// bench_tables: what it costs to get a placement version's tables to a router at a real model's
// scale (Qwen3-30B-A3B: 151,936-token vocabulary, 48 MoE layers × 128 experts, G = 8, generated
// by planner/affinity/testing/real_scale.h), side by side in one run:
//   compact — the prompt-score table the planner serves (GetPromptScores: built from the stored
//             tables once, then cached), fetched over loopback gRPC in chunks and loaded;
//   full    — the full affinity tables (GetAffinityTables, chunked) fetched, and router tables
//             computed from them on the router (what fixed --affinity files cost).
//
//   bazel run --config=opt //tools:bench_tables -- [--vocab 151936 --ranks 8 --seen 4096
//       --layers 48 --experts 128 --repeats 3] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "planner/affinity/prompt_score_table.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/proto/table_chunks.h"
#include "planner/server/serve.h"
#include "planner/store/placement_store.h"
#include "router/tables/fetch_tables.h"
#include "router/tables/router_tables.h"

ABSL_FLAG(int, vocab, 151936, "vocabulary (Qwen3's)");
ABSL_FLAG(int, ranks, 8, "ranks (G)");
ABSL_FLAG(int, seen, 4096, "token ids with affinity rows (the rest borrow one)");
ABSL_FLAG(int, layers, 48, "MoE layers");
ABSL_FLAG(int, experts, 128, "experts per layer");
ABSL_FLAG(int, repeats, 3, "timed repetitions (the median is reported)");
ABSL_FLAG(bool, json, false, "also print one JSON line");

namespace semmoe {
namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
double MedianMs(int repeats, F run) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    run();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int Fail(const absl::Status& s) {
  std::cerr << "bench_tables: " << s << "\n";
  return 1;
}

int Main() {
  const planner::testing::RealScaleShape shape{
      .vocab = static_cast<uint32_t>(absl::GetFlag(FLAGS_vocab)),
      .layers = absl::GetFlag(FLAGS_layers),
      .experts = absl::GetFlag(FLAGS_experts),
      .devices = absl::GetFlag(FLAGS_ranks),
      .seen = static_cast<uint32_t>(absl::GetFlag(FLAGS_seen))};
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  const planner::testing::RealScaleVersion v = planner::testing::MakeRealScaleVersion(shape);

  char dir[] = "/tmp/bench_tables-XXXXXX";
  if (mkdtemp(dir) == nullptr) return Fail(absl::UnavailableError("mkdtemp"));
  const std::string db = absl::StrCat(dir, "/tables.db");
  {
    auto store = planner::PlacementStore::Open(db);
    if (!store.ok()) return Fail(store.status());
    if (absl::Status s = (*store)->AddModel("bench", shape.layers, shape.experts); !s.ok()) {
      return Fail(s);
    }
    planner::PlacementVersion pv{.model = "bench", .name = "real-scale", .algorithm = "semantic"};
    pv.placement = v.placement;
    if (auto id = (*store)->Create(pv, v.affinity); !id.ok()) return Fail(id.status());
  }

  // Each repetition is a fresh planner (so the compact table is built, not cached) unless timed
  // warm.
  double compact_cold_ms = 0, compact_warm_ms = 0, full_ms = 0;
  size_t compact_bytes = 0;
  std::vector<double> cold;
  for (int i = 0; i < repeats; ++i) {
    auto server = planner::PlannerServer::Start({.db = db});
    if (!server.ok()) return Fail(server.status());
    auto stub = planner::rpc::PlannerService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials()));
    absl::Status failed;
    {  // Connect first: the cold time is the planner building the table, not the handshake.
      grpc::ClientContext context;
      planner::rpc::GetVersionRequest get;
      get.set_version(1);
      planner::rpc::PlacementVersion version;
      if (!stub->GetVersion(&context, get, &version).ok()) {
        return Fail(absl::UnavailableError("the planner does not answer"));
      }
    }
    auto fetch = [&] {
      auto t = router::FetchRouterTables(*stub, 1, shape.devices, shape.vocab);
      if (!t.ok()) failed = t.status();
    };
    cold.push_back(MedianMs(1, fetch));
    if (i == 0) {
      compact_warm_ms = MedianMs(repeats, fetch);
      full_ms = MedianMs(repeats, [&] {
        grpc::ClientContext context;
        planner::rpc::GetVersionRequest get;
        get.set_version(1);
        auto bytes = planner::ReadTableChunks(*stub->GetAffinityTables(&context, get), 1ull << 34);
        if (!bytes.ok()) {
          failed = bytes.status();
          return;
        }
        auto t =
            router::BuildRouterTables(1, *bytes, v.placement.ToJson(), shape.devices, shape.vocab);
        if (!t.ok()) failed = t.status();
      });
    }
    if (!failed.ok()) return Fail(failed);
    (*server)->Shutdown();
  }
  std::sort(cold.begin(), cold.end());
  compact_cold_ms = cold[cold.size() / 2];
  compact_bytes = planner::PromptScoreTable::SerializedSize(shape.vocab, shape.devices);

  std::printf(
      "bench_tables: vocabulary %u, %d layers x %d experts, G = %d, %u seen tokens; median of "
      "%d\n",
      shape.vocab, shape.layers, shape.experts, shape.devices, shape.seen, repeats);
  std::printf("%-44s %12s %12s\n", "tables to a router", "bytes", "ms");
  std::printf("%-44s %12zu %12.1f\n", "compact, first fetch (planner builds it)", compact_bytes,
              compact_cold_ms);
  std::printf("%-44s %12zu %12.1f\n", "compact, cached at the planner", compact_bytes,
              compact_warm_ms);
  std::printf("%-44s %12zu %12.1f\n", "full tables fetched + computed on the router",
              v.affinity.size(), full_ms);
  std::printf("full / compact: %.1fx the bytes, %.1fx the time (cached), %.1fx (first fetch)\n",
              static_cast<double>(v.affinity.size()) / compact_bytes, full_ms / compact_warm_ms,
              full_ms / compact_cold_ms);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << nlohmann::json{{"compact_bytes", compact_bytes},
                                {"full_bytes", v.affinity.size()},
                                {"compact_cold_ms", compact_cold_ms},
                                {"compact_warm_ms", compact_warm_ms},
                                {"full_ms", full_ms}}
                     .dump()
              << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace semmoe

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return semmoe::Main();
}
