// Matching a socket against libvma.conf's rules (reference §8.2, upstream's
// match.cpp): sections in file order, program by fnmatch(3), id by
// equality or `*`; within the first matching section the first matching
// rule of the role wins. Addresses compare as IPv6 (an AF_INET address as
// its IPv4-mapped form), so one comparison serves IPv4 and IPv6 rules.
#include <fnmatch.h>

#include <cstring>

#include "libvmacompat/rules.h"

namespace ss::vma {
namespace {

// The address and port of an AF_INET/AF_INET6 sockaddr; false for others.
bool endpoint(const sockaddr* sa, socklen_t len, uint8_t addr[16], uint16_t* port) {
  if (!sa || len < static_cast<socklen_t>(sizeof(sa_family_t))) return false;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    memset(addr, 0, 10);
    addr[10] = addr[11] = 0xff;
    memcpy(addr + 12, &in->sin_addr, 4);
    *port = ntohs(in->sin_port);
    return true;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    memcpy(addr, &in6->sin6_addr, 16);
    *port = ntohs(in6->sin6_port);
    return true;
  }
  return false;
}

bool same_prefix(const uint8_t* a, const uint8_t* b, int bits) {
  const int bytes = bits / 8, rest = bits % 8;
  if (memcmp(a, b, bytes)) return false;
  if (!rest) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a[bytes] & mask) == (b[bytes] & mask);
}

// A side with a wildcard address and port matches anything, even no
// address; otherwise the socket's address must be there and fit.
bool side_matches(const AddrPort& ap, const sockaddr* sa, socklen_t len) {
  if (!ap.specific()) return true;
  uint8_t addr[16];
  uint16_t port;
  if (!endpoint(sa, len, addr, &port)) return false;
  if (!ap.any_port && (port < ap.port_lo || port > ap.port_hi)) return false;
  return ap.any_addr || same_prefix(ap.addr, addr, ap.prefix);
}

struct Sides {
  const sockaddr* first;
  socklen_t first_len;
  const sockaddr* second;
  socklen_t second_len;
};

// Which of the socket's addresses a role's rule compares first.
Sides sides(Role role, const sockaddr* local, socklen_t llen, const sockaddr* remote,
            socklen_t rlen) {
  switch (role) {
    case Role::kTcpServer:
    case Role::kUdpReceiver:
      return {local, llen, nullptr, 0};
    case Role::kUdpSender:
      return {remote, rlen, nullptr, 0};
    case Role::kTcpClient:
    case Role::kUdpConnect:
    case Role::kCount:
      break;
  }
  return {remote, rlen, local, llen};
}

bool rule_matches(const Rule& r, const Sides& s) {
  if (r.transport == RuleTransport::kSdp || r.transport == RuleTransport::kSa) return false;
  if (!side_matches(r.first, s.first, s.first_len)) return false;
  return !r.has_second || !s.second || side_matches(r.second, s.second, s.second_len);
}

bool section_matches(const Section& sec, const char* program, const char* app_id) {
  if (fnmatch(sec.program.c_str(), program ? program : "", 0) != 0) return false;
  return !strcmp(app_id, "*") || sec.id == "*" || sec.id == app_id;
}

Transport of(RuleTransport t) { return t == RuleTransport::kOs ? Transport::kOs : Transport::kVma; }

// A role's list as seen at socket(): kOs only from a wildcard `use os` rule
// with no specific vma rule before it; kVma from a wildcard vma rule with no
// specific os rule before it; otherwise on to the next rule, and kVma at the
// end.
Transport resolve_globally(const std::vector<Rule>& rules) {
  int specific_vma = 0, specific_os = 0;
  for (const Rule& r : rules) {
    const bool vma = r.transport == RuleTransport::kVma || r.transport == RuleTransport::kAny;
    const bool os = r.transport == RuleTransport::kOs;
    if (r.first.specific() || (r.has_second && r.second.specific())) {
      specific_vma += vma;
      specific_os += os;
    } else if (vma && !specific_os) {
      return Transport::kVma;
    } else if (os && !specific_vma) {
      return Transport::kOs;
    }
  }
  return Transport::kVma;
}

}  // namespace

const Section* RuleSet::first_match(const char* program, const char* app_id) const {
  for (const Section& sec : sections_)
    if (section_matches(sec, program, app_id)) return &sec;
  return nullptr;
}

bool RuleSet::any_section_matches(const char* program, const char* app_id) const {
  return first_match(program, app_id) != nullptr;
}

Transport RuleSet::decide(Role role, const char* program, const char* app_id, const sockaddr* local,
                          socklen_t local_len, const sockaddr* remote, socklen_t remote_len) const {
  if (role < Role::kTcpServer || role >= Role::kCount) return Transport::kVma;
  const Section* sec = first_match(program, app_id);
  if (!sec) return Transport::kVma;
  const Sides s = sides(role, local, local_len, remote, remote_len);
  for (const Rule& r : sec->rules[static_cast<int>(role)])
    if (rule_matches(r, s)) return of(r.transport);
  return Transport::kVma;  // later sections are not consulted
}

Transport RuleSet::at_socket(int protocol, const char* program, const char* app_id) const {
  const bool tcp = protocol == IPPROTO_TCP;
  const Role server = tcp ? Role::kTcpServer : Role::kUdpReceiver;
  const Role client = tcp ? Role::kTcpClient : Role::kUdpSender;
  for (const Section& sec : sections_) {
    if (!section_matches(sec, program, app_id)) continue;
    const Transport a = resolve_globally(sec.rules[static_cast<int>(server)]);
    if (a == resolve_globally(sec.rules[static_cast<int>(client)])) return a;
  }
  return Transport::kVma;
}

}  // namespace ss::vma
