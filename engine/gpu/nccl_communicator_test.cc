// The NCCL backend against the same expectations as the Gloo one, with device buffers. Ranks are
// threads, one GPU each: on a one-GPU machine the group has one rank (self copies, the segment sum
// and NCCL's calls on a one-rank communicator); with more GPUs, up to 4 ranks.
#include "engine/gpu/nccl_communicator.h"

#include <cuda_runtime_api.h>

#include <functional>
#include <thread>
#include <vector>

#include "gloo/rendezvous/hash_store.h"
#include "gtest/gtest.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::engine::gpu {
namespace {

int Ranks() {
  auto devices = kernels::cuda::DeviceCount();
  return devices.ok() ? std::min(*devices, 4) : 0;
}

template <typename T>
T* ToDevice(const std::vector<T>& host) {
  T* d = nullptr;
  EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&d), host.size() * sizeof(T) + 4), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
            cudaSuccess);
  return d;
}

template <typename T>
std::vector<T> ToHost(const T* d, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

void RunRanks(int g, const std::function<void(NcclCommunicator&)>& body) {
  gloo::rendezvous::HashStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < g; ++r) {
    threads.emplace_back([&, r] {
      ASSERT_EQ(cudaSetDevice(r), cudaSuccess);
      auto comm = NcclCommunicator::Create(store, {.rank = r, .size = g, .device = r});
      ASSERT_TRUE(comm.ok()) << comm.status();
      EXPECT_EQ((*comm)->backend(), "nccl");
      body(**comm);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(NcclCommunicatorTest, CollectivesMatchTheirContract) {
  const int g = Ranks();
  ASSERT_GT(g, 0) << "needs a GPU";
  RunRanks(g, [g](NcclCommunicator& comm) {
    const int me = comm.rank();
    // All-to-all-v: (src + 1) · (dst + 1) elements from src to dst, value 100 src + dst.
    std::vector<int64_t> send_counts(g), recv_counts(g);
    std::vector<float> send;
    for (int d = 0; d < g; ++d) {
      send_counts[d] = (me + 1) * (d + 1);
      send.insert(send.end(), send_counts[d], 100.0f * me + d);
    }
    int64_t total = 0;
    for (int s = 0; s < g; ++s) total += recv_counts[s] = (s + 1) * (me + 1);
    float* d_send = ToDevice(send);
    float* d_recv = ToDevice(std::vector<float>(total, -1.0f));
    ASSERT_TRUE(comm.AllToAllV(absl::Span<const float>(d_send, send.size()), send_counts,
                               absl::Span<float>(d_recv, total), recv_counts)
                    .ok());
    std::vector<float> got = ToHost(d_recv, total);
    size_t at = 0;
    for (int s = 0; s < g; ++s) {
      for (int64_t i = 0; i < recv_counts[s]; ++i) EXPECT_EQ(got[at++], 100.0f * s + me);
    }
    // The same floats and one i32 to every rank (value 10 src + dst) as one grouped all-to-all.
    std::vector<int32_t> tags(g);
    for (int d = 0; d < g; ++d) tags[d] = 10 * me + d;
    int32_t* d_tags = ToDevice(tags);
    int32_t* d_tags_got = ToDevice(std::vector<int32_t>(g, -1));
    float* d_again = ToDevice(std::vector<float>(total, -1.0f));
    const std::vector<int64_t> ones(g, 1);
    using Part = Communicator::AllToAllPart;
    const Part grouped[] = {Part::Of(absl::Span<const float>(d_send, send.size()), send_counts,
                                     absl::Span<float>(d_again, total), recv_counts),
                            Part::Of(absl::Span<const int32_t>(d_tags, g), ones,
                                     absl::Span<int32_t>(d_tags_got, g), ones)};
    ASSERT_TRUE(comm.AllToAllVParts(grouped).ok());
    EXPECT_EQ(ToHost(d_again, total), got);
    std::vector<int32_t> tags_got = ToHost(d_tags_got, g);
    for (int s = 0; s < g; ++s) EXPECT_EQ(tags_got[s], 10 * s + me);
    // Reduce-scatter: segment j has j + 2 elements; rank r's segment sums (rank + 1) + j.
    std::vector<int64_t> counts(g);
    std::vector<float> parts;
    for (int j = 0; j < g; ++j) {
      counts[j] = j + 2;
      for (int64_t i = 0; i < counts[j]; ++i) parts.push_back(me + 1.0f + i);
    }
    float* d_parts = ToDevice(parts);
    float* d_mine = ToDevice(std::vector<float>(counts[me], 0.0f));
    ASSERT_TRUE(comm.ReduceScatterV(absl::Span<const float>(d_parts, parts.size()), counts,
                                    absl::Span<float>(d_mine, counts[me]))
                    .ok());
    got = ToHost(d_mine, counts[me]);
    for (int64_t i = 0; i < counts[me]; ++i) EXPECT_EQ(got[i], g * (g + 1) / 2.0f + g * i);
    // All-gather-v of i32 (rank + 1 copies of the rank), broadcast, all-reduce, barrier.
    std::vector<int64_t> gather_counts(g);
    int64_t gathered = 0;
    for (int r = 0; r < g; ++r) gathered += gather_counts[r] = r + 1;
    int32_t* d_own = ToDevice(std::vector<int32_t>(me + 1, me));
    int32_t* d_all = ToDevice(std::vector<int32_t>(gathered, -1));
    ASSERT_TRUE(comm.AllGatherV(absl::Span<const int32_t>(d_own, me + 1), gather_counts,
                                absl::Span<int32_t>(d_all, gathered))
                    .ok());
    std::vector<int32_t> all = ToHost(d_all, gathered);
    at = 0;
    for (int r = 0; r < g; ++r) {
      for (int i = 0; i <= r; ++i) EXPECT_EQ(all[at++], r);
    }
    int64_t* d_b = ToDevice(std::vector<int64_t>{me == 0 ? 42 : 0});
    ASSERT_TRUE(comm.Broadcast(absl::Span<int64_t>(d_b, 1), 0).ok());
    EXPECT_EQ(ToHost(d_b, 1)[0], 42);
    float* d_sum = ToDevice(std::vector<float>{1.0f, static_cast<float>(me)});
    ASSERT_TRUE(comm.AllReduce(absl::Span<float>(d_sum, 2)).ok());
    EXPECT_EQ(ToHost(d_sum, 2), (std::vector<float>{1.0f * g, g * (g - 1) / 2.0f}));
    ASSERT_TRUE(comm.Barrier().ok());
    EXPECT_EQ(comm.counters()[CollectiveKind::kAllToAll].calls, 2);
    EXPECT_EQ(comm.counters()[CollectiveKind::kReduceScatter].calls, 1);
    for (void* p :
         {static_cast<void*>(d_send), static_cast<void*>(d_recv), static_cast<void*>(d_parts),
          static_cast<void*>(d_mine), static_cast<void*>(d_own), static_cast<void*>(d_all),
          static_cast<void*>(d_b), static_cast<void*>(d_sum), static_cast<void*>(d_tags),
          static_cast<void*>(d_tags_got), static_cast<void*>(d_again)}) {
      cudaFree(p);
    }
  });
}

TEST(NcclCommunicatorTest, BadArgumentsAndMissingDevicesAreErrors) {
  gloo::rendezvous::HashStore store;
  EXPECT_EQ(NcclCommunicator::Create(store, {.rank = 2, .size = 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclCommunicator::Create(store, {.rank = 0, .size = 1, .device = 999}).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace semmoe::engine::gpu
