#include "engine/gpu/testing/staged_communicator.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <numeric>

#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::engine::gpu::testing {
namespace {

int64_t Sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// The device's queued work done, then `n` elements of device memory `from` into a host vector.
template <typename T>
absl::StatusOr<std::vector<T>> ToHost(const T* from, int64_t n) {
  CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  std::vector<T> host(n);
  if (n > 0) {
    CUDA_RETURN_IF_ERROR(cudaMemcpy(host.data(), from, n * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return host;
}

template <typename T>
absl::Status ToDevice(T* to, const std::vector<T>& host) {
  if (!host.empty()) {
    CUDA_RETURN_IF_ERROR(
        cudaMemcpy(to, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status StagedCommunicator::DoAllToAllV(const char* send,
                                             const std::vector<int64_t>& send_bytes, char* recv,
                                             const std::vector<int64_t>& recv_bytes) {
  ASSIGN_OR_RETURN(const std::vector<char> out, ToHost(send, Sum(send_bytes)));
  std::vector<char> in(Sum(recv_bytes));
  RETURN_IF_ERROR(host_->AllToAllV(absl::MakeConstSpan(out), send_bytes, absl::MakeSpan(in),
                                   recv_bytes));
  return ToDevice(recv, in);
}

// An all-gather as an all-to-all that sends this rank's bytes to every rank (the host API's
// all-gather takes typed spans; this one carries bytes of any element type).
absl::Status StagedCommunicator::DoAllGatherV(const char* send, int64_t send_bytes, char* recv,
                                              const std::vector<int64_t>& recv_bytes) {
  ASSIGN_OR_RETURN(const std::vector<char> mine, ToHost(send, send_bytes));
  std::vector<char> out;
  out.reserve(mine.size() * size());
  for (int r = 0; r < size(); ++r) out.insert(out.end(), mine.begin(), mine.end());
  std::vector<char> in(Sum(recv_bytes));
  RETURN_IF_ERROR(host_->AllToAllV(absl::MakeConstSpan(out),
                                   std::vector<int64_t>(size(), send_bytes), absl::MakeSpan(in),
                                   recv_bytes));
  return ToDevice(recv, in);
}

absl::Status StagedCommunicator::DoBroadcast(char* data, int64_t bytes, int root) {
  ASSIGN_OR_RETURN(std::vector<char> host, ToHost(data, bytes));
  RETURN_IF_ERROR(host_->Broadcast(absl::MakeSpan(host), root));
  return ToDevice(data, host);
}

absl::Status StagedCommunicator::DoReduceScatterSum(const float* send,
                                                    const std::vector<int64_t>& counts,
                                                    float* recv) {
  ASSIGN_OR_RETURN(const std::vector<float> sent, ToHost(send, Sum(counts)));
  std::vector<float> mine(counts[rank()]);
  RETURN_IF_ERROR(host_->ReduceScatterV(sent, counts, absl::MakeSpan(mine)));
  return ToDevice(recv, mine);
}

absl::Status StagedCommunicator::DoAllReduceSum(float* data, int64_t count) {
  ASSIGN_OR_RETURN(std::vector<float> host, ToHost(data, count));
  RETURN_IF_ERROR(host_->AllReduce(absl::MakeSpan(host)));
  return ToDevice(data, host);
}

absl::Status StagedCommunicator::DoBarrier() { return host_->Barrier(); }

}  // namespace semmoe::engine::gpu::testing
