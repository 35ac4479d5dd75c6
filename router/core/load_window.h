// LoadWindow: one engine rank's expert load over the last minute or so, from the cumulative
// counters it reports (since it started). Operators watch the balance now, not since start: a
// shift an hour into serving hardly moves since-start counters, and a rollout's new placement is
// judged by the traffic after it.
//
// Observe() keeps two snapshots of the counters: `base` and a younger `mid` taken at least half
// a window after it; once `mid` is half a window old it becomes `base`. The load reported is the
// counters now minus `base`: the last half to whole window (until a rank has run that long: since
// its start). Layers and per-expert counts that appear later (an engine reports them once a
// pass has run) count from zero; counters that go backwards (the rank restarted) or change shape
// (another model) start the window anew from the counters themselves.
//
// Thread-compatible (one per rank, under the group's lock).
#ifndef SEMMOE_ROUTER_CORE_LOAD_WINDOW_H_
#define SEMMOE_ROUTER_CORE_LOAD_WINDOW_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace semmoe::router {

// Activations per MoE layer (layer index, count) and per expert id of each layer, in the order
// the engine reports its layers.
struct ExpertLoad {
  std::vector<std::pair<int, int64_t>> served;
  std::vector<std::pair<int, std::vector<int64_t>>> per_expert;
};

class LoadWindow {
 public:
  explicit LoadWindow(absl::Duration window) : window_(window) {}

  struct Windowed {
    ExpertLoad load;      // Since `since`.
    absl::Duration span;  // How long that is (zero at the first observation).
  };
  // Records `cumulative` (the rank's counters at `now`) and returns the load since the window's
  // base.
  Windowed Observe(absl::Time now, const ExpertLoad& cumulative);

 private:
  struct Snapshot {
    absl::Time at;
    ExpertLoad load;
  };
  absl::Duration window_;
  std::optional<Snapshot> base_, mid_;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_LOAD_WINDOW_H_
