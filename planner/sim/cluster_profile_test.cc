#include "planner/sim/cluster_profile.h"

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner::sim {
namespace {

TEST(ClusterProfileTest, EveryBuiltinParsesAndSaysWhereEachFigureCameFrom) {
  ASSERT_EQ(BuiltinProfiles(), (std::vector<std::string>{"h100", "h200", "lab"}));
  for (const std::string& name : BuiltinProfiles()) {
    auto p = LoadClusterProfile(name);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status();
    EXPECT_EQ(p->name, name);
    for (const auto& [field, f] : p->Figures()) {
      EXPECT_FALSE(f->source.empty()) << name << "." << field;
      EXPECT_GE(f->value, 0) << name << "." << field;
    }
  }
  // The published figures the GPU profiles rest on.
  const ClusterProfile h100 = *LoadClusterProfile("h100"), h200 = *LoadClusterProfile("h200");
  EXPECT_EQ(h100.ranks_per_node.value, 8);
  EXPECT_DOUBLE_EQ(h100.intra_bw.value, 450e9);
  EXPECT_DOUBLE_EQ(h100.inter_bw.value, 50e9);
  EXPECT_DOUBLE_EQ(h100.mem_bw.value, 3.35e12 * 0.8);
  EXPECT_DOUBLE_EQ(h200.mem_bw.value, 4.8e12 * 0.8);
  EXPECT_EQ(h100.flops.value, h200.flops.value);
}

TEST(ClusterProfileTest, RoundTripsThroughItsJson) {
  const ClusterProfile lab = *LoadClusterProfile("lab");
  auto again = ParseClusterProfile(ProfileJson(lab), "copy");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ProfileJson(*again), ProfileJson(lab));
}

TEST(ClusterProfileTest, RefusesWhatItCannotTrustNamingTheField) {
  const nlohmann::json good = nlohmann::json::parse(ProfileJson(*LoadClusterProfile("h200")));
  auto refused = [&](nlohmann::json j, const std::string& field) {
    auto p = ParseClusterProfile(j.dump(), "f.json");
    ASSERT_FALSE(p.ok()) << field;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(field), std::string::npos) << p.status().message();
  };
  nlohmann::json j = good;
  j["flops"].erase("source");
  refused(j, "flops");
  j = good;
  j["inter_bw"]["source"] = "";
  refused(j, "inter_bw");
  j = good;
  j["mem_bw"]["value"] = -1;
  refused(j, "mem_bw");
  j = good;
  j["a2a_efficiency"]["value"] = 1.5;
  refused(j, "a2a_efficiency");
  j = good;
  j["intra_bw"]["value"] = 0;
  refused(j, "intra_bw");
  j = good;
  j.erase("kv_bytes");
  refused(j, "kv_bytes");
  j = good;
  j["nvlink_bw"] = {{"value", 1}, {"source", "x"}};
  refused(j, "nvlink_bw");
  j = good;
  j["format"] = "other";
  refused(j, "format");
  j = good;
  j["inter_per_node"]["value"] = 0.5;
  refused(j, "inter_per_node");
  EXPECT_EQ(LoadClusterProfile("/no/such/profile.json").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ClusterProfileTest, MutatedFilesAreRefusedOrParsedNeverCrash) {
  const std::string text = ProfileJson(*LoadClusterProfile("lab"));
  std::mt19937 rng(7);
  int parsed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string m = text;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % m.size();
      switch (rng() % 3) {
        case 0:
          m[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          m.erase(at, 1 + rng() % 8);
          break;
        default:
          m.insert(at, 1, "{}[]\",:-0e9"[rng() % 11]);
          break;
      }
      if (m.empty()) m = "{";
    }
    auto p = ParseClusterProfile(m, "mutated");
    if (p.ok()) {
      ++parsed;
      for (const auto& [field, f] : p->Figures()) EXPECT_FALSE(f->source.empty()) << field;
    } else {
      EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
    }
  }
  EXPECT_LT(parsed, 3000);  // Most mutations break it; those that parse stay well-formed.
}

TEST(ClusterProfileTest, OverridesSayTheyCameFromTheCommandLine) {
  ClusterProfile p = *LoadClusterProfile("h100");
  ASSERT_TRUE(OverrideFigure(p, "wire_bytes", 4).ok());
  EXPECT_EQ(p.wire_bytes.value, 4);
  EXPECT_EQ(p.wire_bytes.source, "--set on the command line");
  EXPECT_FALSE(OverrideFigure(p, "warp_speed", 1).ok());
  EXPECT_FALSE(OverrideFigure(p, "flops", -1).ok());
}

// --set goes through the file's checks: every value the parser refuses in a file is refused on
// the command line too, naming the figure, and leaves the profile as it was.
TEST(ClusterProfileTest, OverridesPassTheParsersChecks) {
  const ClusterProfile h100 = *LoadClusterProfile("h100");
  const std::pair<const char*, double> bad[] = {
      {"ranks_per_node", 0},
      {"ranks_per_node", 2.5},
      {"ranks_per_node", 1e12},
      {"flops", 0},
      {"mem_bw", 0},
      {"intra_bw", 0},
      {"inter_bw", 0},
      {"a2a_efficiency", 0},
      {"a2a_efficiency", 1.5},
      {"weight_bytes", 0},
      {"wire_bytes", 0},
      {"kv_bytes", 0},
      {"inter_per_node", 0.5},
      {"host_cores", 1e9},
      {"step_skew", -1},
      {"flops", std::nan("")},
      {"flops", HUGE_VAL},
      {"message_latency", -1e-6},
  };
  for (const auto& [name, value] : bad) {
    ClusterProfile p = h100;
    absl::Status set = OverrideFigure(p, name, value);
    EXPECT_EQ(set.code(), absl::StatusCode::kInvalidArgument) << name << "=" << value;
    EXPECT_NE(set.message().find(absl::StrCat("--set: ", name, ":")), std::string::npos) << set;
    EXPECT_EQ(ProfileJson(p), ProfileJson(h100)) << name << "=" << value;
    // And the same value in a file.
    nlohmann::json j = nlohmann::json::parse(ProfileJson(h100));
    j[name]["value"] = value;
    if (std::isfinite(value)) {
      EXPECT_FALSE(ParseClusterProfile(j.dump(), "file").ok()) << name << "=" << value;
    }
  }
}

}  // namespace
}  // namespace semmoe::planner::sim
