// Many connections: 1000 connected rsockets, one process per side (the
// server side is this binary re-executed, RS_CONFORMANCE_CHILD=
// scale_server), every descriptor non-blocking and driven by one rpoll
// loop per side. Every connection carries its own pattern both ways,
// verified. Each side raises RLIMIT_NOFILE to 3 descriptors per connection
// plus a margin (the kernel uses 1, upstream rsockets 2; a hard limit
// below that SKIPs, saying so), measures descriptors and memory (RSS,
// shmem, memfds and the size of their mappings) before and after, and the
// figures per connection are printed. Verbs is skipped: its connections
// hold device resources (a CQ channel, a CM channel) this budget does not
// cover. RS_SCALE_CONNECTIONS overrides the count (sanitizer runs).
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

constexpr int kDefaultConnections = 1000;
constexpr size_t kPayload = 4096;
constexpr int kMaxPerConnection = 3;
constexpr rlim_t kFdMargin = 64;   // stdio, gtest, the listener, service threads
constexpr int kStallSeconds = 60;  // no byte moved on any connection: a hang

int connections() {
  const char* s = getenv("RS_SCALE_CONNECTIONS");
  const int n = s ? atoi(s) : 0;
  return n > 0 ? n : kDefaultConnections;
}

rlim_t fd_budget() { return static_cast<rlim_t>(connections()) * kMaxPerConnection + kFdMargin; }

// Sets the soft descriptor limit to exactly the budget (so more than
// kMaxPerConnection per connection fails with EMFILE), and the hard limit
// to it where it is lower (CAP_SYS_RESOURCE may). false, *why set, when
// that fails.
bool set_fd_limit(rlimit* old, std::string* why) {
  if (getrlimit(RLIMIT_NOFILE, old) != 0) {
    *why = std::string("getrlimit: ") + strerror(errno);
    return false;
  }
  rlimit l = *old;
  l.rlim_cur = fd_budget();
  const bool raise_hard = old->rlim_max != RLIM_INFINITY && old->rlim_max < fd_budget();
  if (raise_hard) l.rlim_max = fd_budget();
  if (setrlimit(RLIMIT_NOFILE, &l) != 0) {
    *why = raise_hard ? "RLIMIT_NOFILE hard limit " + std::to_string(old->rlim_max) + " < " +
                            std::to_string(fd_budget()) + " needed for " +
                            std::to_string(connections()) + " connections"
                      : std::string("setrlimit: ") + strerror(errno);
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// What one process holds: descriptors and memory, in KiB.

struct Footprint {
  long fds = 0, memfds = 0;
  long rss_kb = 0, shmem_kb = 0, anon_kb = 0, vm_kb = 0, memfd_mapped_kb = 0;

  static long status_kb(const std::string& text, const char* key) {
    const size_t at = text.find(key);
    return at == std::string::npos ? -1 : atol(text.c_str() + at + strlen(key));
  }
  static Footprint take() {
    Footprint f;
    f.fds = count_fds();
    char link[256];
    for (int fd = 0; fd < static_cast<int>(fd_budget()) + 16; fd++) {
      const std::string p = "/proc/self/fd/" + std::to_string(fd);
      const ssize_t n = readlink(p.c_str(), link, sizeof link - 1);
      if (n > 0 && std::string(link, static_cast<size_t>(n)).rfind("/memfd:", 0) == 0) f.memfds++;
    }
    std::ifstream st("/proc/self/status");
    std::stringstream ss;
    ss << st.rdbuf();
    const std::string s = ss.str();
    f.rss_kb = status_kb(s, "VmRSS:");
    f.shmem_kb = status_kb(s, "RssShmem:");
    f.anon_kb = status_kb(s, "RssAnon:");
    f.vm_kb = status_kb(s, "VmSize:");
    for (const std::string& line : shared_mappings()) {
      unsigned long lo = 0, hi = 0;
      if (sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2)
        f.memfd_mapped_kb += long((hi - lo) / 1024);
    }
    return f;
  }
  // "fds memfds rss shmem anon vm mapped": what crosses the report pipe.
  std::string encode() const {
    char b[200];
    snprintf(b, sizeof b, "%ld %ld %ld %ld %ld %ld %ld", fds, memfds, rss_kb, shmem_kb, anon_kb,
             vm_kb, memfd_mapped_kb);
    return b;
  }
  bool decode(const char* s) {
    return sscanf(s, "%ld %ld %ld %ld %ld %ld %ld", &fds, &memfds, &rss_kb, &shmem_kb, &anon_kb,
                  &vm_kb, &memfd_mapped_kb) == 7;
  }
};

void print_per_connection(const char* prov, const char* side, const Footprint& a,
                          const Footprint& b, int n) {
  auto per = [n](long x, long y) { return double(y - x) / n; };
  printf(
      "[ %s ] %s end, per connection: %.2f descriptors (%.2f memfds), RSS %.1f KiB "
      "(shmem %.1f, anon %.1f), memfd mappings %.1f KiB, address space %.1f KiB\n",
      prov, side, per(a.fds, b.fds), per(a.memfds, b.memfds), per(a.rss_kb, b.rss_kb),
      per(a.shmem_kb, b.shmem_kb), per(a.anon_kb, b.anon_kb),
      per(a.memfd_mapped_kb, b.memfd_mapped_kb), per(a.vm_kb, b.vm_kb));
}

// ---------------------------------------------------------------------------
// One connection's exchange. A message is the connection's index, then
// kPayload pattern bytes seeded by it; the server answers with the seed
// index + connections(). Both sides are non-blocking state machines.

struct Conn {
  RFd fd;
  bool connecting = false;
  int64_t index = -1;  // the client knows it; the server learns it
  std::vector<uint8_t> out, in;
  size_t sent = 0, got = 0;
  bool failed = false;
  std::string why;

  bool done() const { return failed || (got == in.size() && sent == out.size() && !out.empty()); }
  void fail(const std::string& w) {
    failed = true;
    why = w;
  }
};

std::vector<uint8_t> message(uint32_t index, uint64_t seed) {
  std::vector<uint8_t> m(4 + kPayload);
  memcpy(m.data(), &index, 4);
  fill_pattern(m.data() + 4, kPayload, seed);
  return m;
}

// The message in c.in: its index (the expected one, if known) and pattern.
bool check_message(Conn& c, uint64_t seed_offset) {
  uint32_t index = 0;
  memcpy(&index, c.in.data(), 4);
  if (index >= static_cast<uint32_t>(connections()) || (c.index >= 0 && index != c.index)) {
    c.fail("wrong index " + std::to_string(index));
    return false;
  }
  c.index = index;
  if (check_pattern(c.in.data() + 4, kPayload, index + seed_offset) != SIZE_MAX) {
    c.fail("wrong bytes");
    return false;
  }
  return true;
}

// Moves what can move now; true when a byte moved. `server`: answers once
// the request is in; the client checks the answer.
bool step(Conn& c, short revents, bool server) {
  if (c.failed) return false;
  bool moved = false;
  if (c.connecting) {
    if (!(revents & (POLLOUT | POLLERR | POLLHUP))) return false;
    int err = 0;
    socklen_t len = sizeof err;
    if (rgetsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      c.fail(std::string("connect: ") + strerror(err));
      return false;
    }
    c.connecting = false;
    moved = true;
  }
  if (c.sent < c.out.size()) {
    const ssize_t n = rsend(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, 0);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
      moved = true;
    } else if (n < 0 && errno != EAGAIN) {
      c.fail(std::string("rsend: ") + strerror(errno));
      return moved;
    }
  }
  if (c.got < c.in.size()) {
    const ssize_t n = rrecv(c.fd, c.in.data() + c.got, c.in.size() - c.got, 0);
    if (n > 0) {
      c.got += static_cast<size_t>(n);
      moved = true;
      if (c.got == c.in.size() && check_message(c, server ? 0 : connections()) && server) {
        c.out = message(static_cast<uint32_t>(c.index), c.index + connections());
        step(c, POLLOUT, server);  // the answer may go at once
        return true;
      }
    } else if (n == 0) {
      c.fail("EOF");
    } else if (errno != EAGAIN) {
      c.fail(std::string("rrecv: ") + strerror(errno));
    }
  }
  return moved;
}

bool set_nonblocking(int fd) { return rfcntl(fd, F_SETFL, rfcntl(fd, F_GETFL) | O_NONBLOCK) == 0; }

// One rpoll loop over every connection (and the listener, if any, whose
// new connections join them) until `expected` connections are done;
// *error says why it stopped early (nothing moved for kStallSeconds).

void run_exchange(std::vector<Conn>* conns, int listener, int expected, bool server,
                  std::string* error) {
  using Clock = std::chrono::steady_clock;
  auto last_move = Clock::now();
  std::vector<pollfd> pfds;
  std::vector<size_t> which;
  auto finished = [&] {
    return static_cast<int>(conns->size()) == expected &&
           std::all_of(conns->begin(), conns->end(), [](const Conn& c) { return c.done(); });
  };
  while (!finished()) {
    pfds.clear();
    which.clear();
    if (listener >= 0 && static_cast<int>(conns->size()) < expected)
      pfds.push_back({listener, POLLIN, 0});
    for (size_t i = 0; i < conns->size(); i++) {
      const Conn& c = (*conns)[i];
      if (c.done()) continue;
      short ev = POLLIN;
      if (c.connecting || c.sent < c.out.size()) ev |= POLLOUT;
      pfds.push_back({c.fd, ev, 0});
      which.push_back(i);
    }
    const int n = rpoll(pfds.data(), pfds.size(), 1000);
    if (n < 0 && errno != EINTR) {
      *error = std::string("rpoll: ") + strerror(errno);
      return;
    }
    bool moved = false;
    size_t k = 0;
    if (listener >= 0 && !pfds.empty() && pfds[0].fd == listener) {
      if (pfds[0].revents & POLLIN) {
        for (;;) {
          RFd s(raccept(listener, nullptr, nullptr));
          if (s < 0) {
            if (errno != EAGAIN) {
              *error = std::string("raccept: ") + strerror(errno);
              return;
            }
            break;
          }
          if (!set_nonblocking(s)) {
            *error = std::string("rfcntl: ") + strerror(errno);
            return;
          }
          Conn c;
          c.fd = std::move(s);
          c.in.resize(4 + kPayload);
          conns->push_back(std::move(c));
          moved = true;
        }
      }
      k = 1;
    }
    for (size_t j = 0; k < pfds.size(); k++, j++)
      if (pfds[k].revents && step((*conns)[which[j]], pfds[k].revents, server)) moved = true;
    if (moved) {
      last_move = Clock::now();
    } else if (Clock::now() - last_move > std::chrono::seconds(kStallSeconds)) {
      *error = "stalled: nothing moved for " + std::to_string(kStallSeconds) + " s with " +
               std::to_string(conns->size()) + " connections";
      return;
    }
  }
}

// "<n> failed, first: <index> <why>", or "" when none failed.
std::string failures(const std::vector<Conn>& conns) {
  int n = 0;
  std::string first;
  for (const Conn& c : conns)
    if (c.failed && n++ == 0) first = std::to_string(c.index) + ": " + c.why;
  return n ? std::to_string(n) + " failed, first " + first : "";
}

// ---------------------------------------------------------------------------
// The server side: accepts every connection, checks its message, answers.
// Reports "R<port>" once listening, then "D<before> | <after> | <errors>".

void report(const std::string& s) {
  if (write(kChildNotifyFd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) _exit(3);
}

[[noreturn]] void run_server() {
  const char* prov = getenv("RS_SCALE_PROVIDER");
  rlimit old;
  std::string why;
  if (!prov) child_fail("set-up");
  if (!set_fd_limit(&old, &why)) {
    report("F" + why);
    _exit(1);
  }
  select_provider(prov);
  Listener l;
  make_listener(AF_INET, &l, {}, connections());
  if (l.fd < 0 || !set_nonblocking(l.fd)) child_fail("listen");
  const Footprint before = Footprint::take();
  report("R" + std::to_string(l.addr.port()));
  std::vector<Conn> conns;
  conns.reserve(static_cast<size_t>(connections()));
  std::string error;
  run_exchange(&conns, l.fd, connections(), true, &error);
  const Footprint after = Footprint::take();
  const std::string bad = error.empty() ? failures(conns) : error;
  report("D" + before.encode() + "|" + after.encode() + "|" + bad);
  for (;;) pause();  // the connections stay up until the test kills us
}

struct ChildMode {
  ChildMode() {
    const char* mode = getenv("RS_CONFORMANCE_CHILD");
    if (mode && strcmp(mode, "scale_server") == 0) run_server();
  }
} g_child_mode;

// ---------------------------------------------------------------------------
// The client side: this process.

class ScaleTest : public ConnTest {
 protected:
  void SetUp() override {
    if (strcmp(provider(), "verbs") == 0) GTEST_SKIP() << "verbs: device resources per connection";
    ConnTest::SetUp();
  }
};

// The kernel caps a listen backlog here; an shm connect past a full one is
// refused at once (TCP retries its SYN), and every connect is in flight.
int somaxconn() {
  std::ifstream in("/proc/sys/net/core/somaxconn");
  int v = 0;
  return in >> v ? v : 0;
}

// Where the test command runs as root with what it installs
// (SLIPSTREAM_TEST_STRICT=1, scripts/test-all.sh), a host limit that would
// skip the test fails it instead.
bool strict() {
  const char* s = getenv("SLIPSTREAM_TEST_STRICT");
  return s && strcmp(s, "1") == 0;
}

TEST_P(ScaleTest, ThousandConnectionsEachVerifiedBothWays) {
  const int n = connections();
  std::string why;
  if (strcmp(provider(), "shm") == 0 && somaxconn() < n)
    why = "net.core.somaxconn " + std::to_string(somaxconn()) + " < " + std::to_string(n) +
          " connects in flight at once (shm refuses past a full backlog)";
  rlimit old;
  if (why.empty()) set_fd_limit(&old, &why);
  if (!why.empty() && strict()) FAIL() << why << " (SLIPSTREAM_TEST_STRICT=1)";
  if (!why.empty()) GTEST_SKIP() << why;
  struct Restore {
    rlimit lim;
    ~Restore() { setrlimit(RLIMIT_NOFILE, &lim); }
  } restore{old};

  KFd notify;
  Reaper server;
  server.pid = spawn_child(
      "scale_server",
      {std::string("RS_SCALE_PROVIDER=") + provider(), "RS_SCALE_CONNECTIONS=" + std::to_string(n)},
      &notify);
  ASSERT_GT(server.pid, 0) << strerror(errno);
  std::string rep;
  ASSERT_TRUE(child_ready(notify, &rep)) << "server: " << rep;
  const Addr dst = loopback(AF_INET, static_cast<uint16_t>(atoi(rep.c_str() + 1)));

  Snapshot::settled();  // earlier tests' lingering closes are done: not counted
  const Footprint before = Footprint::take();
  std::vector<Conn> conns(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) {
    Conn& c = conns[i];
    c.index = i;
    c.fd = RFd(rsocket(AF_INET, SOCK_STREAM, 0));
    ASSERT_GE(c.fd, 0) << "connection " << i << ": rsocket: " << strerror(errno);
    ASSERT_TRUE(set_nonblocking(c.fd)) << strerror(errno);
    const int rc = rconnect(c.fd, dst.sa(), dst.len);
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS)
        << "connection " << i << " (" << count_fds() - before.fds << " descriptors for " << i
        << "): " << strerror(errno);
    c.connecting = rc != 0;
    c.out = message(static_cast<uint32_t>(i), static_cast<uint64_t>(i));
    c.in.resize(4 + kPayload);
  }
  std::string error;
  run_exchange(&conns, -1, n, false, &error);
  ASSERT_EQ("", error);
  EXPECT_EQ("", failures(conns)) << "connections whose answer was wrong or missing";
  const Footprint after = Footprint::take();

  child_ready(notify, &rep);  // its second report starts with 'D', not 'R'
  ASSERT_EQ('D', rep[0]) << rep;
  const size_t bar1 = rep.find('|'), bar2 = rep.find('|', bar1 + 1);
  ASSERT_NE(std::string::npos, bar2) << rep;
  Footprint s_before, s_after;
  ASSERT_TRUE(s_before.decode(rep.c_str() + 1) && s_after.decode(rep.c_str() + bar1 + 1)) << rep;
  EXPECT_EQ("", rep.substr(bar2 + 1)) << "the server's view";

  print_per_connection(provider(), "connecting", before, after, n);
  print_per_connection(provider(), "accepting", s_before, s_after, n);
  EXPECT_LE(after.fds - before.fds, kMaxPerConnection * n);
  EXPECT_LE(s_after.fds - s_before.fds, kMaxPerConnection * n);

  // Every descriptor comes back once the connections are gone (a closed
  // connection may linger a moment: the server is gone, so not for long).
  kill_and_reap(server.pid);
  server.pid = -1;
  conns.clear();
  long left = count_fds() - before.fds;
  for (int i = 0; i < 1000 && left > 0; i++, left = count_fds() - before.fds) usleep(10000);
  EXPECT_LE(left, 0) << "descriptors still open after every rclose";
}

INSTANTIATE_TEST_SUITE_P(Providers, ScaleTest,
                         ::testing::Values(ConnParam{"tcp", AF_INET}, ConnParam{"shm", AF_INET},
                                           ConnParam{"verbs", AF_INET}),
                         param_name);

}  // namespace
}  // namespace rsconf
