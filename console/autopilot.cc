// console autopilot status: the planner's autopilot decisions for a model (planner serve
// --autopilot; docs/PLANNER.md "Autopilot").
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_fields.h"
#include "console/commands.h"
#include "console/rpc_util.h"
#include "console/table.h"

namespace semmoe::console {
namespace {

// What the groups that follow the model reported when the decision was made (the planner's
// ServingBoard), as one line; "" when the decision does not say (an autopilot without reports).
std::string ServingLine(const std::string& model, const prpc::AutopilotDecision& d) {
  const nlohmann::json f = ParseJsonOrDiscarded(d.figures_json());
  if (!f.is_object() || !f.contains("serving_groups") || !f["serving_groups"].is_array()) {
    return "";
  }
  std::vector<std::string> groups;
  for (const nlohmann::json& g : f["serving_groups"]) {
    if (!g.is_object()) continue;
    std::string line = absl::StrCat(g.value("group", std::string("?")), " serves v",
                                    g.value("version", int64_t{0}));
    if (g.value("rollout_target", int64_t{0}) > 0) {
      absl::StrAppend(&line, ", staging v", g.value("rollout_target", int64_t{0}));
    }
    if (g.value("refused_version", int64_t{0}) > 0) {
      absl::StrAppend(&line, ", refused v", g.value("refused_version", int64_t{0}));
    }
    groups.push_back(std::move(line));
  }
  if (groups.empty()) {
    return absl::StrCat("!! autopilot: no group that follows ", model,
                        " reports what it serves: rollouts are checked on the window only\n");
  }
  return absl::StrCat("groups: ", absl::StrJoin(groups, "; "), "\n");
}

}  // namespace

absl::Status Console::AutopilotStatus() {
  if (o_.model.empty()) return absl::InvalidArgumentError("'autopilot status' needs --model");
  prpc::ListAutopilotDecisionsRequest request;
  request.set_model(o_.model);
  request.set_limit(o_.json ? 100 : 20);  // The table shows 20; scripts get more.
  prpc::ListAutopilotDecisionsResponse response;
  PLANNER(ListAutopilotDecisions, request, &response);
  if (o_.json) {
    out_ << Json(response) << "\n";
    return absl::OkStatus();
  }
  if (response.decisions().empty()) {
    out_ << "autopilot for " << o_.model
         << ": no decisions (is the planner serving with --autopilot?)\n";
    return absl::OkStatus();
  }
  const prpc::AutopilotDecision& last = response.decisions(0);
  out_ << "autopilot for " << o_.model << ": " << last.action() << " at "
       << Time(last.at_unix_micros()) << " UTC, serving v" << last.served_version() << ": "
       << last.reason()
       << (last.repeats() > 1 ? absl::StrCat(" [", last.repeats(), " times, the last at ",
                                             Time(last.last_at_unix_micros()), " UTC]")
                              : "")
       << "\n";
  if (last.action() == "error") out_ << "!! autopilot: " << last.reason() << "\n";
  out_ << ServingLine(o_.model, last);
  Table t({"id", "at (UTC)", "action", "times", "served", "candidate", "moved", "reason"});
  for (const prpc::AutopilotDecision& d : response.decisions()) {
    t.Add({absl::StrCat(d.id()), Time(d.at_unix_micros()), d.action(),
           absl::StrCat(std::max<int64_t>(1, d.repeats())), absl::StrCat("v", d.served_version()),
           d.candidate_version() > 0 ? absl::StrCat("v", d.candidate_version()) : "-",
           d.moved_experts() >= 0 ? absl::StrCat(d.moved_experts()) : "-", d.reason()});
  }
  out_ << t.Render();
  return absl::OkStatus();
}

}  // namespace semmoe::console
