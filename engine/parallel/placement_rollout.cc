#include "engine/parallel/placement_rollout.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "glog/logging.h"
#include "kernels/safetensors.h"

namespace semmoe::engine {
namespace {

constexpr int kLeader = 0;

// `text` from `root` to every rank (each passes its own; only the root's is read).
absl::Status BroadcastString(Communicator& comm, std::string& text, int root) {
  std::vector<int64_t> size = {static_cast<int64_t>(text.size())};
  RETURN_IF_ERROR(comm.Broadcast(absl::MakeSpan(size), root));
  if (size[0] < 0 || size[0] > (1 << 20)) {
    return absl::InternalError(
        absl::StrCat("rank ", root, " sent a reason of ", size[0], " bytes"));
  }
  text.resize(size[0]);
  return comm.Broadcast(absl::MakeSpan(text.data(), text.size()), root);
}

}  // namespace

PlacementRollout::PlacementRollout(RankModel& model, Stager stager, std::string no_stager_reason,
                                   double load_mb_per_s)
    : model_(model),
      stager_(std::move(stager)),
      no_stager_reason_(std::move(no_stager_reason)),
      load_mb_per_s_(load_mb_per_s),
      rank_(model.comm().rank()) {
  absl::MutexLock lock(&mu_);
  stats_.serving_version = model.placement_version();
}

PlacementRollout::~PlacementRollout() {
  StopStaging();
  JoinRetired(/*all=*/true);
}

void PlacementRollout::JoinRetired(bool all) {
  for (auto it = retired_.begin(); it != retired_.end();) {
    if (all || it->done->load()) {
      it->thread.join();
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
}

void PlacementRollout::Propose(int64_t version) {
  absl::MutexLock lock(&mu_);
  if (rank_ != kLeader) return;
  proposal_ = version;
}

void PlacementRollout::ClearProposal(int64_t version) {
  absl::MutexLock lock(&mu_);
  if (proposal_ == version) proposal_ = 0;
}

RolloutStats PlacementRollout::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void PlacementRollout::Local(absl::Span<int64_t> words) {
  absl::MutexLock lock(&mu_);
  words[0] = rank_ == kLeader ? proposal_ : 0;
  words[1] = staged_version_;
  words[2] = failed_version_;
}

absl::StatusOr<PlacementRollout::Staged> PlacementRollout::Stage(
    int64_t version, int64_t generation, const planner::Placement& current) {
  ASSIGN_OR_RETURN(std::unique_ptr<RankPlacement> next, stager_(version));
  const std::vector<std::pair<int, int>> gained = GainedExperts(current, next->placement, rank_);
  {
    absl::MutexLock lock(&mu_);
    if (!Cancelled(generation)) stats_.experts_to_load = static_cast<int64_t>(gained.size());
  }
  Staged staged;
  staged.placement = std::move(next);
  if (gained.empty()) return staged;
  ASSIGN_OR_RETURN(std::unique_ptr<kernels::Checkpoint> checkpoint,
                   kernels::Checkpoint::Open(model_.dir()));
  const absl::Time start = absl::Now();
  int64_t loaded_bytes = 0;
  for (const auto& [layer, expert] : gained) {
    // The cap: wait until the bytes so far fit the rate (a cancel ends the wait).
    if (const double cap = load_mb_per_s_.load(); cap > 0) {
      const absl::Time due = start + absl::Seconds(loaded_bytes / (cap * 1e6));
      while (!Cancelled(generation) && absl::Now() < due) absl::SleepFor(absl::Milliseconds(5));
    }
    if (Cancelled(generation)) return absl::CancelledError("another version was proposed");
    ASSIGN_OR_RETURN(model::MlpWeights w,
                     model::LoadExpert(model_.config(), *checkpoint, layer, expert));
    const int64_t bytes = model::WeightBytes(w);
    loaded_bytes += bytes;
    staged.experts.push_back({.layer = layer, .expert = expert, .weights = std::move(w)});
    absl::MutexLock lock(&mu_);
    if (Cancelled(generation)) continue;
    ++stats_.experts_loaded;
    stats_.staged_bytes += bytes;
    stats_.peak_staged_bytes = std::max(stats_.peak_staged_bytes, stats_.staged_bytes);
  }
  return staged;
}

void PlacementRollout::StartStaging(int64_t version) {
  JoinRetired(/*all=*/false);
  const int64_t generation = ++generation_;
  staging_started_ = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    stats_.target_version = version;
    stats_.experts_to_load = stats_.experts_loaded = stats_.staged_bytes = 0;
    stats_.peak_staged_bytes = 0;
    stats_.staged = false;
  }
  if (!stager_) {  // Refused at once, by every rank in the same round.
    absl::MutexLock lock(&mu_);
    failed_version_ = version;
    failed_error_ = no_stager_reason_;
    return;
  }
  LOG(INFO) << "rank " << rank_ << ": staging placement version " << version;
  auto done = std::make_shared<std::atomic<bool>>(false);
  staging_.done = done;
  staging_.thread = std::thread([this, version, generation, done, current = model_.placement()] {
    // Below the serving loop: loading must not stall the passes.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
    absl::StatusOr<Staged> staged = Stage(version, generation, current);
    absl::MutexLock lock(&mu_);
    done->store(true);
    if (Cancelled(generation)) return;  // Dropped (staged's experts go with it).
    if (staged.ok()) {
      staged_ = *std::move(staged);
      staged_version_ = version;
      stats_.staged = true;
      stats_.last_stage_seconds = absl::ToDoubleSeconds(absl::Now() - staging_started_);
    } else {
      failed_version_ = version;
      failed_error_ = std::string(staged.status().message());
      LOG(WARNING) << "rank " << rank_ << ": cannot stage placement version " << version << ": "
                   << failed_error_;
    }
  });
}

void PlacementRollout::StopStaging() {
  ++generation_;
  if (staging_.thread.joinable()) retired_.push_back(std::move(staging_));
  staging_ = {};
  Staged dropped;
  absl::MutexLock lock(&mu_);
  dropped = std::move(staged_);
  staged_ = {};
  staged_version_ = failed_version_ = 0;
  failed_error_.clear();
  stats_.experts_to_load = stats_.experts_loaded = stats_.staged_bytes = 0;
  stats_.staged = false;
}

absl::Status PlacementRollout::Agree(absl::Span<const int64_t> words, int64_t round) {
  const int g = static_cast<int>(words.size()) / kWords;
  const int64_t target = words[kLeader * kWords];
  const int64_t serving = model_.placement_version();
  if (target != target_) {
    StopStaging();
    target_ = target;
    {
      absl::MutexLock lock(&mu_);
      stats_.target_version = target == serving ? 0 : target;
    }
    if (target != 0 && target != serving) StartStaging(target);
  }
  if (target == 0) return absl::OkStatus();
  if (target == serving) {
    ClearProposal(target);
    return absl::OkStatus();
  }
  int failed = -1;
  for (int r = 0; r < g && failed < 0; ++r) {
    if (words[r * kWords + 2] == target) failed = r;
  }
  if (failed >= 0) {
    std::string why;
    if (failed == rank_) {
      absl::MutexLock lock(&mu_);
      why = failed_error_;
    }
    RETURN_IF_ERROR(BroadcastString(model_.comm(), why, failed));
    StopStaging();
    const std::string error = absl::StrCat(
        "version ", target, " refused: rank ", failed, ": ", why, "; the group stays on ",
        serving > 0 ? absl::StrCat("version ", serving) : model_.placement_description());
    LOG(WARNING) << "rank " << rank_ << ": " << error;
    {
      absl::MutexLock lock(&mu_);
      stats_.refused_version = target;
      ++stats_.refusals;
      stats_.last_error = error;
      stats_.target_version = 0;
    }
    ClearProposal(target);
    return absl::OkStatus();
  }
  for (int r = 0; r < g; ++r) {
    if (words[r * kWords + 1] != target) return absl::OkStatus();
  }
  return Switch(round);
}

absl::Status PlacementRollout::Switch(int64_t round) {
  if (staging_.thread.joinable()) staging_.thread.join();  // It has staged: it is done.
  staging_ = {};
  Staged staged;
  int64_t bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    staged = std::move(staged_);
    staged_ = {};
    staged_version_ = 0;
    bytes = stats_.staged_bytes;
  }
  const int64_t version = staged.placement->version;
  const int64_t loaded = static_cast<int64_t>(staged.experts.size());
  const absl::Time start = absl::Now();
  if (device_ != nullptr) {
    std::vector<GainedExpertWeights> gained;
    for (const StagedExpert& e : staged.experts) {
      gained.push_back({.layer = e.layer, .expert = e.expert, .weights = &e.weights});
    }
    const RankPlacement& next = *staged.placement;  // Moves into the model below, in place.
    const absl::Status s =
        device_->SwitchPlacement(next.placement, gained, next.predictor.get());
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("rank ", rank_, ": switching the device to placement "
                                              "version ", version, " failed: ", s.message()));
    }
  }
  absl::StatusOr<RankModel::Switched> switched =
      model_.SwitchPlacement(std::move(staged.placement), std::move(staged.experts));
  if (!switched.ok()) {
    // Other ranks may have switched: this group must not serve another pass.
    return absl::InternalError(absl::StrCat("rank ", rank_, ": switching to placement version ",
                                            version, " failed: ", switched.status().message()));
  }
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  LOG(INFO) << "rank " << rank_ << ": serving placement version " << version << " from round "
            << round << " (" << loaded << " experts loaded, " << switched->experts_freed
            << " freed; switch " << ms << " ms)";
  {
    absl::MutexLock lock(&mu_);
    stats_.serving_version = version;
    stats_.target_version = 0;
    ++stats_.epoch;
    stats_.switch_round = round;
    stats_.last_switch_ms = ms;
    stats_.last_experts_loaded = loaded;
    stats_.last_bytes_loaded = bytes;
    stats_.last_experts_freed = switched->experts_freed;
    stats_.last_bytes_freed = switched->bytes_freed;
    stats_.experts_to_load = stats_.experts_loaded = stats_.staged_bytes = 0;
    stats_.staged = false;
    stats_.last_error.clear();
  }
  ClearProposal(version);
  return absl::OkStatus();
}

}  // namespace semmoe::engine
