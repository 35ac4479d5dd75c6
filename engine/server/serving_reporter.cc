#include "engine/server/serving_reporter.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/security.h"
#include "glog/logging.h"
#include "planner/proto/planner.grpc.pb.h"

namespace semmoe::engine {

planner::rpc::ServingReport ServingReportFrom(const std::string& model, const std::string& group,
                                              const rpc::EngineStats& stats) {
  planner::rpc::ServingReport r;
  r.set_model(model);
  r.set_group(group);
  r.set_ranks(stats.ranks());
  r.set_serving_version(stats.placement_version());
  r.set_rollout_target(stats.rollout().target_version());
  r.set_refused_version(stats.rollout().refused_version());
  if (stats.rollout().refused_version() > 0) r.set_refusal(stats.rollout().error());
  // The whole group's: under DP the router may send a domain's requests to other ranks.
  r.set_completed(stats.group_serving().completed());
  r.set_failed(stats.group_serving().failed());
  r.set_local_activations(stats.group_serving().local_activations());
  r.set_remote_activations(stats.group_serving().remote_activations());
  r.set_output_tokens(stats.group_serving().output_tokens());
  r.set_request_seconds(stats.group_serving().request_seconds());
  return r;
}

ServingReporter::ServingReporter(Options options) : o_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

ServingReporter::~ServingReporter() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  thread_.join();
}

std::string ServingReporter::error() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

void ServingReporter::Run() {
  auto stub = planner::rpc::PlannerService::NewStub(semmoe::NewChannel(o_.planner));
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop_), o_.period)) return;
    }
    const planner::rpc::ServingReport report = ServingReportFrom(o_.model, o_.group, o_.stats());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(o_.period));
    planner::rpc::ReportServingResponse response;
    const grpc::Status status = stub->ReportServing(&context, report, &response);
    std::string error;
    if (!status.ok()) {
      error = absl::StrCat("cannot report what the group serves to the planner ", o_.planner, ": ",
                           status.error_message());
    }
    absl::MutexLock lock(&mu_);
    if (!error.empty() && error != error_) LOG(WARNING) << error << "; retrying";
    error_ = std::move(error);
  }
}

}  // namespace semmoe::engine
