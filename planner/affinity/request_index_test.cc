#include "planner/affinity/request_index.h"

#include <string>

#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

// Two topics: requests about "code" (tokens 1..9) on device 0, about "prose" (11..19) on 1.
trace::TraceSet Topics() {
  trace::TraceSet t;
  t.header.num_experts = 2;
  t.header.top_k = 1;
  t.header.moe_layers = {0};
  for (int r = 0; r < 6; ++r) {
    const uint32_t base = r % 2 == 0 ? 1 : 11;
    std::vector<uint32_t> tokens = {base, base + 1, base + 2 + r % 3, 100};  // 100 is common.
    EXPECT_TRUE(t.AddRequest("r" + std::to_string(r), tokens, std::vector<uint16_t>(4, 0)).ok());
  }
  return t;
}

TEST(RequestIndexTest, NewRequestsGoWhereTheirNeighboursWent) {
  const trace::TraceSet t = Topics();
  auto index = RequestIndex::Build(t, {0, 1, 0, 1, 0, 1}, 2);
  ASSERT_TRUE(index.ok()) << index.status();
  std::vector<double> votes = index->Vote(std::vector<uint32_t>{2, 3, 100}, 3);
  EXPECT_GT(votes[0], votes[1]);
  votes = index->Vote(std::vector<uint32_t>{12, 13}, 3);
  EXPECT_GT(votes[1], votes[0]);
  // Unknown tokens carry no evidence.
  votes = index->Vote(std::vector<uint32_t>{999}, 3);
  EXPECT_EQ(votes, (std::vector<double>{0, 0}));
  // The rule with capacity: three code requests cannot all go to device 0.
  const std::vector<std::vector<uint32_t>> prompts = {{1, 2}, {2, 3}, {1, 3}, {12, 13}};
  const std::vector<int> devices = KnnRequests(prompts, *index, 3, 0.05);
  EXPECT_EQ(devices[0], 0);
  EXPECT_EQ(devices[1], 0);
  EXPECT_EQ(devices[2], 1);  // Device 0 is full (capacity 1.05 · 8 / 2 = 4.2 tokens).
  EXPECT_EQ(devices[3], 1);
}

TEST(RequestIndexTest, SerializesAndRejectsCorruption) {
  const trace::TraceSet t = Topics();
  auto index = RequestIndex::Build(t, {0, 1, 0, 1, 0, 1}, 2);
  ASSERT_TRUE(index.ok());
  const std::string bytes = index->Serialize();
  auto back = RequestIndex::Deserialize(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->num_requests(), 6);
  EXPECT_EQ(back->Vote(std::vector<uint32_t>{12, 13}, 3),
            index->Vote(std::vector<uint32_t>{12, 13}, 3));
  EXPECT_FALSE(RequestIndex::Build(t, {0, 1}, 2).ok());
  EXPECT_FALSE(RequestIndex::Build(t, {0, 1, 0, 1, 0, 7}, 2).ok());
  uint32_t state = 3;
  int rejected = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = bytes;
    for (int f = 0; f <= trial % 3; ++f) {
      state = state * 1664525u + 1013904223u;
      bad[state % bad.size()] = static_cast<char>(state >> 24);
    }
    if (trial % 5 == 0) bad.resize(state % bad.size());
    auto parsed = RequestIndex::Deserialize(bad);  // Never a crash.
    if (!parsed.ok()) {
      ++rejected;
      EXPECT_NE(parsed.status().message().find("request index"), std::string::npos);
    }
  }
  EXPECT_GT(rejected, 500);
}

}  // namespace
}  // namespace semmoe::planner
