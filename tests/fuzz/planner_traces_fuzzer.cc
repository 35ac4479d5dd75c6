// `planner build` and `planner eval` on traces that need not agree: the input is two routing
// traces joined by "\n@@\n" (the seeds: two models of different layers, experts and top-k). A
// version is built from the first; then each trace is evaluated with the other's affinity
// (--profile), with the version's stored tables, and both are built together. Inputs whose first
// trace claims more than 64 experts per layer only go through the reader: the solvers' cost is
// cubic in the experts (planner/solver/scale.h caps them at 512, tested by dp_solver_test), and
// a fuzzing run must stay a fraction of a second per input.
#include <sstream>
#include <string>
#include <vector>

#include "planner/cli/commands.h"
#include "planner/trace/trace_set.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/split_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cli = semmoe::planner::cli;
  const std::vector<std::string> parts =
      semmoe::fuzz::SplitParts(semmoe::fuzz::Text(data, size), 2);
  const std::string dir = semmoe::fuzz::Dir("planner-traces");
  const std::string a = dir + "/a.trace", b = dir + "/b.trace", db = dir + "/p.db";
  semmoe::fuzz::Write(a, parts[0]);
  semmoe::fuzz::Write(b, parts[1]);
  if (auto first = semmoe::planner::trace::LoadTraceSet(a);
      first.ok() && first->header.num_experts > 64) {
    return 0;
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db + suffix).c_str());
  std::ostringstream out;
  for (const char* mode : {"dp", "tp"}) {
    auto version = cli::Build({.db = db, .model = "m", .traces = {a}, .devices = 2, .mode = mode},
                              out);
    if (!version.ok()) continue;
    for (const auto& [traces, profile] :
         std::vector<std::pair<std::string, std::string>>{{b, a}, {a, b}, {b, ""}}) {
      cli::EvalOptions eval{.db = db, .versions = {*version}, .traces = {traces}};
      if (!profile.empty()) eval.profile = {profile};
      (void)cli::EvalRows(eval);
    }
  }
  (void)cli::Build({.db = db, .model = "m", .traces = {a, b}, .devices = 2}, out);
  return 0;
}
