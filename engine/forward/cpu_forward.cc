#include "engine/forward/cpu_forward.h"

#include "common/status_macros.h"
#include "engine/forward/cpu_ops.h"
#include "engine/forward/forward_runner.h"
#include "engine/forward/model_view.h"

namespace semmoe::engine::forward {
namespace {

// The host weights in place, without the experts `placement` does not run on this rank (their
// memory may be freed while the view serves).
ModelView RankHostView(const model::ModelWeights& weights, const ExpertParallelOptions& ep) {
  ModelView view = HostView(weights);
  if (ep.placement == nullptr || ep.comm == nullptr) return view;
  const planner::Placement& p = *ep.placement;
  for (int i = 0; i < p.num_layers(); ++i) {
    const int layer = p.moe_layers()[i];
    if (layer < 0 || layer >= static_cast<int>(view.layers.size())) continue;
    std::vector<MlpView>& experts = view.layers[layer].experts;
    for (int e = 0; e < static_cast<int>(experts.size()); ++e) {
      if (!p.Holds(i, ep.comm->rank(), e)) experts[e] = {};
    }
  }
  return view;
}

}  // namespace

struct CpuForward::Impl {
  model::ModelConfig config;
  ExpertParallelOptions ep;
  CpuOps ops;
  std::unique_ptr<ForwardRunner<CpuOps>> runner;
};

CpuForward::CpuForward(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CpuForward::~CpuForward() = default;

absl::StatusOr<std::unique_ptr<CpuForward>> CpuForward::Create(const model::ModelConfig& config,
                                                               const model::ModelWeights& weights,
                                                               const CpuForwardOptions& options) {
  if (static_cast<int>(weights.layers.size()) != config.num_layers) {
    return absl::InvalidArgumentError("the weights are not for this config's layers");
  }
  if (model::HasFp8OnlyWeights(weights)) {
    return absl::InvalidArgumentError(
        "the CPU forward computes in f32: these weights were loaded FP8-only (for the FP8 device "
        "forward); load them without fp8_in_memory");
  }
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->ep = options.ep;
  impl->runner = std::make_unique<ForwardRunner<CpuOps>>(
      impl->config, RankHostView(weights, options.ep),
      KvArenaOptions{.num_pages = options.num_pages, .page_size = options.page_size}, impl->ops,
      options.ep);
  impl->runner->EnableAttentionTiming();
  RETURN_IF_ERROR(impl->runner->Init());
  return std::unique_ptr<CpuForward>(new CpuForward(std::move(impl)));
}

absl::StatusOr<model::ForwardOutput> CpuForward::Forward(
    absl::Span<const model::SequenceInput> batch, const model::ForwardOptions& options) {
  return impl_->runner->Forward(batch, options);
}

absl::Status CpuForward::SwitchPlacement(const planner::Placement& next,
                                         const model::ModelWeights& weights,
                                         const DevicePredictor* predictor) {
  ExpertParallelOptions ep = impl_->ep;
  ep.placement = &next;
  ep.predictor = predictor;
  if (ep.comm == nullptr) {
    return absl::FailedPreconditionError("a one-device forward has no placement to switch");
  }
  RETURN_IF_ERROR(impl_->runner->SwitchPlacement(next, RankHostView(weights, ep), predictor));
  impl_->ep = ep;
  return absl::OkStatus();
}

const model::ModelConfig& CpuForward::config() const { return impl_->config; }
int64_t CpuForward::kv_bytes() const { return impl_->runner->kv_bytes(); }
const std::vector<MoeLayerCounters>& CpuForward::ep_counters() const {
  return impl_->runner->ep_counters();
}
const TpStageCounters* CpuForward::tp_counters() const { return impl_->runner->tp_counters(); }
absl::StatusOr<std::vector<int32_t>> CpuForward::TpLastDevices() {
  return impl_->runner->tp_last_devices();
}

}  // namespace semmoe::engine::forward
