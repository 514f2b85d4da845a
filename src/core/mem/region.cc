#include "core/mem/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <new>

#include "core/base/fd_spare.h"
#include "core/mem/region_registry.h"

namespace ss::mem {
namespace {

// The seals a Region carries for life. SHRINK is the one that matters (a
// truncated memfd SIGBUSes every mapping of it); GROW because the size is
// fixed at creation; SEAL so nobody holding the fd can add write seals.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

size_t read_huge_page_size() {
  FILE* f = fopen("/proc/meminfo", "re");
  if (!f) return 0;
  char line[128];
  size_t kib = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "Hugepagesize: %zu kB", &kib) == 1) break;
  fclose(f);
  return kib * 1024;
}

}  // namespace

size_t page_size() {
  static const size_t ps = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return ps;
}

size_t huge_page_size() {
  static const size_t hs = read_huge_page_size();
  return hs;
}

int Region::create(size_t len, const char* name, std::unique_ptr<Region>* out, bool hugepages) {
  if (len == 0 || !out) return -EINVAL;
  const size_t ps = hugepages ? huge_page_size() : page_size();
  if (ps == 0) return -EOPNOTSUPP;
  if (len > SIZE_MAX - (ps - 1)) return -ENOMEM;
  len = (len + ps - 1) & ~(ps - 1);

  int fd = memfd_create(name && *name ? name : "slipstream",
                        MFD_CLOEXEC | MFD_ALLOW_SEALING | (hugepages ? MFD_HUGETLB : 0));
  if (fd < 0) return -errno;
  int err = 0;
  void* addr = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(len)) < 0 || fcntl(fd, F_ADD_SEALS, kSeals) < 0) {
    err = -errno;
  } else {
    addr = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) err = -errno;
  }
  if (err == 0) err = registry::add(addr, len, fd);
  Region* r = nullptr;
  if (err == 0) {
    r = new (std::nothrow) Region(addr, len);
    if (!r) {
      registry::remove(addr);  // closes fd
      munmap(addr, len);
      return -ENOMEM;
    }
  }
  if (err != 0) {
    if (addr != MAP_FAILED) munmap(addr, len);
    release_number(fd);
    return err;
  }
  out->reset(r);
  return 0;
}

Region::~Region() {
  // Unregister first so no lookup can hand out a range that is going away.
  registry::remove(addr_);
  munmap(addr_, len_);
}

int Region::fd() const {
  int fd = -1;
  return registry::find(addr_, len_, &fd, nullptr) ? fd : -1;
}

int Region::map_peer(int fd, size_t len, int prot, void** out) {
  if (fd < 0 || len == 0 || !out) return -EINVAL;
  struct stat st;
  if (fstat(fd, &st) < 0) return -errno;
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) < len) return -EINVAL;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return errno == EINVAL ? -EPERM : -errno;  // not a memfd
  if (!(seals & F_SEAL_SHRINK)) return -EPERM;
  void* addr = mmap(nullptr, len, prot, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return -errno;
  *out = addr;
  return 0;
}

int Region::unmap_peer(void* addr, size_t len) {
  if (!addr || len == 0) return -EINVAL;
  return munmap(addr, len) < 0 ? -errno : 0;
}

bool find_backing(const void* addr, size_t len, int* fd, uint64_t* offset) {
  return registry::find(addr, len, fd, offset);
}

bool take_backing(const void* addr, size_t len, int* fd, uint64_t* offset) {
  return registry::find(addr, len, fd, offset, true);
}

void drop_backing(const void* addr, size_t len) { registry::drop_fd(addr, len); }

}  // namespace ss::mem
