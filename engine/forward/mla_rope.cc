#include "engine/forward/mla_rope.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/nn_ops.h"

namespace semmoe::engine::forward {

using model::ModelConfig;
using model::YarnConfig;

std::vector<float> MlaRopeInvFreq(const ModelConfig& c) {
  const int dim = c.mla_dims.qk_rope_head_dim, half = dim / 2;
  std::vector<float> inv_freq = kernels::cpu::RopeInvFreq(dim, c.rope_theta);
  if (!c.yarn.enabled) return inv_freq;
  // DeepSeek's YaRN (HF _compute_yarn_parameters): dims whose wavelength is short against the
  // original context keep their frequency (extrapolation), long ones are divided by `factor`
  // (interpolation), with a linear ramp between the correction dims of beta_fast and beta_slow.
  const YarnConfig& y = c.yarn;
  const double pi = std::acos(-1.0);
  auto correction_dim = [&](double rotations) {
    return dim * std::log(y.original_max_position_embeddings / (rotations * 2 * pi)) /
           (2 * std::log(c.rope_theta));
  };
  const double low = std::max(std::floor(correction_dim(y.beta_fast)), 0.0);
  double high = std::min(std::ceil(correction_dim(y.beta_slow)), static_cast<double>(dim - 1));
  if (low == high) high += 0.001;  // As HF: avoids a division by zero.
  const float factor = static_cast<float>(y.factor);
  for (int i = 0; i < half; ++i) {
    const float ramp = std::clamp(static_cast<float>((i - low) / (high - low)), 0.0f, 1.0f);
    const float extrapolation = inv_freq[i];
    const float interpolation = inv_freq[i] / factor;
    inv_freq[i] = interpolation * ramp + extrapolation * (1.0f - ramp);
  }
  return inv_freq;
}

}  // namespace semmoe::engine::forward
