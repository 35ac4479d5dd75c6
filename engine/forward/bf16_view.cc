#include "engine/forward/bf16_view.h"

#include "kernels/cpu/forward_ops.h"

namespace semmoe::engine::forward {

std::vector<uint16_t> ToBf16Bits(const float* w, int64_t n) {
  std::vector<uint16_t> bits(n);
  kernels::cpu::RoundToBf16(w, n, bits.data());
  return bits;
}

absl::StatusOr<std::unique_ptr<HostBf16Weights>> HostBf16Weights::Make(
    const model::ModelWeights& weights) {
  return Make(HostView(weights));
}

absl::StatusOr<std::unique_ptr<HostBf16Weights>> HostBf16Weights::Make(const ModelView& source) {
  std::unique_ptr<HostBf16Weights> out(new HostBf16Weights());
  out->view_ = source;
  HostBf16Weights* self = out.get();
  RETURN_IF_ERROR(AttachBf16(
      source,
      [self](std::vector<uint16_t> bits) -> absl::StatusOr<const uint16_t*> {
        self->bytes_ += static_cast<int64_t>(bits.size()) * 2;
        self->buffers_.push_back(std::move(bits));
        return self->buffers_.back().data();
      },
      out->view_));
  return out;
}

}  // namespace semmoe::engine::forward
