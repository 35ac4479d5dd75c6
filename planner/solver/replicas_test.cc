#include "planner/solver/replicas.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"
#include "planner/placement/holder_choice.h"

namespace semmoe::planner {
namespace {

TEST(ReplicasTest, ACopyThatRelievesTheBusyHomeAndIsUsedLocallyIsTaken) {
  // 4 experts, 2 devices (0,1 | 2,3). Device 0's requests use expert 3 (on device 1, which is
  // busy with its own expert 2): a copy of 3 on device 0 is local there and relieves device 1.
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("a", {1, 2, 3}, {3, 3, 3}).ok());
  ASSERT_TRUE(t.AddRequest("b", {4, 5, 6, 7}, {2, 2, 2, 0}).ok());
  const Placement base = *Placement::Vanilla({0}, 4, 2);
  const std::vector<int> schedule = {0, 1};
  auto with = AddHotReplicas(t, base, TokensOfRequests(t, schedule), 1);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->ReplicasOn(0, 0), (std::vector<int32_t>{3}));
  // Device 1's copy of 0 would leave the mix as balanced as a copy of 1 but load device 1 with
  // all of its own traffic group: 1 is taken.
  EXPECT_EQ(with->ReplicasOn(0, 1), (std::vector<int32_t>{1}));
  EXPECT_NEAR(EvaluateDp(t, base, schedule)->lar, 3.0 / 7, 1e-12);
  EXPECT_NEAR(EvaluateDp(t, *with, schedule)->lar, 6.0 / 7, 1e-12);
  EXPECT_FALSE(AddHotReplicas(t, base, TokensOfRequests(t, schedule), 3).ok());
  EXPECT_FALSE(AddHotReplicas(t, base, {}, 1).ok());
}

// Balance first: a copy its tokens use most is not taken when it would load the device more
// than it relieves the home.
TEST(ReplicasTest, ACopyThatWouldUnbalanceIsNotTaken) {
  trace::TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("a", {1, 2, 3}, {3, 3, 0}).ok());
  ASSERT_TRUE(t.AddRequest("b", {4, 5, 6}, {0, 0, 2}).ok());
  const Placement base = *Placement::Vanilla({0}, 4, 2);  // Loads 3 and 3: balanced.
  auto with = AddHotReplicas(t, base, TokensOfRequests(t, {0, 1}), 1);
  ASSERT_TRUE(with.ok()) << with.status();
  // Copying 3 on device 0 would make it serve 5 of 6.
  EXPECT_EQ(with->ReplicasOn(0, 0), (std::vector<int32_t>{2}));
}

TEST(ReplicasTest, TheBusiestDeviceIsRelieved) {
  // 6 experts on 3 devices ({0,1} | {2,3} | {4,5}), top-1. Device 0's request uses expert 2
  // (device 1) three times and expert 4 (device 2) twice; device 2 is busy with its own request.
  trace::TraceSet t;
  t.header.num_experts = 6;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  ASSERT_TRUE(t.AddRequest("a", {1, 2, 3, 4, 5}, {2, 2, 2, 4, 4}).ok());
  ASSERT_TRUE(t.AddRequest("b", {6}, {2}).ok());
  ASSERT_TRUE(t.AddRequest("c", {7, 8, 9, 10, 11, 12}, {4, 4, 4, 4, 4, 4}).ok());
  const Placement base = *Placement::Vanilla({0}, 6, 3);
  const auto schedule = TokensOfRequests(t, {0, 1, 2});
  // Copying expert 4 takes 2 activations off device 2 (8 → 6), the busiest; copying expert 2
  // would leave it at 8.
  auto with = AddHotReplicas(t, base, schedule, 1);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->ReplicasOn(0, 0), (std::vector<int32_t>{4}));
}

// A hot expert every device uses (expert 0, homed on device 0) is copied by the light devices,
// and the holder choice spreads its load: the busiest device's load falls towards the mean.
TEST(ReplicasTest, AHotGenericExpertIsSpreadOverLightDevices) {
  trace::TraceSet t;
  t.header.num_experts = 8;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  std::vector<int> schedule;
  for (int r = 0; r < 64; ++r) {
    const int d = r % 4;
    // Half of each request's tokens use expert 0, the rest an expert on the request's device.
    ASSERT_TRUE(t.AddRequest("r" + std::to_string(r), {1, 2, 3, 4},
                             {0, 0, static_cast<uint16_t>(2 * d + 1), static_cast<uint16_t>(2 * d)})
                    .ok());
    schedule.push_back(d);
  }
  const Placement base = *Placement::Vanilla({0}, 8, 4);
  auto with = AddHotReplicas(t, base, TokensOfRequests(t, schedule), 1);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_GE(with->HoldersOf(0, 0).size(), 3u) << "expert 0 copied by at most one device";
  auto max_load = [&](const Placement& p) {
    std::vector<int32_t> demand(4 * 8, 0);
    for (int64_t i = 0; i < t.num_tokens(); ++i) {
      ++demand[schedule[i / 4] * 8 + t.Experts(i, 0)[0]];
    }
    const HolderChoice c = ChooseHolders(p, 0, demand);
    return *std::max_element(c.load().begin(), c.load().end());
  };
  // 256 activations over 4 devices: 64 each at best; without replicas device 0 runs 128 + 32.
  EXPECT_EQ(max_load(base), 160);
  EXPECT_LE(max_load(*with), 80);  // Within 1.25 × the mean.
}

}  // namespace
}  // namespace semmoe::planner
