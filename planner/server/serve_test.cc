#include "planner/server/serve.h"

#include "absl/strings/str_cat.h"
#include "common/rendezvous/rendezvous.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "planner/store/testing/temp_database_path.h"

namespace semmoe::planner {
namespace {

TEST(PlannerServerTest, ServesPlannerRendezvousAndHealth) {
  auto server = PlannerServer::Start({.db = TempDatabasePath("serve.db")});
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                                     grpc::InsecureChannelCredentials());
  // Planner: an empty database lists nothing.
  auto planner = rpc::PlannerService::NewStub(channel);
  grpc::ClientContext list_context;
  rpc::ListVersionsRequest list;
  list.set_model("m");
  rpc::ListVersionsResponse versions;
  ASSERT_TRUE(planner->ListVersions(&list_context, list, &versions).ok());
  EXPECT_EQ(versions.versions_size(), 0);
  // Rendezvous on the same port.
  auto rendezvous = rendezvous::RendezvousStore::NewStub(channel);
  grpc::ClientContext set_context;
  rendezvous::SetRequest set;
  set.set_key("rank0");
  set.set_value("addr");
  rendezvous::SetResponse set_done;
  ASSERT_TRUE(rendezvous->Set(&set_context, set, &set_done).ok());
  grpc::ClientContext get_context;
  rendezvous::GetRequest get;
  get.add_keys("rank0");
  rendezvous::GetResponse got;
  ASSERT_TRUE(rendezvous->Get(&get_context, get, &got).ok());
  EXPECT_EQ(got.values(0), "addr");
  (*server)->Shutdown();
}

TEST(PlannerServerTest, BadDatabaseIsAnError) {
  const std::string path = TempDatabasePath("not_a_db.db");
  FILE* f = fopen(path.c_str(), "w");
  fputs(std::string(4096, 'x').c_str(), f);
  fclose(f);
  EXPECT_EQ(PlannerServer::Start({.db = path}).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace semmoe::planner
