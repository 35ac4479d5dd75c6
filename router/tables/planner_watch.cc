#include "router/tables/planner_watch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security.h"
#include "glog/logging.h"
#include "planner/proto/planner.grpc.pb.h"
#include "router/tables/fetch_tables.h"

namespace semmoe::router {

PlannerWatch::PlannerWatch(const std::string& planner_address, const std::string& model, int ranks,
                           uint32_t vocab, TablesHolder& holder, Clock* clock)
    : address_(planner_address),
      model_(model),
      ranks_(ranks),
      vocab_(vocab),
      holder_(holder),
      clock_(clock) {
  holder_.Set(nullptr, absl::StrCat("waiting for the planner's active version of '", model_,
                                    "': placing by load alone"));
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

int64_t PlannerWatch::backoffs() const {
  absl::MutexLock lock(&mu_);
  return backoffs_;
}

bool PlannerWatch::Apply(int64_t version,
                         absl::StatusOr<std::shared_ptr<const RouterTables>> tables) {
  absl::MutexLock lock(&mu_);
  if (!tables.ok()) {
    last_error_ = std::string(tables.status().message());
    LOG(WARNING) << "router: cannot use placement version " << version << ": " << last_error_
                 << "; placing by load alone";
    holder_.Set(nullptr, absl::StrCat("active version ", version, " unusable: ", last_error_,
                                      "; placing by load alone"));
    version_ = 0;
    return IsTransient(tables.status());
  }
  holder_.Set(*std::move(tables));
  version_ = version;
  last_error_.clear();
  LOG(INFO) << "router: placing requests with version " << version << "'s tables";
  return false;
}

void PlannerWatch::Run() {
  auto channel = semmoe::NewChannel(address_);
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
    bool fetch_again = false;
    while (!fetch_again && reader->Read(&active)) {
      backoff = absl::Milliseconds(200);
      fetch_again =
          Apply(active.version(), FetchRouterTables(*stub, active.version(), ranks_, vocab_));
    }
    // To fetch again, reconnect after the backoff: the watch sends the active version anew.
    if (fetch_again) context.TryCancel();
    const grpc::Status status = reader->Finish();
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      if (stop_) return;
      if (!fetch_again) {
        last_error_ = absl::StrCat("planner ", address_, ": ", status.error_message());
        const std::shared_ptr<const RouterTables> kept = holder_.Get();
        holder_.SetError(absl::StrCat(
            "lost the planner (", last_error_, "); ",
            kept == nullptr ? std::string("no tables: placing by load alone")
                            : absl::StrCat("keeping version ", kept->version, "'s tables")));
      }
    }
    LOG(WARNING) << "router: "
                 << (fetch_again ? "fetching the tables again"
                                 : absl::StrCat("lost the planner watch (", status.error_message(),
                                                "); retrying"))
                 << " in " << backoff;
    // The backoff in the clock's time; a stop ends it at once (the real-time wait is only how
    // often the clock is read).
    absl::MutexLock lock(&mu_);
    const absl::Time until = clock_->Now() + backoff;
    ++backoffs_;
    for (absl::Time now = clock_->Now(); !stop_ && now < until; now = clock_->Now()) {
      mu_.AwaitWithTimeout(absl::Condition(&stop_), std::min(until - now, absl::Milliseconds(20)));
    }
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

}  // namespace semmoe::router
