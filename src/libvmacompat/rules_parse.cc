// libvma.conf's grammar (reference §8.1; upstream's config_parser.y and
// config_scanner.l), read line by line with the rules files' shared line
// reader:
//   application-id <program|*> <user-id|*>
//   use <os|vma|*|sdp|sa> <role> <addr>:<ports>[:<addr>:<ports>]
//   log [destination ystderr|syslog|yfile <name>] [min-level <n>]
// where <addr> is `*`, a.b.c.d or a.b.c.d/prefix (above 32 is taken as 32)
// and, Slipstream's extension, [IPv6] or [IPv6]/prefix; <ports> is `*`, N
// or N-M. Blanks inside the address:port part are ignored, as upstream's
// scanner skipped them. Keywords are case-sensitive, as upstream.
// Differences from upstream: a bad line is warned about (file and line) and
// skipped where upstream stopped reading the file; a port above 65535 or a
// range whose end is below its start is an error, not a rule that never
// matches; `log` statements are accepted and have no effect (upstream's own
// were "not fully supported").
#include <arpa/inet.h>

#include <cstring>
#include <string>

#include "core/base/log.h"
#include "libvmacompat/rules.h"

namespace ss::vma {
namespace {

constexpr const char* kRoleNames[] = {"tcp_server", "tcp_client", "udp_sender", "udp_receiver",
                                      "udp_connect"};

// A decimal number of at most 9 digits (ports, prefixes, levels).
bool number(std::string_view& s, long* out) {
  size_t n = 0;
  long v = 0;
  while (n < s.size() && n < 10 && s[n] >= '0' && s[n] <= '9') v = v * 10 + (s[n++] - '0');
  if (n == 0 || n == 10) return false;
  s.remove_prefix(n);
  *out = v;
  return true;
}

// `*`, a.b.c.d[/p] or [v6][/p]; consumes what it read.
std::string address(std::string_view& s, AddrPort* ap) {
  if (!s.empty() && s[0] == '*') {
    s.remove_prefix(1);
    ap->any_addr = true;
    return {};
  }
  std::string text;
  int max_prefix;
  bool v6 = !s.empty() && s[0] == '[';
  if (v6) {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) return "an IPv6 address without its closing ']'";
    text = std::string(s.substr(1, close - 1));
    s.remove_prefix(close + 1);
    if (inet_pton(AF_INET6, text.c_str(), ap->addr) != 1)
      return "'" + text + "' is not an IPv6 address";
    max_prefix = 128;
  } else {
    const size_t end = s.find_first_of("/:");
    text = std::string(s.substr(0, end));
    s.remove_prefix(end == std::string_view::npos ? s.size() : end);
    in_addr a4;
    if (text.empty()) return "an address (a.b.c.d, [IPv6] or *) is missing";
    if (inet_pton(AF_INET, text.c_str(), &a4) != 1)
      return "'" + text + "' is not an IPv4 address (a.b.c.d, [IPv6] or *)";
    memset(ap->addr, 0, 10);
    ap->addr[10] = ap->addr[11] = 0xff;
    memcpy(ap->addr + 12, &a4, 4);
    max_prefix = 32;
  }
  long prefix = max_prefix;
  if (!s.empty() && s[0] == '/') {
    s.remove_prefix(1);
    if (!number(s, &prefix)) return "a prefix length after '/' is missing";
    if (prefix > max_prefix) prefix = max_prefix;  // as upstream: clamped
  }
  ap->any_addr = false;
  ap->prefix = static_cast<int>(prefix) + (v6 ? 0 : 96);
  return {};
}

// `*`, N or N-M.
std::string ports(std::string_view& s, AddrPort* ap) {
  if (!s.empty() && s[0] == '*') {
    s.remove_prefix(1);
    ap->any_port = true;
    return {};
  }
  long lo = 0, hi = 0;
  if (!number(s, &lo)) return "a port (N, N-M or *) is missing";
  hi = lo;
  if (!s.empty() && s[0] == '-') {
    s.remove_prefix(1);
    if (!number(s, &hi)) return "a port range's end is missing";
  }
  if (lo > 65535 || hi > 65535) return "a port above 65535";
  if (hi < lo) return "a port range whose end is below its start";
  ap->any_port = false;
  ap->port_lo = static_cast<uint16_t>(lo);
  ap->port_hi = static_cast<uint16_t>(hi);
  return {};
}

// <addr>:<ports>[:<addr>:<ports>], blanks removed.
std::string tuple(std::string_view text, Rule* r) {
  std::string compact;
  for (char c : text)
    if (!config::rule_space(c)) compact += c;
  std::string_view s = compact;
  std::string err = address(s, &r->first);
  if (err.empty() && (s.empty() || s[0] != ':')) err = "':' and a port after the address";
  if (err.empty()) s.remove_prefix(1), err = ports(s, &r->first);
  if (err.empty() && !s.empty() && s[0] == ':') {
    s.remove_prefix(1);
    r->has_second = true;
    err = address(s, &r->second);
    if (err.empty() && (s.empty() || s[0] != ':')) err = "':' and a port after the address";
    if (err.empty()) s.remove_prefix(1), err = ports(s, &r->second);
  }
  if (err.empty() && !s.empty()) err = "'" + std::string(s) + "' after the address:port";
  return err;
}

bool transport(std::string_view w, RuleTransport* t) {
  static constexpr struct {
    const char* word;
    RuleTransport t;
  } kWords[] = {{"os", RuleTransport::kOs},
                {"vma", RuleTransport::kVma},
                {"*", RuleTransport::kAny},
                {"sdp", RuleTransport::kSdp},
                {"sa", RuleTransport::kSa}};
  for (const auto& k : kWords)
    if (w == k.word) return *t = k.t, true;
  return false;
}

bool role(std::string_view w, Role* r) {
  for (int i = 0; i < static_cast<int>(Role::kCount); ++i)
    if (w == kRoleNames[i]) return *r = static_cast<Role>(i), true;
  return false;
}

// log [destination ystderr|syslog|yfile <name>] [min-level <n>]: checked,
// then ignored.
std::string log_options(const config::RuleLine& l) {
  for (int i = 1; i < l.count; ++i) {
    if (l.word[i] == "destination" && i + 1 < l.count) {
      const std::string_view d = l.word[++i];
      if (d == "ystderr" || d == "syslog") continue;
      if (d == "yfile" && i + 1 < l.count) {
        ++i;
        continue;
      }
      return "log destination is ystderr, syslog or yfile <name>";
    }
    long level;
    std::string_view n = i + 1 < l.count ? l.word[i + 1] : std::string_view{};
    if (l.word[i] == "min-level" && number(n, &level) && n.empty()) {
      ++i;
      continue;
    }
    return "log takes [destination ystderr|syslog|yfile <name>] [min-level <n>]";
  }
  return {};
}

}  // namespace

const char* role_name(Role r) {
  const int i = static_cast<int>(r);
  return i >= 0 && i < static_cast<int>(Role::kCount) ? kRoleNames[i] : "?";
}

const char* transport_name(Transport t) { return t == Transport::kOs ? "os" : "vma"; }

Section& RuleSet::current() {
  if (current_ < 0) {  // a rule before any application-id: upstream's `* *`
    for (size_t i = 0; i < sections_.size(); ++i)
      if (sections_[i].program == "*" && sections_[i].id == "*") current_ = static_cast<int>(i);
    if (current_ < 0) {
      sections_.push_back(Section{"*", "*", {}});
      current_ = static_cast<int>(sections_.size()) - 1;
    }
  }
  return sections_[current_];
}

std::string RuleSet::statement(const config::RuleLine& l, bool runtime) {
  if (l.too_many) return "too many words";
  const std::string_view w = l.word[0];
  if (w == "use") {
    Rule r;
    if (l.count < 4) return "use takes <transport> <role> <address>:<port>";
    if (!transport(l.word[1], &r.transport))
      return "'" + std::string(l.word[1]) + "' is not a transport (os, vma, *, sdp, sa)";
    if (!role(l.word[2], &r.role))
      return "'" + std::string(l.word[2]) +
             "' is not a role (tcp_server, tcp_client, udp_sender, udp_receiver, udp_connect)";
    if (std::string err = tuple(l.rest(3), &r); !err.empty()) return err;
    r.line = runtime ? 0 : l.number;
    auto& list = current().rules[static_cast<int>(r.role)];
    list.insert(runtime ? list.begin() : list.end(), r);
    return {};
  }
  if (runtime) return "not a use rule";
  if (w == "application-id") {
    if (l.count != 3) return "application-id takes <program|*> <user-id|*>";
    const std::string program(l.word[1]), id(l.word[2]);
    for (size_t i = 0; i < sections_.size(); ++i)
      if (sections_[i].program == program && sections_[i].id == id)
        return current_ = static_cast<int>(i), std::string{};
    sections_.push_back(Section{program, id, {}});
    current_ = static_cast<int>(sections_.size()) - 1;
    return {};
  }
  if (w == "log") return log_options(l);
  return "'" + std::string(w) + "' is not a statement (application-id, use, log)";
}

int RuleSet::parse(std::string_view text, const char* origin) {
  int skipped = 0;
  config::for_each_rule_line(text, [&](const config::RuleLine& l) {
    const std::string err = statement(l, false);
    if (err.empty()) return;
    ++skipped;
    SS_WARN("libvma.conf: %s:%d: %s; line skipped", origin, l.number, err.c_str());
  });
  return skipped;
}

bool RuleSet::add_rule(std::string_view line) {
  int lines = 0;
  config::for_each_rule_line(line, [&](const config::RuleLine&) { ++lines; });
  if (lines != 1) return false;  // one rule, nothing else
  bool ok = false;
  config::for_each_rule_line(line,
                             [&](const config::RuleLine& l) { ok = statement(l, true).empty(); });
  return ok;
}

}  // namespace ss::vma
