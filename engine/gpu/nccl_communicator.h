// NcclCommunicator: the GPU backend of Communicator, over NCCL. Every buffer passed to a
// collective is device memory on this rank's GPU. Each call enqueues on the communicator's own
// stream and returns when the operation has completed; while waiting it polls NCCL for
// asynchronous errors, and past `timeout` (a peer that never arrives) it aborts the NCCL
// communicator and returns DEADLINE_EXCEEDED — never a hang. After a failure the communicator is
// broken (FAILED_PRECONDITION) and must be recreated, as with Gloo.
//
// All-to-all-v and all-gather-v are grouped point-to-point sends and receives (self parts are
// device copies); reduce-scatter-v is an all-to-all into a scratch buffer and a segment sum in
// rank order (kernels/cuda/segment_sum), so results are identical on every group shape, like the
// CPU backend; all-reduce, broadcast and the barrier are NCCL's own.
//
// Rendezvous: rank 0 puts the NCCL unique id into the same Gloo store the CPU backend uses
// (file or gRPC, rendezvous.h). Thread-compatible.
#ifndef SEMMOE_ENGINE_GPU_NCCL_COMMUNICATOR_H_
#define SEMMOE_ENGINE_GPU_NCCL_COMMUNICATOR_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/parallel/communicator.h"
#include "gloo/rendezvous/store.h"

namespace semmoe::engine::gpu {

struct NcclOptions {
  int rank = 0;
  int size = 1;
  int device = 0;                      // CUDA device of this rank.
  std::string prefix = "semmoe-nccl";  // Key namespace in the store.
  absl::Duration timeout = absl::Seconds(60);
};

class NcclCommunicator final : public Communicator {
 public:
  // Blocks until every rank joined or the timeout. UNAVAILABLE without a GPU.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> Create(gloo::rendezvous::Store& store,
                                                                  const NcclOptions& options);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  absl::string_view backend() const override { return "nccl"; }

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
  struct Impl;  // NCCL and CUDA handles (kept out of this header).
  NcclCommunicator(int rank, int size, std::unique_ptr<Impl> impl);

  int rank_;
  int size_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace semmoe::engine::gpu

#endif  // SEMMOE_ENGINE_GPU_NCCL_COMMUNICATOR_H_
