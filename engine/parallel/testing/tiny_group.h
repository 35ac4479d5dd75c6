// Test helpers for engine groups run as threads: a tiny model, prompts, what one device answers,
// and a sink that collects one request's output.
#ifndef SEMMOE_ENGINE_PARALLEL_TESTING_TINY_GROUP_H_
#define SEMMOE_ENGINE_PARALLEL_TESTING_TINY_GROUP_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "engine/parallel/group_engine.h"

namespace semmoe::engine::testing {

// Collects one request's output; wait on `done` before reading it.
class Collect : public RequestSink {
 public:
  void OnToken(int32_t token, absl::string_view) override {
    tokens.push_back(token);
    count.fetch_add(1);
  }
  void OnDone(const runtime::GenerationResult& r) override {
    result = r;
    done.Notify();
  }
  void OnError(const absl::Status& s) override {
    status = s;
    done.Notify();
  }
  std::vector<int32_t> tokens;  // Read only after `done`.
  std::atomic<int> count{0};    // Tokens so far, readable any time.
  runtime::GenerationResult result;
  absl::Status status;
  absl::Notification done;
};

// A seeded tiny qwen3_moe checkpoint (2 MoE layers × 8 experts) in TEST_TMPDIR, written once.
const std::string& TinyDir();

// A prompt of `length` ids below 250, varied by `salt`.
std::vector<int32_t> Prompt(int length, int salt);

// What one device generates (greedy, ignoring EOS) for request "r<i>" with Prompt(3 + i % 7, i).
std::map<std::string, std::vector<int32_t>> Expected(int requests, int max_tokens);

}  // namespace semmoe::engine::testing

#endif  // SEMMOE_ENGINE_PARALLEL_TESTING_TINY_GROUP_H_
