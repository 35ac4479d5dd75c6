// GlooGroup: a process group of CPU ranks connected by Gloo over TCP, with the f32 collectives
// expert parallelism needs (all-to-all-v, reduce-scatter, all-gather, all-reduce, barrier).
//
// Gloo reports errors by throwing; every entry point here catches them and returns a Status, so
// no exception crosses this library's boundary. Every collective must be called by all ranks in
// the same order with consistent counts; a rank that never arrives (or inconsistent counts)
// ends in DEADLINE_EXCEEDED/UNAVAILABLE after `timeout`, never a hang. After such a failure the
// ranks may disagree on what was exchanged, so the group refuses further collectives
// (FAILED_PRECONDITION) and must be recreated. Argument errors (INVALID_ARGUMENT) are caught
// before anything is sent and leave the group usable.
//
// Thread-compatible: one thread issues a group's collectives at a time.
#ifndef SEMMOE_ENGINE_PARALLEL_GLOO_GROUP_H_
#define SEMMOE_ENGINE_PARALLEL_GLOO_GROUP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "gloo/context.h"
#include "gloo/rendezvous/store.h"

namespace semmoe::engine {

struct GlooGroupOptions {
  int rank = 0;  // 0 <= rank < size.
  int size = 1;  // Number of ranks, >= 1.
  // Address this rank listens on; peers must reach it ("127.0.0.1" for one host).
  std::string hostname = "127.0.0.1";
  // Namespace in the store, so several groups (or runs) can share one store.
  std::string prefix = "semmoe";
  // Bound on rendezvous and on every collective. Must be positive.
  absl::Duration timeout = absl::Seconds(30);
};

// Bytes this rank has moved through the group since creation.
struct GlooGroupCounters {
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  int64_t collectives = 0;
};

class GlooGroup {
 public:
  // Connects `options.size` ranks through `store` (borrowed during the call only). Blocks until
  // every rank has joined or the timeout passes.
  static absl::StatusOr<std::unique_ptr<GlooGroup>> Create(gloo::rendezvous::Store& store,
                                                           const GlooGroupOptions& options);

  int rank() const { return rank_; }
  int size() const { return size_; }
  const GlooGroupCounters& counters() const { return counters_; }

  // Sends send[offset(j) .. offset(j)+send_counts[j]) to rank j, and receives recv_counts[i]
  // elements from rank i into recv, in rank order. REQUIRES (checked): both count lists have
  // size() non-negative entries summing to the span sizes.
  absl::Status AllToAllV(absl::Span<const float> send, absl::Span<const int64_t> send_counts,
                         absl::Span<float> recv, absl::Span<const int64_t> recv_counts);

  // `send` holds one segment per rank (segment j has counts[j] elements; counts identical on
  // every rank). Rank r receives into `recv` (counts[r] elements) the sum over ranks of their
  // segment r, added in rank order (deterministic and equal on any group shape).
  absl::Status ReduceScatterSum(absl::Span<const float> send, absl::Span<const int64_t> counts,
                                absl::Span<float> recv);

  // Rank i contributes counts[i] elements (`send`); every rank receives all contributions in
  // rank order in `recv` (sum(counts) elements).
  absl::Status AllGatherV(absl::Span<const float> send, absl::Span<const int64_t> counts,
                          absl::Span<float> recv);

  // In place: every rank ends with the element-wise sum over ranks.
  absl::Status AllReduceSum(absl::Span<float> data);

  absl::Status Barrier();

 private:
  GlooGroup(std::shared_ptr<gloo::Context> context, int rank, int size);
  uint32_t NextTag() { return next_tag_++; }
  // Runs one Gloo operation, converting exceptions; remembers a failure in broken_.
  template <typename Fn>
  absl::Status Run(absl::string_view what, Fn&& fn);

  std::shared_ptr<gloo::Context> context_;
  int rank_;
  int size_;
  uint32_t next_tag_ = 1;
  GlooGroupCounters counters_;
  absl::Status broken_;  // OK until a collective fails.
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_GLOO_GROUP_H_
