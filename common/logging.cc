#include "common/logging.h"

#include <algorithm>
#include <mutex>

#include "glog/logging.h"

namespace semmoe {

void InitLogging(const char* argv0, const LoggingOptions& options) {
  static std::once_flag once;
  // Flags first: glog reads some of them during initialisation.
  FLAGS_v = std::max(0, options.verbosity);
  FLAGS_log_dir = options.log_dir;
  FLAGS_logtostderr = options.log_dir.empty();
  FLAGS_alsologtostderr = !options.log_dir.empty();
  FLAGS_stderrthreshold = std::clamp(options.stderr_threshold, 0, 3);
  FLAGS_colorlogtostderr = false;
  std::call_once(once, [argv0] {
    google::InitGoogleLogging(argv0 != nullptr ? argv0 : "semmoe");
    google::InstallFailureSignalHandler();
  });
}

}  // namespace semmoe
