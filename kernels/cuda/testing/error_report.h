// The largest error of each GPU kernel against its CPU reference over all the cases a test
// binary ran, printed when the binary exits, one line per kernel:
//   kernel error: rms_norm: max_abs 1.19e-07, max_rel 2.38e-07 over 1234567 values
// (max_rel = max |got − want| / max(|want|, 1), the scale the tests' tolerances use).
// tests/gpu/run.sh copies these lines into its summary; the tests still assert their tolerances.
#ifndef SEMMOE_KERNELS_CUDA_TESTING_ERROR_REPORT_H_
#define SEMMOE_KERNELS_CUDA_TESTING_ERROR_REPORT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "absl/types/span.h"

namespace semmoe::kernels::cuda::testing {

class ErrorReport {
 public:
  static void Add(const std::string& kernel, absl::Span<const float> got,
                  absl::Span<const float> want) {
    Entry& e = Get().entries_[kernel];
    const size_t n = std::min(got.size(), want.size());
    for (size_t i = 0; i < n; ++i) {
      const double diff = std::abs(static_cast<double>(got[i]) - want[i]);
      e.max_abs = std::max(e.max_abs, diff);
      e.max_rel = std::max(e.max_rel, diff / std::max(1.0, std::abs(static_cast<double>(want[i]))));
    }
    e.values += static_cast<int64_t>(n);
  }

  ~ErrorReport() {
    for (const auto& [kernel, e] : entries_) {
      std::printf("kernel error: %s: max_abs %.3g, max_rel %.3g over %lld values\n", kernel.c_str(),
                  e.max_abs, e.max_rel, static_cast<long long>(e.values));
    }
    std::fflush(stdout);
  }

 private:
  struct Entry {
    double max_abs = 0, max_rel = 0;
    int64_t values = 0;
  };
  static ErrorReport& Get() {
    static ErrorReport report;  // Destroyed (and printed) at exit.
    return report;
  }
  std::map<std::string, Entry> entries_;
};

}  // namespace semmoe::kernels::cuda::testing

#endif  // SEMMOE_KERNELS_CUDA_TESTING_ERROR_REPORT_H_
