// Progress: one line on a terminal for long work (`engine trace` / `score`, `planner build` /
// `eval`, `loadgen`): done and total, rate and ETA, redrawn in place at most every `interval`,
// and a last line when the work ends. It writes only to its stream (stderr), never to stdout,
// and nothing at all when disabled — callers disable it with `--quiet` or when stderr is not a
// terminal (ProgressEnabled).
//
// Thread-safe: Add() may be called from any thread.
#ifndef SEMMOE_COMMON_PROGRESS_H_
#define SEMMOE_COMMON_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace semmoe {

struct ProgressOptions {
  std::string label;  // What runs, e.g. "engine trace".
  std::string unit;   // What is counted, e.g. "prompts".
  int64_t total = 0;  // 0: unknown (no percentage, no ETA).
  bool enabled = true;
  std::FILE* out = stderr;       // Not owned.
  Clock* clock = Clock::Real();  // Not owned.
  absl::Duration interval = absl::Milliseconds(250);
};

// Whether progress should be shown: not `quiet` and stderr is a terminal.
bool ProgressEnabled(bool quiet);

class Progress {
 public:
  explicit Progress(ProgressOptions options);
  ~Progress();  // Finish().
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `n` more units done; redraws when `interval` passed since the last draw.
  void Add(int64_t n = 1);
  // What runs now (e.g. "solving"), shown in brackets after the line until the next call;
  // redraws at once. For work counted in steps of unequal length (`planner build`).
  void SetDetail(std::string detail);
  // Draws the final line and ends it with a newline (once; later calls do nothing).
  void Finish();

  // The line for `done` units after `elapsed` (no control characters), e.g.
  // "engine trace: 312/1500 prompts (20.8%), 17.3 prompts/s, ETA 1m8s"; a non-empty `detail`
  // is appended as " [detail]".
  static std::string Line(const ProgressOptions& options, int64_t done, absl::Duration elapsed,
                          const std::string& detail = "");

 private:
  void DrawLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ProgressOptions options_;
  const absl::Time start_;
  absl::Mutex mu_;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_draw_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::string detail_ ABSL_GUARDED_BY(mu_);
};

}  // namespace semmoe

#endif  // SEMMOE_COMMON_PROGRESS_H_
