#include "common/security.h"

#include <cstdlib>
#include <string>

#include "common/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace semmoe {
namespace {

using ::testing::HasSubstr;

std::string Tmp(const std::string& name) { return JoinPath(std::getenv("TEST_TMPDIR"), name); }

TEST(SecurityTest, NothingInstalledMeansPlaintextAndNoToken) {
  ASSERT_TRUE(InstallSecurity({}).ok());
  EXPECT_FALSE(Security().tls());
  EXPECT_TRUE(CheckBearer("").ok());
  EXPECT_TRUE(CheckBearer("Bearer anything").ok());
}

TEST(SecurityTest, TheTokenIsChecked) {
  ASSERT_TRUE(InstallSecurity({.token = "s3cret"}).ok());
  EXPECT_EQ(CheckBearer("").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CheckBearer("Bearer wrong").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(CheckBearer("Bearer s3cre").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(CheckBearer("Bearer s3cret2").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(CheckBearer("s3cret").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(CheckBearer("Bearer s3cret").ok());
  ASSERT_TRUE(InstallSecurity({}).ok());
}

TEST(SecurityTest, LoadTokenFromAFileOrTheEnvironment) {
  ASSERT_TRUE(WriteFile(Tmp("token"), "  abc123\n").ok());
  EXPECT_EQ(*LoadToken(Tmp("token")), "abc123");
  ASSERT_TRUE(WriteFile(Tmp("empty"), "\n").ok());
  EXPECT_THAT(LoadToken(Tmp("empty")).status().message(), HasSubstr("is empty"));
  EXPECT_THAT(LoadToken(Tmp("missing")).status().message(), HasSubstr("--auth_token_file"));
  setenv("SEMMOE_AUTH_TOKEN", "from-env", 1);
  EXPECT_EQ(*LoadToken(""), "from-env");
  EXPECT_EQ(*LoadToken(Tmp("token")), "abc123");  // The file wins.
  unsetenv("SEMMOE_AUTH_TOKEN");
  EXPECT_EQ(*LoadToken(""), "");
}

TEST(SecurityTest, BadFilesAreNamed) {
  ASSERT_TRUE(WriteFile(Tmp("not.pem"), "hello").ok());
  EXPECT_THAT(InstallSecurity({.cert_file = Tmp("not.pem"), .key_file = Tmp("not.pem")}).message(),
              HasSubstr("--tls_cert " + Tmp("not.pem") + ": not a PEM file"));
  EXPECT_THAT(
      InstallSecurity({.cert_file = Tmp("nope.pem"), .key_file = Tmp("nope.pem")}).message(),
      HasSubstr("--tls_cert " + Tmp("nope.pem")));
  EXPECT_THAT(InstallSecurity({.cert_file = Tmp("not.pem")}).message(),
              HasSubstr("--tls_cert and --tls_key go together"));
  EXPECT_THAT(InstallSecurity({.ca_file = Tmp("not.pem")}).message(),
              HasSubstr("--tls_ca " + Tmp("not.pem") + ": not a PEM file"));
  // A failed install leaves the previous one.
  EXPECT_FALSE(Security().tls());
}

}  // namespace
}  // namespace semmoe
