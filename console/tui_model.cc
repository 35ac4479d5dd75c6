#include "console/tui_model.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_fields.h"
#include "nlohmann/json.hpp"

namespace semmoe::console {
namespace {

double Num(const nlohmann::json& j, const char* key, const char* sub = nullptr) {
  if (!j.is_object() || !j.contains(key)) return 0;
  const nlohmann::json& v = sub == nullptr ? j[key] : j[key].value(sub, nlohmann::json());
  return v.is_number() ? v.get<double>() : 0;
}

std::string Cut(const std::string& s, int width) {
  return static_cast<int>(s.size()) <= width ? s : s.substr(0, std::max(0, width));
}

// "; hottest: e3 e17 e9" — the layer's three most active experts (empty when none reported).
std::string HottestText(const router::rpc::LayerLoad& l) {
  std::string out;
  for (int i = 0; i < std::min(3, l.hot_experts_size()); ++i) {
    absl::StrAppend(&out, i == 0 ? "; hottest:" : "", " e", l.hot_experts(i).expert());
  }
  return out;
}

}  // namespace

std::string NotRoutedAsPlanned(const planner::rpc::ExperimentArm& arm) {
  const nlohmann::json m = ParseJsonOrDiscarded(arm.latest_metrics_json());
  if (!m.is_object() || !m.contains("tables_error") || !m["tables_error"].is_string()) return "";
  return m["tables_error"].get<std::string>();
}

std::vector<std::string> MeasuredSlowerLines(const planner::rpc::Experiment& e) {
  std::vector<std::string> out;
  for (const planner::rpc::ExperimentArm& a : e.arms()) {
    if (a.moe_vs_vanilla_arm() > 1.02) {
      out.push_back(absl::StrFormat(
          "!! arm %s's MoE layer was measured %.3fx the vanilla arm %s's: promote refuses it "
          "without --force",
          a.name(), a.moe_vs_vanilla_arm(), e.vanilla_arm()));
    }
  }
  return out;
}

std::vector<std::string> Banners(const Snapshot& s, const std::string& planner,
                                 const std::string& router) {
  std::vector<std::string> out;
  if (!s.planner_ok) {
    out.push_back(absl::StrCat("!! planner ", planner, " unreachable - retrying every second (",
                               s.planner_error, ")"));
  }
  if (!s.router_ok) {
    out.push_back(absl::StrCat("!! router ", router, " unreachable - retrying every second (",
                               s.router_error, ")"));
  } else if (!s.router.tables_error().empty()) {
    out.push_back(absl::StrCat("!! router tables: ", s.router.tables_error()));
  }
  for (std::string& line : RolloutBanners(s.router)) out.push_back(std::move(line));
  for (std::string& line : DownRankBanners(s.router)) out.push_back(std::move(line));
  if (!s.autopilot.empty() && s.autopilot.front().action() == "error") {
    out.push_back(absl::StrCat("!! autopilot: ", s.autopilot.front().reason()));
  }
  return out;
}

std::vector<std::string> DownRankBanners(const router::rpc::RouterStats& stats) {
  std::vector<std::string> out;
  for (const auto& k : stats.ranks()) {
    if (k.down_reason().empty()) continue;
    out.push_back(absl::StrFormat("!! %srank %d (%s) down for %.1f s: %s",
                                  k.arm().empty() ? "" : "arm " + k.arm() + " ", k.rank(),
                                  k.address(), k.down_for_s(), k.down_reason()));
  }
  return out;
}

std::vector<std::string> RolloutBanners(const router::rpc::RouterStats& stats) {
  std::vector<std::string> out;
  // Every rank of a group says the same; rank 0 speaks for it.
  for (const auto& k : stats.ranks()) {
    if (k.rank() == 0 && !k.rollout().error().empty()) {
      out.push_back(absl::StrCat("!! rollout", k.arm().empty() ? "" : " (arm " + k.arm() + ")",
                                 ": ", k.rollout().error()));
    }
  }
  return out;
}

std::string PlacementCell(const router::rpc::RankStats& k) {
  const auto& r = k.rollout();
  std::string cell = k.placement_version() > 0 ? absl::StrCat("v", k.placement_version()) : "-";
  if (r.target_version() > 0) {
    absl::StrAppend(&cell, "->v", r.target_version(), " ",
                    r.staged() ? std::string("staged")
                               : absl::StrCat(r.experts_loaded(), "/", r.experts_to_load()));
  }
  if (r.epoch() > 0) absl::StrAppend(&cell, " e", r.epoch());
  return cell;
}

std::string Verdict(const planner::rpc::Experiment& e) {
  if (e.arms_size() != 2) return "";
  for (const planner::rpc::ExperimentArm& a : e.arms()) {
    if (const std::string why = NotRoutedAsPlanned(a); !why.empty()) {
      return absl::StrCat("no verdict: arm ", a.name(), " was not routed as planned (", why, ")");
    }
  }
  double n[2], p[2];
  for (int i = 0; i < 2; ++i) {
    const nlohmann::json m = ParseJsonOrDiscarded(e.arms(i).latest_metrics_json());
    const double done = Num(m, "completed"), tput = Num(m, "throughput_rps");
    if (!m.is_object() || done <= 0 || tput <= 0) return "";
    n[i] = done;
    p[i] = std::min(1.0, Num(m, "goodput_rps") / tput);
  }
  const double pooled = (p[0] * n[0] + p[1] * n[1]) / (n[0] + n[1]);
  const double se = std::sqrt(pooled * (1 - pooled) * (1 / n[0] + 1 / n[1]));
  const std::string shares = absl::StrFormat("in SLO %s %.1f%% vs %s %.1f%%", e.arms(0).name(),
                                             100 * p[0], e.arms(1).name(), 100 * p[1]);
  if (se == 0) return absl::StrCat("no difference yet (", shares, ")");
  const double z = (p[1] - p[0]) / se;
  if (std::abs(z) < 1.96) {
    return absl::StrFormat("no significant difference yet (%s, z = %.2f)", shares, z);
  }
  return absl::StrFormat("%s is better (%s, z = %.2f, p < 0.05)",
                         z > 0 ? e.arms(1).name() : e.arms(0).name(), shares, z);
}

std::string Sparkline(const std::deque<double>& values, bool unicode) {
  static const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char* kAscii[] = {" ", ".", ":", "-", "=", "+", "*", "#"};
  double top = 0;
  for (double v : values) top = std::max(top, v);
  std::string out;
  for (double v : values) {
    const int i = top <= 0 ? 0 : std::clamp(static_cast<int>(v / top * 7 + 0.5), 0, 7);
    out += unicode ? kBlocks[i] : kAscii[i];
  }
  return out;
}

std::string Bar(double fraction, int width) {
  const int filled = std::clamp(static_cast<int>(fraction * width + 0.5), 0, width);
  return std::string(filled, '#') + std::string(width - filled, '.');
}

std::vector<std::string> PlacementLines(const Snapshot& s, int selected, int width) {
  std::vector<std::string> out = {absl::StrFormat("%-8s %-8s %-24s %-10s %3s  %s", "version",
                                                  "status", "name", "algorithm", "G",
                                                  "predicted LAR (in-sample)")};
  for (size_t i = 0; i < s.versions.size(); ++i) {
    const auto& v = s.versions[i];
    const nlohmann::json m = ParseJsonOrDiscarded(v.metrics_json());
    out.push_back(Cut(
        absl::StrFormat("%s%-7d %-8s %-24s %-10s %3d  %.4f",
                        static_cast<int>(i) == selected ? ">" : " ", v.version(), v.status(),
                        Cut(v.name(), 24), v.algorithm(), v.num_devices(), Num(m, "lar_affinity")),
        width));
  }
  if (s.versions.empty()) out.push_back("  (no versions)");
  // The autopilot: its latest decision, then its latest rollouts and rollbacks.
  if (!s.autopilot.empty()) {
    const auto& last = s.autopilot.front();
    out.push_back("");
    out.push_back(Cut(absl::StrCat("autopilot: ", last.action(),
                                   last.repeats() > 1 ? absl::StrCat(" ×", last.repeats()) : "",
                                   " (serving v", last.served_version(), "): ", last.reason()),
                      width));
    int shown = 0;
    for (const auto& d : s.autopilot) {
      if ((d.action() != "rollout" && d.action() != "rollback") || shown == 3) continue;
      ++shown;
      out.push_back(Cut(absl::StrFormat("  #%d %s v%d -> v%d, %d experts moved", d.id(), d.action(),
                                        d.served_version(), d.candidate_version(),
                                        std::max(0, d.moved_experts())),
                        width));
    }
  }
  return out;
}

std::vector<std::string> ExperimentLines(const Snapshot& s, int selected, int width) {
  std::vector<std::string> out = {
      absl::StrFormat("%-5s %-8s %-24s %s", "id", "status", "name", "arms")};
  for (size_t i = 0; i < s.experiments.size(); ++i) {
    const auto& e = s.experiments[i];
    std::string arms;
    for (const auto& a : e.arms()) {
      absl::StrAppend(&arms, arms.empty() ? "" : ", ", a.name(), "=v", a.version(), " ",
                      a.share_percent(), "%");
    }
    out.push_back(
        Cut(absl::StrFormat("%s%-4d %-8s %-24s %s", static_cast<int>(i) == selected ? ">" : " ",
                            e.id(), e.status(), Cut(e.name(), 24), arms),
            width));
  }
  if (s.experiments.empty()) {
    out.push_back("  (no experiments)");
    return out;
  }
  const auto& e = s.experiments[std::clamp<int>(selected, 0, s.experiments.size() - 1)];
  out.push_back("");
  out.push_back(absl::StrFormat("experiment %d, per arm:", e.id()));
  out.push_back(absl::StrFormat("  %-4s %8s %8s %9s %9s %9s %9s %9s %7s", "arm", "requests", "done",
                                "TTFT p50", "TTFT p99", "TPOT p50", "E2E p99", "goodput/s", "LAR"));
  for (const auto& a : e.arms()) {
    const nlohmann::json m = ParseJsonOrDiscarded(a.latest_metrics_json());
    if (!m.is_object()) {
      out.push_back(absl::StrFormat("  %-4s (nothing recorded yet)", a.name()));
      continue;
    }
    out.push_back(
        Cut(absl::StrFormat("  %-4s %8.0f %8.0f %9.1f %9.1f %9.1f %9.1f %9.2f %7.3f", a.name(),
                            Num(m, "received"), Num(m, "completed"), Num(m, "ttft_ms", "p50"),
                            Num(m, "ttft_ms", "p99"), Num(m, "tpot_ms", "p50"),
                            Num(m, "e2e_ms", "p99"), Num(m, "goodput_rps"), Num(m, "lar")),
            width));
  }
  for (std::string& line : MeasuredSlowerLines(e)) out.push_back(Cut(line, width));
  const std::string verdict = Verdict(e);
  out.push_back(verdict.empty() ? "verdict: waiting for both arms' metrics"
                                : "verdict: " + verdict);
  return out;
}

std::vector<std::string> ClusterLines(const Snapshot& s, const std::deque<double>& throughput,
                                      int width, bool unicode) {
  const auto& r = s.router;
  std::vector<std::string> out = {
      Cut(absl::StrFormat("policy %s, %d requests (%d done, %d failed, %d rejected), LAR %.3f, "
                          "%.0f all-to-all B/token",
                          r.policy(), r.received(), r.completed(), r.failed(), r.rejected(),
                          r.lar(), r.a2a_bytes_per_token()),
          width),
      absl::StrFormat("%-4s %-4s %-21s %-7s %-18s %9s %8s %6s  %s", "arm", "rank", "address",
                      "health", "placement", "in flight", "assigned", "LAR", "load")};
  int64_t most = 1;
  for (const auto& k : r.ranks()) most = std::max(most, k.tokens_in_flight());
  for (const auto& k : r.ranks()) {
    out.push_back(Cut(absl::StrFormat("%-4s %-4d %-21s %-7s %-18s %9d %8d %6.3f  %s",
                                      k.arm().empty() ? "-" : k.arm(), k.rank(), k.address(),
                                      k.usable() ? "serving" : "DOWN", PlacementCell(k),
                                      k.requests_in_flight(), k.assigned(), k.lar(),
                                      Bar(static_cast<double>(k.tokens_in_flight()) / most, 20)),
                      width));
  }
  out.push_back("");
  out.push_back("LAR per MoE layer (bar = local share of expert activations, all ranks):");
  for (const auto& [layer, lar] : s.layer_lar) {
    out.push_back(Cut(absl::StrFormat("  layer %-3d %s %.3f", layer, Bar(lar, 40), lar), width));
  }
  if (s.layer_lar.empty()) out.push_back("  (no engine answered)");
  if (!s.layer_node_bytes.empty()) {
    out.push_back(Cut(absl::StrCat("all-to-all MiB per MoE layer across nodes | inside nodes (",
                                   s.topology.empty() ? "one node" : "topology " + s.topology,
                                   "; bar = cross-node share):"),
                      width));
    for (const Snapshot::NodeBytes& b : s.layer_node_bytes) {
      const double all = static_cast<double>(b.cross + b.intra);
      out.push_back(Cut(absl::StrFormat("  layer %-3d %s %9.1f | %9.1f", b.layer,
                                        Bar(all > 0 ? b.cross / all : 0.0, 40), b.cross / 1048576.0,
                                        b.intra / 1048576.0),
                        width));
    }
  }
  // The expert load per MoE layer over each group's ranks (the router's last poll).
  bool load_header = false;
  for (const auto& arm : r.arms()) {
    for (const auto& l : arm.layer_loads()) {
      if (!load_header) {
        out.push_back(Cut(absl::StrCat("expert-load imbalance per MoE layer ((max - mean) / mean "
                                       "over the ranks, ",
                                       arm.load_window_s() > 0
                                           ? absl::StrFormat("last %.0f s", arm.load_window_s())
                                           : std::string("since the engines started"),
                                       "):"),
                          width));
        load_header = true;
      }
      out.push_back(Cut(absl::StrFormat("  %-4s layer %-3d %s %.3f  (busiest: rank %d%s)",
                                        arm.name().empty() ? "-" : arm.name(), l.layer(),
                                        Bar(std::min(1.0, l.imbalance()), 40), l.imbalance(),
                                        l.busiest_rank(), HottestText(l)),
                        width));
    }
  }
  out.push_back("");
  out.push_back(
      Cut("throughput (requests/s, last minute): " + Sparkline(throughput, unicode), width + 40));
  return out;
}

std::vector<std::string> VersionDetails(const planner::rpc::PlacementVersion& v) {
  std::vector<std::string> out = {
      absl::StrFormat("version %d of %s: %s (%s, %s, %d devices)", v.version(), v.model(), v.name(),
                      v.algorithm(), v.status(), v.num_devices()),
      absl::StrCat("parameters: ", v.params_json())};
  const nlohmann::json m = ParseJsonOrDiscarded(v.metrics_json());
  if (m.is_object()) {
    out.push_back("recorded metrics (in-sample):");
    for (const auto& [key, value] : m.items()) {
      out.push_back(absl::StrCat("  ", key, ": ", value.dump()));
    }
  }
  out.push_back("(d: diff against the active version; any key closes)");
  return out;
}

std::vector<std::string> HelpLines() {
  return {"keys:",
          "  1 / 2 / 3 or Tab   placements / experiments / cluster",
          "  Up / Down          select",
          "  Enter              the selected version's details",
          "  a                  activate the selected version (asks y/n)",
          "  d                  diff the selected version against the active one",
          "  p / s              promote the selected experiment's better arm / stop it (asks y/n)",
          "  r                  refresh now",
          "  ?                  this help (any key closes it)",
          "  q                  quit"};
}

}  // namespace semmoe::console
