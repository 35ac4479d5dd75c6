#include "engine/forward/testing/bf16_tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "engine/runtime/kv_cache.h"
#include "gtest/gtest.h"
#include "kernels/safetensors.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::forward::testing {
namespace {

template <typename T>
absl::StatusOr<std::vector<T>> ReadArray(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path, kMaxDataFileBytes));
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

int32_t Argmax(const float* row, int n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

}  // namespace

absl::StatusOr<HostModel> LoadHostModel(const std::string& dir, const model::LoadOptions& load) {
  HostModel m;
  ASSIGN_OR_RETURN(m.config, model::LoadModelConfig(dir));
  ASSIGN_OR_RETURN(std::unique_ptr<kernels::Checkpoint> checkpoint, kernels::Checkpoint::Open(dir));
  ASSIGN_OR_RETURN(m.weights, model::LoadWeights(m.config, *checkpoint, load));
  return m;
}

std::string Bf16Tolerance::Describe() const {
  return absl::StrFormat(
      "final-logit max |diff| median %.4f worst %.4f; argmax %d/%d; router top-k sets %.2f%% of "
      "%d slots; greedy identical for all %d tokens %d/%d, mean agreeing prefix %.1f tokens",
      median_max_diff, worst_max_diff, argmax_same, prompts, 100.0 * sets_same / slots, slots,
      steps, greedy_identical, prompts, mean_agreeing_prefix);
}

absl::StatusOr<Bf16Tolerance> MeasureAgainstReference(const std::string& dir,
                                                      const model::ModelConfig& c,
                                                      const ForwardFn& forward) {
  const int page_size = 16, pages = 512, vocab = c.vocab_size;
  Bf16Tolerance t;
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::PagedKvCache> cache,
                   runtime::PagedKvCache::Create({.num_layers = c.num_layers,
                                                  .shape = c.kv_shape(),
                                                  .page_size = page_size,
                                                  .num_pages = pages}));
  ASSIGN_OR_RETURN(std::string meta_text, ReadFile(JoinPath(dir, "reference/prompts.json")));
  const nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("prompts")) {
    return absl::InvalidArgumentError("reference/prompts.json has no prompts");
  }
  ASSIGN_OR_RETURN(std::vector<float> final_logits,
                   ReadArray<float>(JoinPath(dir, "reference/final_logits.f32")));
  ASSIGN_OR_RETURN(std::vector<int32_t> ref_ids,
                   ReadArray<int32_t>(JoinPath(dir, "reference/router_topk_ids.i32")));
  const int k = c.top_k, moe_layers = static_cast<int>(c.MoeLayers().size());

  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  std::vector<model::SequenceInput> batch;
  for (const auto& p : meta["prompts"]) {
    prompts.push_back(p["token_ids"].get<std::vector<int32_t>>());
    seqs.push_back(cache->NewSequence());
    RETURN_IF_ERROR(cache->Reserve(*seqs.back(), prompts.back().size() + t.steps));
  }
  const int n = static_cast<int>(prompts.size());
  t.prompts = n;
  for (int s = 0; s < n; ++s) {
    batch.push_back({prompts[s], 0, seqs[s].get(), model::LogitsMode::kLast});
  }
  ASSIGN_OR_RETURN(model::ForwardOutput out, forward(batch, {.collect_routing = true}));

  std::vector<double> max_diff;
  for (int s = 0; s < n; ++s) {
    const int index = meta["prompts"][s]["index"].get<int>();
    const float* ref = final_logits.data() + static_cast<size_t>(index) * vocab;
    double d = 0;
    for (int v = 0; v < vocab; ++v) d = std::max<double>(d, std::abs(out.logits(s, v) - ref[v]));
    max_diff.push_back(d);
    t.argmax_same += Argmax(out.logits.row(s).data(), vocab) == Argmax(ref, vocab);
  }
  std::sort(max_diff.begin(), max_diff.end());
  t.median_max_diff = n % 2 ? max_diff[n / 2] : (max_diff[n / 2 - 1] + max_diff[n / 2]) / 2;
  t.worst_max_diff = max_diff.back();

  int64_t row = 0;
  for (int s = 0; s < n; ++s) {
    const int64_t offset = meta["prompts"][s]["token_offset"].get<int64_t>();
    for (size_t i = 0; i < prompts[s].size(); ++i, ++row) {
      for (int l = 0; l < moe_layers; ++l) {
        const int32_t* got = out.routing[l].expert_ids.data() + row * k;
        const int32_t* want = ref_ids.data() + ((offset + i) * moe_layers + l) * k;
        t.sets_same += std::set<int32_t>(got, got + k) == std::set<int32_t>(want, want + k);
        ++t.slots;
      }
    }
  }

  std::vector<int32_t> next(n);
  std::vector<int> agree(n, 0);
  std::vector<bool> diverged(n, false);
  for (int step = 0; step < t.steps; ++step) {
    std::vector<model::SequenceInput> decode;
    for (int s = 0; s < n; ++s) {
      next[s] = Argmax(out.logits.row(s).data(), vocab);
      const int32_t want = meta["prompts"][s]["greedy_continuation_ids"][step].get<int32_t>();
      diverged[s] = diverged[s] || next[s] != want;
      if (!diverged[s]) ++agree[s];
      decode.push_back({absl::MakeConstSpan(&next[s], 1),
                        static_cast<int>(prompts[s].size()) + step, seqs[s].get()});
    }
    if (step + 1 == t.steps) break;
    ASSIGN_OR_RETURN(out, forward(decode, {}));
  }
  for (int a : agree) {
    t.greedy_identical += a == t.steps;
    t.mean_agreeing_prefix += static_cast<double>(a) / n;
  }
  return t;
}

void ExpectWithinBf16Tolerance(const Bf16Tolerance& t) {
  EXPECT_EQ(t.prompts, 22);
  EXPECT_LE(t.worst_max_diff, 0.25);
  EXPECT_LE(t.median_max_diff, 0.15);
  EXPECT_GE(t.argmax_same, 21);
  EXPECT_GE(static_cast<double>(t.sets_same) / t.slots, 0.96);
  EXPECT_GE(t.greedy_identical, 8);
}

double FinalLogitsGap::median() const {
  if (rel_l2.empty()) return 0;
  std::vector<double> v = rel_l2;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

double FinalLogitsGap::worst() const {
  return rel_l2.empty() ? 0 : *std::max_element(rel_l2.begin(), rel_l2.end());
}

std::string FinalLogitsGap::Describe() const {
  return absl::StrFormat("final-logit relative L2 median %.3g worst %.3g; argmax %d/%d", median(),
                         worst(), argmax_same, prompts);
}

absl::StatusOr<FinalLogitsGap> MeasureFinalLogits(const std::string& dir,
                                                  const model::ModelConfig& c,
                                                  const ForwardFn& forward) {
  const int vocab = c.vocab_size;
  ASSIGN_OR_RETURN(
      std::unique_ptr<runtime::PagedKvCache> cache,
      runtime::PagedKvCache::Create(
          {.num_layers = c.num_layers, .shape = c.kv_shape(), .page_size = 16, .num_pages = 512}));
  ASSIGN_OR_RETURN(std::string meta_text, ReadFile(JoinPath(dir, "reference/prompts.json")));
  const nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("prompts")) {
    return absl::InvalidArgumentError("reference/prompts.json has no prompts");
  }
  ASSIGN_OR_RETURN(std::vector<float> reference,
                   ReadArray<float>(JoinPath(dir, "reference/final_logits.f32")));
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int> index;
  std::vector<std::unique_ptr<runtime::PagedSequence>> seqs;
  for (const auto& p : meta["prompts"]) {
    prompts.push_back(p["token_ids"].get<std::vector<int32_t>>());
    index.push_back(p["index"].get<int>());
    if ((static_cast<size_t>(index.back()) + 1) * vocab > reference.size()) {
      return absl::InvalidArgumentError("reference/final_logits.f32 is too short");
    }
    seqs.push_back(cache->NewSequence());
    RETURN_IF_ERROR(cache->Reserve(*seqs.back(), prompts.back().size()));
  }
  std::vector<model::SequenceInput> batch;
  for (size_t s = 0; s < prompts.size(); ++s) {
    batch.push_back({prompts[s], 0, seqs[s].get(), model::LogitsMode::kLast});
  }
  ASSIGN_OR_RETURN(model::ForwardOutput out, forward(batch, {}));
  FinalLogitsGap gap;
  gap.prompts = static_cast<int>(prompts.size());
  for (size_t s = 0; s < prompts.size(); ++s) {
    const float* ref = reference.data() + static_cast<size_t>(index[s]) * vocab;
    const float* got = out.logits.row(s).data();
    double diff = 0, norm = 0;
    for (int v = 0; v < vocab; ++v) {
      diff += (got[v] - ref[v]) * static_cast<double>(got[v] - ref[v]);
      norm += ref[v] * static_cast<double>(ref[v]);
    }
    gap.rel_l2.push_back(std::sqrt(diff / norm));
    gap.argmax_same += Argmax(got, vocab) == Argmax(ref, vocab);
  }
  return gap;
}

}  // namespace semmoe::engine::forward::testing
