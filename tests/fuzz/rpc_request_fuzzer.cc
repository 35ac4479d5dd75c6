// The request protos of the engine, router and planner services, through real servers: the first
// byte picks the call, the rest is the serialized request. An EngineService with no group formed
// (its requests are checked, then refused UNAVAILABLE), a RouterService whose only rank is
// unreachable, and a PlannerService over a fresh database with two versions, all on one
// in-process gRPC server.
#include <cstdio>
#include <memory>
#include <string>

#include "engine/proto/engine.grpc.pb.h"
#include "engine/server/engine_service.h"
#include "grpcpp/grpcpp.h"
#include "planner/autopilot/serving_board.h"
#include "planner/proto/planner.grpc.pb.h"
#include "planner/server/planner_service.h"
#include "planner/store/placement_store.h"
#include "router/core/router_core.h"
#include "router/proto/router.grpc.pb.h"
#include "router/server/router_service.h"
#include "tests/fuzz/fuzz_util.h"

namespace semmoe::fuzz {
namespace {

struct Servers {
  Servers() {
    const char* dir = std::getenv("TEST_TMPDIR");
    const std::string db = std::string(dir != nullptr ? dir : "/tmp") + "/fuzz-rpc-" +
                           std::to_string(getpid()) + ".db";
    std::remove(db.c_str());
    auto store = planner::PlacementStore::Open(db);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
      std::abort();
    }
    if (!(*store)->AddModel("m", 2, 8).ok()) std::abort();
    for (int g : {2, 4}) {
      planner::PlacementVersion v;
      v.model = "m";
      v.name = "vanilla-" + std::to_string(g);
      v.algorithm = "vanilla";
      v.placement = *planner::Placement::Vanilla({0, 1}, 8, g);
      if (auto created = (*store)->Create(v); !created.ok()) {
        std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
        std::abort();
      }
    }
    planner_ = std::make_unique<planner::PlannerServiceImpl>(
        std::move(*store), planner::PlannerServiceImpl::Options{.serving = &board_});
    engine_ = std::make_unique<engine::EngineServiceImpl>(
        slot_, engine::EngineServiceImpl::Options{.vocab_size = 1000, .max_prompt_tokens = 4096});
    router::RouterOptions o;
    o.groups = {{.ranks = {"127.0.0.1:1"}}};
    o.vocab_size = 1000;
    o.max_prompt_tokens = 4096;
    o.requeue = absl::ZeroDuration();
    router_core_ = std::make_unique<router::RouterCore>(o);
    router_ = std::make_unique<router::RouterServiceImpl>(*router_core_);
    grpc::ServerBuilder builder;
    builder.RegisterService(planner_.get());
    builder.RegisterService(engine_.get());
    builder.RegisterService(router_.get());
    server_ = builder.BuildAndStart();
    channel_ = server_->InProcessChannel(grpc::ChannelArguments());
    engine_stub = engine::rpc::EngineService::NewStub(channel_);
    router_stub = router::rpc::RouterService::NewStub(channel_);
    planner_stub = planner::rpc::PlannerService::NewStub(channel_);
  }

  engine::EngineSlot slot_;
  planner::ServingBoard board_;
  std::unique_ptr<planner::PlannerServiceImpl> planner_;
  std::unique_ptr<engine::EngineServiceImpl> engine_;
  std::unique_ptr<router::RouterCore> router_core_;
  std::unique_ptr<router::RouterServiceImpl> router_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<engine::rpc::EngineService::Stub> engine_stub;
  std::unique_ptr<router::rpc::RouterService::Stub> router_stub;
  std::unique_ptr<planner::rpc::PlannerService::Stub> planner_stub;
};

template <typename Request, typename Call>
void Unary(const std::string& bytes, Call call) {
  Request request;
  if (!request.ParseFromString(bytes)) return;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  call(&context, request);
}

// A Generate call, read to its end.
template <typename Request, typename Response, typename Stub>
void ReadAll(Stub& stub, const std::string& bytes) {
  Request request;
  if (!request.ParseFromString(bytes)) return;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto reader = stub.Generate(&context, request);
  Response response;
  while (reader->Read(&response)) {
  }
  (void)reader->Finish();
}

}  // namespace
}  // namespace semmoe::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace semmoe;
  static fuzz::Servers* s = new fuzz::Servers();  // Once per process; never torn down.
  if (size == 0) return 0;
  const std::string bytes = fuzz::Text(data + 1, size - 1);
  namespace prpc = planner::rpc;
  switch (data[0] % 17) {
    case 0:
      fuzz::ReadAll<engine::rpc::GenerateRequest, engine::rpc::GenerateResponse>(*s->engine_stub,
                                                                                 bytes);
      return 0;
    case 1:
      fuzz::ReadAll<router::rpc::GenerateRequest, router::rpc::GenerateResponse>(*s->router_stub,
                                                                                 bytes);
      return 0;
    case 2:
      fuzz::Unary<engine::rpc::RolloutRequest>(bytes, [&](auto* c, const auto& r) {
        engine::rpc::RolloutResponse out;
        (void)s->engine_stub->Rollout(c, r, &out);
      });
      return 0;
    case 3:
      fuzz::Unary<prpc::ListVersionsRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::ListVersionsResponse out;
        (void)s->planner_stub->ListVersions(c, r, &out);
      });
      return 0;
    case 4:
      fuzz::Unary<prpc::GetVersionRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::PlacementVersion out;
        (void)s->planner_stub->GetVersion(c, r, &out);
      });
      return 0;
    case 5:
      fuzz::Unary<prpc::GetActiveRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::PlacementVersion out;
        (void)s->planner_stub->GetActive(c, r, &out);
      });
      return 0;
    case 6:
      fuzz::Unary<prpc::ActivateRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::ActivateResponse out;
        (void)s->planner_stub->Activate(c, r, &out);
      });
      return 0;
    case 7:
      fuzz::Unary<prpc::GetActiveRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::PlacementVersion out;
        (void)s->planner_stub->Rollback(c, r, &out);
      });
      return 0;
    case 8:
      fuzz::Unary<prpc::CreateExperimentRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::Experiment out;
        (void)s->planner_stub->CreateExperiment(c, r, &out);
      });
      return 0;
    case 9:
      fuzz::Unary<prpc::ExperimentId>(bytes, [&](auto* c, const auto& r) {
        prpc::Experiment out;
        (void)s->planner_stub->StartExperiment(c, r, &out);
      });
      return 0;
    case 10:
      fuzz::Unary<prpc::ExperimentId>(bytes, [&](auto* c, const auto& r) {
        prpc::Experiment out;
        (void)s->planner_stub->StopExperiment(c, r, &out);
      });
      return 0;
    case 11:
      fuzz::Unary<prpc::PromoteExperimentRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::Experiment out;
        (void)s->planner_stub->PromoteExperiment(c, r, &out);
      });
      return 0;
    case 12:
      fuzz::Unary<prpc::ExperimentId>(bytes, [&](auto* c, const auto& r) {
        prpc::Experiment out;
        (void)s->planner_stub->GetExperiment(c, r, &out);
      });
      return 0;
    case 13:
      fuzz::Unary<prpc::ListExperimentsRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::ListExperimentsResponse out;
        (void)s->planner_stub->ListExperiments(c, r, &out);
      });
      return 0;
    case 14:
      fuzz::Unary<prpc::RecordArmMetricsRequest>(bytes, [&](auto* c, const auto& r) {
        prpc::RecordArmMetricsResponse out;
        (void)s->planner_stub->RecordArmMetrics(c, r, &out);
      });
      return 0;
    case 15:
      fuzz::Unary<prpc::ServingReport>(bytes, [&](auto* c, const auto& r) {
        prpc::ReportServingResponse out;
        (void)s->planner_stub->ReportServing(c, r, &out);
      });
      return 0;
    default: {  // Stats of both serving services (after whatever came before).
      grpc::ClientContext a, b;
      engine::rpc::EngineStats es;
      router::rpc::RouterStats rs;
      (void)s->engine_stub->GetStats(&a, {}, &es);
      (void)s->router_stub->GetStats(&b, {}, &rs);
      return 0;
    }
  }
}
