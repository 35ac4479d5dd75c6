#include "engine/server/active_watch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security.h"
#include "glog/logging.h"
#include "planner/proto/planner.grpc.pb.h"

namespace semmoe::engine {

ActiveWatch::ActiveWatch(const std::string& planner, const std::string& model,
                         std::function<void(int64_t)> on_version)
    : planner_(planner), model_(model), on_version_(std::move(on_version)) {
  thread_ = std::thread([this] { Run(); });
}

ActiveWatch::~ActiveWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  thread_.join();
}

std::string ActiveWatch::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

void ActiveWatch::Run() {
  auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(planner_));
  absl::Duration backoff = absl::Milliseconds(200);
  for (;;) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      context_ = &context;
    }
    planner::rpc::GetActiveRequest request;
    request.set_model(model_);
    auto reader = stub->WatchActive(&context, request);
    planner::rpc::PlacementVersion active;
    while (reader->Read(&active)) {
      backoff = absl::Milliseconds(200);
      {
        absl::MutexLock lock(&mu_);
        error_.clear();
      }
      LOG(INFO) << "planner " << planner_ << ": active version of '" << model_ << "' is "
                << active.version();
      on_version_(active.version());
    }
    const grpc::Status status = reader->Finish();
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
    if (stop_) return;
    error_ = absl::StrCat("lost the planner's active-version watch (", planner_, ": ",
                          status.error_message(), "); retrying");
    LOG(WARNING) << error_ << " in " << backoff;
    mu_.AwaitWithTimeout(absl::Condition(&stop_), backoff);
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

}  // namespace semmoe::engine
