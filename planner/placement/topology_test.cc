#include "planner/placement/topology.h"

#include <fstream>
#include <random>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(TopologyTest, NodesOfRanks) {
  auto t = Topology::Parse("2x4");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_ranks(), 8);
  EXPECT_EQ(t->num_nodes(), 2);
  EXPECT_TRUE(t->uniform());
  EXPECT_EQ(t->NodeOf(3), 0);
  EXPECT_EQ(t->NodeOf(4), 1);
  EXPECT_THAT(t->RanksOn(1), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(t->Cost(2, 2), 0);
  EXPECT_EQ(t->Cost(0, 3), Topology::kIntraNodeCost);
  EXPECT_EQ(t->Cost(3, 4), Topology::kCrossNodeCost);
  EXPECT_EQ(t->MaxCost(), Topology::kCrossNodeCost);
  EXPECT_EQ(t->Describe(), "2x4");
  EXPECT_EQ(t->LocalIndex(6), 2);
  EXPECT_EQ(t->Gateway(1, 1), 5);  // Same rail.
  EXPECT_EQ(t->Gateway(6, 0), 2);
  EXPECT_EQ(t->Gateway(6, 1), 6);  // Its own node: itself.
  auto flat = Topology::Flat(8);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->num_nodes(), 1);
  EXPECT_EQ(flat->Describe(), "1x8");
  EXPECT_NE(*flat, *t);
}

TEST(TopologyTest, BadSpecsNameTheText) {
  for (const char* spec : {"", "2", "x4", "2x", "0x4", "2x0", "-1x4", "2x4x1", "ax4", "2 x4",
                           "99999x99999", "+2x4"}) {
    auto t = Topology::Parse(spec);
    EXPECT_FALSE(t.ok()) << spec;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_THAT(t.status().message(), HasSubstr("topology")) << spec;
  }
}

TEST(TopologyTest, CostMatrixDerivesNodesFromTheCheapestLinks) {
  // Ranks 0, 2 on one node and 1, 3 on another (not consecutive).
  auto t = Topology::FromCostMatrix({{0, 5, 1, 5}, {5, 0, 5, 1}, {1, 5, 0, 5}, {5, 1, 5, 0}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_nodes(), 2);
  EXPECT_TRUE(t->SameNode(0, 2));
  EXPECT_FALSE(t->SameNode(0, 1));
  EXPECT_FALSE(t->uniform());
  EXPECT_THAT(t->Describe(), HasSubstr("4 ranks in 2 nodes"));
  auto back = Topology::FromJson(t->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *t);
  // All links alike: one node.
  auto same = Topology::FromCostMatrix({{0, 2, 2}, {2, 0, 2}, {2, 2, 0}});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->num_nodes(), 1);
  // The default costs of NxM by matrix are NxM.
  auto nxm = Topology::FromCostMatrix({{0, 1, 8, 8}, {1, 0, 8, 8}, {8, 8, 0, 1}, {8, 8, 1, 0}});
  ASSERT_TRUE(nxm.ok());
  EXPECT_TRUE(nxm->uniform());
  EXPECT_EQ(*nxm, *Topology::Parse("2x2"));
}

TEST(TopologyTest, BadCostMatricesAreRefusedNamingTheFault) {
  struct Case {
    std::vector<std::vector<double>> cost;
    std::vector<int> node_of;
    const char* why;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const Case& c : std::vector<Case>{
           {{}, {}, "empty"},
           {{{0, 1}, {1}}, {}, "not square"},
           {{{0, 1, 1}, {1, 0, 1}}, {}, "not square"},
           {{{0, 1}, {2, 0}}, {}, "not symmetric"},
           {{{0, -1}, {-1, 0}}, {}, "cost[0][1] = -1"},
           {{{0, inf}, {inf, 0}}, {}, "not a finite cost"},
           {{{0, NAN}, {NAN, 0}}, {}, "not a finite cost"},
           {{{1, 1}, {1, 0}}, {}, "costs 0 to itself"},
           {{{0, 1}, {1, 0}}, {0}, "node_of names 1 ranks"},
           {{{0, 1}, {1, 0}}, {0, 2}, "rank 1: node 2 is out of range"},
           {{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}, {0, 0, 2}, "node 1 has no rank"},
           {{{0, 9, 1}, {9, 0, 1}, {1, 1, 0}}, {}, "do not group"},
           {{{0, 9, 1}, {9, 0, 1}, {1, 1, 0}}, {0, 0, 1}, "more than 1 to another node"},
       }) {
    auto t = Topology::FromCostMatrix(c.cost, c.node_of);
    EXPECT_FALSE(t.ok()) << c.why;
    EXPECT_THAT(t.status().message(), HasSubstr(c.why));
  }
}

TEST(TopologyTest, JsonFormsAndFlags) {
  auto t = Topology::FromJson(R"({"format":"semmoe-topology","nodes":4,"ranks_per_node":2})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Describe(), "4x2");
  EXPECT_EQ(*Topology::FromJson(t->ToJson()), *t);
  for (const char* bad : {"", "[]", "{}", R"({"format":"x","nodes":1,"ranks_per_node":1})",
                          R"({"format":"semmoe-topology"})",
                          R"({"format":"semmoe-topology","nodes":"2","ranks_per_node":2})",
                          R"({"format":"semmoe-topology","nodes":2,"ranks_per_node":2,"cost":[]})",
                          R"({"format":"semmoe-topology","cost":[[0,1],"x"]})",
                          R"({"format":"semmoe-topology","cost":[[0,"1"],[1,0]]})",
                          R"({"format":"semmoe-topology","cost":[[0,1],[1,0]],"node_of":[]})",
                          R"({"format":"semmoe-topology","cost":[[0,1],[1,0]],"node_of":[0,-1]})"}) {
    auto r = Topology::FromJson(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  auto flag = Topology::FromFlag("4x2");
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(*flag, *t);
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/topology.json";
  std::ofstream(path) << R"({"format":"semmoe-topology","cost":[[0,3],[3,0]]})";
  auto file = Topology::FromFlag(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->num_ranks(), 2);
  std::ofstream(path) << R"({"format":"semmoe-topology","cost":[[0,3],[4,0]]})";
  auto bad_file = Topology::FromFlag(path);
  EXPECT_THAT(bad_file.status().message(), HasSubstr(path));
  EXPECT_THAT(bad_file.status().message(), HasSubstr("not symmetric"));
  EXPECT_THAT(Topology::FromFlag("/no/such/file").status().message(),
              HasSubstr("neither NxM nor a readable topology file"));
  EXPECT_FALSE(Topology::FromFlag("").ok());
}

TEST(TopologyTest, ServingOnAnotherTopologyIsRefusedNamingBoth) {
  auto built = Topology::Parse("2x4"), group = Topology::Parse("4x2");
  EXPECT_TRUE(built->CheckServes(*built).ok());
  absl::Status s = built->CheckServes(*group);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("built for topology 2x4"));
  EXPECT_THAT(s.message(), HasSubstr("this group runs 4x2"));
}

// Fuzz-style: mutated topology files never crash; each is a topology or InvalidArgument.
TEST(TopologyTest, MutatedFilesAreRefusedOrParsedNeverCrash) {
  const std::string seeds[] = {
      R"({"format":"semmoe-topology","nodes":2,"ranks_per_node":4})",
      R"({"format":"semmoe-topology","cost":[[0,1,8],[1,0,8],[8,8,0]],"node_of":[0,0,1]})"};
  std::mt19937 rng(38);
  const std::string alphabet = "{}[],:\"0123456789.-exnodeEcst ";
  int parsed = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string text = seeds[i % 2];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(at, 1 + rng() % 3); break;
        default: text.insert(at, 1, alphabet[rng() % alphabet.size()]);
      }
      if (text.empty()) text = "{";
    }
    absl::StatusOr<Topology> t = Topology::FromJson(text);
    if (t.ok()) {
      ++parsed;
      EXPECT_GE(t->num_nodes(), 1);
      EXPECT_EQ(*Topology::FromJson(t->ToJson()), *t);
    } else {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << text;
    }
  }
  EXPECT_GT(parsed, 0);  // Some mutations (a digit) still describe a topology.
}

}  // namespace
}  // namespace semmoe::planner
