#include "tools/netlab/lab_network.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "tools/cluster/process.h"

namespace semmoe::tools {
namespace {

std::string FindTool(const char* name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = absl::StrCat(dir, name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// Runs argv to completion; its combined output, or an error with it.
absl::StatusOr<std::string> Capture(const std::vector<std::string>& argv) {
  char path[] = "/tmp/semmoe-netlab-cmd-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return absl::UnavailableError("cannot create a temporary file");
  close(fd);
  absl::StatusOr<std::unique_ptr<Process>> p = Process::Spawn(argv, path);
  if (!p.ok()) {
    unlink(path);
    return p.status();
  }
  const bool ended = (*p)->WaitFor(absl::Seconds(30));
  absl::StatusOr<std::string> out = ReadFile(path);
  unlink(path);
  const std::string text = out.ok() ? *out : "";
  if (!ended || !(*p)->exited_ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("`", absl::StrJoin(argv, " "), "` failed: ", text));
  }
  return text;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

int RemoveStaleLabs(const std::string& ip) {
  int removed = 0;
  // Links first: the root ends of the veths (removing both ends at once, where a deleted
  // namespace's veths would go later, asynchronously) and the bridges.
  const std::regex link(R"(^\d+: (sl(\d+)(h\d+|br))[:@])"), netns(R"(^smlab(\d+)h\d+)");
  if (absl::StatusOr<std::string> links = Capture({ip, "-o", "link", "show"}); links.ok()) {
    for (absl::string_view line : absl::StrSplit(*links, '\n')) {
      std::cmatch m;
      const std::string l(line);
      if (std::regex_search(l.c_str(), m, link) && !Alive(std::stoi(m[2].str()))) {
        if (Capture({ip, "link", "del", m[1].str()}).ok()) ++removed;
      }
    }
  }
  if (absl::StatusOr<std::string> list = Capture({ip, "netns", "list"}); list.ok()) {
    for (absl::string_view line : absl::StrSplit(*list, '\n')) {
      std::cmatch m;
      const std::string l(line);
      if (std::regex_search(l.c_str(), m, netns) && !Alive(std::stoi(m[1].str()))) {
        const std::string name = l.substr(0, l.find(' '));
        if (Capture({ip, "netns", "del", name}).ok()) ++removed;
      }
    }
  }
  return removed;
}

LabNetwork::LabNetwork(const LabNetworkOptions& options)
    : options_(options), ip_(FindTool("ip")), tc_(FindTool("tc")), tag_(absl::StrCat(getpid())) {}

std::string LabNetwork::Address(int host) const {
  return absl::StrCat(options_.subnet, ".", host + 1);
}
std::string LabNetwork::Namespace(int host) const { return absl::StrCat("smlab", tag_, "h", host); }
std::string LabNetwork::BridgeAddress() const { return absl::StrCat(options_.subnet, ".254"); }
std::string LabNetwork::RootVeth(int host) const { return absl::StrCat("sl", tag_, "h", host); }
std::string LabNetwork::Bridge() const { return absl::StrCat("sl", tag_, "br"); }

std::vector<std::string> LabNetwork::Exec(int host) const {
  return {ip_, "netns", "exec", Namespace(host)};
}

absl::Status LabNetwork::Run(const std::vector<std::string>& argv) const {
  return Capture(argv).status();
}

absl::StatusOr<std::unique_ptr<LabNetwork>> LabNetwork::Create(const LabNetworkOptions& o) {
  if (o.hosts < 1 || o.hosts > 200 || o.link_mbit < 0 || o.latency_us < 0) {
    return absl::InvalidArgumentError("--hosts must be 1 to 200, --link_mbit and --latency_us ≥ 0");
  }
  if (geteuid() != 0) {
    return absl::FailedPreconditionError(
        "the network lab makes network namespaces and needs root (run it as root)");
  }
  std::unique_ptr<LabNetwork> lab(new LabNetwork(o));
  if (lab->ip_.empty() || lab->tc_.empty()) {
    return absl::FailedPreconditionError(
        "the network lab needs iproute2 (ip, tc): ./semmoe setup installs it");
  }
  const int stale = RemoveStaleLabs(lab->ip_);
  if (stale > 0) {
    std::fprintf(stderr, "netlab: removed %d namespaces/bridges left by an earlier lab\n", stale);
  }
  ASSIGN_OR_RETURN(std::string addresses, Capture({lab->ip_, "-4", "-o", "addr", "show"}));
  if (addresses.find(absl::StrCat(" ", o.subnet, ".")) != std::string::npos) {
    return absl::FailedPreconditionError(absl::StrCat(
        "subnet ", o.subnet, ".0/24 is already in use on this machine; pick another (--subnet)"));
  }
  if (absl::Status built = lab->Build(); !built.ok()) return built;  // ~LabNetwork cleans up.
  return lab;
}

absl::Status LabNetwork::Shape(const std::vector<std::string>& where, const std::string& device) {
  if (options_.link_mbit <= 0 && options_.latency_us <= 0) return absl::OkStatus();
  std::vector<std::string> tc = where;
  tc.insert(tc.end(), {"qdisc", "replace", "dev", device, "root"});
  const std::string rate = absl::StrCat(options_.link_mbit, "mbit");
  if (options_.latency_us > 0) {
    std::vector<std::string> netem = tc;
    netem.insert(netem.end(), {"netem", "delay", absl::StrCat(options_.latency_us, "us")});
    if (options_.link_mbit > 0) netem.insert(netem.end(), {"rate", rate});
    if (Run(netem).ok()) return absl::OkStatus();
    notes_ = absl::StrCat("no added latency: this kernel has no netem qdisc (--latency_us ",
                          options_.latency_us, " ignored)");
    if (options_.link_mbit <= 0) return absl::OkStatus();
  }
  // Token bucket with a small bucket: 200 µs worth of the rate (at least two 1514-byte frames),
  // up to 100 ms queued. A collective sends kilobytes per call; a bucket of milliseconds would
  // let every call through at the veth's speed and shape only the sustained rate. (tbf splits
  // GSO packets larger than the bucket.)
  const long burst = std::max(3028L, static_cast<long>(options_.link_mbit * 1e6 / 8 * 200e-6));
  tc.insert(tc.end(), {"tbf", "rate", rate, "burst", absl::StrCat(burst), "latency", "100ms"});
  return Run(tc);
}

absl::Status LabNetwork::Build() {
  RETURN_IF_ERROR(Run({ip_, "link", "add", Bridge(), "type", "bridge"}));
  RETURN_IF_ERROR(Run({ip_, "addr", "add", BridgeAddress() + "/24", "dev", Bridge()}));
  RETURN_IF_ERROR(Run({ip_, "link", "set", Bridge(), "up"}));
  for (int h = 0; h < options_.hosts; ++h) {
    const std::string ns = Namespace(h), veth = RootVeth(h);
    RETURN_IF_ERROR(Run({ip_, "netns", "add", ns}));
    RETURN_IF_ERROR(
        Run({ip_, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns}));
    RETURN_IF_ERROR(Run({ip_, "link", "set", veth, "master", Bridge(), "up"}));
    RETURN_IF_ERROR(Run({ip_, "-n", ns, "addr", "add", Address(h) + "/24", "dev", "eth0"}));
    RETURN_IF_ERROR(Run({ip_, "-n", ns, "link", "set", "eth0", "up"}));
    RETURN_IF_ERROR(Run({ip_, "-n", ns, "link", "set", "lo", "up"}));
    RETURN_IF_ERROR(Shape({tc_}, veth));
    RETURN_IF_ERROR(Shape({tc_, "-n", ns}, "eth0"));
  }
  return absl::OkStatus();
}

absl::Status LabNetwork::SetLinkUp(int host, bool up) {
  const char* state = up ? "up" : "down";
  RETURN_IF_ERROR(Run({ip_, "link", "set", RootVeth(host), state}));
  return Run({ip_, "-n", Namespace(host), "link", "set", "eth0", state});
}

std::string LabNetwork::Describe() const {
  std::string line = absl::StrCat(options_.hosts, " hosts on ", options_.subnet,
                                  ".0/24 (host i: ", options_.subnet,
                                  ".<i + 1>; this machine: ", BridgeAddress(), "), links ");
  absl::StrAppend(&line, options_.link_mbit > 0 ? absl::StrCat(options_.link_mbit, " Mbit/s")
                                                : std::string("unshaped"));
  if (options_.latency_us > 0 && notes_.empty()) {
    absl::StrAppend(&line, " + ", options_.latency_us, " µs");
  }
  if (!notes_.empty()) absl::StrAppend(&line, "; ", notes_);
  return line;
}

LabNetwork::~LabNetwork() {
  // Each veth pair goes first, by its root end: that removes both ends before returning, whereas
  // a deleted namespace's veths go later, in the kernel's asynchronous namespace clean-up.
  for (int h = 0; h < options_.hosts; ++h) (void)Run({ip_, "link", "del", RootVeth(h)});
  for (int h = 0; h < options_.hosts; ++h) (void)Run({ip_, "netns", "del", Namespace(h)});
  (void)Run({ip_, "link", "del", Bridge()});
}

}  // namespace semmoe::tools
