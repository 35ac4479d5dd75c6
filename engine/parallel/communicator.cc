#include "engine/parallel/communicator.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"

namespace semmoe::engine {
namespace {

absl::Status CheckCounts(absl::string_view what, absl::Span<const int64_t> counts, int size,
                         size_t elements) {
  if (static_cast<int>(counts.size()) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", counts.size(), " counts for a group of ", size));
  }
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": negative count in [", absl::StrJoin(counts, ", "), "]"));
    }
    total += c;
  }
  if (static_cast<size_t>(total) != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": counts sum to ", total, " but the buffer holds ", elements));
  }
  return absl::OkStatus();
}

std::vector<int64_t> Scaled(absl::Span<const int64_t> counts, size_t elem) {
  std::vector<int64_t> bytes(counts.begin(), counts.end());
  for (int64_t& b : bytes) b *= static_cast<int64_t>(elem);
  return bytes;
}

int64_t Sum(absl::Span<const int64_t> v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

}  // namespace

const char* CollectiveName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "unknown";
}

Communicator::Busy::Busy(Communicator& c, CollectiveKind kind)
    : c_(c), kind_(kind), start_ns_(absl::GetCurrentTimeNanos()) {
  c_.busy_since_ns_.store(start_ns_, std::memory_order_relaxed);
}

Communicator::Busy::~Busy() {
  c_.busy_since_ns_.store(0, std::memory_order_relaxed);
  c_.counters_[kind_].seconds += (absl::GetCurrentTimeNanos() - start_ns_) * 1e-9;
}

absl::Duration Communicator::InCollectiveFor() const {
  const int64_t since = busy_since_ns_.load(std::memory_order_relaxed);
  if (since == 0) return absl::ZeroDuration();
  return absl::Nanoseconds(absl::GetCurrentTimeNanos() - since);
}

int64_t CommCounters::bytes_sent() const {
  int64_t total = 0;
  for (const CollectiveCounters& c : by_kind) total += c.bytes_sent;
  return total;
}

int64_t CommCounters::bytes_received() const {
  int64_t total = 0;
  for (const CollectiveCounters& c : by_kind) total += c.bytes_received;
  return total;
}

absl::Status Communicator::AllToAllVBytes(const char* send, size_t send_size,
                                          absl::Span<const int64_t> send_counts, char* recv,
                                          size_t recv_size, absl::Span<const int64_t> recv_counts,
                                          size_t elem) {
  RETURN_IF_ERROR(CheckCounts("all-to-all-v send", send_counts, size(), send_size));
  RETURN_IF_ERROR(CheckCounts("all-to-all-v recv", recv_counts, size(), recv_size));
  const std::vector<int64_t> send_bytes = Scaled(send_counts, elem);
  const std::vector<int64_t> recv_bytes = Scaled(recv_counts, elem);
  {
    Busy busy(*this, CollectiveKind::kAllToAll);
    RETURN_IF_ERROR(DoAllToAllV(send, send_bytes, recv, recv_bytes));
  }
  CollectiveCounters& c = counters_[CollectiveKind::kAllToAll];
  ++c.calls;
  c.bytes_sent += Sum(send_bytes) - send_bytes[rank()];
  c.bytes_received += Sum(recv_bytes) - recv_bytes[rank()];
  return absl::OkStatus();
}

absl::Status Communicator::AllToAllVParts(absl::Span<const AllToAllPart> parts) {
  std::vector<BytePart> bytes;
  bytes.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const AllToAllPart& p = parts[i];
    const std::string what = absl::StrCat("all-to-all-v part ", i);
    RETURN_IF_ERROR(CheckCounts(absl::StrCat(what, " send"), p.send_counts, size(), p.send_size));
    RETURN_IF_ERROR(CheckCounts(absl::StrCat(what, " recv"), p.recv_counts, size(), p.recv_size));
    bytes.push_back({p.send, Scaled(p.send_counts, p.elem), p.recv, Scaled(p.recv_counts, p.elem)});
  }
  {
    Busy busy(*this, CollectiveKind::kAllToAll);
    RETURN_IF_ERROR(DoAllToAllVParts(bytes));
  }
  CollectiveCounters& c = counters_[CollectiveKind::kAllToAll];
  ++c.calls;
  for (const BytePart& p : bytes) {
    c.bytes_sent += Sum(p.send_bytes) - p.send_bytes[rank()];
    c.bytes_received += Sum(p.recv_bytes) - p.recv_bytes[rank()];
  }
  return absl::OkStatus();
}

absl::Status Communicator::DoAllToAllVParts(const std::vector<BytePart>& parts) {
  for (const BytePart& p : parts) {
    RETURN_IF_ERROR(DoAllToAllV(p.send, p.send_bytes, p.recv, p.recv_bytes));
  }
  return absl::OkStatus();
}

absl::Status Communicator::AllGatherVBytes(const char* send, size_t send_size,
                                           absl::Span<const int64_t> counts, char* recv,
                                           size_t recv_size, size_t elem) {
  RETURN_IF_ERROR(CheckCounts("all-gather-v", counts, size(), recv_size));
  if (static_cast<size_t>(counts[rank()]) != send_size) {
    return absl::InvalidArgumentError(absl::StrCat("all-gather-v: rank ", rank(), " sends ",
                                                   send_size, " elements but counts say ",
                                                   counts[rank()]));
  }
  const std::vector<int64_t> bytes = Scaled(counts, elem);
  {
    Busy busy(*this, CollectiveKind::kAllGather);
    RETURN_IF_ERROR(DoAllGatherV(send, bytes[rank()], recv, bytes));
  }
  CollectiveCounters& c = counters_[CollectiveKind::kAllGather];
  ++c.calls;
  c.bytes_sent += bytes[rank()] * (size() - 1);
  c.bytes_received += Sum(bytes) - bytes[rank()];
  return absl::OkStatus();
}

absl::Status Communicator::BroadcastBytes(char* data, size_t size_bytes, int root) {
  if (root < 0 || root >= size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is not in a group of ", size()));
  }
  if (size() > 1 && size_bytes > 0) {
    Busy busy(*this, CollectiveKind::kBroadcast);
    RETURN_IF_ERROR(DoBroadcast(data, static_cast<int64_t>(size_bytes), root));
  }
  CollectiveCounters& c = counters_[CollectiveKind::kBroadcast];
  ++c.calls;
  const int64_t n = static_cast<int64_t>(size_bytes);
  if (rank() == root) {
    c.bytes_sent += n * (size() - 1);
  } else {
    c.bytes_received += n;
  }
  return absl::OkStatus();
}

absl::Status Communicator::ReduceScatterV(absl::Span<const float> send,
                                          absl::Span<const int64_t> counts,
                                          absl::Span<float> recv) {
  RETURN_IF_ERROR(CheckCounts("reduce-scatter", counts, size(), send.size()));
  if (static_cast<size_t>(counts[rank()]) != recv.size()) {
    return absl::InvalidArgumentError(absl::StrCat("reduce-scatter: rank ", rank(), " receives ",
                                                   counts[rank()], " elements into a buffer of ",
                                                   recv.size()));
  }
  const std::vector<int64_t> elems(counts.begin(), counts.end());
  {
    Busy busy(*this, CollectiveKind::kReduceScatter);
    RETURN_IF_ERROR(DoReduceScatterSum(send.data(), elems, recv.data()));
  }
  CollectiveCounters& c = counters_[CollectiveKind::kReduceScatter];
  ++c.calls;
  const int64_t f = sizeof(float);
  c.bytes_sent += (Sum(counts) - counts[rank()]) * f;
  c.bytes_received += counts[rank()] * (size() - 1) * f;
  return absl::OkStatus();
}

absl::Status Communicator::AllReduce(absl::Span<float> data) {
  if (size() > 1 && !data.empty()) {
    Busy busy(*this, CollectiveKind::kAllReduce);
    RETURN_IF_ERROR(DoAllReduceSum(data.data(), static_cast<int64_t>(data.size())));
  }
  CollectiveCounters& c = counters_[CollectiveKind::kAllReduce];
  ++c.calls;
  const int64_t moved =
      static_cast<int64_t>(data.size() * sizeof(float)) * 2 * (size() - 1) / size();
  c.bytes_sent += moved;
  c.bytes_received += moved;
  return absl::OkStatus();
}

absl::Status Communicator::Barrier() {
  if (size() > 1) {
    Busy busy(*this, CollectiveKind::kBarrier);
    RETURN_IF_ERROR(DoBarrier());
  }
  ++counters_[CollectiveKind::kBarrier].calls;
  return absl::OkStatus();
}

}  // namespace semmoe::engine
