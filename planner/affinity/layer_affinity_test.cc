#include "planner/affinity/layer_affinity.h"

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

// Three MoE layers, 4 experts, top-1. Vanilla on 2 devices: experts 0,1 → 0; 2,3 → 1. Three
// tokens stay on device 0 through the layers, one goes 1 → 1 → 0.
trace::TraceSet Sticky() {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1, 2};
  EXPECT_TRUE(t.AddRequest("r", {1, 2, 3, 4}, {0, 1, 0, 1, 0, 1, 0, 0, 1, 2, 3, 0}).ok());
  return t;
}

TEST(LayerAffinityTest, LearnsStickyRouting) {
  const trace::TraceSet t = Sticky();
  auto p = Placement::Vanilla({0, 1, 2}, 4, 2);
  EXPECT_EQ(BestDevice(t, *p, 3, 0), 1);
  LayerAffinity a = LayerAffinity::Build(t, *p);
  auto pred = a.Predict(2, 0, 0);
  EXPECT_EQ(pred.device, 0);
  EXPECT_DOUBLE_EQ(pred.confidence, 1.0);
  pred = a.Predict(2, 1, 1);
  EXPECT_EQ(pred.device, 0);
  pred = a.Predict(1, -1, 1);
  EXPECT_EQ(pred.device, 1);
  pred = a.Predict(2, 1, 0);  // Never seen.
  EXPECT_DOUBLE_EQ(pred.confidence, 0.0);
}

TEST(LayerAffinityTest, TableRoundTripsAndMatchesPredict) {
  const trace::TraceSet t = Sticky();
  auto p = Placement::Vanilla({0, 1, 2}, 4, 2);
  LayerAffinity a = LayerAffinity::Build(t, *p);
  const TransitionTable table = a.Table();
  ASSERT_EQ(table.layers.size(), 3u);
  EXPECT_TRUE(table.layers[0].empty());
  EXPECT_EQ(table.layers[2][(0 + 1) * 2 + 0].device, a.Predict(2, 0, 0).device);
  EXPECT_EQ(table.layers[1][(-1 + 1) * 2 + 1].device, a.Predict(1, -1, 1).device);
  auto back = TransitionTable::Deserialize(table.Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->num_devices, 2);
  for (size_t l = 0; l < 3; ++l) {
    ASSERT_EQ(back->layers[l].size(), table.layers[l].size());
    for (size_t h = 0; h < table.layers[l].size(); ++h) {
      EXPECT_EQ(back->layers[l][h].device, table.layers[l][h].device);
      EXPECT_EQ(back->layers[l][h].confidence, table.layers[l][h].confidence);
    }
  }
}

TEST(LayerAffinityTest, CorruptTablesAreErrorsNeverCrashes) {
  TransitionTable table;
  table.num_devices = 4;
  table.layers.resize(5);
  for (size_t l = 1; l < 5; ++l) table.layers[l].assign(20, {1, 0.5f});
  const std::string good = table.Serialize();
  EXPECT_TRUE(TransitionTable::Deserialize(good).ok());
  EXPECT_FALSE(TransitionTable::Deserialize("").ok());
  EXPECT_FALSE(TransitionTable::Deserialize(good.substr(0, good.size() - 1)).ok());
  EXPECT_FALSE(TransitionTable::Deserialize(good + "x").ok());
  uint32_t state = 7;
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = good;
    const int flips = 1 + trial % 4;
    for (int f = 0; f < flips; ++f) {
      state = state * 1664525u + 1013904223u;
      bad[state % bad.size()] = static_cast<char>(state >> 24);
    }
    if (trial % 7 == 0) bad.resize(state % bad.size());
    auto parsed = TransitionTable::Deserialize(bad);  // Must not crash.
    if (!parsed.ok()) {
      ++rejected;
      EXPECT_NE(parsed.status().message().find("layer tables"), std::string::npos);
    }
  }
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace semmoe::planner
