#include "librsocket/preload_ports.h"

#include <charconv>
#include <mutex>
#include <new>
#include <string>

#include "core/base/log.h"
#include "librsocket/preload_hooks.h"

#define SS_EXPORT extern "C" __attribute__((visibility("default")))

namespace ss::rs {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_port(std::string_view s, unsigned* port) {
  s = trim(s);
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *port);
  return ec == std::errc() && end == s.data() + s.size() && *port >= 1 && *port <= 65535;
}

}  // namespace

std::optional<PortSet> parse_port_list(std::string_view list) {
  PortSet set;
  if (trim(list).empty()) return set;
  for (;;) {
    const size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    const size_t dash = entry.find('-');
    unsigned lo, hi;
    if (!parse_port(entry.substr(0, dash), &lo)) return std::nullopt;
    hi = lo;
    if (dash != std::string_view::npos && (!parse_port(entry.substr(dash + 1), &hi) || hi < lo))
      return std::nullopt;
    for (unsigned p = lo; p <= hi; p++) set.set(p);
    if (comma == std::string_view::npos) return set;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace ss::rs

SS_EXPORT int ss_rspreload_kernel_port(unsigned port) {
  // Null: none listed. Never destroyed: sockets are made while exit runs
  // the destructors.
  static ss::rs::PortSet* ports = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    char buf[1024];
    if (ss_rspreload_setting_str(SS_RSPRELOAD_KERNEL_PORTS, buf, sizeof buf) <= 0) return;
    auto set = ss::rs::parse_port_list(buf);
    if (!set) {
      SS_WARN(
          "librspreload: SLIPSTREAM_PRELOAD_KERNEL_PORTS=\"%s\" is not a list of ports or "
          "ranges (22,8000-8099): using the default, no port",
          buf);
      return;
    }
    ports = new (std::nothrow) ss::rs::PortSet(*set);
  });
  return ports && port < 65536 && ports->test(port);
}
