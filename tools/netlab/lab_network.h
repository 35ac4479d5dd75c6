// The emulated hosts of the network lab: one Linux network namespace per host, joined by a
// bridge in the root namespace, each with its own address and a shaped link (tc tbf at
// `link_mbit` both ways; netem latency only where the kernel has netem). Processes run on a host
// through `ip netns exec` (Exec()). Traffic stays inside the lab's subnet: a host reaches the
// others over its link, and itself over its own loopback (the kernel delivers a host's own
// address locally, unshaped: the fast intra-node path).
//
// Needs root and iproute2. Everything it makes is named after this process's pid
// (smlab<pid>h<i>, sl<pid>br, sl<pid>h<i>); Create first removes what an earlier lab whose
// process no longer runs left behind (a kill -9), and the destructor removes the lab's own.
#ifndef SEMMOE_TOOLS_NETLAB_LAB_NETWORK_H_
#define SEMMOE_TOOLS_NETLAB_LAB_NETWORK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace semmoe::tools {

struct LabNetworkOptions {
  int hosts = 2;                    // Namespaces to make (host 0 is usually the front host).
  double link_mbit = 0;             // Each host's link rate, both ways; 0: not shaped.
  int latency_us = 0;               // One-way added latency (needs netem); 0: none.
  std::string subnet = "10.213.0";  // /24: the bridge is .254, host i is .(i + 1).
  std::string run_dir;              // Where command logs go.
};

class LabNetwork {
 public:
  // FailedPrecondition naming what is missing (root, iproute2, a subnet already in use).
  static absl::StatusOr<std::unique_ptr<LabNetwork>> Create(const LabNetworkOptions& options);
  ~LabNetwork();  // Deletes the namespaces, veths and bridge.

  int hosts() const { return options_.hosts; }
  std::string Address(int host) const;  // "10.213.0.(host + 1)".
  std::string Namespace(int host) const;
  std::string BridgeAddress() const;  // The root namespace's address in the lab.
  // argv prefix that runs a command on `host`: {ip, "netns", "exec", namespace}.
  std::vector<std::string> Exec(int host) const;
  // Takes a host's link down (both ends) or up again: a failed network.
  absl::Status SetLinkUp(int host, bool up);
  // One line for the operator: hosts, subnet, shaping, and what the kernel could not do.
  std::string Describe() const;

  // Runs argv (argv[0] a path) to completion; its output in the error if it fails.
  absl::Status Run(const std::vector<std::string>& argv) const;

 private:
  explicit LabNetwork(const LabNetworkOptions& options);
  absl::Status Build();
  absl::Status Shape(const std::vector<std::string>& where, const std::string& device);
  std::string RootVeth(int host) const;
  std::string Bridge() const;

  const LabNetworkOptions options_;
  std::string ip_, tc_, tag_;
  std::string notes_;  // What was asked but this kernel cannot do.
};

// Removes the veths, bridges and namespaces of labs whose process is gone. Returns how many.
int RemoveStaleLabs(const std::string& ip);

}  // namespace semmoe::tools

#endif  // SEMMOE_TOOLS_NETLAB_LAB_NETWORK_H_
