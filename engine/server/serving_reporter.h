// ServingReporter: rank 0 of a group that follows a model's active version (engine serve
// --follow_active) tells the planner what the group serves, every `period`
// (PlannerService.ReportServing): the version, a rollout staged or refused and why, and the whole
// group's request and expert-activation counters (EngineStats.group_serving: every rank's, summed
// at the group's step agreement). The planner's autopilot checks its rollouts on these
// reports (docs/PLANNER.md, "Autopilot"). A planner that cannot be reached is retried at the next
// period; what went wrong last is kept for the rank's stats.
//
// Thread-safe; reports run on their own thread until destruction.
#ifndef SEMMOE_ENGINE_SERVER_SERVING_REPORTER_H_
#define SEMMOE_ENGINE_SERVER_SERVING_REPORTER_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/proto/engine.pb.h"
#include "planner/proto/planner.pb.h"

namespace semmoe::engine {

// The report of a group from its rank 0's stats.
planner::rpc::ServingReport ServingReportFrom(const std::string& model, const std::string& group,
                                              const rpc::EngineStats& stats);

class ServingReporter {
 public:
  struct Options {
    std::string planner;  // host:port
    std::string model;
    std::string group;  // Rank 0's address, as clients reach it.
    std::function<rpc::EngineStats()> stats;
    absl::Duration period = absl::Seconds(2);
  };
  explicit ServingReporter(Options options);
  ~ServingReporter();

  // "" after a report went through; else why the last one did not.
  std::string error() const;

 private:
  void Run();

  const Options o_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::string error_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_SERVER_SERVING_REPORTER_H_
