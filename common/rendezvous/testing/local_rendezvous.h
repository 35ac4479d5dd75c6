// A RendezvousStore service on a free loopback port, for tests of ranks that meet over gRPC.
#ifndef SEMMOE_COMMON_RENDEZVOUS_TESTING_LOCAL_RENDEZVOUS_H_
#define SEMMOE_COMMON_RENDEZVOUS_TESTING_LOCAL_RENDEZVOUS_H_

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/rendezvous/kv_store.h"
#include "common/rendezvous/rendezvous_service.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace semmoe::rendezvous::testing {

class LocalRendezvous {
 public:
  LocalRendezvous() : service_(kv_) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~LocalRendezvous() {
    if (server_ != nullptr) server_->Shutdown();
  }

  bool ok() const { return server_ != nullptr && port_ > 0; }
  std::string target() const { return absl::StrCat("127.0.0.1:", port_); }  // host:port
  const KvStore& kv() const { return kv_; }

 private:
  KvStore kv_;
  RendezvousService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace semmoe::rendezvous::testing

#endif  // SEMMOE_COMMON_RENDEZVOUS_TESTING_LOCAL_RENDEZVOUS_H_
