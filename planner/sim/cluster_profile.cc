#include "planner/sim/cluster_profile.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner::sim {
namespace {

struct Builtin {
  const char* name;
  const char* json;
};
// planner/sim/profiles/*.json, embedded by the BUILD's genrule.
constexpr Builtin kBuiltins[] = {
#include "planner/sim/builtin_profiles.inc"
};

}  // namespace

std::vector<std::pair<std::string, Figure*>> ClusterProfile::Figures() {
  return {{"ranks_per_node", &ranks_per_node},
          {"flops", &flops},
          {"mem_bw", &mem_bw},
          {"intra_bw", &intra_bw},
          {"inter_bw", &inter_bw},
          {"inter_per_node", &inter_per_node},
          {"a2a_efficiency", &a2a_efficiency},
          {"collective_latency", &collective_latency},
          {"message_latency", &message_latency},
          {"kernel_overhead", &kernel_overhead},
          {"step_overhead", &step_overhead},
          {"step_skew", &step_skew},
          {"host_cores", &host_cores},
          {"shared_core_wait", &shared_core_wait},
          {"host_cpu_per_request", &host_cpu_per_request},
          {"weight_bytes", &weight_bytes},
          {"wire_bytes", &wire_bytes},
          {"kv_bytes", &kv_bytes}};
}

std::vector<std::pair<std::string, const Figure*>> ClusterProfile::Figures() const {
  std::vector<std::pair<std::string, const Figure*>> out;
  for (auto& [name, f] : const_cast<ClusterProfile*>(this)->Figures()) out.emplace_back(name, f);
  return out;
}

absl::StatusOr<ClusterProfile> ParseClusterProfile(absl::string_view json, absl::string_view what) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, what));
  auto fail = [&](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, ": ", why));
  };
  if (!j.is_object()) return fail("(top level)", "expected an object");
  if (!j.contains("format") || j["format"] != "semmoe-cluster-profile") {
    return fail("format", "expected \"semmoe-cluster-profile\"");
  }
  ClusterProfile p;
  for (const char* text : {"name", "description"}) {
    if (!j.contains(text) || !j[text].is_string()) return fail(text, "expected a string");
  }
  p.name = j["name"].get<std::string>();
  p.description = j["description"].get<std::string>();
  std::set<std::string> known = {"format", "name", "description"};
  for (auto& [name, figure] : p.Figures()) {
    known.insert(name);
    if (!j.contains(name)) return fail(name, "missing");
    const nlohmann::json& f = j[name];
    if (!f.is_object() || !f.contains("value") || !f["value"].is_number()) {
      return fail(name, "expected {\"value\": NUMBER, \"source\": TEXT}");
    }
    if (!f.contains("source") || !f["source"].is_string() ||
        f["source"].get<std::string>().empty()) {
      return fail(name, "every figure says where it came from: \"source\" is missing or empty");
    }
    for (auto it = f.begin(); it != f.end(); ++it) {
      if (it.key() != "value" && it.key() != "source") {
        return fail(name, absl::StrCat("unknown key \"", it.key(), "\""));
      }
    }
    figure->value = f["value"].get<double>();
    figure->source = f["source"].get<std::string>();
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (known.count(it.key()) == 0) return fail(it.key(), "unknown field");
  }
  RETURN_IF_ERROR(ValidateClusterProfile(p, what));
  return p;
}

absl::Status ValidateClusterProfile(const ClusterProfile& p, absl::string_view what) {
  auto fail = [&](absl::string_view field, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, ": ", why));
  };
  for (const auto& [name, figure] : p.Figures()) {
    if (!std::isfinite(figure->value) || figure->value < 0) {
      return fail(name, absl::StrCat(figure->value, " must be finite and not negative"));
    }
  }
  for (const char* positive : {"ranks_per_node", "flops", "mem_bw", "intra_bw", "inter_bw",
                               "a2a_efficiency", "weight_bytes", "wire_bytes", "kv_bytes"}) {
    for (const auto& [name, figure] : p.Figures()) {
      if (name == positive && figure->value <= 0) {
        return fail(name, absl::StrCat(figure->value, " must be positive"));
      }
    }
  }
  if (p.a2a_efficiency.value > 1) return fail("a2a_efficiency", "must be at most 1");
  if (p.inter_per_node.value != 0 && p.inter_per_node.value != 1) {
    return fail("inter_per_node", "must be 0 or 1");
  }
  if (p.ranks_per_node.value != std::floor(p.ranks_per_node.value) ||
      p.ranks_per_node.value > kMaxRanksPerNode) {
    return fail("ranks_per_node",
                absl::StrCat("must be a whole number from 1 to ", kMaxRanksPerNode));
  }
  if (p.host_cores.value > kMaxHostCores) {
    return fail("host_cores", absl::StrCat("must be at most ", kMaxHostCores));
  }
  return absl::OkStatus();
}

std::vector<std::string> BuiltinProfiles() {
  std::vector<std::string> names;
  for (const Builtin& b : kBuiltins) names.push_back(b.name);
  return names;
}

std::string ClusterFlagValue(const std::string& value) {
  if (value.empty()) return value;
  for (const Builtin& b : kBuiltins) {
    if (value == b.name) return value;
  }
  return UserPath(value);
}

absl::StatusOr<ClusterProfile> LoadClusterProfile(const std::string& name_or_path) {
  for (const Builtin& b : kBuiltins) {
    if (name_or_path == b.name) {
      return ParseClusterProfile(b.json, absl::StrCat("built-in profile ", b.name));
    }
  }
  auto text = ReadFile(name_or_path);
  if (!text.ok()) {
    return absl::NotFoundError(absl::StrCat("cluster profile \"", name_or_path,
                                            "\": neither a built-in profile (lab, h100, h200) "
                                            "nor a readable file: ",
                                            text.status().message()));
  }
  return ParseClusterProfile(*text, name_or_path);
}

absl::Status OverrideFigure(ClusterProfile& profile, absl::string_view name, double value) {
  for (auto& [n, figure] : profile.Figures()) {
    if (n != name) continue;
    // The whole profile through the file's checks: a value the parser refuses is refused here.
    const Figure before = *figure;
    figure->value = value;
    figure->source = "--set on the command line";
    if (absl::Status valid = ValidateClusterProfile(profile, "--set"); !valid.ok()) {
      *figure = before;
      return valid;
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("--set: no figure \"", name, "\" in a profile"));
}

std::string ProfileJson(const ClusterProfile& profile) {
  nlohmann::ordered_json j = {{"format", "semmoe-cluster-profile"},
                              {"name", profile.name},
                              {"description", profile.description}};
  for (const auto& [name, f] : profile.Figures()) {
    j[name] = {{"value", f->value}, {"source", f->source}};
  }
  return j.dump(2) + "\n";
}

}  // namespace semmoe::planner::sim
