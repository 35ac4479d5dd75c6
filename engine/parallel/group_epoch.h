// Forming, and re-forming, an expert-parallel group in epochs. Every formation of the group is
// an epoch with its own namespace in the rendezvous store (PREFIX/e<E>), so ranks that meet
// again after a failure build a fresh Gloo mesh and never read the broken one's addresses.
//
// Each rank keeps two keys in the store: PREFIX/rank<r>/joining (the epoch it last entered) and
// PREFIX/rank<r>/formed (the last it formed). A rank joining picks
//     E = max( max_r joining[r],  max_r formed[r] + 1,  failed + 1 )
// where `failed` is the epoch whose collective just failed on this rank (−1 for a fresh process).
// Survivors of a failure all move to failed + 1; a restarted rank, finding their `joining` (or
// the old `formed`), lands on the same epoch whichever comes first; at the group's first start
// every key is missing and all pick 0. A round that times out (a peer not back yet) picks again
// — the same epoch unless someone posted a later one — until the group forms, the deadline
// passes or `stop` says to give up.
#ifndef SEMMOE_ENGINE_PARALLEL_GROUP_EPOCH_H_
#define SEMMOE_ENGINE_PARALLEL_GROUP_EPOCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/parallel/communicator.h"
#include "engine/parallel/rendezvous.h"

namespace semmoe::engine {

struct EpochJoinOptions {
  // Where and who; its `prefix` holds the epoch keys, its `timeout` bounds collectives later.
  RendezvousOptions rendezvous;
  int64_t failed_epoch = -1;  // The epoch that broke on this rank; −1: a fresh process.
  absl::Duration round = absl::Seconds(5);          // One rendezvous attempt.
  absl::Time deadline = absl::InfiniteFuture();     // Then DEADLINE_EXCEEDED.
  std::function<bool()> stop;                       // True: give up (CANCELLED). May be null.
  // Told, before each round, the epoch and which ranks have not entered it yet ("1, 3").
  std::function<void(int64_t epoch, const std::string& missing)> on_round;
};

struct EpochGroup {
  std::unique_ptr<Communicator> comm;
  int64_t epoch = 0;
};

// Joins the group's next formation (see above). Errors: a malformed address (INVALID_ARGUMENT),
// the deadline (DEADLINE_EXCEEDED, naming the epoch and the missing ranks), `stop` (CANCELLED).
absl::StatusOr<EpochGroup> JoinEpoch(const EpochJoinOptions& options);

// The epoch JoinEpoch would pick now (for tests and for the operator).
absl::StatusOr<int64_t> NextEpoch(const RendezvousOptions& rendezvous, int64_t failed_epoch);

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_GROUP_EPOCH_H_
