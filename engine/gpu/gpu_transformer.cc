#include "engine/gpu/gpu_transformer.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/forward/forward_runner.h"
#include "engine/gpu/cuda_ops.h"
#include "engine/gpu/gpu_support.h"
#include "engine/gpu/gpu_weights.h"

namespace semmoe::engine::gpu {

struct GpuTransformer::Impl {
  model::ModelConfig config;
  bool bf16 = false;
  bool fp8 = false;
  Communicator* comm = nullptr;  // Under expert parallelism.
  std::unique_ptr<CudaOps> ops;
  std::unique_ptr<GpuWeights> weights;
  std::unique_ptr<forward::ForwardRunner<CudaOps>> runner;  // Declared last: destroyed first.
};

GpuTransformer::GpuTransformer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuTransformer::~GpuTransformer() = default;

const model::ModelConfig& GpuTransformer::config() const { return impl_->config; }
int64_t GpuTransformer::weight_bytes() const { return impl_->weights->bytes; }
bool GpuTransformer::bf16() const { return impl_->bf16; }
bool GpuTransformer::fp8() const { return impl_->fp8; }
int64_t GpuTransformer::graph_replays() const { return impl_->runner->decode_graphs().replays(); }
int64_t GpuTransformer::kv_bytes() const { return impl_->runner->kv_bytes(); }
std::vector<MoeLayerCounters> GpuTransformer::ep_counters() const {
  return impl_->runner->ep_counters();
}

absl::StatusOr<std::unique_ptr<GpuTransformer>> GpuTransformer::Create(
    const model::ModelConfig& c, const model::ModelWeights& weights,
    const GpuForwardOptions& options) {
  if (options.num_pages <= 0 || options.page_size <= 0) {
    return absl::InvalidArgumentError("the GPU KV cache needs num_pages and page_size > 0");
  }
  RETURN_IF_ERROR(CheckGpuSupport(c));  // Before anything is uploaded.
  if (options.decode_graphs > 0 && (!options.bf16 || options.placement != nullptr)) {
    return absl::InvalidArgumentError(
        "decode graphs need bf16 weights on one device: the f32 and expert-parallel passes "
        "synchronise with the host inside a step");
  }
  auto impl = std::make_unique<Impl>();
  impl->config = c;
  if (options.fp8 && !options.bf16) {
    return absl::InvalidArgumentError("FP8 weights compute as the bf16 forward: they need bf16");
  }
  if (options.fp8 && !c.fp8.enabled()) {
    return absl::InvalidArgumentError(
        "FP8 weights need an FP8 checkpoint (config.json's quantization_config: quant_method fp8)");
  }
  if (options.fp8 && !model::HasFp8OnlyWeights(weights)) {
    return absl::InvalidArgumentError(
        "FP8 weights need the checkpoint loaded FP8-only (model::LoadOptions::fp8_in_memory)");
  }
  if (options.fp8 && options.attention_tp) {
    return absl::InvalidArgumentError(
        "FP8 weights under Attention-TP are not supported: a rank's head slice cuts the FP8 "
        "blocks (serve --precision bf16, or --attn dp)");
  }
  impl->bf16 = options.bf16;
  impl->fp8 = options.fp8;
  impl->comm = options.comm;
  ASSIGN_OR_RETURN(impl->ops, CudaOps::Create(options.device));
  ASSIGN_OR_RETURN(
      impl->weights,
      UploadWeights(c, weights, /*every_expert=*/options.placement == nullptr, options.bf16,
                    options.fp8));
  impl->runner = std::make_unique<forward::ForwardRunner<CudaOps>>(
      c, impl->weights->View(),
      forward::KvArenaOptions{
          .num_pages = options.num_pages, .page_size = options.page_size, .bf16 = options.bf16},
      *impl->ops,
      forward::ExpertParallelOptions{.placement = options.placement,
                                     .comm = options.comm,
                                     .attention_tp = options.attention_tp,
                                     .predictor = options.predictor,
                                     .token_balance_eps = options.token_balance_eps,
                                     .topology = options.topology});
  impl->runner->EnableDecodeGraphs(options.decode_graphs);
  RETURN_IF_ERROR(impl->runner->Init());
  return std::unique_ptr<GpuTransformer>(new GpuTransformer(std::move(impl)));
}

absl::Status GpuTransformer::SwitchPlacement(const planner::Placement& next,
                                             absl::Span<const GainedExpert> gained,
                                             const DevicePredictor* predictor) {
  Impl& m = *impl_;
  if (m.comm == nullptr) {
    return absl::FailedPreconditionError("a one-device forward has no placement to switch");
  }
  const model::ModelConfig& c = m.config;
  const std::vector<int> moe = c.MoeLayers();
  if (next.moe_layers() != moe || next.num_experts() != c.num_experts ||
      next.num_devices() != m.comm->size()) {
    return absl::InvalidArgumentError("the next placement does not fit the model and the group");
  }
  const int rank = m.comm->rank();
  // Per MoE layer: what `next` runs here, and the gained experts' host weights.
  std::vector<std::vector<int32_t>> held(moe.size());
  std::vector<std::map<int32_t, const model::MlpWeights*>> up(moe.size());
  for (const GainedExpert& g : gained) {
    const auto it = std::find(moe.begin(), moe.end(), g.layer);
    if (it == moe.end() || g.weights == nullptr || g.expert < 0 || g.expert >= c.num_experts) {
      return absl::InvalidArgumentError(
          absl::StrCat("gained expert (layer ", g.layer, ", ", g.expert, ") is not in the model"));
    }
    up[it - moe.begin()][g.expert] = g.weights;
  }
  const forward::ModelView now = m.weights->View();
  for (size_t i = 0; i < moe.size(); ++i) {
    for (int e = 0; e < c.num_experts; ++e) {
      if (!next.Holds(static_cast<int>(i), rank, e)) continue;
      held[i].push_back(e);
      if (up[i].count(e) == 0 && now.layers[moe[i]].experts[e].gate.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("layer ", moe[i], " expert ", e,
                         " runs here under the next placement but is neither loaded nor gained"));
      }
    }
  }
  RETURN_IF_ERROR(m.ops->Begin());
  RETURN_IF_ERROR(m.ops->Finish());  // No pass still reads the experts about to move.
  for (size_t i = 0; i < moe.size(); ++i) {
    RETURN_IF_ERROR(m.weights->SetExperts(moe[i], held[i], up[i]));
  }
  return m.runner->SwitchPlacement(next, m.weights->View(), predictor);
}

absl::StatusOr<model::ForwardOutput> GpuTransformer::Forward(
    absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
  return impl_->runner->Forward(batch, options);
}

}  // namespace semmoe::engine::gpu
