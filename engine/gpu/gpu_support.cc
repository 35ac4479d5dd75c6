#include "engine/gpu/gpu_support.h"

#include "absl/strings/str_cat.h"

namespace semmoe::engine::gpu {

absl::Status CheckGpuSupport(const model::ModelConfig& c) {
  if (c.mla) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the GPU forward does not implement multi-head latent attention (", model::ArchName(c.arch),
        "); serve this model on the CPU (omit --device gpu)"));
  }
  if (c.scoring != model::ScoringFunc::kSoftmax || c.topk_method != model::TopkMethod::kGreedy) {
    return absl::InvalidArgumentError(
        "the GPU gating implements softmax greedy top-k only; serve this model on the CPU");
  }
  if (c.head_dim % 32 != 0 || c.head_dim > 256 || c.num_kv_heads <= 0 ||
      c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the GPU attention needs head_dim a multiple of 32 up to 256 and whole GQA groups "
        "(head_dim ",
        c.head_dim, ", ", c.num_heads, " heads, ", c.num_kv_heads, " KV heads)"));
  }
  if (!c.MoeLayers().empty() && (c.num_experts > 1024 || c.top_k > 32 || c.top_k <= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the GPU gating takes up to 1024 experts and top_k up to 32 (", c.num_experts,
                     " experts, top_k ", c.top_k, ")"));
  }
  return absl::OkStatus();
}

}  // namespace semmoe::engine::gpu
