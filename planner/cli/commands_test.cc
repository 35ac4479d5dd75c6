#include "planner/cli/commands.h"

#include <sstream>

#include "common/file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/cli/testing/topic_trace.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner::cli {
namespace {

using testing::WriteTopicTrace;

TEST(CommandsTest, BuildEvalAndVersionLifecycle) {
  const std::string db = TempDatabasePath("cli.db");
  const std::string profile = WriteTopicTrace("profile.trace", 1),
                    heldout = WriteTopicTrace("heldout.trace", 2);
  std::ostringstream out;
  auto semantic = Build({.db = db, .model = "m", .traces = {profile}, .devices = 4}, out);
  ASSERT_TRUE(semantic.ok()) << semantic.status();
  auto vanilla =
      Build({.db = db, .model = "m", .traces = {profile}, .devices = 4, .algo = "vanilla"}, out);
  ASSERT_TRUE(vanilla.ok());
  auto tp = Build({.db = db, .model = "m", .traces = {profile}, .devices = 4, .mode = "tp"}, out);
  ASSERT_TRUE(tp.ok()) << tp.status();

  std::ostringstream json;
  ASSERT_TRUE(Eval({.db = db,
                    .versions = {*semantic, *vanilla, *tp},
                    .traces = {heldout},
                    .profile = {profile},
                    .hidden_size = 8,
                    .json = true},
                   json)
                  .ok());
  auto rows = nlohmann::json::parse(json.str());
  ASSERT_EQ(rows.size(), 3u);
  // Topics are learnable: the semantic placements with affinity scheduling keep (nearly) all
  // activations local on held-out requests; vanilla cannot.
  EXPECT_GT(rows[0]["dp_lar_affinity"].get<double>(), 0.95);
  EXPECT_LT(rows[1]["dp_lar_affinity"].get<double>(), 0.6);
  EXPECT_GT(rows[2]["tp_lar_srs"].get<double>(), 0.95);
  EXPECT_LT(rows[0]["dp_a2a_bytes_per_token_affinity"].get<double>(),
            rows[1]["dp_a2a_bytes_per_token_affinity"].get<double>());

  std::ostringstream text;
  ASSERT_TRUE(Activate(db, *vanilla, text).ok());
  ASSERT_TRUE(Activate(db, *semantic, text).ok());
  ASSERT_TRUE(Rollback(db, "m", text).ok());
  ASSERT_TRUE(List(db, "m", text).ok());
  EXPECT_NE(text.str().find("active"), std::string::npos);
  ASSERT_TRUE(Show(db, *semantic, text).ok());
  std::ostringstream diff;
  ASSERT_TRUE(Diff(db, *vanilla, *semantic, diff).ok());
  EXPECT_NE(diff.str().find("experts move (per layer: "), std::string::npos) << diff.str();
  std::ostringstream same;
  ASSERT_TRUE(Diff(db, *semantic, *semantic, same).ok());
  EXPECT_NE(same.str().find(": 0 of 32 experts move"), std::string::npos) << same.str();
  const std::string file = JoinPath(std::getenv("TEST_TMPDIR"), "p.json");
  ASSERT_TRUE(Export(db, *semantic, file).ok());
  auto imported = Import(db, "m", file, "copy", text);
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::ostringstream again;
  ASSERT_TRUE(
      Eval({.db = db, .versions = {*semantic, *imported}, .traces = {heldout}, .json = true}, again)
          .ok());
  auto two = nlohmann::json::parse(again.str());
  EXPECT_EQ(two[0]["dp_lar_blind"], two[1]["dp_lar_blind"]);
  // Without --profile the built version uses its stored affinity (same as profiling on its own
  // build trace); the imported one has none.
  EXPECT_EQ(two[0]["dp_lar_affinity"], rows[0]["dp_lar_affinity"]);
  EXPECT_FALSE(two[1].contains("dp_lar_affinity"));
}

// planner build --topology: a topic's experts span two of 8 devices; on 4 nodes × 2 ranks the
// build puts them on one node, records the topology, and eval reports node figures (for a flat
// version under eval's --topology). Bad topologies are refused naming them.
TEST(CommandsTest, ATopologyBuildKeepsATopicOnItsNodeAndEvalReportsIt) {
  const std::string db = TempDatabasePath("topology.db");
  const std::string profile = WriteTopicTrace("topo-profile.trace", 1),
                    heldout = WriteTopicTrace("topo-heldout.trace", 2);
  std::ostringstream out;
  auto flat = Build({.db = db, .model = "m", .traces = {profile}, .devices = 8}, out);
  ASSERT_TRUE(flat.ok()) << flat.status();
  auto nodes =
      Build({.db = db, .model = "m", .traces = {profile}, .devices = 8, .topology = "4x2"}, out);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_NE(out.str().find("topology 4x2: node-local activations"), std::string::npos) << out.str();
  auto eplb = Build({.db = db,
                     .model = "m",
                     .traces = {profile},
                     .devices = 8,
                     .algo = "eplb",
                     .topology = "4x2"},
                    out);
  ASSERT_TRUE(eplb.ok()) << eplb.status();
  std::ostringstream json;
  ASSERT_TRUE(Eval({.db = db,
                    .versions = {*flat, *nodes, *eplb},
                    .traces = {heldout},
                    .profile = {profile},
                    .hidden_size = 8,
                    .json = true,
                    .topology = "4x2"},
                   json)
                  .ok());
  auto rows = nlohmann::json::parse(json.str());
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) {
    EXPECT_EQ(r["topology"], "4x2");
    for (const char* key : {"node_lar", "cross_node_bytes_per_token", "cross_node_rows_per_token",
                            "dp_intra_node_bytes_per_token_affinity", "tp_node_lar_srs"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
  }
  EXPECT_FALSE(rows[0]["topology_recorded"].get<bool>());
  EXPECT_TRUE(rows[1]["topology_recorded"].get<bool>());
  EXPECT_GT(rows[1]["node_lar"].get<double>(), 0.95);
  EXPECT_LT(rows[1]["cross_node_bytes_per_token"].get<double>(),
            rows[2]["cross_node_bytes_per_token"].get<double>());
  // Node dedup never sends more across nodes than the per-rank dispatch.
  EXPECT_LE(rows[2]["dp_cross_node_bytes_per_token_affinity"].get<double>(),
            rows[2]["dp_cross_node_bytes_per_token_rank_dedup_affinity"].get<double>());
  // Without --topology only the version built for one gets node figures.
  std::ostringstream own;
  ASSERT_TRUE(
      Eval({.db = db, .versions = {*flat, *nodes}, .traces = {heldout}, .json = true}, own).ok());
  auto two = nlohmann::json::parse(own.str());
  EXPECT_FALSE(two[0].contains("node_lar"));
  EXPECT_TRUE(two[1].contains("node_lar"));

  // Bad input, each named.
  auto wrong_size =
      Build({.db = db, .model = "m", .traces = {profile}, .devices = 8, .topology = "2x2"}, out);
  EXPECT_NE(wrong_size.status().message().find("--topology 2x2 has 4 ranks; --devices is 8"),
            std::string::npos)
      << wrong_size.status();
  auto garbage =
      Build({.db = db, .model = "m", .traces = {profile}, .devices = 8, .topology = "2y4"}, out);
  EXPECT_NE(garbage.status().message().find("neither NxM nor a readable topology file"),
            std::string::npos)
      << garbage.status();
  std::ostringstream ignored;
  absl::Status eval_wrong =
      Eval({.db = db, .versions = {*flat}, .traces = {heldout}, .topology = "3x3"}, ignored);
  EXPECT_NE(eval_wrong.message().find("has 9 ranks; version"), std::string::npos) << eval_wrong;
  auto other = Build({.db = db,
                      .model = "m",
                      .traces = {profile},
                      .devices = 8,
                      .topology = "2x4",
                      .relative_to = *nodes},
                     out);
  EXPECT_NE(other.status().message().find("was built for topology 4x2, this build for 2x4"),
            std::string::npos)
      << other.status();
  // A re-plan relative to it keeps its topology.
  auto replan = Build(
      {.db = db, .model = "m", .traces = {profile}, .devices = 8, .relative_to = *nodes}, out);
  ASSERT_TRUE(replan.ok()) << replan.status();
  std::ostringstream kept;
  ASSERT_TRUE(
      Eval({.db = db, .versions = {*replan}, .traces = {heldout}, .json = true}, kept).ok());
  EXPECT_EQ(nlohmann::json::parse(kept.str())[0]["topology"], "4x2");
}

// planner build --relative_to: the same placement served under permuted device labels moves
// nothing; a build for another model or device count is refused with the reason.
TEST(CommandsTest, ABuildRelativeToTheServedVersionRelabelsItsDevices) {
  const std::string db = TempDatabasePath("relative.db");
  const std::string profile = WriteTopicTrace("relative_profile.trace", 1);
  std::ostringstream out;
  auto first = Build({.db = db, .model = "m", .traces = {profile}, .devices = 4}, out);
  ASSERT_TRUE(first.ok()) << first.status();
  // The served version: the same placement with device d renamed (d + 1) mod 4.
  const std::string file = JoinPath(std::getenv("TEST_TMPDIR"), "relative.json");
  ASSERT_TRUE(Export(db, *first, file).ok());
  auto placement = nlohmann::json::parse(*ReadFile(file));
  for (auto& layer : placement["device_of"]) {
    for (auto& d : layer) d = (d.get<int>() + 1) % 4;
  }
  ASSERT_TRUE(WriteFileAtomically(file, placement.dump()).ok());
  auto served = Import(db, "m", file, "served", out);
  ASSERT_TRUE(served.ok()) << served.status();
  ASSERT_GT(DiffReport(db, *first, *served)->at("moved").get<int>(), 0);

  std::ostringstream text;
  auto again = Build(
      {.db = db, .model = "m", .traces = {profile}, .devices = 4, .relative_to = *served}, text);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(DiffReport(db, *served, *again)->at("moved").get<int>(), 0);
  EXPECT_NE(
      text.str().find("relative to version " + std::to_string(*served) + ": 0 expert weights move"),
      std::string::npos)
      << text.str();

  // A cap on the moves holds against a different placement.
  auto capped = Build({.db = db,
                       .model = "m",
                       .traces = {profile},
                       .devices = 4,
                       .algo = "random",
                       .seed = 3,
                       .relative_to = *served,
                       .max_moved_experts = 5},
                      text);
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_LE(DiffReport(db, *served, *capped)->at("moved").get<int>(), 5);

  for (const BuildOptions& bad :
       {BuildOptions{
            .db = db, .model = "m", .traces = {profile}, .devices = 2, .relative_to = *served},
        BuildOptions{
            .db = db, .model = "other", .traces = {profile}, .devices = 4, .relative_to = *served},
        BuildOptions{
            .db = db, .model = "m", .traces = {profile}, .devices = 4, .relative_to = 999}}) {
    auto refused = Build(bad, text);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("--relative_to"), std::string::npos)
        << refused.status();
  }
  // Relative to a version of the other attention mode: refused, naming both.
  auto other_mode = Build({.db = db,
                           .model = "m",
                           .traces = {profile},
                           .devices = 4,
                           .mode = "tp",
                           .relative_to = *served},
                          text);
  EXPECT_EQ(other_mode.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other_mode.status().message().find(absl::StrCat(
                "--relative_to ", *served, " is an Attention-DP version; this build is --mode tp")),
            std::string::npos)
      << other_mode.status();
}

TEST(CommandsTest, PaperAlgorithmBuildsAndEvaluatesBesideOurs) {
  const std::string db = TempDatabasePath("paper.db");
  const std::string profile = WriteTopicTrace("paper_profile.trace", 1),
                    heldout = WriteTopicTrace("paper_heldout.trace", 2);
  std::ostringstream out;
  auto paper =
      Build({.db = db, .model = "m", .traces = {profile}, .devices = 4, .algo = "paper"}, out);
  ASSERT_TRUE(paper.ok()) << paper.status();
  EXPECT_NE(out.str().find("paper-dp-g4"), std::string::npos) << out.str();
  auto rows = EvalRows({.db = db, .versions = {*paper}, .traces = {heldout}, .profile = {profile}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0]["algorithm"], "paper");
  EXPECT_GT((*rows)[0]["dp_lar_affinity"].get<double>(), 0.9);  // Topics are learnable.
}

TEST(CommandsTest, ProfileOfAnotherModelsShapeIsAnError) {
  const std::string db = TempDatabasePath("shape.db");
  const std::string t16 = WriteTopicTrace("e16.trace", 1),
                    t32 = WriteTopicTrace("e32.trace", 2, 0, 40, 32);
  std::ostringstream out;
  auto v = Build({.db = db, .model = "m", .traces = {t16}, .devices = 4}, out);
  ASSERT_TRUE(v.ok()) << v.status();
  auto rows = EvalRows({.db = db, .versions = {*v}, .traces = {t16}, .profile = {t32}});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(rows.status().message().find("the --profile traces' affinity tables (2 MoE layers, "
                                         "32 experts) do not match the placement (2 MoE layers, "
                                         "16 experts)"),
            std::string::npos)
      << rows.status();
}

TEST(CommandsTest, Errors) {
  const std::string db = TempDatabasePath("cli_errors.db");
  const std::string t = WriteTopicTrace("e.trace", 3);
  std::ostringstream out;
  EXPECT_NE(Build({.db = db, .model = "m", .traces = {t}, .algo = "magic"}, out)
                .status()
                .message()
                .find("--algo 'magic'"),
            std::string::npos);
  EXPECT_NE(Build({.db = db, .model = "m", .traces = {t}, .mode = "pp"}, out)
                .status()
                .message()
                .find("--mode 'pp'"),
            std::string::npos);
  EXPECT_NE(Build({.db = db, .model = "m", .traces = {t}, .devices = 3}, out)
                .status()
                .message()
                .find("3 devices do not divide"),
            std::string::npos);
  EXPECT_EQ(Build({.db = db, .model = "m", .traces = {"/nonexistent.trace"}}, out).status().code(),
            absl::StatusCode::kNotFound);
  const std::string corrupt = JoinPath(std::getenv("TEST_TMPDIR"), "corrupt.trace");
  ASSERT_TRUE(WriteFile(corrupt, ReadFile(t)->substr(0, 100)).ok());
  EXPECT_NE(Build({.db = db, .model = "m", .traces = {corrupt}}, out)
                .status()
                .message()
                .find("truncated"),
            std::string::npos);
  const std::string not_db = JoinPath(std::getenv("TEST_TMPDIR"), "not.db");
  ASSERT_TRUE(WriteFile(not_db, std::string(4096, 'x')).ok());
  EXPECT_EQ(List(not_db, "m", out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Show(db, 42, out).code(), absl::StatusCode::kNotFound);
  const std::string bad_json = JoinPath(std::getenv("TEST_TMPDIR"), "bad.json");
  ASSERT_TRUE(WriteFile(bad_json, "{\"format\": \"nope\"}").ok());
  EXPECT_NE(Import(db, "m", bad_json, "", out).status().message().find("bad.json: placement:"),
            std::string::npos);
}

}  // namespace
}  // namespace semmoe::planner::cli
