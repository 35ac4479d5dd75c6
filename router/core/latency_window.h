// Percentiles over the most recent samples (a ring of `capacity` values), for the router's
// latency statistics. Thread-safe.
#ifndef SEMMOE_ROUTER_CORE_LATENCY_WINDOW_H_
#define SEMMOE_ROUTER_CORE_LATENCY_WINDOW_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace semmoe::router {

struct PercentileSummary {
  int64_t count = 0;                           // All samples ever added.
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;  // Over the retained ones.
};

class LatencyWindow {
 public:
  explicit LatencyWindow(size_t capacity = 65536) : capacity_(capacity) {}

  void Add(double value) {
    absl::MutexLock lock(&mu_);
    if (values_.size() < capacity_) {
      values_.push_back(value);
    } else {
      values_[next_] = value;
      next_ = (next_ + 1) % capacity_;
    }
    ++count_;
  }

  // Nearest-rank percentiles.
  PercentileSummary Summary() const {
    std::vector<double> v;
    PercentileSummary s;
    {
      absl::MutexLock lock(&mu_);
      v = values_;
      s.count = count_;
    }
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      const size_t rank = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
      return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
    };
    s.p50 = at(0.50);
    s.p90 = at(0.90);
    s.p99 = at(0.99);
    double sum = 0;
    for (double x : v) sum += x;
    s.mean = sum / static_cast<double>(v.size());
    return s;
  }

 private:
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::vector<double> values_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace semmoe::router

#endif  // SEMMOE_ROUTER_CORE_LATENCY_WINDOW_H_
