#include "planner/cli/drift.h"

#include <random>
#include <sstream>

#include "common/file.h"
#include "gtest/gtest.h"
#include "planner/cli/commands.h"
#include "planner/store/testing/temp_database_path.h"
#include "planner/trace/trace_writer.h"

namespace semmoe::planner::cli {
namespace {

// Four topics, each with its own tokens and, per layer, its own 4 of 16 experts; `shift` moves
// every topic onto another topic's experts (the traffic has drifted); `requests` 0 writes none.
std::string WriteTrace(const std::string& name, uint64_t seed, int shift, int requests = 40,
                       uint32_t experts = 16) {
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
    const int topic = r % 4;
    const uint64_t id = *(*w)->AddRequest("r" + std::to_string(r));
    for (uint32_t p = 0; p < 12; ++p) {
      std::vector<int32_t> e;
      for (int l = 0; l < 2; ++l) {
        const int a = rng() % 4, b = (a + 1 + rng() % 3) % 4;
        e.push_back(((topic + l + shift) % 4) * 4 + a);
        e.push_back(((topic + l + shift) % 4) * 4 + b);
      }
      EXPECT_TRUE((*w)->AddToken(id, p, topic * 100 + rng() % 30, e, {.5f, .5f, .5f, .5f}).ok());
    }
  }
  EXPECT_TRUE((*w)->Close().ok());
  return path;
}

TEST(DriftTest, InSampleIsZeroAndDriftedTrafficShows) {
  const std::string db = TempDatabasePath("drift.db");
  const std::string profile = WriteTrace("profile.trace", 1, 0);
  std::ostringstream out;
  auto v = Build({.db = db, .model = "m", .traces = {profile}, .devices = 4}, out);
  ASSERT_TRUE(v.ok()) << v.status();

  // On the traffic it was planned from: no drift, at any layer.
  auto same = DriftReport({.db = db, .version = *v, .live = {profile}});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)["mode"], "dp");
  EXPECT_EQ((*same)["live_tokens"], 40 * 12);
  EXPECT_GT((*same)["planned_lar"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ((*same)["lar_drift"].get<double>(), 0.0);
  ASSERT_EQ((*same)["layers"].size(), 2u);
  for (const auto& l : (*same)["layers"]) {
    EXPECT_DOUBLE_EQ(l["lar_drift"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(l["live_expert_load"].get<double>(), l["planned_expert_load"].get<double>());
  }

  // The same tokens now use other experts: the version's LAR drops at every layer.
  const std::string drifted = WriteTrace("drifted.trace", 2, 1);
  auto moved = DriftReport({.db = db, .version = *v, .live = {drifted}});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_LT((*moved)["lar_drift"].get<double>(), -0.2);
  for (const auto& l : (*moved)["layers"]) EXPECT_LT(l["lar_drift"].get<double>(), -0.2) << l;
  std::ostringstream text;
  ASSERT_TRUE(Drift({.db = db, .version = *v, .live = {drifted}}, text).ok());
  EXPECT_NE(text.str().find("planned LAR"), std::string::npos) << text.str();

  // Bad input names what is wrong.
  EXPECT_EQ(DriftReport({.db = db, .version = *v}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto empty = DriftReport({.db = db, .version = *v, .live = {WriteTrace("e.trace", 3, 0, 0)}});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("no tokens"), std::string::npos);
  auto other = DriftReport(
      {.db = db, .version = *v, .live = {WriteTrace("o.trace", 4, 0, 8, /*experts=*/32)}});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("32 experts"), std::string::npos)
      << other.status().message();
  EXPECT_FALSE(DriftReport({.db = db, .version = 99, .live = {profile}}).ok());
  EXPECT_FALSE(DriftReport({.db = db, .version = *v, .live = {"/nonexistent.trace"}}).ok());
}

}  // namespace
}  // namespace semmoe::planner::cli
