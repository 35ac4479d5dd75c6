// Connecting an EP group: a rendezvous address names the store the ranks meet in, so one binary
// serves one host and several.
//   file:DIR        a store in DIR (one host, dir_store.h; DIR should be fresh for every run,
//                   e.g. local_cluster's per-run folder).
//   grpc:HOST:PORT  a RendezvousStore service (hosted by `planner serve` or standalone).
#ifndef SEMMOE_ENGINE_PARALLEL_RENDEZVOUS_H_
#define SEMMOE_ENGINE_PARALLEL_RENDEZVOUS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/parallel/communicator.h"
#include "gloo/rendezvous/store.h"

namespace semmoe::engine {

struct RendezvousOptions {
  std::string address;  // "file:DIR" or "grpc:HOST:PORT".
  int rank = 0;
  int size = 1;
  std::string hostname = "127.0.0.1";  // Where this rank listens for its peers.
  std::string prefix = "semmoe";       // Namespace inside the store.
  absl::Duration timeout = absl::Seconds(60);
  absl::Duration connect_timeout = absl::ZeroDuration();  // The rendezvous alone; zero: timeout.
};

// InvalidArgument for a malformed address or rank; DeadlineExceeded when peers do not arrive.
absl::StatusOr<std::unique_ptr<Communicator>> ConnectGloo(const RendezvousOptions& options);

// The store an address names (what ConnectGloo meets in; the NCCL backend exchanges its unique
// id through it). InvalidArgument for a malformed address or a missing directory.
// `wait` bounds the store's reads that take no timeout of their own.
absl::StatusOr<std::unique_ptr<gloo::rendezvous::Store>> OpenStore(
    const std::string& address, absl::Duration wait = absl::Seconds(30));

}  // namespace semmoe::engine

#endif  // SEMMOE_ENGINE_PARALLEL_RENDEZVOUS_H_
