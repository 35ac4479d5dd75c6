#include "router/tables/planner_watch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "planner/proto/planner.grpc.pb.h"

namespace semmoe::router {

PlannerWatch::PlannerWatch(const std::string& planner_address, const std::string& model, int ranks,
                           uint32_t vocab, TablesHolder& holder, Clock* clock)
    : address_(planner_address),
      model_(model),
      ranks_(ranks),
      vocab_(vocab),
      holder_(holder),
      clock_(clock) {
  thread_ = std::thread([this] { Run(); });
}

PlannerWatch::~PlannerWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  thread_.join();
}

int64_t PlannerWatch::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

std::string PlannerWatch::last_error() const {
  absl::MutexLock lock(&mu_);
  return last_error_;
}

int64_t PlannerWatch::attempts() const {
  absl::MutexLock lock(&mu_);
  return attempts_;
}

void PlannerWatch::Apply(int64_t version, const std::string& placement_json,
                         const std::string& tables) {
  absl::StatusOr<std::shared_ptr<const RouterTables>> built =
      BuildRouterTables(version, tables, placement_json, ranks_, vocab_);
  absl::MutexLock lock(&mu_);
  if (!built.ok()) {
    last_error_ = absl::StrCat("version ", version, ": ", built.status().message());
    LOG(WARNING) << "router: cannot use placement " << last_error_ << "; placing by load alone";
    holder_.Set(nullptr);
    version_ = 0;
    return;
  }
  holder_.Set(*std::move(built));
  version_ = version;
  last_error_.clear();
  LOG(INFO) << "router: placing requests with version " << version << "'s tables";
}

void PlannerWatch::Run() {
  auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  auto stub = planner::rpc::PlannerService::NewStub(channel);
  absl::Duration backoff = absl::Milliseconds(200);
  for (;;) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      context_ = &context;
      ++attempts_;
    }
    planner::rpc::GetActiveRequest request;
    request.set_model(model_);
    auto reader = stub->WatchActive(&context, request);
    planner::rpc::PlacementVersion active;
    while (reader->Read(&active)) {
      backoff = absl::Milliseconds(200);
      grpc::ClientContext tables_context;
      tables_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      planner::rpc::GetVersionRequest get;
      get.set_version(active.version());
      planner::rpc::AffinityTables tables;
      const grpc::Status got = stub->GetAffinityTables(&tables_context, get, &tables);
      if (got.ok()) {
        Apply(active.version(), active.placement_json(), tables.data());
      } else {
        Apply(active.version(), active.placement_json(), "");
        absl::MutexLock lock(&mu_);
        last_error_ = absl::StrCat("version ", active.version(), ": no affinity tables (",
                                   got.error_message(), ")");
      }
    }
    const grpc::Status status = reader->Finish();
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      if (stop_) return;
      last_error_ = absl::StrCat("planner ", address_, ": ", status.error_message());
    }
    LOG(WARNING) << "router: lost the planner watch (" << status.error_message()
                 << "); retrying in " << backoff;
    // The backoff in the clock's time; a stop ends it at once (the real-time wait is only how
    // often the clock is read).
    const absl::Time until = clock_->Now() + backoff;
    absl::MutexLock lock(&mu_);
    for (absl::Time now = clock_->Now(); !stop_ && now < until; now = clock_->Now()) {
      mu_.AwaitWithTimeout(absl::Condition(&stop_), std::min(until - now, absl::Milliseconds(20)));
    }
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

}  // namespace semmoe::router
