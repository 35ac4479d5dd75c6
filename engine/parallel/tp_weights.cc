#include "engine/parallel/tp_weights.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace semmoe::engine {
namespace {

using model::LinearWeight;

// Rows [begin, begin + count) of a linear weight [out, in] (output features).
// A slice's FP8 copy is dropped (the slice need not follow the blocks): the engine refuses FP8
// weights under Attention-TP, and a slice must never carry another matrix's codes.
void KeepRows(LinearWeight& w, int64_t begin, int64_t count) {
  model::Matrix rows = w.w.middleRows(begin, count);
  w.w = std::move(rows);
  w.fp8 = model::Fp8Weight();
  if (!w.bf16.empty()) {
    const int64_t cols = w.cols();
    std::vector<uint16_t> kept(w.bf16.begin() + begin * cols,
                               w.bf16.begin() + (begin + count) * cols);
    w.bf16 = std::move(kept);
  }
}

// Columns [begin, begin + count) (input features).
void KeepCols(LinearWeight& w, int64_t begin, int64_t count) {
  const int64_t rows = w.rows(), cols = w.cols();
  model::Matrix kept = w.w.middleCols(begin, count);
  w.w = std::move(kept);
  w.fp8 = model::Fp8Weight();
  if (!w.bf16.empty()) {
    std::vector<uint16_t> bf16(rows * count);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(&bf16[r * count], &w.bf16[r * cols + begin], count * sizeof(uint16_t));
    }
    w.bf16 = std::move(bf16);
  }
}

void KeepSegment(model::Vector& v, int64_t begin, int64_t count) {
  if (v.size() == 0) return;
  model::Vector kept = v.segment(begin, count);
  v = std::move(kept);
}

// MLA: a rank keeps its heads' rows of the query projection (q_proj or q_b_proj) and of kv_b,
// and their columns of o_proj. q_a, kv_a and their norms stay whole: every rank computes (and
// caches) the full latent, as vLLM and SGLang do under tensor parallelism.
model::ModelConfig SliceMla(const model::ModelConfig& config, model::ModelWeights& weights,
                            int rank, int size) {
  const int heads = config.num_heads / size;
  const int64_t q_head = config.head_dim;  // nope + rope
  const int64_t kv_head = config.mla_dims.qk_nope_head_dim + config.v_head_dim;
  const int64_t first = static_cast<int64_t>(rank) * heads;
  for (model::LayerWeights& layer : weights.layers) {
    model::LinearWeight& q = config.mla_dims.q_lora_rank > 0 ? layer.mla.q_b : layer.q;
    KeepRows(q, first * q_head, heads * q_head);
    KeepRows(layer.mla.kv_b, first * kv_head, heads * kv_head);
    KeepCols(layer.o, first * config.v_head_dim, heads * config.v_head_dim);
  }
  model::ModelConfig local = config;
  local.num_heads = heads;
  return local;
}

}  // namespace

absl::Status CheckTpSplit(const model::ModelConfig& config, int size) {
  const int h = config.num_heads, kv = config.num_kv_heads;
  if (config.mla) {  // The latent is shared by every head: only the query heads split.
    if (size < 1 || h % size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Attention-TP over ", size, " ranks needs the ", h, " query heads to split evenly"));
    }
    return absl::OkStatus();
  }
  if (size < 1 || h % size != 0 || (kv % size != 0 && size % kv != 0)) {
    return absl::InvalidArgumentError(absl::StrCat("Attention-TP over ", size, " ranks needs the ",
                                                   h, " query heads to split evenly and ", "the ",
                                                   kv, " KV heads to split or replicate evenly"));
  }
  return absl::OkStatus();
}

absl::StatusOr<model::ModelConfig> SliceForTp(const model::ModelConfig& config,
                                              model::ModelWeights& weights, int rank, int size) {
  RETURN_IF_ERROR(CheckTpSplit(config, size));
  if (rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " of ", size));
  }
  if (config.mla) return SliceMla(config, weights, rank, size);
  const int hd = config.head_dim;
  const int heads = config.num_heads / size;
  const int kv_heads = std::max(1, config.num_kv_heads / size);
  const int group = config.num_heads / config.num_kv_heads;
  const int q_begin = rank * heads;
  const int kv_begin = q_begin / group;
  for (model::LayerWeights& layer : weights.layers) {
    KeepRows(layer.q, static_cast<int64_t>(q_begin) * hd, static_cast<int64_t>(heads) * hd);
    KeepRows(layer.k, static_cast<int64_t>(kv_begin) * hd, static_cast<int64_t>(kv_heads) * hd);
    KeepRows(layer.v, static_cast<int64_t>(kv_begin) * hd, static_cast<int64_t>(kv_heads) * hd);
    KeepSegment(layer.q_bias, static_cast<int64_t>(q_begin) * hd, static_cast<int64_t>(heads) * hd);
    KeepSegment(layer.k_bias, static_cast<int64_t>(kv_begin) * hd,
                static_cast<int64_t>(kv_heads) * hd);
    KeepSegment(layer.v_bias, static_cast<int64_t>(kv_begin) * hd,
                static_cast<int64_t>(kv_heads) * hd);
    KeepCols(layer.o, static_cast<int64_t>(q_begin) * hd, static_cast<int64_t>(heads) * hd);
  }
  model::ModelConfig local = config;
  local.num_heads = heads;
  local.num_kv_heads = kv_heads;
  return local;
}

}  // namespace semmoe::engine
