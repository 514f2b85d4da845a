// Helpers of the rsocket conformance suite (see conformance.h), and the
// per-test watchdog that turns a hang into a failure with the test's name.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "core/base/config.h"
#include "core/base/fd_spare.h"
#include "core/base/kick.h"
#include "tests/librsocket/conformance.h"

#include <rdma/rdma_cma.h>

extern char** environ;

namespace rsconf {

// ---------------------------------------------------------------------------
// Watchdog: one thread for the whole run (started before the first test, so
// per-test thread counts are not disturbed). A test still running after
// watchdog_seconds() aborts the binary with its name: a hang is a failure.

namespace {

class Watchdog : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override {
    std::lock_guard<std::mutex> g(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    name_ = std::string(info.test_suite_name()) + "." + info.name();
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(watchdog_seconds());
    armed_ = true;
    cv_.notify_all();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> g(mu_);
    armed_ = false;
    cv_.notify_all();
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
      if (!armed_) {
        cv_.wait(lk);
        continue;
      }
      if (cv_.wait_until(lk, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
          std::chrono::steady_clock::now() >= deadline_) {
        fprintf(stderr,
                "\n[ WATCHDOG ] %s still running after %d s: it hangs. Aborting the run "
                "(RS_CONFORMANCE_TIMEOUT changes the limit).\n",
                name_.c_str(), watchdog_seconds());
        fflush(stderr);
        abort();
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::string name_;
  std::chrono::steady_clock::time_point deadline_;
  bool armed_ = false;
  bool stop_ = false;
};

struct WatchdogRegistrar {
  WatchdogRegistrar() {
    if (getenv("RS_CONFORMANCE_CHILD")) return;  // helper child processes run no tests
    ::testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
  }
} g_watchdog_registrar;

}  // namespace

int watchdog_seconds() {
  const char* s = getenv("RS_CONFORMANCE_TIMEOUT");
  int v = s ? atoi(s) : 0;
  return v > 0 ? v : 180;
}

std::string current_test_name() {
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!t) return "?";
  return std::string(t->test_suite_name()) + "." + t->name();
}

// ---------------------------------------------------------------------------
// Providers

std::vector<ConnParam> all_params() {
  std::vector<ConnParam> v;
  for (const char* p : {"tcp", "shm", "verbs"})
    for (int f : {AF_INET, AF_INET6}) v.push_back({p, f});
  return v;
}

std::string param_name(const ::testing::TestParamInfo<ConnParam>& info) {
  return std::string(info.param.provider) + (info.param.family == AF_INET6 ? "_v6" : "_v4");
}

namespace {
// The provider select_provider chose last (a function-local static: the
// helper child selects one from a static initializer of another file).
std::string& g_provider() {
  static std::string name;
  return name;
}
}  // namespace

void select_provider(const char* name) {
  g_provider() = name;
  setenv("SLIPSTREAM_PROVIDER", name, 1);
  ss::config::reload();
}

namespace {
bool unavailable_errno(int e) { return e == ENOTSUP || e == ENODEV; }
}  // namespace

bool probe(const char* provider, int family, std::string* why) {
  why->clear();
  select_provider(provider);
  const char* fam = family == AF_INET6 ? "AF_INET6" : "AF_INET";
  RFd l(rsocket(family, SOCK_STREAM, 0));
  if (l < 0) {
    int e = errno;
    if (unavailable_errno(e) || (family == AF_INET6 && e == EAFNOSUPPORT)) {
      *why = std::string("provider ") + provider + " / " + fam +
             " not available: rsocket: " + strerror(e);
      return true;
    }
    ADD_FAILURE() << "probe: rsocket(" << fam << ") failed: " << strerror(e);
    return false;
  }
  Addr a = loopback(family);
  if (rbind(l, a.sa(), a.len) < 0) {
    int e = errno;
    if (family == AF_INET6 && (e == EADDRNOTAVAIL || e == EAFNOSUPPORT)) {
      *why = std::string("IPv6 loopback ::1 not available on this host: rbind: ") + strerror(e);
      return true;
    }
    ADD_FAILURE() << "probe: rbind " << a.str() << " failed: " << strerror(e);
    return false;
  }
  if (rlisten(l, 8) < 0) {
    int e = errno;
    if (unavailable_errno(e)) {
      *why = std::string("provider ") + provider +
             " not available on this host: rlisten: " + strerror(e) +
             (strcmp(provider, "verbs") == 0 ? " (no RDMA device; the verbs cases "
                                               "run in the Soft-RoCE guest: make check-rxe)"
                                             : "");
      return true;
    }
    ADD_FAILURE() << "probe: rlisten failed: " << strerror(e);
    return false;
  }
  Addr la;
  la.len = sizeof la.ss;
  if (rgetsockname(l, la.sa(), &la.len) < 0) {
    ADD_FAILURE() << "probe: rgetsockname failed: " << strerror(errno);
    return false;
  }
  RFd c(rsocket(family, SOCK_STREAM, 0));
  if (c < 0) {
    ADD_FAILURE() << "probe: rsocket failed: " << strerror(errno);
    return false;
  }
  std::atomic<bool> done{false};
  int crc = 0, cerr = 0;
  std::thread t([&] {
    crc = rconnect(c, la.sa(), la.len);
    cerr = errno;
    done = true;
  });
  RFd a_fd;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (a_fd < 0) {
      pollfd p{l, POLLIN, 0};
      int n = rpoll(&p, 1, 20);
      if (n > 0 && (p.revents & POLLIN)) a_fd.reset(raccept(l, nullptr, nullptr));
    } else if (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (done && (crc < 0 || a_fd >= 0)) break;
  }
  if (!done) {
    // Leave the stuck thread a way out before failing.
    rshutdown(c, SHUT_RDWR);
  }
  t.join();
  if (crc < 0) {
    if (unavailable_errno(cerr)) {
      *why = std::string("provider ") + provider + " not available (" + fam +
             " loopback rconnect: " + strerror(cerr) + ")";
      return true;
    }
    ADD_FAILURE() << "probe: provider " << provider << ": loopback rconnect over " << fam
                  << " failed: " << strerror(cerr);
    return false;
  }
  if (a_fd < 0) {
    ADD_FAILURE() << "probe: provider " << provider << ": connection never reached raccept";
    return false;
  }
  return true;
}

void ConnTest::SetUp() {
  std::string why;
  ASSERT_TRUE(probe(provider(), family(), &why));
  // Where a provider must be there (RS_CONFORMANCE_REQUIRE=verbs in the
  // Soft-RoCE guest), its absence fails instead of skipping.
  const char* req = getenv("RS_CONFORMANCE_REQUIRE");
  if (!why.empty() && req && strstr(req, provider())) FAIL() << "required: " << why;
  if (!why.empty()) GTEST_SKIP() << why;
}

void ConnTest::TearDown() {}

// ---------------------------------------------------------------------------
// Descriptors and addresses

uint16_t Addr::port() const {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}

std::string Addr::str() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(port());
  }
  if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(port());
  }
  return "family " + std::to_string(ss.ss_family);
}

namespace {
// The address the current provider's tests use: loopback, except where the
// environment names one (verbs: rdma_cm needs an address an RDMA device
// owns, e.g. the Soft-RoCE guest's RS_CONFORMANCE_VERBS_ADDR4=$RXE_IP).
bool address_override(int family, Addr* a) {
  if (g_provider() != "verbs") return false;
  const char* s =
      getenv(family == AF_INET6 ? "RS_CONFORMANCE_VERBS_ADDR6" : "RS_CONFORMANCE_VERBS_ADDR4");
  if (!s || !*s) return false;
  void* dst = family == AF_INET6
                  ? static_cast<void*>(&reinterpret_cast<sockaddr_in6*>(&a->ss)->sin6_addr)
                  : static_cast<void*>(&reinterpret_cast<sockaddr_in*>(&a->ss)->sin_addr);
  return inet_pton(family, s, dst) == 1;
}
}  // namespace

bool verbs_is_iwarp(int family) {
  Addr a = loopback(family);
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) return false;
  rdma_cm_id* id = nullptr;
  bool iwarp = false;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0) {
    iwarp = rdma_bind_addr(id, a.sa()) == 0 && id->verbs &&
            id->verbs->device->transport_type == IBV_TRANSPORT_IWARP;
    rdma_destroy_id(id);
  }
  rdma_destroy_event_channel(ch);
  return iwarp;
}

Addr loopback(int family, uint16_t port) {
  Addr a;
  if (address_override(family, &a)) {
    a.ss.ss_family = static_cast<sa_family_t>(family);
    if (family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&a.ss)->sin6_port = htons(port);
      a.len = sizeof(sockaddr_in6);
    } else {
      reinterpret_cast<sockaddr_in*>(&a.ss)->sin_port = htons(port);
      a.len = sizeof(sockaddr_in);
    }
    return a;
  }
  if (family == AF_INET6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_addr = in6addr_loopback;
    s6->sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.ss);
    s4->sin_family = AF_INET;
    s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s4->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
  }
  return a;
}

bool same_endpoint(const Addr& a, const Addr& b) {
  if (a.family() != b.family() || a.port() != b.port()) return false;
  if (a.family() == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(&a.ss)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(&b.ss)->sin_addr.s_addr;
  if (a.family() == AF_INET6)
    return memcmp(&reinterpret_cast<const sockaddr_in6*>(&a.ss)->sin6_addr,
                  &reinterpret_cast<const sockaddr_in6*>(&b.ss)->sin6_addr, sizeof(in6_addr)) == 0;
  return false;
}

sockaddr_in v4(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

sockaddr_in6 v6(const char* ip, uint16_t port, uint32_t flow) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  a.sin6_flowinfo = htonl(flow);
  inet_pton(AF_INET6, ip, &a.sin6_addr);
  return a;
}

uint16_t unused_port(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  Addr a = loopback(family);
  uint16_t port = 0;
  if (::bind(fd, a.sa(), a.len) == 0) {
    Addr b;
    b.len = sizeof b.ss;
    if (::getsockname(fd, b.sa(), &b.len) == 0) port = b.port();
  }
  ::close(fd);  // never listened on: connecting to it is refused
  return port;
}

KFd dgram_rendezvous(uint16_t port) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  int n = snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "slipstream/dgram/127.0.0.1/%u", port);
  KFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (fd.get() >= 0 &&
      (::bind(fd, reinterpret_cast<sockaddr*>(&un),
              static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)) != 0 ||
       ::listen(fd, 4) != 0))
    fd.reset();
  return fd;
}

void make_listener(int family, Listener* l, const std::function<void(int)>& setup, int backlog) {
  l->fd.reset(rsocket(family, SOCK_STREAM, 0));
  ASSERT_GE(l->fd.get(), 0) << "rsocket: " << strerror(errno);
  if (setup) {
    setup(l->fd);
    if (::testing::Test::HasFatalFailure()) return;
  }
  Addr a = loopback(family);
  ASSERT_EQ(0, rbind(l->fd, a.sa(), a.len)) << "rbind " << a.str() << ": " << strerror(errno);
  ASSERT_EQ(0, rlisten(l->fd, backlog)) << "rlisten: " << strerror(errno);
  l->addr.len = sizeof l->addr.ss;
  ASSERT_EQ(0, rgetsockname(l->fd, l->addr.sa(), &l->addr.len)) << strerror(errno);
  ASSERT_EQ(family, l->addr.family());
  ASSERT_NE(0, l->addr.port()) << "listener bound to port 0 did not get an ephemeral port";
}

void connect_to(int family, const Listener& l, RFd* client, RFd* server,
                const std::function<void(int)>& client_setup) {
  client->reset(rsocket(family, SOCK_STREAM, 0));
  ASSERT_GE(client->get(), 0) << "rsocket: " << strerror(errno);
  if (client_setup) {
    client_setup(*client);
    if (::testing::Test::HasFatalFailure()) return;
  }
  std::atomic<bool> done{false};
  int crc = 0, cerr = 0;
  int cfd = *client;
  std::thread t([&] {
    crc = rconnect(cfd, l.addr.sa(), l.addr.len);
    cerr = errno;
    done = true;
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (server->get() < 0) {
      pollfd p{l.fd, POLLIN, 0};
      if (rpoll(&p, 1, 20) > 0 && (p.revents & POLLIN)) {
        int s = raccept(l.fd, nullptr, nullptr);
        if (s >= 0) server->reset(s);
      }
    } else if (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (done && (crc < 0 || server->get() >= 0)) break;
  }
  const bool connect_returned = done;
  if (!done) rshutdown(cfd, SHUT_RDWR);  // abandons a connect in progress (ECONNRESET)
  t.join();
  ASSERT_EQ(0, crc) << "rconnect to " << l.addr.str() << ": " << strerror(cerr)
                    << (connect_returned ? "" : " (abandoned after 30 s)");
  ASSERT_GE(server->get(), 0) << "the connection never reached raccept"
                              << (connect_returned ? "" : " (rconnect returned only after 30 s)");
}

void connect_pair(int family, Pair* p, const std::function<void(int)>& client_setup,
                  const std::function<void(int)>& listener_setup, bool keep_listener) {
  ASSERT_NO_FATAL_FAILURE(make_listener(family, &p->listener, listener_setup));
  ASSERT_NO_FATAL_FAILURE(connect_to(family, p->listener, &p->client, &p->server, client_setup));
  if (!keep_listener) p->listener.fd.reset();
}

// ---------------------------------------------------------------------------
// Data

namespace {
inline uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint8_t pattern_at(uint64_t seed, uint64_t i) {
  return static_cast<uint8_t>(mix64(seed * 0x100000001b3ull ^ (i >> 3)) >> ((i & 7) * 8));
}
}  // namespace

void fill_pattern(uint8_t* buf, size_t len, uint64_t seed, uint64_t offset) {
  for (size_t i = 0; i < len; i++) buf[i] = pattern_at(seed, offset + i);
}

size_t check_pattern(const uint8_t* buf, size_t len, uint64_t seed, uint64_t offset) {
  for (size_t i = 0; i < len; i++)
    if (buf[i] != pattern_at(seed, offset + i)) return i;
  return SIZE_MAX;
}

size_t send_all(int fd, const void* buf, size_t len, int* err, int flags) {
  size_t done = 0;
  if (err) *err = 0;
  while (done < len) {
    ssize_t n = rsend(fd, static_cast<const uint8_t*>(buf) + done, len - done, flags);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (err) *err = n < 0 ? errno : 0;
      break;
    }
    done += static_cast<size_t>(n);
  }
  return done;
}

size_t recv_all(int fd, void* buf, size_t len, int* err, int flags) {
  size_t done = 0;
  if (err) *err = 0;
  while (done < len) {
    ssize_t n = rrecv(fd, static_cast<uint8_t*>(buf) + done, len - done, flags);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (err) *err = n < 0 ? errno : 0;
      break;
    }
    done += static_cast<size_t>(n);
  }
  return done;
}

namespace {
size_t next_chunk(uint64_t* rng, size_t chunk, bool randomize) {
  if (!randomize) return chunk;
  *rng = mix64(*rng);
  return 1 + (*rng % chunk);
}
}  // namespace

size_t send_pattern(int fd, size_t len, uint64_t seed, size_t chunk, bool randomize, int* err,
                    std::atomic<size_t>* progress) {
  std::vector<uint8_t> buf(chunk);
  uint64_t rng = seed ^ 0x5e4d;
  size_t done = 0;
  if (err) *err = 0;
  while (done < len) {
    size_t n = std::min(next_chunk(&rng, chunk, randomize), len - done);
    fill_pattern(buf.data(), n, seed, done);
    int e = 0;
    size_t k = send_all(fd, buf.data(), n, &e);
    done += k;
    if (progress) *progress += k;
    if (k < n) {
      if (err) *err = e;
      break;
    }
  }
  return done;
}

size_t recv_pattern(int fd, size_t len, uint64_t seed, size_t chunk, bool randomize, size_t* bad_at,
                    int* err, std::atomic<size_t>* progress) {
  std::vector<uint8_t> buf(chunk);
  uint64_t rng = seed ^ 0xa11ce;
  size_t done = 0;
  *bad_at = SIZE_MAX;
  if (err) *err = 0;
  while (done < len) {
    size_t want = std::min(next_chunk(&rng, chunk, randomize), len - done);
    ssize_t n = rrecv(fd, buf.data(), want, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (err) *err = n < 0 ? errno : 0;
      break;
    }
    if (*bad_at == SIZE_MAX) {
      size_t b = check_pattern(buf.data(), static_cast<size_t>(n), seed, done);
      if (b != SIZE_MAX) *bad_at = done + b;
    }
    done += static_cast<size_t>(n);
    if (progress) *progress += static_cast<size_t>(n);
  }
  return done;
}

// ---------------------------------------------------------------------------
// Waiting and accounting

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  const char* old = getenv(name);
  had_ = old != nullptr;
  if (old) old_ = old;
  setenv(name, value, 1);
  ss::config::reload();
}

ScopedEnv::~ScopedEnv() {
  if (had_)
    setenv(name_.c_str(), old_.c_str(), 1);
  else
    unsetenv(name_.c_str());
  ss::config::reload();
}

bool run_watching_progress(const std::vector<std::function<void()>>& fns,
                           const std::atomic<size_t>& progress, int stall_seconds,
                           const std::function<void()>& unblock, int release_seconds) {
  std::atomic<size_t> running{fns.size()};
  std::vector<std::thread> threads;
  for (const auto& fn : fns)
    threads.emplace_back([&fn, &running] {
      fn();
      running--;
    });
  bool stalled = false;
  size_t last = progress.load();
  auto last_move = std::chrono::steady_clock::now();
  while (running > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    size_t now = progress.load();
    if (now != last) {
      last = now;
      last_move = std::chrono::steady_clock::now();
    } else if (!stalled &&
               std::chrono::steady_clock::now() - last_move > std::chrono::seconds(stall_seconds)) {
      stalled = true;
      if (unblock) unblock();
      last_move = std::chrono::steady_clock::now();
    } else if (stalled && std::chrono::steady_clock::now() - last_move >
                              std::chrono::seconds(release_seconds)) {
      fprintf(stderr,
              "\n[ STUCK ] %s: transfer threads stayed blocked after shutdown; "
              "aborting.\n",
              current_test_name().c_str());
      fflush(stderr);
      abort();
    }
  }
  for (auto& t : threads) t.join();
  return !stalled;
}

// ---------------------------------------------------------------------------
// Helper children

void child_fail(const char* what) {
  char msg[160];
  int n = snprintf(msg, sizeof msg, "F%s: %s", what, strerror(errno));
  n = std::clamp(n, 0, static_cast<int>(sizeof msg) - 1);  // snprintf's n may exceed what fit
  (void)!write(kChildNotifyFd, msg, static_cast<size_t>(n));
  _exit(2);
}

pid_t spawn_child(const char* mode, const std::vector<std::string>& env, KFd* notify) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return -1;
  // Our environment without other children's settings (the verbs
  // addresses stay), then its own.
  std::vector<std::string> env_store;
  for (char** e = environ; *e; e++)
    if (strncmp(*e, "RS_CONFORMANCE_", 15) != 0 || strncmp(*e, "RS_CONFORMANCE_VERBS_", 21) == 0)
      env_store.emplace_back(*e);
  env_store.emplace_back(std::string("RS_CONFORMANCE_CHILD=") + mode);
  env_store.insert(env_store.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  char exe[] = "/proc/self/exe";
  char filter[] = "--gtest_filter=-*";
  char* argv[] = {exe, filter, nullptr};
  // posix_spawn, as system() and popen() do: no fork handlers run, so our
  // listeners are not shared with a child that only execs (after fork(),
  // a listener's connections complete only as a process accepts them).
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], kChildNotifyFd);
  posix_spawn_file_actions_addclosefrom_np(&fa, kChildNotifyFd + 1);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe, &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc) {
    close(p[0]);
    errno = rc;
    return -1;
  }
  notify->reset(p[0]);
  return pid;
}

bool child_ready(int notify, std::string* report) {
  pollfd pf{notify, POLLIN, 0};
  if (poll(&pf, 1, 30000) <= 0) {
    *report = "no report from the child within 30 s";
    return false;
  }
  char buf[256];
  ssize_t n = read(notify, buf, sizeof buf);
  if (n <= 0) {
    *report = "the child exited without reporting";
    return false;
  }
  report->assign(buf, static_cast<size_t>(n));
  return buf[0] == 'R';
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
}

bool run_with_timeout(const std::function<void()>& fn, int seconds,
                      const std::function<void()>& unblock, int release_seconds) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> fut = done->get_future();
  std::thread t([&fn, done] {
    fn();
    done->set_value();
  });
  if (fut.wait_for(std::chrono::seconds(seconds)) == std::future_status::ready) {
    t.join();
    return true;
  }
  if (unblock) unblock();
  if (fut.wait_for(std::chrono::seconds(release_seconds)) == std::future_status::ready) {
    t.join();
    return false;
  }
  fprintf(stderr,
          "\n[ STUCK ] %s: a call stayed blocked after %d s and could not be "
          "released; aborting.\n",
          current_test_name().c_str(), seconds);
  fflush(stderr);
  abort();
}

short wait_events(int fd, short events, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    pollfd p{fd, events, 0};
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left < 0) left = 0;
    int n = rpoll(&p, 1, left);
    if (n > 0) return p.revents;
    if (n < 0 && errno != EINTR) return POLLNVAL;
    if (left == 0) return 0;
  }
}

namespace {
int count_entries(const char* path) {
  DIR* d = opendir(path);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}
}  // namespace

int count_threads() { return count_entries("/proc/self/task"); }
int count_fds() { return count_entries("/proc/self/fd") - 1; }  // minus opendir's own

std::set<std::string> list_dir(const char* path) {
  std::set<std::string> out;
  DIR* d = opendir(path);
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) out.insert(e->d_name);
  closedir(d);
  return out;
}

std::vector<std::string> shared_mappings() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/maps");
  std::string line;
  while (std::getline(in, line))
    if (line.find("/dev/shm/") != std::string::npos || line.find("memfd:") != std::string::npos)
      out.push_back(line);
  return out;
}

namespace {
double now_s(clockid_t c) {
  timespec ts{};
  if (clock_gettime(c, &ts) != 0) return -1;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

namespace {
// voluntary_ctxt_switches of thread `tid` of this process, or -1.
long voluntary_switches(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
      return std::stol(line.substr(line.find(':') + 1));
  return -1;
}
}  // namespace

Usage measure_blocked(const std::function<void()>& blocked, const std::function<void()>& wake) {
  Usage u;
  std::atomic<bool> started{false}, done{false};
  std::atomic<pid_t> tid{0};
  std::thread t([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    started = true;
    blocked();
    done = true;
  });
  while (!started) std::this_thread::yield();
  clockid_t cid;
  pthread_getcpuclockid(t.native_handle(), &cid);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double c0 = now_s(cid), w0 = now_s(CLOCK_MONOTONIC);
  long s0 = voluntary_switches(tid);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  double c1 = now_s(cid), w1 = now_s(CLOCK_MONOTONIC);
  long s1 = voluntary_switches(tid);
  u.blocked_throughout = !done && c0 >= 0 && c1 >= 0;
  if (s0 >= 0 && s1 >= 0) u.sleeps = s1 - s0;
  u.cpu_s = c1 - c0;
  u.wall_s = w1 - w0;
  wake();
  t.join();
  return u;
}

// ---------------------------------------------------------------------------
// What a test leaves behind

Snapshot Snapshot::take() { return {count_threads(), count_fds(), shared_mappings()}; }

Snapshot Snapshot::settled() {
  // The calling thread's wake-up eventfd (core/base/kick.h) is made at its
  // first sleep and kept for the thread's life: made now, so a test that
  // runs first (alone) does not count it as left behind.
  {
    ss::Kick k;
    if (k.join() == 0) k.leave();
  }
  ss::reserve_prepare();  // a listener's, kept for the process's life (fd_spare.h): made now too
  Snapshot s = take();
  int still = 0;
  for (int i = 0; i < 60 && still < 5; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Snapshot t = take();
    still = (t.threads == s.threads && t.fds == s.fds) ? still + 1 : 0;
    s = std::move(t);
  }
  return s;
}

std::string join_lines(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += "\n  " + x;
  return s;
}

void expect_nothing_left(const Snapshot& before, const char* what) {
  // At most as many: what an earlier test left to end by itself (a
  // lingering close past settled()'s wait) may end meanwhile.
  Snapshot after = Snapshot::take();
  for (int i = 0; i < 100 && (after.threads > before.threads || after.fds > before.fds); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    after = Snapshot::take();
  }
  EXPECT_LE(after.threads, before.threads) << "threads left running " << what;
  EXPECT_LE(after.fds, before.fds) << "descriptors left open " << what;
  std::vector<std::string> new_maps;
  for (const auto& m : after.maps)
    if (std::find(before.maps.begin(), before.maps.end(), m) == before.maps.end())
      new_maps.push_back(m);
  EXPECT_TRUE(new_maps.empty()) << "shared mappings left in this process " << what << ":"
                                << join_lines(new_maps);
}

}  // namespace rsconf
