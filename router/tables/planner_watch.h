// Keeps a TablesHolder on the planner's active placement version of a model: streams
// PlannerService.WatchActive, and for each new active version fetches its prompt-score table
// (fetch_tables.h) and swaps it in (requests already placed are not affected). A version without
// tables, or one for another number of ranks, clears the tables: the router then balances by
// load alone, and the holder's error (the router's stats) says so and why. A fetch that failed
// on the way (the planner, the stream) is retried with backoff, as is a lost planner connection;
// meanwhile the last good tables stay in use and the holder's error says that too.
//
// Thread-safe; the watch runs on its own thread until destruction.
#ifndef SEMMOE_ROUTER_TABLES_PLANNER_WATCH_H_
#define SEMMOE_ROUTER_TABLES_PLANNER_WATCH_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "grpcpp/grpcpp.h"
#include "router/tables/router_tables.h"

namespace semmoe::router {

class PlannerWatch {
 public:
  // `holder` is borrowed and outlives this. `clock` (borrowed, never null) times the backoff
  // between connection attempts: 200 ms, doubling to 5 s.
  PlannerWatch(const std::string& planner_address, const std::string& model, int ranks,
               uint32_t vocab, TablesHolder& holder, Clock* clock = Clock::Real());
  ~PlannerWatch();

  // The version whose tables are in use (0: none), and the last error ("" if none).
  int64_t version() const;
  std::string last_error() const;
  // Watch connections tried so far (1 once the first is under way).
  int64_t attempts() const;
  // Backoff waits begun so far: the clock has been read for the wait's end (what a test with a
  // fake clock waits for before advancing it).
  int64_t backoffs() const;

 private:
  void Run();
  // Puts the fetched tables in use, or clears them and records why. True if fetching again may
  // help.
  bool Apply(int64_t version, absl::StatusOr<std::shared_ptr<const RouterTables>> tables);

  const std::string address_, model_;
  const int ranks_;
  const uint32_t vocab_;
  TablesHolder& holder_;
  Clock* const clock_;
  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  int64_t attempts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t backoffs_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_TABLES_PLANNER_WATCH_H_
