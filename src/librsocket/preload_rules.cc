// Upstream's preload_config (the rsocket configuration directory's rules
// file, reference §14.4): which programs' sockets the preload takes. One
// rule per line, `program domain type protocol`, `*` for any, `#` for a
// comment; read once. The first rule that matches means "take it"; with
// no file or no valid rule every socket is taken. One behaviour change
// from upstream: SOCK_NONBLOCK/SOCK_CLOEXEC are masked off the type and
// protocol 0 is the type's own protocol before matching (upstream compared
// the flags, so such sockets never matched a STREAM rule).
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/log.h"
#include "core/base/rule_lines.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/preload_rules.h"
#include "librsocket/settings.h"

#define SS_EXPORT extern "C" __attribute__((visibility("default")))

extern char* program_invocation_short_name;

namespace {

constexpr int kAny = -1;
constexpr int kAfIb = 27;  // AF_IB, which older headers lack

struct Keyword {
  const char* word;
  int value;
};

constexpr Keyword kDomains[] = {{"INET", AF_INET},   {"AF_INET", AF_INET},   {"PF_INET", AF_INET},
                                {"INET6", AF_INET6}, {"AF_INET6", AF_INET6}, {"PF_INET6", AF_INET6},
                                {"IB", kAfIb},       {"AF_IB", kAfIb},       {"PF_IB", kAfIb}};
constexpr Keyword kTypes[] = {{"STREAM", SOCK_STREAM},
                              {"SOCK_STREAM", SOCK_STREAM},
                              {"DGRAM", SOCK_DGRAM},
                              {"SOCK_DGRAM", SOCK_DGRAM}};
constexpr Keyword kProtocols[] = {{"TCP", IPPROTO_TCP},
                                  {"IPPROTO_TCP", IPPROTO_TCP},
                                  {"UDP", IPPROTO_UDP},
                                  {"IPPROTO_UDP", IPPROTO_UDP}};

template <size_t N>
bool keyword(const char* w, const Keyword (&table)[N], int* out) {
  if (!strcmp(w, "*")) {
    *out = kAny;
    return true;
  }
  for (const Keyword& k : table)
    if (!strcasecmp(w, k.word)) {
      *out = k.value;
      return true;
    }
  return false;
}

bool matches(const ss::rs::PreloadRule& r, const char* prog, int domain, int type, int protocol) {
  if (r.program != "*" && strncasecmp(prog, r.program.c_str(), r.program.size())) return false;
  return (r.domain == kAny || r.domain == domain) && (r.type == kAny || r.type == type) &&
         (r.protocol == kAny || r.protocol == protocol);
}

// Never destroyed: sockets are made while exit runs the destructors.
std::vector<ss::rs::PreloadRule>& rules = *new std::vector<ss::rs::PreloadRule>;
std::once_flag loaded;

void load() {
  std::string path =
      ss::rs::settings::table.get_string(ss::rs::settings::Id::kConfDir) + "/preload_config";
  FILE* f = fopen(path.c_str(), "re");
  if (!f) return;
  rules = ss::rs::read_preload_rules(f, path.c_str());
  fclose(f);
}

}  // namespace

namespace ss::rs {

std::vector<PreloadRule> read_preload_rules(FILE* f, const char* path) {
  std::string text;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::vector<PreloadRule> out;
  config::for_each_rule_line(text, [&](const config::RuleLine& l) {
    PreloadRule r;
    // Words past the fourth are ignored, as upstream's sscanf did.
    if (l.count < 4 || !keyword(std::string(l.word[1]).c_str(), kDomains, &r.domain) ||
        !keyword(std::string(l.word[2]).c_str(), kTypes, &r.type) ||
        !keyword(std::string(l.word[3]).c_str(), kProtocols, &r.protocol)) {
      SS_WARN("librspreload: %s:%d: not a rule (program domain type protocol): skipped", path,
              l.number);
      return;
    }
    // Upstream's preload would make such sockets rsockets; ours leaves
    // every socket but TCP to the kernel (issue 14), so say the rule is
    // kept for matching only rather than let it look honoured.
    if (r.type == SOCK_DGRAM || r.protocol == IPPROTO_UDP || r.domain == kAfIb)
      SS_WARN(
          "librspreload: %s:%d: UDP and AF_IB sockets stay on the kernel under this "
          "preload (datagram rsockets: LD_PRELOAD=librsocket.so); rule kept for matching",
          path, l.number);
    r.program = std::string(l.word[0]);
    out.push_back(std::move(r));
  });
  return out;
}

bool preload_rules_take(const std::vector<PreloadRule>& rs, const char* prog, int domain, int type,
                        int protocol) {
  if (rs.empty()) return true;
  type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (protocol == 0)
    protocol = type == SOCK_STREAM ? IPPROTO_TCP : type == SOCK_DGRAM ? IPPROTO_UDP : 0;
  for (const PreloadRule& r : rs)
    if (matches(r, prog, domain, type, protocol)) return true;
  return false;
}

}  // namespace ss::rs

SS_EXPORT int ss_rspreload_takes(int domain, int type, int protocol) {
  try {
    std::call_once(loaded, load);
  } catch (...) {
    return 1;  // no rules could be read: as with no file
  }
  const char* prog = program_invocation_short_name ? program_invocation_short_name : "";
  return ss::rs::preload_rules_take(rules, prog, domain, type, protocol);
}
