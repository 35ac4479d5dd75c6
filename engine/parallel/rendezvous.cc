#include "engine/parallel/rendezvous.h"

#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/parallel/dir_store.h"
#include "engine/parallel/gloo_communicator.h"
#include "engine/parallel/grpc_store.h"

namespace semmoe::engine {

absl::StatusOr<std::unique_ptr<gloo::rendezvous::Store>> OpenStore(const std::string& address,
                                                                   absl::Duration wait) {
  const std::chrono::milliseconds wait_ms(absl::ToInt64Milliseconds(wait));
  if (absl::StartsWith(address, "file:") && address.size() > 5) {
    const std::string dir = address.substr(5);
    struct stat st;
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("rendezvous ", address, ": ", dir, " is not a directory"));
    }
    return std::unique_ptr<gloo::rendezvous::Store>(
        std::make_unique<DirStore>(dir, wait_ms));
  }
  if (absl::StartsWith(address, "grpc:") && address.find(':', 5) != std::string::npos) {
    return std::unique_ptr<gloo::rendezvous::Store>(std::make_unique<GrpcStore>(address.substr(5), wait_ms));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("rendezvous address '", address, "' is neither file:DIR nor grpc:HOST:PORT"));
}

absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(const RendezvousOptions& options) {
  const GlooOptions gloo{.rank = options.rank,
                         .size = options.size,
                         .hostname = options.hostname,
                         .prefix = options.prefix,
                         .timeout = options.timeout,
                         .connect_timeout = options.connect_timeout};
  const std::string& address = options.address;
  ASSIGN_OR_RETURN(std::unique_ptr<gloo::rendezvous::Store> store,
                   OpenStore(address, options.connect_timeout > absl::ZeroDuration()
                                          ? options.connect_timeout
                                          : options.timeout));
  absl::StatusOr<std::unique_ptr<GlooCommunicator>> comm = GlooCommunicator::Create(*store, gloo);
  if (!comm.ok()) {
    return absl::Status(comm.status().code(),
                        absl::StrCat("rank ", options.rank, "/", options.size, " via ", address,
                                     ": ", comm.status().message()));
  }
  return std::unique_ptr<Communicator>(std::move(*comm));
}

}  // namespace semmoe::engine
