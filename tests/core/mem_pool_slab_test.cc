// Pool as verbs uses it (registered slabs that grow on demand) and Buffer:
// carving, exhaustion, the shared reference count, registration handles,
// and concurrent use.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/mem/buffer.h"
#include "core/mem/region.h"
#include "core/mem/pool.h"
#include "tests/core/mem_test_pool.h"

namespace ss::mem {
namespace {

// Records what a provider would see; keys encode (registrar id, serial).
class FakeRegistrar : public Registrar {
 public:
  explicit FakeRegistrar(uint32_t id, int fail_at = -1) : id_(id), fail_at_(fail_at) {}
  int reg(void* addr, size_t len, RegHandle* out) override {
    std::lock_guard lock(mu_);
    if (calls_++ == fail_at_) return -ENOMEM;
    if (live_.count(addr)) return -EEXIST;  // double registration is a bug
    uint32_t key = id_ << 16 | ++serial_;
    live_[addr] = {len, key};
    out->keys.lkey = key;
    out->keys.rkey = key | 0x8000;
    return 0;
  }
  void dereg(void* addr, size_t len, const RegHandle& h) override {
    std::lock_guard lock(mu_);
    auto it = live_.find(addr);
    if (it == live_.end() || it->second.first != len || it->second.second != h.keys.lkey)
      bad_dereg_++;
    else
      live_.erase(it);
    deregs_++;
  }
  size_t live() const {
    std::lock_guard lock(mu_);
    return live_.size();
  }
  int regs() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  int deregs() const {
    std::lock_guard lock(mu_);
    return deregs_;
  }
  int bad_deregs() const {
    std::lock_guard lock(mu_);
    return bad_dereg_;
  }
  // Key of the registered range containing p, or 0.
  uint32_t key_for(const void* p) const {
    std::lock_guard lock(mu_);
    auto c = static_cast<const char*>(p);
    for (auto& [addr, v] : live_) {
      auto a = static_cast<const char*>(addr);
      if (c >= a && c < a + v.first) return v.second;
    }
    return 0;
  }
  void set_fail_at(int n) {
    std::lock_guard lock(mu_);
    fail_at_ = n;
  }

 private:
  mutable std::mutex mu_;
  uint32_t id_;
  int fail_at_;
  int calls_ = 0, deregs_ = 0, bad_dereg_ = 0;
  uint32_t serial_ = 0;
  std::map<void*, std::pair<size_t, uint32_t>> live_;
};

TEST(SlabPoolTest, CreateRejectsBadArguments) {
  std::unique_ptr<Pool> p;
  EXPECT_EQ(Pool::create(pool_options(0, 4, 1, 0), &p), -EINVAL);
  EXPECT_EQ(Pool::create(pool_options(64, 0, 1, 0), &p), -EINVAL);
  EXPECT_EQ(Pool::create(pool_options(64, 4, 0, 0), &p), -EINVAL);
  EXPECT_EQ(Pool::create(pool_options(64, 4, 1, 0), nullptr), -EINVAL);
  EXPECT_EQ(Pool::create(pool_options(SIZE_MAX, 4, 1, 0), &p), -EINVAL);
  EXPECT_EQ(Pool::create(pool_options(1 << 20, SIZE_MAX / 2, 1, 0), &p), -EINVAL);
  EXPECT_EQ(Pool::create(pool_options(2048, 1 << 20, 1 << 20, 0), &p), -EINVAL);  // > 2^32 frames
  EXPECT_EQ(Pool::create(pool_options(2048, 4, 1, 2048), &p), -EINVAL);  // headroom fills the frame
  EXPECT_FALSE(p);
}

TEST(SlabPoolTest, RoundsFrameSizeToPowerOfTwoAndAligns) {
  auto p = make_pool(100, 8, 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_size(), 128u);
  EXPECT_EQ(make_pool(3000, 1, 1)->frame_size(), 4096u);
  EXPECT_EQ(make_pool(1, 1, 1)->frame_size(), 64u);  // at least a cache line
  EXPECT_EQ(make_pool(64, 5, 1)->frames_per_chunk(), 8u);
  EXPECT_EQ(p->chunk_count(), 1u);  // first slab made eagerly
  EXPECT_EQ(p->free_count(), 8u);
  Buffer a = p->get(), b = p->get();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.capacity(), 128u);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  auto d = static_cast<char*>(b.data()) - static_cast<char*>(a.data());
  EXPECT_TRUE(d == 128 || d == -128) << d;
}

TEST(SlabPoolTest, AllocUntilExhaustion) {
  auto p = make_pool(64, 4, 2);
  ASSERT_TRUE(p);
  std::vector<Buffer> held;
  std::set<void*> seen;
  for (int i = 0; i < 8; i++) {
    Buffer b = p->get();
    ASSERT_TRUE(b) << i;
    EXPECT_TRUE(seen.insert(b.data()).second) << "buffer handed out twice";
    std::memset(b.data(), i, b.capacity());  // whole capacity is writable
    held.push_back(std::move(b));
  }
  EXPECT_EQ(p->chunk_count(), 2u);
  EXPECT_EQ(p->free_count(), 0u);
  Buffer none = p->get();
  EXPECT_FALSE(none);
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(none.capacity(), 0u);
  EXPECT_EQ(p->chunk_count(), 2u);

  void* back = held[5].data();
  held[5].reset();
  EXPECT_EQ(p->free_count(), 1u);
  Buffer again = p->get();
  ASSERT_TRUE(again);
  EXPECT_EQ(again.data(), back);
  EXPECT_FALSE(p->get());
}

TEST(SlabPoolTest, BuffersLiveInRegions) {
  auto p = make_pool(2048, 4, 1);
  ASSERT_TRUE(p);
  Buffer a = p->get(), b = p->get();
  ASSERT_TRUE(a && b);
  int fa = -1, fb = -2;
  uint64_t oa = 0, ob = 0;
  ASSERT_TRUE(find_backing(a.data(), a.capacity(), &fa, &oa));
  ASSERT_TRUE(find_backing(b.data(), b.capacity(), &fb, &ob));
  EXPECT_EQ(fa, fb);  // same slab
  EXPECT_NE(oa, ob);
  EXPECT_EQ(oa % 2048, 0u);
}

TEST(BufferTest, ShareCountsReferencesAndLastReleaseReturns) {
  auto p = make_pool(64, 4, 1);
  ASSERT_TRUE(p);
  Buffer a = p->get();
  ASSERT_TRUE(a);
  EXPECT_EQ(a.use_count(), 1u);
  EXPECT_EQ(p->free_count(), 3u);

  Buffer b = a.share();
  Buffer c = b.share();
  EXPECT_EQ(b.data(), a.data());
  EXPECT_EQ(c.data(), a.data());
  EXPECT_EQ(a.use_count(), 3u);
  EXPECT_EQ(p->free_count(), 3u);

  a.reset();
  EXPECT_FALSE(a);
  EXPECT_EQ(b.use_count(), 2u);
  EXPECT_EQ(p->free_count(), 3u);
  b = Buffer();  // move-assigning over a handle releases it
  EXPECT_EQ(c.use_count(), 1u);
  EXPECT_EQ(p->free_count(), 3u);
  c.reset();
  EXPECT_EQ(p->free_count(), 4u);

  Buffer empty;
  EXPECT_FALSE(empty.share());
  EXPECT_EQ(empty.use_count(), 0u);
}

TEST(BufferTest, MoveTransfersTheReference) {
  auto p = make_pool(64, 2, 1);
  ASSERT_TRUE(p);
  Buffer a = p->get();
  void* data = a.data();
  Buffer b(std::move(a));
  EXPECT_FALSE(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.use_count(), 1u);

  Buffer c = p->get();
  ASSERT_TRUE(c);
  EXPECT_EQ(p->free_count(), 0u);
  c = std::move(b);  // c's old buffer goes back, b's moves in
  EXPECT_EQ(p->free_count(), 1u);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.use_count(), 1u);
  Buffer& alias = c;     // through a reference: clang's -Wself-move stays quiet
  c = std::move(alias);  // self-move leaves it intact
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(p->free_count(), 1u);
}

TEST(BufferTest, SizeIsPerHandleBoundedAndResetOnReuse) {
  auto p = make_pool(64, 1, 1);
  ASSERT_TRUE(p);
  Buffer a = p->get();
  ASSERT_TRUE(a);
  EXPECT_EQ(a.set_size(65), -EINVAL);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.set_size(40), 0);
  Buffer b = a.share();
  EXPECT_EQ(b.size(), 40u);  // a share starts with the same view
  EXPECT_EQ(b.set_size(64), 0);
  EXPECT_EQ(a.size(), 40u);  // and then has its own
  a.reset();
  b.reset();
  Buffer c = p->get();
  ASSERT_TRUE(c);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.use_count(), 1u);
  Buffer empty;
  EXPECT_EQ(empty.set_size(0), -EINVAL);
}

TEST(SlabPoolTest, RegistrarSeesEverySlabAndKeysReachBuffers) {
  FakeRegistrar r1(1), r2(2);
  {
    auto p = make_pool(64, 4, 3);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->add_registrar(&r1), 0);  // existing slab
    EXPECT_EQ(r1.regs(), 1);
    EXPECT_EQ(p->add_registrar(&r1), -EEXIST);

    std::vector<Buffer> held;
    for (int i = 0; i < 6; i++) held.push_back(p->get());  // grows a second slab
    EXPECT_EQ(p->chunk_count(), 2u);
    EXPECT_EQ(r1.regs(), 2);
    EXPECT_EQ(r1.live(), 2u);

    EXPECT_EQ(p->add_registrar(&r2), 1);
    EXPECT_EQ(r2.live(), 2u);
    for (int i = 0; i < 6; i++) held.push_back(p->get());  // third slab: both registrars
    EXPECT_EQ(r1.live(), 3u);
    EXPECT_EQ(r2.live(), 3u);

    for (auto& b : held) {
      ASSERT_TRUE(b);
      EXPECT_EQ(b.lkey(0), r1.key_for(b.data()));
      EXPECT_EQ(b.rkey(0), r1.key_for(b.data()) | 0x8000);
      EXPECT_EQ(b.lkey(1), r2.key_for(b.data()));
      EXPECT_EQ(b.rkey(1), r2.key_for(b.data()) | 0x8000);
      EXPECT_NE(b.lkey(0), 0u);
      EXPECT_EQ(b.lkey(2), 0u);  // no registrar there
      EXPECT_EQ(b.lkey(1000), 0u);
    }
    EXPECT_NE(held.front().lkey(0), held.back().lkey(0));  // different slabs
    held.clear();
    EXPECT_EQ(r1.deregs(), 0);
  }
  // Pool destruction deregistered exactly what was registered.
  EXPECT_EQ(r1.live(), 0u);
  EXPECT_EQ(r2.live(), 0u);
  EXPECT_EQ(r1.deregs(), 3);
  EXPECT_EQ(r2.deregs(), 3);
  EXPECT_EQ(r1.bad_deregs(), 0);
  EXPECT_EQ(r2.bad_deregs(), 0);
}

TEST(SlabPoolTest, RemoveRegistrarDeregistersAndFreesIndex) {
  FakeRegistrar r1(1), r2(2);
  auto p = make_pool(64, 2, 4);
  ASSERT_TRUE(p);
  std::vector<Buffer> held;
  for (int i = 0; i < 4; i++) held.push_back(p->get());
  ASSERT_EQ(p->add_registrar(&r1), 0);
  EXPECT_EQ(r1.live(), 2u);
  EXPECT_EQ(p->remove_registrar(&r1), 0);
  EXPECT_EQ(r1.live(), 0u);
  EXPECT_EQ(r1.deregs(), 2);
  EXPECT_EQ(r1.bad_deregs(), 0);
  EXPECT_EQ(held[0].lkey(0), 0u);
  EXPECT_EQ(p->remove_registrar(&r1), -ENOENT);
  // Not told about later slabs either.
  held.push_back(p->get());
  EXPECT_EQ(r1.regs(), 2);
  EXPECT_EQ(p->add_registrar(&r2), 0);  // index reused
  EXPECT_EQ(r2.live(), 3u);
}

TEST(SlabPoolTest, FailedRegistrationIsUndone) {
  // Registrars outlive the pool (its destructor deregisters from them).
  FakeRegistrar bad(7, /*fail_at=*/1);
  FakeRegistrar late(8, /*fail_at=*/2);
  auto p = make_pool(64, 1, 4);
  ASSERT_TRUE(p);
  Buffer a = p->get(), b = p->get();  // two slabs
  ASSERT_EQ(p->chunk_count(), 2u);
  EXPECT_EQ(p->add_registrar(&bad), -ENOMEM);  // first slab ok, second fails
  EXPECT_EQ(bad.live(), 0u);
  EXPECT_EQ(bad.bad_deregs(), 0);
  EXPECT_EQ(a.lkey(0), 0u);

  // A registrar that fails for a new slab makes alloc() report exhaustion.
  ASSERT_EQ(p->add_registrar(&late), 0);
  EXPECT_EQ(late.live(), 2u);
  EXPECT_FALSE(p->get());
  EXPECT_EQ(p->chunk_count(), 2u);
  EXPECT_EQ(late.live(), 2u);
  late.set_fail_at(-1);
  Buffer c = p->get();
  ASSERT_TRUE(c);
  EXPECT_EQ(p->chunk_count(), 3u);
  EXPECT_EQ(c.lkey(0), late.key_for(c.data()));
}

TEST(SlabPoolTest, RegistrarSlotsAreBounded) {
  // Registrars outlive the pool (its destructor deregisters from them).
  std::vector<std::unique_ptr<FakeRegistrar>> rs;
  FakeRegistrar extra(99);
  auto p = make_pool(64, 1, 1);
  ASSERT_TRUE(p);
  for (size_t i = 0; i < kMaxRegistrars; i++) {
    rs.push_back(std::make_unique<FakeRegistrar>(static_cast<uint32_t>(i)));
    EXPECT_EQ(p->add_registrar(rs.back().get()), static_cast<int>(i));
  }
  EXPECT_EQ(p->add_registrar(&extra), -ENOSPC);
  EXPECT_EQ(extra.regs(), 0);
  EXPECT_EQ(p->add_registrar(nullptr), -EINVAL);
  p.reset();
  for (auto& r : rs) EXPECT_EQ(r->live(), 0u);
}

// Threads allocate, share, hand buffers to each other and release them in
// any order; every buffer must be exclusively owned while allocated and all
// must be back at the end.
TEST(SlabPoolTest, ConcurrentAllocShareRelease) {
  constexpr int kThreads = 4, kIters = 20000, kHold = 24;
  constexpr size_t kPerSlab = 16, kSlabs = 4;
  FakeRegistrar r(1);  // before the pool: it must outlive it
  auto p = make_pool(64, kPerSlab, kSlabs);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->add_registrar(&r), 0);

  std::mutex xmu;
  std::vector<Buffer> exchange;  // shared handles released by another thread
  std::atomic<int> errors{0};
  std::atomic<int> allocated{0};

  auto worker = [&](uint64_t tid) {
    std::vector<std::pair<Buffer, uint64_t>> mine;
    for (int i = 0; i < kIters; i++) {
      if (mine.size() < kHold && (i % 3 != 2)) {
        Buffer b = p->get();
        if (!b) continue;  // exhaustion is expected at times
        allocated++;
        if (b.use_count() != 1) errors++;
        uint64_t tag = tid << 32 | static_cast<uint64_t>(i);
        std::memcpy(b.data(), &tag, sizeof tag);
        if (b.lkey(0) == 0) errors++;
        if (i % 5 == 0) {
          std::lock_guard lock(xmu);
          exchange.push_back(b.share());
        }
        mine.emplace_back(std::move(b), tag);
      } else if (!mine.empty()) {
        size_t k = static_cast<size_t>(i) % mine.size();
        uint64_t seen;
        std::memcpy(&seen, mine[k].first.data(), sizeof seen);
        if (seen != mine[k].second) errors++;  // someone else owned it
        std::swap(mine[k], mine.back());
        mine.pop_back();
      }
      if (i % 7 == 0) {
        Buffer drop;
        {
          std::lock_guard lock(xmu);
          if (!exchange.empty()) {
            drop = std::move(exchange.back());
            exchange.pop_back();
          }
        }
      }
    }
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) ts.emplace_back(worker, static_cast<uint64_t>(t + 1));
  for (auto& t : ts) t.join();
  exchange.clear();

  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(allocated.load(), kIters);
  EXPECT_LE(p->chunk_count(), kSlabs);
  EXPECT_EQ(p->free_count(), p->frame_count());
  EXPECT_EQ(r.live(), p->chunk_count());
}

}  // namespace
}  // namespace ss::mem
