// Out of descriptors, on every provider, in helper children whose
// RLIMIT_NOFILE is used up: the call that needed a descriptor fails with
// EMFILE as its socket call would (raccept; rconnect, never ENOMEM), no
// thread spins meanwhile (the child's CPU time over a window), and the
// peer is not stranded (its call returns within a bound). Out of memory
// (a child's RLIMIT_AS used up by connections): ENOMEM, and recovery.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/sanitizer.h"
#include "tests/librsocket/conformance.h"

namespace rsconf {
namespace {

// ---------------------------------------------------------------------------
// Helper children (re-executed binary, see conformance.h)

// Takes every descriptor left under a lowered RLIMIT_NOFILE; give(n) hands n back.
class Exhaustion {
 public:
  Exhaustion() {
    rlimit rl{256, 256};
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0) child_fail("setrlimit");
    for (;;) {
      int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) break;
      held_.push_back(fd);
    }
    if (errno != EMFILE) child_fail("filling the descriptor table");
  }
  ~Exhaustion() { give(held_.size()); }
  void give(size_t n) {
    for (; n && !held_.empty(); n--) {
      close(held_.back());
      held_.pop_back();
    }
  }

 private:
  std::vector<int> held_;
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU share of this whole process (every thread) while `fn` runs.
template <typename Fn>
double cpu_share_during(Fn&& fn) {
  const double c0 = cpu_seconds(), w0 = seconds_now();
  fn();
  const double wall = seconds_now() - w0;
  return wall > 0 ? (cpu_seconds() - c0) / wall : 0;
}

void report(const std::string& s) {
  std::string r = "R" + s;
  if (write(kChildNotifyFd, r.data(), r.size()) != static_cast<ssize_t>(r.size())) _exit(3);
}

int child_family() {
  const char* prov = getenv("RS_CONFORMANCE_PROVIDER");
  const char* fam = getenv("RS_CONFORMANCE_FAMILY");
  if (!prov || !fam) child_fail("environment");
  select_provider(prov);
  return atoi(fam);
}

int child_listener(int family) {
  int l = rsocket(family, SOCK_STREAM, 0);
  Addr a = loopback(family);
  if (l < 0 || rbind(l, a.sa(), a.len) < 0 || rlisten(l, 16) < 0) child_fail("listener");
  a.len = sizeof a.ss;
  if (rgetsockname(l, a.sa(), &a.len) < 0) child_fail("rgetsockname");
  return l;
}

uint16_t listener_port(int l) {
  Addr a;
  a.len = sizeof a.ss;
  rgetsockname(l, a.sa(), &a.len);
  return a.port();
}

// A listener in a process out of descriptors, a peer connecting: no spin
// while the connection waits; raccept says EMFILE (non-blocking and
// blocking); once descriptors are freed, raccept takes the connection.
// Reports "R<port>", then "R<cpu share> <errno> <errno> <accepted>".
void run_starved_listener() {
  int l = child_listener(child_family());
  uint16_t port = listener_port(l);
  Exhaustion ex;
  report(std::to_string(port));
  pollfd p{l, POLLIN, 0};
  rpoll(&p, 1, 10000);  // the peer's connection is there (raccept has an answer)
  double share = cpu_share_during([] { std::this_thread::sleep_for(std::chrono::seconds(1)); });
  rfcntl(l, F_SETFL, O_NONBLOCK);
  int e_nonblock = raccept(l, nullptr, nullptr) < 0 ? errno : 0;
  rfcntl(l, F_SETFL, 0);
  alarm(10);  // a raccept deaf to the shortage ends the child (no report: a failure)
  int e_block = raccept(l, nullptr, nullptr) < 0 ? errno : 0;
  ex.give(64);
  int s = raccept(l, nullptr, nullptr);
  alarm(0);
  std::ostringstream o;
  o << share << ' ' << e_nonblock << ' ' << e_block << ' ' << (s >= 0);
  report(o.str());
  for (;;) pause();
}

// An accepted connection whose blocking rrecv starts with no descriptor
// left (none for its wake-up): it sleeps without spinning and gets the
// byte the parent sends.
// Reports "R<port>", "RW" (about to block), "R<cpu share> <rrecv's result>".
void run_starved_reader() {
  int l = child_listener(child_family());
  report(std::to_string(listener_port(l)));
  int s = raccept(l, nullptr, nullptr);
  if (s < 0) child_fail("raccept");
  // The parent's first byte, taken without sleeping (a sleep would make the
  // wake-up descriptor now): the connection is complete (on shm the peer's
  // memory is mapped: a message comes after the memfds sent before it)
  // before the descriptors run out.
  char b = 0;
  for (int i = 0; i < 10000 && rrecv(s, &b, 1, MSG_DONTWAIT) != 1; i++) usleep(1000);
  if (b != 'h') child_fail("the first byte");
  Exhaustion ex;
  report("W");
  ssize_t n = 0;
  alarm(20);
  double share = cpu_share_during([&] { n = rrecv(s, &b, 1, 0); });
  alarm(0);
  report(std::to_string(share) + " " + std::to_string(n > 0 ? b : -errno));
  for (;;) pause();
}

// rconnect with 0, 1, ... 24 descriptors left: each fails with EMFILE or
// connects (never ENOMEM, never a hang); afterwards nothing spins.
// Reports "R<cpu share> <errno or 0>...".
void run_starved_connector() {
  int family = child_family();
  Addr a = loopback(family, static_cast<uint16_t>(atoi(getenv("RS_CONFORMANCE_PORT"))));
  std::ostringstream o;
  std::vector<int> results;
  alarm(60);
  for (int left = 0; left <= 24; left++) {
    int c = rsocket(family, SOCK_STREAM, 0);
    if (c < 0) child_fail("rsocket");
    {
      Exhaustion ex;
      ex.give(static_cast<size_t>(left));
      results.push_back(rconnect(c, a.sa(), a.len) < 0 ? errno : 0);
    }
    rclose(c);
  }
  alarm(0);
  o << cpu_share_during([] { std::this_thread::sleep_for(std::chrono::seconds(1)); });
  for (int r : results) o << ' ' << r;
  report(o.str());
  for (;;) pause();
}

// Out of memory: the process's address space (RLIMIT_AS) capped at what
// it maps now plus kAddressBudgetMiB, rconnect (and 1 byte sent) until a
// call fails. It must fail with ENOMEM or ENOBUFS (a buffer's memfd
// mapping, a malloc: the errno of a socket call out of memory), never
// crash; once half the connections are closed a new one works again.
// Reports "R<connections made> <errno> <the retry's errno or 0>".
constexpr long kAddressBudgetMiB = 48;

long vm_size_kb() {
  FILE* f = fopen("/proc/self/status", "re");
  long kb = -1;
  char line[128];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  return kb;
}

int connect_one(const Addr& a) {
  int c = rsocket(a.family(), SOCK_STREAM, 0);
  if (c < 0) return -errno;
  if (rconnect(c, a.sa(), a.len) < 0 || rsend(c, "m", 1, 0) != 1) {
    const int e = errno;
    rclose(c);
    return -e;
  }
  return c;
}

void run_starved_memory() {
  const int family = child_family();
  const Addr a = loopback(family, static_cast<uint16_t>(atoi(getenv("RS_CONFORMANCE_PORT"))));
  std::vector<int> conns;
  conns.reserve(4096);
  const long kb = vm_size_kb();
  if (kb <= 0) child_fail("VmSize");
  const rlim_t cap = static_cast<rlim_t>(kb + kAddressBudgetMiB * 1024) * 1024;
  rlimit rl{cap, cap};
  if (setrlimit(RLIMIT_AS, &rl) < 0) child_fail("setrlimit(RLIMIT_AS)");
  alarm(60);
  int err = 0;
  while (conns.size() < conns.capacity()) {
    const int c = connect_one(a);
    if (c < 0) {
      err = -c;
      break;
    }
    conns.push_back(c);
  }
  const size_t made = conns.size();
  for (size_t i = 0; i < made / 2; i++) {
    rclose(conns.back());
    conns.pop_back();
  }
  const int c = connect_one(a);
  alarm(0);
  char r[64];
  snprintf(r, sizeof r, "%zu %d %d", made, err, c < 0 ? -c : 0);
  report(r);
  for (;;) pause();
}

struct ChildMode {
  ChildMode() {
    const char* mode = getenv("RS_CONFORMANCE_CHILD");
    if (!mode) return;
    if (strcmp(mode, "starved_memory") == 0) run_starved_memory();
    if (strcmp(mode, "starved_listener") == 0) run_starved_listener();
    if (strcmp(mode, "starved_reader") == 0) run_starved_reader();
    if (strcmp(mode, "starved_connector") == 0) run_starved_connector();
  }
} g_child_mode;

// ---------------------------------------------------------------------------
// The tests

// A thread spinning shows as a share near 1; a generous bound for a busy host.
constexpr double kMaxCpuShare = 0.2;

class LimitsTest : public ConnTest {
 protected:
  void SetUp() override {
#ifdef __SANITIZE_ADDRESS__
    // The project's sanitizer build (ASan + UBSan): UBSan's vptr check makes
    // a pipe to see whether it may read an object (gcc 12's libsanitizer),
    // so with no descriptor left it reports every virtual call as a bad type
    // and aborts. These children cannot run under it.
    GTEST_SKIP() << "UBSan's vptr check needs a free descriptor (gcc 12 libsanitizer)";
#endif
    ConnTest::SetUp();
  }
  pid_t spawn(const char* mode, KFd* notify, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> env = {std::string("RS_CONFORMANCE_PROVIDER=") + provider(),
                                    "RS_CONFORMANCE_FAMILY=" + std::to_string(family()),
                                    "SLIPSTREAM_RS_CLOSE_LINGER=0"};
    env.insert(env.end(), extra.begin(), extra.end());
    return spawn_child(mode, env, notify);
  }
  // Starts a child whose first report is its listener's port; its address.
  void spawn_listening(const char* mode, KFd* notify, Reaper* child, Addr* a) {
    child->pid = spawn(mode, notify);
    ASSERT_GT(child->pid, 0);
    std::string r;
    ASSERT_TRUE(child_ready(*notify, &r)) << "child: " << r;
    *a = loopback(family(), static_cast<uint16_t>(atoi(r.c_str() + 1)));
  }
};

TEST_P(LimitsTest, ListenerOutOfDescriptorsReportsEmfileWithoutSpinning) {
  KFd notify;
  Reaper child;
  Addr a;
  ASSERT_NO_FATAL_FAILURE(spawn_listening("starved_listener", &notify, &child, &a));
  std::string r;
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  int rc = -1, err = 0;
  std::thread connector([&] {
    rc = rconnect(c, a.sa(), a.len);
    err = errno;
  });
  bool reported = child_ready(notify, &r);
  bool returned = run_with_timeout([&] { connector.join(); }, 20,
                                   [&] {
                                     kill_and_reap(child.pid);
                                     child.pid = -1;
                                   });
  ASSERT_TRUE(reported) << "child: " << r;
  std::istringstream in(r.substr(1));
  double share = 1;
  int e_nonblock = 0, e_block = 0, accepted = 0;
  in >> share >> e_nonblock >> e_block >> accepted;
  EXPECT_LT(share, kMaxCpuShare) << "the listening process spun while out of descriptors";
  EXPECT_EQ(EMFILE, e_nonblock) << strerror(e_nonblock);
  EXPECT_EQ(EMFILE, e_block) << strerror(e_block);
  EXPECT_EQ(1, accepted) << "raccept failed once descriptors were freed";
  EXPECT_TRUE(returned) << "the connecting peer was stranded";
  EXPECT_EQ(0, rc) << strerror(err);
}

TEST_P(LimitsTest, BlockingCallWithoutSpareDescriptorSleeps) {
  KFd notify;
  Reaper child;
  Addr a;
  ASSERT_NO_FATAL_FAILURE(spawn_listening("starved_reader", &notify, &child, &a));
  std::string r;
  RFd c(rsocket(family(), SOCK_STREAM, 0));
  ASSERT_EQ(0, rconnect(c, a.sa(), a.len)) << strerror(errno);
  ASSERT_EQ(1, rsend(c, "h", 1, 0));
  ASSERT_TRUE(child_ready(notify, &r)) << "child: " << r;
  ASSERT_EQ("RW", r);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(1, rsend(c, "k", 1, 0));
  ASSERT_TRUE(child_ready(notify, &r)) << "child: " << r;
  std::istringstream in(r.substr(1));
  double share = 1;
  int got = 0;
  in >> share >> got;
  EXPECT_LT(share, kMaxCpuShare) << "rrecv spun without a descriptor for its wake-up";
  EXPECT_EQ('k', got) << "rrecv: " << strerror(-got);
}

TEST_P(LimitsTest, RconnectOutOfDescriptorsFailsWithEmfile) {
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  KFd notify;
  Reaper child{spawn("starved_connector", &notify,
                     {"RS_CONFORMANCE_PORT=" + std::to_string(l.addr.port())})};
  ASSERT_GT(child.pid, 0);
  std::string r;
  ASSERT_TRUE(child_ready(notify, &r)) << "child: " << r;
  std::istringstream in(r.substr(1));
  double share = 1;
  in >> share;
  EXPECT_LT(share, kMaxCpuShare);
  int left = 0, e = 0, emfile = 0, connected = 0;
  while (in >> e) {
    EXPECT_TRUE(e == 0 || e == EMFILE) << "with " << left << " descriptors left: " << strerror(e);
    emfile += e == EMFILE;
    connected += e == 0;
    left++;
  }
  EXPECT_EQ(25, left);
  EXPECT_GT(emfile, 0) << "no attempt ran out of descriptors";
  EXPECT_GT(connected, 0) << "no attempt had enough descriptors";
}

TEST_P(LimitsTest, OutOfAddressSpaceFailsWithEnomemAndRecovers) {
#if defined(SS_ASAN) || defined(SS_TSAN)
  GTEST_SKIP() << "a sanitizer's shadow memory does not run under a small RLIMIT_AS";
#endif
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l, {}, 4096));
  KFd notify;
  Reaper child{
      spawn("starved_memory", &notify, {"RS_CONFORMANCE_PORT=" + std::to_string(l.addr.port())})};
  ASSERT_GT(child.pid, 0);
  std::string r;
  ASSERT_TRUE(child_ready(notify, &r)) << "child: " << r;
  size_t made = 0;
  int err = -1, retry = -1;
  ASSERT_EQ(3, sscanf(r.c_str() + 1, "%zu %d %d", &made, &err, &retry)) << r;
  printf("[ %s ] %zu connections in %ld MiB of address space, then: %s\n", provider(), made,
         kAddressBudgetMiB, strerror(err));
  EXPECT_GT(made, 0u) << "not one connection fitted";
  EXPECT_TRUE(err == ENOMEM || err == ENOBUFS) << "the call out of memory said: " << strerror(err);
  EXPECT_EQ(0, retry) << "after half the connections closed: " << strerror(retry);
}

INSTANTIATE_TEST_SUITE_P(Providers, LimitsTest, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
}  // namespace rsconf
