// Fuzz target: what reaches a datagram rsocket: datagrams over the kernel's
// UDP (the 8-byte header, dgram_wire.h, checked by the receive path before
// any byte reaches the caller) and entries of its shared-memory receive
// ring (dgram_ring.h) written by a same-host sender that maps the ring, as
// every sender does, and then writes what it likes. One rsocket bound to
// [::] (v4-mapped and v6 sources) serves the whole run; the harness dials
// its rendezvous once, as a sender does, and keeps the ring.
//
// Input: records, each a tag byte then its bytes:
//   tag % 8 == 0  a UDP datagram: u8 n, n bytes (header included), sent
//                 from 127.0.0.1 (tag bit 3 clear) or ::1
//           == 1  a ring entry: pushed as a sender pushes it (u8 n payload
//                 bytes), then spoiled as the input says: u32 len, u8
//                 version, u16 port, 16 address bytes (u8 flags: bit 0
//                 len, bit 1 version and port, bit 2 address)
//           == 2  a u64 written at u8 offset of the ring header's owner
//                 fields (sleepers, overflow, closed); the slots' sequence
//                 numbers and the tail are left alone: a sender spoiling
//                 them stops the ring (a same-user peer may), and the run
//                 would fuzz nothing more
//           == 3  rrecvfrom of u8*16+1 bytes, MSG_DONTWAIT (tag bit 3:
//                 MSG_PEEK, bit 4: MSG_TRUNC)
//           == 4  rpoll for POLLIN, no wait
//           == 5  the header check alone: 8 header bytes, u16 length, u8
//                 source family
// At the end everything readable is read, so the next input starts empty.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

#include "core/base/fd_passing.h"
#include "librsocket/dgram_ring.h"
#include "librsocket/dgram_wire.h"
#include "tests/fuzz/stream_peer.h"

namespace {

using namespace ss::rs;

int g_r = -1;              // the datagram rsocket
int g_k4 = -1, g_k6 = -1;  // kernel UDP senders
sockaddr_in g_dst4{};
sockaddr_in6 g_dst6{};
void* g_ring = nullptr;
size_t g_ring_len = 0;
uint32_t g_slots = 0;

// Dials r's rendezvous (`slipstream/dgram/<addr>/<port>`, abstract) and
// maps the ring it hands over.
void take_ring(uint16_t port) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  const int n = snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "slipstream/dgram/::/%u", port);
  const int u = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (u < 0) return;
  if (::connect(u, reinterpret_cast<sockaddr*>(&un),
                static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)) < 0)
    return (void)::close(u);
  for (int i = 0; i < 100; i++) {
    pollfd p{g_r, POLLIN, 0};
    rpoll(&p, 1, 0);  // r answers the rendezvous
    pollfd q{u, POLLIN, 0};
    if (poll(&q, 1, 10) == 1) break;
  }
  char buf[8];
  iovec iov{buf, sizeof buf};
  int fds[2], got = 0;
  if (ss::recv_with_fds(u, &iov, 1, fds, 2, &got, MSG_DONTWAIT) > 0 && got == 2) {
    struct stat st {};
    if (fstat(fds[0], &st) == 0) {
      void* m = mmap(nullptr, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
      if (m != MAP_FAILED) {
        g_ring = m;
        g_ring_len = static_cast<size_t>(st.st_size);
        g_slots = dgram_ring_slots(g_ring_len);
      }
    }
  }
  for (int i = 0; i < got; i++) ::close(fds[i]);
  ::close(u);
}

void ring_entry(fuzz::Input& in) {
  const uint8_t* b;
  const size_t n = in.take(in.u8(), &b);
  const uint8_t flags = in.u8();
  const uint32_t len = in.u32();
  const uint8_t version = in.u8();
  const uint16_t port = static_cast<uint16_t>(in.u32());
  uint8_t addr[16];
  for (uint8_t& a : addr) a = in.u8();
  if (!g_ring || !g_slots) return;
  static const uint8_t lo4[4] = {127, 0, 0, 1};
  auto* h = static_cast<DgramRingHeader*>(g_ring);
  const uint64_t pos = h->tail.load();
  iovec v{const_cast<uint8_t*>(b), n};
  bool wake;
  if (!dgram_ring_push(g_ring, g_slots, lo4, 4, htons(9), &v, 1, n, &wake)) return;
  auto* slot =
      reinterpret_cast<DgramSlot*>(static_cast<uint8_t*>(g_ring) + sizeof(DgramRingHeader)) +
      (pos & (g_slots - 1));
  if (flags & 1) slot->len = len;
  if (flags & 2) slot->version = version, slot->port = port;
  if (flags & 4) memcpy(slot->addr, addr, sizeof addr);
}

void drain_all() {
  static uint8_t buf[4096];
  for (int i = 0; i < 10000; i++) {
    sockaddr_storage src;
    socklen_t len = sizeof src;
    if (rrecvfrom(g_r, buf, sizeof buf, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&src), &len) < 0)
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_r = rsocket(AF_INET6, SOCK_DGRAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_any;
  socklen_t len = sizeof a;
  if (g_r < 0 || rbind(g_r, reinterpret_cast<sockaddr*>(&a), len) ||
      rgetsockname(g_r, reinterpret_cast<sockaddr*>(&a), &len))
    abort();
  const uint16_t port = ntohs(a.sin6_port);
  g_dst4.sin_family = AF_INET;
  g_dst4.sin_port = htons(port);
  g_dst4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  g_dst6.sin6_family = AF_INET6;
  g_dst6.sin6_port = htons(port);
  g_dst6.sin6_addr = in6addr_loopback;
  g_k4 = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  g_k6 = ::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  take_ring(port);
  if (!g_ring)
    fprintf(stderr, "fuzz_dgram: no ring from the rendezvous: ring entries not fuzzed\n");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  static uint8_t buf[4096];
  while (!in.empty()) {
    const uint8_t tag = in.u8();
    switch (tag % 8) {
      case 0: {
        const uint8_t* b;
        const size_t n = in.take(in.u8(), &b);
        if (tag & 8)
          ::sendto(g_k6, b, n, 0, reinterpret_cast<sockaddr*>(&g_dst6), sizeof g_dst6);
        else
          ::sendto(g_k4, b, n, 0, reinterpret_cast<sockaddr*>(&g_dst4), sizeof g_dst4);
        break;
      }
      case 1:
        ring_entry(in);
        break;
      case 2: {
        const uint8_t off = in.u8();
        uint64_t v = static_cast<uint64_t>(in.u32()) << 32;
        v |= in.u32();
        if (g_ring && off >= offsetof(DgramRingHeader, sleepers) &&
            off + sizeof v <= sizeof(DgramRingHeader))
          memcpy(static_cast<uint8_t*>(g_ring) + off, &v, sizeof v);
        break;
      }
      case 3: {
        sockaddr_storage src;
        socklen_t len = sizeof src;
        const int flags = MSG_DONTWAIT | ((tag & 8) ? MSG_PEEK : 0) | ((tag & 16) ? MSG_TRUNC : 0);
        rrecvfrom(g_r, buf, in.u8() * 16u + 1, flags, reinterpret_cast<sockaddr*>(&src), &len);
        break;
      }
      case 4: {
        pollfd p{g_r, POLLIN, 0};
        rpoll(&p, 1, 0);
        break;
      }
      case 5: {
        DgramHeader h;
        uint8_t raw[sizeof h] = {};
        const uint8_t* b;
        const size_t got = in.take(sizeof raw, &b);
        memcpy(raw, b, got);
        memcpy(&h, raw, sizeof h);
        const size_t received = in.u8() << 8 | in.u8();
        sockaddr_storage src{};
        src.ss_family = static_cast<sa_family_t>(in.u8() % 3 == 0 ? AF_INET
                                                 : in.u8() % 2    ? AF_INET6
                                                                  : AF_UNIX);
        (void)dgram_check(h, received, reinterpret_cast<sockaddr*>(&src));
        break;
      }
      default:
        break;
    }
  }
  drain_all();
  return 0;
}
