// Engines that fetch their placement version from the planner (engine serve --placement VERSION
// --planner HOST:PORT), at a real model's scale: Qwen3's 151,936-token vocabulary, 48 MoE layers
// × 128 experts on G = 8, whose affinity tables (about 11 MB) are over gRPC's default 4 MB
// message limit. The placement, affinity tables and A tables arrive whole, and the device
// predictor built from them sends a seen token to the rank its rows prefer. In tests/: it needs
// the planner's server and the engine.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/parallel/device_predictor.h"
#include "engine/server/planner_fetch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/affinity/testing/real_scale.h"
#include "planner/affinity/token_affinity.h"
#include "planner/affinity/transition_table.h"
#include "planner/server/serve.h"
#include "planner/store/placement_store.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe {
namespace {

using ::testing::HasSubstr;

TEST(EngineFetchTest, RealScaleVersionArrivesWholeAndPredicts) {
  const planner::testing::RealScaleVersion big = planner::testing::MakeRealScaleVersion();
  planner::TransitionTable a;  // Every history predicts device 3, confidence 0.25.
  a.num_devices = 8;
  a.layers.assign(48, std::vector<planner::TransitionTable::Entry>(9 * 8, {3, 0.25f}));
  a.layers[0].clear();
  const std::string db = planner::TempDatabasePath("engine_fetch.db");
  {
    auto store = planner::PlacementStore::Open(db);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->AddModel("qwen3", 48, 128).ok());
    planner::PlacementVersion v{.model = "qwen3", .name = "big", .algorithm = "semantic"};
    v.placement = big.placement;
    ASSERT_TRUE((*store)->Create(v, big.affinity, a.Serialize()).ok());
    v.name = "bare";
    ASSERT_TRUE((*store)->Create(v).ok());
  }
  auto server = planner::PlannerServer::Start({.db = db});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = absl::StrCat("127.0.0.1:", (*server)->port());

  auto got = engine::FetchPlacementVersion(address, 1, /*with_tables=*/true);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GT(got->affinity.size(), 4u << 20);
  EXPECT_EQ(got->affinity, big.affinity);
  EXPECT_EQ(got->layer_tables, a.Serialize());
  auto placement = planner::Placement::FromJson(got->placement_json);
  ASSERT_TRUE(placement.ok()) << placement.status();
  EXPECT_EQ(placement->ToJson(), big.placement.ToJson());

  auto affinity = planner::TokenAffinity::Deserialize(got->affinity);
  ASSERT_TRUE(affinity.ok()) << affinity.status();
  engine::DevicePredictor without_history(*affinity, *placement);
  std::vector<int32_t> tokens;
  for (size_t i = 0; i < big.seen.size(); i += 127)
    tokens.push_back(static_cast<int32_t>(big.seen[i]));
  std::vector<float> scores(tokens.size() * 8);
  without_history.Score(5, tokens, {}, {}, {}, absl::MakeSpan(scores));
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* row = &scores[t * 8];
    EXPECT_EQ(std::max_element(row, row + 8) - row, big.PreferredDevice(t * 127)) << tokens[t];
  }

  // Without tables, only the placement (DP ranks, or a version that has none).
  auto bare = engine::FetchPlacementVersion(address, 2, /*with_tables=*/true);
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_TRUE(bare->affinity.empty());
  EXPECT_TRUE(bare->layer_tables.empty());
  auto dp = engine::FetchPlacementVersion(address, 1, /*with_tables=*/false);
  ASSERT_TRUE(dp.ok());
  EXPECT_TRUE(dp->affinity.empty());

  auto missing = engine::FetchPlacementVersion(address, 9, true);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("version 9's placement"));
  (*server)->Shutdown();
  auto gone = engine::FetchPlacementVersion(address, 1, true, absl::Seconds(2));
  ASSERT_FALSE(gone.ok());
  EXPECT_THAT(gone.status().message(), HasSubstr(absl::StrCat("planner ", address)));
}

}  // namespace
}  // namespace semmoe
