// The flags every binary takes for its transport security and token (common/security.h):
//   --tls_cert FILE --tls_key FILE   this process's TLS identity (PEM)
//   --tls_ca FILE                    the CA peers' certificates must chain to (mutual TLS)
//   --auth_token_file FILE           the bearer token (else $SEMMOE_AUTH_TOKEN); never a flag value
#ifndef SEMMOE_COMMON_SECURITY_FLAGS_H_
#define SEMMOE_COMMON_SECURITY_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace semmoe {

// Installs what the flags name. InvalidArgument naming the flag and file on a bad one.
absl::Status InstallSecurityFromFlags();

// The same flags again, for a child process (local_cluster passes them on); empty when unset.
std::vector<std::string> SecurityFlagsForChild();

}  // namespace semmoe

#endif  // SEMMOE_COMMON_SECURITY_FLAGS_H_
