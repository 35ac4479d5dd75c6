#include "planner/solver/migration.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/solver/assignment.h"

namespace semmoe::planner {
namespace {

absl::Status SameShape(const Placement& a, const Placement& b) {
  if (a.moe_layers() != b.moe_layers() || a.num_experts() != b.num_experts() ||
      a.num_devices() != b.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the placements differ in shape: ", a.num_layers(), " MoE layers, ", a.num_experts(),
        " experts, ", a.num_devices(), " devices against ", b.num_layers(), ", ", b.num_experts(),
        ", ", b.num_devices()));
  }
  return absl::OkStatus();
}

std::vector<std::vector<int32_t>> HomesOf(const Placement& p) {
  std::vector<std::vector<int32_t>> device_of(p.num_layers(),
                                              std::vector<int32_t>(p.num_experts()));
  for (int l = 0; l < p.num_layers(); ++l) {
    for (int e = 0; e < p.num_experts(); ++e) device_of[l][e] = p.Device(l, e);
  }
  return device_of;
}

// One cycle of moves in a layer: experts[i] goes from devices[i] to devices[i + 1] (cyclically).
struct Cycle {
  int layer = 0;
  std::vector<int> experts;
  int64_t gain = 0;  // Local activations gained on the schedule.
};

// Splits one layer's moves into cycles. Every device sends as many experts as it receives (both
// placements give it N/G), so a walk from any move can always continue until it returns to its
// start; it closes as soon as a move back to the start is available, to keep cycles short.
std::vector<Cycle> CyclesOfLayer(int layer, const std::vector<int32_t>& from,
                                 const std::vector<int32_t>& to, int devices) {
  std::vector<std::vector<int>> out(devices);  // Device → experts leaving it, unused.
  for (int e = 0; e < static_cast<int>(from.size()); ++e) {
    if (from[e] != to[e]) out[from[e]].push_back(e);
  }
  std::vector<Cycle> cycles;
  for (int start = 0; start < devices; ++start) {
    while (!out[start].empty()) {
      Cycle c{.layer = layer};
      int at = start;
      do {
        std::vector<int>& moves = out[at];
        auto it = std::find_if(moves.begin(), moves.end(), [&](int e) { return to[e] == start; });
        if (it == moves.end()) it = moves.begin();
        const int e = *it;
        moves.erase(it);
        c.experts.push_back(e);
        at = to[e];
      } while (at != start);
      cycles.push_back(std::move(c));
    }
  }
  return cycles;
}

}  // namespace

int MovedExperts(const Placement& from, const Placement& to) {
  int moved = 0;
  for (int l = 0; l < std::min(from.num_layers(), to.num_layers()); ++l) {
    for (int e = 0; e < std::min(from.num_experts(), to.num_experts()); ++e) {
      moved += from.Device(l, e) != to.Device(l, e);
    }
  }
  return moved;
}

absl::StatusOr<Placement> RelabelDevices(const Placement& candidate,
                                         const std::vector<int>& relabel) {
  const int g = candidate.num_devices();
  std::vector<bool> seen(g, false);
  if (static_cast<int>(relabel.size()) != g) {
    return absl::InvalidArgumentError(
        absl::StrCat("a relabelling of ", relabel.size(), " devices for a placement of ", g));
  }
  for (int d : relabel) {
    if (d < 0 || d >= g || seen[d]) {
      return absl::InvalidArgumentError("the relabelling is not a permutation of the devices");
    }
    seen[d] = true;
  }
  std::vector<std::vector<int32_t>> device_of = HomesOf(candidate);
  for (auto& layer : device_of) {
    for (int32_t& d : layer) d = relabel[d];
  }
  ASSIGN_OR_RETURN(Placement homes,
                   Placement::FromAssignment(candidate.moe_layers(), candidate.num_experts(), g,
                                             std::move(device_of)));
  if (candidate.replicas_per_device() == 0) return homes;
  std::vector<std::vector<std::vector<int32_t>>> replicas(
      candidate.num_layers(), std::vector<std::vector<int32_t>>(g));
  for (int l = 0; l < candidate.num_layers(); ++l) {
    for (int d = 0; d < g; ++d) replicas[l][relabel[d]] = candidate.ReplicasOn(l, d);
  }
  return homes.WithReplicas(std::move(replicas));
}

absl::StatusOr<MigrationPlan> MigrateFrom(const Placement& served, const Placement& candidate,
                                      const trace::TraceSet& trace,
                                      const std::vector<std::vector<int>>& token_device,
                                      const MigrationOptions& options) {
  RETURN_IF_ERROR(SameShape(served, candidate));
  const int g = served.num_devices(), n = served.num_experts(), layers = served.num_layers();
  if (trace.num_layers() != layers || static_cast<int>(token_device.size()) != layers) {
    return absl::InvalidArgumentError("the trace or schedule does not have the placement's layers");
  }
  for (const auto& per_token : token_device) {
    if (static_cast<int64_t>(per_token.size()) != trace.num_tokens()) {
      return absl::InvalidArgumentError("the schedule does not cover the trace's tokens");
    }
  }
  MigrationPlan m{.placement = served};
  m.moved_as_built = MovedExperts(served, candidate);
  // Relabelling: weight[c][s] = experts on candidate device c that the served placement has on s.
  std::vector<double> weight(static_cast<size_t>(g) * g, 0.0);
  for (int l = 0; l < layers; ++l) {
    for (int e = 0; e < n; ++e) weight[candidate.Device(l, e) * g + served.Device(l, e)] += 1;
  }
  m.relabel = MaxWeightAssignment(weight, g);
  ASSIGN_OR_RETURN(const Placement relabelled, RelabelDevices(candidate, m.relabel));
  m.moved_relabelled = MovedExperts(served, relabelled);

  // uses[l][d · N + e]: activations of expert e by tokens the schedule puts on device d.
  std::vector<std::vector<int64_t>> uses(layers, std::vector<int64_t>(static_cast<size_t>(g) * n));
  const int k = trace.top_k();
  for (int l = 0; l < layers; ++l) {
    for (int64_t t = 0; t < trace.num_tokens(); ++t) {
      const int d = token_device[l][t];
      if (d < 0 || d >= g) {
        return absl::InvalidArgumentError(absl::StrCat("the schedule puts token ", t, " on device ",
                                                       d, " of ", g));
      }
      for (int j = 0; j < k; ++j) ++uses[l][m.relabel[d] * n + trace.Experts(t, l)[j]];
    }
  }
  auto local = [&](const std::vector<std::vector<int32_t>>& device_of) {
    int64_t sum = 0;
    for (int l = 0; l < layers; ++l) {
      for (int e = 0; e < n; ++e) sum += uses[l][device_of[l][e] * n + e];
    }
    return sum;
  };
  std::vector<std::vector<int32_t>> result = HomesOf(served);
  const std::vector<std::vector<int32_t>> wanted = HomesOf(relabelled);
  const double activations = std::max<double>(1.0, static_cast<double>(trace.num_tokens()) * k *
                                                       layers);
  int64_t current = local(result);
  const int64_t target = local(wanted);
  m.lar_served = current / activations;
  m.lar_candidate = target / activations;

  std::vector<Cycle> cycles;
  for (int l = 0; l < layers; ++l) {
    for (Cycle& c : CyclesOfLayer(l, result[l], wanted[l], g)) {
      for (int e : c.experts) {
        c.gain += uses[l][wanted[l][e] * n + e] - uses[l][result[l][e] * n + e];
      }
      cycles.push_back(std::move(c));
    }
  }
  m.cycles_total = static_cast<int>(cycles.size());
  // Best gain per expert moved first; ties to shorter cycles, then layer order (deterministic).
  std::stable_sort(cycles.begin(), cycles.end(), [](const Cycle& a, const Cycle& b) {
    const double ga = static_cast<double>(a.gain) / a.experts.size();
    const double gb = static_cast<double>(b.gain) / b.experts.size();
    return std::make_tuple(-ga, a.experts.size(), a.layer) <
           std::make_tuple(-gb, b.experts.size(), b.layer);
  });
  const bool limited = options.max_moved >= 0 || options.max_lar_loss >= 0;
  for (const Cycle& c : cycles) {
    const int size = static_cast<int>(c.experts.size());
    if (limited && c.gain <= 0) break;  // Sorted: nothing after it gains either.
    if (options.max_lar_loss >= 0 && (target - current) <= options.max_lar_loss * activations) {
      break;
    }
    if (options.max_moved >= 0 && m.moved + size > options.max_moved) continue;
    for (int e : c.experts) result[c.layer][e] = wanted[c.layer][e];
    m.moved += size;
    current += c.gain;
    ++m.cycles_applied;
  }
  m.lar_result = current / activations;
  ASSIGN_OR_RETURN(Placement built,
                   Placement::FromAssignment(served.moe_layers(), n, g, std::move(result)));
  m.placement = std::move(built);
  return m;
}

absl::StatusOr<Placement> LimitReplicaChanges(const Placement& served, const Placement& wanted,
                                              int* budget, int* shipped) {
  RETURN_IF_ERROR(SameShape(served, wanted));
  const int r = wanted.replicas_per_device();
  if (r == 0) return wanted;
  const int g = served.num_devices(), n = served.num_experts();
  std::vector<std::vector<std::vector<int32_t>>> replicas(wanted.num_layers(),
                                                          std::vector<std::vector<int32_t>>(g));
  for (int l = 0; l < wanted.num_layers(); ++l) {
    for (int d = 0; d < g; ++d) {
      std::vector<int32_t>& chosen = replicas[l][d];
      auto usable = [&](int e) {
        return wanted.Device(l, e) != d &&
               std::find(chosen.begin(), chosen.end(), e) == chosen.end();
      };
      auto take = [&](int e) {
        if (static_cast<int>(chosen.size()) < r && usable(e)) chosen.push_back(e);
      };
      const std::vector<int32_t>& want = wanted.ReplicasOn(l, d);
      for (int e : want) {
        if (served.Holds(l, d, e)) take(e);
      }
      for (int e : want) {
        if (served.Holds(l, d, e) || *budget == 0 || !usable(e)) continue;
        if (static_cast<int>(chosen.size()) == r) break;
        take(e);
        ++*shipped;
        if (*budget > 0) --*budget;
      }
      for (int e : served.ReplicasOn(l, d)) take(e);
      for (int e = 0; e < n; ++e) {
        if (served.Device(l, e) == d) take(e);  // Moved away: its weights are still there.
      }
      // Only when the served placement had fewer replicas: new slots get the candidate's choice.
      for (int e : want) {
        if (static_cast<int>(chosen.size()) == r) break;
        if (!usable(e)) continue;
        take(e);
        ++*shipped;
      }
      std::sort(chosen.begin(), chosen.end());
    }
  }
  std::vector<std::vector<int32_t>> device_of(wanted.num_layers(), std::vector<int32_t>(n));
  for (int l = 0; l < wanted.num_layers(); ++l) {
    for (int e = 0; e < n; ++e) device_of[l][e] = wanted.Device(l, e);
  }
  ASSIGN_OR_RETURN(Placement homes,
                   Placement::FromAssignment(wanted.moe_layers(), n, g, std::move(device_of)));
  return homes.WithReplicas(std::move(replicas));
}

}  // namespace semmoe::planner
