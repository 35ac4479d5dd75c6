// The state a router's calls share with its core: its options, engine groups (A/B arms) and
// counters. Owned by RouterCore; calls hold it while they finish.
#ifndef SEMMOE_ROUTER_CORE_ROUTER_STATE_H_
#define SEMMOE_ROUTER_CORE_ROUTER_STATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "router/core/engine_group.h"
#include "router/core/latency_window.h"
#include "router/core/router_core.h"

namespace semmoe::router {

struct RouterState {
  explicit RouterState(const RouterOptions& o) : options(o) {
    for (const GroupOptions& g : o.groups) {
      groups.push_back(std::make_unique<EngineGroup>(g));
      shares.push_back(g.share_percent);
    }
  }

  const RouterOptions options;
  std::vector<std::unique_ptr<EngineGroup>> groups;
  std::vector<int> shares;
  std::atomic<int64_t> in_flight{0}, received{0}, completed{0}, failed{0}, rejected{0}, invalid{0},
      retried{0}, requeued{0}, rejected_wait{0}, completion_tokens{0}, next_id{0}, polls{0};
  LatencyWindow ttft, tpot, e2e, queue;
  absl::Mutex mu;
  bool stop ABSL_GUARDED_BY(mu) = false;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_ROUTER_STATE_H_
