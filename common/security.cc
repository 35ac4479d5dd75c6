#include "common/security.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/file.h"
#include "grpcpp/support/client_interceptor.h"

namespace semmoe {
namespace {

absl::Mutex mu(absl::kConstInit);
SecurityMaterial* material ABSL_GUARDED_BY(mu) = nullptr;

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": ", text.status().message()));
  }
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, ": not a PEM file"));
  }
  return text;
}

// Adds the bearer token to every call of a channel.
class TokenInterceptor : public grpc::experimental::Interceptor {
 public:
  TokenInterceptor(grpc::experimental::ClientRpcInfo* info, std::string header)
      : header_(std::move(header)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", header_});
    }
    methods->Proceed();
  }

 private:
  const std::string header_;
};

class TokenInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenInterceptorFactory(std::string token) : header_("Bearer " + token) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo* info) override {
    return new TokenInterceptor(info, header_);
  }

 private:
  const std::string header_;
};

// Constant time in the token's length: no timing hint of how much of a guess was right.
bool SameToken(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % (b.empty() ? 1 : b.size())];
  return diff == 0 && !b.empty();
}

}  // namespace

absl::Status InstallSecurity(const SecurityOptions& o) {
  auto m = std::make_unique<SecurityMaterial>();
  if (o.cert_file.empty() != o.key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert and --tls_key go together");
  }
  if (!o.cert_file.empty()) {
    absl::StatusOr<std::string> cert = ReadPem(o.cert_file, "--tls_cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(o.key_file, "--tls_key");
    if (!key.ok()) return key.status();
    m->cert = *cert;
    m->key = *key;
  }
  if (!o.ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadPem(o.ca_file, "--tls_ca");
    if (!ca.ok()) return ca.status();
    m->ca = *ca;
  }
  m->token = o.token;
  m->cert_file = o.cert_file;
  m->key_file = o.key_file;
  m->ca_file = o.ca_file;
  absl::MutexLock lock(&mu);
  delete material;
  material = m.release();
  return absl::OkStatus();
}

const SecurityMaterial& Security() {
  static const SecurityMaterial* none = new SecurityMaterial();
  absl::MutexLock lock(&mu);
  return material != nullptr ? *material : *none;
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials() {
  const SecurityMaterial& m = Security();
  if (!m.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions o(
      m.ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                   : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = m.ca;
  o.pem_key_cert_pairs.push_back({m.key, m.cert});
  return grpc::SslServerCredentials(o);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials() {
  const SecurityMaterial& m = Security();
  if (!m.tls() && m.ca.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = m.ca;
  o.pem_private_key = m.key;
  o.pem_cert_chain = m.cert;
  return grpc::SslCredentials(o);
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                          const grpc::ChannelArguments& args) {
  const SecurityMaterial& m = Security();
  if (m.token.empty()) return grpc::CreateCustomChannel(target, ChannelCredentials(), args);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<TokenInterceptorFactory>(m.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(target, ChannelCredentials(), args,
                                                                 std::move(interceptors));
}

grpc::Status CheckBearer(const std::string& authorization) {
  const std::string& token = Security().token;
  if (token.empty()) return grpc::Status::OK;
  if (authorization.empty()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "this call needs a bearer token (--auth_token_file or SEMMOE_AUTH_TOKEN)");
  }
  if (!absl::StartsWith(authorization, "Bearer ") || !SameToken(authorization.substr(7), token)) {
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "the bearer token is not accepted");
  }
  return grpc::Status::OK;
}

grpc::Status CheckToken(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  return CheckBearer(it == metadata.end() ? std::string()
                                          : std::string(it->second.data(), it->second.size()));
}

absl::StatusOr<std::string> LoadToken(const std::string& file) {
  if (!file.empty()) {
    absl::StatusOr<std::string> text = ReadFile(file);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--auth_token_file ", file, ": ", text.status().message()));
    }
    std::string token(absl::StripAsciiWhitespace(*text));
    if (token.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--auth_token_file ", file, " is empty"));
    }
    return token;
  }
  const char* env = std::getenv("SEMMOE_AUTH_TOKEN");
  return env == nullptr ? std::string() : std::string(absl::StripAsciiWhitespace(env));
}

void WarnIfPlaintext(const std::string& host, const std::string& what) {
  if (Security().tls()) return;
  if (host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]" ||
      absl::StartsWith(host, "127.")) {
    return;
  }
  std::cerr << "WARNING: " << what << " listens on " << host
            << " without TLS: anyone who can reach it reads and sends its traffic in plaintext "
               "(--tls_cert/--tls_key, docs/SECURITY.md)\n";
}

}  // namespace semmoe
