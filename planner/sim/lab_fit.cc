#include "planner/sim/lab_fit.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner::sim {
namespace {

absl::StatusOr<LabSetting> FromJson(const nlohmann::json& j, const std::string& file) {
  auto missing = [&](absl::string_view field) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": ", field,
                     " is missing or mistyped (a lab run from before bench.sh recorded "
                     "what ran? rerun tools/netlab/bench.sh)"));
  };
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(file, ": not an object"));
  LabSetting s;
  s.file = file;
  auto text = [&](const char* f, std::string& out) -> absl::Status {
    if (!j.contains(f) || !j[f].is_string()) return missing(f);
    out = j[f].get<std::string>();
    return absl::OkStatus();
  };
  auto number = [&](const char* f, double& out) -> absl::Status {
    if (!j.contains(f) || !j[f].is_number()) return missing(f);
    out = j[f].get<double>();
    if (!std::isfinite(out) || out < 0) return missing(f);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(text("setting", s.name));
  RETURN_IF_ERROR(text("placement", s.placement));
  RETURN_IF_ERROR(text("router_policy", s.router_policy));
  RETURN_IF_ERROR(text("attn", s.attn));
  RETURN_IF_ERROR(text("netlab_flags", s.netlab_flags));
  RETURN_IF_ERROR(text("work_dir", s.work_dir));
  std::string rates;
  RETURN_IF_ERROR(text("rates", rates));
  for (absl::string_view r : absl::StrSplit(rates, ',', absl::SkipEmpty())) {
    double rate = 0;
    if (!absl::SimpleAtod(r, &rate) || !(rate > 0)) return missing("rates");
    s.rates.push_back(rate);
  }
  if (s.rates.empty()) return missing("rates");
  double ranks = 0, per_host = 0;
  RETURN_IF_ERROR(number("ranks", ranks));
  RETURN_IF_ERROR(number("ranks_per_host", per_host));
  s.ranks = static_cast<int>(ranks), s.ranks_per_host = static_cast<int>(per_host);
  if (s.ranks < 1 || s.ranks_per_host < 1 || s.ranks % s.ranks_per_host != 0) {
    return missing("ranks / ranks_per_host");
  }
  RETURN_IF_ERROR(number("link_mbit", s.link_mbit));
  RETURN_IF_ERROR(number("point_s", s.point_s));
  RETURN_IF_ERROR(number("moe_layer_ms", s.moe_layer_ms));
  RETURN_IF_ERROR(number("wait_ms", s.wait_ms));
  RETURN_IF_ERROR(number("dispatch_ms", s.dispatch_ms));
  RETURN_IF_ERROR(number("experts_ms", s.experts_ms));
  RETURN_IF_ERROR(number("combine_ms", s.combine_ms));
  RETURN_IF_ERROR(number("attention_ms", s.attention_ms));
  for (auto [field, out] : {std::pair{"srs_ms", &s.srs_ms}, std::pair{"sag_ms", &s.sag_ms}}) {
    if (j.contains(field)) RETURN_IF_ERROR(number(field, *out));
  }
  if (j.contains("max_rate_in_slo") && j["max_rate_in_slo"].is_number()) {
    s.max_rate_in_slo = j["max_rate_in_slo"].get<double>();
  }
  if (j.contains("tpot_p50_ms") && j["tpot_p50_ms"].is_number()) {
    s.tpot_p50_ms = std::max(0.0, j["tpot_p50_ms"].get<double>());
  }
  if (j.contains("host_cpu_per_request_s")) {
    RETURN_IF_ERROR(number("host_cpu_per_request_s", s.host_cpu_per_request_s));
  }
  return s;
}

}  // namespace

absl::StatusOr<LabSetting> ParseLabSetting(const std::string& json, const std::string& file) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, file));
  return FromJson(j, file);
}

absl::StatusOr<std::vector<LabSetting>> LoadLabSettings(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(text, path));
  std::vector<LabSetting> out;
  if (j.is_object() && j.contains("setting")) {
    ASSIGN_OR_RETURN(LabSetting s, FromJson(j, path));
    out.push_back(std::move(s));
    return out;
  }
  if (!j.is_object() || j.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a bench.sh --json file"));
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    ASSIGN_OR_RETURN(LabSetting s, FromJson(it.value(), absl::StrCat(path, " [", it.key(), "]")));
    out.push_back(std::move(s));
  }
  return out;
}

ScenarioSpec SpecOf(const LabSetting& s) {
  ScenarioSpec spec;
  spec.db = s.work_dir + "/planner.db";
  spec.traces = {s.work_dir + "/s.trace"};
  int64_t version = 0;
  if (s.placement != "vanilla" && absl::SimpleAtoi(s.placement, &version)) spec.version = version;
  spec.devices = s.ranks;
  spec.mode = s.attn;
  spec.router = s.router_policy == "semantic"       ? "affinity"
                : s.router_policy == "least_loaded" ? "least_loaded"
                                                    : "round_robin";
  spec.hosts = s.ranks / s.ranks_per_host;
  spec.ranks_per_host = s.ranks_per_host;
  spec.node_dedup = s.netlab_flags.find("--node_topology") != std::string::npos;
  return spec;
}

ClusterProfile ProfileFor(const ClusterProfile& profile, const LabSetting& s) {
  ClusterProfile p = profile;
  p.ranks_per_node = {static_cast<double>(s.ranks_per_host), s.file};
  if (s.link_mbit > 0) {
    p.inter_bw = {s.link_mbit * 1e6 / 8, absl::StrCat(s.file, ": link_mbit")};
  } else {
    p.inter_bw = {p.intra_bw.value, "an unshaped lab link: as fast as the loopback (intra_bw)"};
  }
  if (s.host_cpu_per_request_s >= 0) {
    p.host_cpu_per_request = {s.host_cpu_per_request_s,
                              absl::StrCat(s.file, ": host_cpu_per_request_s (measured)")};
  }
  return p;
}

absl::StatusOr<SweepResult> Predict(const Scenario& scenario, const ClusterProfile& profile,
                                    const LabSetting& s) {
  // The loadgen's 32 output tokens; the engine's default batch (engine serve --max_batch_tokens
  // 2048 --max_running 64).
  return RunSweep(scenario, ProfileFor(profile, s), {.output_tokens = 32},
                  {.max_batch_tokens = 2048, .max_running = 64}, s.rates, s.point_s);
}

const SweepPoint& PointAt(const SweepResult& r, double rate) {
  const SweepPoint* at = &r.points.front();
  for (const SweepPoint& p : r.points) {
    if (p.rate == rate) at = &p;
  }
  return *at;
}

absl::StatusOr<ClusterProfile> FitProfile(const std::vector<Scenario>& scenarios,
                                          const std::vector<LabSetting>& settings,
                                          ClusterProfile start,
                                          const std::vector<std::string>& figures) {
  if (scenarios.size() != settings.size() || scenarios.empty()) {
    return absl::InvalidArgumentError("the fit needs one scenario per setting, and some");
  }
  std::vector<Figure*> fitted;
  for (const std::string& name : figures) {
    Figure* f = nullptr;
    for (auto& [n, figure] : start.Figures()) {
      if (n == name) f = figure;
    }
    if (f == nullptr) return absl::InvalidArgumentError(absl::StrCat("no figure \"", name, "\""));
    if (!(f->value > 0)) return absl::InvalidArgumentError(absl::StrCat(name, " must start > 0"));
    fitted.push_back(f);
  }
  auto error = [&](const ClusterProfile& p) -> absl::StatusOr<double> {
    double sum = 0;
    for (size_t i = 0; i < settings.size(); ++i) {
      ASSIGN_OR_RETURN(SweepResult r, Predict(scenarios[i], p, settings[i]));
      const LabSetting& m = settings[i];
      // The wait, the exchange (dispatch + experts + combine: the ranks' own split of it moves
      // with which rank waits where), the experts and attention.
      const double pred[] = {r.moe.wait * 1e3,
                             (r.moe.dispatch + r.moe.experts + r.moe.combine) * 1e3,
                             r.moe.experts * 1e3, r.attention_s * 1e3};
      const double meas[] = {m.wait_ms, m.dispatch_ms + m.experts_ms + m.combine_ms, m.experts_ms,
                             m.attention_ms};
      for (int k = 0; k < 4; ++k) {
        const double e = std::log((pred[k] + 0.01) / (meas[k] + 0.01));  // ms; 10 µs floor.
        sum += e * e;
      }
      if (m.tpot_p50_ms > 0) {  // The sweep point loadgen reported (the highest rate in SLO).
        const SweepPoint& at = PointAt(r, m.max_rate_in_slo);
        const double e = std::log((at.result.tpot_s.p50 * 1e3 + 0.01) / (m.tpot_p50_ms + 0.01));
        sum += e * e;
      }
    }
    return sum;
  };
  ASSIGN_OR_RETURN(double best, error(start));
  for (double step : {4.0, 2.0, 1.4, 1.15, 1.05}) {
    for (int round = 0; round < 4; ++round) {
      bool moved = false;
      for (Figure* f : fitted) {
        for (double factor : {step, 1 / step}) {
          const double before = f->value;
          f->value = before * factor;
          ASSIGN_OR_RETURN(double e, error(start));
          if (e < best - 1e-12) {
            best = e, moved = true;
          } else {
            f->value = before;
          }
        }
      }
      if (!moved) break;
    }
  }
  std::vector<std::string> files, measured_files;
  std::vector<double> measured;  // The settings' host CPU per request, where recorded.
  for (const LabSetting& s : settings) {
    files.push_back(s.file);
    if (s.host_cpu_per_request_s >= 0) {
      measured.push_back(s.host_cpu_per_request_s);
      measured_files.push_back(s.file);
    }
  }
  // The profile's own figure (for lab runs that did not measure it, and `simulate --cluster lab`
  // without a run): the median of what the fitted runs measured.
  if (!measured.empty()) {
    std::sort(measured.begin(), measured.end());
    start.host_cpu_per_request = {
        measured[measured.size() / 2],
        absl::StrCat("measured: the median host_cpu_per_request_s of ",
                     absl::StrJoin(measured_files, ", "),
                     " (tools/netlab/bench.sh: the router's, planner's and loadgen's CPU over "
                     "the sweep per request sent)")};
  }
  for (Figure* f : fitted) {
    f->source = absl::StrCat(
        "fitted by `simulate fit` to the measured wait, exchange (dispatch "
        "+ experts + combine), experts and attention times and p50 TPOT of ",
        absl::StrJoin(files, ", "), " (sum of squared log errors ", best, ")");
  }
  return start;
}

}  // namespace semmoe::planner::sim
