#include "common/security_flags.h"

#include "absl/flags/flag.h"
#include "common/file.h"
#include "common/security.h"

ABSL_FLAG(std::string, tls_cert, "", "TLS certificate chain (PEM): serve TLS, present it to peers");
ABSL_FLAG(std::string, tls_key, "", "the TLS certificate's private key (PEM)");
ABSL_FLAG(std::string, tls_ca, "",
          "CA certificate(s) (PEM): verify peers against it; servers require client "
          "certificates it signed (mutual TLS)");
ABSL_FLAG(std::string, auth_token_file, "",
          "file holding the bearer token for mutations (else $SEMMOE_AUTH_TOKEN)");

namespace semmoe {

absl::Status InstallSecurityFromFlags() {
  absl::StatusOr<std::string> token = LoadToken(UserPath(absl::GetFlag(FLAGS_auth_token_file)));
  if (!token.ok()) return token.status();
  return InstallSecurity({.cert_file = UserPath(absl::GetFlag(FLAGS_tls_cert)),
                          .key_file = UserPath(absl::GetFlag(FLAGS_tls_key)),
                          .ca_file = UserPath(absl::GetFlag(FLAGS_tls_ca)),
                          .token = *token});
}

std::vector<std::string> SecurityFlagsForChild() {
  std::vector<std::string> out;
  const SecurityMaterial& m = Security();
  if (!m.cert_file.empty())
    out.insert(out.end(), {"--tls_cert", m.cert_file, "--tls_key", m.key_file});
  if (!m.ca_file.empty()) out.insert(out.end(), {"--tls_ca", m.ca_file});
  const std::string file = UserPath(absl::GetFlag(FLAGS_auth_token_file));
  if (!file.empty()) out.insert(out.end(), {"--auth_token_file", file});
  return out;
}

}  // namespace semmoe
