#include "planner/sim/step_predictor.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace semmoe::planner::sim {

struct StepPredictor::Partial {
  explicit Partial(const planner::Topology& topo)
      : dispatch(topo), combine(topo), local_dispatch(topo), local_combine(topo) {}
  // Flat: dispatch / combine. Two stages: dispatch / combine are stage 1 (to and from the
  // gateways), local_* stage 2 (inside the nodes).
  LinkLoads dispatch, combine, local_dispatch, local_combine;
  std::vector<double> step_tokens, kv_read, attended, activations, own_tokens;
  // [s × G + d]: whether s sends d anything in stage 1 (flat: the exchange) and stage 2 (each
  // pair a peer once).
  std::vector<char> sends, local_sends;
};

StepPredictor::StepPredictor(ModelShape shape, ClusterProfile profile, planner::Topology topology,
                             PredictorOptions options)
    : shape_(std::move(shape)),
      profile_(std::move(profile)),
      topo_(std::move(topology)),
      options_(options),
      cost_(shape_, profile_, topo_),
      even_(topo_.num_ranks(), 1.0 / topo_.num_ranks()) {
  options_.node_dedup =
      options_.node_dedup && topo_.num_nodes() > 1 && topo_.num_ranks() > topo_.num_nodes();
  const int g = topo_.num_ranks();
  if (g > 1) {  // Per peer its row count (two stages: every rank's G + N counts).
    const double per_peer = options_.node_dedup ? 8.0 * (g + topo_.num_nodes()) : 8.0;
    std::vector<double> bytes(static_cast<size_t>(g) * g, per_peer);
    for (int r = 0; r < g; ++r) bytes[static_cast<size_t>(r) * g + r] = 0;
    counts_time_ = cost_.Collective(bytes);
  }
}

void StepPredictor::AddTokens(Partial& p, int s, double tokens, const double* share) const {
  if (tokens <= 0) return;
  const int g = topo_.num_ranks(), k = shape_.top_k;
  const double dispatch_row = cost_.DispatchRowBytes(), combine_row = cost_.CombineRowBytes();
  p.own_tokens[s] += tokens;
  for (int d = 0; d < g; ++d) p.activations[d] += tokens * k * share[d];
  // The expected rows to a rank of share q: tokens touching it at least once.
  auto rows_to = [&](double q) { return tokens * (1 - std::pow(1 - std::min(1.0, q), k)); };
  auto send = [&](LinkLoads& out, LinkLoads& back, std::vector<char>& sends, int from, int to,
                  double rows, double out_row) {
    if (from == to || rows <= 0) return;
    out.Add(topo_, from, to, rows * out_row);
    back.Add(topo_, to, from, rows * combine_row);
    if (char& pair = sends[static_cast<size_t>(from) * g + to]; !pair) {  // A new peer.
      pair = 1;
      ++out.peers[from], ++back.peers[to];
    }
  };
  if (!options_.node_dedup) {
    for (int d = 0; d < g; ++d)
      send(p.dispatch, p.combine, p.sends, s, d, rows_to(share[d]), dispatch_row);
    return;
  }
  const int home = topo_.NodeOf(s);
  for (int n = 0; n < topo_.num_nodes(); ++n) {
    if (n == home) {  // Stage 2 from s itself.
      for (int d : topo_.RanksOn(n)) {
        send(p.local_dispatch, p.local_combine, p.local_sends, s, d, rows_to(share[d]),
             dispatch_row);
      }
      continue;
    }
    double q = 0;
    for (int d : topo_.RanksOn(n)) q += share[d];
    const int gateway = topo_.Gateway(s, n);
    send(p.dispatch, p.combine, p.sends, s, gateway, rows_to(q), cost_.CrossRowBytes());
    for (int d : topo_.RanksOn(n)) {  // The gateway's fan-out.
      send(p.local_dispatch, p.local_combine, p.local_sends, gateway, d, rows_to(share[d]),
           dispatch_row);
    }
  }
}

StepPredictor::Partial StepPredictor::Build(const std::vector<RankState>& ranks,
                                            const std::vector<NewRequest>& window,
                                            const std::vector<int>& placed, int skip) const {
  const int g = topo_.num_ranks();
  Partial p(topo_);
  for (auto* v : {&p.step_tokens, &p.kv_read, &p.attended, &p.activations, &p.own_tokens}) {
    v->assign(g, 0);
  }
  p.sends.assign(static_cast<size_t>(g) * g, 0);
  p.local_sends.assign(options_.node_dedup ? static_cast<size_t>(g) * g : 0, 0);
  for (int s = 0; s < g; ++s) {
    const double running =
        static_cast<double>(std::min<int64_t>(ranks[s].sequences, options_.max_running));
    const double context = static_cast<double>(std::max<int64_t>(0, ranks[s].context_tokens));
    p.step_tokens[s] = running;
    p.kv_read[s] = context;
    p.attended[s] = context;  // Each decode attends its own context once.
    AddTokens(p, s, running, even_.data());
    // Queued prompts: their KV is in the context already.
    AddPrefill(p, s, ranks[s].prefill_tokens, even_.data(), /*new_context=*/false);
  }
  for (size_t i = 0; i < window.size(); ++i) {
    const int s = placed[i];
    if (static_cast<int>(i) == skip || s < 0) continue;
    AddPrefill(p, s, window[i].prompt_tokens,
               window[i].share.empty() ? even_.data() : window[i].share.data(),
               /*new_context=*/true);
  }
  return p;
}

void StepPredictor::AddPrefill(Partial& p, int s, int64_t prompt_tokens, const double* share,
                               bool new_context) const {
  const double room = std::max(0.0, options_.max_batch_tokens - p.step_tokens[s]);
  const double prefill = std::min(room, static_cast<double>(std::max<int64_t>(0, prompt_tokens)));
  p.step_tokens[s] += prefill;
  if (new_context) p.kv_read[s] += prefill;
  p.attended[s] += prefill * (prefill + 1) / 2;  // Causal: each token its prefix.
  AddTokens(p, s, prefill, share);
}

double StepPredictor::Time(const Partial& p) const {
  const int g = topo_.num_ranks();
  double attention = 0, experts = 0;
  const double per_rank = static_cast<double>(shape_.num_experts) / g;
  for (int d = 0; d < g; ++d) {
    attention = std::max(
        attention, cost_.Attention({.tokens = static_cast<int64_t>(std::ceil(p.step_tokens[d])),
                                    .kv_read = static_cast<int64_t>(p.kv_read[d]),
                                    .attended = static_cast<int64_t>(p.attended[d])}));
    // The distinct experts `activations` rows touch among the rank's, spread evenly.
    const double active = per_rank * (1 - std::exp(-p.activations[d] / per_rank));
    experts = std::max(experts, cost_.ExpertsTime(p.activations[d], active, p.own_tokens[d]));
  }
  double a2a = 0;
  if (g > 1) {
    a2a = counts_time_ + cost_.CollectiveTime(p.dispatch) + cost_.CollectiveTime(p.combine);
    if (options_.node_dedup) {
      a2a += cost_.CollectiveTime(p.local_dispatch) + cost_.CollectiveTime(p.local_combine);
    }
  }
  return attention + a2a + experts;
}

double StepPredictor::LayerTime(const std::vector<RankState>& ranks,
                                const std::vector<NewRequest>& window,
                                const std::vector<int>& placed) const {
  return Time(Build(ranks, window, placed, -1));
}

std::vector<double> StepPredictor::TimesFor(const std::vector<RankState>& ranks,
                                            const std::vector<NewRequest>& window,
                                            const std::vector<int>& placed, int i) const {
  const Partial base = Build(ranks, window, placed, i);
  const int g = topo_.num_ranks();
  std::vector<double> out(g);
  const NewRequest& request = window[i];
  const double* share = request.share.empty() ? even_.data() : request.share.data();
  for (int r = 0; r < g; ++r) {
    Partial p = base;
    AddPrefill(p, r, request.prompt_tokens, share, /*new_context=*/true);
    out[r] = Time(p);
  }
  return out;
}

}  // namespace semmoe::planner::sim
