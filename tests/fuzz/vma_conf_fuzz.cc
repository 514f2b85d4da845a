// Fuzz target: libvma.conf (reference §8), parsed by RuleSet::parse as the
// file is, then each line again through add_rule (the Extra API's
// add_conf_rule), and the result asked about sockets of every role over
// IPv4, IPv6 and IPv4-mapped addresses, by several programs and ids.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <string_view>

#include "libvmacompat/rules.h"

namespace {

using ss::vma::Role;

sockaddr_in v4(const char* ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

sockaddr_in6 v6(const char* ip, int port) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ss::vma::RuleSet rules;
  rules.parse(text, "fuzz/libvma.conf");
  // Every line as a runtime rule too, into the parsed set.
  for (size_t at = 0; at <= text.size();) {
    const size_t nl = text.find('\n', at);
    const size_t end = nl == std::string_view::npos ? text.size() : nl;
    (void)rules.add_rule(text.substr(at, end - at));
    at = end + 1;
  }
  static const sockaddr_in a4[] = {v4("10.0.0.1", 53), v4("192.168.1.7", 5001),
                                   v4("239.1.1.1", 65535), v4("0.0.0.0", 0)};
  static const sockaddr_in6 a6[] = {v6("2001:db8::1", 53), v6("::ffff:10.0.0.1", 80),
                                    v6("fe80::1", 1), v6("::", 0)};
  const sockaddr* addrs[8];
  socklen_t lens[8];
  for (int i = 0; i < 4; ++i) {
    addrs[i] = reinterpret_cast<const sockaddr*>(&a4[i]), lens[i] = sizeof a4[i];
    addrs[4 + i] = reinterpret_cast<const sockaddr*>(&a6[i]), lens[4 + i] = sizeof a6[i];
  }
  static const char* const kPrograms[] = {"sockperf", "feed_a", ""};
  static const char* const kIds[] = {"VMA_DEFAULT_APPLICATION_ID", "*", "B1"};
  for (const char* prog : kPrograms)
    for (const char* id : kIds) {
      (void)rules.at_socket(IPPROTO_TCP, prog, id);
      (void)rules.at_socket(IPPROTO_UDP, prog, id);
      (void)rules.any_section_matches(prog, id);
      for (int r = 0; r < static_cast<int>(Role::kCount); ++r)
        for (int l = 0; l < 8; l += 3)
          for (int m = 0; m < 8; m += 2)
            (void)rules.decide(static_cast<Role>(r), prog, id, addrs[l], lens[l], addrs[m],
                               lens[m]);
      (void)rules.decide(Role::kTcpClient, prog, id, nullptr, 0, nullptr, 0);
    }
  return 0;
}
