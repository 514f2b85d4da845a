#include "libvmacompat/stats_publisher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/base/log.h"
#include "libvmacompat/stats_proc.h"

namespace ss::vma::stats {

namespace {

uint32_t load(const uint32_t& v) {
  return std::atomic_ref<const uint32_t>(v).load(std::memory_order_acquire);
}
void store(uint32_t& v, uint32_t n) {
  std::atomic_ref<uint32_t>(v).store(n, std::memory_order_release);
}
bool claim(uint32_t& state) {
  uint32_t expected = kFree;
  return std::atomic_ref<uint32_t>(state).compare_exchange_strong(
      expected, kClaimed, std::memory_order_acq_rel, std::memory_order_relaxed);
}

// A block's identity changes between an odd and the next even sequence.
template <typename Block, typename Fn>
void rewrite(Block* b, Fn&& fn) {
  store(b->seq, b->seq + 1);
  std::atomic_thread_fence(std::memory_order_release);
  fn(*b);
  store(b->seq, b->seq + 1);
}

// The first free block of `n` from `first`, claimed and filled by `fill`.
template <typename Block, typename Fill>
Block* claim_one(Block* first, uint32_t n, Fill&& fill) {
  for (Block* b = first; b != first + n; ++b) {
    if (load(b->state) != kFree || !claim(b->state)) continue;
    rewrite(b, fill);
    store(b->state, kLive);
    return b;
  }
  return nullptr;
}

template <typename Block>
void release(Block*& b) {
  if (!b) return;
  rewrite(b, [](Block& x) { store(x.state, kFree); });
  b = nullptr;
}

void copy_name(char (&dst)[16], const char* src) {
  memset(dst, 0, sizeof dst);
  if (src) memcpy(dst, src, strnlen(src, sizeof dst));  // no NUL when full: the reader bounds it
}

// Address bytes and port of an AF_INET/AF_INET6 address; false otherwise.
bool split(const sockaddr* sa, socklen_t len, uint8_t& family, uint8_t (&addr)[16],
           uint16_t* port) {
  memset(addr, 0, sizeof addr);
  if (sa && sa->sa_family == AF_INET && len >= sizeof(sockaddr_in)) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    memcpy(addr, &in->sin_addr, 4);
    if (port) *port = in->sin_port;
    family = AF_INET;
    return true;
  }
  if (sa && sa->sa_family == AF_INET6 && len >= sizeof(sockaddr_in6)) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    memcpy(addr, &in6->sin6_addr, 16);
    if (port) *port = in6->sin6_port;
    family = AF_INET6;
    return true;
  }
  if (port) *port = 0;
  return false;
}

void fill_app_name(char (&dst)[32]) {
  memset(dst, 0, sizeof dst);
  const int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = read(fd, dst, sizeof dst - 1);
  close(fd);
  if (n > 0 && dst[n - 1] == '\n') dst[n - 1] = '\0';
}

// DIR/vmastat.PID, mode 0600 whatever the umask. A file already there
// names this pid, so it is a dead process's: it is replaced.
int create_file(const std::string& path, size_t size) {
  int fd = -1;
  for (int attempt = 0; attempt < 2 && fd < 0; ++attempt) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST && attempt == 0) unlink(path.c_str());
  }
  if (fd < 0) return -1;
  if (fchmod(fd, 0600) < 0 || ftruncate(fd, static_cast<off_t>(size)) < 0) {
    const int e = errno;
    close(fd);
    unlink(path.c_str());
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace

std::unique_ptr<Publisher> Publisher::create(const std::string& dir, uint32_t fd_blocks) {
  if (fd_blocks > kMaxFdBlocks) fd_blocks = kMaxFdBlocks;
  const size_t size = file_size_for(fd_blocks);
  std::unique_ptr<Publisher> p(new Publisher());
  p->owner_pid_ = getpid();
  void* base;
  if (dir.empty()) {
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } else {
    p->path_ = stats_path(dir, p->owner_pid_);
    const int fd = create_file(p->path_, size);
    if (fd < 0) {
      const int e = errno;
      SS_WARN("vma_stats: cannot create %s: %s", p->path_.c_str(), strerror(e));
      errno = e;
      return nullptr;
    }
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    close(fd);
    if (base == MAP_FAILED) unlink(p->path_.c_str());
    errno = e;
  }
  if (base == MAP_FAILED) return nullptr;
  p->header_ = static_cast<Header*>(base);
  p->size_ = size;
  Header& h = *p->header_;
  memcpy(h.magic, kMagic, sizeof h.magic);
  h.version = kVersion;
  h.header_size = sizeof(Header);
  h.block_size = sizeof(SocketBlock);
  h.fd_blocks = fd_blocks;
  h.file_size = size;
  h.pid = p->owner_pid_;
  h.start_ticks = process_start_ticks(p->owner_pid_);
  int major = 0, minor = 0, revision = 0;
  sscanf(PACKAGE_VERSION, "%d.%d.%d", &major, &minor, &revision);
  h.ver_info[0] = static_cast<uint8_t>(major);
  h.ver_info[1] = static_cast<uint8_t>(minor);
  h.ver_info[2] = static_cast<uint8_t>(revision);
  strncpy(h.protocol, kProtocol, sizeof h.protocol - 1);
  fill_app_name(h.app_name);
  store(h.state, kLive);
  return p;
}

Publisher::~Publisher() {
  if (!header_) return;
  remove_file();
  munmap(header_, size_);
}

void Publisher::remove_file() {
  if (path_.empty() || getpid() != owner_pid_) return;
  store(header_->state, kClosing);
  unlink(path_.c_str());
  path_.clear();
}

SocketBlock* Publisher::socket_block(uint32_t i) const {
  return reinterpret_cast<SocketBlock*>(reinterpret_cast<char*>(header_) + sizeof(Header)) + i;
}

SocketStats Publisher::open_socket(int fd, int socket_type, bool offloaded) {
  return SocketStats(claim_one(socket_block(0), header_->fd_blocks, [&](SocketBlock& s) {
    constexpr size_t kFrom = offsetof(SocketBlock, fd);  // all but state and seq
    memset(reinterpret_cast<char*>(&s) + kFrom, 0, sizeof s - kFrom);
    s.fd = fd;
    s.socket_type = static_cast<uint8_t>(socket_type);
    s.offloaded = offloaded;
  }));
}

void Publisher::close_socket(SocketStats& s) { release(s.b_); }

GroupStats Publisher::open_group(GroupKind kind, int id, const char* name) {
  GroupBlock* first = kind == kRing         ? header_->rings
                      : kind == kBufferPool ? header_->pools
                                            : header_->iomux;
  const uint32_t n = kind == kRing ? kRingGroups : kind == kBufferPool ? kPoolGroups : kIomuxGroups;
  return GroupStats(claim_one(first, n, [&](GroupBlock& g) {
    g.kind = kind;
    g.id = id;
    copy_name(g.name, name);
    memset(g.c, 0, sizeof g.c);
  }));
}

void Publisher::close_group(GroupStats& g) { release(g.b_); }

void Publisher::detach_after_fork() {
  if (path_.empty() || getpid() == owner_pid_) return;
  // One thread runs in a fresh child: nothing writes while the pages move.
  std::vector<char> copy(reinterpret_cast<char*>(header_),
                         reinterpret_cast<char*>(header_) + size_);
  void* p =
      mmap(header_, size_, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    // The handles must stay valid: keep the shared pages and write on.
    SS_WARN("vma_stats: child %d keeps counting into %s", getpid(), path_.c_str());
  } else {
    memcpy(header_, copy.data(), size_);
  }
  path_.clear();
}

bool SocketStats::snapshot(SocketBlock* out) const {
  if (!b_) return false;
  for (;;) {
    const uint32_t seq = load(b_->seq);
    if (seq & 1) continue;
    memcpy(out, b_, offsetof(SocketBlock, c));
    for (uint32_t i = 0; i < kSocketCounters; i++)
      out->c[i] = std::atomic_ref<uint64_t>(b_->c[i]).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (load(b_->seq) == seq) return true;
  }
}

void SocketStats::set_bound(const sockaddr* sa, socklen_t len) const {
  if (b_)
    rewrite(b_, [&](SocketBlock& b) { split(sa, len, b.family, b.bound_addr, &b.bound_port); });
}

void SocketStats::set_connected(const sockaddr* sa, socklen_t len) const {
  if (b_)
    rewrite(b_,
            [&](SocketBlock& b) { split(sa, len, b.family, b.connected_addr, &b.connected_port); });
}

void SocketStats::set_mc_tx_if(const sockaddr* sa, socklen_t len) const {
  uint8_t family = 0;
  if (b_) rewrite(b_, [&](SocketBlock& b) { split(sa, len, family, b.mc_tx_if, nullptr); });
}

void SocketStats::set_flags(bool offloaded, bool blocking, bool mc_loop) const {
  if (!b_) return;
  rewrite(b_, [&](SocketBlock& b) {
    b.offloaded = offloaded;
    b.blocking = blocking;
    b.mc_loop = mc_loop;
  });
}

}  // namespace ss::vma::stats
