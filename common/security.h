// The process's transport security and API token, for every gRPC server and channel it makes:
//   - a TLS identity (certificate chain + private key, PEM): servers then serve TLS, and clients
//     present it;
//   - a CA (PEM): clients verify servers against it, and servers require client certificates it
//     signed (mutual TLS between components);
//   - a bearer token: clients send it on every call ("authorization: Bearer …"); the planner's
//     mutations and the engines' Rollout check it (CheckToken).
// Installed once from flags in main() (security_flags.h) before any server or channel exists.
// The default is none of them: plaintext, no token — local use on 127.0.0.1.
//
// Thread-safe after InstallSecurity.
#ifndef SEMMOE_COMMON_SECURITY_H_
#define SEMMOE_COMMON_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace semmoe {

struct SecurityOptions {
  std::string cert_file, key_file;  // PEM; both or neither.
  std::string ca_file;              // PEM.
  std::string token;                // "" : none.
};

// The files' contents, as installed.
struct SecurityMaterial {
  std::string cert, key, ca, token;
  std::string cert_file, key_file, ca_file;
  bool tls() const { return !cert.empty(); }
};

// Reads and checks the files (InvalidArgument naming the file: unreadable, not PEM, or a key
// without a certificate) and installs them for the process.
absl::Status InstallSecurity(const SecurityOptions& options);
// What is installed (empty: plaintext, no token).
const SecurityMaterial& Security();

// For servers: TLS with the identity (and, with a CA, required and verified client
// certificates), else plaintext.
std::shared_ptr<grpc::ServerCredentials> ServerCredentials();
// For clients: TLS when a CA or an identity is installed (the server verified against the CA,
// or the system's roots), else plaintext.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials();
// A channel to `target` with ChannelCredentials() and, when a token is installed, the token
// on every call.
std::shared_ptr<grpc::Channel> NewChannel(const std::string& target,
                                          const grpc::ChannelArguments& args = {});

// For mutations: OK when no token is installed or the call carries it; UNAUTHENTICATED when it
// carries none, PERMISSION_DENIED when it carries another.
grpc::Status CheckToken(const grpc::ServerContextBase& context);
// The same check for an "Authorization" header value (HTTP).
grpc::Status CheckBearer(const std::string& authorization);

// The token from `file` (surrounding whitespace trimmed; empty file: error), else from the
// environment variable SEMMOE_AUTH_TOKEN, else "". Never from a command-line argument.
absl::StatusOr<std::string> LoadToken(const std::string& file);

// Prints a warning to stderr when `host` is not a loopback address and no TLS is installed.
void WarnIfPlaintext(const std::string& host, const std::string& what);

}  // namespace semmoe

#endif  // SEMMOE_COMMON_SECURITY_H_
