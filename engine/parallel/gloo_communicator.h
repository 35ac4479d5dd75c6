// GlooCommunicator: the CPU backend of Communicator — ranks connected by Gloo over TCP.
//
// Gloo reports errors by throwing; every entry point catches them and returns a Status, so no
// exception crosses this library's boundary. A rank that never arrives (or inconsistent counts)
// ends in DEADLINE_EXCEEDED/UNAVAILABLE after `timeout`, never a hang; a peer process that dies
// closes its sockets, which fails the others' next collective at once.
//
// Thread-compatible: one thread issues a communicator's collectives at a time.
#ifndef SEMMOE_ENGINE_PARALLEL_GLOO_COMMUNICATOR_H_
#define SEMMOE_ENGINE_PARALLEL_GLOO_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/parallel/communicator.h"
#include "gloo/context.h"
#include "gloo/rendezvous/store.h"

namespace semmoe::engine {

struct GlooOptions {
  int rank = 0;  // 0 <= rank < size.
  int size = 1;  // Number of ranks, >= 1.
  // Address this rank listens on; peers must reach it ("127.0.0.1" for one host).
  std::string hostname = "127.0.0.1";
  // Namespace in the store, so several groups (or runs) can share one store.
  std::string prefix = "semmoe";
  // Bound on rendezvous and on every collective. Must be positive.
  absl::Duration timeout = absl::Seconds(30);
  // Bound on the rendezvous alone when positive (re-forming a group retries it in short rounds).
  absl::Duration connect_timeout = absl::ZeroDuration();
};

class GlooCommunicator final : public Communicator {
 public:
  // Connects `options.size` ranks through `store` (borrowed during the call only). Blocks until
  // every rank has joined or the timeout passes.
  static absl::StatusOr<std::unique_ptr<GlooCommunicator>> Create(gloo::rendezvous::Store& store,
                                                                  const GlooOptions& options);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::string_view backend() const override { return "gloo"; }

 protected:
  absl::Status DoAllToAllV(const char* send, const std::vector<int64_t>& send_bytes, char* recv,
                           const std::vector<int64_t>& recv_bytes) override;
  absl::Status DoAllToAllVParts(const std::vector<BytePart>& parts) override;
  absl::Status DoAllGatherV(const char* send, int64_t send_bytes, char* recv,
                            const std::vector<int64_t>& recv_bytes) override;
  absl::Status DoBroadcast(char* data, int64_t bytes, int root) override;
  absl::Status DoReduceScatterSum(const float* send, const std::vector<int64_t>& counts,
                                  float* recv) override;
  absl::Status DoAllReduceSum(float* data, int64_t count) override;
  absl::Status DoBarrier() override;

 private:
  GlooCommunicator(std::shared_ptr<gloo::Context> context, int rank, int size);
  uint32_t NextTag() { return next_tag_++; }
  // Runs one Gloo operation, converting exceptions; remembers a failure in broken_.
  template <typename Fn>
  absl::Status Run(absl::string_view what, Fn&& fn);

  std::shared_ptr<gloo::Context> context_;
  int rank_;
  int size_;
  uint32_t next_tag_ = 1;
  absl::Status broken_;                 // OK until a collective fails.
  std::vector<char> packed_, arrived_;  // DoAllToAllVParts's staging.
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_GLOO_COMMUNICATOR_H_
