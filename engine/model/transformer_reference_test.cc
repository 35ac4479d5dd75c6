// The forward pass against the shared trained model's reference outputs (an independent fp32
// PyTorch implementation of the HF architecture; ../shared/models/qwen3-moe-a/README.md §5).
#include <cmath>
#include <fstream>
#include <iostream>

#include "common/file.h"
#include "common/testing/shared_data.h"
#include "engine/model/model.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::engine::model {
namespace {

template <typename T>
std::vector<T> ReadBinary(const std::string& path) {
  auto bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  std::vector<T> out(bytes->size() / sizeof(T));
  std::memcpy(out.data(), bytes->data(), out.size() * sizeof(T));
  return out;
}

class ReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* shared = std::getenv("SEMMOE_SHARED_DIR");
    if (shared == nullptr) return;
    dir_ = new std::string(JoinPath(shared, "models/qwen3-moe-a"));
    auto model = LoadModel(*dir_);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
    prompts_ = new nlohmann::json(
        nlohmann::json::parse(*ReadFile(JoinPath(*dir_, "reference/prompts.json")))["prompts"]);
  }
  static void TearDownTestSuite() {
    delete model_;
    delete prompts_;
    delete dir_;
  }
  void SetUp() override {
    SEMMOE_REQUIRE_SHARED_DIR(shared);
    ASSERT_NE(model_, nullptr);
  }

  static ForwardOutput Run(const std::vector<int32_t>& ids, LogitsMode mode) {
    DenseKvSequence kv(model_->config.num_layers, model_->config.kv_size(),
                       static_cast<int>(ids.size()));
    SequenceInput in{ids, 0, &kv, mode};
    auto out = model_->transformer->Forward({&in, 1}, {.collect_routing = true});
    EXPECT_TRUE(out.ok()) << out.status();
    return std::move(*out);
  }

  static Model* model_;
  static nlohmann::json* prompts_;
  static std::string* dir_;
};

Model* ReferenceTest::model_ = nullptr;
nlohmann::json* ReferenceTest::prompts_ = nullptr;
std::string* ReferenceTest::dir_ = nullptr;

TEST_F(ReferenceTest, FinalLogitsNextTokenLogprobsAndRouting) {
  const int vocab = model_->config.vocab_size;
  const int layers = model_->config.num_layers, k = model_->config.top_k;
  auto final_logits = ReadBinary<float>(JoinPath(*dir_, "reference/final_logits.f32"));
  auto logprobs = ReadBinary<float>(JoinPath(*dir_, "reference/next_token_logprob.f32"));
  auto ref_ids = ReadBinary<int32_t>(JoinPath(*dir_, "reference/router_topk_ids.i32"));
  auto ref_w = ReadBinary<float>(JoinPath(*dir_, "reference/router_topk_weights.f32"));
  double worst_rel_l2 = 0, worst_logprob = 0, worst_weight = 0;
  int64_t pairs = 0, set_matches = 0;
  for (const auto& p : *prompts_) {
    const int index = p["index"];
    std::vector<int32_t> ids = p["token_ids"].get<std::vector<int32_t>>();
    ForwardOutput out = Run(ids, LogitsMode::kAll);
    const int n = static_cast<int>(ids.size());
    ASSERT_EQ(out.logits.rows(), n);
    // Final-position logits: relative L2 error.
    double diff = 0, norm = 0;
    for (int v = 0; v < vocab; ++v) {
      const double ref = final_logits[static_cast<size_t>(index) * vocab + v];
      diff += (out.logits(n - 1, v) - ref) * (out.logits(n - 1, v) - ref);
      norm += ref * ref;
    }
    const double rel = std::sqrt(diff / norm);
    worst_rel_l2 = std::max(worst_rel_l2, rel);
    EXPECT_LT(rel, 1e-4) << "prompt " << index;
    // log p(token[t+1] | ≤ t) at every position.
    const int lp_offset = p["next_token_logprob_offset"];
    for (int t = 0; t + 1 < n; ++t) {
      const Eigen::VectorXf row = out.logits.row(t).transpose();
      const float max = row.maxCoeff();
      const double lse = max + std::log((row.array() - max).exp().cast<double>().sum());
      const double lp = row[ids[t + 1]] - lse;
      worst_logprob = std::max(worst_logprob, std::abs(lp - logprobs[lp_offset + t]));
    }
    // Routing: top-k expert sets per (token, layer), weights where the sets agree.
    const int token_offset = p["token_offset"];
    ASSERT_EQ(out.routing.size(), static_cast<size_t>(layers));
    for (int t = 0; t < n; ++t) {
      for (int l = 0; l < layers; ++l) {
        const size_t ref_at = (static_cast<size_t>(token_offset + t) * layers + l) * k;
        std::vector<int32_t> ours(out.routing[l].expert_ids.begin() + t * k,
                                  out.routing[l].expert_ids.begin() + (t + 1) * k);
        std::vector<int32_t> theirs(ref_ids.begin() + ref_at, ref_ids.begin() + ref_at + k);
        ++pairs;
        if (ours == theirs) {
          ++set_matches;
          for (int j = 0; j < k; ++j) {
            worst_weight = std::max<double>(
                worst_weight, std::abs(out.routing[l].weights[t * k + j] - ref_w[ref_at + j]));
          }
          continue;
        }
        std::sort(ours.begin(), ours.end());
        std::sort(theirs.begin(), theirs.end());
        if (ours == theirs) ++set_matches;  // Same set, order differs only on a near-tie.
      }
    }
  }
  std::cout << "worst final-logit relative L2 " << worst_rel_l2 << ", worst |Δ log p| "
            << worst_logprob << ", router sets " << set_matches << "/" << pairs
            << ", worst |Δ weight| " << worst_weight << "\n";
  EXPECT_EQ(pairs, 1347 * layers);
  EXPECT_GE(static_cast<double>(set_matches) / pairs, 0.999);
  EXPECT_LT(worst_logprob, 1e-3);
  EXPECT_LT(worst_weight, 1e-4);
}

// 32 greedy tokens, decoded one at a time through the KV cache (the reference recomputed the
// whole sequence each step, so this also checks the cache).
TEST_F(ReferenceTest, GreedyContinuationsThroughTheKvCache) {
  int identical = 0;
  for (const auto& p : *prompts_) {
    std::vector<int32_t> ids = p["token_ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> expected = p["greedy_continuation_ids"].get<std::vector<int32_t>>();
    DenseKvSequence kv(model_->config.num_layers, model_->config.kv_size(),
                       static_cast<int>(ids.size() + expected.size()));
    std::vector<int32_t> generated;
    std::vector<int32_t> step = ids;
    int position = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      SequenceInput in{step, position, &kv, LogitsMode::kLast};
      auto out = model_->transformer->Forward({&in, 1});
      ASSERT_TRUE(out.ok()) << out.status();
      Eigen::Index best;
      out->logits.row(0).maxCoeff(&best);
      position += static_cast<int>(step.size());
      generated.push_back(static_cast<int32_t>(best));
      step = {static_cast<int32_t>(best)};
    }
    EXPECT_EQ(generated, expected) << "prompt " << p["index"];
    identical += generated == expected;
  }
  EXPECT_EQ(identical, 22);
}

// Batching, chunked prefill and decode must not change the numbers: all 22 prompts in one batch
// (and each prompt split into chunks) give the same final logits as one prompt alone.
TEST_F(ReferenceTest, BatchedAndChunkedEqualsAlone) {
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& p : *prompts_) prompts.push_back(p["token_ids"].get<std::vector<int32_t>>());
  std::vector<std::unique_ptr<DenseKvSequence>> kvs;
  std::vector<SequenceInput> batch;
  for (const auto& ids : prompts) {
    kvs.push_back(std::make_unique<DenseKvSequence>(model_->config.num_layers,
                                                    model_->config.kv_size(), ids.size()));
    // First chunk: all but the last 3 tokens (at least 1), no logits.
    const int first = std::max<int>(1, static_cast<int>(ids.size()) - 3);
    batch.push_back({absl::MakeConstSpan(ids).subspan(0, first), 0, kvs.back().get(),
                     LogitsMode::kNone});
  }
  auto chunk1 = model_->transformer->Forward(batch);
  ASSERT_TRUE(chunk1.ok()) << chunk1.status();
  EXPECT_EQ(chunk1->logits.rows(), 0);
  std::vector<SequenceInput> rest;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int first = static_cast<int>(batch[i].tokens.size());
    if (first == static_cast<int>(prompts[i].size())) continue;
    rest.push_back({absl::MakeConstSpan(prompts[i]).subspan(first), first, kvs[i].get(),
                    LogitsMode::kLast});
  }
  auto chunk2 = model_->transformer->Forward(rest);
  ASSERT_TRUE(chunk2.ok()) << chunk2.status();
  ASSERT_EQ(chunk2->logits.rows(), static_cast<int64_t>(rest.size()));
  int row = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (batch[i].tokens.size() == prompts[i].size()) continue;
    ForwardOutput alone = Run(prompts[i], LogitsMode::kLast);
    const double rel = (chunk2->logits.row(row) - alone.logits.row(0)).norm() /
                       alone.logits.row(0).norm();
    EXPECT_LT(rel, 1e-5) << "prompt " << i;
    ++row;
  }
}

TEST_F(ReferenceTest, BadInputsAreErrors) {
  DenseKvSequence kv(model_->config.num_layers, model_->config.kv_size(), 4);
  std::vector<int32_t> bad = {1, 4096};
  SequenceInput in{bad, 0, &kv, LogitsMode::kLast};
  auto out = model_->transformer->Forward({&in, 1});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("token id 4096"), std::string::npos);
  std::vector<int32_t> many(5, 1);
  SequenceInput too_long{many, 0, &kv, LogitsMode::kLast};
  EXPECT_NE(model_->transformer->Forward({&too_long, 1}).status().message().find("KV capacity"),
            std::string::npos);
  SequenceInput empty{{}, 0, &kv, LogitsMode::kLast};
  EXPECT_FALSE(model_->transformer->Forward({&empty, 1}).ok());
  SequenceInput far{many, 2047, &kv, LogitsMode::kLast};
  EXPECT_NE(model_->transformer->Forward({&far, 1}).status().message().find("max_position"),
            std::string::npos);
}

}  // namespace
}  // namespace semmoe::engine::model
