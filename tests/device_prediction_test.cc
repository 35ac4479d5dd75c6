// Attention-TP's prediction as device tables (DevicePredictor::Tables, kernels PredictDevices —
// the CPU reference here; the CUDA kernel is held to it by kernels/cuda/predict_devices_test)
// gives exactly DevicePredictor::Score, at a real vocabulary (151,936 ids) and expert count: ids
// seen, unseen with and without an embedding stand-in, past the tables' end and −1; predecessors
// that are learned contexts and that are not; the A tables' history at every MoE layer.
#include <cstdint>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/parallel/device_predictor.h"
#include "gtest/gtest.h"
#include "kernels/cpu/predict_devices.h"
#include "planner/affinity/layer_affinity.h"
#include "planner/affinity/token_affinity_builder.h"
#include "planner/placement/placement.h"
#include "planner/trace/trace_set.h"

namespace semmoe::engine {
namespace {

constexpr uint32_t kVocab = 151936;
constexpr int kLayers = 4, kExperts = 128, kTopK = 8, kDevices = 8;

// Requests over a pool of ids, with recurring phrases (so contexts are learned); each token's
// experts follow its id and its previous layer's choice, plus noise (so the A tables say
// something).
planner::trace::TraceSet Trace(std::mt19937& rng, std::vector<uint32_t>& pool) {
  planner::trace::TraceSet trace;
  trace.header = {.num_experts = kExperts, .vocab_size = kVocab, .top_k = kTopK};
  for (int l = 0; l < kLayers; ++l) trace.header.moe_layers.push_back(l);
  for (int i = 0; i < 3000; ++i) pool.push_back(rng() % kVocab);
  std::vector<std::vector<uint32_t>> phrases(40);
  for (auto& p : phrases) {
    for (int t = 0; t < 6; ++t) p.push_back(pool[rng() % pool.size()]);
  }
  for (int r = 0; r < 120; ++r) {
    std::vector<uint32_t> tokens;
    while (tokens.size() < 96) {
      if (rng() % 2 == 0) {
        const auto& p = phrases[rng() % phrases.size()];
        tokens.insert(tokens.end(), p.begin(), p.end());
      } else {
        tokens.push_back(pool[rng() % pool.size()]);
      }
    }
    std::vector<uint16_t> experts;
    for (uint32_t id : tokens) {
      int base = static_cast<int>(id % kExperts);
      for (int l = 0; l < kLayers; ++l) {
        for (int j = 0; j < kTopK; ++j) {
          const int e = rng() % 4 == 0 ? static_cast<int>(rng() % kExperts) : (base + j) % kExperts;
          experts.push_back(static_cast<uint16_t>(e));
        }
        base = (base * 7 + l) % kExperts;
      }
    }
    // Top-k ids must be distinct per token and layer: keep the first of each, fill the rest.
    for (size_t s = 0; s < experts.size(); s += kTopK) {
      std::vector<bool> used(kExperts);
      for (int j = 0; j < kTopK; ++j) {
        int e = experts[s + j];
        while (used[e]) e = (e + 1) % kExperts;
        used[e] = true;
        experts[s + j] = static_cast<uint16_t>(e);
      }
    }
    EXPECT_TRUE(trace.AddRequest(absl::StrCat("r", r), tokens, experts).ok());
  }
  return trace;
}

void ExpectTablesScoreAsThePredictor(bool fallback) {
  std::mt19937 rng(fallback ? 7 : 9);
  std::vector<uint32_t> pool;
  const planner::trace::TraceSet trace = Trace(rng, pool);
  planner::TokenAffinity affinity = planner::BuildTokenAffinity(trace);
  ASSERT_GT(affinity.num_contexts(), 0);
  if (fallback) {
    constexpr int kHidden = 8;
    std::normal_distribution<float> normal;
    std::vector<float> embeddings(static_cast<size_t>(kVocab) * kHidden);
    for (float& v : embeddings) v = normal(rng);
    ASSERT_TRUE(affinity.AddEmbeddingFallback(embeddings, kHidden).ok());
  }
  std::vector<int> layers(kLayers);
  for (int l = 0; l < kLayers; ++l) layers[l] = l;
  const planner::Placement placement =
      *planner::Placement::Random(layers, kExperts, kDevices, /*seed=*/4);
  const DevicePredictor predictor(affinity, placement,
                                  planner::LayerAffinity::Build(trace, placement).Table());
  ASSERT_TRUE(predictor.uses_history());
  const PredictorTables t = predictor.Tables();
  ASSERT_EQ(t.layers.size(), static_cast<size_t>(kLayers));
  const std::vector<std::pair<uint32_t, uint32_t>> pairs = affinity.ContextPairs();

  constexpr int64_t kTokens = 4000;
  std::vector<int32_t> ids(kTokens), previous(kTokens), p1(kTokens), p2(kTokens);
  for (int64_t i = 0; i < kTokens; ++i) {
    switch (rng() % 4) {
      case 0: {  // A learned context.
        const auto& [prev, id] = pairs[rng() % pairs.size()];
        ids[i] = static_cast<int32_t>(id);
        previous[i] = static_cast<int32_t>(prev);
        break;
      }
      case 1:  // A seen id after a seen id (mostly not a context).
        ids[i] = static_cast<int32_t>(pool[rng() % pool.size()]);
        previous[i] = static_cast<int32_t>(pool[rng() % pool.size()]);
        break;
      case 2:  // Anywhere in the vocabulary, or −1 / past it; predecessor unknown or not.
        ids[i] = static_cast<int32_t>(rng() % (kVocab + 2)) - 1;
        previous[i] = rng() % 2 ? -1 : static_cast<int32_t>(rng() % kVocab);
        break;
      default:
        ids[i] = static_cast<int32_t>(pool[rng() % pool.size()]);
        previous[i] = -1;
    }
    p1[i] = static_cast<int32_t>(rng() % (kDevices + 1)) - 1;
    p2[i] = static_cast<int32_t>(rng() % (kDevices + 1)) - 1;
  }
  const std::vector<float> f1(p1.begin(), p1.end()), f2(p2.begin(), p2.end());
  int64_t differ_from_token_row = 0;
  for (int moe = 0; moe < kLayers; ++moe) {
    std::vector<float> want(kTokens * kDevices), got(kTokens * kDevices);
    predictor.Score(moe, ids, previous, p2, p1, absl::MakeSpan(want));
    const PredictorTables::Layer& l = t.layers[moe];
    const bool history = !l.a_device.empty();
    EXPECT_EQ(history, moe >= 1) << moe;
    kernels::cpu::PredictDevices({.ids = ids.data(),
                                  .previous = previous.data(),
                                  .tokens = kTokens,
                                  .devices = kDevices,
                                  .row_of_token = t.row_of_token.data(),
                                  .vocab = static_cast<int64_t>(t.row_of_token.size()),
                                  .shares = l.shares.data(),
                                  .unseen_row = t.unseen_row,
                                  .context_keys = t.context_keys.data(),
                                  .contexts = static_cast<int64_t>(t.context_keys.size()),
                                  .context_shares = l.context_shares.data(),
                                  .prev2 = history && moe >= 2 ? f2.data() : nullptr,
                                  .prev1 = history ? f1.data() : nullptr,
                                  .a_device = history ? l.a_device.data() : nullptr,
                                  .a_confidence = history ? l.a_confidence.data() : nullptr,
                                  .scores = got.data()});
    for (int64_t i = 0; i < kTokens; ++i) {
      for (int d = 0; d < kDevices; ++d) {
        ASSERT_EQ(got[i * kDevices + d], want[i * kDevices + d])
            << "layer " << moe << " token " << i << " (id " << ids[i] << " after " << previous[i]
            << ", history " << p2[i] << "," << p1[i] << ") device " << d;
      }
    }
    // The check can fail: contexts and history change many tokens' scores from the id's own row.
    std::vector<float> plain(kTokens * kDevices);
    predictor.Score(moe, ids, {}, {}, {}, absl::MakeSpan(plain));
    differ_from_token_row += plain != want;
    int64_t changed = 0;
    for (int64_t i = 0; i < kTokens; ++i) {
      changed += !std::equal(plain.begin() + i * kDevices, plain.begin() + (i + 1) * kDevices,
                             want.begin() + i * kDevices);
    }
    EXPECT_GT(changed, kTokens / 10) << "layer " << moe;
  }
  EXPECT_EQ(differ_from_token_row, kLayers);
  std::printf("device tables (%s): %zu ids, %lld rows, %zu contexts, %.1f MiB\n",
              fallback ? "embedding stand-ins" : "no stand-ins", t.row_of_token.size(),
              static_cast<long long>(t.unseen_row + 1), t.context_keys.size(),
              t.bytes() / 1048576.0);
}

TEST(DevicePredictionTest, TablesScoreAsThePredictor) { ExpectTablesScoreAsThePredictor(false); }

TEST(DevicePredictionTest, TablesScoreAsThePredictorWithEmbeddingStandIns) {
  ExpectTablesScoreAsThePredictor(true);
}

}  // namespace
}  // namespace semmoe::engine
