// The CUDA device backend (engine/backend/device_backend.h): the GPU forward of engine/gpu behind
// the engine's backend interface. Linked (alwayslink) into the engine only where the build has
// the CUDA toolkit; it registers itself as "cuda" before main() runs.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/backend/device_backend.h"
#include "engine/gpu/gpu_batch.h"
#include "engine/gpu/gpu_prefill.h"
#include "engine/gpu/gpu_serving_rank.h"
#include "kernels/cuda/cuda_status.h"

namespace semmoe::engine::gpu {
namespace {

std::string Describe(int device, const GpuTransformer& forward) {
  return absl::StrCat("CUDA device ", device, " (", forward.weight_bytes() / (1 << 20), " MiB of ",
                      forward.fp8() ? "FP8" : forward.bf16() ? "bf16" : "f32", " weights, ", forward.kv_bytes() / (1 << 20),
                      " MiB of KV cache)");
}

GpuTarget Gpu(const DeviceTarget& target) {
  return {.device = target.device,
          .bf16 = target.bf16,
          .fp8 = target.fp8,
          .decode_graphs = target.decode_graphs,
          .topology = target.topology};
}

// `engine generate`'s session: the forward of a BatchEngine's passes.
class BatchSession : public DeviceSession {
 public:
  BatchSession(int device, std::unique_ptr<GpuTransformer> forward)
      : forward_(std::move(forward)), description_(gpu::Describe(device, *forward_)) {}
  std::string Describe() const override { return description_; }
  runtime::BatchEngine::ForwardFn batch_forward() override {
    GpuTransformer* forward = forward_.get();
    return
        [forward](absl::Span<const model::SequenceInput> batch) { return forward->Forward(batch); };
  }

 private:
  std::unique_ptr<GpuTransformer> forward_;
  std::string description_;
};

// `engine score` / `trace`'s session: the prefill runner's backend.
class PrefillSession : public DeviceSession {
 public:
  PrefillSession(int device, std::unique_ptr<GpuPrefill> prefill)
      : prefill_(std::move(prefill)), description_(gpu::Describe(device, prefill_->forward())) {}
  std::string Describe() const override { return description_; }
  offline::PrefillBackend prefill_backend() override { return prefill_->backend(); }

 private:
  std::unique_ptr<GpuPrefill> prefill_;
  std::string description_;
};

// A serving rank's forward on its GPU, through the engine's seam (engine/parallel/rank_forward.h).
class ServingSession : public DeviceSession, public RankForward {
 public:
  ServingSession(int device, std::unique_ptr<GpuServingRank> rank)
      : rank_(std::move(rank)), description_(gpu::Describe(device, rank_->forward())) {}
  std::string Describe() const override { return description_; }
  RankForward* rank_forward() override { return this; }

  absl::StatusOr<model::ForwardOutput> Forward(absl::Span<const model::SequenceInput> batch,
                                               const model::ForwardOptions& options) override {
    return rank_->forward().Forward(batch, options);
  }
  RankForwardCounters counters() const override {
    RankForwardCounters c;
    if (rank_->nccl() == nullptr) return c;  // One rank: no exchange.
    c.layers = rank_->forward().ep_counters();
    c.has_comm = true;
    c.comm = rank_->nccl()->counters();
    return c;
  }
  absl::Status SwitchPlacement(const planner::Placement& next,
                               absl::Span<const GainedExpertWeights> gained,
                               const DevicePredictor* predictor) override {
    if (rank_->nccl() == nullptr) return absl::OkStatus();  // One rank holds every expert.
    std::vector<GpuTransformer::GainedExpert> up;
    for (const GainedExpertWeights& g : gained) {
      up.push_back({.layer = g.layer, .expert = g.expert, .weights = g.weights});
    }
    return rank_->forward().SwitchPlacement(next, up, predictor);
  }

 private:
  std::unique_ptr<GpuServingRank> rank_;
  std::string description_;
};

class CudaBackend : public DeviceBackend {
 public:
  absl::StatusOr<int> DeviceCount() const override { return kernels::cuda::DeviceCount(); }

  absl::StatusOr<std::unique_ptr<DeviceSession>> UseForBatch(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const DeviceTarget& target, const runtime::BatchEngine::Options& options) override {
    ASSIGN_OR_RETURN(std::unique_ptr<GpuTransformer> forward,
                     CreateGpuForward(config, weights, Gpu(target), options));
    return std::make_unique<BatchSession>(target.device, std::move(forward));
  }

  absl::StatusOr<std::unique_ptr<DeviceSession>> UseForPrefill(const model::ModelConfig& config,
                                                               const model::ModelWeights& weights,
                                                               const DeviceTarget& target,
                                                               int max_batch_tokens) override {
    ASSIGN_OR_RETURN(std::unique_ptr<GpuPrefill> prefill,
                     CreateGpuPrefill(config, weights, Gpu(target), max_batch_tokens));
    return std::make_unique<PrefillSession>(target.device, std::move(prefill));
  }

  absl::StatusOr<std::unique_ptr<DeviceSession>> UseForServing(
      const model::ModelConfig& config, const model::ModelWeights& weights,
      const planner::Placement& placement, const RendezvousOptions& rendezvous,
      const DeviceTarget& target, const TpServing* tp,
      const runtime::BatchEngine::Options& batch) override {
    GpuTpOptions gpu_tp;
    if (tp != nullptr) {
      gpu_tp = {
          .enabled = true, .predictor = tp->predictor, .token_balance_eps = tp->token_balance_eps};
    }
    ASSIGN_OR_RETURN(std::unique_ptr<GpuServingRank> rank,
                     GpuServingRank::Create(tp != nullptr ? *tp->local_config : config, weights,
                                            placement, rendezvous, Gpu(target), batch, gpu_tp));
    return std::make_unique<ServingSession>(target.device, std::move(rank));
  }
};

// Runs during static initialisation of any binary that links this library.
[[maybe_unused]] const bool kRegistered = [] {
  RegisterDeviceBackend("cuda", std::make_unique<CudaBackend>());
  return true;
}();

}  // namespace
}  // namespace semmoe::engine::gpu
