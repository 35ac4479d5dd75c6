#include "planner/placement/placement.h"

#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PlacementTest, VanillaIsContiguousBlocks) {
  auto p = Placement::Vanilla({0, 1, 3}, 8, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Device(2, 0), 0);
  EXPECT_EQ(p->Device(2, 3), 1);
  EXPECT_EQ(p->Device(2, 7), 3);
  EXPECT_EQ(p->LocalSlot(0, 5), 1);
  EXPECT_THAT(p->ExpertsOn(1, 2), ElementsAre(4, 5));
  EXPECT_EQ(p->experts_per_device(), 2);
}

TEST(PlacementTest, RandomIsBalancedSeededAndDiffersByLayer) {
  auto a = Placement::Random({0, 1}, 32, 8, 7), b = Placement::Random({0, 1}, 32, 8, 7),
       c = Placement::Random({0, 1}, 32, 8, 8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->ToJson(), b->ToJson());
  EXPECT_NE(a->ToJson(), c->ToJson());
  for (int d = 0; d < 8; ++d) EXPECT_EQ(a->ExpertsOn(0, d).size(), 4u);
  EXPECT_NE(a->ExpertsOn(0, 0), a->ExpertsOn(1, 0));
}

TEST(PlacementTest, JsonRoundTrip) {
  auto p = Placement::Random({1, 2}, 16, 4, 3);
  auto back = Placement::FromJson(p->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), p->ToJson());
  EXPECT_THAT(back->moe_layers(), ElementsAre(1, 2));
}

TEST(PlacementTest, BadPlacementsAreClearErrors) {
  EXPECT_THAT(std::string(Placement::Vanilla({0}, 10, 4).status().message()),
              HasSubstr("4 devices do not divide 10 experts"));
  EXPECT_THAT(std::string(Placement::FromAssignment({0}, 4, 2, {{0, 0, 0, 1}}).status().message()),
              HasSubstr("device 0 holds 3 experts, every device must hold 2"));
  EXPECT_THAT(std::string(Placement::FromAssignment({0}, 4, 2, {{0, 1, 2, 1}}).status().message()),
              HasSubstr("device 2 out of range"));
  EXPECT_THAT(
      std::string(Placement::FromAssignment({0, 1}, 4, 2, {{0, 1, 0, 1}}).status().message()),
      HasSubstr("device_of has 1 layers"));
  for (const char* json :
       {"{", "[]", R"({"format": "x"})", R"({"format": "semmoe-placement", "version": 2})",
        R"({"format": "semmoe-placement", "version": 1, "num_devices": 2,
                               "num_experts": 4, "moe_layers": [0], "device_of": [[0, 1, "a", 1]]})",
        R"({"format": "semmoe-placement", "version": 1, "num_devices": -2})"}) {
    EXPECT_FALSE(Placement::FromJson(json).ok()) << json;
  }
}

// Fuzz-style: random edits of a valid file give a Status, never a crash.
TEST(PlacementTest, CorruptedJsonNeverCrashes) {
  const std::string good = Placement::Random({0, 1, 2}, 16, 4, 1)->ToJson();
  std::mt19937 rng(2);
  int rejected = 0;
  for (int i = 0; i < 500; ++i) {
    std::string text = good;
    if (rng() % 3 == 0) {
      text.resize(rng() % text.size());
    } else {
      text[rng() % text.size()] = "0123456789,[]{}\"-"[rng() % 17];
    }
    rejected += !Placement::FromJson(text).ok();
  }
  EXPECT_GT(rejected, 250);
}

TEST(PlacementTest, ReplicasOfHotExperts) {
  auto p = Placement::Vanilla({0, 1}, 4, 2);  // 0,1 → device 0; 2,3 → device 1.
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->replicas_per_device(), 0);
  EXPECT_TRUE(p->Holds(0, 0, 1));
  EXPECT_FALSE(p->Holds(0, 0, 2));
  auto r = p->WithReplicas({{{2}, {0}}, {{3}, {1}}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->replicas_per_device(), 1);
  EXPECT_TRUE(r->Holds(0, 0, 2));
  EXPECT_EQ(r->Serving(0, 2, 0), 0);  // Its local replica.
  EXPECT_EQ(r->Serving(0, 3, 0), 1);  // Not replicated there: its home.
  EXPECT_EQ(r->Device(0, 2), 1);      // Homes unchanged.
  EXPECT_EQ(r->ReplicasOn(1, 1), (std::vector<int32_t>{1}));
  auto back = Placement::FromJson(r->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), r->ToJson());
  EXPECT_TRUE(back->Holds(1, 0, 3));
  EXPECT_EQ(p->ToJson().find("replicas"), std::string::npos);  // None: the plain form.
  // Unequal counts, a device's own expert, out of range, wrong shape.
  EXPECT_FALSE(p->WithReplicas({{{2}, {}}, {{3}, {1}}}).ok());
  EXPECT_FALSE(p->WithReplicas({{{1}, {0}}, {{3}, {1}}}).ok());
  EXPECT_FALSE(p->WithReplicas({{{9}, {0}}, {{3}, {1}}}).ok());
  EXPECT_FALSE(p->WithReplicas({{{2}, {0}}}).ok());
  std::string json = r->ToJson();
  const std::string from = "\"replicas\":[[[2]";
  json.replace(json.find(from), from.size(), "\"replicas\":[[[\"x\"]");
  auto bad = Placement::FromJson(json);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("replicas"), std::string::npos) << bad.status();
}

TEST(PlacementTest, RecordsItsTopologyAndRefusesAnother) {
  auto p = Placement::Random({0, 1}, 16, 8, 5);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->topology(), nullptr);
  EXPECT_EQ(p->ToJson().find("topology"), std::string::npos);  // Flat: the plain form.
  EXPECT_TRUE(p->CheckServes(*Topology::Parse("2x4")).ok());   // Flat serves anywhere.
  EXPECT_THAT(p->CheckServes(*Topology::Parse("2x2")).message(), HasSubstr("8 devices"));
  EXPECT_FALSE(p->WithTopology(*Topology::Parse("2x2")).ok());
  auto t = p->WithTopology(*Topology::Parse("2x4"));
  ASSERT_TRUE(t.ok()) << t.status();
  auto back = Placement::FromJson(t->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_NE(back->topology(), nullptr);
  EXPECT_EQ(back->topology()->Describe(), "2x4");
  EXPECT_EQ(back->ToJson(), t->ToJson());
  EXPECT_TRUE(back->CheckServes(*Topology::Parse("2x4")).ok());
  absl::Status refused = back->CheckServes(*Topology::Parse("4x2"));
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("built for topology 2x4"));
  // A recorded topology that is bad, or of the wrong size, is refused naming it.
  std::string json = t->ToJson();
  json.replace(json.find("\"nodes\":2"), 9, "\"nodes\":0");
  EXPECT_THAT(Placement::FromJson(json).status().message(), HasSubstr("topology"));
  json = t->ToJson();
  json.replace(json.find("\"ranks_per_node\":4"), 18, "\"ranks_per_node\":2");
  EXPECT_THAT(Placement::FromJson(json).status().message(), HasSubstr("has 4 ranks"));
}

}  // namespace
}  // namespace semmoe::planner
