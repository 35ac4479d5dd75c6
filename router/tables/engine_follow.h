// EngineFollow: keeps a group's TablesHolder on the placement version its engines serve, as
// their stats report it (EngineStats.placement_version, polled), so requests are placed with the
// tables of the placement the engines hold — also across a live rollout
// (engine/parallel/placement_rollout.h). While the engines stage a version
// (EngineStats.rollout.target_version) its tables are fetched ahead, so the swap at the switch
// is immediate; the latest few versions stay cached (a rollback swaps back at once). A version
// whose tables cannot be fetched clears the tables (placing by load alone, never by another
// version's tables) and the holder's error says why; the fetch is retried every 2 s.
//
// Thread-safe; fetches run on its own thread until destruction.
#ifndef SEMMOE_ROUTER_TABLES_ENGINE_FOLLOW_H_
#define SEMMOE_ROUTER_TABLES_ENGINE_FOLLOW_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "router/tables/router_tables.h"

namespace semmoe::router {

class EngineFollow {
 public:
  // `holder` is borrowed and outlives this.
  EngineFollow(const std::string& planner_address, int ranks, uint32_t vocab, TablesHolder& holder);
  ~EngineFollow();

  // From the poller, per rank: the version served and the one being rolled out (0: none; −1: the
  // rank did not answer). Acts once every answering rank serves the same version.
  void Observe(const std::vector<int64_t>& serving, const std::vector<int64_t>& targets);
  // Whether `version`'s tables are fetched and cached.
  bool Cached(int64_t version) const;

 private:
  void Run();
  void ApplyLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string address_;
  const int ranks_;
  const uint32_t vocab_;
  TablesHolder& holder_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int64_t serving_ ABSL_GUARDED_BY(mu_) = 0;  // What the engines serve (0: no version).
  int64_t target_ ABSL_GUARDED_BY(mu_) = 0;   // What they stage.
  std::map<int64_t, std::shared_ptr<const RouterTables>> cache_ ABSL_GUARDED_BY(mu_);
  struct Failure {
    std::string why;
    absl::Time at;
  };
  std::map<int64_t, Failure> failed_ ABSL_GUARDED_BY(mu_);  // Until retried.
  std::thread thread_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_TABLES_ENGINE_FOLLOW_H_
