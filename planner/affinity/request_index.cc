#include "planner/affinity/request_index.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "planner/affinity/byte_io.h"

namespace semmoe::planner {
namespace {

constexpr char kMagic[] = "SMRQIDX1";

// Counts per token id, sorted by token.
std::vector<std::pair<uint32_t, float>> Counts(absl::Span<const uint32_t> tokens) {
  absl::flat_hash_map<uint32_t, float> counts;
  for (uint32_t t : tokens) counts[t] += 1.0f;
  std::vector<std::pair<uint32_t, float>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

double Dot(const std::vector<std::pair<uint32_t, float>>& a,
           const std::vector<std::pair<uint32_t, float>>& b) {
  double dot = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i].first < b[j].first) {
      ++i;
    } else if (a[i].first > b[j].first) {
      ++j;
    } else {
      dot += static_cast<double>(a[i++].second) * b[j++].second;
    }
  }
  return dot;
}

}  // namespace

RequestIndex::SparseVector RequestIndex::Embed(absl::Span<const uint32_t> tokens) const {
  SparseVector v;
  double norm = 0;
  for (const auto& [token, count] : Counts(tokens)) {
    auto it = idf_.find(token);
    if (it == idf_.end()) continue;  // Never profiled: no evidence either way.
    const float w = std::log1p(count) * it->second;
    v.emplace_back(token, w);
    norm += static_cast<double>(w) * w;
  }
  if (norm > 0) {
    const float scale = static_cast<float>(1.0 / std::sqrt(norm));
    for (auto& [token, w] : v) w *= scale;
  }
  return v;
}

absl::StatusOr<RequestIndex> RequestIndex::Build(const trace::TraceSet& trace,
                                                 const std::vector<int>& request_device,
                                                 int num_devices) {
  if (num_devices < 1 || static_cast<int>(request_device.size()) != trace.num_requests()) {
    return absl::InvalidArgumentError("request index: one device per request is needed");
  }
  RequestIndex index;
  index.num_devices_ = num_devices;
  std::vector<std::vector<std::pair<uint32_t, float>>> counts(trace.num_requests());
  absl::flat_hash_map<uint32_t, int> document_frequency;
  for (int r = 0; r < trace.num_requests(); ++r) {
    counts[r] = Counts(absl::MakeConstSpan(trace.tokens.data() + trace.request_begin[r],
                                           trace.request_begin[r + 1] - trace.request_begin[r]));
    for (const auto& [token, c] : counts[r]) ++document_frequency[token];
  }
  const double requests = trace.num_requests();
  for (const auto& [token, df] : document_frequency) {
    index.idf_[token] = static_cast<float>(std::log((requests + 1.0) / (df + 1.0)) + 1e-3);
  }
  for (int r = 0; r < trace.num_requests(); ++r) {
    const int d = request_device[r];
    if (d < 0 || d >= num_devices) {
      return absl::InvalidArgumentError(absl::StrCat("request index: device ", d, " of request ",
                                                     r, " is out of range"));
    }
    index.vectors_.push_back(index.Embed(absl::MakeConstSpan(
        trace.tokens.data() + trace.request_begin[r],
        trace.request_begin[r + 1] - trace.request_begin[r])));
    index.devices_.push_back(d);
  }
  return index;
}

std::vector<double> RequestIndex::Vote(absl::Span<const uint32_t> prompt, int k) const {
  std::vector<double> votes(num_devices_, 0.0);
  const SparseVector query = Embed(prompt);
  if (query.empty() || vectors_.empty() || k <= 0) return votes;
  std::vector<std::pair<double, int>> similarity;
  similarity.reserve(vectors_.size());
  for (size_t r = 0; r < vectors_.size(); ++r) {
    similarity.emplace_back(Dot(query, vectors_[r]), static_cast<int>(r));
  }
  const size_t top = std::min<size_t>(k, similarity.size());
  std::partial_sort(similarity.begin(), similarity.begin() + top, similarity.end(),
                    std::greater<>());
  for (size_t i = 0; i < top; ++i) votes[devices_[similarity[i].second]] += similarity[i].first;
  return votes;
}

std::string RequestIndex::Serialize() const {
  std::string out(kMagic, 8);
  PutBytes<uint32_t>(out, static_cast<uint32_t>(num_devices_));
  std::vector<std::pair<uint32_t, float>> idf(idf_.begin(), idf_.end());
  std::sort(idf.begin(), idf.end());
  PutBytes<uint32_t>(out, static_cast<uint32_t>(idf.size()));
  for (const auto& [token, w] : idf) {
    PutBytes<uint32_t>(out, token);
    PutBytes<float>(out, w);
  }
  PutBytes<uint32_t>(out, static_cast<uint32_t>(vectors_.size()));
  for (size_t r = 0; r < vectors_.size(); ++r) {
    PutBytes<uint16_t>(out, static_cast<uint16_t>(devices_[r]));
    PutBytes<uint32_t>(out, static_cast<uint32_t>(vectors_[r].size()));
    for (const auto& [token, w] : vectors_[r]) {
      PutBytes<uint32_t>(out, token);
      PutBytes<float>(out, w);
    }
  }
  return out;
}

absl::StatusOr<RequestIndex> RequestIndex::Deserialize(absl::string_view bytes) {
  if (bytes.size() < 8 || bytes.substr(0, 8) != absl::string_view(kMagic, 8)) {
    return absl::InvalidArgumentError("request index: not an SMRQIDX1 file");
  }
  ByteReader r(bytes.substr(8), "request index");
  RequestIndex index;
  uint32_t devices = 0, entries = 0, requests = 0;
  RETURN_IF_ERROR(r.Get(devices, "the device count"));
  if (devices == 0 || devices > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("request index: ", devices, " devices"));
  }
  index.num_devices_ = static_cast<int>(devices);
  RETURN_IF_ERROR(r.Get(entries, "the idf count"));
  if (static_cast<uint64_t>(entries) * 8 > bytes.size()) {
    return absl::InvalidArgumentError("request index: the idf table cannot fit");
  }
  for (uint32_t i = 0; i < entries; ++i) {
    uint32_t token;
    float w;
    RETURN_IF_ERROR(r.Get(token, "an idf token"));
    RETURN_IF_ERROR(r.Get(w, "an idf weight"));
    if (!(w >= 0.0f && w < 1e6f) || !index.idf_.emplace(token, w).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("request index: bad idf entry for token ", token, " before byte ",
                       8 + r.at()));
    }
  }
  RETURN_IF_ERROR(r.Get(requests, "the request count"));
  if (static_cast<uint64_t>(requests) * 6 > bytes.size()) {
    return absl::InvalidArgumentError("request index: the requests cannot fit");
  }
  for (uint32_t q = 0; q < requests; ++q) {
    uint16_t device;
    uint32_t n;
    RETURN_IF_ERROR(r.Get(device, "a request's device"));
    RETURN_IF_ERROR(r.Get(n, "a request's size"));
    if (device >= devices || static_cast<uint64_t>(n) * 8 > bytes.size()) {
      return absl::InvalidArgumentError(absl::StrCat("request index: bad request header before byte ",
                                                     8 + r.at()));
    }
    SparseVector v(n);
    for (auto& [token, w] : v) {
      RETURN_IF_ERROR(r.Get(token, "a token"));
      RETURN_IF_ERROR(r.Get(w, "a weight"));
      if (!(w >= -1.0f && w <= 1.0f)) {
        return absl::InvalidArgumentError(absl::StrCat("request index: bad weight before byte ",
                                                       8 + r.at()));
      }
    }
    if (!std::is_sorted(v.begin(), v.end())) {
      return absl::InvalidArgumentError("request index: a request's tokens are not sorted");
    }
    index.vectors_.push_back(std::move(v));
    index.devices_.push_back(device);
  }
  if (!r.done()) return absl::InvalidArgumentError("request index: trailing bytes");
  return index;
}

std::vector<int> KnnRequests(const std::vector<std::vector<uint32_t>>& prompts,
                             const RequestIndex& index, int k, double token_balance_eps) {
  const int g = index.num_devices();
  int64_t total = 0;
  for (const auto& p : prompts) total += static_cast<int64_t>(p.size());
  const double capacity = (1.0 + token_balance_eps) * total / g;
  std::vector<int64_t> load(g, 0);
  std::vector<int> devices(prompts.size());
  for (size_t r = 0; r < prompts.size(); ++r) {
    const std::vector<double> votes = index.Vote(prompts[r], k);
    const int64_t size = static_cast<int64_t>(prompts[r].size());
    int best = -1;
    for (int d = 0; d < g; ++d) {
      if (load[d] + size > capacity) continue;
      if (best < 0 || votes[d] > votes[best] ||
          (votes[d] == votes[best] && load[d] < load[best])) {
        best = d;
      }
    }
    if (best < 0) best = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    devices[r] = best;
    load[best] += size;
  }
  return devices;
}

}  // namespace semmoe::planner
