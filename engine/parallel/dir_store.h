// DirStore: a Gloo rendezvous store in a directory of one host (`file:DIR` rendezvous
// addresses). Unlike Gloo's FileStore it lets a key be written again (atomically: a temporary
// file renamed over it), which re-forming a group needs: a rank that retries a rendezvous
// round posts its new address under the same key.
//
// Errors are thrown as gloo::IoException (the Store interface's convention).
// Thread-safe; several processes may share the directory.
#ifndef SEMMOE_ENGINE_PARALLEL_DIR_STORE_H_
#define SEMMOE_ENGINE_PARALLEL_DIR_STORE_H_

#include <chrono>
#include <string>
#include <vector>

#include "gloo/rendezvous/store.h"

namespace semmoe::engine {

class DirStore final : public gloo::rendezvous::Store {
 public:
  // `default_wait` bounds get() and wait() without a timeout (Gloo's connect uses them).
  explicit DirStore(std::string dir, std::chrono::milliseconds default_wait = kDefaultTimeout)
      : dir_(std::move(dir)), default_wait_(default_wait) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;  // Waits up to kDefaultTimeout.
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::string PathOf(const std::string& key) const;
  const std::string dir_;
  const std::chrono::milliseconds default_wait_;
};

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_DIR_STORE_H_
