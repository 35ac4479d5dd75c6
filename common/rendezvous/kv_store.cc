#include "common/rendezvous/kv_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace semmoe::rendezvous {

absl::Status KvStore::Set(const std::string& key, std::string value) {
  if (key.empty()) return absl::InvalidArgumentError("kv store: empty key");
  if (key.size() > options_.max_key_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("kv store: key of ", key.size(), " bytes exceeds ", options_.max_key_bytes));
  }
  if (value.size() > options_.max_value_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("kv store: value of ", value.size(),
                                                   " bytes for \"", key, "\" exceeds ",
                                                   options_.max_value_bytes));
  }
  absl::MutexLock lock(&mu_);
  auto it = values_.find(key);
  const size_t old_bytes = it == values_.end() ? 0 : key.size() + it->second.size();
  const size_t new_total = total_bytes_ - old_bytes + key.size() + value.size();
  if (new_total > options_.max_total_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "kv store: holding \"", key, "\" would exceed ", options_.max_total_bytes, " bytes"));
  }
  total_bytes_ = new_total;
  values_[key] = std::move(value);
  return absl::OkStatus();
}

bool KvStore::AllPresent(absl::Span<const std::string> keys) const {
  for (const std::string& key : keys) {
    if (!values_.contains(key)) return false;
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> KvStore::Get(absl::Span<const std::string> keys,
                                                      absl::Duration timeout) const {
  if (keys.size() > options_.max_keys_per_get) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kv store: ", keys.size(), " keys in one get exceeds ", options_.max_keys_per_get));
  }
  absl::ReaderMutexLock lock(&mu_);
  if (timeout > absl::ZeroDuration()) {
    auto ready = [this, keys]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return AllPresent(keys); };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  }
  std::vector<std::string> missing;
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const std::string& key : keys) {
    auto it = values_.find(key);
    if (it == values_.end()) {
      missing.push_back(key);
    } else {
      values.push_back(it->second);
    }
  }
  if (!missing.empty()) {
    const std::string message =
        absl::StrCat("kv store: missing keys ", absl::StrJoin(missing, ", "));
    return timeout > absl::ZeroDuration() ? absl::DeadlineExceededError(absl::StrCat(
                                                message, " after ", absl::FormatDuration(timeout)))
                                          : absl::NotFoundError(message);
  }
  return values;
}

size_t KvStore::total_bytes() const {
  absl::ReaderMutexLock lock(&mu_);
  return total_bytes_;
}

}  // namespace semmoe::rendezvous
