// PlacementRollout: moves a serving group to another placement version without stopping it.
//
// The leader (rank 0) is told a version (Propose: the planner's active-version watch). GroupEngine
// adds kWords words per rank to the agreement it runs before every step: the leader's proposal,
// the version this rank has staged, and the version it could not stage. Then, on every rank:
//   stage   on seeing a new proposal, a background thread at low priority runs the stager (fetch
//           and check the version: another rank count, another model or bad tables are refused)
//           and loads from the rank's checkpoint the experts the new placement gives it that it
//           lacks. Serving goes on with the old placement; the staged experts are the only extra
//           memory.
//   switch  in the first round where every rank reports the proposal staged, every rank switches
//           (RankModel::SwitchPlacement: install, rebind the FFN and the Attention-TP tables, free
//           the experts it lost; on a device rank the device first, RankForward::SwitchPlacement)
//           before its next pass. All ranks see the same agreement, so they
//           switch in the same round: the epoch.
//   refuse  if any rank could not stage it, that rank's reason is broadcast, every rank drops what
//           it staged and stays on its placement, and every rank's stats say why.
// A rank that dies mid-rollout breaks the agreement's collective: the whole group stops with that
// error, and no rank ever serves a pass with a placement the others do not hold.
//
// Thread-safety: Propose and stats are thread-safe; Local, Agree and Cancel are for the loop
// thread.
#ifndef SEMMOE_ENGINE_PARALLEL_PLACEMENT_ROLLOUT_H_
#define SEMMOE_ENGINE_PARALLEL_PLACEMENT_ROLLOUT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/parallel/rank_forward.h"
#include "engine/parallel/rank_model.h"
#include "engine/parallel/rank_placement.h"

namespace semmoe::engine {

struct RolloutStats {
  int64_t serving_version = 0;                                        // 0: a file or vanilla.
  int64_t target_version = 0;                                         // Being rolled out; 0: none.
  int64_t experts_to_load = 0, experts_loaded = 0, staged_bytes = 0;  // Of the target.
  bool staged = false;          // This rank is ready to switch to the target.
  int64_t epoch = 0;            // Switches since the group started.
  int64_t switch_round = 0;     // The agreement round of the latest switch (equal on every rank).
  int64_t refused_version = 0;  // The latest version refused, and why.
  int64_t refusals = 0;         // Versions refused since the group started.
  std::string last_error;
  // The latest switch: staging time (proposal seen → staged), the switch's own time, what moved.
  double last_stage_seconds = 0, last_switch_ms = 0;
  int64_t last_experts_loaded = 0, last_experts_freed = 0;
  int64_t last_bytes_loaded = 0, last_bytes_freed = 0;
  int64_t peak_staged_bytes = 0;  // Most extra expert bytes held at once, latest rollout.
};

class PlacementRollout {
 public:
  // Fetches and checks a version for this rank (RankPlacement); runs on the staging thread.
  using Stager = std::function<absl::StatusOr<std::unique_ptr<RankPlacement>>(int64_t version)>;
  static constexpr int kWords = 3;

  // `model` is borrowed and outlives this; its placement must be owned (RankModel::Create with a
  // RankPlacement). `stager` null: every proposal is refused with `no_stager_reason`.
  // `load_mb_per_s` > 0 caps the rate experts are loaded at (MB of weights per second), to bound
  // what staging takes from serving; 0: as fast as the low-priority thread gets.
  PlacementRollout(RankModel& model, Stager stager, std::string no_stager_reason = "",
                   double load_mb_per_s = 0);
  ~PlacementRollout();  // Stops staging.

  // A rank serving from a device (borrowed, outlives this; null: the host's CPU forward): each
  // switch moves the device to the new placement first (its gained experts uploaded, its lost
  // freed), then the rank model. Set before the engine starts.
  void set_device(RankForward* device) { device_ = device; }

  // Changes the loading cap (takes effect from the next rollout's next expert).
  void set_load_mb_per_s(double mb_per_s) { load_mb_per_s_ = mb_per_s; }

  // The leader's next target (ignored on other ranks). A refused version proposed again is staged
  // again.
  void Propose(int64_t version);

  // This rank's words for the agreement round.
  void Local(absl::Span<int64_t> words);
  // After the round: `words` holds every rank's kWords in rank order. May switch the placement
  // or broadcast a refusal's reason (a collective every rank enters alike). An error means the
  // group must stop (a collective or the switch failed).
  absl::Status Agree(absl::Span<const int64_t> words, int64_t round);

  RolloutStats stats() const;

 private:
  struct Staged {
    std::unique_ptr<RankPlacement> placement;
    std::vector<StagedExpert> experts;
  };
  void StartStaging(int64_t version);
  // Drops what was staged and cancels the staging without waiting for it (the loop must not
  // block on a fetch): the thread is retired, to be joined once done.
  void StopStaging();
  void JoinRetired(bool all);
  // On the staging thread: `current` is the placement served when staging began (a copy: the
  // loop may switch meanwhile only to what this thread staged). Gives up once `generation` is
  // not the current one.
  absl::StatusOr<Staged> Stage(int64_t version, int64_t generation,
                               const planner::Placement& current);
  bool Cancelled(int64_t generation) const { return generation_.load() != generation; }
  absl::Status Switch(int64_t round);
  void ClearProposal(int64_t version);

  RankModel& model_;
  RankForward* device_ = nullptr;
  const Stager stager_;
  const std::string no_stager_reason_;
  std::atomic<double> load_mb_per_s_;
  const int rank_;
  int64_t target_ = 0;  // Loop thread.
  absl::Time staging_started_;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  Worker staging_;
  std::vector<Worker> retired_;         // Cancelled stagings still finishing.
  std::atomic<int64_t> generation_{0};  // Of the staging whose result counts.

  mutable absl::Mutex mu_;
  int64_t proposal_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t staged_version_ ABSL_GUARDED_BY(mu_) = 0;  // Ready in staged_.
  int64_t failed_version_ ABSL_GUARDED_BY(mu_) = 0;  // Failed, with failed_error_.
  std::string failed_error_ ABSL_GUARDED_BY(mu_);
  Staged staged_ ABSL_GUARDED_BY(mu_);
  RolloutStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_PLACEMENT_ROLLOUT_H_
