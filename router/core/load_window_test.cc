#include "router/core/load_window.h"

#include "gtest/gtest.h"

namespace semmoe::router {
namespace {

// Two MoE layers (model layers 1 and 3) of 4 experts; `n` activations of expert `hot` per layer
// on top of one of every expert per unit of `base`.
ExpertLoad Counters(int64_t base, int hot, int64_t n) {
  ExpertLoad c;
  for (int layer : {1, 3}) {
    std::vector<int64_t> per(4, base);
    per[hot] += n;
    c.served.emplace_back(layer, 4 * base + n);
    c.per_expert.emplace_back(layer, per);
  }
  return c;
}

const absl::Time kStart = absl::FromUnixSeconds(1'800'000'000);

TEST(LoadWindowTest, ReportsTheLastHalfToWholeWindowNotSinceStart) {
  LoadWindow w(absl::Seconds(60));
  // An hour of expert 0 being hot, then the traffic moves to expert 2.
  LoadWindow::Windowed got = w.Observe(kStart, Counters(1000, 0, 50'000));
  EXPECT_EQ(got.span, absl::ZeroDuration());  // The first sight: the counters since start.
  EXPECT_EQ(got.load.per_expert[0].second[0], 51'000);
  int64_t hot2 = 0;
  for (int s = 2; s <= 120; s += 2) {
    hot2 += 300;
    ExpertLoad now = Counters(1000 + s, 0, 50'000);
    for (auto& [layer, per] : now.per_expert) per[2] += hot2;
    for (auto& [layer, served] : now.served) served += hot2;
    got = w.Observe(kStart + absl::Seconds(s), now);
    EXPECT_LE(got.span, absl::Seconds(60)) << s;
    if (s >= 30) {
      EXPECT_GE(got.span, absl::Seconds(30)) << s;
    }
  }
  // Over the window expert 2 is the hot one; since start, expert 0 still leads.
  const int64_t span_s = absl::ToInt64Seconds(got.span);
  ASSERT_EQ(got.load.per_expert.size(), 2u);
  EXPECT_EQ(got.load.per_expert[1].first, 3);
  EXPECT_EQ(got.load.per_expert[1].second[2], span_s + 300 * span_s / 2);
  EXPECT_EQ(got.load.per_expert[1].second[0], span_s);
  EXPECT_EQ(got.load.served[0], std::make_pair(1, 4 * span_s + 300 * span_s / 2));
}

// Before its first pass an engine reports no layers, then layers without per-expert counts: what
// appears later counts from zero, so the first requests stay in the window.
TEST(LoadWindowTest, LayersAndExpertsThatAppearLaterCountFromZero) {
  LoadWindow w(absl::Seconds(60));
  w.Observe(kStart, ExpertLoad{});
  ExpertLoad bare = Counters(0, 0, 0);
  for (auto& [layer, per] : bare.per_expert) per.clear();
  LoadWindow::Windowed got = w.Observe(kStart + absl::Seconds(1), bare);
  EXPECT_EQ(got.span, absl::Seconds(1));
  got = w.Observe(kStart + absl::Seconds(2), Counters(3, 2, 5));
  EXPECT_EQ(got.span, absl::Seconds(2));
  ASSERT_EQ(got.load.per_expert.size(), 2u);
  EXPECT_EQ(got.load.per_expert[1].second[2], 8);
  EXPECT_EQ(got.load.served[1].second, 17);
}

TEST(LoadWindowTest, ARestartedRankOrAnotherShapeStartsTheWindowAnew) {
  LoadWindow w(absl::Seconds(60));
  w.Observe(kStart, Counters(1000, 0, 10));
  LoadWindow::Windowed got = w.Observe(kStart + absl::Seconds(40), Counters(1100, 0, 10));
  EXPECT_EQ(got.load.per_expert[0].second[1], 100);
  // The rank restarted: its counters are lower. The window starts from them, never negative.
  got = w.Observe(kStart + absl::Seconds(50), Counters(5, 1, 3));
  EXPECT_EQ(got.span, absl::ZeroDuration());
  EXPECT_EQ(got.load.per_expert[0].second[1], 8);
  got = w.Observe(kStart + absl::Seconds(60), Counters(7, 1, 3));
  EXPECT_EQ(got.span, absl::Seconds(10));
  EXPECT_EQ(got.load.per_expert[0].second[1], 2);
  // Another number of experts (another model): anew as well.
  ExpertLoad other = Counters(7, 1, 3);
  other.per_expert[0].second.push_back(0);
  got = w.Observe(kStart + absl::Seconds(70), other);
  EXPECT_EQ(got.span, absl::ZeroDuration());
  EXPECT_EQ(got.load.per_expert[0].second.size(), 5u);
}

}  // namespace
}  // namespace semmoe::router
