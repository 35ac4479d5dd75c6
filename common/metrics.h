// Prometheus metrics in the text exposition format, for every component's GET /metrics.
// Components build their families at scrape time from the stats snapshots they already keep
// (Families), so a scrape costs nothing between scrapes; latencies go into fixed-bucket
// Histograms. prometheus-cpp (Debian's prometheus-cpp-dev) serialises them, so names, labels,
// escaping and the _bucket/_sum/_count series follow the format.
//
// Names follow Prometheus' conventions: base units (seconds, bytes), `_total` for counters.
//
// Thread-safety: Histogram is thread-safe; Families is not (one per scrape).
#ifndef SEMMOE_COMMON_METRICS_H_
#define SEMMOE_COMMON_METRICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/metric_family.h"

namespace semmoe::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct HistogramSnapshot {
  std::vector<double> upper_bounds;  // Ascending; +Inf is implied.
  std::vector<uint64_t> counts;      // Per bucket (not cumulative), then the +Inf overflow.
  uint64_t count = 0;
  double sum = 0;
};

// Fixed buckets; Observe is thread-safe and cheap (a binary search and a lock).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  HistogramSnapshot Snapshot() const;

 private:
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
};

// Request latencies, seconds: 1 ms to 2 minutes.
std::vector<double> LatencyBuckets();

class Families {
 public:
  // Each adds one series to the family `name` (created with `help` on first use).
  void Counter(const std::string& name, const std::string& help, const Labels& labels,
               double value);
  void Gauge(const std::string& name, const std::string& help, const Labels& labels, double value);
  void Histogram(const std::string& name, const std::string& help, const Labels& labels,
                 const HistogramSnapshot& h);
  // The text exposition format (version 0.0.4).
  std::string Text() const;

 private:
  prometheus::ClientMetric& Add(const std::string& name, const std::string& help,
                                prometheus::MetricType type, const Labels& labels);
  std::vector<prometheus::MetricFamily> families_;
};

// The Content-Type of the text format.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace semmoe::metrics

#endif  // SEMMOE_COMMON_METRICS_H_
