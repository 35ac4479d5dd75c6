#include "planner/placement/topology.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/json_fields.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace semmoe::planner {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("topology: ", what));
}

constexpr absl::string_view kFormat = "semmoe-topology";

}  // namespace

absl::StatusOr<Topology> Topology::Nodes(int num_nodes, int ranks_per_node) {
  if (num_nodes < 1 || ranks_per_node < 1) {
    return Bad(absl::StrCat(num_nodes, "x", ranks_per_node,
                            ": nodes and ranks per node must be at least 1"));
  }
  if (static_cast<int64_t>(num_nodes) * ranks_per_node > kMaxRanks) {
    return Bad(absl::StrCat(num_nodes, "x", ranks_per_node, " is more than ", kMaxRanks,
                            " ranks"));
  }
  Topology t;
  const int g = num_nodes * ranks_per_node;
  t.node_of_.resize(g);
  t.cost_.assign(static_cast<size_t>(g) * g, 0);
  for (int a = 0; a < g; ++a) {
    t.node_of_[a] = a / ranks_per_node;
    for (int b = 0; b < g; ++b) {
      if (a == b) continue;
      t.cost_[static_cast<size_t>(a) * g + b] =
          a / ranks_per_node == b / ranks_per_node ? kIntraNodeCost : kCrossNodeCost;
    }
  }
  RETURN_IF_ERROR(t.Init());
  return t;
}

absl::StatusOr<Topology> Topology::Parse(absl::string_view spec) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, absl::MaxSplits('x', 1));
  int n = 0, m = 0;
  auto digits = [](absl::string_view s) {
    return !s.empty() && s.size() <= 6 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (parts.size() != 2 || !digits(parts[0]) || !digits(parts[1]) ||
      !absl::SimpleAtoi(parts[0], &n) || !absl::SimpleAtoi(parts[1], &m)) {
    return Bad(absl::StrCat("'", spec, "' is not NxM (nodes x ranks per node, e.g. 2x4)"));
  }
  return Nodes(n, m);
}

absl::StatusOr<Topology> Topology::FromCostMatrix(std::vector<std::vector<double>> cost,
                                                  std::vector<int> node_of) {
  const size_t g = cost.size();
  if (g == 0) return Bad("the cost matrix is empty");
  if (g > static_cast<size_t>(kMaxRanks)) {
    return Bad(absl::StrCat("the cost matrix has ", g, " rows, more than ", kMaxRanks, " ranks"));
  }
  Topology t;
  t.cost_.resize(g * g);
  for (size_t a = 0; a < g; ++a) {
    if (cost[a].size() != g) {
      return Bad(absl::StrCat("the cost matrix is not square: row ", a, " has ", cost[a].size(),
                              " entries, ", g, " rows"));
    }
    for (size_t b = 0; b < g; ++b) {
      const double c = cost[a][b];
      if (!std::isfinite(c) || c < 0) {
        return Bad(absl::StrCat("cost[", a, "][", b, "] = ", c, " is not a finite cost >= 0"));
      }
      if (a == b && c != 0) {
        return Bad(absl::StrCat("cost[", a, "][", a, "] = ", c, ": a rank costs 0 to itself"));
      }
      t.cost_[a * g + b] = c;
    }
  }
  for (size_t a = 0; a < g; ++a) {
    for (size_t b = a + 1; b < g; ++b) {
      if (cost[a][b] != cost[b][a]) {
        return Bad(absl::StrCat("the cost matrix is not symmetric: cost[", a, "][", b,
                                "] = ", cost[a][b], ", cost[", b, "][", a, "] = ", cost[b][a]));
      }
    }
  }
  if (node_of.empty()) {
    // Nodes: the classes of the cheapest off-diagonal cost.
    double cheapest = std::numeric_limits<double>::infinity();
    for (size_t a = 0; a < g; ++a) {
      for (size_t b = 0; b < g; ++b) {
        if (a != b) cheapest = std::min(cheapest, cost[a][b]);
      }
    }
    node_of.assign(g, -1);
    int nodes = 0;
    for (size_t a = 0; a < g; ++a) {
      if (node_of[a] >= 0) continue;
      node_of[a] = nodes;
      for (size_t b = a + 1; b < g; ++b) {
        if (cost[a][b] == cheapest) {
          if (node_of[b] >= 0) {
            return Bad(absl::StrCat("the cheapest links do not group the ranks into nodes (rank ",
                                    b, " pairs with ranks of two groups); give \"node_of\""));
          }
          node_of[b] = nodes;
        }
      }
      ++nodes;
    }
    for (size_t a = 0; a < g; ++a) {  // Classes: every pair inside one is at the cheapest cost.
      for (size_t b = 0; b < g; ++b) {
        if (a != b && node_of[a] == node_of[b] && cost[a][b] != cheapest) {
          return Bad(absl::StrCat("the cheapest links do not group the ranks into nodes (ranks ",
                                  a, " and ", b, "); give \"node_of\""));
        }
      }
    }
  }
  if (node_of.size() != g) {
    return Bad(absl::StrCat("node_of names ", node_of.size(), " ranks, the cost matrix ", g));
  }
  t.node_of_ = std::move(node_of);
  RETURN_IF_ERROR(t.Init());
  return t;
}

absl::Status Topology::Init() {
  const int g = num_ranks();
  num_nodes_ = 0;
  for (int a = 0; a < g; ++a) {
    if (node_of_[a] < 0 || node_of_[a] >= g) {
      return Bad(absl::StrCat("rank ", a, ": node ", node_of_[a], " is out of range"));
    }
    num_nodes_ = std::max(num_nodes_, node_of_[a] + 1);
  }
  ranks_on_.assign(num_nodes_, {});
  local_index_.resize(g);
  for (int a = 0; a < g; ++a) {
    local_index_[a] = static_cast<int>(ranks_on_[node_of_[a]].size());
    ranks_on_[node_of_[a]].push_back(a);
  }
  for (int n = 0; n < num_nodes_; ++n) {
    if (ranks_on_[n].empty()) return Bad(absl::StrCat("node ", n, " has no rank"));
  }
  double intra = 0, cross = std::numeric_limits<double>::infinity();
  max_cost_ = 0;
  for (int a = 0; a < g; ++a) {
    for (int b = 0; b < g; ++b) {
      if (a == b) continue;
      if (SameNode(a, b)) {
        intra = std::max(intra, Cost(a, b));
      } else {
        cross = std::min(cross, Cost(a, b));
      }
      max_cost_ = std::max(max_cost_, Cost(a, b));
    }
  }
  if (intra > cross) {
    return Bad(absl::StrCat("ranks of one node cost up to ", intra, " to each other, more than ",
                            cross, " to another node"));
  }
  // Uniform: N nodes of M consecutive ranks at the default costs.
  const int m = g / num_nodes_;
  uniform_ = num_nodes_ * m == g;
  for (int a = 0; uniform_ && a < g; ++a) {
    uniform_ = node_of_[a] == a / m;
    for (int b = 0; uniform_ && b < g; ++b) {
      const double want = a == b ? 0 : SameNode(a, b) ? kIntraNodeCost : kCrossNodeCost;
      uniform_ = Cost(a, b) == want;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Topology> Topology::FromJson(absl::string_view json) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(json, "topology"));
  if (!j.is_object()) return Bad("expected a JSON object");
  JsonFields fields(j, "topology");
  ASSIGN_OR_RETURN(std::string format, fields.String("format", std::string()));
  if (format != kFormat) return Bad(absl::StrCat("\"format\" must be \"", kFormat, "\""));
  if (fields.Has("nodes") || fields.Has("ranks_per_node")) {
    if (fields.Has("cost")) return Bad("give either \"nodes\" and \"ranks_per_node\" or \"cost\"");
    ASSIGN_OR_RETURN(int64_t n, fields.Int("nodes", std::nullopt, 1, kMaxRanks));
    ASSIGN_OR_RETURN(int64_t m, fields.Int("ranks_per_node", std::nullopt, 1, kMaxRanks));
    return Nodes(static_cast<int>(n), static_cast<int>(m));
  }
  auto cost = j.find("cost");
  if (cost == j.end() || !cost->is_array()) {
    return Bad("needs \"nodes\" and \"ranks_per_node\", or a \"cost\" matrix (a list of rows)");
  }
  if (cost->size() > static_cast<size_t>(kMaxRanks)) {
    return Bad(absl::StrCat("the cost matrix has more than ", kMaxRanks, " rows"));
  }
  std::vector<std::vector<double>> matrix;
  for (size_t a = 0; a < cost->size(); ++a) {
    const nlohmann::json& row = (*cost)[a];
    if (!row.is_array()) return Bad(absl::StrCat("cost row ", a, " is not a list"));
    std::vector<double> values;
    for (const nlohmann::json& c : row) {
      if (!c.is_number()) return Bad(absl::StrCat("cost row ", a, " holds a non-number"));
      values.push_back(c.get<double>());
    }
    matrix.push_back(std::move(values));
  }
  std::vector<int> node_of;
  if (auto nodes = j.find("node_of"); nodes != j.end()) {
    if (!nodes->is_array()) return Bad("\"node_of\" must be a list of node ids");
    for (const nlohmann::json& n : *nodes) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() >= kMaxRanks) {
        return Bad("\"node_of\" must hold node ids (integers >= 0)");
      }
      node_of.push_back(n.get<int>());
    }
    if (node_of.empty()) return Bad("\"node_of\" is empty");
  }
  return FromCostMatrix(std::move(matrix), std::move(node_of));
}

bool Topology::IsNodesSpec(absl::string_view value) {
  return !value.empty() && std::isdigit(static_cast<unsigned char>(value[0])) &&
         value.find('x') != absl::string_view::npos && value.find('/') == absl::string_view::npos;
}

absl::StatusOr<Topology> Topology::FromFlag(absl::string_view value) {
  if (value.empty()) return Bad("empty value (NxM or a topology file)");
  if (IsNodesSpec(value)) return Parse(value);
  absl::StatusOr<std::string> text = ReadFile(UserPath(std::string(value)));
  if (!text.ok()) {
    return Bad(absl::StrCat("'", value, "' is neither NxM nor a readable topology file (",
                            text.status().message(), ")"));
  }
  absl::StatusOr<Topology> t = FromJson(*text);
  if (!t.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(value, ": ", t.status().message()));
  }
  return t;
}

std::string Topology::ToJson() const {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  if (uniform_) {
    j["nodes"] = num_nodes_;
    j["ranks_per_node"] = num_ranks() / num_nodes_;
    return j.dump();
  }
  std::vector<std::vector<double>> rows(num_ranks());
  for (int a = 0; a < num_ranks(); ++a) {
    rows[a].assign(cost_.begin() + static_cast<int64_t>(a) * num_ranks(),
                   cost_.begin() + static_cast<int64_t>(a + 1) * num_ranks());
  }
  j["cost"] = rows;
  j["node_of"] = node_of_;
  return j.dump();
}

std::string Topology::Describe() const {
  if (uniform_) return absl::StrCat(num_nodes_, "x", num_ranks() / num_nodes_);
  return absl::StrCat(num_ranks(), " ranks in ", num_nodes_, " nodes (cost matrix)");
}

bool Topology::operator==(const Topology& other) const {
  return node_of_ == other.node_of_ && cost_ == other.cost_;
}

absl::Status Topology::CheckServes(const Topology& group) const {
  if (*this == group) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("the placement was built for topology ", Describe(), "; this group runs ",
                   group.Describe(), " (a placement minds which ranks share a node: build one ",
                   "for this topology, or a flat one)"));
}

}  // namespace semmoe::planner
