// console autopilot status: the planner's autopilot decisions for a model (planner serve
// --autopilot; docs/PLANNER.md "Autopilot").
#include "absl/strings/str_cat.h"
#include "console/commands.h"
#include "console/rpc_util.h"
#include "console/table.h"

namespace semmoe::console {

absl::Status Console::AutopilotStatus() {
  if (o_.model.empty()) return absl::InvalidArgumentError("'autopilot status' needs --model");
  prpc::ListAutopilotDecisionsRequest request;
  request.set_model(o_.model);
  request.set_limit(20);
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
       << last.reason() << "\n";
  if (last.action() == "error") out_ << "!! autopilot: " << last.reason() << "\n";
  Table t({"id", "at (UTC)", "action", "served", "candidate", "moved", "reason"});
  for (const prpc::AutopilotDecision& d : response.decisions()) {
    t.Add({absl::StrCat(d.id()), Time(d.at_unix_micros()), d.action(),
           absl::StrCat("v", d.served_version()),
           d.candidate_version() > 0 ? absl::StrCat("v", d.candidate_version()) : "-",
           d.moved_experts() >= 0 ? absl::StrCat(d.moved_experts()) : "-", d.reason()});
  }
  out_ << t.Render();
  return absl::OkStatus();
}

}  // namespace semmoe::console
