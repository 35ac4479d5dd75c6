// ActiveWatch: follows the planner's active placement version of one model
// (PlannerService.WatchActive) and hands each version it announces to `on_version` — on the
// engine, rank 0 proposes it to the group's rollout (engine/parallel/placement_rollout.h). A lost
// stream is reconnected with backoff (200 ms doubling to 5 s); the planner then announces the
// active version anew. What went wrong last is kept for the rank's stats.
//
// Thread-safe; the watch runs on its own thread until destruction.
#ifndef SEMMOE_ENGINE_SERVER_ACTIVE_WATCH_H_
#define SEMMOE_ENGINE_SERVER_ACTIVE_WATCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"

namespace semmoe::engine {

class ActiveWatch {
 public:
  ActiveWatch(const std::string& planner, const std::string& model,
              std::function<void(int64_t version)> on_version);
  ~ActiveWatch();

  // "" while the stream is up; else why it is not (and that it is retrying).
  std::string error() const;

 private:
  void Run();

  const std::string planner_, model_;
  const std::function<void(int64_t)> on_version_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::string error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_ACTIVE_WATCH_H_
