#include "planner/sim/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"

namespace semmoe::planner::sim {
namespace {

struct Request {
  double arrival = 0;
  int trace_request = 0;
  int64_t begin = 0, prompt = 0;  // Trace tokens [begin, begin + prompt).
  int queue = 0;                  // Its rank (DP) or the group's one queue (TP).
  int64_t prefilled = 0;
  int generated = 0;
  double first = -1, last = -1;
};

// A token in a step: its trace index and the queue (rank under DP) it came from.
struct StepToken {
  int64_t t;
  int queue;
};

// A whole prompt prefilled in one step, counted from its precomputed sums.
struct WholePrompt {
  int trace_request;
  int queue;
  int64_t prompt;
};

// A prompt's sums per MoE layer: tokens with an activation served by each rank, activations per
// rank, and the experts touched (a bit each). Valid when the serving rank does not depend on the
// token's rank (no replicas): then each expert runs on its home.
struct PromptSums {
  std::vector<int32_t> touch, act;  // [layers × G]
  std::vector<uint64_t> bits;       // [layers × words]
};

PromptSums SumPrompt(const trace::TraceSet& trace, const Replay& replay, int64_t begin,
                     int64_t count) {
  const int g = replay.devices, layers = replay.layers, k = replay.top_k;
  const int words = (replay.num_experts + 63) / 64;
  PromptSums p;
  p.touch.assign(static_cast<size_t>(layers) * g, 0);
  p.act.assign(static_cast<size_t>(layers) * g, 0);
  p.bits.assign(static_cast<size_t>(layers) * words, 0);
  std::vector<int64_t> stamp(g, -1);
  for (int l = 0; l < layers; ++l) {
    for (int64_t t = begin; t < begin + count; ++t) {
      const uint8_t* served = replay.Served(t, l);
      const uint16_t* experts = trace.Experts(t, l);
      for (int j = 0; j < k; ++j) {
        const int d = served[j];
        ++p.act[l * g + d];
        if (stamp[d] != t) stamp[d] = t, ++p.touch[l * g + d];
        p.bits[l * words + experts[j] / 64] |= uint64_t{1} << (experts[j] % 64);
      }
    }
    std::fill(stamp.begin(), stamp.end(), -1);
  }
  return p;
}

Quantiles Of(std::vector<double> v) {
  Quantiles q;
  if (v.empty()) return q;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  q.mean = sum / v.size();
  auto at = [&](double p) {
    const size_t i = static_cast<size_t>(std::ceil(p * v.size())) - 1;
    return v[std::min(v.size() - 1, i)];
  };
  q.p50 = at(0.5), q.p90 = at(0.9), q.p99 = at(0.99);
  return q;
}

absl::Status Check(const trace::TraceSet& trace, const Replay& replay, const ModelShape& shape,
                   const Workload& w, const ServingOptions& o) {
  if (replay.tokens != trace.num_tokens() || replay.layers != trace.num_layers()) {
    return absl::InvalidArgumentError("the replay was not made from this trace");
  }
  if (shape.num_moe_layers() != trace.num_layers() || shape.top_k != trace.top_k() ||
      shape.num_experts != static_cast<int>(trace.header.num_experts)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model ", shape.name, " (", shape.num_moe_layers(), " MoE layers, ", shape.num_experts,
        " experts, top-", shape.top_k, ") does not match the trace (", trace.num_layers(),
        " MoE layers, ", trace.header.num_experts, " experts, top-", trace.top_k(), ")"));
  }
  if (trace.num_requests() == 0) return absl::InvalidArgumentError("the trace has no requests");
  if (!(w.rate > 0) || !std::isfinite(w.rate)) {
    return absl::InvalidArgumentError(absl::StrCat("--rate ", w.rate, " must be positive"));
  }
  if (w.requests <= 0 || w.output_tokens <= 0 || w.max_prompt_tokens < 0) {
    return absl::InvalidArgumentError("requests and output tokens must be positive");
  }
  if (o.max_batch_tokens <= 0 || o.max_running <= 0) {
    return absl::InvalidArgumentError("max_batch_tokens and max_running must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SimResult> Simulate(const trace::TraceSet& trace, const Replay& replay,
                                   const ModelShape& shape, const StepCost& cost, const Workload& w,
                                   const ServingOptions& o) {
  if (absl::Status s = Check(trace, replay, shape, w, o); !s.ok()) return s;
  const int g = replay.devices, k = replay.top_k, n_exp = replay.num_experts;
  const bool dp = o.mode == AttentionMode::kDp;
  const int queues = dp ? g : 1;

  // Arrivals: the trace's requests in turn.
  std::vector<Request> reqs(w.requests);
  std::mt19937_64 rng(w.seed);
  std::exponential_distribution<double> gap(w.rate);
  double clock = 0;
  for (int64_t i = 0; i < w.requests; ++i) {
    Request& r = reqs[i];
    const int q = static_cast<int>(i % trace.num_requests());
    clock += gap(rng);
    r.arrival = clock;
    r.trace_request = q;
    r.begin = trace.request_begin[q];
    r.prompt = trace.request_begin[q + 1] - r.begin;
    if (w.max_prompt_tokens > 0) r.prompt = std::min(r.prompt, w.max_prompt_tokens);
    r.prompt = std::max<int64_t>(r.prompt, 1);
    r.queue = dp ? replay.Device(0, r.begin) : 0;
  }

  std::vector<std::deque<int64_t>> waiting(queues);
  std::vector<int64_t> in_flight(queues, 0), sequences(queues, 0), unprefilled(queues, 0);
  std::vector<std::vector<int64_t>> running(queues);
  SimResult out;
  int64_t next = 0, done = 0, moe_calls = 0, layer_calls = 0;
  double now = 0;
  std::vector<StepToken> tokens;
  std::vector<WholePrompt> whole;
  std::vector<std::unique_ptr<PromptSums>> sums(trace.num_requests());
  std::vector<AttentionWork> work(queues);
  const int words = (n_exp + 63) / 64;
  std::vector<int64_t> row_stamp(g, -1), expert_stamp(static_cast<size_t>(g) * n_exp, -1);
  int64_t token_serial = 0, layer_serial = 0;
  const Topology& topo = cost.topology();
  bool several = false;  // Several nodes, one with several ranks.
  for (int n = 0; n < topo.num_nodes(); ++n) several |= topo.RanksOn(n).size() > 1;
  const bool two_stage = o.node_dedup && topo.num_nodes() > 1 && several;
  const bool aggregate = o.aggregate_prefills && dp && !replay.rank_dependent && !two_stage;
  std::vector<int64_t> node_stamp(topo.num_nodes(), -1);
  MoeTraffic traffic(g, two_stage);
  std::vector<double> attention(g), bytes(static_cast<size_t>(g) * g);
  const int layers = shape.num_layers();

  while (done < w.requests) {
    while (next < w.requests && reqs[next].arrival <= now) {
      Request& r = reqs[next];
      if (dp && o.route) {
        const int rank = o.route({.trace_request = r.trace_request,
                                  .tokens_in_flight = in_flight,
                                  .requests_in_flight = sequences,
                                  .prefill_tokens = unprefilled,
                                  .load_tokens = r.prompt + w.output_tokens,
                                  .prompt_tokens = r.prompt});
        if (rank < 0 || rank >= g) {
          return absl::InternalError(absl::StrCat("the router gave rank ", rank, " of ", g));
        }
        r.queue = rank;
      }
      in_flight[r.queue] += r.prompt + w.output_tokens;
      ++sequences[r.queue];
      unprefilled[r.queue] += r.prompt;
      waiting[r.queue].push_back(next);
      ++next;
    }
    // The step: every running sequence's next token, then prefill chunks within the budget.
    tokens.clear();
    whole.clear();
    int64_t step_tokens = 0;  // Of the whole prompts (the others are in `tokens`).
    std::fill(work.begin(), work.end(), AttentionWork{});
    for (int q = 0; q < queues; ++q) {
      int64_t budget = o.max_batch_tokens;
      AttentionWork& a = work[q];
      for (int64_t id : running[q]) {
        Request& r = reqs[id];
        if (r.prefilled < r.prompt) continue;
        const int64_t context = r.prompt + r.generated;
        tokens.push_back({r.begin + (r.generated - 1) % r.prompt, q});
        ++a.tokens, a.kv_read += context, a.attended += context, ++a.logits_rows;
        --budget;
      }
      auto prefill = [&](Request& r) {
        const int64_t c = std::min(budget, r.prompt - r.prefilled), o0 = r.prefilled;
        if (aggregate && o0 == 0 && c == r.prompt) {
          whole.push_back({r.trace_request, q, r.prompt});
          if (sums[r.trace_request] == nullptr) {
            sums[r.trace_request] =
                std::make_unique<PromptSums>(SumPrompt(trace, replay, r.begin, r.prompt));
          }
          step_tokens += c;
        } else {
          for (int64_t i = 0; i < c; ++i) tokens.push_back({r.begin + o0 + i, q});
        }
        a.tokens += c, a.kv_read += o0 + c, a.attended += c * o0 + c * (c + 1) / 2;
        if (o0 + c == r.prompt) ++a.logits_rows;
        budget -= c;
      };
      for (int64_t id : running[q]) {
        if (budget <= 0) break;
        if (reqs[id].prefilled < reqs[id].prompt) prefill(reqs[id]);
      }
      while (budget > 0 && !waiting[q].empty() &&
             static_cast<int>(running[q].size()) < o.max_running) {
        const int64_t id = waiting[q].front();
        waiting[q].pop_front();
        running[q].push_back(id);
        prefill(reqs[id]);
      }
    }
    step_tokens += static_cast<int64_t>(tokens.size());
    if (step_tokens == 0) {
      if (next >= w.requests) break;  // Nothing left (cannot happen while requests remain).
      now = std::max(now, reqs[next].arrival);
      continue;
    }

    // Its time, layer by layer.
    double step = cost.StepOverhead() + cost.StepSkew();
    AttentionWork all;
    for (const AttentionWork& a : work) {
      all.tokens += a.tokens, all.kv_read += a.kv_read, all.attended += a.attended;
      all.logits_rows += a.logits_rows;
    }
    double tp_collective = 0;
    if (dp) {
      for (int r = 0; r < g; ++r) attention[r] = cost.Attention(work[r]);
    } else {
      std::fill(attention.begin(), attention.end(), cost.Attention(all, g));
      // The reduce-scatter after attention and the all-gather before the next: each rank sends
      // every peer its 1/G of the rows.
      const double share = all.tokens * cost.CombineRowBytes() / g;
      for (int s = 0; s < g; ++s) {
        for (int d = 0; d < g; ++d) bytes[static_cast<size_t>(s) * g + d] = s == d ? 0 : share;
      }
      tp_collective = g > 1 ? cost.Collective(bytes) : 0;
    }
    const double slowest_attention = *std::max_element(attention.begin(), attention.end());
    int moe_index = 0;
    for (int layer = 0; layer < layers; ++layer) {
      step += slowest_attention + 2 * tp_collective;
      out.attention_s += slowest_attention;
      out.srs_s += tp_collective, out.sag_s += tp_collective;
      ++layer_calls;
      if (!shape.moe_layer[layer]) {
        double mlp = 0;
        if (dp) {
          for (int r = 0; r < g; ++r) mlp = std::max(mlp, cost.DenseMlp(work[r].tokens));
        } else {
          mlp = cost.DenseMlp(all.tokens, g);
        }
        step += mlp;
        continue;
      }
      const int l = moe_index++;
      traffic.Reset(g, two_stage);
      ++layer_serial;
      for (const StepToken& st : tokens) {
        const int src = dp ? st.queue : replay.Device(l, st.t);
        ++token_serial;
        ++traffic.own_tokens[src];
        const uint8_t* served = replay.Served(st.t, l);
        const uint16_t* experts = trace.Experts(st.t, l);
        const bool moved = replay.rank_dependent && src != replay.Device(l, st.t);
        for (int j = 0; j < k; ++j) {
          const int d = moved ? replay.placement->Serving(l, experts[j], src) : served[j];
          ++traffic.expert_rows[d];
          int64_t& e = expert_stamp[static_cast<size_t>(d) * n_exp + experts[j]];
          if (e != layer_serial) e = layer_serial, ++traffic.active_experts[d];
          if (d == src || row_stamp[d] == token_serial) continue;
          row_stamp[d] = token_serial;
          if (!two_stage) {
            ++traffic.rows[static_cast<size_t>(src) * g + d];
            continue;
          }
          // Two stages: once to the gateway of d's node, then inside it (or directly on src's).
          const int node = topo.NodeOf(d);
          if (node == topo.NodeOf(src)) {
            ++traffic.local_rows[static_cast<size_t>(src) * g + d];
            continue;
          }
          const int gateway = topo.Gateway(src, node);
          if (node_stamp[node] != token_serial) {
            node_stamp[node] = token_serial;
            ++traffic.rows[static_cast<size_t>(src) * g + gateway];
          }
          if (d != gateway) ++traffic.local_rows[static_cast<size_t>(gateway) * g + d];
        }
      }
      for (const WholePrompt& p : whole) {  // Their sums: the same counts as token by token.
        const PromptSums& sum = *sums[p.trace_request];
        const int src = p.queue;
        for (int d = 0; d < g; ++d) {
          traffic.expert_rows[d] += sum.act[l * g + d];
          if (d != src) traffic.rows[static_cast<size_t>(src) * g + d] += sum.touch[l * g + d];
        }
        traffic.own_tokens[src] += p.prompt;
        for (int word = 0; word < words; ++word) {
          for (uint64_t b = sum.bits[l * words + word]; b != 0; b &= b - 1) {
            const int e = word * 64 + __builtin_ctzll(b);
            const int d = replay.placement->Device(l, e);
            int64_t& stamp = expert_stamp[static_cast<size_t>(d) * n_exp + e];
            if (stamp != layer_serial) stamp = layer_serial, ++traffic.active_experts[d];
          }
        }
      }
      MoeTime m = cost.Moe(traffic, dp ? attention : std::vector<double>{});
      if (l == 0) m.wait += cost.StepSkew();  // The ranks' spread at the step's start.
      m.wait += cost.SharedCoreWait();
      step += m.dispatch + m.experts + m.combine + cost.SharedCoreWait();
      out.moe.wait += m.wait, out.moe.dispatch += m.dispatch, out.moe.experts += m.experts;
      out.moe.combine += m.combine;
      ++moe_calls;
    }
    double head = 0;
    if (dp) {
      for (int r = 0; r < g; ++r) head = std::max(head, cost.LmHead(work[r].logits_rows));
    } else {  // Every Attention-TP rank runs the whole lm_head on every row (the engine's).
      head = cost.LmHead(all.logits_rows);
    }
    step += head;
    now += step;
    out.step_s += step;
    ++out.steps;
    out.tokens += step_tokens;

    // What the step finished.
    for (int q = 0; q < queues; ++q) {
      int64_t budget = o.max_batch_tokens;
      std::vector<int64_t> still;
      for (int64_t id : running[q]) {
        Request& r = reqs[id];
        if (r.prefilled < r.prompt) continue;  // Prefills below.
        ++r.generated, r.last = now, --budget;
      }
      for (int64_t id : running[q]) {
        Request& r = reqs[id];
        if (r.prefilled >= r.prompt || budget <= 0) continue;
        const int64_t c = std::min(budget, r.prompt - r.prefilled);
        r.prefilled += c, budget -= c;
        unprefilled[q] -= c;
        if (r.prefilled == r.prompt) r.generated = 1, r.first = r.last = now;
      }
      for (int64_t id : running[q]) {
        Request& r = reqs[id];
        if (r.generated >= w.output_tokens) {
          ++done;
          in_flight[q] -= r.prompt + w.output_tokens;
          --sequences[q];
        } else {
          still.push_back(id);
        }
      }
      running[q] = std::move(still);
    }
  }

  std::vector<double> ttft, tpot;
  int64_t good = 0;
  double first_arrival = reqs.front().arrival, end = 0;
  for (const Request& r : reqs) {
    const double t1 = r.first - r.arrival;
    const double t2 = w.output_tokens > 1 ? (r.last - r.first) / (w.output_tokens - 1) : 0;
    ttft.push_back(t1), tpot.push_back(t2);
    good += t1 <= o.slo_ttft_s && t2 <= o.slo_tpot_s;
    end = std::max(end, r.last);
  }
  out.ttft_s = Of(ttft), out.tpot_s = Of(tpot);
  out.duration_s = end - first_arrival;
  if (out.duration_s > 0) {
    out.throughput_rps = w.requests / out.duration_s;
    out.goodput_rps = good / out.duration_s;
  }
  out.slo_attainment = static_cast<double>(good) / w.requests;
  out.moe_calls = moe_calls, out.layer_calls = layer_calls, out.two_stage = two_stage;
  out.requests = w.requests;
  if (moe_calls > 0) {
    out.moe.wait /= moe_calls, out.moe.dispatch /= moe_calls, out.moe.experts /= moe_calls;
    out.moe.combine /= moe_calls;
  }
  if (layer_calls > 0) {
    out.attention_s /= layer_calls, out.srs_s /= layer_calls, out.sag_s /= layer_calls;
  }
  if (out.steps > 0) out.step_s /= out.steps;
  return out;
}

}  // namespace semmoe::planner::sim
