#include "engine/gpu/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/segment_sum.h"

namespace semmoe::engine::gpu {
namespace {

absl::Status NcclStatus(ncclResult_t r, const char* call) {
  if (r == ncclSuccess || r == ncclInProgress) return absl::OkStatus();
  const std::string message = absl::StrCat(call, ": NCCL ", ncclGetErrorString(r));
  switch (r) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return absl::InvalidArgumentError(message);
    case ncclRemoteError:
    case ncclSystemError:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

#define NCCL_RETURN_IF_ERROR(call) RETURN_IF_ERROR(NcclStatus((call), #call))

}  // namespace

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  absl::Duration timeout;
  absl::Status broken;
  float* scratch = nullptr;  // Reduce-scatter staging; grows.
  int64_t scratch_floats = 0;

  ~Impl() {
    if (comm != nullptr) {
      if (broken.ok()) {
        ncclCommDestroy(comm);
      } else {
        ncclCommAbort(comm);
      }
    }
    if (scratch != nullptr) cudaFree(scratch);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  // Waits for NCCL's (non-blocking) calls to be enqueued and the stream to drain, polling for
  // asynchronous errors; aborts past the timeout.
  absl::Status Wait(absl::string_view what) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      ncclResult_t async = ncclSuccess;
      NCCL_RETURN_IF_ERROR(ncclCommGetAsyncError(comm, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        return Fail(NcclStatus(async, std::string(what).c_str()));
      }
      if (async == ncclSuccess) {
        const cudaError_t q = cudaStreamQuery(stream);
        if (q == cudaSuccess) return absl::OkStatus();
        if (q != cudaErrorNotReady) {
          return Fail(kernels::cuda::CudaStatus(q, "cudaStreamQuery", __FILE__, __LINE__));
        }
      }
      if (absl::Now() > deadline) {
        return Fail(absl::DeadlineExceededError(absl::StrCat(
            what, ": not complete after ", absl::FormatDuration(timeout), " (a peer is missing)")));
      }
      absl::SleepFor(absl::Microseconds(20));
    }
  }

  absl::Status Fail(absl::Status status) {
    broken = status;
    return status;
  }

  absl::Status Check(absl::string_view what) {
    if (!broken.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": the group failed earlier and must be recreated (", broken.message(), ")"));
    }
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    return absl::OkStatus();
  }

  absl::Status EnsureScratch(int64_t floats) {
    if (floats <= scratch_floats) return absl::OkStatus();
    if (scratch != nullptr) cudaFree(scratch);
    scratch = nullptr;
    scratch_floats = 0;
    CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void**>(&scratch), floats * sizeof(float)));
    scratch_floats = floats;
    return absl::OkStatus();
  }
};

NcclCommunicator::NcclCommunicator(int rank, int size, std::unique_ptr<Impl> impl)
    : rank_(rank), size_(size), impl_(std::move(impl)) {}

NcclCommunicator::~NcclCommunicator() = default;

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(
    gloo::rendezvous::Store& store, const NcclOptions& o) {
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl: rank ", o.rank, " is not in a group of ", o.size));
  }
  ASSIGN_OR_RETURN(int devices, kernels::cuda::DeviceCount());
  if (o.device < 0 || o.device >= devices) {
    return absl::UnavailableError(
        absl::StrCat("nccl: CUDA device ", o.device, " of ", devices, " does not exist"));
  }
  auto impl = std::make_unique<Impl>();
  impl->device = o.device;
  impl->timeout = o.timeout;
  CUDA_RETURN_IF_ERROR(cudaSetDevice(o.device));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&impl->stream, cudaStreamNonBlocking));

  // The unique id travels through the rendezvous store (Gloo's stores throw on failure).
  ncclUniqueId id;
  const std::string key = absl::StrCat(o.prefix, "/unique_id");
  try {
    if (o.rank == 0) {
      NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id));
      const char* bytes = reinterpret_cast<const char*>(&id);
      store.set(key, std::vector<char>(bytes, bytes + sizeof(id)));
    } else {
      store.wait({key}, std::chrono::milliseconds(absl::ToInt64Milliseconds(o.timeout)));
      const std::vector<char> bytes = store.get(key);
      if (bytes.size() != sizeof(id)) {
        return absl::InternalError(
            absl::StrCat("nccl: the unique id in the store has ", bytes.size(), " bytes"));
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("nccl rendezvous: ", e.what()));
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // So a missing peer is a timeout, not a hang.
  NCCL_RETURN_IF_ERROR(ncclCommInitRankConfig(&impl->comm, o.size, id, o.rank, &config));
  const absl::Time deadline = absl::Now() + o.timeout;
  while (true) {
    ncclResult_t state = ncclSuccess;
    NCCL_RETURN_IF_ERROR(ncclCommGetAsyncError(impl->comm, &state));
    if (state == ncclSuccess) break;
    if (state != ncclInProgress) return impl->Fail(NcclStatus(state, "ncclCommInitRankConfig"));
    if (absl::Now() > deadline) {
      return impl->Fail(absl::DeadlineExceededError(
          absl::StrCat("nccl: rank ", o.rank, "/", o.size, " rendezvous timed out")));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(o.rank, o.size, std::move(impl)));
}

absl::Status NcclCommunicator::DoAllToAllV(const char* send, const std::vector<int64_t>& send_bytes,
                                           char* recv, const std::vector<int64_t>& recv_bytes) {
  return DoAllToAllVParts({{send, send_bytes, recv, recv_bytes}});
}

absl::Status NcclCommunicator::DoAllToAllVParts(const std::vector<BytePart>& parts) {
  // Every part's sends and receives in one group: one launch, the peers' transfers concurrent.
  RETURN_IF_ERROR(impl_->Check("all-to-all-v"));
  NCCL_RETURN_IF_ERROR(ncclGroupStart());
  for (const BytePart& p : parts) {
    int64_t send_at = 0, recv_at = 0;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && p.send_bytes[r] > 0) {
        NCCL_RETURN_IF_ERROR(
            ncclSend(p.send + send_at, p.send_bytes[r], ncclChar, r, impl_->comm, impl_->stream));
      }
      if (r != rank_ && p.recv_bytes[r] > 0) {
        NCCL_RETURN_IF_ERROR(
            ncclRecv(p.recv + recv_at, p.recv_bytes[r], ncclChar, r, impl_->comm, impl_->stream));
      }
      send_at += p.send_bytes[r];
      recv_at += p.recv_bytes[r];
    }
  }
  NCCL_RETURN_IF_ERROR(ncclGroupEnd());
  for (const BytePart& p : parts) {
    if (p.send_bytes[rank_] <= 0) continue;
    int64_t self_send = 0, self_recv = 0;
    for (int r = 0; r < rank_; ++r) {
      self_send += p.send_bytes[r];
      self_recv += p.recv_bytes[r];
    }
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(p.recv + self_recv, p.send + self_send,
                                         p.send_bytes[rank_], cudaMemcpyDeviceToDevice,
                                         impl_->stream));
  }
  return impl_->Wait("all-to-all-v");
}

absl::Status NcclCommunicator::DoAllGatherV(const char* send, int64_t send_bytes, char* recv,
                                            const std::vector<int64_t>& recv_bytes) {
  RETURN_IF_ERROR(impl_->Check("all-gather-v"));
  int64_t at = 0, mine = 0;
  NCCL_RETURN_IF_ERROR(ncclGroupStart());
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) {
      mine = at;
    } else {
      if (send_bytes > 0) {
        NCCL_RETURN_IF_ERROR(ncclSend(send, send_bytes, ncclChar, r, impl_->comm, impl_->stream));
      }
      if (recv_bytes[r] > 0) {
        NCCL_RETURN_IF_ERROR(
            ncclRecv(recv + at, recv_bytes[r], ncclChar, r, impl_->comm, impl_->stream));
      }
    }
    at += recv_bytes[r];
  }
  NCCL_RETURN_IF_ERROR(ncclGroupEnd());
  if (send_bytes > 0) {
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(recv + mine, send, send_bytes, cudaMemcpyDeviceToDevice, impl_->stream));
  }
  return impl_->Wait("all-gather-v");
}

absl::Status NcclCommunicator::DoBroadcast(char* data, int64_t bytes, int root) {
  RETURN_IF_ERROR(impl_->Check("broadcast"));
  NCCL_RETURN_IF_ERROR(
      ncclBroadcast(data, data, bytes, ncclChar, root, impl_->comm, impl_->stream));
  return impl_->Wait("broadcast");
}

absl::Status NcclCommunicator::DoReduceScatterSum(const float* send,
                                                  const std::vector<int64_t>& counts, float* recv) {
  RETURN_IF_ERROR(impl_->Check("reduce-scatter"));
  const int64_t mine = counts[rank_];
  RETURN_IF_ERROR(impl_->EnsureScratch(std::max<int64_t>(1, mine * size_)));
  std::vector<int64_t> send_bytes(counts), recv_bytes(size_, mine * 4);
  for (int64_t& b : send_bytes) b *= 4;
  RETURN_IF_ERROR(DoAllToAllV(reinterpret_cast<const char*>(send), send_bytes,
                              reinterpret_cast<char*>(impl_->scratch), recv_bytes));
  CUDA_RETURN_IF_ERROR(kernels::cuda::LaunchSegmentSum(
      {.in = impl_->scratch, .segments = size_, .n = mine, .out = recv}, impl_->stream));
  return impl_->Wait("reduce-scatter");
}

absl::Status NcclCommunicator::DoAllReduceSum(float* data, int64_t count) {
  RETURN_IF_ERROR(impl_->Check("all-reduce"));
  NCCL_RETURN_IF_ERROR(
      ncclAllReduce(data, data, count, ncclFloat, ncclSum, impl_->comm, impl_->stream));
  return impl_->Wait("all-reduce");
}

absl::Status NcclCommunicator::DoBarrier() {
  RETURN_IF_ERROR(impl_->Check("barrier"));
  RETURN_IF_ERROR(impl_->EnsureScratch(1));
  NCCL_RETURN_IF_ERROR(ncclAllReduce(impl_->scratch, impl_->scratch, 1, ncclFloat, ncclSum,
                                     impl_->comm, impl_->stream));
  return impl_->Wait("barrier");
}

}  // namespace semmoe::engine::gpu
