// `placements activate` / `rollback` / `experiments promote`: waiting until the engine groups
// serve the version (engine/parallel/placement_rollout.h), from the router's view of its ranks.
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security.h"
#include "console/commands.h"
#include "console/rpc_util.h"
#include "engine/proto/engine.grpc.pb.h"

namespace semmoe::console {
namespace {

// How long a rank may be down during a rollout before the rollout is called failed.
constexpr absl::Duration kRankDownLimit = absl::Seconds(15);

using Ranks = std::vector<const rrpc::RankStats*>;

// The router's ranks by group (arm name; "" for the only group).
std::map<std::string, Ranks> ByGroup(const rrpc::RouterStats& stats) {
  std::map<std::string, Ranks> groups;
  for (const rrpc::RankStats& r : stats.ranks()) groups[r.arm()].push_back(&r);
  return groups;
}

std::string GroupName(const std::string& arm) {
  return arm.empty() ? "the group" : absl::StrCat("arm ", arm, "'s group");
}

}  // namespace

absl::Status Console::AwaitRollout(int64_t version, bool push) {
  rrpc::RouterStats stats;
  ROUTER(GetStats, rrpc::GetStatsRequest(), &stats);
  // The groups that take the version: those following the active version, or (push) all, each
  // told by a Rollout call to its rank 0. Each rank's refusals so far, to tell new ones.
  std::set<std::string> groups;
  std::map<std::string, int64_t> refusals;
  for (const auto& [arm, ranks] : ByGroup(stats)) {
    for (const rrpc::RankStats* r : ranks) {
      refusals[r->address()] = r->rollout().refusals();
    }
    if (!push && !ranks[0]->rollout().follows_active()) continue;
    groups.insert(arm);
    if (!push) continue;
    auto stub = engine::rpc::EngineService::NewStub(semmoe::NewChannel(ranks[0]->address()));
    engine::rpc::RolloutRequest request;
    request.set_version(version);
    engine::rpc::RolloutResponse response;
    SEMMOE_CALL(stub, Rollout, request, &response, absl::StrCat(GroupName(arm), "'s rank 0"),
                ranks[0]->address());
  }
  if (groups.empty()) {
    if (!o_.json) {
      out_ << "no engine group behind the router follows the active version: what they serve "
              "is unchanged (start them with `engine serve --follow_active MODEL`)\n";
    }
    return absl::OkStatus();
  }
  const absl::Time deadline = absl::Now() + o_.rollout_timeout;
  std::map<std::string, absl::Time> unreachable_since;
  std::string last_progress;
  for (;;) {
    bool done = true;
    std::string progress;
    for (const auto& [arm, ranks] : ByGroup(stats)) {
      if (groups.count(arm) == 0) continue;
      for (const rrpc::RankStats* r : ranks) {
        const engine::rpc::RolloutStats& ro = r->rollout();
        const std::string who = absl::StrCat(GroupName(arm), ", rank ", r->rank());
        if (!r->usable()) {
          auto [it, fresh] = unreachable_since.emplace(r->address(), absl::Now());
          // A rank restarted by its supervisor rejoins in seconds, and the re-formed group
          // rolls the active version out again; one down longer is a failed rollout.
          if (absl::Now() - it->second > kRankDownLimit) {
            return absl::UnavailableError(absl::StrCat(
                "rollout of version ", version, " failed: ", who, " (", r->address(),
                ") has been down for ", absl::FormatDuration(kRankDownLimit), " (",
                r->down_reason(),
                "); the group has stopped (a group never serves with mixed placements), see its "
                "rank logs"));
          }
        } else {
          unreachable_since.erase(r->address());
        }
        if (ro.refusals() > refusals[r->address()] && ro.refused_version() == version) {
          return absl::FailedPreconditionError(
              absl::StrCat("rollout failed: ", GroupName(arm), ": ", ro.error()));
        }
        if (r->placement_version() != version) {
          done = false;
          absl::StrAppend(&progress, "  ", who, ": ",
                          ro.target_version() == version
                              ? absl::StrCat(ro.experts_loaded(), "/", ro.experts_to_load(),
                                             " experts loaded", ro.staged() ? ", staged" : "")
                              : absl::StrCat("serves version ", r->placement_version()),
                          "\n");
        }
      }
    }
    if (done) break;
    if (!o_.json && progress != last_progress) out_ << progress << std::flush;
    last_progress = progress;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("rollout of version ", version, " not finished after ",
                       absl::FormatDuration(o_.rollout_timeout),
                       " (--rollout_timeout_s); it goes on: `console cluster status` shows it"));
    }
    absl::SleepFor(absl::Milliseconds(200));
    stats.Clear();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + o_.deadline));
    if (absl::Status polled =
            Rpc(router_->GetStats(&context, rrpc::GetStatsRequest(), &stats), "router", o_.router);
        !polled.ok()) {
      return absl::UnavailableError(absl::StrCat(
          "rollout of version ", version, " failed: lost the router while waiting (",
          polled.message(),
          "); the cluster has stopped or the router is down (a group never "
          "serves with mixed placements: a rank that died stops its group), see the rank logs"));
    }
  }
  for (const auto& [arm, ranks] : ByGroup(stats)) {
    if (groups.count(arm) == 0 || o_.json) continue;
    const engine::rpc::RolloutStats& ro = ranks[0]->rollout();
    out_ << GroupName(arm) << " serves version " << version << " on every rank (epoch "
         << ro.epoch() << ", from agreement round " << ro.switch_round() << "; rank 0 loaded "
         << ro.last_experts_loaded() << " experts, freed " << ro.last_experts_freed() << ")\n";
  }
  return absl::OkStatus();
}

absl::Status Console::Rollout(int64_t version, int64_t previous) {
  if (!o_.wait) return absl::OkStatus();
  absl::Status rolled = AwaitRollout(version, /*push=*/false);
  if (rolled.ok() || previous <= 0 || absl::IsDeadlineExceeded(rolled)) return rolled;
  // The engines stayed on the previous version: make the planner say so too.
  prpc::ActivateRequest request;
  request.set_version(previous);
  prpc::ActivateResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + o_.deadline));
  const grpc::Status restored = planner_->Activate(&context, request, &response);
  return absl::Status(
      rolled.code(),
      absl::StrCat(rolled.message(), restored.ok()
                                         ? absl::StrCat("; version ", previous, " is active again")
                                         : absl::StrCat("; could not re-activate "
                                                        "version ",
                                                        previous, ": ", restored.error_message())));
}

}  // namespace semmoe::console
