// libvma.conf's rules (reference §8, libvma.conf(5)): which transport, the
// offload or the kernel, serves a socket in each role. A RuleSet is the
// parsed file plus rules added at run time; it is plain data, asked with
// the program's name and VMA_APPLICATION_ID passed in, so tests and the
// fuzz target drive it directly. The process's own set (conf_file.h) is
// built from VMA_CONFIG_FILE.
#pragma once
#include "core/base/api.h"
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/rule_lines.h"

namespace ss::vma {

// What a decision can be: the kernel's socket, or the offload.
enum class Transport { kOs, kVma };

// The roles of a rule and the call that asks (reference §8.1's table).
enum class Role { kTcpServer, kTcpClient, kUdpSender, kUdpReceiver, kUdpConnect, kCount };

// A rule's own transport word: `os`, `vma`, `*` (upstream's "ULP", served
// as vma), and the legacy `sdp` and `sa`, accepted but never matching, as
// upstream.
enum class RuleTransport { kOs, kVma, kAny, kSdp, kSa };

// One side of a rule: an address under a prefix (IPv4 rules are kept as
// IPv4-mapped IPv6, their prefix plus 96) and a port range; `*` for either
// matches anything.
struct AddrPort {
  bool any_addr = true;
  uint8_t addr[16] = {};
  int prefix = 128;  // bits of addr compared
  bool any_port = true;
  uint16_t port_lo = 0, port_hi = 0;
  bool specific() const { return !any_addr || !any_port; }
};

struct Rule {
  RuleTransport transport = RuleTransport::kVma;
  Role role = Role::kTcpServer;
  AddrPort first;  // local for tcp_server/udp_receiver, else remote
  bool has_second = false;
  AddrPort second;  // the local side of tcp_client/udp_connect
  int line = 0;     // where it was read (0: added at run time)
};

// An `application-id <program> <id>` section and its rules by role, in
// file order (runtime rules in front).
struct Section {
  std::string program;  // fnmatch(3) pattern against the program's short name
  std::string id;       // "*" or compared with VMA_APPLICATION_ID
  std::vector<Rule> rules[static_cast<int>(Role::kCount)];
};

class RuleSet {
 public:
  // Parses libvma.conf text; `origin` (the file's path) names it in the
  // warnings. A line that is no statement is warned about with its number
  // and skipped; the rest of the file still counts. Returns how many lines
  // were skipped.
  int parse(std::string_view text, const char* origin);

  // One `use ...` rule added at the front of the last section read (a new
  // `* *` section when there is none), as the Extra API's add_conf_rule.
  // False (nothing added, nothing logged) when it is not a rule.
  bool add_rule(std::string_view line);

  // The transport for a socket in `role`: local and remote are the
  // socket's addresses (either may be null when the role has none).
  // Sections are tried in file order; in the first whose program and id
  // match, the first matching rule of the role decides; no section or no
  // rule: kVma.
  Transport decide(Role role, const char* program, const char* app_id, const sockaddr* local,
                   socklen_t local_len, const sockaddr* remote, socklen_t remote_len) const;

  // At socket(): kOs only when, in a matching section, both the server-side
  // list (tcp_server / udp_receiver) and the client-side list (tcp_client /
  // udp_sender) of `protocol` (IPPROTO_TCP or IPPROTO_UDP) resolve to the
  // kernel by a wildcard `use os` rule with no earlier specific vma rule.
  Transport at_socket(int protocol, const char* program, const char* app_id) const;

  // Whether some section's program and id match (the loader warns when a
  // non-default VMA_APPLICATION_ID matches none).
  bool any_section_matches(const char* program, const char* app_id) const;

  bool empty() const { return sections_.empty(); }
  const std::vector<Section>& sections() const { return sections_; }

 private:
  // Reads one statement; "" when it was one, else why it is not.
  std::string statement(const config::RuleLine& l, bool runtime);
  Section& current();
  const Section* first_match(const char* program, const char* app_id) const;

  std::vector<Section> sections_;
  int current_ = -1;  // the section rules are added to
};

// Text of a role and transport as the file spells them.
const char* role_name(Role r);
SS_API const char* transport_name(Transport t);

}  // namespace ss::vma
