// Region: memfd-backed shared mappings, their seals, the address registry
// and the receiving side's map_peer().
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/mem/region.h"

namespace ss::mem {
namespace {

size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

std::unique_ptr<Region> make(size_t len) {
  std::unique_ptr<Region> r;
  EXPECT_EQ(Region::create(len, "mem-test", &r), 0);
  EXPECT_TRUE(r);
  return r;
}

TEST(RegionTest, CreateRoundsUpToPages) {
  auto a = make(1);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->len(), page());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->addr()) % page(), 0u);
  EXPECT_GE(a->fd(), 0);

  auto b = make(page() + 1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->len(), 2 * page());

  auto c = make(3 * page());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->len(), 3 * page());

  struct stat st;
  ASSERT_EQ(fstat(b->fd(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), b->len());
}

TEST(RegionTest, CreateRejectsBadArguments) {
  std::unique_ptr<Region> r;
  EXPECT_EQ(Region::create(0, "x", &r), -EINVAL);
  EXPECT_FALSE(r);
  EXPECT_EQ(Region::create(page(), "x", nullptr), -EINVAL);
  EXPECT_EQ(Region::create(SIZE_MAX, "x", &r), -ENOMEM);
  EXPECT_FALSE(r);
}

TEST(RegionTest, FdIsCloseOnExec) {
  auto r = make(page());
  ASSERT_TRUE(r);
  int flags = fcntl(r->fd(), F_GETFD);
  ASSERT_GE(flags, 0);
  EXPECT_TRUE(flags & FD_CLOEXEC);
}

TEST(RegionTest, SecondMappingFromFdSharesMemory) {
  auto r = make(2 * page());
  ASSERT_TRUE(r);
  void* m = mmap(nullptr, r->len(), PROT_READ | PROT_WRITE, MAP_SHARED, r->fd(), 0);
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_NE(m, r->addr());
  char* mine = static_cast<char*>(r->addr());
  char* other = static_cast<char*>(m);

  std::strcpy(mine + page() + 7, "through the region");
  EXPECT_STREQ(other + page() + 7, "through the region");
  std::strcpy(other + 3, "through the fd");
  EXPECT_STREQ(mine + 3, "through the fd");
  munmap(m, r->len());
}

TEST(RegionTest, SealsPreventShrinkAndGrow) {
  auto r = make(4 * page());
  ASSERT_TRUE(r);
  int seals = fcntl(r->fd(), F_GET_SEALS);
  ASSERT_GE(seals, 0);
  EXPECT_TRUE(seals & F_SEAL_SHRINK);
  EXPECT_TRUE(seals & F_SEAL_SEAL);

  errno = 0;
  EXPECT_EQ(ftruncate(r->fd(), static_cast<off_t>(page())), -1);
  EXPECT_EQ(errno, EPERM);
  errno = 0;
  EXPECT_EQ(ftruncate(r->fd(), static_cast<off_t>(8 * page())), -1);
  EXPECT_EQ(errno, EPERM);
  // Nobody holding the fd may add seals either (e.g. a write seal).
  EXPECT_EQ(fcntl(r->fd(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);

  struct stat st;
  ASSERT_EQ(fstat(r->fd(), &st), 0);
  EXPECT_EQ(static_cast<size_t>(st.st_size), r->len());
  // Still usable to the last byte.
  static_cast<volatile char*>(r->addr())[r->len() - 1] = 1;
}

TEST(RegionTest, DestructorClosesFd) {
  auto r = make(page());
  ASSERT_TRUE(r);
  int fd = r->fd();
  r.reset();
  errno = 0;
  EXPECT_EQ(fcntl(fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
}

// The memfd is handed over once (the shm provider passes it to its peer
// and closes it); the mapping stays, and nothing else sees the fd again.
TEST(RegionTest, TakeBackingHandsTheFdOverOnce) {
  auto r = make(2 * page());
  ASSERT_TRUE(r);
  char* base = static_cast<char*>(r->addr());
  const int held = r->fd();
  int fd = -1;
  uint64_t off = 0;
  ASSERT_TRUE(take_backing(base + page(), 16, &fd, &off));
  EXPECT_EQ(fd, held);
  EXPECT_EQ(off, page());
  EXPECT_EQ(r->fd(), -1);
  EXPECT_FALSE(find_backing(base, 16, nullptr, nullptr));
  EXPECT_FALSE(take_backing(base, 16, &fd, &off));
  // The fd is the caller's: the Region does not close it.
  r.reset();
  EXPECT_EQ(fcntl(held, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  close(held);
}

TEST(RegionTest, DropBackingClosesTheFdAndKeepsTheMapping) {
  auto r = make(page());
  ASSERT_TRUE(r);
  const int held = r->fd();
  ASSERT_GE(held, 0);
  drop_backing(r->addr(), 1);
  errno = 0;
  EXPECT_EQ(fcntl(held, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(r->fd(), -1);
  EXPECT_FALSE(find_backing(r->addr(), 1, nullptr, nullptr));
  static_cast<volatile char*>(r->addr())[r->len() - 1] = 1;
}

TEST(RegionTest, FindBackingInsideRegion) {
  auto r = make(4 * page());
  ASSERT_TRUE(r);
  char* base = static_cast<char*>(r->addr());
  int fd = -1;
  uint64_t off = 12345;

  ASSERT_TRUE(find_backing(base, r->len(), &fd, &off));
  EXPECT_EQ(fd, r->fd());
  EXPECT_EQ(off, 0u);

  ASSERT_TRUE(find_backing(base + page() + 100, 200, &fd, &off));
  EXPECT_EQ(fd, r->fd());
  EXPECT_EQ(off, page() + 100);

  ASSERT_TRUE(find_backing(base + r->len() - 1, 1, &fd, &off));
  EXPECT_EQ(off, r->len() - 1);
}

TEST(RegionTest, FindBackingRejectsStraddlingAndOutside) {
  auto a = make(page());
  auto b = make(page());
  ASSERT_TRUE(a && b);
  for (Region* r : {a.get(), b.get()}) {
    char* base = static_cast<char*>(r->addr());
    // Past the end, even if the next region happens to be adjacent.
    EXPECT_FALSE(find_backing(base + r->len() - 8, 16, nullptr, nullptr));
    EXPECT_FALSE(find_backing(base - 8, 16, nullptr, nullptr));
    EXPECT_FALSE(find_backing(base, r->len() + 1, nullptr, nullptr));
  }
  int on_stack = 0;
  EXPECT_FALSE(find_backing(&on_stack, sizeof on_stack, nullptr, nullptr));
  // Wrap-around must not look like a small range.
  EXPECT_FALSE(find_backing(a->addr(), SIZE_MAX, nullptr, nullptr));
}

TEST(RegionTest, FindBackingDistinguishesRegions) {
  auto a = make(page());
  auto b = make(2 * page());
  ASSERT_TRUE(a && b);
  int fd = -1;
  uint64_t off = 0;
  ASSERT_TRUE(find_backing(static_cast<char*>(b->addr()) + 5, 1, &fd, &off));
  EXPECT_EQ(fd, b->fd());
  EXPECT_EQ(off, 5u);
  ASSERT_TRUE(find_backing(static_cast<char*>(a->addr()) + 9, 1, &fd, &off));
  EXPECT_EQ(fd, a->fd());
  EXPECT_EQ(off, 9u);
}

TEST(RegionTest, FindBackingFailsAfterDestroy) {
  auto r = make(2 * page());
  ASSERT_TRUE(r);
  void* addr = r->addr();
  ASSERT_TRUE(find_backing(addr, 1, nullptr, nullptr));
  r.reset();
  EXPECT_FALSE(find_backing(addr, 1, nullptr, nullptr));
}

TEST(RegionTest, MapPeerSharesMemory) {
  auto r = make(2 * page());
  ASSERT_TRUE(r);
  void* m = nullptr;
  ASSERT_EQ(Region::map_peer(r->fd(), r->len(), PROT_READ | PROT_WRITE, &m), 0);
  ASSERT_NE(m, nullptr);
  std::strcpy(static_cast<char*>(r->addr()) + page(), "hello peer");
  EXPECT_STREQ(static_cast<char*>(m) + page(), "hello peer");
  static_cast<char*>(m)[0] = 'Z';
  EXPECT_EQ(static_cast<char*>(r->addr())[0], 'Z');
  // A peer mapping is not one of our Regions.
  EXPECT_FALSE(find_backing(m, 1, nullptr, nullptr));
  EXPECT_EQ(Region::unmap_peer(m, r->len()), 0);
}

TEST(RegionTest, MapPeerRejectsShortFd) {
  auto r = make(page());
  ASSERT_TRUE(r);
  void* m = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(Region::map_peer(r->fd(), r->len() + 1, PROT_READ, &m), -EINVAL);
  EXPECT_EQ(Region::map_peer(r->fd(), 2 * page(), PROT_READ, &m), -EINVAL);
  EXPECT_EQ(m, reinterpret_cast<void*>(0x1));  // untouched on failure
  // A shorter view is fine.
  ASSERT_EQ(Region::map_peer(r->fd(), 100, PROT_READ, &m), 0);
  EXPECT_EQ(Region::unmap_peer(m, 100), 0);
}

TEST(RegionTest, MapPeerRejectsUnsealedOrBadFd) {
  void* m = nullptr;
  int fd = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(page())), 0);
  // The sender could truncate it under us and SIGBUS this process.
  EXPECT_EQ(Region::map_peer(fd, page(), PROT_READ, &m), -EPERM);
  close(fd);
  EXPECT_EQ(Region::map_peer(fd, page(), PROT_READ, &m), -EBADF);
  EXPECT_EQ(Region::map_peer(-1, page(), PROT_READ, &m), -EINVAL);
  EXPECT_EQ(Region::unmap_peer(nullptr, page()), -EINVAL);
}

TEST(RegionTest, RegistryLookupsRaceWithCreateAndDestroy) {
  auto stable = make(4 * page());
  ASSERT_TRUE(stable);
  char* base = static_cast<char*>(stable->addr());
  std::atomic<bool> stop{false};
  std::atomic<int> misses{0};
  std::thread churn([&] {
    for (int i = 0; i < 300; i++) {
      std::unique_ptr<Region> r;
      if (Region::create(page() * (1 + i % 3), "churn", &r) != 0) misses++;
    }
    stop = true;
  });
  std::thread reader([&] {
    uint64_t n = 0;
    do {
      int fd;
      uint64_t off;
      size_t o = (n++ * 97) % (stable->len() - 16);
      if (!find_backing(base + o, 16, &fd, &off) || fd != stable->fd() || off != o) misses++;
    } while (!stop);
  });
  churn.join();
  reader.join();
  EXPECT_EQ(misses.load(), 0);
  EXPECT_TRUE(find_backing(base, stable->len(), nullptr, nullptr));
}

}  // namespace
}  // namespace ss::mem
