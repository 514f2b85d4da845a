// Fork while a parent thread is parked inside a lock the child inherits
// held: a listener's serve_mu_ (a thread answering a connection request
// inline, on a listener shared by an earlier fork), a stream provider's
// endpoint lock (its async-progress thread, which riomap starts, moving
// the stream) and a datagram socket's shared-memory sender lock (rsendto).
// The parking point is real and observable: the thread logs a warning (a
// refused request, a peer's bad write, an owner's bad answer), and the warning's
// write blocks on a stderr pipe nobody reads (a program's stderr can be
// just that), /proc showing the thread inside write(2). The child's calls
// on the inherited listener or connection must then complete or fail
// cleanly, never wait for the parent's thread (the child's alarm).
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "core/prov/shm/rendezvous.h"
#include "core/prov/shm/shm_endpoint.h"
#include "tests/librsocket/conformance.h"
#include "tests/librsocket/fork_util.h"
#include "tests/librsocket/raw_peer.h"

namespace rsconf {
namespace {

constexpr int kCallSeconds = 20;

// Thread `tid` of this process is inside write(2, ...): the log line.
bool writing_to_stderr(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string nr, fd;
  return f >> nr >> fd && nr == std::to_string(SYS_write) && fd == "0x2";
}

// A thread of this process inside write(2, ...), or 0 (none yet).
pid_t thread_writing_to_stderr() {
  DIR* d = opendir("/proc/self/task");
  pid_t found = 0;
  while (dirent* e = d ? readdir(d) : nullptr)
    if (e->d_name[0] != '.' && writing_to_stderr(atoi(e->d_name))) found = atoi(e->d_name);
  if (d) closedir(d);
  return found;
}

// stderr becomes a full pipe until restore(): a log line written
// meanwhile blocks its thread until release().
class FullStderr {
 public:
  bool make() {
    if (pipe2(p_, O_CLOEXEC) != 0) return false;
    fcntl(p_[1], F_SETPIPE_SZ, 4096);
    fcntl(p_[1], F_SETFL, O_NONBLOCK);
    char junk[512];
    memset(junk, '.', sizeof junk);
    while (write(p_[1], junk, sizeof junk) > 0) {
    }
    fcntl(p_[1], F_SETFL, 0);
    saved_ = dup(2);
    return saved_ >= 0 && dup2(p_[1], 2) == 2;
  }
  // The thread blocked writing to it (waited for up to 10 s), or 0.
  static pid_t wait_for_writer() {
    pid_t tid = 0;
    for (int i = 0; i < 1000 && !tid; i++) {
      tid = thread_writing_to_stderr();
      if (!tid) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return tid;
  }
  // In a fork child: stderr is /dev/null, not the full pipe.
  static bool quiet_child() {
    const int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    return null >= 0 && dup2(null, 2) == 2;
  }

  // Drains the pipe until no thread is inside a write to it (bounded):
  // closing it under a writer would end the process with SIGPIPE.
  void release() {
    if (p_[0] < 0) return;
    fcntl(p_[0], F_SETFL, O_NONBLOCK);
    char b[4096];
    for (int i = 0; i < 500; i++) {
      while (read(p_[0], b, sizeof b) > 0) {
      }
      if (!thread_writing_to_stderr()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  void restore() {
    if (saved_ >= 0) dup2(saved_, 2);
    if (saved_ >= 0) close(saved_);
    saved_ = -1;
  }
  // The pipe stays open, drained, for the process's life: a thread of a
  // failed case (a child killed by its alarm) may still write to it, and
  // a closed pipe would end the whole test binary with SIGPIPE.
  ~FullStderr() {
    restore();
    release();
  }

 private:
  int p_[2] = {-1, -1};
  int saved_ = -1;
};

// A kernel connection to the listener's provider carrying a hello whose
// connection data the listener refuses (protocol version 0) or, when
// `malformed`, a hello frame without its magic number.
KFd bad_hello(const char* provider, int family, const Listener& l, bool malformed = false) {
  ss::rs::ConnData cd = fake_conn_data(0);
  uint8_t pd[ss::rs::kConnDataSize];
  cd.encode(pd);
  ss::prov::util::FrameHeader h{
      ss::prov::util::FrameType::kHello, kTcpKind,
      static_cast<uint32_t>(sizeof pd),  0,
      ss::prov::util::kHelloVersion,     malformed ? 0u : ss::prov::util::kHelloMagic};
  KFd fd;
  if (strcmp(provider, "shm") == 0) {
    sockaddr_un name;
    socklen_t len;
    if (ss::prov::shm::rendezvous_name(l.addr.sa(), l.addr.len, &name, &len) != 0) return fd;
    fd = KFd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (connect(fd, reinterpret_cast<const sockaddr*>(&name), len) != 0) fd.reset();
    h.flags = ss::prov::shm::kProto.hello_tag;
  } else {
    fd = KFd(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (connect(fd, l.addr.sa(), l.addr.len) != 0) fd.reset();
  }
  if (fd.get() >= 0) send_frame(fd, h, pd, sizeof pd);
  return fd;
}

class ProviderLockForkTest : public ConnTest {};

// Forks a child that takes one connection on l (a blocking raccept, its
// alarm the bound) and echoes 4 bytes, connects to it from here and
// checks the echo: "" or what failed. Fork runs on a thread of its own:
// when it has not returned within 10 s (a fork handler waiting for a
// parked thread), `unpark` lets it go on, and the result says so.
std::string child_echoes(int family, const Listener& l, const std::function<void()>& unpark) {
  const int lfd = l.fd;
  std::atomic<pid_t> pid{0};
  int fork_errno = 0;
  std::thread forker([&] {
    pid = fork_child([lfd] {
      if (!FullStderr::quiet_child()) return 90;
      alarm(10);  // raccept held by a lock of the parent's thread: killed, a failure
      if (rfcntl(lfd, F_SETFL, 0) != 0) return 91;
      const int c = raccept(lfd, nullptr, nullptr);
      if (c < 0) return 92;
      char b[4];
      if (recv_all(c, b, sizeof b) != sizeof b || send_all(c, b, sizeof b) != sizeof b) return 93;
      return rclose(c) == 0 && rclose(lfd) == 0 ? 0 : 94;
    });
    fork_errno = errno;
  });
  for (int i = 0; i < 1000 && pid == 0; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool fork_waited = pid == 0;
  if (fork_waited) unpark();
  forker.join();
  if (pid < 0) return std::string("fork: ") + strerror(fork_errno);
  Reaper child{pid};
  RFd c(rsocket(family, SOCK_STREAM, 0));
  std::string client_failed;
  const bool in_time = run_with_timeout(
      [&] {
        char b[4];
        if (rconnect(c, l.addr.sa(), l.addr.len) != 0)
          client_failed = std::string("rconnect: ") + strerror(errno);
        else if (send_all(c, "ping", 4) != 4 || recv_all(c, b, 4) != 4 || memcmp(b, "ping", 4))
          client_failed = "no echo from the child";
      },
      kCallSeconds, [&] { rshutdown(c, SHUT_RDWR); });
  const std::string child_result = wait_child(&child, 30);
  if (fork_waited) return "fork waited 10 s for a parked thread";
  if (!in_time) return "the connection to the child hung";
  if (!client_failed.empty()) return client_failed;
  return child_result.empty() ? "" : "the child: " + child_result;
}

TEST_P(ProviderLockForkTest, ChildAcceptsWhileParentThreadAnswersInline) {
  if (strcmp(provider(), "verbs") == 0)
    GTEST_SKIP() << "verbs: listeners stay with the process that made them (rsocket(7), Fork)";
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  const int lfd = l.fd;
  {  // shared by fork from now on: whoever calls raccept answers inline
    Reaper first{fork_child([] { return 0; })};
    ASSERT_EQ("", wait_child(&first, 30));
  }
  ASSERT_EQ(0, rfcntl(lfd, F_SETFL, O_NONBLOCK));
  FullStderr err;
  ASSERT_TRUE(err.make()) << strerror(errno);
  std::atomic<bool> stop{false};
  std::thread acceptor([&] {
    while (!stop) {
      int c = raccept(lfd, nullptr, nullptr);
      if (c >= 0) rclose(c);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  KFd bad = bad_hello(provider(), family(), l);
  const bool parked = bad.get() >= 0 && FullStderr::wait_for_writer() != 0;
  std::string outcome = "not run";
  if (parked) outcome = child_echoes(family(), l, [&] { err.release(); });
  err.release();
  err.restore();
  stop = true;
  acceptor.join();
  ASSERT_GE(bad.get(), 0) << "the refused connection: " << strerror(errno);
  ASSERT_TRUE(parked) << "the parent's thread never wrote its warning";
  EXPECT_EQ("", outcome) << "the parent's thread held serve_mu_";
}

// The listen thread, answering a listener no fork has shared yet, parked
// in a warning under the listener's locks (a malformed hello; any client
// that is not an rsocket sends one): fork waits for it a bounded time,
// then the child serves the listener (fork hung until stderr drained).
TEST_P(ProviderLockForkTest, ForkWhileTheListenThreadIsParkedUnderItsLocks) {
  if (strcmp(provider(), "verbs") == 0)
    GTEST_SKIP() << "verbs: listeners stay with the process that made them (rsocket(7), Fork)";
  Listener l;
  ASSERT_NO_FATAL_FAILURE(make_listener(family(), &l));
  FullStderr err;
  ASSERT_TRUE(err.make()) << strerror(errno);
  KFd bad = bad_hello(provider(), family(), l, /*malformed=*/true);
  const bool parked = bad.get() >= 0 && FullStderr::wait_for_writer() != 0;
  std::string outcome = "not run";
  if (parked) outcome = child_echoes(family(), l, [&] { err.release(); });
  err.release();
  err.restore();
  ASSERT_GE(bad.get(), 0) << "the malformed connection: " << strerror(errno);
  ASSERT_TRUE(parked) << "the listen thread never wrote its warning";
  EXPECT_EQ("", outcome);
}

// A unix socket's name (or its peer's), as bytes; "" when it has none.
std::string unix_name(int fd, bool peer) {
  sockaddr_un a{};
  socklen_t len = sizeof a;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc != 0 || a.sun_family != AF_UNIX || len <= offsetof(sockaddr_un, sun_path)) return "";
  return std::string(a.sun_path, len - offsetof(sockaddr_un, sun_path));
}

// The kernel stream carrying the client's frames to the server: tcp's is
// the client's own socket; shm's is the unix socket connected to the
// server's (whose name is the listener's rendezvous), found among this
// process's descriptors.
int client_stream(const char* provider, const Pair& p) {
  if (strcmp(provider, "shm") != 0) return p.client;
  const std::string rendezvous = unix_name(p.server, false);
  if (rendezvous.empty()) return -1;
  DIR* d = opendir("/proc/self/fd");
  int found = -1;
  while (dirent* e = d ? readdir(d) : nullptr) {
    const int fd = atoi(e->d_name);
    if (e->d_name[0] != '.' && fd != p.server && unix_name(fd, true) == rendezvous) found = fd;
  }
  if (d) closedir(d);
  return found;
}

TEST_P(ProviderLockForkTest, ChildCallsWhileParentAsyncProgressHoldsEndpoint) {
  if (strcmp(provider(), "verbs") == 0)
    GTEST_SKIP() << "verbs: the device places writes, no thread of ours (and a child cannot "
                    "use the connection: ForkTest.VerbsChildUseOfInheritedConnectionFails)";
  auto slots = [](int fd) {
    int v = 4;
    ASSERT_EQ(0, rsetsockopt(fd, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof v)) << strerror(errno);
  };
  Pair p;
  ASSERT_NO_FATAL_FAILURE(connect_pair(family(), &p, slots, slots));
  const int stream = client_stream(provider(), p);
  ASSERT_GE(stream, 0) << "the client's stream socket";
  // riomap starts the server's async-progress thread, which moves the
  // stream under the endpoint's lock.
  static uint8_t target[4096] __attribute__((aligned(4096)));
  ASSERT_NE(static_cast<off_t>(-1), riomap(p.server, target, sizeof target, PROT_WRITE, 0, -1))
      << strerror(errno);
  FullStderr err;
  ASSERT_TRUE(err.make()) << strerror(errno);
  // A write outside what the server exposed: that thread warns, the
  // endpoint's lock held, and the warning blocks.
  send_frame(stream, {ss::prov::util::FrameType::kWrite, 0, 4, 0x1000, 0xdead, 0});
  const pid_t parked = FullStderr::wait_for_writer();
  std::string child_result = "not run";
  if (parked) {
    const int server = p.server, client = p.client;
    Reaper child{fork_child([server, client] {
      if (!FullStderr::quiet_child()) return 90;
      alarm(10);  // a call held by the parent's thread: killed, a failure
      char b;
      // The bad write fails the connection (the child finishes the step
      // the parent's thread was in), or has not yet.
      const ssize_t n = rrecv(server, &b, 1, MSG_DONTWAIT);
      if (n != -1 || (errno != EAGAIN && errno != ECONNRESET)) return 95;
      return rclose(server) == 0 && rclose(client) == 0 ? 0 : 96;
    })};
    child_result = wait_child(&child, 30);
  }
  err.release();
  err.restore();
  ASSERT_NE(0, parked) << "the server's async-progress thread never wrote its warning";
  EXPECT_EQ("", child_result) << "the child's calls (the parent's thread held the endpoint)";
}

// The same for a datagram rsocket's shared-memory sender: a parent thread
// parked under its lock (warning that a destination's owner answered with
// something other than a ring), the child's rsendto on the inherited
// socket still sends (over UDP: that destination has no ring).
TEST(DgramShmForkTest, ChildSendsWhileParentSenderHoldsItsLock) {
  select_provider("shm");
  // The destination: a UDP port, and a rendezvous on its name answering
  // with no ring at all.
  KFd udp(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  Addr dst = loopback(AF_INET);
  ASSERT_EQ(0, ::bind(udp, dst.sa(), dst.len));
  dst.len = sizeof dst.ss;
  ASSERT_EQ(0, ::getsockname(udp, dst.sa(), &dst.len));
  KFd rendezvous = dgram_rendezvous(dst.port());
  ASSERT_GE(rendezvous.get(), 0) << strerror(errno);

  RFd s(rsocket(AF_INET, SOCK_DGRAM, 0));
  ASSERT_GE(s.get(), 0) << strerror(errno);
  Addr self = loopback(AF_INET);
  ASSERT_EQ(0, rbind(s, self.sa(), self.len)) << strerror(errno);
  ASSERT_EQ(1, rsendto(s, "a", 1, 0, dst.sa(), dst.len)) << strerror(errno);  // dials
  KFd owner(::accept4(rendezvous, nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_GE(owner.get(), 0) << "the sender never dialled the rendezvous";
  ASSERT_EQ(4, ::send(owner, "SSDR", 4, MSG_NOSIGNAL));  // no ring, no eventfd

  FullStderr err;
  ASSERT_TRUE(err.make()) << strerror(errno);
  const int sfd = s;
  std::thread sender([&] { rsendto(sfd, "b", 1, 0, dst.sa(), dst.len); });
  const pid_t parked = FullStderr::wait_for_writer();
  std::string child_result = "not run";
  if (parked) {
    Reaper child{fork_child([sfd, &dst] {
      if (!FullStderr::quiet_child()) return 90;
      alarm(10);  // rsendto held by the parent's sender: killed, a failure
      if (rsendto(sfd, "c", 1, 0, dst.sa(), dst.len) != 1) return 97;
      return rclose(sfd) == 0 ? 0 : 98;
    })};
    child_result = wait_child(&child, 30);
  }
  err.release();
  err.restore();
  sender.join();
  ASSERT_NE(0, parked) << "the parent's sender never wrote its warning";
  EXPECT_EQ("", child_result) << "the child's rsendto (the parent's sender held its lock)";
}

INSTANTIATE_TEST_SUITE_P(Providers, ProviderLockForkTest, ::testing::ValuesIn(all_params()),
                         param_name);

}  // namespace
}  // namespace rsconf
