// Test helper: a routing trace with four topics, each with its own tokens and, per MoE layer,
// its own 4 of 16 experts — what the planner's tests build versions from and evaluate on.
#ifndef SEMMOE_PLANNER_CLI_TESTING_TOPIC_TRACE_H_
#define SEMMOE_PLANNER_CLI_TESTING_TOPIC_TRACE_H_

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "common/file.h"
#include "gtest/gtest.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::planner::testing {

// Writes it to TEST_TMPDIR/`name` and returns the path. `shift` moves every topic onto another
// topic's experts (drifted traffic); `requests` of 12 tokens each; `experts` in the header;
// request r is of topic r % `topics` (fewer than 4: traffic of only some topics); `layer1_shift`
// moves the topics at layer 1 only (a shift no relabelling of devices undoes: experts must move).
inline std::string WriteTopicTrace(const std::string& name, uint64_t seed, int shift = 0,
                                   int requests = 40, uint32_t experts = 16, int topics = 4,
                                   int layer1_shift = 0) {
  const std::string path = JoinPath(std::getenv("TEST_TMPDIR"), name);
  trace::TraceHeader h;
  h.num_experts = experts;
  h.vocab_size = 1000;
  h.top_k = 2;
  h.moe_layers = {0, 1};
  auto w = trace::TraceWriter::Create(path, h);
  EXPECT_TRUE(w.ok());
  std::mt19937 rng(seed);
  for (int r = 0; r < requests; ++r) {
    const int topic = r % topics;
    const uint64_t id = *(*w)->AddRequest("r" + std::to_string(r));
    for (uint32_t p = 0; p < 12; ++p) {
      std::vector<int32_t> e;
      for (int l = 0; l < 2; ++l) {
        const int a = rng() % 4, b = (a + 1 + rng() % 3) % 4;
        const int group = (topic + l + shift + (l == 1 ? layer1_shift : 0)) % 4;
        e.push_back(group * 4 + a);
        e.push_back(group * 4 + b);
      }
      EXPECT_TRUE((*w)->AddToken(id, p, topic * 100 + rng() % 30, e, {.5f, .5f, .5f, .5f}).ok());
    }
  }
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

}  // namespace semmoe::planner::testing

#endif  // SEMMOE_PLANNER_CLI_TESTING_TOPIC_TRACE_H_
