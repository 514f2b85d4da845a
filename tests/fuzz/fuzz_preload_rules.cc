// Fuzz target: preload_config, the preload's rules file (reference §14.4),
// read by the preload's own reader (read_preload_rules: line by line, as
// from the file) and then asked about sockets of every kind.
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include <cstdint>

#include "librsocket/preload_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!size) return 0;  // fmemopen takes no empty buffer; no file is no rules
  FILE* f = fmemopen(const_cast<uint8_t*>(data), size, "r");
  if (!f) return 0;
  const auto rules = ss::rs::read_preload_rules(f, "fuzz/preload_config");
  fclose(f);
  static const int kDomains[] = {AF_INET, AF_INET6, 27 /* AF_IB */, AF_UNIX};
  static const int kTypes[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_STREAM | SOCK_NONBLOCK,
                               SOCK_DGRAM | SOCK_CLOEXEC, SOCK_RAW};
  static const int kProtocols[] = {0, IPPROTO_TCP, IPPROTO_UDP};
  static const char* const kPrograms[] = {"rstream", "RSTREAM-client", "", "a"};
  for (const char* prog : kPrograms)
    for (int d : kDomains)
      for (int t : kTypes)
        for (int p : kProtocols) (void)ss::rs::preload_rules_take(rules, prog, d, t, p);
  return 0;
}
