// StagedCommunicator: a Communicator over device memory that carries every collective through
// host copies and a host communicator (Gloo) — for tests that run several ranks on one GPU, which
// NCCL refuses (two ranks of one communicator on one device). The GPU-side work around the
// collectives (the exchanges' packing, gathers and sums on the device) is the product's; only
// the transport differs from NcclCommunicator, whose collectives nccl_communicator_test checks
// against the same contract.
//
// Each call synchronises the device, copies the send buffer to the host, runs the host
// collective and copies the result back; it returns when the result is on the device (as
// NcclCommunicator does). Thread-compatible; the calling thread has the rank's device current.
#ifndef SEMMOE_ENGINE_GPU_TESTING_STAGED_COMMUNICATOR_H_
#define SEMMOE_ENGINE_GPU_TESTING_STAGED_COMMUNICATOR_H_

#include <memory>
#include <vector>

#include "engine/parallel/communicator.h"

namespace semmoe::engine::gpu::testing {

class StagedCommunicator final : public Communicator {
 public:
  // `host`: the group's host communicator (owned), whose rank and size this takes.
  explicit StagedCommunicator(std::unique_ptr<Communicator> host) : host_(std::move(host)) {}

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  absl::string_view backend() const override { return "staged"; }

 protected:
  absl::Status DoAllToAllV(const char* send, const std::vector<int64_t>& send_bytes, char* recv,
                           const std::vector<int64_t>& recv_bytes) override;
  absl::Status DoAllGatherV(const char* send, int64_t send_bytes, char* recv,
                            const std::vector<int64_t>& recv_bytes) override;
  absl::Status DoBroadcast(char* data, int64_t bytes, int root) override;
  absl::Status DoReduceScatterSum(const float* send, const std::vector<int64_t>& counts,
                                  float* recv) override;
  absl::Status DoAllReduceSum(float* data, int64_t count) override;
  absl::Status DoBarrier() override;

 private:
  std::unique_ptr<Communicator> host_;
};

}  // namespace semmoe::engine::gpu::testing

#endif  // SEMMOE_ENGINE_GPU_TESTING_STAGED_COMMUNICATOR_H_
