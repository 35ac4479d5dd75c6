#include "engine/parallel/gloo_communicator.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"
#include "kernels/cpu/segment_sum.h"

namespace semmoe::engine {
namespace {

// The slot prefix of DoAllToAllV's pairwise messages: one Gloo's own collectives do not use
// (gloo/types.h takes 0x01-0x08).
constexpr uint8_t kSparseAllToAllSlotPrefix = 0x40;

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

}  // namespace

GlooCommunicator::GlooCommunicator(std::shared_ptr<gloo::Context> context, int rank, int size)
    : context_(std::move(context)), rank_(rank), size_(size) {}

absl::StatusOr<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Create(
    gloo::rendezvous::Store& store, const GlooOptions& options) {
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
    const absl::Duration connect =
        options.connect_timeout > absl::ZeroDuration() ? options.connect_timeout : options.timeout;
    context->setTimeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(connect)));
    gloo::rendezvous::PrefixStore prefixed(options.prefix, store);
    context->connectFullMesh(prefixed, device);
    // connectFullMesh returns when this rank's side of every pair is up. A barrier makes Create
    // return only once every rank's mesh is complete, so a rank that finishes early cannot close
    // sockets a slower rank is still setting up.
    gloo::BarrierOptions barrier(context);
    barrier.setTag(0);
    gloo::barrier(barrier);
    context->setTimeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(options.timeout)));
  }));
  return std::unique_ptr<GlooCommunicator>(
      new GlooCommunicator(std::move(context), options.rank, options.size));
}

absl::Status GlooCommunicator::DoAllToAllV(const char* send, const std::vector<int64_t>& send_bytes,
                                           char* recv, const std::vector<int64_t>& recv_bytes) {
  // Only the pairs that move bytes exchange a message. gloo::alltoallv sends every peer one, empty
  // or not, and waits for all; the node exchange's stages (node_exchange.h) have bytes for one
  // peer in G − 1 or a node's ranks only, and an idle rank's dispatch for none. Both sides know
  // the counts (the receiver's recv_bytes[src] > 0 exactly when src sends it bytes: the counts
  // are exchanged or derived alike), so each pair agrees on whether a message comes.
  const int g = size_, me = rank_;
  std::vector<size_t> in_at(g, 0), out_at(g, 0);
  for (int r = 1; r < g; ++r) {
    in_at[r] = in_at[r - 1] + static_cast<size_t>(send_bytes[r - 1]);
    out_at[r] = out_at[r - 1] + static_cast<size_t>(recv_bytes[r - 1]);
  }
  const size_t in_total = in_at[g - 1] + static_cast<size_t>(send_bytes[g - 1]);
  const size_t out_total = out_at[g - 1] + static_cast<size_t>(recv_bytes[g - 1]);
  // Gloo wants non-null buffers even when nothing moves.
  char empty_in = 0, empty_out = 0;
  char* in_ptr = send == nullptr ? &empty_in : const_cast<char*>(send);  // Gloo reads only.
  char* out_ptr = recv == nullptr ? &empty_out : recv;
  return Run("all-to-all-v", [&] {
    if (send_bytes[me] > 0) {
      std::memcpy(out_ptr + out_at[me], in_ptr + in_at[me], static_cast<size_t>(send_bytes[me]));
    }
    std::unique_ptr<gloo::transport::UnboundBuffer> in =
        context_->createUnboundBuffer(in_ptr, in_total);
    std::unique_ptr<gloo::transport::UnboundBuffer> out =
        context_->createUnboundBuffer(out_ptr, out_total);
    const uint64_t slot = gloo::Slot::build(kSparseAllToAllSlotPrefix, NextTag());
    int sends = 0, recvs = 0;
    for (int i = 1; i < g; ++i) {
      const int to = (me + i) % g, from = (me + g - i) % g;
      if (send_bytes[to] > 0) {
        in->send(to, slot, in_at[to], static_cast<size_t>(send_bytes[to]));
        ++sends;
      }
      if (recv_bytes[from] > 0) {
        out->recv(from, slot, out_at[from], static_cast<size_t>(recv_bytes[from]));
        ++recvs;
      }
    }
    const std::chrono::milliseconds timeout = context_->getTimeout();
    for (; sends > 0; --sends) in->waitSend(timeout);
    for (; recvs > 0; --recvs) out->waitRecv(timeout);
  });
}

absl::Status GlooCommunicator::DoAllToAllVParts(const std::vector<BytePart>& parts) {
  // One Gloo all-to-all-v: each peer's segments of every part, packed in part order, travel as
  // one message. A collective here costs its latency (about a millisecond through the lab's
  // veths) far more than these copies.
  const int g = size_;
  std::vector<int64_t> send_bytes(g, 0), recv_bytes(g, 0);
  for (const BytePart& p : parts) {
    for (int r = 0; r < g; ++r) {
      send_bytes[r] += p.send_bytes[r];
      recv_bytes[r] += p.recv_bytes[r];
    }
  }
  int64_t send_total = 0, recv_total = 0;
  for (int r = 0; r < g; ++r) {
    send_total += send_bytes[r];
    recv_total += recv_bytes[r];
  }
  // Kept across calls (every MoE layer's dispatch packs): resized, not allocated anew.
  std::vector<char>& packed = packed_;
  std::vector<char>& arrived = arrived_;
  packed.resize(static_cast<size_t>(send_total));
  arrived.resize(static_cast<size_t>(recv_total));
  // Part p's segment for rank r sits at (r's start) + (parts before p's segments for r).
  std::vector<int64_t> at(g, 0);
  for (int r = 1; r < g; ++r) at[r] = at[r - 1] + send_bytes[r - 1];
  for (const BytePart& p : parts) {
    int64_t from = 0;
    for (int r = 0; r < g; ++r) {
      if (p.send_bytes[r] > 0) std::memcpy(packed.data() + at[r], p.send + from, p.send_bytes[r]);
      at[r] += p.send_bytes[r];
      from += p.send_bytes[r];
    }
  }
  RETURN_IF_ERROR(DoAllToAllV(packed.empty() ? nullptr : packed.data(), send_bytes,
                              arrived.empty() ? nullptr : arrived.data(), recv_bytes));
  at.assign(g, 0);
  for (int r = 1; r < g; ++r) at[r] = at[r - 1] + recv_bytes[r - 1];
  for (const BytePart& p : parts) {
    int64_t to = 0;
    for (int r = 0; r < g; ++r) {
      if (p.recv_bytes[r] > 0) std::memcpy(p.recv + to, arrived.data() + at[r], p.recv_bytes[r]);
      at[r] += p.recv_bytes[r];
      to += p.recv_bytes[r];
    }
  }
  return absl::OkStatus();
}

absl::Status GlooCommunicator::DoAllGatherV(const char* send, int64_t send_bytes, char* recv,
                                            const std::vector<int64_t>& recv_bytes) {
  // Built from all-to-all-v (this rank's block sent to every rank at once) rather than Gloo's
  // allgatherv, a ring of size − 1 steps each waiting on the last: the same bytes per rank, one
  // round trip instead of size − 1. The collectives before each MoE layer's dispatch (the holder
  // choice's gather, the step agreement) are small, so their latency is their cost.
  std::vector<char> copies(static_cast<size_t>(send_bytes) * size_);
  for (int r = 0; r < size_; ++r) {
    if (send_bytes > 0) std::memcpy(copies.data() + r * send_bytes, send, send_bytes);
  }
  return DoAllToAllV(copies.empty() ? nullptr : copies.data(),
                     std::vector<int64_t>(size_, send_bytes), recv, recv_bytes);
}

absl::Status GlooCommunicator::DoBroadcast(char* data, int64_t bytes, int root) {
  return Run("broadcast", [&] {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(data, static_cast<size_t>(bytes));
    opts.setRoot(root);
    opts.setTag(NextTag());
    gloo::broadcast(opts);
  });
}

absl::Status GlooCommunicator::DoReduceScatterSum(const float* send,
                                                  const std::vector<int64_t>& counts, float* recv) {
  // Built from all-to-all-v and a local sum rather than Gloo's legacy
  // ReduceScatterHalvingDoubling, which shrinks the sockets' send buffers for every later op.
  const int64_t mine = counts[rank_];
  std::vector<float> gathered(static_cast<size_t>(mine) * size_);
  std::vector<int64_t> send_bytes(counts), recv_bytes(size_, mine * 4);
  for (int64_t& b : send_bytes) b *= 4;
  RETURN_IF_ERROR(DoAllToAllV(reinterpret_cast<const char*>(send), send_bytes,
                              reinterpret_cast<char*>(gathered.data()), recv_bytes));
  kernels::cpu::SegmentSum({.in = gathered.data(), .segments = size_, .n = mine, .out = recv});
  return absl::OkStatus();
}

absl::Status GlooCommunicator::DoAllReduceSum(float* data, int64_t count) {
  return Run("all-reduce", [&] {
    gloo::AllreduceOptions opts(context_);
    opts.setOutput(data, static_cast<size_t>(count));
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(NextTag());
    gloo::allreduce(opts);
  });
}

absl::Status GlooCommunicator::DoBarrier() {
  return Run("barrier", [&] {
    gloo::BarrierOptions opts(context_);
    opts.setTag(NextTag());
    gloo::barrier(opts);
  });
}

template <typename Fn>
absl::Status GlooCommunicator::Run(absl::string_view what, Fn&& fn) {
  if (!broken_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the group failed earlier and must be recreated (", broken_.message(), ")"));
  }
  absl::Status status = Guarded(what, std::forward<Fn>(fn));
  if (!status.ok()) broken_ = status;
  return status;
}

}  // namespace semmoe::engine
