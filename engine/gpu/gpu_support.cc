#include "engine/gpu/gpu_support.h"

#include "absl/strings/str_cat.h"

namespace semmoe::engine::gpu {

absl::Status CheckGpuSupport(const model::ModelConfig& c) {
  constexpr int kMaxHead = 1024, kMaxExperts = 1024, kMaxTopK = 32, kMaxGroups = 32;
  if (c.mla) {
    const int latent = c.mla_dims.kv_lora_rank + c.mla_dims.qk_rope_head_dim;
    if (latent > kMaxHead) {
      return absl::InvalidArgumentError(
          absl::StrCat("the GPU attention takes latent heads up to ", kMaxHead,
                       " floats (kv_lora_rank + qk_rope_head_dim = ", latent, ")"));
    }
  } else if (c.head_dim > kMaxHead || c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the GPU attention needs head_dim up to ", kMaxHead, " and whole GQA groups (head_dim ",
        c.head_dim, ", ", c.num_heads, " heads, ", c.num_kv_heads, " KV heads)"));
  }
  if (!c.MoeLayers().empty() &&
      (c.num_experts > kMaxExperts || c.top_k > kMaxTopK || c.top_k <= 0 || c.n_group > kMaxGroups)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the GPU gating takes up to ", kMaxExperts, " experts in up to ", kMaxGroups,
        " groups and top_k up to ", kMaxTopK, " (", c.num_experts, " experts, ", c.n_group,
        " groups, top_k ", c.top_k, ")"));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::engine::gpu
