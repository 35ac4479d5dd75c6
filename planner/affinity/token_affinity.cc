#include "planner/affinity/token_affinity.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "planner/affinity/byte_io.h"

namespace semmoe::planner {

TokenAffinity TokenAffinity::FromTrace(const trace::TraceSet& trace) {
  TokenAffinity a;
  const int layers = trace.num_layers(), n = trace.header.num_experts, k = trace.top_k();
  a.num_experts_ = n;
  a.marginal_.assign(layers, std::vector<float>(n, 0.0f));
  absl::flat_hash_map<uint32_t, std::vector<int64_t>> counts;
  for (int64_t t = 0; t < trace.num_tokens(); ++t) {
    auto& row = counts[trace.tokens[t]];
    if (row.empty()) row.assign(static_cast<size_t>(layers) * n, 0);
    for (int l = 0; l < layers; ++l) {
      for (int j = 0; j < k; ++j) {
        const int e = trace.Experts(t, l)[j];
        ++row[static_cast<size_t>(l) * n + e];
        a.marginal_[l][e] += 1.0f;
      }
    }
  }
  for (auto& m : a.marginal_) {
    double total = 0;
    for (float v : m) total += v;
    for (float& v : m) v = total > 0 ? static_cast<float>(v / total) : 1.0f / n;
  }
  for (auto& [token, row] : counts) {
    std::vector<float> p(row.size());
    for (int l = 0; l < layers; ++l) {
      int64_t total = 0;
      for (int e = 0; e < n; ++e) total += row[static_cast<size_t>(l) * n + e];
      for (int e = 0; e < n; ++e) {
        p[static_cast<size_t>(l) * n + e] =
            static_cast<float>(static_cast<double>(row[static_cast<size_t>(l) * n + e]) / total);
      }
    }
    a.rows_.emplace(token, std::move(p));
  }
  return a;
}

double TokenAffinity::Probability(int layer, uint32_t token, int expert) const {
  auto it = rows_.find(token);
  if (it == rows_.end()) return marginal_[layer][expert];
  return it->second[static_cast<size_t>(layer) * num_experts_ + expert];
}

std::vector<uint32_t> TokenAffinity::SeenTokens() const {
  std::vector<uint32_t> ids;
  ids.reserve(rows_.size());
  for (const auto& [id, row] : rows_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<float> TokenAffinity::DpScores(const Placement& placement, uint32_t vocab_size) const {
  const int g = placement.num_devices();
  std::vector<float> scores(static_cast<size_t>(vocab_size) * g, 0.0f);
  std::vector<float> marginal_row(g, 0.0f);
  for (int l = 0; l < num_layers(); ++l) {
    for (int e = 0; e < num_experts_; ++e) marginal_row[placement.Device(l, e)] += marginal_[l][e];
  }
  for (uint32_t v = 0; v < vocab_size; ++v) {
    float* row = &scores[static_cast<size_t>(v) * g];
    auto it = rows_.find(v);
    if (it == rows_.end()) {
      std::copy(marginal_row.begin(), marginal_row.end(), row);
      continue;
    }
    for (int l = 0; l < num_layers(); ++l) {
      for (int e = 0; e < num_experts_; ++e) {
        row[placement.Device(l, e)] += it->second[static_cast<size_t>(l) * num_experts_ + e];
      }
    }
  }
  return scores;
}

namespace {

constexpr char kMagic[8] = {'S', 'M', 'A', 'F', 'F', 'I', 'N', '1'};

}  // namespace

std::string TokenAffinity::Serialize() const {
  std::string out(kMagic, 8);
  const uint32_t layers = num_layers(), experts = num_experts_;
  PutBytes<uint32_t>(out, layers);
  PutBytes<uint32_t>(out, experts);
  PutBytes<uint32_t>(out, static_cast<uint32_t>(rows_.size()));
  for (const auto& m : marginal_) {
    for (float p : m) PutBytes<float>(out, p);
  }
  std::vector<uint32_t> ids;
  for (const auto& [id, row] : rows_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (uint32_t id : ids) {
    const std::vector<float>& row = rows_.at(id);
    PutBytes<uint32_t>(out, id);
    for (uint32_t l = 0; l < layers; ++l) {
      uint16_t n = 0;
      for (uint32_t e = 0; e < experts; ++e) n += row[l * experts + e] > 0;
      PutBytes<uint16_t>(out, n);
      for (uint32_t e = 0; e < experts; ++e) {
        if (row[l * experts + e] > 0) {
          PutBytes<uint16_t>(out, static_cast<uint16_t>(e));
          PutBytes<float>(out, row[l * experts + e]);
        }
      }
    }
  }
  return out;
}

absl::StatusOr<TokenAffinity> TokenAffinity::Deserialize(absl::string_view bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return absl::InvalidArgumentError("not an affinity table (bad magic)");
  }
  ByteReader r(bytes.substr(8), "affinity table");
  uint32_t layers, experts, tokens;
  if (absl::Status s = r.Get(layers, "the layer count"); !s.ok()) return s;
  if (absl::Status s = r.Get(experts, "the expert count"); !s.ok()) return s;
  if (absl::Status s = r.Get(tokens, "the token count"); !s.ok()) return s;
  if (layers == 0 || layers > 4096 || experts == 0 || experts > 65536 ||
      static_cast<uint64_t>(layers) * experts * 4 > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("affinity table: implausible shape ", layers,
                                                   " layers × ", experts, " experts"));
  }
  TokenAffinity a;
  a.num_experts_ = static_cast<int>(experts);
  a.marginal_.assign(layers, std::vector<float>(experts));
  for (auto& m : a.marginal_) {
    for (float& p : m) {
      if (absl::Status s = r.Get(p, "the marginal"); !s.ok()) return s;
    }
  }
  // Each token needs at least 4 + 2·layers bytes: a bound on the count before allocating.
  if (static_cast<uint64_t>(tokens) * (4 + 2ull * layers) > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("affinity table: ", tokens,
                                                   " tokens cannot fit in ", bytes.size(),
                                                   " bytes"));
  }
  for (uint32_t t = 0; t < tokens; ++t) {
    uint32_t id;
    if (absl::Status s = r.Get(id, "a token id"); !s.ok()) return s;
    std::vector<float> row(static_cast<size_t>(layers) * experts, 0.0f);
    for (uint32_t l = 0; l < layers; ++l) {
      uint16_t n;
      if (absl::Status s = r.Get(n, "an entry count"); !s.ok()) return s;
      for (uint16_t i = 0; i < n; ++i) {
        uint16_t e;
        float p;
        if (absl::Status s = r.Get(e, "an expert id"); !s.ok()) return s;
        if (absl::Status s = r.Get(p, "a probability"); !s.ok()) return s;
        if (e >= experts || !(p >= 0.0f && p <= 1.0f)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "affinity table: bad entry (expert ", e, ", p ", p, ") before byte ", 8 + r.at()));
        }
        row[static_cast<size_t>(l) * experts + e] = p;
      }
    }
    if (!a.rows_.emplace(id, std::move(row)).second) {
      return absl::InvalidArgumentError(absl::StrCat("affinity table: token ", id, " twice"));
    }
  }
  if (!r.done()) return absl::InvalidArgumentError("affinity table: trailing bytes");
  return a;
}

}  // namespace semmoe::planner
