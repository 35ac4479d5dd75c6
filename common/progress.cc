#include "common/progress.h"

#include <unistd.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace semmoe {
namespace {

// "1h2m3s", "4m5s", "6s".
std::string ShortDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return absl::StrFormat("%dh%dm%ds", s / 3600, s % 3600 / 60, s % 60);
  if (s >= 60) return absl::StrFormat("%dm%ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace

bool ProgressEnabled(bool quiet) { return !quiet && isatty(STDERR_FILENO) == 1; }

Progress::Progress(ProgressOptions options)
    : options_(std::move(options)), start_(options_.clock->Now()) {}

Progress::~Progress() { Finish(); }

std::string Progress::Line(const ProgressOptions& o, int64_t done, absl::Duration elapsed,
                           const std::string& detail) {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  const double rate = seconds > 0 ? done / seconds : 0;
  std::string line = absl::StrCat(o.label, ": ", done);
  if (o.total > 0) absl::StrAppend(&line, "/", o.total);
  absl::StrAppend(&line, " ", o.unit);
  if (o.total > 0) absl::StrAppend(&line, absl::StrFormat(" (%.1f%%)", 100.0 * done / o.total));
  absl::StrAppend(&line, absl::StrFormat(", %.1f %s/s", rate, o.unit));
  if (o.total > 0 && done < o.total && rate > 0) {
    absl::StrAppend(&line, ", ETA ", ShortDuration((o.total - done) / rate));
  } else if (o.total > 0 && done >= o.total) {
    absl::StrAppend(&line, ", took ", ShortDuration(seconds));
  }
  if (!detail.empty()) absl::StrAppend(&line, " [", detail, "]");
  return line;
}

void Progress::DrawLocked(absl::Time now) {
  // \r and clear-to-end-of-line: the line is redrawn in place.
  std::fprintf(options_.out, "\r%s\x1b[K", Line(options_, done_, now - start_, detail_).c_str());
  std::fflush(options_.out);
  last_draw_ = now;
}

void Progress::Add(int64_t n) {
  if (!options_.enabled) return;
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  done_ += n;
  const absl::Time now = options_.clock->Now();
  if (now - last_draw_ >= options_.interval) DrawLocked(now);
}

void Progress::SetDetail(std::string detail) {
  if (!options_.enabled) return;
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  detail_ = std::move(detail);
  DrawLocked(options_.clock->Now());
}

void Progress::Finish() {
  if (!options_.enabled) return;
  absl::MutexLock lock(&mu_);
  if (finished_) return;
  finished_ = true;
  detail_.clear();
  DrawLocked(options_.clock->Now());
  std::fputc('\n', options_.out);
  std::fflush(options_.out);
}

}  // namespace semmoe
