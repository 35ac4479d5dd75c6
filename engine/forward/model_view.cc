#include "engine/forward/model_view.h"

namespace semmoe::engine::forward {
namespace {

struct HostLinear {
  LinearView operator()(const model::Matrix& m) const {
    if (m.size() == 0) return {};
    return {.w = m.data(), .rows = m.rows(), .cols = m.cols()};
  }
  LinearView operator()(const model::LinearWeight& l) const {
    LinearView v = (*this)(l.w);
    v.rows = l.rows();  // An FP8-only weight (LoadOptions::fp8_in_memory) has no f32 copy.
    v.cols = l.cols();
    if (!l.bf16.empty()) v.exact16 = l.bf16.data();
    if (!l.fp8.empty()) {
      v.fp8 = {.codes = l.fp8.codes.data(),
               .scales = l.fp8.scales.data(),
               .block_rows = l.fp8.block_rows,
               .block_cols = l.fp8.block_cols};
    }
    return v;
  }
};

}  // namespace

ModelView HostView(const model::ModelWeights& weights) {
  return ViewOf(weights, HostLinear(),
                [](const model::Vector& v) { return v.size() > 0 ? v.data() : nullptr; });
}

}  // namespace semmoe::engine::forward
