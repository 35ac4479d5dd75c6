#include "router/tables/engine_follow.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "planner/proto/planner.grpc.pb.h"
#include "router/tables/fetch_tables.h"

namespace semmoe::router {
namespace {

constexpr size_t kCached = 3;
constexpr absl::Duration kRetry = absl::Seconds(2);

}  // namespace

EngineFollow::EngineFollow(const std::string& planner_address, int ranks, uint32_t vocab,
                           TablesHolder& holder)
    : address_(planner_address), ranks_(ranks), vocab_(vocab), holder_(holder) {
  if (auto t = holder_.Get(); t != nullptr) cache_[t->version] = t;
  thread_ = std::thread([this] { Run(); });
}

EngineFollow::~EngineFollow() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void EngineFollow::Observe(const std::vector<int64_t>& serving,
                           const std::vector<int64_t>& targets) {
  int64_t version = -1, target = 0;
  for (size_t r = 0; r < serving.size(); ++r) {
    if (serving[r] < 0) continue;                       // No answer.
    if (version >= 0 && serving[r] != version) return;  // Mid-switch: wait for agreement.
    version = serving[r];
    if (r < targets.size() && targets[r] > 0) target = targets[r];
  }
  if (version <= 0) return;  // Not a planner version: the tables stay as configured.
  absl::MutexLock lock(&mu_);
  serving_ = version;
  target_ = target;
  ApplyLocked();
}

bool EngineFollow::Cached(int64_t version) const {
  absl::MutexLock lock(&mu_);
  return cache_.count(version) > 0;
}

void EngineFollow::ApplyLocked() {
  const std::shared_ptr<const RouterTables> now = holder_.Get();
  if (now != nullptr && now->version == serving_) return;
  auto it = cache_.find(serving_);
  if (it != cache_.end()) {
    holder_.Set(it->second);
    LOG(INFO) << "router: the engines serve version " << serving_ << "; placing with its tables";
    return;
  }
  auto failed = failed_.find(serving_);
  holder_.Set(nullptr, absl::StrCat("the engines serve version ", serving_, "; its tables ",
                                    failed == failed_.end()
                                        ? std::string("are being fetched")
                                        : absl::StrCat("cannot be fetched: ", failed->second.why),
                                    ": placing by load alone"));
}

void EngineFollow::Run() {
  auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(address_));
  absl::MutexLock lock(&mu_);
  for (;;) {
    // The version served first, then the one staged.
    auto missing = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (int64_t v : {serving_, target_}) {
        auto f = failed_.find(v);
        if (v > 0 && cache_.count(v) == 0 &&
            (f == failed_.end() || absl::Now() - f->second.at > kRetry)) {
          return v;
        }
      }
      return int64_t{0};
    };
    const int64_t version = missing();
    if (version == 0) {
      mu_.AwaitWithTimeout(absl::Condition(&stop_), absl::Milliseconds(20));
      if (stop_) return;
      continue;
    }
    mu_.Unlock();
    absl::StatusOr<std::shared_ptr<const RouterTables>> fetched =
        FetchRouterTables(*stub, version, ranks_, vocab_);
    mu_.Lock();
    if (stop_) return;
    if (fetched.ok()) {
      failed_.erase(version);
      cache_[version] = *std::move(fetched);
      while (cache_.size() > kCached) {  // Drop the oldest that is neither served nor staged.
        auto old = cache_.begin();
        while (old != cache_.end() && (old->first == serving_ || old->first == target_)) ++old;
        if (old == cache_.end()) break;
        cache_.erase(old);
      }
    } else {
      failed_[version] = {std::string(fetched.status().message()), absl::Now()};
      LOG(WARNING) << "router: cannot fetch version " << version
                   << "'s tables: " << failed_[version].why;
    }
    ApplyLocked();
  }
}

}  // namespace semmoe::router
