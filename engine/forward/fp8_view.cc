#include "engine/forward/fp8_view.h"

namespace semmoe::engine::forward {

bool HasFp8(const ModelView& view) {
  for (const LayerView& l : view.layers) {
    if (l.stacked.gate8.codes != nullptr) return true;
    for (const LinearView* v : model::NonExpertLinears(l)) {
      if (v->fp8.codes != nullptr && v->w == nullptr) return true;
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<HostFp8Weights>> HostFp8Weights::Make(
    const model::ModelWeights& weights) {
  std::unique_ptr<HostFp8Weights> out(new HostFp8Weights());
  const ModelView source = HostView(weights);
  out->view_ = source;
  HostFp8Weights* self = out.get();
  struct Store {
    HostFp8Weights* self;
    absl::StatusOr<const uint8_t*> operator()(std::vector<uint8_t> v) const {
      return self->Keep(self->codes_, std::move(v));
    }
    absl::StatusOr<const uint16_t*> operator()(std::vector<uint16_t> v) const {
      return self->Keep(self->bits_, std::move(v));
    }
    absl::StatusOr<const float*> operator()(std::vector<float> v) const {
      return self->Keep(self->scales_, std::move(v));
    }
  };
  RETURN_IF_ERROR(AttachBf16</*kKeepFp8=*/true>(source, Store{self}, out->view_));
  return out;
}

}  // namespace semmoe::engine::forward
