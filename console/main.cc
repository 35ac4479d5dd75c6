// console: the terminal admin console for Sem-MoE placements, experiments and the live cluster.
//
//   console placements list --model M | show V | diff V1 V2 | activate V | rollback --model M
//   console placements eval V... --traces T[,T...]
//   console experiments create --model M --a V1 --b V2 --share P [--name N] | list --model M
//   console experiments status ID | stop ID | promote ID [--arm A|B]
//   console cluster status
//   console autopilot status --model M   (the planner's autopilot decisions, newest first)
//   console tui --model M      (interactive: placements, experiments, cluster; ? for keys)
//   flags: --planner HOST:PORT --router HOST:PORT (default: the demo's cluster when it runs,
//          else 127.0.0.1:7070 and 127.0.0.1:8000), --json, --yes (no confirmation prompts)
//
// Exit status: 0 on success; 1 with a one-line reason when a command failed (an unreachable
// service, an unknown version, a refused change); 2 for bad usage.
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "common/file.h"
#include "common/security_flags.h"
#include "console/commands.h"
#include "console/endpoints.h"
#include "console/tui.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, planner, "", "planner address (default: see --endpoints)");
ABSL_FLAG(std::string, router, "", "router address (default: see --endpoints)");
ABSL_FLAG(std::string, endpoints, ".semmoe/run/semantic/endpoints.json",
          "a local cluster's endpoints file to take the defaults from, if it exists");
ABSL_FLAG(std::string, model, "", "the model's name in the planner");
ABSL_FLAG(bool, json, false, "print JSON instead of tables");
ABSL_FLAG(bool, yes, false, "do not ask before activate, rollback, stop and promote");
ABSL_FLAG(bool, force, false,
          "activate, experiments promote: although the planner predicts the version slower than "
          "vanilla, or measured the arm's MoE layer slower than the vanilla arm's");
ABSL_FLAG(std::vector<std::string>, traces, {}, "placements eval: traces (paths on the planner)");
ABSL_FLAG(int64_t, a, 0, "experiments create: arm A's version");
ABSL_FLAG(int64_t, b, 0, "experiments create: arm B's version");
ABSL_FLAG(int, share, 0, "experiments create: arm B's percent of the traffic");
ABSL_FLAG(std::string, name, "", "experiments create: a name");
ABSL_FLAG(std::string, arm, "", "experiments promote: the arm (default: the most goodput)");
ABSL_FLAG(int, deadline_ms, 30000, "RPC deadline");
ABSL_FLAG(bool, wait, true,
          "activate, rollback, promote: wait until the engine groups serve the version "
          "(--no-wait: return once the planner has it)");
ABSL_FLAG(int, rollout_timeout_s, 600, "activate, rollback, promote: how long to wait");

namespace {

constexpr char kUsage[] =
    "console placements list|show V|diff V1 V2|activate V|rollback|eval V... --traces T|\n"
    "        drift V --traces LIVE\n"
    "        console experiments create --a V1 --b V2 --share P|list|status ID|stop ID|promote ID\n"
    "        console cluster status\n"
    "        console autopilot status --model M\n"
    "        console tui --model M\n"
    "        [--planner HOST:PORT] [--router HOST:PORT] [--model M] [--json] [--yes] [--force]\n"
    "        [--no-wait] [--rollout_timeout_s S]   (activate, rollback, promote)";

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  // `--no-wait` as the operators type it; Abseil spells a false bool --nowait.
  std::vector<std::string> words(argv, argv + argc);
  std::vector<char*> args_in;
  for (std::string& w : words) {
    if (w == "--no-wait") w = "--nowait";
    args_in.push_back(w.data());
  }
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(args_in.size()), args_in.data());
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (absl::Status security = semmoe::InstallSecurityFromFlags(); !security.ok()) {
    std::cerr << "console: " << security.message() << "\n";
    return 2;
  }
  semmoe::console::ConsoleOptions o;
  o.planner = absl::GetFlag(FLAGS_planner);
  o.router = absl::GetFlag(FLAGS_router);
  // Defaults: the local cluster's endpoints, when it wrote them (a broken file is an error, not
  // a silent fallback to the defaults).
  const std::string endpoints_path = semmoe::UserPath(absl::GetFlag(FLAGS_endpoints));
  semmoe::console::Endpoints e;
  if (absl::StatusOr<std::string> text = semmoe::ReadFile(endpoints_path); text.ok()) {
    absl::StatusOr<semmoe::console::Endpoints> parsed =
        semmoe::console::ParseEndpoints(*text, endpoints_path);
    if (!parsed.ok()) {
      std::cerr << "console: " << parsed.status().message()
                << " (--endpoints; or give --planner and --router)\n";
      return 2;
    }
    e = *std::move(parsed);
  }
  if (o.planner.empty()) o.planner = e.planner.empty() ? "127.0.0.1:7070" : e.planner;
  if (o.router.empty()) o.router = e.router.empty() ? "127.0.0.1:8000" : e.router;
  o.model = absl::GetFlag(FLAGS_model);
  o.json = absl::GetFlag(FLAGS_json);
  o.yes = absl::GetFlag(FLAGS_yes);
  o.force = absl::GetFlag(FLAGS_force);
  o.interactive = isatty(STDIN_FILENO) != 0;
  o.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  for (const std::string& t : absl::GetFlag(FLAGS_traces)) o.traces.push_back(semmoe::UserPath(t));
  o.a = absl::GetFlag(FLAGS_a);
  o.b = absl::GetFlag(FLAGS_b);
  o.share = absl::GetFlag(FLAGS_share);
  o.name = absl::GetFlag(FLAGS_name);
  o.arm = absl::GetFlag(FLAGS_arm);
  o.wait = absl::GetFlag(FLAGS_wait);
  o.rollout_timeout = absl::Seconds(absl::GetFlag(FLAGS_rollout_timeout_s));
  absl::Status status;
  if (args.size() == 1 && args[0] == "tui") {
    status = semmoe::console::RunTui(o);
  } else {
    semmoe::console::Console console(o, std::cout, std::cin);
    status = console.Run(args);
  }
  if (status.ok()) return 0;
  std::cerr << "console: " << status.message() << "\n";
  if (absl::IsInvalidArgument(status) &&
      (args.empty() || status.message().find("unknown command") != std::string::npos ||
       status.message().find(" takes ") != std::string::npos ||
       status.message().find(" needs ") != std::string::npos ||
       status.message().find("needs --model") != std::string::npos)) {
    std::cerr << "usage: " << kUsage << "\n";
    return 2;
  }
  return 1;
}
