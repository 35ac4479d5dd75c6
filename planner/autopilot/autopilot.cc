#include "planner/autopilot/autopilot.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "planner/cli/commands.h"
#include "planner/cli/drift.h"

namespace semmoe::planner {
namespace {

// The mode's LAR under its data rule, as `planner eval --json` names it.
const char* LarKey(const std::string& mode) {
  return mode == "tp" ? "tp_lar_srs" : "dp_lar_affinity";
}

// The window's halves (build on one, check on the other): request r by a bit of a hash of r,
// so that traffic with a period (every other request alike) still lands in both.
absl::StatusOr<trace::TraceSet> Half(const trace::TraceSet& window, int half_index) {
  trace::TraceSet half;
  half.header = window.header;
  for (int r = 0; r < window.num_requests(); ++r) {
    uint64_t z = static_cast<uint64_t>(r) + 0x9e3779b97f4a7c15ULL;  // splitmix64
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    if (static_cast<int>(z & 1) == half_index) RETURN_IF_ERROR(half.CopyRequest(window, r));
  }
  return half;
}

// What identifies the traffic in a window: its size and a hash (FNV-1a) of its tokens and
// their routing.
std::string WindowSignature(const trace::TraceSet& window) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  for (uint32_t t : window.tokens) mix(t);
  for (uint16_t e : window.experts) mix(e);
  return absl::StrCat(window.num_requests(), "/", window.num_tokens(), "/", absl::Hex(h));
}

std::string Lar(double x) { return absl::StrFormat("%.4f", x); }

std::string Share(double x) { return absl::StrFormat("%.1f%%", 100 * x); }

bool Negative(const ServingTotals& t) {
  return t.completed < 0 || t.failed < 0 || t.local < 0 || t.remote < 0 || t.output_tokens < 0 ||
         t.request_seconds < 0;
}

nlohmann::ordered_json Served(const ServingTotals& t) {
  return {{"requests", t.completed + t.failed},
          {"failed", t.failed},
          {"activations", t.activations()},
          {"lar", t.lar()},
          {"ms_per_output_token", 1000 * t.seconds_per_token()}};
}

}  // namespace

absl::Status ValidateAutopilotOptions(const AutopilotOptions& o) {
  auto fraction = [](const char* flag, double v, double lo, double hi) -> absl::Status {
    if (std::isfinite(v) && v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " must be a number between ", lo, " and ", hi, ", got ", v));
  };
  auto count = [](const char* flag, int64_t v, int64_t lo, int64_t hi) -> absl::Status {
    if (v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " must be between ", lo, " and ", hi, ", got ", v));
  };
  auto duration = [](const char* flag, absl::Duration v, absl::Duration lo) -> absl::Status {
    if (v >= lo && v <= absl::Hours(24 * 7)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("--", flag, " must be between ",
                                                   absl::FormatDuration(lo), " and 168h, got ",
                                                   absl::FormatDuration(v)));
  };
  for (const absl::Status& s : {
           fraction("autopilot_drift", o.drift_threshold, 0, 1),
           fraction("autopilot_shift", o.shift_threshold, 0, 1),
           fraction("autopilot_min_gain", o.min_gain, 0, 1),
           fraction("autopilot_max_lar_loss", o.max_lar_loss, 0, 1),
           fraction("autopilot_served_margin", o.served_lar_margin, 0, 1),
           fraction("autopilot_served_latency_margin", o.served_latency_margin, 0, 100),
           count("autopilot_min_window_tokens", o.min_window_tokens, 1, int64_t{1} << 40),
           count("autopilot_expert_budget", o.max_moved_experts, -1, 1 << 24),
           count("autopilot_migration_retries", o.migration_retries, 0, 100),
           count("autopilot_min_served_requests", o.min_served_requests, 0, 1 << 30),
           duration("autopilot_min_interval", o.min_interval, absl::ZeroDuration()),
           duration("autopilot_confirm", o.drift_confirm, absl::ZeroDuration()),
           duration("autopilot_rollout_timeout", o.rollout_timeout, absl::Seconds(1)),
       }) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Autopilot>> Autopilot::Create(const AutopilotOptions& o) {
  if (absl::Status valid = ValidateAutopilotOptions(o); !valid.ok()) return valid;
  if (o.model.empty()) return absl::InvalidArgumentError("the autopilot needs a model");
  if (o.traces.empty()) {
    return absl::InvalidArgumentError(
        "the autopilot needs the live routing traces the ranks sample (engine serve "
        "--sample_routing)");
  }
  if (o.drift_threshold < 0 || o.shift_threshold < 0 || o.min_gain < 0 || o.rollback_margin < 0 ||
      o.min_interval < absl::ZeroDuration() || o.drift_confirm < absl::ZeroDuration() ||
      o.report_fresh <= absl::ZeroDuration() || o.rollout_timeout <= absl::ZeroDuration() ||
      o.min_served_requests < 1 || o.max_failed_share_gain < 0 || o.served_lar_margin < 0 ||
      o.served_latency_margin < 0 || o.migration_retries < 0) {
    return absl::InvalidArgumentError(
        "the autopilot's thresholds, gain, margins, intervals and retries must not be negative "
        "(the report "
        "freshness, rollout timeout and served requests positive)");
  }
  auto autopilot = std::unique_ptr<Autopilot>(new Autopilot(o));
  PlacementStore::Options store_options;
  store_options.clock = o.clock;
  ASSIGN_OR_RETURN(autopilot->store_, PlacementStore::Open(o.db, store_options));
  autopilot->decisions_ = std::make_unique<AutopilotStore>(*autopilot->store_);
  // After a restart: the last rollout, rollback or refused candidate, and whether a rollout still
  // awaits its check.
  ASSIGN_OR_RETURN(std::vector<AutopilotDecision> history,
                   autopilot->decisions_->Latest(o.model, 1000));
  for (const AutopilotDecision& d : history) {
    if (d.action != "rollout" && d.action != "rollback" && d.action != "refuse") continue;
    autopilot->last_change_ = d.at;
    if (d.action == "rollout") {
      const nlohmann::json f = ParseJsonOrDiscarded(d.figures_json);
      if (f.is_object() && f.value("probation", false)) {
        autopilot->rolled_out_ = d.candidate_version;
        autopilot->previous_ = d.served_version;
      }
      if (f.is_object()) {
        autopilot->rollout_window_ = f.value("window", std::string());
        if (f.value("budget_spent", false)) {
          autopilot->migrating_ = d.candidate_version;
          autopilot->retries_left_ = o.migration_retries;
        }
      }
    }
    if (d.action == "refuse") {  // A migration's refused candidate may leave a retry.
      const nlohmann::json f = ParseJsonOrDiscarded(d.figures_json);
      if (f.is_object() && f.value("migration_retry", false)) {
        autopilot->retry_version_ = d.served_version;
        autopilot->retry_window_ = f.value("window", std::string());
        autopilot->retries_left_ = f.value("retries_left", 0);
      }
    }
    break;
  }
  return autopilot;
}

absl::StatusOr<AutopilotDecision> Autopilot::Tick() {
  AutopilotDecision d;
  d.model = o_.model;
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();
  const absl::Status decided = Decide(d, figures);
  if (!decided.ok()) {
    d.action = "error";
    d.reason = std::string(decided.message());
    d.moved_experts = -1;
  }
  d.figures_json = figures.dump();
  ASSIGN_OR_RETURN(d.id, decisions_->Record(d));
  d.at = o_.clock->Now();
  return d;
}

absl::Status Autopilot::Decide(AutopilotDecision& d, nlohmann::ordered_json& f) {
  ASSIGN_OR_RETURN(std::optional<PlacementVersion> active, store_->Active(o_.model));
  if (!active.has_value()) {
    d.action = "wait";
    d.reason = absl::StrCat("model '", o_.model, "' has no active version to re-plan from");
    return absl::OkStatus();
  }
  d.served_version = active->version;
  if (o_.serving != nullptr) {
    ASSIGN_OR_RETURN(const bool rolled_back, CheckServing(d, f, active->version));
    if (rolled_back) return absl::OkStatus();
  }
  const std::string mode = AttentionModeOf(*active);

  absl::StatusOr<trace::TraceSet> window = cli::LoadTraces(o_.traces);
  if (!window.ok()) {
    if (!absl::IsNotFound(window.status())) return window.status();
    d.action = "wait";
    d.reason = absl::StrCat("no live routing traces yet: ", window.status().message());
    return absl::OkStatus();
  }
  f["window_requests"] = window->num_requests();
  f["window_tokens"] = window->num_tokens();
  const std::string signature = WindowSignature(*window);
  f["window"] = signature;
  if (window->num_tokens() < o_.min_window_tokens || window->num_requests() < 4) {
    d.action = "wait";
    d.reason = absl::StrCat("the window holds ", window->num_tokens(), " tokens of ",
                            window->num_requests(), " requests; at least ", o_.min_window_tokens,
                            " tokens of 4 requests are needed to plan from");
    return absl::OkStatus();
  }

  // A rollout on probation: checked once against its predecessor on other traffic.
  if (rolled_out_ > 0 && (rolled_out_ != active->version || signature != rollout_window_)) {
    const int64_t rolled_out = rolled_out_, previous = previous_;
    rolled_out_ = previous_ = 0;
    if (rolled_out == active->version) {
      ASSIGN_OR_RETURN(nlohmann::ordered_json rows,
                       cli::EvalRowsOn({.db = o_.db, .versions = {previous, rolled_out}}, *window));
      const double before = rows[0].value(LarKey(mode), 0.0);
      const double after = rows[1].value(LarKey(mode), 0.0);
      f["lar_previous"] = before;
      f["lar_rolled_out"] = after;
      if (after < before - o_.rollback_margin) {
        return Rollback(d, previous,
                        absl::StrCat("version ", rolled_out, " serves live traffic at LAR ",
                                     Lar(after), ", below version ", previous, "'s ", Lar(before),
                                     " by more than ", Lar(o_.rollback_margin)));
      }
      f["probation_passed"] = true;
    }
  }

  // On the window read above (not read again: the ranks may have flushed meanwhile).
  ASSIGN_OR_RETURN(nlohmann::ordered_json drift,
                   cli::DriftReportOn({.db = o_.db, .version = active->version}, *window));
  const double planned = drift.value("planned_lar", 0.0), live = drift.value("live_lar", 0.0);
  const double lar_drift = live - planned;
  const double shift = drift.value("expert_shift", 0.0);
  f["planned_lar"] = planned;
  f["live_lar"] = live;
  f["lar_drift"] = lar_drift;
  f["expert_shift"] = shift;
  f["unseen_token_share"] = drift.value("unseen_token_share", 0.0);
  const std::string seen = absl::StrCat("live LAR ", Lar(live), " against ", Lar(planned),
                                        " planned, traffic shift ", Lar(shift));
  const bool steady = lar_drift >= -o_.drift_threshold && shift <= o_.shift_threshold;
  // A rollout that spent the whole budget left LAR behind: once the traffic after it is in the
  // window, the migration goes on (a candidate that gains too little ends it).
  const bool migrating = migrating_ == active->version && signature != rollout_window_;
  const bool retrying =
      !migrating && retry_version_ == active->version && signature != retry_window_;
  if (steady && !migrating && !retrying) {
    drift_seen_.reset();
    d.action = "steady";
    d.reason =
        absl::StrCat(seen, ": within ", Lar(o_.drift_threshold), " and ", Lar(o_.shift_threshold));
    return absl::OkStatus();
  }
  const std::string why =
      !steady     ? seen
      : migrating ? absl::StrCat(seen, "; version ", active->version,
                                 " spent the whole expert budget: the migration goes on")
                  : absl::StrCat(seen,
                                 "; the migration's last candidate was refused on another "
                                 "window: it is tried again on this one");
  f["migrating"] = steady;
  if (probe_.has_value()) {  // Never two rollouts in flight.
    d.action = "wait";
    d.reason = absl::StrCat(why, ", but version ", probe_->version,
                            " is not yet served and checked where it serves");
    return absl::OkStatus();
  }
  const absl::Time now = o_.clock->Now();
  if (!drift_seen_.has_value()) drift_seen_.emplace(now, serving_now_);
  if (now - drift_seen_->first < o_.drift_confirm) {
    d.action = "wait";
    d.reason =
        absl::StrCat(why, ", seen for ", absl::ToInt64Seconds(now - drift_seen_->first),
                     " s of the ", absl::ToDoubleSeconds(o_.drift_confirm), " s a drift must last");
    return absl::OkStatus();
  }
  const absl::Duration since = now - last_change_;
  if (since < o_.min_interval) {
    d.action = "wait";
    d.reason = absl::StrCat(why, ", but the last rollout, rollback or refused candidate was ",
                            absl::FormatDuration(absl::Trunc(since, absl::Seconds(1))),
                            " ago (minimum ", absl::FormatDuration(o_.min_interval), ")");
    return absl::OkStatus();
  }

  // A candidate from half the window, relative to the active version, checked on the other half.
  const Placement& served = active->placement;
  const int budget = o_.max_moved_experts >= 0 ? o_.max_moved_experts
                                               : served.num_layers() * served.num_experts() / 4;
  f["expert_budget"] = budget;
  ASSIGN_OR_RETURN(trace::TraceSet build_half, Half(*window, 0));
  ASSIGN_OR_RETURN(trace::TraceSet check_half, Half(*window, 1));
  cli::BuildOptions build{
      .db = o_.db,
      .model = o_.model,
      .traces = o_.traces,
      .devices = served.num_devices(),
      .mode = mode,
      .name = absl::StrCat("autopilot-from-v", active->version),
      .replicas = served.replicas_per_device(),
      .relative_to = active->version,
      .max_moved_experts = budget,
      .max_lar_loss = o_.max_lar_loss,
  };
  // The served version's expert balance, kept when it was set by hand (read without throwing:
  // the database is input too).
  if (const nlohmann::json params = ParseJsonOrDiscarded(active->params_json); params.is_object()) {
    auto automatic = params.find("expert_balance_auto");
    auto eps = params.find("expert_balance_eps");
    if (automatic != params.end() && automatic->is_boolean() && !automatic->get<bool>()) {
      build.expert_balance_eps =
          eps != params.end() && eps->is_number() ? eps->get<double>() : -1.0;
    }
  }
  std::ostringstream built;
  ASSIGN_OR_RETURN(const int64_t candidate, cli::BuildFrom(build, std::move(build_half), built));
  d.candidate_version = candidate;
  ASSIGN_OR_RETURN(
      nlohmann::ordered_json rows,
      cli::EvalRowsOn({.db = o_.db, .versions = {active->version, candidate}}, check_half));
  const double served_lar = rows[0].value(LarKey(mode), 0.0);
  const double candidate_lar = rows[1].value(LarKey(mode), 0.0);
  f["check_lar_served"] = served_lar;
  f["check_lar_candidate"] = candidate_lar;
  ASSIGN_OR_RETURN(const nlohmann::ordered_json diff,
                   cli::DiffReport(o_.db, active->version, candidate));
  const int moved = diff.value("moved", 0);
  f["moved_experts"] = moved;
  if (candidate_lar < served_lar + o_.min_gain) {
    return Refuse(d, f, signature,
                  absl::StrCat("candidate version ", candidate, " reaches LAR ", Lar(candidate_lar),
                               " on the held-back half of the window against ", Lar(served_lar),
                               " for version ", active->version, ": under the ", Lar(o_.min_gain),
                               " gain a rollout needs"));
  }
  if (moved > budget) {  // The build keeps the budget; a placement that does not is refused.
    return Refuse(d, f, signature,
                  absl::StrCat("candidate version ", candidate, " moves ", moved,
                               " experts, over the budget of ", budget));
  }
  // The check passed: the version rolled out is the same build from the whole window (its tables
  // then know twice the tokens), within the same budget.
  build.name = absl::StrCat("autopilot-from-v", active->version, "-window");
  ASSIGN_OR_RETURN(const int64_t rollout, cli::BuildFrom(build, trace::TraceSet(*window), built));
  ASSIGN_OR_RETURN(const nlohmann::ordered_json full_diff,
                   cli::DiffReport(o_.db, active->version, rollout));
  const int rollout_moved = full_diff.value("moved", 0);
  f["checked_version"] = candidate;
  f["moved_experts"] = rollout_moved;
  d.candidate_version = rollout;
  if (rollout_moved > budget) {
    return Refuse(d, f, signature,
                  absl::StrCat("version ", rollout, " (from the whole window) moves ",
                               rollout_moved, " experts, over the budget of ", budget));
  }
  if (absl::Status guard = store_->CheckPredictedNotSlower(rollout); !guard.ok()) {
    return Refuse(d, f, signature, std::string(guard.message()));
  }
  RETURN_IF_ERROR(store_->Activate(rollout));
  last_change_ = o_.clock->Now();
  rolled_out_ = rollout;
  previous_ = active->version;
  rollout_window_ = signature;
  migrating_ = rollout_moved >= budget ? rollout : 0;
  retries_left_ = o_.migration_retries;  // Each migration step may be retried anew.
  retry_version_ = 0;
  f["probation"] = true;
  f["budget_spent"] = migrating_ > 0;
  if (o_.serving != nullptr) {
    probe_ = ServedProbe{.version = rollout,
                         .previous = active->version,
                         .at = last_change_,
                         .before = serving_now_ - drift_seen_->second};
  }
  drift_seen_.reset();
  d.action = "rollout";
  d.moved_experts = rollout_moved;
  d.reason = absl::StrCat(why, "; a version from half the window reaches ", Lar(candidate_lar),
                          " against ", Lar(served_lar), " on the other half: version ", rollout,
                          " (the whole window) moves ", rollout_moved, " of ",
                          served.num_layers() * served.num_experts(), " experts");
  return absl::OkStatus();
}

absl::Status Autopilot::Refuse(AutopilotDecision& d, nlohmann::ordered_json& f,
                               const std::string& window, std::string reason) {
  last_change_ = o_.clock->Now();  // No candidate more often than min_interval either.
  // A migration ends where nothing gains enough — after its retries, each on a window that has
  // turned over (the refused one may have been noise).
  const bool in_migration = migrating_ == d.served_version || retry_version_ == d.served_version;
  migrating_ = 0;
  retry_version_ = 0;
  if (in_migration && retries_left_ > 0) {
    --retries_left_;
    retry_version_ = d.served_version;
    retry_window_ = window;
    f["migration_retry"] = true;
    f["retries_left"] = retries_left_;
    reason = absl::StrCat(reason, "; the migration is tried again once the window has turned over");
  }
  d.action = "refuse";
  d.reason = std::move(reason);
  return absl::OkStatus();
}

absl::Status Autopilot::Rollback(AutopilotDecision& d, int64_t previous, std::string reason) {
  RETURN_IF_ERROR(store_->Activate(previous));
  last_change_ = o_.clock->Now();
  rolled_out_ = previous_ = 0;
  migrating_ = retry_version_ = 0;
  probe_.reset();
  drift_seen_.reset();
  d.action = "rollback";
  d.candidate_version = previous;
  d.reason = absl::StrCat(reason, ": rolled back to ", previous);
  return absl::OkStatus();
}

absl::StatusOr<bool> Autopilot::CheckServing(AutopilotDecision& d, nlohmann::ordered_json& f,
                                             int64_t active_version) {
  const absl::Time now = o_.clock->Now();
  const std::vector<ServingState> groups = o_.serving->Of(o_.model, now, o_.report_fresh);
  nlohmann::ordered_json seen = nlohmann::ordered_json::array();
  for (const ServingState& g : groups) {
    seen.push_back({{"group", g.group},
                    {"version", g.serving_version},
                    {"rollout_target", g.rollout_target},
                    {"refused_version", g.refused_version}});
  }
  f["serving_groups"] = seen;
  const ServingTotals previous_totals = serving_now_;
  serving_now_ = Sum(groups);
  if (Negative(serving_now_ - previous_totals)) {  // A rank restarted: its counters began anew.
    if (drift_seen_.has_value()) drift_seen_->second = serving_now_;
    if (probe_.has_value()) {
      probe_->before = {};
      if (probe_->switched) probe_->at_switch = serving_now_;
    }
  }
  if (!probe_.has_value()) return false;
  ServedProbe& p = *probe_;
  if (p.version != active_version) {  // Someone else activated another version since.
    probe_.reset();
    return false;
  }
  for (const ServingState& g : groups) {
    if (g.refused_version == p.version) {
      RETURN_IF_ERROR(
          Rollback(d, p.previous,
                   absl::StrCat("group ", g.group, " refused version ", p.version, " (", g.refusal,
                                ") and serves version ", g.serving_version)));
      return true;
    }
  }
  if (!p.switched) {
    const bool all =
        !groups.empty() && std::all_of(groups.begin(), groups.end(), [&](const ServingState& g) {
          return g.serving_version == p.version;
        });
    if (all) {
      p.switched = true;
      p.at_switch = serving_now_;
      f["served_switched"] = true;
    } else if (now - p.at > o_.rollout_timeout) {
      if (groups.empty()) {  // Nobody reports: nothing to check against.
        probe_.reset();
        f["served_check"] = "no group reported what it serves";
        return false;
      }
      std::vector<std::string> serving;
      for (const ServingState& g : groups) {
        serving.push_back(absl::StrCat(g.group, " v", g.serving_version));
      }
      RETURN_IF_ERROR(
          Rollback(d, p.previous,
                   absl::StrCat("the groups do not serve version ", p.version, " ",
                                absl::FormatDuration(o_.rollout_timeout), " after its rollout (",
                                absl::StrJoin(serving, ", "), ")")));
      return true;
    }
    return false;
  }
  const ServingTotals after = serving_now_ - p.at_switch;
  f["served_after"] = Served(after);
  if (after.completed + after.failed < o_.min_served_requests) {
    if (now - p.at > o_.rollout_timeout) {  // Too little traffic to judge: the check ends.
      probe_.reset();
      f["served_check"] =
          absl::StrCat("skipped: ", after.completed + after.failed, " requests served in ",
                       absl::FormatDuration(o_.rollout_timeout), " since it");
    }
    return false;
  }
  const ServingTotals before = p.before;
  probe_.reset();
  f["served_before"] = Served(before);
  if (before.completed + before.failed < o_.min_served_requests) {
    f["served_check"] = absl::StrCat("skipped: ", before.completed + before.failed,
                                     " requests served between the drift and the rollout");
    return false;
  }
  const std::string where =
      absl::StrCat(" (", groups.size(), " group", groups.size() == 1 ? "" : "s", ", ",
                   after.completed + after.failed, " requests since the switch)");
  if (after.lar() < before.lar() - o_.served_lar_margin) {
    RETURN_IF_ERROR(
        Rollback(d, p.previous,
                 absl::StrCat("version ", p.version, " serves at LAR ", Lar(after.lar()), where,
                              ", below version ", p.previous, "'s ", Lar(before.lar()),
                              " on the same traffic before the rollout by more than ",
                              Lar(o_.served_lar_margin))));
    return true;
  }
  if (after.failed_share() > before.failed_share() + o_.max_failed_share_gain) {
    RETURN_IF_ERROR(
        Rollback(d, p.previous,
                 absl::StrCat("version ", p.version, " failed ", Share(after.failed_share()),
                              " of its requests", where, ", against ", Share(before.failed_share()),
                              " under version ", p.previous)));
    return true;
  }
  const double before_ms = 1000 * before.seconds_per_token();
  const double after_ms = 1000 * after.seconds_per_token();
  if (before_ms > 0 && after_ms > before_ms * (1 + o_.served_latency_margin)) {
    RETURN_IF_ERROR(Rollback(
        d, p.previous,
        absl::StrCat("version ", p.version, " serves at ", absl::StrFormat("%.1f", after_ms),
                     " ms per output token", where, ", above version ", p.previous, "'s ",
                     absl::StrFormat("%.1f", before_ms), " by more than ",
                     Share(o_.served_latency_margin))));
    return true;
  }
  f["served_check_passed"] = true;
  return false;
}

}  // namespace semmoe::planner
