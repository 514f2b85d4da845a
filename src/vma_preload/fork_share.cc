#include "vma_preload/fork_share.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/base/errno_guard.h"
#include "core/base/log.h"
#include "core/base/proc_stat.h"
#include "libvmacompat/settings.h"
#include "vma_preload/fork_join.h"
#include "vma_preload/socket_record.h"
#include "vma_preload/tcp_park.h"

namespace ss::vma::preload {
namespace {

constexpr int kAnswerMs = 1000;
constexpr int kExitWaitMs = 2000;  // a parent's exit, for fork_share_parent_gone
constexpr size_t kSlots = 256;     // lends at once in a process tree

// A request's life: free -> claimed (a child writes it) -> asked -> lent
// (the parent lent the flows; `pid` holds them) -> free (that process is
// gone), or asked -> free (nothing to lend: the record is closed or not
// offloaded). A child gone while claimed or asked is freed by the parent.
enum State : uint32_t { kFree, kClaimed, kAsked, kLent };

struct Slot {
  std::atomic<uint32_t> state;
  std::atomic<int32_t> pid;  // 0 until the claimer wrote it
  std::atomic<uint64_t> id;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the page is shared across processes");

// The children reach the parent by the name of a socket, not by a
// descriptor they inherit: a child may have closed that number and
// reused it, and the parent's socket goes with an exec, so a name nobody
// holds says at once that nobody will answer.
struct Page {
  sockaddr_un name;  // abstract: sun_path[0] == 0
  socklen_t name_len;
  Slot slots[kSlots];
};

std::once_flag g_once;
std::atomic<Page*> g_page{nullptr};  // MAP_SHARED: a fork child writes the parent's
// The owner's side (service thread): its socket, and what tells that
// number is still that socket (the program may close it and reuse it).
std::atomic<int> g_sock{-1};
// The process that made the page, or took the rings over: only it
// answers (a fork child that joined the rings runs a service thread too);
// its start time (/proc/PID/stat), for a child to tell it from a reused pid.
std::atomic<pid_t> g_owner_pid{0};
unsigned long long g_owner_start = 0;
// The pid of the process forking, set in its prepare handler: the child's
// parent, whose exit may come before the child's handler runs.
std::atomic<pid_t> g_forking{0};
bool owner_here() { return g_owner_pid.load(std::memory_order_relaxed) == ::getpid(); }
ino_t g_sock_ino = 0;
dev_t g_sock_dev = 0;
// In a fork child: the process that forked it, and that one's start time
// if it made the page (0 otherwise); whether its exit was awaited once.
pid_t g_fork_parent = 0;
unsigned long long g_parent_start = 0;
bool g_parent_waited = false;
// Per slot, the asker's start time (/proc/PID/stat): a reused pid is not it.
unsigned long long g_start[kSlots];

int raw_socket() {
  return static_cast<int>(
      ::syscall(SYS_socket, AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
}

// Whether pid runs (not a zombie), and its start time: false when gone.
bool running(pid_t pid, unsigned long long* start) {
  ProcStat st;
  if (!read_proc_stat(pid, &st) || st.state == 'Z' || st.state == 'X') return false;
  *start = st.start_ticks;
  return true;
}

// Whether pid is a child of ours.
bool our_child(pid_t pid) {
  ProcStat st;
  return read_proc_stat(pid, &st) && st.ppid == ::getpid();
}

bool gone(pid_t pid, unsigned long long start) {
  unsigned long long now = 0;
  return !running(pid, &now) || now != start;
}

// The parent's record with this id, or null (closed since).
std::shared_ptr<SocketRecord> record(uint64_t id) {
  std::shared_ptr<SocketRecord> found;
  for_each_record([&](int, const std::shared_ptr<SocketRecord>& s) {
    if (s->id == id) found = s;
    return !found;
  });
  return found;
}

// Whether the number is still the socket we made (else forgotten, once).
bool own_socket_intact() {
  const int fd = g_sock.load(std::memory_order_relaxed);
  if (fd < 0) return false;
  struct stat st;
  if (::syscall(SYS_fstat, fd, &st) == 0 && st.st_ino == g_sock_ino && st.st_dev == g_sock_dev)
    return true;
  g_sock.store(-1, std::memory_order_relaxed);
  SS_WARN(
      "fork: the program closed the library's request socket (fd %d); fork children's "
      "requests are now answered within a second",
      fd);
  return false;
}

// The page and the socket, named by this process: 0 or -errno.
int open_page() {
  void* p =
      ::mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = -errno;
    SS_WARN(
        "fork: no request page (%s): a fork child's inherited offloaded sockets get only "
        "same-host datagrams while this process holds them",
        strerror(-err));
    return err;
  }
  auto* page = new (p) Page{};
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce)
    nonce = reinterpret_cast<uintptr_t>(p) ^ static_cast<uint64_t>(time(nullptr));
  page->name.sun_family = AF_UNIX;
  const int len = snprintf(page->name.sun_path + 1, sizeof page->name.sun_path - 1,
                           "slipstream-vma-fork/%d/%016llx", static_cast<int>(::getpid()),
                           static_cast<unsigned long long>(nonce));
  page->name_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len);
  const int s = raw_socket();
  struct stat st;
  const int one = 1;  // who asks (fork_join.h's requests)
  if (s >= 0 &&
      ::syscall(SYS_bind, s, reinterpret_cast<const sockaddr*>(&page->name), page->name_len) == 0 &&
      ::syscall(SYS_setsockopt, s, SOL_SOCKET, SO_PASSCRED, &one, sizeof one) == 0 &&
      ::syscall(SYS_fstat, s, &st) == 0) {
    g_sock_ino = st.st_ino;
    g_sock_dev = st.st_dev;
    g_sock.store(s, std::memory_order_relaxed);
  } else {
    // The children's requests are then seen at the next second's look.
    SS_DEBUG("fork: no request socket (%s)", strerror(errno));
    if (s >= 0) ::syscall(SYS_close, s);
  }
  ProcStat own;
  g_owner_start = read_proc_stat(::getpid(), &own) ? own.start_ticks : 0;
  g_owner_pid.store(::getpid(), std::memory_order_relaxed);
  g_page.store(page, std::memory_order_release);
  return 0;
}

}  // namespace

int fork_share_open() {
  static int err = 0;
  std::call_once(g_once, [] { err = open_page(); });
  return err;
}

int fork_share_take_over() { return owner_here() ? 0 : open_page(); }

void fork_share_fork_child() {
  // The parent's socket: a copy here would keep its name bound after the
  // parent is gone, and children would wait for answers nobody gives. Its
  // number only if it is still that socket (the program may have closed
  // it and got the number back).
  const int fd = g_sock.exchange(-1, std::memory_order_relaxed);
  struct stat st;
  if (fd >= 0 && ::syscall(SYS_fstat, fd, &st) == 0 && st.st_ino == g_sock_ino &&
      st.st_dev == g_sock_dev)
    ::syscall(SYS_close, fd);
  g_fork_parent = g_forking.load(std::memory_order_relaxed);
  g_parent_waited = false;
  g_parent_start = g_fork_parent == g_owner_pid.load(std::memory_order_relaxed) ? g_owner_start : 0;
}

void fork_share_prepare() {
  g_forking.store(static_cast<pid_t>(::syscall(SYS_getpid)), std::memory_order_relaxed);
}

bool fork_share_parent_gone() {
  const pid_t owner = g_owner_pid.load(std::memory_order_relaxed);
  if (owner == 0 || g_fork_parent != owner || g_parent_start == 0 ||
      !g_page.load(std::memory_order_acquire))
    return false;
  // Gone once this process was handed to another parent (no thread of the
  // owner runs) and the owner is a zombie, reaped, or its pid another's:
  // its descriptors, the rings' among them, are closed then (a zombie
  // leader alone is a main thread gone, its other threads running on).
  // Awaited kExitWaitMs at most, once, while it exits (PF_EXITING, or this
  // process handed over) or while this process leads a session of its
  // own: a daemon, whose parent exits right after the fork (daemon(3),
  // nginx).
  constexpr unsigned kPfExiting = 0x4;
  const bool daemon = ::syscall(SYS_getsid, 0) == ::syscall(SYS_getpid);
  const timespec step = {0, 5 * 1000 * 1000};
  for (int waited = 0;; waited += 5) {
    const bool handed = static_cast<pid_t>(::syscall(SYS_getppid)) != owner;
    ProcStat st;
    const bool read = read_proc_stat(owner, &st);
    if (handed && (!read || st.state == 'Z' || st.state == 'X' || st.start_ticks != g_parent_start))
      return true;
    const bool leaving = daemon || handed || (read && (st.flags & kPfExiting));
    if (!leaving || g_parent_waited || waited >= kExitWaitMs) {
      g_parent_waited = g_parent_waited || waited > 0;
      return false;
    }
    ::nanosleep(&step, nullptr);
  }
}

bool fork_share_owner_here() { return owner_here(); }

int fork_share_fd() { return owner_here() ? g_sock.load(std::memory_order_relaxed) : -1; }

bool fork_share_owner(sockaddr_un* name, socklen_t* len) {
  const Page* page = g_page.load(std::memory_order_acquire);
  if (!page) return false;
  *name = page->name;
  *len = page->name_len;
  return true;
}

void fork_share_serve() {
  Page* page = g_page.load(std::memory_order_acquire);
  if (!page || !owner_here()) return;
  if (own_socket_intact()) {
    // Wake-ups ("?") and fork_join.h's requests, answered here to our own
    // children only (of our user too with SLIPSTREAM_VMA_TCP_FORK_JOIN=2):
    // the socket's name is visible to every process of the network
    // namespace, and the answer gives access to our rings.
    alignas(8) char b[256];
    sockaddr_un from{};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    iovec iov{b, sizeof b};
    msghdr mh{};
    const int sock = g_sock.load(std::memory_order_relaxed);
    for (;;) {
      mh.msg_name = &from;
      mh.msg_namelen = sizeof from;
      mh.msg_iov = &iov;
      mh.msg_iovlen = 1;
      mh.msg_control = control;
      mh.msg_controllen = sizeof control;
      const auto n = static_cast<ssize_t>(::syscall(SYS_recvmsg, sock, &mh, MSG_DONTWAIT));
      if (n <= 0) break;
      const cmsghdr* c = CMSG_FIRSTHDR(&mh);
      ucred who{};
      if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
        memcpy(&who, CMSG_DATA(c), sizeof who);
      const bool ours = who.pid > 0 && our_child(who.pid) &&
                        (settings::get(settings::Id::kTcpForkJoin) != 2 || who.uid == ::getuid());
      fork_join_serve(sock, b, static_cast<size_t>(n), from, mh.msg_namelen, who.pid, ours);
    }
  }
  for (size_t i = 0; i < kSlots; i++) {
    Slot& s = page->slots[i];
    const uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == kFree) continue;
    const pid_t pid = s.pid.load(std::memory_order_relaxed);
    if (st == kClaimed) {  // a child that died before it asked
      unsigned long long start;
      if (pid && !running(pid, &start)) {
        s.pid.store(0, std::memory_order_relaxed);
        s.state.store(kFree, std::memory_order_release);
      }
      continue;
    }
    if (st == kLent && !gone(pid, g_start[i])) continue;
    const uint64_t id = s.id.load(std::memory_order_relaxed);
    auto rec = record(id);
    bool lent = false;
    if (st == kAsked && running(pid, &g_start[i])) {
      // Closed here and left for a child that did not take it: the kernel's now.
      if (!rec) parked_to_kernel(id);
      lent = rec && rec->lend_to_fork_child(true, pid);
      SS_DEBUG("fork child %d asked for socket %llu: %s", pid, static_cast<unsigned long long>(id),
               !rec   ? "closed here since"
               : lent ? "lent"
                      : "answered");
    } else if (st == kLent && rec)
      rec->lend_to_fork_child(false, pid);
    if (!lent) s.pid.store(0, std::memory_order_relaxed);
    s.state.store(lent ? kLent : kFree, std::memory_order_release);
  }
}

void fork_share_ask(uint64_t id) {
  ErrnoGuard keep;  // from inside a socket call, maybe a signal handler's
  Page* page = g_page.load(std::memory_order_acquire);
  if (!page) return;  // the parent had no rings, or no page: nothing to ask
  for (Slot& s : page->slots) {
    uint32_t free = kFree;
    if (!s.state.compare_exchange_strong(free, kClaimed, std::memory_order_acquire)) continue;
    s.id.store(id, std::memory_order_relaxed);
    s.pid.store(::getpid(), std::memory_order_relaxed);
    s.state.store(kAsked, std::memory_order_release);
    const int sock = raw_socket();
    const bool heard =
        sock >= 0 && ::syscall(SYS_sendto, sock, "?", 1, MSG_DONTWAIT,
                               reinterpret_cast<const sockaddr*>(&page->name), page->name_len) == 1;
    const bool nobody = !heard && (errno == ECONNREFUSED || errno == ENOENT);
    if (sock >= 0) ::syscall(SYS_close, sock);
    if (nobody) {  // the owner exec'd or exited: no flow to lend, no answer
      s.pid.store(0, std::memory_order_relaxed);
      uint32_t asked = kAsked;
      s.state.compare_exchange_strong(asked, kFree, std::memory_order_release);
      return;
    }
    // Not heard (out of descriptors, a full queue): the owner's look each
    // second finds the request.
    const timespec ms = {0, 1000 * 1000};
    int waited = 0;
    for (; waited < kAnswerMs && s.state.load(std::memory_order_acquire) == kAsked; waited++)
      ::nanosleep(&ms, nullptr);
    SS_DEBUG("fork child: socket %llu asked for (%s), %s after %d ms",
             static_cast<unsigned long long>(id), heard ? "heard" : "to be found",
             waited < kAnswerMs ? "answered" : "no answer", waited);
    return;
  }
  SS_WARN(
      "fork child: %zu inherited sockets shared already; this one gets only what reaches "
      "its kernel socket",
      kSlots);
}

}  // namespace ss::vma::preload
