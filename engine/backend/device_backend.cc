#include "engine/backend/device_backend.h"

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

namespace semmoe::engine {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, std::unique_ptr<DeviceBackend>, std::less<>> backends ABSL_GUARDED_BY(mu);
};

// Never destroyed: registrars run during static initialisation, users until exit.
Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

}  // namespace

void RegisterDeviceBackend(std::string kind, std::unique_ptr<DeviceBackend> backend) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  // Two registrars of one kind would be two libraries linked for the same device: a build bug.
  CHECK(r.backends.find(kind) == r.backends.end())
      << "device backend " << kind << " registered twice";
  r.backends.emplace(std::move(kind), std::move(backend));
}

absl::StatusOr<DeviceBackend*> GetDeviceBackend(absl::string_view kind) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  auto it = r.backends.find(kind);
  if (it != r.backends.end()) return it->second.get();
  if (kind == "cuda") {
    return absl::FailedPreconditionError(
        "this build has no CUDA support: it was built where the CUDA toolkit was missing (or "
        "with SEMMOE_NO_CUDA=1). Rebuild on a machine with the toolkit in /usr/local/cuda (or "
        "SEMMOE_CUDA_PATH=DIR) to get --device cuda; see docs/BUILD.md. --device cpu works in "
        "every build");
  }
  return absl::InvalidArgumentError(absl::StrCat("no device backend '", kind, "'"));
}

std::vector<std::string> DeviceBackendKinds() {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  std::vector<std::string> kinds;
  for (const auto& [kind, backend] : r.backends) kinds.push_back(kind);
  return kinds;
}

}  // namespace semmoe::engine
