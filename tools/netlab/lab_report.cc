// lab_report: what the engine ranks measured during a run, for the network lab's benchmark
// (tools/netlab/bench.sh).
//
//   lab_report snapshot --engines HOST:PORT,... --out F.json
//       every rank's EngineStats now (their counters since start)
//   lab_report summary --before F1.json --after F2.json [--loadgen SWEEP.json] [--setting NAME]
//       one JSON object for the run between the snapshots: ranks, LAR (and per MoE layer),
//       all-to-all bytes per token, the MoE-layer time per call of the slowest rank (the wait
//       for the slowest peer, dispatch, experts, combine) and its all-to-all share without the
//       wait, the busiest rank's expert time against the mean; per model layer and forward
//       pass the ranks' mean attention, SRS and SAG time (Attention-TP); per collective kind
//       the ranks' mean calls, ms and bytes sent per forward pass; with a loadgen sweep,
//       its highest rate in SLO and, at that rate, goodput, p99 TTFT and p50 TPOT.
//
// Exit status: 0 on success, 1 when a rank or file could not be read, 2 for bad usage.
#include <algorithm>
#include <array>
#include <chrono>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/security.h"
#include "engine/proto/engine.grpc.pb.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::vector<std::string>, engines, {}, "snapshot: the ranks, rank order");
ABSL_FLAG(std::string, out, "", "snapshot: the file to write");
ABSL_FLAG(std::string, before, "", "summary: the snapshot before the run");
ABSL_FLAG(std::string, after, "", "summary: the snapshot after the run");
ABSL_FLAG(std::string, loadgen, "", "summary: the run's loadgen --sweep --out JSON");
ABSL_FLAG(std::string, setting, "", "summary: the setting's name (copied into the output)");

namespace semmoe::tools {
namespace {

using engine::rpc::EngineStats;

int Fail(const std::string& message) {
  std::cerr << "lab_report: " << message << "\n";
  return 1;
}

int Snapshot() {
  nlohmann::json ranks = nlohmann::json::array();
  for (const std::string& address : absl::GetFlag(FLAGS_engines)) {
    auto stub = engine::rpc::EngineService::NewStub(semmoe::NewChannel(address));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    EngineStats stats;
    const grpc::Status s = stub->GetStats(&context, engine::rpc::GetStatsRequest(), &stats);
    if (!s.ok()) return Fail(absl::StrCat(address, ": ", s.error_message()));
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(stats, &json);
    ranks.push_back(nlohmann::json::parse(json));
  }
  const absl::Status written = WriteFile(absl::GetFlag(FLAGS_out), ranks.dump() + "\n");
  return written.ok() ? 0 : Fail(std::string(written.message()));
}

absl::StatusOr<std::vector<EngineStats>> ReadSnapshot(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  const nlohmann::json j = ParseJsonOrDiscarded(*text);
  if (!j.is_array()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a snapshot"));
  std::vector<EngineStats> out;
  for (const nlohmann::json& r : j) {
    EngineStats s;
    if (!google::protobuf::util::JsonStringToMessage(r.dump(), &s).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a rank's stats do not parse"));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Per collective kind, the ranks' mean per forward pass: calls, ms inside them (waiting for peers
// included) and bytes sent; kinds no rank called are left out.
nlohmann::json CollectivesPerPass(const std::vector<EngineStats>& before,
                                  const std::vector<EngineStats>& after) {
  std::map<std::string, std::array<double, 3>> sum;  // name → (calls, ms, bytes) over ranks
  for (size_t r = 0; r < after.size(); ++r) {
    const double passes = std::max<int64_t>(
        1, after[r].forward_passes() - before[r].forward_passes());
    std::map<std::string, const engine::rpc::CollectiveStats*> earlier;
    for (const auto& c : before[r].collectives()) earlier[c.name()] = &c;
    for (const auto& c : after[r].collectives()) {
      const auto it = earlier.find(c.name());
      const engine::rpc::CollectiveStats zero;
      const engine::rpc::CollectiveStats& b = it == earlier.end() ? zero : *it->second;
      std::array<double, 3>& s = sum[c.name()];
      s[0] += (c.calls() - b.calls()) / passes;
      s[1] += (c.seconds() - b.seconds()) * 1e3 / passes;
      s[2] += (c.bytes_sent() - b.bytes_sent()) / passes;
    }
  }
  nlohmann::json out = nlohmann::json::object();
  const double ranks = std::max<size_t>(1, after.size());
  for (const auto& [name, s] : sum) {
    if (s[0] <= 0) continue;
    out[name] = {{"calls_per_pass", s[0] / ranks},
                 {"ms_per_pass", s[1] / ranks},
                 {"ms_per_call", s[1] / s[0]},
                 {"bytes_sent_per_pass", s[2] / ranks}};
  }
  return out;
}

int Summary() {
  absl::StatusOr<std::vector<EngineStats>> before = ReadSnapshot(absl::GetFlag(FLAGS_before));
  absl::StatusOr<std::vector<EngineStats>> after = ReadSnapshot(absl::GetFlag(FLAGS_after));
  if (!before.ok()) return Fail(std::string(before.status().message()));
  if (!after.ok()) return Fail(std::string(after.status().message()));
  if (before->size() != after->size() || after->empty()) {
    return Fail("the snapshots are of different groups");
  }
  int64_t local = 0, remote = 0, bytes = 0, tokens = 0, cross_bytes = 0;
  std::map<int, std::pair<int64_t, int64_t>> per_layer;  // layer → (local, remote)
  struct RankTime {
    // ms per MoE-layer call; `wait` is the part of dispatch spent in the row-count exchange
    // (waiting for the slowest peer), `dispatch` the rest (the payload).
    double wait = 0, dispatch = 0, experts = 0, combine = 0;
    double bytes = 0;        // Sent to peers per MoE-layer call (dispatch + combine).
    double cross_bytes = 0;  // ... of them to ranks on other nodes.
    double total() const { return wait + dispatch + experts + combine; }
  };
  std::vector<RankTime> times;
  // ms per model layer and forward pass, summed over ranks (divided by their count below): the
  // attention, and under Attention-TP the shuffled reduce-scatter and all-gather around the FFN.
  double attention_ms = 0, srs_ms = 0, sag_ms = 0;
  for (size_t r = 0; r < after->size(); ++r) {
    const EngineStats& a = (*after)[r];
    EngineStats b = (*before)[r];
    // A rank that had run no request of its own by the first snapshot has no per-layer figures
    // yet (a placement's router may send the warm-up elsewhere): they were all zero.
    if (b.layers_size() == 0) {
      for (const auto& x : a.layers()) b.add_layers()->set_layer(x.layer());
    }
    if (b.layer_times_size() == 0) {
      for (const auto& x : a.layer_times()) b.add_layer_times()->set_layer(x.layer());
    }
    if (a.layers_size() != b.layers_size()) return Fail("the snapshots' layers differ");
    tokens += (a.prefill_tokens() - b.prefill_tokens()) + (a.decode_tokens() - b.decode_tokens());
    const int64_t passes = a.forward_passes() - b.forward_passes();
    if (a.layer_times_size() != b.layer_times_size()) return Fail("the snapshots' layers differ");
    const double layer_passes =
        std::max<double>(1, static_cast<double>(passes) * a.layer_times_size());
    for (int l = 0; l < a.layer_times_size(); ++l) {
      const auto& x = a.layer_times(l);
      const auto& y = b.layer_times(l);
      attention_ms += (x.attention_seconds() - y.attention_seconds()) * 1e3 / layer_passes;
      srs_ms += (x.srs_seconds() - y.srs_seconds()) * 1e3 / layer_passes;
      sag_ms += (x.sag_seconds() - y.sag_seconds()) * 1e3 / layer_passes;
    }
    RankTime t;
    for (int l = 0; l < a.layers_size(); ++l) {
      const auto& x = a.layers(l);
      const auto& y = b.layers(l);
      local += x.local_activations() - y.local_activations();
      remote += x.remote_activations() - y.remote_activations();
      per_layer[x.layer()].first += x.local_activations() - y.local_activations();
      per_layer[x.layer()].second += x.remote_activations() - y.remote_activations();
      const int64_t sent = (x.dispatch_bytes_sent() - y.dispatch_bytes_sent()) +
                           (x.combine_bytes_sent() - y.combine_bytes_sent());
      bytes += sent;
      cross_bytes += x.cross_node_bytes_sent() - y.cross_node_bytes_sent();
      t.bytes += static_cast<double>(sent);
      t.cross_bytes += static_cast<double>(x.cross_node_bytes_sent() - y.cross_node_bytes_sent());
      const double wait = x.dispatch_wait_seconds() - y.dispatch_wait_seconds();
      t.wait += wait;
      t.dispatch += x.dispatch_seconds() - y.dispatch_seconds() - wait;
      t.experts += x.expert_seconds() - y.expert_seconds();
      t.combine += x.combine_seconds() - y.combine_seconds();
    }
    const double calls = std::max<double>(1, static_cast<double>(passes) * a.layers_size());
    t.bytes /= calls;
    t.cross_bytes /= calls;
    t.wait *= 1e3 / calls;
    t.dispatch *= 1e3 / calls;
    t.experts *= 1e3 / calls;
    t.combine *= 1e3 / calls;
    times.push_back(t);
  }
  const RankTime slowest =
      *std::max_element(times.begin(), times.end(),
                        [](const RankTime& x, const RankTime& y) { return x.total() < y.total(); });
  double experts_max = 0, experts_sum = 0, bytes_max = 0, cross_max = 0;
  for (const RankTime& t : times) bytes_max = std::max(bytes_max, t.bytes);
  for (const RankTime& t : times) cross_max = std::max(cross_max, t.cross_bytes);
  for (const RankTime& t : times) {
    experts_max = std::max(experts_max, t.experts);
    experts_sum += t.experts;
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& [layer, c] : per_layer) {
    const int64_t all = c.first + c.second;
    layers.push_back({{"layer", layer}, {"lar", all == 0 ? 0.0 : double(c.first) / all}});
  }
  nlohmann::json out = {
      {"setting", absl::GetFlag(FLAGS_setting)},
      {"ranks", after->size()},
      {"lar", local + remote == 0 ? 0.0 : double(local) / (local + remote)},
      {"lar_per_layer", layers},
      {"a2a_bytes_per_token", tokens == 0 ? 0.0 : double(bytes) / tokens},
      // Of those, the bytes that crossed hosts (the engines' --topology; without one every peer
      // counts as on the rank's own node: 0), and the most a rank sent across per call.
      {"cross_node_bytes_per_token", tokens == 0 ? 0.0 : double(cross_bytes) / tokens},
      {"cross_node_bytes_per_call_max", cross_max},
      {"topology", after->empty() ? "" : (*after)[0].topology()},
      {"node_dedup", !after->empty() && (*after)[0].node_dedup()},
      {"moe_layer_ms", slowest.total()},
      {"dispatch_ms", slowest.dispatch},
      {"experts_ms", slowest.experts},
      {"combine_ms", slowest.combine},
      {"wait_ms", slowest.wait},
      // Per model layer and forward pass, the mean over ranks: the rest of a layer's time.
      {"attention_ms", attention_ms / after->size()},
      {"srs_ms", srs_ms / after->size()},
      {"sag_ms", sag_ms / after->size()},
      // The all-to-all's share of the MoE layer, leaving out the wait for the slowest peer
      // (on this 2-core machine mostly CPU sharing, not the network). bench.sh adds the link's
      // modelled share ("a2a_share": peer_bytes_per_call_max over the rate, against that plus
      // the experts' time).
      {"a2a_share_raw", slowest.total() - slowest.wait <= 0 ? 0.0
                                                            : (slowest.dispatch + slowest.combine) /
                                                                  (slowest.total() - slowest.wait)},
      // The most any rank sent to its peers per MoE-layer call (what its link carries, less
      // what goes to ranks on its own host).
      {"peer_bytes_per_call_max", bytes_max},
      {"experts_busiest_over_mean",
       experts_sum == 0 ? 0.0 : experts_max / (experts_sum / times.size())}};
  out["collectives"] = CollectivesPerPass(*before, *after);
  if (!absl::GetFlag(FLAGS_loadgen).empty()) {
    absl::StatusOr<std::string> text = ReadFile(absl::GetFlag(FLAGS_loadgen));
    if (!text.ok()) return Fail(std::string(text.status().message()));
    const nlohmann::json sweep = ParseJsonOrDiscarded(*text);
    if (!sweep.is_object() || !sweep.contains("points") || sweep["points"].empty()) {
      return Fail(absl::StrCat(absl::GetFlag(FLAGS_loadgen), ": not a loadgen sweep"));
    }
    const double best = sweep.value("best_rate", 0.0);
    nlohmann::json at = sweep["points"][0];
    for (const nlohmann::json& p : sweep["points"]) {
      if (p.value("rate", 0.0) == best) at = p;
    }
    out["max_rate_in_slo"] = best;
    out["goodput_rps"] = at.value("goodput_rps", 0.0);
    out["ttft_p99_ms"] = at["ttft_ms"].value("p99", 0.0);
    out["tpot_p50_ms"] = at["tpot_ms"].value("p50", 0.0);
    out["sweep"] = sweep["points"];
  }
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace
}  // namespace semmoe::tools

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const std::string command = args.size() == 2 ? args[1] : "";
  if (command == "snapshot" && !absl::GetFlag(FLAGS_out).empty()) {
    return semmoe::tools::Snapshot();
  }
  if (command == "summary" && !absl::GetFlag(FLAGS_before).empty() &&
      !absl::GetFlag(FLAGS_after).empty()) {
    return semmoe::tools::Summary();
  }
  std::cerr << "usage: lab_report snapshot --engines A,B --out F | summary --before F1 --after F2 "
               "[--loadgen SWEEP.json] [--setting NAME]\n";
  return 2;
}
