#include "planner/affinity/layer_affinity.h"

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

TEST(LayerAffinityTest, LearnsStickyRouting) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0, 1, 2};
  // Vanilla on 2 devices: experts 0,1 → 0; 2,3 → 1. Three tokens stay on device 0 through the
  // layers, one goes 1 → 1 → 0.
  ASSERT_TRUE(t.AddRequest("r", {1, 2, 3, 4}, {0, 1, 0, 1, 0, 1, 0, 0, 1, 2, 3, 0}).ok());
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

}  // namespace
}  // namespace semmoe::planner
