// A one-rank engine group serving EngineService on a free loopback port, for tests of clients
// (the router). Shutdown() stops it as a dead process would look to its clients.
#ifndef SEMMOE_ENGINE_SERVER_TESTING_LOCAL_ENGINE_H_
#define SEMMOE_ENGINE_SERVER_TESTING_LOCAL_ENGINE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/group_engine.h"
#include "engine/parallel/rank_model.h"
#include "engine/server/engine_service.h"
#include "engine/text/config.h"
#include "gloo/rendezvous/hash_store.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "planner/placement/placement.h"

namespace semmoe::engine::testing {

class LocalEngine {
 public:
  // `port` 0: a free one.
  static absl::StatusOr<std::unique_ptr<LocalEngine>> Start(const std::string& model_dir,
                                                            GroupEngineOptions options = {},
                                                            int port = 0) {
    std::unique_ptr<LocalEngine> e(new LocalEngine);
    auto comm = GlooCommunicator::Create(e->store_, {.rank = 0, .size = 1, .prefix = "local"});
    if (!comm.ok()) return comm.status();
    e->comm_ = std::move(*comm);
    auto config = model::LoadModelConfig(model_dir);
    if (!config.ok()) return config.status();
    auto placement = planner::Placement::Vanilla(config->MoeLayers(), config->num_experts, 1);
    if (!placement.ok()) return placement.status();
    e->placement_ = std::make_unique<planner::Placement>(*placement);
    auto model = RankModel::Create(model_dir, *e->placement_, *e->comm_, {});
    if (!model.ok()) return model.status();
    e->model_ = std::move(*model);
    // As the rank server does: results carry their text, and stop strings work.
    if (options.batch.tokenizer == nullptr) options.batch.tokenizer = e->model_->tokenizer();
    auto engine = GroupEngine::Create(*e->model_, options);
    if (!engine.ok()) return engine.status();
    e->engine_ = std::move(*engine);
    e->service_ = std::make_unique<EngineServiceImpl>(
        *e->engine_, EngineServiceImpl::Options{.tokenizer = e->model_->tokenizer(),
                                                .vocab_size = config->vocab_size,
                                                .moe_layers = config->MoeLayers()});
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                             &e->port_);
    builder.RegisterService(e->service_.get());
    e->server_ = builder.BuildAndStart();
    if (e->server_ == nullptr || e->port_ <= 0) {
      return absl::UnavailableError("cannot listen on a loopback port");
    }
    e->engine_->Start();
    return e;
  }
  ~LocalEngine() { Shutdown(); }

  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }
  int port() const { return port_; }
  GroupEngine& engine() { return *engine_; }
  const model::Tokenizer* tokenizer() const { return model_->tokenizer(); }

  void Shutdown() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now());  // Cancels calls in flight.
      server_.reset();
    }
    if (engine_ != nullptr) {
      engine_->RequestStop();
      (void)engine_->Wait();
      engine_.reset();
    }
  }

 private:
  LocalEngine() = default;
  gloo::rendezvous::HashStore store_;
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<planner::Placement> placement_;
  std::unique_ptr<RankModel> model_;
  std::unique_ptr<GroupEngine> engine_;
  std::unique_ptr<EngineServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace semmoe::engine::testing

#endif  // SEMMOE_ENGINE_SERVER_TESTING_LOCAL_ENGINE_H_
