#include "planner/solver/replicas.h"

#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"

namespace semmoe::planner {
namespace {

TEST(ReplicasTest, EachDeviceCopiesWhatItsTokensUseMost) {
  // 4 experts, 2 devices (0,1 | 2,3). Requests on device 0 often use expert 3; on device 1,
  // expert 0.
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("a", {1, 2, 3}, {3, 3, 0}).ok());
  ASSERT_TRUE(t.AddRequest("b", {4, 5, 6}, {0, 0, 2}).ok());
  const Placement base = *Placement::Vanilla({0}, 4, 2);
  const std::vector<int> schedule = {0, 1};
  auto with = AddHotReplicas(t, base, TokensOfRequests(t, schedule), 1);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->ReplicasOn(0, 0), (std::vector<int32_t>{3}));
  EXPECT_EQ(with->ReplicasOn(0, 1), (std::vector<int32_t>{0}));
  EXPECT_NEAR(EvaluateDp(t, base, schedule)->lar, 2.0 / 6, 1e-12);
  EXPECT_DOUBLE_EQ(EvaluateDp(t, *with, schedule)->lar, 1.0);
  EXPECT_FALSE(AddHotReplicas(t, base, TokensOfRequests(t, schedule), 3).ok());
  EXPECT_FALSE(AddHotReplicas(t, base, {}, 1).ok());
}

}  // namespace
}  // namespace semmoe::planner
