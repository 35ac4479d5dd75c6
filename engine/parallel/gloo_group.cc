#include "engine/parallel/gloo_group.h"

#include <chrono>
#include <exception>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/alltoallv.h"
#include "gloo/barrier.h"
#include "gloo/common/error.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"

namespace semmoe::engine {
namespace {

// Runs `fn`, turning any exception Gloo throws into a Status for `what`.
template <typename Fn>
absl::Status Guarded(absl::string_view what, Fn&& fn) {
  try {
    fn();
    return absl::OkStatus();
  } catch (const gloo::IoException& e) {
    const std::string message = e.what();
    if (message.find("imed out") != std::string::npos) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": ", message));
    }
    return absl::UnavailableError(absl::StrCat(what, ": ", message));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

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

int64_t Bytes(int64_t elements) { return elements * static_cast<int64_t>(sizeof(float)); }

}  // namespace

GlooGroup::GlooGroup(std::shared_ptr<gloo::Context> context, int rank, int size)
    : context_(std::move(context)), rank_(rank), size_(size) {}

absl::StatusOr<std::unique_ptr<GlooGroup>> GlooGroup::Create(gloo::rendezvous::Store& store,
                                                             const GlooGroupOptions& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("gloo group: rank ", options.rank, " is not in a group of ", options.size));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("gloo group: timeout must be positive");
  }
  std::shared_ptr<gloo::rendezvous::Context> context;
  RETURN_IF_ERROR(Guarded("gloo group rendezvous", [&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
    context->setTimeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(options.timeout)));
    gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
    context->connectFullMesh(prefixed, device);
    // connectFullMesh returns when this rank's side of every pair is up. A barrier makes Create
    // return only once every rank's mesh is complete, so a rank that finishes early cannot close
    // sockets a slower rank is still setting up.
    gloo::BarrierOptions barrier(context);
    barrier.setTag(0);
    gloo::barrier(barrier);
  }));
  return std::unique_ptr<GlooGroup>(new GlooGroup(std::move(context), options.rank, options.size));
}

absl::Status GlooGroup::AllToAllV(absl::Span<const float> send,
                                  absl::Span<const int64_t> send_counts, absl::Span<float> recv,
                                  absl::Span<const int64_t> recv_counts) {
  RETURN_IF_ERROR(CheckCounts("all-to-all-v send", send_counts, size_, send.size()));
  RETURN_IF_ERROR(CheckCounts("all-to-all-v recv", recv_counts, size_, recv.size()));
  // Gloo wants non-null buffers even when nothing moves.
  float empty_in = 0, empty_out = 0;
  float* in = send.empty() ? &empty_in : const_cast<float*>(send.data());  // Gloo reads only.
  float* out = recv.empty() ? &empty_out : recv.data();
  RETURN_IF_ERROR(Run("all-to-all-v", [&] {
    gloo::AlltoallvOptions opts(context_);
    opts.setInput(in, std::vector<int64_t>(send_counts.begin(), send_counts.end()));
    opts.setOutput(out, std::vector<int64_t>(recv_counts.begin(), recv_counts.end()));
    opts.setTag(NextTag());
    gloo::alltoallv(opts);
  }));
  ++counters_.collectives;
  counters_.bytes_sent += Bytes(static_cast<int64_t>(send.size()) - send_counts[rank_]);
  counters_.bytes_received += Bytes(static_cast<int64_t>(recv.size()) - recv_counts[rank_]);
  return absl::OkStatus();
}

absl::Status GlooGroup::ReduceScatterSum(absl::Span<const float> send,
                                         absl::Span<const int64_t> counts, absl::Span<float> recv) {
  RETURN_IF_ERROR(CheckCounts("reduce-scatter", counts, size_, send.size()));
  if (static_cast<size_t>(counts[rank_]) != recv.size()) {
    return absl::InvalidArgumentError(absl::StrCat("reduce-scatter: rank ", rank_, " receives ",
                                                   counts[rank_], " elements into a buffer of ",
                                                   recv.size()));
  }
  // Built from the options API (an all-to-all-v and a local sum) rather than Gloo's legacy
  // ReduceScatterHalvingDoubling, which shrinks the sockets' send buffers for every later op.
  const int64_t mine = counts[rank_];
  std::vector<float> gathered(static_cast<size_t>(mine) * size_);
  const std::vector<int64_t> recv_counts(size_, mine);
  RETURN_IF_ERROR(AllToAllV(send, counts, absl::MakeSpan(gathered), recv_counts));
  for (int64_t i = 0; i < mine; ++i) {
    float sum = 0;
    for (int r = 0; r < size_; ++r) sum += gathered[static_cast<size_t>(r) * mine + i];
    recv[i] = sum;
  }
  return absl::OkStatus();
}

absl::Status GlooGroup::AllGatherV(absl::Span<const float> send, absl::Span<const int64_t> counts,
                                   absl::Span<float> recv) {
  RETURN_IF_ERROR(CheckCounts("all-gather-v", counts, size_, recv.size()));
  if (static_cast<size_t>(counts[rank_]) != send.size()) {
    return absl::InvalidArgumentError(absl::StrCat("all-gather-v: rank ", rank_, " sends ",
                                                   send.size(), " elements but counts say ",
                                                   counts[rank_]));
  }
  float empty_in = 0, empty_out = 0;
  float* in = send.empty() ? &empty_in : const_cast<float*>(send.data());  // Gloo reads only.
  float* out = recv.empty() ? &empty_out : recv.data();
  RETURN_IF_ERROR(Run("all-gather-v", [&] {
    gloo::AllgathervOptions opts(context_);
    opts.setInput(in, send.size());
    opts.setOutput(out, std::vector<size_t>(counts.begin(), counts.end()));
    opts.setTag(NextTag());
    gloo::allgatherv(opts);
  }));
  ++counters_.collectives;
  counters_.bytes_sent += Bytes(static_cast<int64_t>(send.size()) * (size_ - 1));
  counters_.bytes_received += Bytes(static_cast<int64_t>(recv.size() - send.size()));
  return absl::OkStatus();
}

absl::Status GlooGroup::AllReduceSum(absl::Span<float> data) {
  if (data.empty() || size_ == 1) {
    ++counters_.collectives;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Run("all-reduce", [&] {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data.data(), data.size());
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(NextTag());
    gloo::allreduce(opts);
  }));
  ++counters_.collectives;
  // Ring all-reduce moves 2 (G-1)/G of the buffer each way per rank.
  const int64_t moved = Bytes(static_cast<int64_t>(data.size())) * 2 * (size_ - 1) / size_;
  counters_.bytes_sent += moved;
  counters_.bytes_received += moved;
  return absl::OkStatus();
}

absl::Status GlooGroup::Barrier() {
  RETURN_IF_ERROR(Run("barrier", [&] {
    gloo::BarrierOptions opts(context_);
    opts.setTag(NextTag());
    gloo::barrier(opts);
  }));
  ++counters_.collectives;
  return absl::OkStatus();
}

template <typename Fn>
absl::Status GlooGroup::Run(absl::string_view what, Fn&& fn) {
  if (!broken_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the group failed earlier and must be recreated (", broken_.message(), ")"));
  }
  absl::Status status = Guarded(what, std::forward<Fn>(fn));
  if (!status.ok()) broken_ = status;
  return status;
}

}  // namespace semmoe::engine
