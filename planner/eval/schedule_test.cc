#include "planner/eval/schedule.h"

#include <random>

#include "gtest/gtest.h"
#include "planner/eval/evaluate.h"

namespace semmoe::planner {
namespace {

using trace::TraceSet;

// One layer, 4 experts, top-1; each request's three tokens all choose `experts[r]`.
TraceSet OneExpertEach(const std::vector<uint16_t>& experts) {
  TraceSet t;
  t.header.num_experts = 4;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  for (size_t r = 0; r < experts.size(); ++r) {
    EXPECT_TRUE(
        t.AddRequest("r" + std::to_string(r), {1, 2, 3}, {experts[r], experts[r], experts[r]})
            .ok());
  }
  return t;
}

TEST(PerfectRequestsTest, EachRequestToTheDeviceHoldingItsExperts) {
  const TraceSet t = OneExpertEach({2, 0, 3, 1});
  auto vanilla = Placement::Vanilla({0}, 4, 2);  // Experts 0, 1 → device 0; 2, 3 → device 1.
  const std::vector<int> devices = PerfectRequests(t, *vanilla);
  EXPECT_EQ(devices, (std::vector<int>{1, 0, 1, 0}));
  EXPECT_DOUBLE_EQ(EvaluateDp(t, *vanilla, devices)->lar, 1.0);
}

TEST(PerfectRequestsTest, ArrivalOrderWithinTheTokenCapacity) {
  // Every request wants device 0; a device holds ⌊1.05 · 12 / 2⌋ = 6 tokens: two requests.
  const TraceSet t = OneExpertEach({0, 1, 0, 1});
  auto vanilla = Placement::Vanilla({0}, 4, 2);
  EXPECT_EQ(PerfectRequests(t, *vanilla), (std::vector<int>{0, 0, 1, 1}));
  // With room for everything (eps 1: capacity 12) they all stay.
  EXPECT_EQ(PerfectRequests(t, *vanilla, 1.0), (std::vector<int>{0, 0, 0, 0}));
}

TEST(PerfectRequestsTest, RandomTracesStayBalancedAndBeatRoundRobinOnAverage) {
  std::mt19937 rng(7);
  double perfect = 0, blind = 0;
  for (int trial = 0; trial < 20; ++trial) {
    TraceSet t;
    t.header.num_experts = 8;
    t.header.top_k = 2;
    t.header.moe_layers = {0, 1};
    for (int r = 0; r < 30; ++r) {
      const int n = 1 + static_cast<int>(rng() % 5);
      std::vector<uint32_t> tokens(n, 1);
      std::vector<uint16_t> experts;
      for (int i = 0; i < n * 2 * 2; ++i) experts.push_back(static_cast<uint16_t>(rng() % 8));
      ASSERT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, experts).ok());
    }
    auto placement = Placement::Random({0, 1}, 8, 4, trial);
    const std::vector<int> devices = PerfectRequests(t, *placement);
    auto m = EvaluateDp(t, *placement, devices);
    ASSERT_TRUE(m.ok()) << m.status();
    // The capacity holds unless no device had room (then the least loaded takes the request,
    // at most one request of ≤ 5 tokens over).
    std::vector<int64_t> load(4, 0);
    for (int r = 0; r < t.num_requests(); ++r) {
      load[devices[r]] += t.request_begin[r + 1] - t.request_begin[r];
    }
    for (int64_t l : load) EXPECT_LE(l, 1.05 * t.num_tokens() / 4 + 5) << trial;
    perfect += m->lar;
    blind += EvaluateDp(t, *placement, RoundRobinRequests(t, 4))->lar;
  }
  EXPECT_GT(perfect, blind * 1.1);
}

}  // namespace
}  // namespace semmoe::planner
