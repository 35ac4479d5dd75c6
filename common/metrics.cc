#include "common/metrics.h"

#include <algorithm>
#include <sstream>

#include "prometheus/text_serializer.h"

namespace semmoe::metrics {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  ++count_;
  sum_ += value;
}

HistogramSnapshot Histogram::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return {.upper_bounds = bounds_, .counts = counts_, .count = count_, .sum = sum_};
}

std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75,
          1,     1.5,    2,     3,    5,     7.5,  10,    15,  20,   30,  60,  120};
}

prometheus::ClientMetric& Families::Add(const std::string& name, const std::string& help,
                                        prometheus::MetricType type, const Labels& labels) {
  auto it = std::find_if(families_.begin(), families_.end(),
                         [&](const prometheus::MetricFamily& f) { return f.name == name; });
  if (it == families_.end()) {
    families_.push_back({.name = name, .help = help, .type = type, .metric = {}});
    it = families_.end() - 1;
  }
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  it->metric.push_back(std::move(m));
  return it->metric.back();
}

void Families::Counter(const std::string& name, const std::string& help, const Labels& labels,
                       double value) {
  Add(name, help, prometheus::MetricType::Counter, labels).counter.value = value;
}

void Families::Gauge(const std::string& name, const std::string& help, const Labels& labels,
                     double value) {
  Add(name, help, prometheus::MetricType::Gauge, labels).gauge.value = value;
}

void Families::Histogram(const std::string& name, const std::string& help, const Labels& labels,
                         const HistogramSnapshot& h) {
  prometheus::ClientMetric& m = Add(name, help, prometheus::MetricType::Histogram, labels);
  m.histogram.sample_count = h.count;
  m.histogram.sample_sum = h.sum;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    cumulative += h.counts[i];
    m.histogram.bucket.push_back(
        {.cumulative_count = cumulative, .upper_bound = h.upper_bounds[i]});
  }
  m.histogram.bucket.push_back(
      {.cumulative_count = h.count, .upper_bound = std::numeric_limits<double>::infinity()});
}

std::string Families::Text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families_);
  return out.str();
}

}  // namespace semmoe::metrics
