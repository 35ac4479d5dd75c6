#include "tools/simulate_lab.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"
#include "planner/sim/lab_fit.h"
#include "planner/sim/scenario.h"

namespace semmoe::tools {
namespace {

using planner::sim::ClusterProfile;
using planner::sim::LabSetting;
using planner::sim::ModelShape;
using planner::sim::Scenario;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Four named parts of a setting's time, measured and predicted ms per run: the MoE layer's phases
// (as lab_report splits a call and MoeTime predicts it), or the rest of a layer and the step.
class Parts {
 public:
  explicit Parts(std::array<const char*, 4> names) : names_(names) {}

  void Add(const std::string& setting, const std::array<double, 4>& measured_ms,
           const std::array<double, 4>& predicted_s) {
    for (int i = 0; i < 4; ++i) {
      measured_[setting][i].push_back(measured_ms[i]);
      predicted_[setting][i].push_back(predicted_s[i] * 1e3);
    }
  }
  // {part: {measured_ms, predicted_ms}}, medians over the runs.
  nlohmann::ordered_json Json(const std::string& setting) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (int i = 0; i < 4; ++i) {
      out[names_[i]] = {{"measured_ms", Median(measured_[setting][i])},
                        {"predicted_ms", Median(predicted_[setting][i])}};
    }
    return out;
  }
  // One line a row: the setting, then each part's measured / predicted from row[key].
  void Print(const nlohmann::ordered_json& rows, const char* key, const char* header,
             int width) const {
    std::cout << header;
    for (const auto& r : rows) {
      std::cout << absl::StrFormat("%-30s", r["setting"].get<std::string>());
      for (const char* part : names_) {
        std::cout << absl::StrFormat("  %*.2f / %*.2f", width,
                                     r[key][part]["measured_ms"].get<double>(), width,
                                     r[key][part]["predicted_ms"].get<double>());
      }
      std::cout << "\n";
    }
  }

 private:
  std::array<const char*, 4> names_;
  std::map<std::string, std::array<std::vector<double>, 4>> measured_, predicted_;
};

}  // namespace

absl::StatusOr<int> FitLab(const ModelShape& shape, const ClusterProfile& start,
                           const std::vector<std::string>& files,
                           const std::vector<std::string>& figures, const std::string& out) {
  if (files.empty() || out.empty()) {
    return absl::InvalidArgumentError("give fit --lab FILE,... and --out PROFILE.json");
  }
  std::vector<LabSetting> settings;
  std::vector<Scenario> scenarios;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(std::vector<LabSetting> some, planner::sim::LoadLabSettings(file));
    for (LabSetting& s : some) {
      ASSIGN_OR_RETURN(Scenario scenario,
                       planner::sim::LoadScenario(planner::sim::SpecOf(s), shape,
                                                  planner::sim::ProfileFor(start, s)));
      scenarios.push_back(std::move(scenario));
      settings.push_back(std::move(s));
    }
  }
  ASSIGN_OR_RETURN(ClusterProfile fitted,
                   planner::sim::FitProfile(scenarios, settings, start, figures));
  std::cout << "setting                        measured MoE ms  start  fitted\n";
  for (size_t i = 0; i < settings.size(); ++i) {
    ASSIGN_OR_RETURN(auto before, planner::sim::Predict(scenarios[i], start, settings[i]));
    ASSIGN_OR_RETURN(auto after, planner::sim::Predict(scenarios[i], fitted, settings[i]));
    std::cout << absl::StrFormat("%-30s %15.2f %6.2f %7.2f\n", settings[i].name,
                                 settings[i].moe_layer_ms, before.moe.total() * 1e3,
                                 after.moe.total() * 1e3);
  }
  RETURN_IF_ERROR(WriteFile(out, planner::sim::ProfileJson(fitted)));
  std::cout << "wrote " << out << "\n";
  return 0;
}

absl::StatusOr<int> CheckLab(const ModelShape& shape, const ClusterProfile& profile,
                             const std::vector<std::string>& files, bool json) {
  if (files.empty()) return absl::InvalidArgumentError("give check --lab RUN.json,...");
  // Setting → measured and predicted MoE-layer ms, one per run.
  std::map<std::string, std::vector<double>> measured, predicted, a2a;
  Parts phases({"wait", "dispatch", "experts", "combine"});
  // The rest of a layer (attention, SRS, SAG) and the step (p50 TPOT at the highest rate in
  // SLO): what sets the batches' sizes.
  Parts step({"attention", "srs", "sag", "tpot_p50"});
  std::map<std::string, int> ranks;
  for (const std::string& file : files) {
    ASSIGN_OR_RETURN(std::vector<LabSetting> settings, planner::sim::LoadLabSettings(file));
    for (const LabSetting& s : settings) {
      ASSIGN_OR_RETURN(Scenario scenario,
                       planner::sim::LoadScenario(planner::sim::SpecOf(s), shape,
                                                  planner::sim::ProfileFor(profile, s)));
      ASSIGN_OR_RETURN(auto r, planner::sim::Predict(scenario, profile, s));
      measured[s.name].push_back(s.moe_layer_ms);
      predicted[s.name].push_back(r.moe.total() * 1e3);
      a2a[s.name].push_back(r.a2a_share());
      ranks[s.name] = s.ranks;
      phases.Add(s.name, {s.wait_ms, s.dispatch_ms, s.experts_ms, s.combine_ms},
                 {r.moe.wait, r.moe.dispatch, r.moe.experts, r.moe.combine});
      step.Add(s.name, {s.attention_ms, s.srs_ms, s.sag_ms, s.tpot_p50_ms},
               {r.attention_s, r.srs_s, r.sag_s,
                planner::sim::PointAt(r, s.max_rate_in_slo).result.tpot_s.p50});
    }
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  int within = 0;
  for (const auto& [name, m] : measured) {
    const double mm = Median(m), pm = Median(predicted[name]);
    const double error = mm > 0 ? pm / mm - 1 : 0;
    within += std::abs(error) <= 0.15;
    rows.push_back({{"setting", name},
                    {"ranks", ranks[name]},
                    {"runs", m.size()},
                    {"measured_moe_layer_ms", mm},
                    {"measured_min", *std::min_element(m.begin(), m.end())},
                    {"measured_max", *std::max_element(m.begin(), m.end())},
                    {"predicted_moe_layer_ms", pm},
                    {"predicted_a2a_share", Median(a2a[name])},
                    {"error", error},
                    {"phases", phases.Json(name)},
                    {"step", step.Json(name)}});
  }
  // Order: within each G, every pair of settings the measurement separates (medians apart by
  // more than the runs' spread) ordered alike by the prediction.
  nlohmann::ordered_json swapped = nlohmann::ordered_json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = i + 1; j < rows.size(); ++j) {
      const auto &a = rows[i], &b = rows[j];
      if (a["ranks"] != b["ranks"]) continue;
      const bool apart = a["measured_max"].get<double>() < b["measured_min"].get<double>() ||
                         b["measured_max"].get<double>() < a["measured_min"].get<double>();
      const double dm = a["measured_moe_layer_ms"].get<double>() -
                        b["measured_moe_layer_ms"].get<double>();
      const double dp = a["predicted_moe_layer_ms"].get<double>() -
                        b["predicted_moe_layer_ms"].get<double>();
      if (apart && dm * dp <= 0) {
        swapped.push_back({a["setting"], b["setting"]});
      }
    }
  }
  if (json) {
    std::cout << nlohmann::ordered_json({{"cluster", profile.name},
                                         {"settings", rows},
                                         {"within_15_percent", within},
                                         {"order_swapped", swapped}})
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << "setting                        G  runs  measured MoE ms [min-max]   predicted  "
               "error   a2a share (pred.)\n";
  for (const auto& r : rows) {
    std::cout << absl::StrFormat(
        "%-30s %2d  %4d  %8.2f [%5.2f-%5.2f]   %9.2f  %+5.1f%%  %.2f\n",
        r["setting"].get<std::string>(), r["ranks"].get<int>(), r["runs"].get<int>(),
        r["measured_moe_layer_ms"].get<double>(), r["measured_min"].get<double>(),
        r["measured_max"].get<double>(), r["predicted_moe_layer_ms"].get<double>(),
        100 * r["error"].get<double>(), r["predicted_a2a_share"].get<double>());
  }
  std::cout << within << " of " << rows.size() << " settings within 15%; order swapped: "
            << (swapped.empty() ? "none" : swapped.dump()) << "\n";
  // Where the difference is: each part's median, measured / predicted.
  phases.Print(rows, "phases",
               "\nphases, ms a call, measured / predicted: setting  wait  dispatch  experts  "
               "combine\n",
               5);
  step.Print(rows, "step",
             "\nthe rest, ms, measured / predicted: setting  attention  SRS  SAG (a layer)  "
             "p50 TPOT (highest rate in SLO)\n",
             6);
  return 0;
}

}  // namespace semmoe::tools
