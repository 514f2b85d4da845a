// The verbs resource manager and its MR cache, on a real device. On a host
// without RDMA every case is skipped with the reason; in the Soft-RoCE
// guest (make check-rxe) SLIPSTREAM_TEST_REQUIRE_VERBS=1 turns a missing
// device into a failure.
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/mem/pool.h"
#include "core/res/mr_cache.h"
#include "core/res/pd_registrar.h"
#include "core/res/verbs_manager.h"

namespace {

using ss::res::MrCache;

class VerbsResTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (ss::res::device_count() <= 0) {
      const char* req = getenv("SLIPSTREAM_TEST_REQUIRE_VERBS");
      if (req && *req == '1') FAIL() << "no RDMA device, but SLIPSTREAM_TEST_REQUIRE_VERBS=1";
      GTEST_SKIP() << "no RDMA device on this host (runs in the Soft-RoCE guest: make check-rxe)";
    }
    int n = 0;
    ibv_context** list = rdma_get_devices(&n);
    ASSERT_TRUE(list && n > 0);
    ctx_ = list[0];
    rdma_free_devices(list);
    pd_ = ss::res::pd_for(ctx_);
    ASSERT_NE(nullptr, pd_) << strerror(errno);
    size_t len = 16 * page_;
    mem_ = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, mem_);
    mem_len_ = len;
  }
  void TearDown() override {
    if (mem_ && mem_ != MAP_FAILED) munmap(mem_, mem_len_);
  }
  char* at(size_t page, size_t off = 0) { return static_cast<char*>(mem_) + page * page_ + off; }

  const size_t page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  void* mem_ = nullptr;
  size_t mem_len_ = 0;
  MrCache cache_;
};

constexpr int kLocal = IBV_ACCESS_LOCAL_WRITE;
constexpr int kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

TEST_F(VerbsResTest, OnePdPerDevice) { EXPECT_EQ(pd_, ss::res::pd_for(ctx_)); }

TEST_F(VerbsResTest, CoveredRangesShareOneRegistration) {
  MrCache::Entry *a = nullptr, *b = nullptr;
  ASSERT_EQ(0, cache_.acquire(pd_, at(0, 100), 3 * page_, kRemote, &a));
  // Inside the page-aligned range registered for a: shared.
  ASSERT_EQ(0, cache_.acquire(pd_, at(1, 5), 100, kLocal, &b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(1u, cache_.size());
  EXPECT_EQ(a, cache_.find(pd_, at(2), page_, kRemote));
  EXPECT_EQ(a->mr->lkey, b->mr->lkey);
  // The registration covers whole pages around the buffer.
  EXPECT_LE(reinterpret_cast<uintptr_t>(a->mr->addr), reinterpret_cast<uintptr_t>(at(0, 100)));
  cache_.release(b);
  EXPECT_EQ(1u, cache_.size()) << "still held by a";
  cache_.release(a);
  EXPECT_EQ(0u, cache_.size()) << "the last release deregisters";
  EXPECT_EQ(nullptr, cache_.find(pd_, at(1), 10, kLocal));
}

TEST_F(VerbsResTest, MoreAccessOrAnotherRangeRegistersAgain) {
  MrCache::Entry *local = nullptr, *remote = nullptr, *far = nullptr;
  ASSERT_EQ(0, cache_.acquire(pd_, at(0), page_, kLocal, &local));
  ASSERT_EQ(0, cache_.acquire(pd_, at(0), page_, kRemote, &remote));
  EXPECT_NE(local, remote) << "local-only memory must not be handed out for remote writes";
  ASSERT_EQ(0, cache_.acquire(pd_, at(8), 2 * page_, kLocal, &far));
  EXPECT_NE(local, far);
  EXPECT_EQ(3u, cache_.size());
  // A range straddling two registrations is covered by neither.
  EXPECT_EQ(nullptr, cache_.find(pd_, at(0), 9 * page_, kLocal));
  for (MrCache::Entry* e : {local, remote, far}) cache_.release(e);
  EXPECT_EQ(0u, cache_.size());
}

TEST_F(VerbsResTest, BadArgumentsAreEinval) {
  MrCache::Entry* e = nullptr;
  EXPECT_EQ(-EINVAL, cache_.acquire(nullptr, at(0), 10, kLocal, &e));
  EXPECT_EQ(-EINVAL, cache_.acquire(pd_, nullptr, 10, kLocal, &e));
  EXPECT_EQ(-EINVAL, cache_.acquire(pd_, at(0), 0, kLocal, &e));
}

// Lookups run without a lock while registrations come and go.
TEST_F(VerbsResTest, LookupsDuringChurn) {
  MrCache::Entry* pinned = nullptr;
  ASSERT_EQ(0, cache_.acquire(pd_, at(0), page_, kRemote, &pinned));
  std::atomic<bool> stop{false};
  std::atomic<long> misses{0}, lookups{0};
  std::thread reader([&] {
    while (!stop.load()) {
      if (cache_.find(pd_, at(0, 8), 64, kRemote) != pinned) misses++;
      lookups++;
    }
  });
  for (int i = 0; i < 200; i++) {
    MrCache::Entry* e = nullptr;
    ASSERT_EQ(0, cache_.acquire(pd_, at(2 + i % 10), page_, kLocal, &e));
    cache_.release(e);
  }
  stop = true;
  reader.join();
  EXPECT_EQ(0, misses.load()) << "of " << lookups.load() << " lookups";
  cache_.release(pinned);
}

// Chunks registered through the manager carry the device's keys.
TEST_F(VerbsResTest, PoolRegistersThroughPdRegistrar) {
  std::unique_ptr<ss::mem::Pool> pool;
  ss::mem::PoolOptions opt;
  opt.frames_per_chunk = 16;
  opt.max_chunks = 2;
  ASSERT_EQ(0, ss::mem::Pool::create(opt, &pool));
  ss::res::PdRegistrar reg(pd_);
  size_t before = ss::res::mr_cache().size();
  int idx = pool->add_registrar(&reg);
  ASSERT_GE(idx, 0) << strerror(-idx);
  EXPECT_EQ(before + 1, ss::res::mr_cache().size());
  {
    ss::mem::Buffer b = pool->get();
    ASSERT_TRUE(b);
    MrCache::Entry* e = ss::res::mr_cache().find(pd_, b.data(), b.capacity(), kRemote);
    ASSERT_NE(nullptr, e);
    EXPECT_EQ(e->mr->lkey, b.lkey(idx));
    EXPECT_EQ(e->mr->rkey, b.rkey(idx));
  }
  EXPECT_EQ(0, pool->remove_registrar(&reg));
  EXPECT_EQ(before, ss::res::mr_cache().size());
}

}  // namespace

namespace {

// Fork-safe mode follows RDMAV_FORK_SAFE / IBV_FORK_SAFE (check-rxe runs
// this case once with RDMAV_FORK_SAFE=1 and once without).
TEST_F(VerbsResTest, ForkSafeModeFollowsTheEnvironment) {
  auto set = [](const char* n) {
    const char* v = getenv(n);
    return v && *v && strcmp(v, "0") != 0;
  };
  const bool want = set("RDMAV_FORK_SAFE") || set("IBV_FORK_SAFE");
  EXPECT_EQ(want, ss::res::fork_safe());
  // UNNEEDED: the kernel keeps registered pages correct across fork itself.
  if (want) {
    ibv_fork_status st = ibv_is_fork_initialized();
    EXPECT_TRUE(st == IBV_FORK_ENABLED || st == IBV_FORK_UNNEEDED) << st;
  }
}

}  // namespace

namespace {

// The last connection's release (joining the watcher thread) racing the
// next connection's hold: both must return, every time. (A shared stop
// flag let the new hold revive the old thread: the join never ended.)
TEST_F(VerbsResTest, AsyncWatcherHoldDuringLastRelease) {
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 600 && !done; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!done) {
      fprintf(stderr, "AsyncWatcherHoldDuringLastRelease: stuck for 60 s\n");
      abort();
    }
  });
  for (int i = 0; i < 300; i++) {
    ss::res::hold_async_events(ctx_);
    std::thread releaser([] { ss::res::release_async_events(); });
    ss::res::hold_async_events(ctx_);  // may come before, during or after the join
    releaser.join();
    ss::res::release_async_events();
  }
  done = true;
  watchdog.join();
}

}  // namespace
