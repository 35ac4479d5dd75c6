// Communicator: the collectives of an expert-parallel group, independent of the transport
// (Gloo over TCP on CPUs, NCCL on GPUs). Every rank calls the same collectives in the same order
// with consistent counts.
//
// The public methods check arguments (INVALID_ARGUMENT before anything is sent; the group stays
// usable), call the backend, and count bytes. Counters are logical: the bytes the operation must
// move between ranks, independent of the algorithm a backend picks (self-to-self copies excluded):
//   all-to-all-v    sent Σ_{j≠r} send[j],           received Σ_{i≠r} recv[i]
//   reduce-scatter  sent Σ_{j≠r} seg[j],            received (G−1)·seg[r]
//   all-gather-v    sent (G−1)·own,                 received total − own
//   all-reduce      2·(G−1)/G·n each way (ring)
//   broadcast       root sends (G−1)·n, others receive n
// so a test can recompute them from what was exchanged (ep_moe_test does, from the routing).
//
// A backend failure (peer gone, timeout) breaks the group: that call returns UNAVAILABLE or
// DEADLINE_EXCEEDED and every later one FAILED_PRECONDITION; ranks may disagree on what was
// exchanged, so the group must be recreated.
//
// Thread-compatible: one thread issues a communicator's collectives at a time.
#ifndef SEMMOE_ENGINE_PARALLEL_COMMUNICATOR_H_
#define SEMMOE_ENGINE_PARALLEL_COMMUNICATOR_H_

#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace semmoe::engine {

enum class CollectiveKind {
  kAllToAll,
  kReduceScatter,
  kAllGather,
  kAllReduce,
  kBroadcast,
  kBarrier
};
inline constexpr int kNumCollectiveKinds = 6;
const char* CollectiveName(CollectiveKind kind);  // "all_to_all", "reduce_scatter", ...

struct CollectiveCounters {
  int64_t calls = 0;
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  double seconds = 0;  // Wall time inside the backend's calls (waiting for peers included).
};

struct CommCounters {
  CollectiveCounters by_kind[kNumCollectiveKinds];
  const CollectiveCounters& operator[](CollectiveKind k) const {
    return by_kind[static_cast<int>(k)];
  }
  CollectiveCounters& operator[](CollectiveKind k) { return by_kind[static_cast<int>(k)]; }
  int64_t bytes_sent() const;
  int64_t bytes_received() const;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual absl::string_view backend() const = 0;  // "gloo", "nccl", ...

  // Sends send[offset(j) .. +send_counts[j]) to rank j and receives recv_counts[i] elements from
  // rank i into `recv`, in rank order. Counts are elements; each list has size() non-negative
  // entries summing to its span's size. Overloads per element type (spans convert implicitly).
  absl::Status AllToAllV(absl::Span<const float> send, absl::Span<const int64_t> send_counts,
                         absl::Span<float> recv, absl::Span<const int64_t> recv_counts) {
    return AllToAllVOf(send, send_counts, recv, recv_counts);
  }
  absl::Status AllToAllV(absl::Span<const int32_t> send, absl::Span<const int64_t> send_counts,
                         absl::Span<int32_t> recv, absl::Span<const int64_t> recv_counts) {
    return AllToAllVOf(send, send_counts, recv, recv_counts);
  }
  absl::Status AllToAllV(absl::Span<const int64_t> send, absl::Span<const int64_t> send_counts,
                         absl::Span<int64_t> recv, absl::Span<const int64_t> recv_counts) {
    return AllToAllVOf(send, send_counts, recv, recv_counts);
  }
  absl::Status AllToAllV(absl::Span<const char> send, absl::Span<const int64_t> send_counts,
                         absl::Span<char> recv, absl::Span<const int64_t> recv_counts) {
    return AllToAllVOf(send, send_counts, recv, recv_counts);
  }

  // One buffer of a grouped all-to-all-v (AllToAllVParts): the arguments of one AllToAllV, counts
  // in elements of `elem` bytes. Borrows everything; make it with Of().
  struct AllToAllPart {
    const char* send;
    size_t send_size;
    absl::Span<const int64_t> send_counts;
    char* recv;
    size_t recv_size;
    absl::Span<const int64_t> recv_counts;
    size_t elem;

    template <typename T>
    static AllToAllPart Of(absl::Span<const T> send, absl::Span<const int64_t> send_counts,
                           absl::Span<T> recv, absl::Span<const int64_t> recv_counts) {
      return {reinterpret_cast<const char*>(send.data()),
              send.size(),
              send_counts,
              reinterpret_cast<char*>(recv.data()),
              recv.size(),
              recv_counts,
              sizeof(T)};
    }
  };
  // Several all-to-all-v at once, as one collective: the same result as one AllToAllV per part,
  // in one round (Gloo: each peer's segments of every part packed into one message; NCCL: every
  // part's sends and receives in one group). Counted as one all-to-all call with every part's
  // bytes. Each part is checked as AllToAllV checks its arguments.
  absl::Status AllToAllVParts(absl::Span<const AllToAllPart> parts);

  // Rank i contributes counts[i] elements (`send`); every rank receives all contributions in rank
  // order (`recv`, Σ counts elements).
  absl::Status AllGatherV(absl::Span<const float> send, absl::Span<const int64_t> counts,
                          absl::Span<float> recv) {
    return AllGatherVOf(send, counts, recv);
  }
  absl::Status AllGatherV(absl::Span<const int32_t> send, absl::Span<const int64_t> counts,
                          absl::Span<int32_t> recv) {
    return AllGatherVOf(send, counts, recv);
  }
  absl::Status AllGatherV(absl::Span<const int64_t> send, absl::Span<const int64_t> counts,
                          absl::Span<int64_t> recv) {
    return AllGatherVOf(send, counts, recv);
  }

  // `data` on `root` is copied to every rank's `data` (the same size everywhere).
  absl::Status Broadcast(absl::Span<char> data, int root) {
    return BroadcastBytes(data.data(), data.size(), root);
  }
  absl::Status Broadcast(absl::Span<int64_t> data, int root) {
    return BroadcastBytes(reinterpret_cast<char*>(data.data()), data.size() * 8, root);
  }

  // `send` holds one segment per rank (counts[j] elements for rank j; counts equal on every
  // rank); rank r receives into `recv` (counts[r] elements) the sum over ranks of segment r,
  // added in rank order (deterministic, identical for any placement or schedule).
  absl::Status ReduceScatterV(absl::Span<const float> send, absl::Span<const int64_t> counts,
                              absl::Span<float> recv);

  // In place: every rank ends with the element-wise sum over ranks.
  absl::Status AllReduce(absl::Span<float> data);

  absl::Status Barrier();

  const CommCounters& counters() const { return counters_; }

  // How long the collective under way has been waiting (zero when none is): a peer that is
  // stalled, dead or far behind shows here long before the backend's timeout. Thread-safe (the
  // only member that is: a stats thread reads it while the rank's thread runs collectives).
  absl::Duration InCollectiveFor() const;

 protected:
  // Backends implement byte-level transfers; counts are in bytes and already validated.
  virtual absl::Status DoAllToAllV(const char* send, const std::vector<int64_t>& send_bytes,
                                   char* recv, const std::vector<int64_t>& recv_bytes) = 0;
  struct BytePart {
    const char* send;
    std::vector<int64_t> send_bytes;
    char* recv;
    std::vector<int64_t> recv_bytes;
  };
  // Every part's all-to-all-v in one round. The default runs them one after another (a backend
  // without a cheaper way).
  virtual absl::Status DoAllToAllVParts(const std::vector<BytePart>& parts);
  virtual absl::Status DoAllGatherV(const char* send, int64_t send_bytes, char* recv,
                                    const std::vector<int64_t>& recv_bytes) = 0;
  virtual absl::Status DoBroadcast(char* data, int64_t bytes, int root) = 0;
  virtual absl::Status DoReduceScatterSum(const float* send, const std::vector<int64_t>& counts,
                                          float* recv) = 0;
  virtual absl::Status DoAllReduceSum(float* data, int64_t count) = 0;
  virtual absl::Status DoBarrier() = 0;

 private:
  template <typename T>
  absl::Status AllToAllVOf(absl::Span<const T> send, absl::Span<const int64_t> send_counts,
                           absl::Span<T> recv, absl::Span<const int64_t> recv_counts) {
    return AllToAllVBytes(reinterpret_cast<const char*>(send.data()), send.size(), send_counts,
                          reinterpret_cast<char*>(recv.data()), recv.size(), recv_counts,
                          sizeof(T));
  }
  template <typename T>
  absl::Status AllGatherVOf(absl::Span<const T> send, absl::Span<const int64_t> counts,
                            absl::Span<T> recv) {
    return AllGatherVBytes(reinterpret_cast<const char*>(send.data()), send.size(), counts,
                           reinterpret_cast<char*>(recv.data()), recv.size(), sizeof(T));
  }
  absl::Status AllToAllVBytes(const char* send, size_t send_size,
                              absl::Span<const int64_t> send_counts, char* recv, size_t recv_size,
                              absl::Span<const int64_t> recv_counts, size_t elem);
  absl::Status AllGatherVBytes(const char* send, size_t send_size, absl::Span<const int64_t> counts,
                               char* recv, size_t recv_size, size_t elem);
  absl::Status BroadcastBytes(char* data, size_t size, int root);

  // Marks a backend call under way for InCollectiveFor and adds its wall time to `kind`'s
  // counters.
  class Busy {
   public:
    Busy(Communicator& c, CollectiveKind kind);
    ~Busy();

   private:
    Communicator& c_;
    CollectiveKind kind_;
    int64_t start_ns_;
  };

  CommCounters counters_;
  std::atomic<int64_t> busy_since_ns_{0};  // absl::GetCurrentTimeNanos() at entry; 0: idle.
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_COMMUNICATOR_H_
