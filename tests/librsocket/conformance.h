// Shared helpers of the rsocket conformance suite: provider selection and
// probing, loopback addresses, connected pairs, patterns, timed waits and
// process accounting. Everything here uses only the public rsocket API
// (include/rdma/rsocket.h) plus core/base/config to switch providers.
#pragma once
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "include/rdma/rsocket.h"

namespace rsconf {

// ---------------------------------------------------------------------------
// Providers and parameters

struct ConnParam {
  const char* provider;  // "tcp", "shm", "verbs"
  int family;            // AF_INET, AF_INET6
};

// Every provider the suite runs on. A provider that is not built/usable
// shows as SKIPPED with the reason (never as passed).
std::vector<ConnParam> all_params();
inline void PrintTo(const ConnParam& p, std::ostream* os) {
  *os << p.provider << (p.family == AF_INET6 ? " over AF_INET6" : " over AF_INET");
}
std::string param_name(const ::testing::TestParamInfo<ConnParam>& info);

// SLIPSTREAM_PROVIDER=name, then ss::config::reload().
void select_provider(const char* name);

// Tries one loopback connection with the current provider. Returns true
// and leaves *skip_reason empty when it works; returns true with a reason
// when the provider (or the address family) is not available (ENOTSUP,
// ENODEV, no IPv6 loopback); returns false (and records a failure) on any
// other error: a provider that is there must work.
bool probe(const char* provider, int family, std::string* skip_reason);

// Base fixture of the parametrised suites: selects the provider, probes it,
// skips with the reason when it is unavailable.
class ConnTest : public ::testing::TestWithParam<ConnParam> {
 protected:
  void SetUp() override;
  void TearDown() override;
  int family() const { return GetParam().family; }
  const char* provider() const { return GetParam().provider; }
};

// ---------------------------------------------------------------------------
// Descriptors and addresses

// Owns a descriptor and closes it with Close on destruction.
template <int (*Close)(int)>
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  ~OwnedFd() { reset(); }
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }
  operator int() const { return fd_; }  // NOLINT: used as an fd everywhere
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1) {
    if (fd_ >= 0) Close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

using RFd = OwnedFd<rclose>;   // an rsocket
using KFd = OwnedFd<::close>;  // a plain kernel descriptor

struct Addr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&ss); }
  sockaddr* sa() { return reinterpret_cast<sockaddr*>(&ss); }
  int family() const { return ss.ss_family; }
  uint16_t port() const;
  std::string str() const;
};

Addr loopback(int family, uint16_t port = 0);
// True when the verbs tests' address of `family` is on an iWARP device.
bool verbs_is_iwarp(int family);
// True when both name the same address and port (family-aware).
bool same_endpoint(const Addr& a, const Addr& b);
// An IPv4 / IPv6 address from its text (`flow`: sin6_flowinfo, host order).
sockaddr_in v4(const char* ip, uint16_t port);
sockaddr_in6 v6(const char* ip, uint16_t port, uint32_t flow = 0);
// A loopback port nobody listens on right now (bound then released).
uint16_t unused_port(int family);
// A listening unix socket on the name a shared-memory datagram sender
// dials for 127.0.0.1:port (playing that destination's owner), or -1.
KFd dgram_rendezvous(uint16_t port);

// A listening rsocket on the loopback address, port 0 (ephemeral, read back
// with rgetsockname). `setup` runs on the socket before rbind.
struct Listener {
  RFd fd;
  Addr addr;
};
void make_listener(int family, Listener* l, const std::function<void(int)>& setup = {},
                   int backlog = 64);

// A connected pair on loopback. `client_setup` runs on the client before
// rconnect, `listener_setup` on the listener before rlisten (accepted
// sockets inherit its options). The listener is closed unless keep_listener.
struct Pair {
  Listener listener;
  RFd client;
  RFd server;
};
void connect_pair(int family, Pair* p, const std::function<void(int)>& client_setup = {},
                  const std::function<void(int)>& listener_setup = {}, bool keep_listener = false);
// rconnect in a thread while this thread raccepts.
void connect_to(int family, const Listener& l, RFd* client, RFd* server,
                const std::function<void(int)>& client_setup = {});

// ---------------------------------------------------------------------------
// Data

void fill_pattern(uint8_t* buf, size_t len, uint64_t seed, uint64_t offset = 0);
// Index of the first wrong byte, or SIZE_MAX when all match.
size_t check_pattern(const uint8_t* buf, size_t len, uint64_t seed, uint64_t offset = 0);

// Blocking loops over short counts. Return bytes done; *err gets errno of
// the call that stopped early (0 at EOF).
size_t send_all(int fd, const void* buf, size_t len, int* err = nullptr, int flags = 0);
size_t recv_all(int fd, void* buf, size_t len, int* err = nullptr, int flags = 0);

// Streams `len` pattern bytes in chunks of up to `chunk` (pseudo-random
// sizes when randomize).
// `progress` (optional) is advanced by every chunk moved.
size_t send_pattern(int fd, size_t len, uint64_t seed, size_t chunk, bool randomize,
                    int* err = nullptr, std::atomic<size_t>* progress = nullptr);
// Receives and verifies; returns bytes received; *bad_at gets the first
// mismatching stream offset or SIZE_MAX.
size_t recv_pattern(int fd, size_t len, uint64_t seed, size_t chunk, bool randomize, size_t* bad_at,
                    int* err = nullptr, std::atomic<size_t>* progress = nullptr);

// ---------------------------------------------------------------------------
// Helper children: this binary re-executed with RS_CONFORMANCE_CHILD=<mode>
// and the given NAME=value pairs (posix_spawn: no fork handlers run). The
// test file that owns a mode runs the child's part from a static
// initialiser, before GoogleTest starts. A child reports on kChildNotifyFd:
// "R" (ready; more text may follow) or "F" and what failed.

constexpr int kChildNotifyFd = 3;
// Reports "F<what>: <errno>" and exits.
[[noreturn]] void child_fail(const char* what);
// Returns the child's pid (-1 on failure); *notify gets its report pipe.
pid_t spawn_child(const char* mode, const std::vector<std::string>& env, KFd* notify);
// Reads the child's report: true once it said "R".
bool child_ready(int notify, std::string* report);
void kill_and_reap(pid_t pid);
struct Reaper {  // kills and reaps a child at scope exit
  pid_t pid = -1;
  ~Reaper() {
    if (pid > 0) kill_and_reap(pid);
  }
};

// ---------------------------------------------------------------------------
// Waiting and accounting

// Runs fn on a thread and waits up to `seconds` for it. On timeout, calls
// `unblock` (e.g. rshutdown of the socket fn waits on) and waits again; if
// fn is still stuck the process aborts (a test must not hang). Returns
// false when the first wait timed out.
bool run_with_timeout(const std::function<void()>& fn, int seconds,
                      const std::function<void()>& unblock = {}, int release_seconds = 20);

// Runs every fn on its own thread and watches `progress`. When it stops
// moving for `stall_seconds` (a stall: no byte moved at all, however slow
// the library may be otherwise), calls `unblock` (e.g. rshutdown of the
// sockets) so the threads return, and reports false. Aborts the process
// if the threads still do not return.
bool run_watching_progress(const std::vector<std::function<void()>>& fns,
                           const std::atomic<size_t>& progress, int stall_seconds,
                           const std::function<void()>& unblock, int release_seconds = 20);

// Sets an environment variable (and reloads the configuration) for the
// scope; restores both at exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_;
};

// wake_up_interval, in ms, that tests use to turn a lost wake-up into a
// stall the stall detectors see (the periodic wake-up would hide it): a
// call not woken by its event stays blocked for 15 s, which a test notices
// after kLostWakeUpSeconds; the periodic wake-up then releases it.
constexpr const char* kLongWakeUpMs = "15000";
constexpr int kLostWakeUpSeconds = 8;
constexpr int kLongWakeUpReleaseSeconds = 30;

// rpoll on one descriptor until `events` show (or timeout_ms). Returns revents.
short wait_events(int fd, short events, int timeout_ms = 10000);

int count_threads();
int count_fds();
std::set<std::string> list_dir(const char* path);
// Lines of /proc/self/maps naming /dev/shm or a memfd.
std::vector<std::string> shared_mappings();

// Counts, and the shared mappings held, before and after. (Not the
// files of /dev/shm: the library names none, its shared memory is memfds,
// and other programs on the host, PostgreSQL in the preload's tests, come
// and go there meanwhile.)
struct Snapshot {
  int threads, fds;
  std::vector<std::string> maps;
  static Snapshot take();
  // A baseline once earlier tests' leftovers that end by themselves (a
  // detached service thread on its way out) are gone: the counts have held
  // still for 250 ms (or 3 s have passed).
  static Snapshot settled();
};
// Compares with `before` once threads that exit on their own (a linger, a
// service with nothing left to serve) have had a bounded moment to do so.
void expect_nothing_left(const Snapshot& before, const char* what);
std::string join_lines(const std::vector<std::string>& v);  // one per line, indented

// CPU time of a thread blocked in a call, over a window while it is
// blocked (0.3-1.0 s after it started): measure_blocked runs `blocked` on a
// thread, measures, then runs `wake` here and joins. The window leaves out
// what the call does before blocking and after the wake-up.
struct Usage {
  double cpu_s = 0, wall_s = 0;
  bool blocked_throughout = true;  // still inside the call when measured
  // Times the thread went to sleep in the window (voluntary context
  // switches): 0 for a spinning thread however loaded the machine is,
  // where its CPU share depends on what else runs. -1: not readable.
  long sleeps = -1;
  double share() const { return wall_s > 0 ? cpu_s / wall_s : 0; }
};
Usage measure_blocked(const std::function<void()>& blocked, const std::function<void()>& wake);

// The current test's name, e.g. "Providers/DataTest.Foo/tcp_v4".
std::string current_test_name();

// Per-test watchdog (seconds; RS_CONFORMANCE_TIMEOUT overrides).
int watchdog_seconds();

}  // namespace rsconf
