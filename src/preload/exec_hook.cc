// exec under librspreload (interpose/exec_calls.h): an rsocket whose
// descriptor the program leaves open across exec goes on in the new
// image, at the same numbers. Before the exec, each such connection's
// state (librsocket's exec hand-over) goes into a memfd the exec keeps
// open, named by SLIPSTREAM_RSPRELOAD_EXEC in the new environment, and
// the descriptors the state names are left open; the connection stays
// locked, so nothing moves it after its state was taken. The new image's
// librspreload builds the rsockets back from it before the program runs.
// A listener crosses as the kernel listening socket it is, listening
// over rsockets beside it again in the new image; the connections its
// rsocket listener had answered but not handed to accept cross as
// connections and are queued there again (librsocket's exec_hold).
// A connection that cannot cross (not quiet, a provider that cannot
// follow: rsocket(7), "Exec") is reset there instead, still a socket at
// its numbers; one locked for long (an exec from a signal handler inside
// a call) stays out (its numbers close at the exec). Nothing is carried when the new image does not
// load librspreload (LD_PRELOAD without it: the numbers close, EBADF) or when locked in a sandbox.
// A failed exec leaves everything as it was.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <new>
#include <vector>

#include "core/base/fd_table.h"
#include "core/base/log.h"
#include "core/base/pod_bytes.h"
#include "core/base/sandbox.h"
#include "interpose/dup_share.h"
#include "interpose/exec_calls.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/rsocket_own.h"
#include "preload/carried_record.h"
#include "preload/route.h"
#include "preload/stats.h"

namespace ss::preload {
namespace {

constexpr char kEnvName[] = "SLIPSTREAM_RSPRELOAD_EXEC";
constexpr char kMagic[16] = "rspreload-exec2";
// The most connections a listener's queue carries (the rest end at exec).
constexpr int kMaxQueued = 4096;

// What the hook did, undone when the exec fails.
char g_env[64];
int g_memfd = -1;
std::vector<int> g_locked;    // numbers whose rsocket ss_rspreload_exec_save locked
std::vector<int> g_opened;    // numbers whose FD_CLOEXEC the hook cleared
std::vector<int> g_held;      // rsocket listeners whose queue ss_rspreload_exec_hold took
std::vector<int> g_blocking;  // listeners whose O_NONBLOCK the hook cleared
std::vector<int> g_aside;     // connections left to another process (ss_rspreload_exec_aside)
std::vector<int> g_given;     // a vfork child's: connections taken from the parent
// How long, for all its connections together, an exec waits for another
// holder to let go of one (ss_rspreload_exec_aside), on CLOCK_MONOTONIC.
long long g_aside_until_ms = 0;
constexpr long long kAsideWaitMs = 100;

// Whether the new image loads this library: LD_PRELOAD in its
// environment names this file.
bool preloaded_in(char* const* envp) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&preloaded_in), &info) || !info.dli_fname) return false;
  const char* base = strrchr(info.dli_fname, '/');
  base = base ? base + 1 : info.dli_fname;
  for (size_t i = 0; envp && envp[i]; i++)
    if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0) return strstr(envp[i] + 11, base) != nullptr;
  return false;
}

// Whether number `fd` of an rsocket (or of a kernel listener) closes at
// exec, as the program set it.
bool closes_on_exec(int fd, bool rsocket) {
  const int cloexec = interpose::dups::program_cloexec(fd);
  if (cloexec >= 0) return cloexec;
  OwnCalls in;
  const int flags = rsocket ? rfcntl(fd, F_GETFD) : interpose::real().fcntl(fd, F_GETFD);
  return flags < 0 || (flags & FD_CLOEXEC);
}

void keep_open(int fd) {
  if (interpose::real().fcntl(fd, F_SETFD, 0) == 0) g_opened.push_back(fd);
}

void exec_failed() {
  for (int fd : g_opened) interpose::real().fcntl(fd, F_SETFD, FD_CLOEXEC);
  g_opened.clear();
  for (int fd : g_blocking)
    interpose::real().fcntl(fd, F_SETFL, interpose::real().fcntl(fd, F_GETFL) | O_NONBLOCK);
  g_blocking.clear();
  {
    OwnCalls in;
    for (int fd : g_locked) ss_rspreload_exec_abandon(fd);
    for (int fd : g_held) ss_rspreload_exec_unhold(fd);
    for (int fd : g_aside) ss_rspreload_exec_unaside(fd);
    for (int fd : g_given) ss_rspreload_exec_take_back(fd);
  }
  g_locked.clear();
  g_held.clear();
  g_aside.clear();
  g_given.clear();
  if (g_memfd >= 0) interpose::real().close(g_memfd);
  g_memfd = -1;
}

// One rsocket's record: its state taken (and the rsocket locked), or a
// reset one; its numbers left open. False when it stays out of the new
// image (locked for long): its numbers close at the exec. A connection
// handed on as stdin, stdout or stderr is the new program's (inetd,
// sshd's re-exec, git daemon); any other that another process holds and
// goes on with stays that process's (git's fetch forks index-pack, which
// inherits the connection and never uses it). `at`: a number of the
// rsocket in the table (a vfork child's or a spawn's `numbers` may be
// copies the table does not know), numbers[0] by default; `from`: who
// execs (kSpawnInherited: a spawn's child inherits the numbers, which no
// dup2 action hands on: this process goes on with the connection).
enum From { kThisImage, kVforkChild, kSpawn, kSpawnInherited };
bool carry(std::vector<int>& numbers, std::vector<uint8_t>* out, Kind kind = kConnection,
           int at = -1, From from = kThisImage) {
  const bool vfork = from != kThisImage;  // this process goes on with what does not cross
  std::sort(numbers.begin(), numbers.end());
  if (at < 0) at = numbers[0];
  Record r{};
  r.kind = kind;
  r.own = at;
  r.numbers = static_cast<int>(numbers.size());
  const void* state = nullptr;
  long len;
  g_locked.reserve(g_locked.size() + 1);  // no allocation once it is locked
  g_aside.reserve(g_aside.size() + 1);
  {
    OwnCalls in;
    const bool elsewhere = !vfork && kind == kConnection && numbers[0] > 2 &&
                           ss_rspreload_exec_aside(at, g_aside_until_ms) == 1;
    if (elsewhere) g_aside.push_back(at);
    r.aside = elsewhere || from == kSpawnInherited;
    r.nkeep = 4;
    if (r.aside) {
      len = -1;
    } else {
      len = ss_rspreload_exec_save(at, &state, &r.own, &r.domain, r.keep, &r.nkeep);
    }
  }
  if (len < 0 && errno == EBUSY) {
    SS_WARN("librspreload: fd %d: locked by a call under way: closed in the exec'd program", at);
    return false;
  }
  r.aside |= len < 0 && vfork;  // the parent's transport: never shut down
  if (len >= 0) {
    g_locked.push_back(at);
    r.carried = 1;
    r.state_len = static_cast<uint64_t>(len);
    keep_open(r.own);
    for (int i = 0; i < r.nkeep; i++)
      if (r.keep[i] != r.own) keep_open(r.keep[i]);
  } else {
    const int err = errno;
    r.nkeep = 0;
    r.own = numbers[0];
    OwnCalls in;
    r.name_len = sizeof r.name;
    if (rgetsockname(at, reinterpret_cast<sockaddr*>(&r.name), &r.name_len)) r.name_len = 0;
    if (r.aside) {
      r.domain = r.name.ss_family;
      SS_DEBUG(
          "librspreload: fd %d: left to the process that goes on with it: reset in the exec'd "
          "program",
          numbers[0]);
    } else {
      SS_WARN("librspreload: fd %d: this connection cannot cross exec (%s): it is reset there",
              numbers[0], strerror(err));
    }
  }
  // A spawn's numbers are its child's (its dup2 actions make them).
  for (int n : numbers)
    if (n != r.own && from != kSpawn) keep_open(n);
  if (!r.carried && from != kSpawn) keep_open(r.own);
  put_pod(out, r);
  for (int n : numbers) put_pod(out, n);
  const auto* bytes = static_cast<const uint8_t*>(state);
  if (r.carried) out->insert(out->end(), bytes, bytes + len);
  return true;
}

// A listener's record, then those of the connections its queue held:
// the count of records.
uint32_t carry_listener(const Entry& e, std::vector<int>& numbers, std::vector<uint8_t>* out) {
  std::sort(numbers.begin(), numbers.end());
  Record r{};
  r.kind = kListener;
  r.own = numbers[0];
  r.domain = e.domain;
  r.carried = 1;
  r.numbers = static_cast<int>(numbers.size());
  r.backlog = e.backlog.load();
  r.nonblock = e.nonblock.load();
  put_pod(out, r);
  for (int n : numbers) put_pod(out, n);
  uint32_t records = 1;
  std::vector<int> queued(kMaxQueued);
  g_held.reserve(g_held.size() + 1);
  int n;
  {
    OwnCalls in;
    n = ss_rspreload_exec_hold(e.rs_fd, queued.data(), kMaxQueued);
  }
  if (n < 0) {
    SS_WARN("librspreload: fd %d: the connections waiting for accept end at the exec (%s)", r.own,
            strerror(errno));
    return records;
  }
  g_held.push_back(e.rs_fd);
  for (int i = 0; i < n; i++) {
    std::vector<int> one{queued[static_cast<size_t>(i)]};
    records += carry(one, out, kQueued) ? 1 : 0;
  }
  return records;
}

// The rsockets' numbers in the table, by rsocket, those `keep` says yes to.
template <class Keep>
std::map<const void*, std::vector<int>> rsockets_by_object(const Keep& keep) {
  std::map<const void*, std::vector<int>> by_rsocket;
  for (auto& [fd, obj] : FdTable::instance().objects_of(FdKind::kRsocket))
    if (keep(fd)) by_rsocket[obj.get()].push_back(fd);
  return by_rsocket;
}
std::map<const void*, std::vector<int>> rsockets_by_object() {
  return rsockets_by_object([](int) { return true; });
}

// The memfd at 3 or above: the new image takes 0 to 2 for the program's.
int state_memfd() {
  const int fd = memfd_create("slipstream-exec", 0);
  if (fd < 0 || fd > 2) return fd;
  const int high = interpose::real().fcntl(fd, F_DUPFD, 3);
  interpose::real().close(fd);
  return high;
}

// Kernel listeners going to an image without the preload: the open
// file's O_NONBLOCK is the program's again (the preload keeps it set).
// A preloaded process sharing the file (fork) still never blocks in the
// kernel's accept (accept_listener looks first).
void listeners_as_the_program_left_them() {
  for (auto& [fd, obj] : FdTable::instance().objects_of(FdKind::kRspreloadTcp)) {
    const auto* e = static_cast<const Entry*>(obj.get());
    if (e->state.load() != Entry::State::kListener || e->nonblock || closes_on_exec(fd, false))
      continue;
    const int fl = interpose::real().fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK) && interpose::real().fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
      g_blocking.push_back(fd);
  }
}

// Rsocket `at`'s record for a new image beside which this process goes on
// (a vfork child's, a spawn's), at `handed`: when it crosses, this
// process's copy is given away (ss_rspreload_exec_give_away). 1, or 0
// when it stays out.
uint32_t give(std::vector<int>& handed, std::vector<uint8_t>* out, int at, From from) {
  const size_t locked = g_locked.size();
  g_given.reserve(g_given.size() + 1);
  if (!carry(handed, out, kConnection, at, from)) return 0;
  if (g_locked.size() > locked) {  // carried (else reset there)
    OwnCalls in;
    ss_rspreload_exec_give_away(g_locked.back());
    g_given.push_back(g_locked.back());
    g_locked.pop_back();
  }
  return 1;
}

// In a vfork child, whose descriptors may name other files than the
// parent's at the same numbers (its dup2 and closes): the socket inode
// of number `fd` in the parent's table (0: none), and whether `fd` here
// is that socket.
ino_t parents_socket(int fd) {
  char path[64], link[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(getppid()), fd);
  const ssize_t n = readlink(path, link, sizeof link - 1);
  if (n <= 0) return 0;
  link[n] = '\0';
  unsigned long long ino = 0;
  return sscanf(link, "socket:[%llu]", &ino) == 1 ? static_cast<ino_t>(ino) : 0;
}
bool is_socket(int fd, ino_t ino) {
  struct stat st {};
  return ino && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_ino == ino;
}

// In a vfork child: the numbers that hand rsocket `numbers` (its numbers
// in the table, whose flags the child cannot change: vfork_child_fcntl)
// on to the new program: copies at 0 to 2 (subprocess's stdin=conn) and
// numbers whose FD_CLOEXEC the child cleared by ioctl (pass_fds). None
// when a descriptor the connection runs on is not the parent's here.
std::vector<int> handed_by_vfork_child(const std::vector<int>& numbers) {
  std::vector<int> handed;
  const ino_t ino = parents_socket(numbers[0]);
  for (int n = 0; n <= 2; n++)
    if (is_socket(n, ino)) handed.push_back(n);
  for (int n : numbers) {
    const int fl = interpose::real().fcntl(n, F_GETFD);
    if (n > 2 && fl >= 0 && !(fl & FD_CLOEXEC) && is_socket(n, ino)) handed.push_back(n);
  }
  int t[2];
  int nt;
  {
    OwnCalls in;
    nt = ss_rspreload_transports(numbers[0], t, 2);
  }
  for (int i = 0; i < nt; i++)
    if (!is_socket(t[i], parents_socket(t[i]))) handed.clear();
  return handed;
}

void close_handed_on_exec() {
  for (auto& [obj, numbers] : rsockets_by_object())
    for (int n : handed_by_vfork_child(numbers)) interpose::real().fcntl(n, F_SETFD, FD_CLOEXEC);
}

// In a vfork child: the numbers of rsocket `numbers` it only inherits,
// open here and not close-on-exec as the program set them (the child's
// own fcntl reaches only its kernel descriptor, close-on-exec anyway).
std::vector<int> inherited_by_vfork_child(const std::vector<int>& numbers) {
  std::vector<int> inherited;
  const ino_t ino = parents_socket(numbers[0]);
  for (int n : numbers)
    if (!closes_on_exec(n, true) && is_socket(n, ino)) inherited.push_back(n);
  return inherited;
}

// A vfork child's records: each connection it hands on goes to the new
// program, taken from the parent (whose memory this is); one it only
// inherits stays the parent's, the new program's numbers a copy that says
// ECONNRESET, as a spawn's (never a closed number where the kernel's
// child has a socket). The count.
uint32_t carry_from_vfork_child(std::vector<uint8_t>* out) {
  uint32_t records = 0;
  for (auto& [obj, numbers] : rsockets_by_object()) {
    std::vector<int> handed = handed_by_vfork_child(numbers);
    if (!handed.empty()) {
      records += give(handed, out, numbers[0], kVforkChild);
    } else if (std::vector<int> inherited = inherited_by_vfork_child(numbers); !inherited.empty()) {
      records += carry(inherited, out, kConnection, numbers[0], kSpawnInherited) ? 1 : 0;
    }
  }
  return records;
}

// A spawn's records: each connection a dup2 action hands on goes to the
// new program (its numbers the actions' targets, and those it inherits),
// taken from this process as from a vfork child's parent; one it only
// inherits stays here, the new program's numbers a copy that says
// ECONNRESET (never a closed number where the kernel's child has a socket).
uint32_t carry_for_spawn(const interpose::SpawnDup* dups, size_t n, std::vector<uint8_t>* out) {
  uint32_t records = 0;
  for (auto& [obj, numbers] : rsockets_by_object()) {
    std::vector<int> handed, inherited;
    for (size_t i = 0; i < n; i++)
      if (std::find(numbers.begin(), numbers.end(), dups[i].from) != numbers.end())
        handed.push_back(dups[i].to);
    for (int m : numbers)
      if (!closes_on_exec(m, true) && std::find(handed.begin(), handed.end(), m) == handed.end())
        inherited.push_back(m);
    if (!handed.empty()) {
      for (int m : inherited) keep_open(m);  // the child's numbers too, as the kernel's
      handed.insert(handed.end(), inherited.begin(), inherited.end());
      records += give(handed, out, numbers[0], kSpawn);
    } else if (!inherited.empty()) {
      records += carry(inherited, out, kConnection, numbers[0], kSpawnInherited) ? 1 : 0;
    }
  }
  return records;
}

const char* carry_rsockets(char* const* envp, const interpose::SpawnDup* dups, size_t n_dups,
                           bool spawn) {
  // Left by a vfork child's exec (its image went, this one goes on).
  g_locked.clear();
  g_opened.clear();
  g_held.clear();
  g_blocking.clear();
  g_aside.clear();
  g_given.clear();
  g_memfd = -1;
  if (sandbox::locked_in() || !preloaded_in(envp)) {
    try {
      // A vfork child's open files are the parent's: left as they are; the
      // numbers it hands on close (EBADF, never a socket that is not the
      // connection).
      if (in_vfork_child())
        close_handed_on_exec();
      else
        listeners_as_the_program_left_them();
    } catch (const std::bad_alloc&) {
    }
    return nullptr;
  }
  try {
    std::vector<uint8_t> out(kMagic, kMagic + sizeof kMagic);
    uint32_t records = 0;
    put_pod(&out, records);
    if (in_vfork_child()) {
      records = carry_from_vfork_child(&out);
    } else if (spawn) {
      records = carry_for_spawn(dups, n_dups, &out);
    } else {
      timespec now{};
      clock_gettime(CLOCK_MONOTONIC, &now);
      g_aside_until_ms = now.tv_sec * 1000LL + now.tv_nsec / 1000000 + kAsideWaitMs;
      auto by_rsocket = rsockets_by_object([](int fd) { return !closes_on_exec(fd, true); });
      std::map<std::shared_ptr<void>, std::vector<int>> by_listener;
      for (auto& [fd, obj] : FdTable::instance().objects_of(FdKind::kRspreloadTcp))
        if (static_cast<Entry*>(obj.get())->state.load() == Entry::State::kListener &&
            !closes_on_exec(fd, false))
          by_listener[obj].push_back(fd);
      for (auto& [obj, numbers] : by_rsocket) records += carry(numbers, &out) ? 1 : 0;
      for (auto& [obj, numbers] : by_listener)
        records += carry_listener(*static_cast<Entry*>(obj.get()), numbers, &out);
    }
    if (!records) return nullptr;
    memcpy(out.data() + sizeof kMagic, &records, sizeof records);
    g_memfd = state_memfd();
    if (g_memfd < 0 || !write_bytes(g_memfd, out)) throw std::bad_alloc();
    // The pid too: exec keeps it, and a copy of the variable in another
    // process names nothing there. A spawn's child has a pid of its own:
    // its parent's, negated.
    const int pid = static_cast<int>(getpid());
    snprintf(g_env, sizeof g_env, "%s=%d:%d", kEnvName, g_memfd, spawn ? -pid : pid);
    return g_env;
  } catch (const std::bad_alloc&) {
    SS_WARN("librspreload: cannot carry rsockets across exec (out of memory or descriptors)");
    exec_failed();
    return nullptr;
  }
}

// A listener built back: listening over rsockets beside the kernel
// listener again, at every number it had. Its rsocket listener's number,
// or -1.
int rebuild_listener(const Record& r, const std::vector<int>& numbers) {
  const int rs = listen_after_exec(r.own, r.domain, r.backlog, r.nonblock);
  if (rs < 0)
    SS_WARN("librspreload: fd %d: a kernel listener only after exec", r.own);
  else if (const int rc = interpose::dups::regroup(r.own, numbers, FdKind::kRspreloadTcp))
    SS_WARN("librspreload: fd %d: the listener's duplicates after exec: %s", r.own, strerror(-rc));
  return rs;
}

// A connection queued for accept before the exec, built back, queued on
// rsocket listener `rs` again (or ended, without one).
void requeue(const Record& r, const uint8_t* state, int rs) {
  OwnCalls in;
  close_on_exec_again(r);
  if (!r.carried ||
      ss_rspreload_exec_restore(r.own, r.domain, state, r.state_len, nullptr, nullptr, 0)) {
    // The peer must see the end; the program never saw this one.
    interpose::real().shutdown(r.own, SHUT_RDWR);
    interpose::real().close(r.own);
    return;
  }
  if (rs < 0 || ss_rspreload_requeue(rs, r.own)) rclose(r.own);
}

// A spawn started its child: the descriptors it needed open close on
// exec again here; what it took stays the child's.
void spawned() {
  for (int fd : g_opened) interpose::real().fcntl(fd, F_SETFD, FD_CLOEXEC);
  if (g_memfd >= 0) interpose::real().close(g_memfd);
  g_memfd = -1;
  g_opened.clear();
  g_given.clear();
}

__attribute__((constructor)) void carry_in() {
  interpose::set_before_exec(carry_rsockets);
  interpose::set_exec_failed(exec_failed);
  interpose::set_spawned(spawned);
  const char* v = getenv(kEnvName);
  if (!v) return;
  // Before any service thread the rsockets start (their fork handlers).
  interpose::dups::lock_around_fork();
  int fd = -1, pid = 0;
  const bool ours = sscanf(v, "%d:%d", &fd, &pid) == 2 && fd > 2 &&
                    (pid == getpid() || (pid < 0 && -pid == getppid()));
  unsetenv(kEnvName);
  if (!ours) return;  // left by another process's exec: names nothing here
  std::vector<uint8_t> in;
  const bool read = read_bytes(fd, &in, SIZE_MAX);  // the image before's
  interpose::real().close(fd);
  PodReader r(in.data(), in.size());
  const uint8_t* magic = r.take(sizeof kMagic);
  uint32_t records = 0;
  if (!read || !magic || memcmp(magic, kMagic, sizeof kMagic) || !r.get(&records)) {
    SS_WARN("librspreload: %s names no state of rsockets: none carried across exec", kEnvName);
    return;
  }
  int listener = -1;  // the rsocket listener of the last listener record
  for (uint32_t i = 0; i < records; i++) {
    Record rec{};
    if (!r.get(&rec) || rec.numbers <= 0 || rec.numbers > 4096) break;
    std::vector<int> numbers(static_cast<size_t>(rec.numbers));
    for (int& n : numbers) r.get(&n);
    const uint8_t* state = rec.carried && rec.kind != kListener ? r.take(rec.state_len) : nullptr;
    if (!r.ok()) break;
    if (rec.kind == kListener)
      listener = rebuild_listener(rec, numbers);
    else if (rec.kind == kQueued)
      requeue(rec, state, listener);
    else
      rebuild(rec, numbers, state, "after exec");
  }
  standard_streams_over_connections();
}

}  // namespace
}  // namespace ss::preload
