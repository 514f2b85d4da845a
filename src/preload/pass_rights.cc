#include "preload/pass_rights.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "core/base/log.h"
#include "core/base/pod_bytes.h"
#include "core/base/sandbox.h"
#include "interpose/passed_fds.h"
#include "interpose/program_memory.h"
#include "interpose/real.h"
#include "librsocket/preload_hooks.h"
#include "librsocket/rsocket_own.h"
#include "preload/carried_record.h"
#include "preload/route.h"

namespace ss::preload {
namespace {

constexpr char kMagic[16] = "rspreload-pass1";
constexpr int kMaxFds = 253;  // SCM_MAX_FD: the most one message passes
constexpr int kMaxKeep = 4;

// A capsule: this header, a Record (its descriptors as the sender had
// them), the array positions of the program's numbers of the rsocket
// (int each, Record::numbers of them), then its state. Positions count
// in the one descriptor array the receiver gets: the program's, then for
// each capsule the capsule itself and the transports it names.
struct Capsule {
  char magic[16];
  int keep_at[kMaxKeep];  // the position of Record::keep[i]; -1: the rsocket's own
};

struct Carried {
  int number;           // the sender's: the program's first number of it
  std::vector<int> at;  // the program's numbers of it, as array positions
  int memfd = -1;
  std::vector<int> extras;  // the transports passed beside it (not its own)
};

ino_t inode(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

void warn_not_carried(int fd, const char* why) {
  SS_WARN(
      "librspreload: fd %d: an rsocket connection passed to another process (SCM_RIGHTS) does "
      "not follow it (%s): the receiver gets no connection it can use",
      fd, why);
}

// A listener goes as the kernel listener it is, its open file (which the
// receiver shares) as blocking as the program left it: the preload made
// it non-blocking for itself, and a receiver's accept, with or without
// the preload, is the kernel's. Its rsocket clients stay with this
// process's rsocket listener while it has one.
void pass_as_kernel_listener(int fd) {
  const auto e = entry(fd);
  if (!e) return;
  const int fl = interpose::real().fcntl(fd, F_GETFL);
  if (fl >= 0 && !e->nonblock.load() && (fl & O_NONBLOCK))
    interpose::real().fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  SS_INFO(
      "librspreload: fd %d: a listener passed to another process (SCM_RIGHTS) goes as its kernel "
      "listener; its rsocket clients stay here",
      fd);
}

bool unix_socket(int fd) {
  int domain = 0;
  socklen_t len = sizeof domain;
  return !interpose::real().getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) &&
         domain == AF_UNIX;
}

// Whether the process at the other end of unix socket fd has this
// library loaded (a socketpair's names its maker: a fork's parent).
bool receiver_preloaded(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (interpose::real().getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid <= 0)
    return false;
  if (cred.pid == getpid()) return true;
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&receiver_preloaded), &info) || !info.dli_fname) return false;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", static_cast<int>(cred.pid));
  FILE* maps = fopen(path, "re");
  if (!maps) return false;
  char* line = nullptr;
  size_t cap = 0;
  bool found = false;
  while (!found && getline(&line, &cap, maps) > 0) found = strstr(line, info.dli_fname) != nullptr;
  free(line);
  fclose(maps);
  return found;
}

// The capsule's memfd, sealed, or -1.
int capsule_memfd(const std::vector<uint8_t>& bytes) {
  const int fd = memfd_create("slipstream-pass", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (!write_bytes(fd, bytes) ||
      interpose::real().fcntl(fd, F_ADD_SEALS,
                              F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)) {
    interpose::real().close(fd);
    return -1;
  }
  return fd;
}

// Rsocket c.number's state taken (the rsocket locked until given away or
// abandoned) into its capsule; false, unlocked, when it cannot go.
bool save(Carried* c, int first_extra, const char** why) {
  Record r{};
  r.kind = kConnection;
  r.carried = 1;
  r.numbers = static_cast<int>(c->at.size());
  r.nkeep = kMaxKeep;
  r.name_len = sizeof r.name;
  c->extras.reserve(kMaxKeep);  // no allocation that may fail once it is locked
  const void* state = nullptr;
  long len;
  {
    OwnCalls in;
    // Before the save, which keeps the rsocket locked.
    if (rgetsockname(c->number, reinterpret_cast<sockaddr*>(&r.name), &r.name_len)) r.name_len = 0;
    len = ss_rspreload_exec_save(c->number, &state, &r.own, &r.domain, r.keep, &r.nkeep);
  }
  if (len < 0) {
    *why = errno == EBUSY ? "a call under way holds it" : "not quiet, or its provider cannot";
    return false;
  }
  Capsule cap{};
  memcpy(cap.magic, kMagic, sizeof kMagic);
  // The number passed must be the rsocket's own descriptor's file: the
  // receiver's copy of it is what the connection is built back on.
  bool ok = inode(r.own) != 0 && inode(r.own) == inode(c->number);
  for (int i = 0; ok && i < r.nkeep; i++) {
    if (r.keep[i] == r.own) {
      cap.keep_at[i] = -1;
      continue;
    }
    cap.keep_at[i] = first_extra + 1 + static_cast<int>(c->extras.size());
    c->extras.push_back(r.keep[i]);
  }
  if (ok) {
    r.state_len = static_cast<uint64_t>(len);
    try {
      std::vector<uint8_t> bytes;
      put_pod(&bytes, cap);
      put_pod(&bytes, r);
      for (int a : c->at) put_pod(&bytes, a);
      const auto* s = static_cast<const uint8_t*>(state);
      bytes.insert(bytes.end(), s, s + len);
      c->memfd = capsule_memfd(bytes);
    } catch (const std::bad_alloc&) {
    }
    ok = c->memfd >= 0;
  }
  if (!ok) {
    *why = "out of memory or descriptors";
    OwnCalls in;
    ss_rspreload_exec_abandon(c->number);
  }
  return ok;
}

// Whether every control message of h lies inside its control bytes (the
// kernel's send says EINVAL otherwise: it is left to say so).
bool well_formed(const msghdr& h) {
  size_t at = 0;
  while (at + sizeof(cmsghdr) <= h.msg_controllen) {
    const auto* c = reinterpret_cast<const cmsghdr*>(static_cast<const char*>(h.msg_control) + at);
    if (c->cmsg_len < CMSG_LEN(0) || c->cmsg_len > h.msg_controllen - at) return false;
    at += CMSG_ALIGN(c->cmsg_len);
  }
  return true;
}

// The program's control messages, then one passing the capsules and
// their transports.
std::vector<char> control_with(const msghdr& h, const std::vector<Carried>& carried) {
  std::vector<int> extras;
  for (const Carried& c : carried) {
    extras.push_back(c.memfd);
    extras.insert(extras.end(), c.extras.begin(), c.extras.end());
  }
  size_t size = CMSG_SPACE(extras.size() * sizeof(int));
  msghdr in = h;
  for (cmsghdr* c = CMSG_FIRSTHDR(&in); c; c = CMSG_NXTHDR(&in, c))
    size += CMSG_SPACE(c->cmsg_len - CMSG_LEN(0));
  std::vector<char> out(size);
  msghdr o{};
  o.msg_control = out.data();
  o.msg_controllen = out.size();
  cmsghdr* w = CMSG_FIRSTHDR(&o);
  for (cmsghdr* c = CMSG_FIRSTHDR(&in); c; c = CMSG_NXTHDR(&in, c)) {
    memcpy(w, c, c->cmsg_len);
    w = CMSG_NXTHDR(&o, w);
  }
  w->cmsg_level = SOL_SOCKET;
  w->cmsg_type = SCM_RIGHTS;
  w->cmsg_len = CMSG_LEN(extras.size() * sizeof(int));
  memcpy(CMSG_DATA(w), extras.data(), extras.size() * sizeof(int));
  return out;
}

}  // namespace

bool batch_passes_rsockets(const mmsghdr* v, unsigned int vlen) {
  if (!v || !interpose::program_readable(v, vlen * sizeof *v)) return false;
  bool any = false;
  interpose::for_each_passed_fd(v, vlen, [&](int p) {
    any = any || route(p) == Route::kRsocket || route(p) == Route::kListener;
  });
  return any;
}

bool batch_may_carry(int fd, const mmsghdr* v, unsigned int vlen) {
  if (!v || !interpose::program_readable(v, vlen * sizeof *v)) return false;
  bool room = false;
  for (unsigned int i = 0; i < vlen && !room; i++)
    room = v[i].msg_hdr.msg_control && v[i].msg_hdr.msg_controllen >= CMSG_LEN(sizeof(int));
  return room && unix_socket(fd);
}

bool send_carrying(int fd, const msghdr* msg, int flags, ssize_t* sent) {
  if (!msg || !interpose::program_readable(msg, sizeof *msg)) return false;
  // The program's header and control bytes, read once: another thread of
  // it may change them meanwhile.
  msghdr h = *msg;
  if (!h.msg_control || h.msg_controllen < sizeof(cmsghdr) ||
      !interpose::program_readable(h.msg_control, h.msg_controllen))
    return false;
  std::vector<int> passed;
  std::vector<Carried> carried;
  std::vector<char> program_control;
  try {
    const auto* bytes = static_cast<const char*>(h.msg_control);
    program_control.assign(bytes, bytes + h.msg_controllen);
    h.msg_control = program_control.data();
    interpose::for_each_passed_fd(&h, [&](int p) { passed.push_back(p); });
    if (passed.empty()) return false;
    const char* why = nullptr;
    for (size_t i = 0; i < passed.size(); i++) {
      const int p = passed[i];
      const Route r = route(p);
      if (r == Route::kListener) pass_as_kernel_listener(p);
      if (r != Route::kRsocket) continue;
      // Numbers of one rsocket go as one (the same open file).
      auto same = std::find_if(carried.begin(), carried.end(),
                               [&](const Carried& c) { return inode(c.number) == inode(p); });
      if (same != carried.end()) {
        same->at.push_back(static_cast<int>(i));
        continue;
      }
      if (sandbox::locked_in())
        why = "locked in a sandbox";
      else if (!well_formed(h))
        why = "its control bytes are not well formed";
      else if (!receiver_preloaded(fd))
        why = "the receiver does not load librspreload";
      if (why) {
        warn_not_carried(p, why);
        continue;
      }
      carried.push_back(Carried{p, {static_cast<int>(i)}, -1, {}});
    }
    if (carried.empty()) return false;
    // Save each; those that cannot go are passed as they are.
    int next = static_cast<int>(passed.size());
    for (auto it = carried.begin(); it != carried.end();) {
      if (next + 1 + kMaxKeep > kMaxFds) {
        why = "too many descriptors in one message";
      } else if (save(&*it, next, &why)) {
        next += 1 + static_cast<int>(it->extras.size());
        ++it;
        continue;
      }
      warn_not_carried(it->number, why);
      it = carried.erase(it);
    }
    if (carried.empty()) return false;
  } catch (const std::bad_alloc&) {
    for (Carried& c : carried) {
      if (c.memfd < 0) continue;
      OwnCalls in;
      ss_rspreload_exec_abandon(c.number);
      interpose::real().close(c.memfd);
    }
    return false;
  }
  std::vector<char> control;
  try {
    control = control_with(h, carried);
  } catch (const std::bad_alloc&) {
  }
  h.msg_control = control.data();
  h.msg_controllen = control.size();
  const ssize_t n =
      control.empty() ? (errno = ENOMEM, -1) : interpose::real().sendmsg(fd, &h, flags);
  const int err = errno;
  // A stream passes descriptors with its first byte: an empty send of
  // one passes none.
  size_t bytes = 0;
  for (size_t i = 0; n == 0 && i < h.msg_iovlen; i++) bytes += h.msg_iov[i].iov_len;
  int type = 0;
  socklen_t tlen = sizeof type;
  const bool went =
      n > 0 || (n == 0 && bytes == 0 &&
                interpose::real().getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0 &&
                type != SOCK_STREAM);
  for (Carried& c : carried) {
    {
      OwnCalls in;
      if (went)
        ss_rspreload_exec_give_away(c.number);
      else
        ss_rspreload_exec_abandon(c.number);
    }
    interpose::real().close(c.memfd);
    if (went)
      SS_DEBUG("librspreload: fd %d: passed to another process with its connection", c.number);
  }
  errno = err;
  *sent = n;
  return true;
}

namespace {

// Whether fd is a capsule (a sealed memfd starting with kMagic): its
// bytes in *in.
bool read_capsule(int fd, std::vector<uint8_t>* in) {
  const int seals = interpose::real().fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_WRITE)) return false;
  char magic[sizeof kMagic];
  if (pread(fd, magic, sizeof magic, 0) != static_cast<ssize_t>(sizeof magic) ||
      memcmp(magic, kMagic, sizeof kMagic))
    return false;
  return read_bytes(fd, in, 64 << 20) && in->size() >= sizeof(Capsule);
}

// The rsocket capsule `in` names, built back over the received array
// `fds` (unless !build: only its positions taken); the positions of its
// transports set in `extra`. False: a capsule that names nothing valid.
bool build_back(const std::vector<uint8_t>& in, int capsule_at, std::vector<int>& fds,
                std::vector<bool>* extra, bool build) {
  PodReader r(in.data(), in.size());
  Capsule cap{};
  Record rec{};
  if (!r.get(&cap) || !r.get(&rec) || rec.numbers <= 0 || rec.numbers > kMaxFds || rec.nkeep < 0 ||
      rec.nkeep > kMaxKeep)
    return false;
  const int total = static_cast<int>(fds.size());
  std::vector<int> numbers(static_cast<size_t>(rec.numbers));
  for (int& n : numbers) {
    int at = -1;
    if (!r.get(&at) || at < 0 || at >= capsule_at || (*extra)[static_cast<size_t>(at)])
      return false;
    n = fds[static_cast<size_t>(at)];
  }
  const uint8_t* state = r.take(rec.state_len);
  if (!state) return false;
  int from[1 + kMaxKeep], to[1 + kMaxKeep];
  from[0] = rec.own;
  to[0] = numbers[0];
  for (int i = 0; i < rec.nkeep; i++) {
    const int at = cap.keep_at[i];
    if (at >= total || (at >= 0 && at <= capsule_at)) return false;
    from[1 + i] = rec.keep[i];
    to[1 + i] = at < 0 ? numbers[0] : fds[static_cast<size_t>(at)];
  }
  (*extra)[static_cast<size_t>(capsule_at)] = true;
  for (int i = 0; i < rec.nkeep; i++)
    if (cap.keep_at[i] >= 0) (*extra)[static_cast<size_t>(cap.keep_at[i])] = true;
  if (!build) return true;
  rec.own = to[0];
  for (int i = 0; i < rec.nkeep; i++) rec.keep[i] = to[1 + i];
  if (!rebuild(rec, numbers, state, "passed to this process", from, to, 1 + rec.nkeep))
    for (int i = 0; i < rec.nkeep; i++)  // no endpoint took them
      if (rec.keep[i] != rec.own) interpose::real().close(rec.keep[i]);
  return true;
}

// The received control bytes `got` as the kernel would have put them in
// the program's `room` bytes at `out`, the descriptors of SCM_RIGHTS
// those `fds` keeps (the rest closed, as the kernel closes those it
// cannot install). The bytes used; *truncated as MSG_CTRUNC.
size_t put_back(const msghdr& got, const std::vector<int>& fds, char* out, size_t room,
                bool* truncated) {
  size_t used = 0;
  bool rights_done = false;
  msghdr in = got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&in); c; c = CMSG_NXTHDR(&in, c)) {
    const bool rights = c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS;
    const size_t left = room - used;
    if (rights) {
      rights_done = true;
      const size_t fit = left < sizeof(cmsghdr) ? 0 : (left - sizeof(cmsghdr)) / sizeof(int);
      const size_t n = std::min(fit, fds.size());
      for (size_t i = n; i < fds.size(); i++) ::close(fds[i]);
      if (n < fds.size()) *truncated = true;
      if (!n) continue;
      cmsghdr h{};
      h.cmsg_level = SOL_SOCKET;
      h.cmsg_type = SCM_RIGHTS;
      h.cmsg_len = CMSG_LEN(n * sizeof(int));
      memcpy(out + used, &h, sizeof h);
      memcpy(out + used + (reinterpret_cast<char*>(CMSG_DATA(&h)) - reinterpret_cast<char*>(&h)),
             fds.data(), n * sizeof(int));
      used += std::min(CMSG_SPACE(n * sizeof(int)), left);
      continue;
    }
    if (left < sizeof(cmsghdr)) {
      *truncated = true;
      break;
    }
    size_t len = c->cmsg_len;
    if (len > left) {
      len = left;
      *truncated = true;
    }
    memcpy(out + used, c, len);
    reinterpret_cast<cmsghdr*>(out + used)->cmsg_len = len;
    used += std::min(CMSG_SPACE(c->cmsg_len - CMSG_LEN(0)), left);
  }
  // Out of room before them: the kernel would have installed none.
  if (!rights_done)
    for (int fd : fds) ::close(fd);
  return used;
}

}  // namespace

bool recv_carried(int fd, msghdr* msg, int flags, ssize_t* got) {
  if (!msg || !interpose::program_writable(msg, sizeof *msg)) return false;
  msghdr h = *msg;
  if (!h.msg_control || h.msg_controllen < CMSG_LEN(sizeof(int)) ||
      !interpose::program_writable(h.msg_control, h.msg_controllen))
    return false;
  if (!unix_socket(fd)) return false;
  // Room for the capsules and their transports besides the program's.
  const size_t program_fds = h.msg_controllen / sizeof(int);
  const size_t extra = std::min<size_t>(program_fds * (1 + kMaxKeep), kMaxFds);
  std::vector<char> control;
  std::vector<char> out;
  try {
    control.resize(h.msg_controllen + CMSG_SPACE(extra * sizeof(int)));
    out.resize(h.msg_controllen);
  } catch (const std::bad_alloc&) {
    return false;
  }
  msghdr r = h;
  r.msg_control = control.data();
  r.msg_controllen = control.size();
  const ssize_t n = interpose::real().recvmsg(fd, &r, flags);
  *got = n;
  if (n < 0) return true;
  const int err = errno;
  std::vector<int> fds;
  try {
    for (cmsghdr* c = CMSG_FIRSTHDR(&r); c; c = CMSG_NXTHDR(&r, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
          int f;
          memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
          fds.push_back(f);
        }
    if (!fds.empty()) {
      // A peek installs copies: the rsockets are built back by the read.
      const bool peek = flags & MSG_PEEK;
      std::vector<bool> extra_at(fds.size());
      std::vector<bool> capsule_at(fds.size());
      std::vector<uint8_t> bytes;
      for (size_t i = 0; i < fds.size(); i++) {
        if (extra_at[i] || !read_capsule(fds[i], &bytes)) continue;
        capsule_at[i] = true;
        if (!build_back(bytes, static_cast<int>(i), fds, &extra_at, !peek))
          SS_WARN("librspreload: fd %d: a passed connection's state names nothing here", fd);
        extra_at[i] = true;
      }
      std::vector<int> program;
      for (size_t i = 0; i < fds.size(); i++)
        if (!extra_at[i])
          program.push_back(fds[i]);
        else if (capsule_at[i] || peek)  // a built connection runs on its transports
          interpose::real().close(fds[i]);
      fds.swap(program);
    }
  } catch (const std::bad_alloc&) {
  }
  bool truncated = r.msg_flags & MSG_CTRUNC;
  const size_t used = put_back(r, fds, out.data(), out.size(), &truncated);
  interpose::copy_to_program(h.msg_control, out.data(), used);
  msg->msg_controllen = used;
  msg->msg_namelen = r.msg_namelen;
  msg->msg_flags = (r.msg_flags & ~MSG_CTRUNC) | (truncated ? MSG_CTRUNC : 0);
  errno = err;
  return true;
}

}  // namespace ss::preload
