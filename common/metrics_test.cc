#include "common/metrics.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::metrics {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, CountersAndGaugesInTheTextFormat) {
  Families f;
  f.Counter("semmoe_x_requests_total", "Requests by outcome.", {{"outcome", "completed"}}, 3);
  f.Counter("semmoe_x_requests_total", "Requests by outcome.", {{"outcome", "failed"}}, 1);
  f.Gauge("semmoe_x_queue_depth", "Waiting.", {}, 2);
  const std::string text = f.Text();
  EXPECT_THAT(text, HasSubstr("# HELP semmoe_x_requests_total Requests by outcome.\n"
                              "# TYPE semmoe_x_requests_total counter\n"
                              "semmoe_x_requests_total{outcome=\"completed\"} 3"));
  EXPECT_THAT(text, HasSubstr("semmoe_x_requests_total{outcome=\"failed\"} 1"));
  EXPECT_THAT(text, HasSubstr("# TYPE semmoe_x_queue_depth gauge\nsemmoe_x_queue_depth 2"));
  // One HELP/TYPE per family.
  EXPECT_EQ(text.find("# TYPE semmoe_x_requests_total"),
            text.rfind("# TYPE semmoe_x_requests_total"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  Families f;
  f.Gauge("semmoe_g", "g", {{"error", "a \"quoted\"\\path\nline"}}, 1);
  EXPECT_THAT(f.Text(), HasSubstr(R"(semmoe_g{error="a \"quoted\"\\path\nline"} 1)"));
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.1);  // On the bound: in that bucket (le).
  h.Observe(0.5);
  h.Observe(7);
  Families f;
  f.Histogram("semmoe_latency_seconds", "Latency.", {{"arm", "A"}}, h.Snapshot());
  const std::string text = f.Text();
  EXPECT_THAT(text, HasSubstr("semmoe_latency_seconds_bucket{arm=\"A\",le=\"0.1\"} 2"));
  EXPECT_THAT(text, HasSubstr("semmoe_latency_seconds_bucket{arm=\"A\",le=\"1\"} 3"));
  EXPECT_THAT(text, HasSubstr("semmoe_latency_seconds_bucket{arm=\"A\",le=\"+Inf\"} 4"));
  EXPECT_THAT(text, HasSubstr("semmoe_latency_seconds_count{arm=\"A\"} 4"));
  EXPECT_THAT(text, HasSubstr("semmoe_latency_seconds_sum{arm=\"A\"} 7.65"));
}

TEST(MetricsTest, HistogramCountsFromManyThreads) {
  Histogram h(LatencyBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h] {
      for (int i = 0; i < 1000; ++i) h.Observe(0.01 * (i % 7));
    });
  }
  for (auto& t : threads) t.join();
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.count, 4000u);
  uint64_t total = 0;
  for (uint64_t c : s.counts) total += c;
  EXPECT_EQ(total, 4000u);
}

}  // namespace
}  // namespace semmoe::metrics
