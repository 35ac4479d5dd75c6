#include "router/core/latency_window.h"

#include "gtest/gtest.h"

namespace semmoe::router {
namespace {

TEST(LatencyWindowTest, NearestRankPercentiles) {
  LatencyWindow w;
  EXPECT_EQ(w.Summary().count, 0);
  for (int i = 1; i <= 100; ++i) w.Add(i);
  const PercentileSummary s = w.Summary();
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p90, 90);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
}

TEST(LatencyWindowTest, KeepsTheMostRecent) {
  LatencyWindow w(4);
  for (double x : {100.0, 100.0, 1.0, 2.0, 3.0, 4.0}) w.Add(x);
  const PercentileSummary s = w.Summary();
  EXPECT_EQ(s.count, 6);
  EXPECT_DOUBLE_EQ(s.p99, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
}

}  // namespace
}  // namespace semmoe::router
