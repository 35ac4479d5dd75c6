// KvStore: the in-memory core of the rendezvous service — a bounded map where readers can wait
// for keys to appear. Knows nothing of RPC (common/rendezvous/rendezvous_service.h adapts it).
//
// Thread-safe.
#ifndef SEMMOE_COMMON_RENDEZVOUS_KV_STORE_H_
#define SEMMOE_COMMON_RENDEZVOUS_KV_STORE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace semmoe::rendezvous {

struct KvStoreOptions {
  size_t max_key_bytes = 1024;        // Longer keys: INVALID_ARGUMENT.
  size_t max_value_bytes = 1 << 20;   // Larger values: INVALID_ARGUMENT.
  size_t max_total_bytes = 64 << 20;  // Keys + values held; past it: RESOURCE_EXHAUSTED.
  size_t max_keys_per_get = 4096;     // Longer key lists: INVALID_ARGUMENT.
};

class KvStore {
 public:
  explicit KvStore(KvStoreOptions options = {}) : options_(options) {}

  // Stores `value` under the non-empty `key` (replacing) and wakes waiting readers.
  absl::Status Set(const std::string& key, std::string value);

  // The values of `keys` in order, once all exist. Waits up to `timeout` (<= 0: no wait);
  // missing keys then answer DEADLINE_EXCEEDED (NOT_FOUND without a wait), naming them.
  absl::StatusOr<std::vector<std::string>> Get(absl::Span<const std::string> keys,
                                               absl::Duration timeout) const;

  size_t total_bytes() const;

 private:
  bool AllPresent(absl::Span<const std::string> keys) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const KvStoreOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::string> values_ ABSL_GUARDED_BY(mu_);
  size_t total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace semmoe::rendezvous

#endif  // SEMMOE_COMMON_RENDEZVOUS_KV_STORE_H_
