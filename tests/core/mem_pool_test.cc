// Pool and Buffer as AF_XDP and the VMA face use them: one contiguous area
// addressed by offset, headroom and per-handle views, chained frames, raw
// payload pointers given back (and refused), the recycle hook, per-thread
// caches under four threads, hugepages falling back to normal pages.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/mem/buffer.h"
#include "core/mem/pool.h"
#include "core/mem/region.h"
#include "core/mem/thread_slots.h"
#include "tests/core/mem_test_pool.h"

namespace ss::mem {
namespace {

// What an AF_XDP provider registers: the UMEM is one area, so its only
// chunk starts at offset 0 of it.
class UmemRegistrar : public Registrar {
 public:
  int reg(void* addr, size_t len, RegHandle* out) override {
    base = addr;
    bytes = len;
    out->offset = 0;
    return 0;
  }
  void dereg(void*, size_t, const RegHandle&) override { base = nullptr; }
  void* base = nullptr;
  size_t bytes = 0;
};

TEST(PoolUmemTest, OneAreaFramesAtBasePlusIndexTimesFrameSize) {
  UmemRegistrar umem;  // before the pool: its destructor deregisters from it
  auto p = make_pool(2048, 64, 1, 256, Backing::kPrivate);
  ASSERT_TRUE(p);
  const int idx = p->add_registrar(&umem);
  ASSERT_GE(idx, 0);
  char* base = static_cast<char*>(p->chunk_base(0));
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(umem.base, base);
  EXPECT_EQ(umem.bytes, 64u * 2048);
  EXPECT_EQ(p->chunk_bytes(), 64u * 2048);
  EXPECT_EQ(p->frame_count(), 64u);

  std::vector<Buffer> all;
  std::set<uint64_t> indices;
  for (int i = 0; i < 64; i++) {
    Buffer b = p->get();
    ASSERT_TRUE(b) << i;
    const uint64_t off = static_cast<char*>(b.frame()) - base;
    EXPECT_EQ(off % 2048, 0u);
    EXPECT_LT(off, 64u * 2048);
    indices.insert(off / 2048);
    // The address a UMEM descriptor carries for this payload.
    EXPECT_EQ(b.reg(idx).offset + b.chunk_offset(), off + 256);
    EXPECT_EQ(static_cast<char*>(b.data()), base + off + 256);
    all.push_back(std::move(b));
  }
  EXPECT_EQ(indices.size(), 64u);  // every index exactly once
  EXPECT_FALSE(p->get());          // one area never grows
  EXPECT_EQ(p->chunk_count(), 1u);
  all.clear();
  EXPECT_EQ(p->free_count(), 64u);
}

TEST(PoolUmemTest, PrivateAreaIsNotAPeerRegion) {
  auto priv = make_pool(2048, 4, 1, 0, Backing::kPrivate);
  auto shared = make_pool(2048, 4, 1, 0, Backing::kShared);
  ASSERT_TRUE(priv && shared);
  EXPECT_FALSE(find_backing(priv->chunk_base(0), 1, nullptr, nullptr));
  EXPECT_TRUE(find_backing(shared->chunk_base(0), shared->chunk_bytes(), nullptr, nullptr));
}

// As librsocket holds a connection buffer (conn_buffer.h): one frame, one
// chunk, the buffer's size rounded up to a power of two, and that chunk is
// one memfd region a peer can map, holding nothing else.
TEST(PoolConnBufferTest, OneFramePoolIsOneWholePeerRegion) {
  auto p = make_pool(100000, 1, 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->frame_size(), 131072u);
  EXPECT_EQ(p->chunk_bytes(), 131072u);
  Buffer b = p->get();
  ASSERT_TRUE(b);
  EXPECT_EQ(b.data(), p->chunk_base(0));
  EXPECT_EQ(b.capacity(), 131072u);
  int fd = -1;
  uint64_t off = 1;
  EXPECT_TRUE(find_backing(b.data(), b.capacity(), &fd, &off));
  EXPECT_GE(fd, 0);
  EXPECT_EQ(off, 0u);
  EXPECT_FALSE(p->get()) << "a second buffer would share the peer's mapping";
  b.reset();
  EXPECT_EQ(p->free_count(), 1u);
}

TEST(BufferViewTest, HeadroomPushPullAndIndependentViews) {
  auto p = make_pool(2048, 4, 1, 128);
  ASSERT_TRUE(p);
  Buffer a = p->get();
  ASSERT_TRUE(a);
  EXPECT_EQ(a.offset(), 128u);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.capacity(), 2048u - 128);
  EXPECT_EQ(static_cast<char*>(a.data()), static_cast<char*>(a.frame()) + 128);
  EXPECT_EQ(a.set_size(2048 - 128 + 1), -EINVAL);
  ASSERT_EQ(a.set_size(100), 0);
  std::memset(a.data(), 'p', 100);

  // A 14-byte header goes in front of the payload, in the headroom.
  ASSERT_EQ(a.push_head(14), 0);
  EXPECT_EQ(a.offset(), 114u);
  EXPECT_EQ(a.size(), 114u);
  std::memset(a.data(), 'h', 14);
  EXPECT_EQ(a.push_head(115), -EINVAL);
  EXPECT_EQ(a.offset(), 114u);

  Buffer b = a.share();
  ASSERT_EQ(b.pull_head(14), 0);  // this holder strips the header
  EXPECT_EQ(static_cast<char*>(b.data())[0], 'p');
  EXPECT_EQ(b.size(), 100u);
  EXPECT_EQ(a.size(), 114u);  // the other keeps its own view
  EXPECT_EQ(static_cast<char*>(a.data())[0], 'h');
  EXPECT_EQ(b.pull_head(101), -EINVAL);
  EXPECT_EQ(b.frame(), a.frame());

  // Where a device wrote: any view inside the frame, nothing past it.
  ASSERT_EQ(b.set_view(256 + 64, 1000), 0);
  EXPECT_EQ(b.offset(), 320u);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(b.set_view(2048, 0), 0);
  EXPECT_EQ(b.set_view(2000, 49), -EINVAL);
  EXPECT_EQ(b.set_view(2049, 0), -EINVAL);
  EXPECT_EQ(b.offset(), 2048u);
}

TEST(BufferChainTest, AppendWalkAndReleaseTheWholeChain) {
  auto p = make_pool(64, 8, 1, 16);
  ASSERT_TRUE(p);
  Buffer a = p->get(), b = p->get(), c = p->get();
  ASSERT_TRUE(a && b && c);
  void* fb = b.frame();
  void* fc = c.frame();
  a.set_size(10);
  b.set_size(20);
  c.set_size(30);
  ASSERT_EQ(c.pull_head(5), 0);  // the link keeps the view it was given
  ASSERT_EQ(a.append(std::move(b)), 0);
  EXPECT_FALSE(b);
  ASSERT_EQ(a.append(std::move(c)), 0);  // goes after b
  EXPECT_EQ(a.chain_size(), 10u + 20 + 25);
  EXPECT_EQ(p->free_count(), 5u);

  Buffer n1 = a.next();
  ASSERT_TRUE(n1);
  EXPECT_EQ(n1.frame(), fb);
  EXPECT_EQ(n1.size(), 20u);
  Buffer n2 = n1.next();
  ASSERT_TRUE(n2);
  EXPECT_EQ(n2.frame(), fc);
  EXPECT_EQ(n2.size(), 25u);
  EXPECT_EQ(n2.offset(), 21u);
  EXPECT_FALSE(n2.next());
  EXPECT_EQ(n1.use_count(), 2u);  // the link and n1
  n1.reset();
  n2.reset();

  // Releasing the head releases every frame the chain holds.
  a.reset();
  EXPECT_EQ(p->free_count(), 8u);
}

TEST(BufferChainTest, SharedFramesCannotBeRelinked) {
  auto p = make_pool(64, 8, 1);
  ASSERT_TRUE(p);
  Buffer a = p->get(), b = p->get(), c = p->get();
  ASSERT_TRUE(a && b && c);
  Buffer b2 = b.share();
  EXPECT_EQ(a.append(std::move(b)), -EBUSY);  // tail held elsewhere
  EXPECT_TRUE(b);
  b2.reset();
  Buffer a2 = a.share();
  EXPECT_EQ(a.append(std::move(b)), -EBUSY);  // last frame held elsewhere
  a2.reset();
  Buffer self = a.share();
  EXPECT_EQ(a.append(std::move(self)), -EBUSY);  // no loops
  self.reset();
  EXPECT_EQ(a.append(Buffer()), -EINVAL);
  ASSERT_EQ(a.append(std::move(b)), 0);

  Buffer rest;
  Buffer a3 = a.share();
  EXPECT_EQ(a.unchain(&rest), -EBUSY);
  a3.reset();
  ASSERT_EQ(a.unchain(&rest), 0);
  ASSERT_TRUE(rest);
  EXPECT_FALSE(a.next());
  EXPECT_EQ(rest.use_count(), 1u);
  rest.reset();
  a.reset();
  c.reset();
  EXPECT_EQ(p->free_count(), 8u);
}

// A TCP segment over several frames trimmed as one: its front already
// seen, its back beyond the window.
TEST(BufferChainTest, PullAndTruncateAcrossFrames) {
  auto p = make_pool(64, 8, 1);
  ASSERT_TRUE(p);
  auto chain = [&] {  // 10 + 20 + 30 bytes
    Buffer a = p->get(), b = p->get(), c = p->get();
    a.set_size(10);
    b.set_size(20);
    c.set_size(30);
    EXPECT_EQ(a.append(std::move(b)), 0);
    EXPECT_EQ(a.append(std::move(c)), 0);
    return a;
  };
  Buffer a = chain();
  void* second = a.next().frame();
  EXPECT_EQ(a.chain_pull_head(61), -EINVAL);
  ASSERT_EQ(a.chain_pull_head(15), 0);  // the first frame let go, 5 of the second
  EXPECT_EQ(a.frame(), second);
  EXPECT_EQ(a.size(), 15u);
  EXPECT_EQ(a.chain_size(), 45u);
  EXPECT_EQ(p->free_count(), 6u);
  ASSERT_EQ(a.chain_truncate(20), 0);  // the third frame keeps 5
  EXPECT_EQ(a.chain_size(), 20u);
  EXPECT_EQ(a.next().size(), 5u);
  ASSERT_EQ(a.chain_truncate(15), 0);  // exactly the head: the rest let go
  EXPECT_FALSE(a.next());
  EXPECT_EQ(p->free_count(), 7u);
  EXPECT_EQ(a.chain_truncate(16), -EINVAL);
  a.reset();

  Buffer b = chain();
  ASSERT_EQ(b.chain_pull_head(30), 0);  // two whole frames: the third's whole view
  EXPECT_EQ(b.size(), 30u);
  ASSERT_EQ(b.chain_pull_head(30), 0);  // all of it: an empty view, still held
  EXPECT_EQ(b.chain_size(), 0u);
  b.reset();

  Buffer c = chain();
  Buffer held = c.share();
  EXPECT_EQ(c.chain_pull_head(10), -EBUSY);  // the head has another holder
  EXPECT_EQ(c.chain_truncate(5), -EBUSY);
  EXPECT_EQ(c.chain_size(), 60u);
  held.reset();
  c.reset();
  EXPECT_EQ(p->free_count(), 8u);
}

TEST(BufferRawTest, GivenBackOnceThenRefused) {
  auto p = make_pool(2048, 8, 1, 64);
  ASSERT_TRUE(p);
  Buffer a = p->get();
  ASSERT_TRUE(a);
  a.set_size(42);
  void* frame = a.frame();
  void* raw = a.into_raw();
  EXPECT_FALSE(a);
  EXPECT_EQ(raw, static_cast<char*>(frame) + 64);
  EXPECT_EQ(p->free_count(), 7u);  // lent, not free

  Buffer back;
  ASSERT_EQ(p->from_raw(raw, &back), 0);
  EXPECT_EQ(back.frame(), frame);
  EXPECT_EQ(back.data(), raw);
  EXPECT_EQ(back.use_count(), 1u);
  // Given back twice: refused, and the first handle is untouched.
  Buffer twice;
  EXPECT_EQ(p->from_raw(raw, &twice), -EINVAL);
  EXPECT_FALSE(twice);
  EXPECT_EQ(back.use_count(), 1u);

  // Stale: the frame was recycled; held again but not lent.
  back.reset();
  EXPECT_EQ(p->from_raw(raw, &twice), -EINVAL);
  Buffer again = p->get();
  ASSERT_TRUE(again);
  EXPECT_EQ(p->from_raw(again.data(), &twice), -EINVAL);
  EXPECT_EQ(again.use_count(), 1u);
  EXPECT_EQ(p->free_count(), 7u);
}

TEST(BufferRawTest, ForeignPointersRefused) {
  auto p = make_pool(2048, 8, 1);
  auto other = make_pool(2048, 8, 1);
  ASSERT_TRUE(p && other);
  Buffer o = other->get();
  ASSERT_TRUE(o);
  void* theirs = o.into_raw();
  Buffer out;
  int on_stack = 0;
  EXPECT_EQ(p->from_raw(&on_stack, &out), -EINVAL);
  EXPECT_EQ(p->from_raw(nullptr, &out), -EINVAL);
  EXPECT_EQ(p->from_raw(theirs, &out), -EINVAL);  // lent, but by another pool
  char* base = static_cast<char*>(p->chunk_base(0));
  EXPECT_EQ(p->from_raw(base - 1, &out), -EINVAL);
  EXPECT_EQ(p->from_raw(base + p->chunk_bytes(), &out), -EINVAL);
  EXPECT_FALSE(out);
  ASSERT_EQ(other->from_raw(theirs, &out), 0);  // its own pool takes it
  EXPECT_EQ(p->free_count(), 8u);
}

TEST(BufferRawTest, PointerInsideLentFrameAndLentFrameOutlivesHandles) {
  auto p = make_pool(2048, 8, 1);
  ASSERT_TRUE(p);
  Buffer a = p->get();
  ASSERT_TRUE(a);
  Buffer keep = a.share();
  char* frame = static_cast<char*>(a.frame());
  a.into_raw();
  keep.reset();  // the raw reference still holds the frame
  EXPECT_EQ(p->free_count(), 7u);
  // A device reports where it wrote (an rx descriptor): any byte of the frame.
  Buffer back;
  ASSERT_EQ(p->from_raw(frame + 300, &back), 0);
  EXPECT_EQ(back.offset(), 300u);
  EXPECT_EQ(back.size(), 0u);
  back.reset();
  EXPECT_EQ(p->free_count(), 8u);
}

// A fill ring of fixed capacity: takes frames while it has room.
class FillRing : public Recycler {
 public:
  explicit FillRing(size_t cap) : cap_(cap) {}
  void recycle(Buffer& frame) override {
    std::lock_guard lock(mu_);
    views_ok = views_ok && frame.use_count() == 1 && frame.size() == 0 &&
               frame.offset() == frame.pool()->headroom();
    if (ring.size() < cap_) ring.push_back(std::move(frame));
  }
  std::mutex mu_;
  size_t cap_;
  std::vector<Buffer> ring;
  bool views_ok = true;
};

TEST(PoolRecycleTest, ReleasedFramesGoToTheRecyclerFirst) {
  auto p = make_pool(2048, 16, 1, 32);
  ASSERT_TRUE(p);
  FillRing fill(3);
  p->set_recycler(&fill);
  std::vector<Buffer> held;
  for (int i = 0; i < 5; i++) held.push_back(p->get());
  held[0].set_size(100);
  held[0].pull_head(10);
  for (int i = 0; i < 4; i++) ASSERT_EQ(held[0].append(std::move(held[i + 1])), 0);
  EXPECT_EQ(p->free_count(), 11u);
  held.clear();  // the chain: five frames, one by one
  EXPECT_TRUE(fill.views_ok);
  EXPECT_EQ(fill.ring.size(), 3u);  // the ring took what it had room for
  EXPECT_EQ(p->free_count(), 13u);  // the rest went to the free list
  p->set_recycler(nullptr);
  Buffer x = std::move(fill.ring[0]);
  x.reset();
  EXPECT_EQ(fill.ring.size(), 3u);
  EXPECT_EQ(p->free_count(), 14u);
  fill.ring.clear();
  EXPECT_EQ(p->free_count(), 16u);
}

// A recycler that notes any call running once it counts as destroyed.
class WatchedRecycler : public Recycler {
 public:
  void recycle(Buffer&) override {  // leaves the frame: the free list takes it
    if (dead.load()) called_after.store(true);
    calls.fetch_add(1);
    for (int i = 0; i < 4; i++) std::this_thread::yield();  // a call in progress
    if (dead.load()) called_after.store(true);
  }
  std::atomic<bool> dead{false}, called_after{false};
  std::atomic<int> calls{0};
};

// set_recycler(nullptr) returns only once no release is inside the old
// recycler (the XdpQueue destroys its own right after): never called after.
TEST(PoolRecycleTest, ClearedRecyclerIsNeverCalledAfterSetReturns) {
  // A yield may wait a whole time slice on a busy machine: few rounds
  // and looks (the rounds' count decides how often a bad order is tried).
  constexpr int kRounds = 50, kThreads = 2, kLooks = 20;
  auto p = make_pool(256, 64, 1, 32);
  ASSERT_TRUE(p);
  for (int round = 0; round < kRounds; round++) {
    auto r = std::make_unique<WatchedRecycler>();
    p->set_recycler(r.get());
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
      threads.emplace_back([&] {
        while (!stop.load()) p->get().reset();
      });
    while (r->calls.load() < 8) std::this_thread::yield();
    p->set_recycler(nullptr);
    r->dead.store(true);  // destroyed, as far as the pool may know
    const int calls = r->calls.load();
    for (int i = 0; i < kLooks && r->calls.load() == calls; i++) std::this_thread::yield();
    stop.store(true);
    for (auto& th : threads) th.join();
    ASSERT_FALSE(r->called_after.load()) << "round " << round;
    EXPECT_EQ(r->calls.load(), calls);
  }
}

// Four threads get, share, hand over, lend and give back frames at once;
// each frame is owned by one thread at a time (tags survive) and every frame
// is back at the end.
TEST(PoolThreadsTest, FourThreadsGetAndPutAtOnce) {
  constexpr int kThreads = 4, kRounds = 20000, kHold = 16;
  auto p = make_pool(256, 256, 2, 32);
  ASSERT_TRUE(p);
  std::mutex xmu;
  std::vector<Buffer> exchange;  // released by whichever thread takes them
  std::vector<void*> lent;       // raw pointers given back by another thread
  std::atomic<int> errors{0}, got{0};

  auto worker = [&](uint64_t tid) {
    std::vector<std::pair<Buffer, uint64_t>> mine;
    for (int i = 0; i < kRounds; i++) {
      if (mine.size() < kHold && i % 3 != 2) {
        Buffer b = p->get();
        if (!b) continue;  // others may hold everything for a moment
        got++;
        if (b.use_count() != 1 || b.offset() != 32) errors++;
        const uint64_t tag = tid << 32 | static_cast<uint64_t>(i);
        std::memcpy(b.data(), &tag, sizeof tag);
        std::lock_guard lock(xmu);
        if (i % 5 == 0) exchange.push_back(b.share());
        if (i % 7 == 0) {
          lent.push_back(b.into_raw());
          continue;
        }
        mine.emplace_back(std::move(b), tag);
      } else if (!mine.empty()) {
        const size_t k = static_cast<size_t>(i) % mine.size();
        uint64_t seen;
        std::memcpy(&seen, mine[k].first.data(), sizeof seen);
        if (seen != mine[k].second) errors++;  // someone else wrote it
        std::swap(mine[k], mine.back());
        mine.pop_back();
      }
      if (i % 4 == 0) {
        Buffer drop;
        void* raw = nullptr;
        {
          std::lock_guard lock(xmu);
          if (!exchange.empty()) {
            drop = std::move(exchange.back());
            exchange.pop_back();
          }
          if (!lent.empty()) {
            raw = lent.back();
            lent.pop_back();
          }
        }
        Buffer r;
        if (raw && p->from_raw(raw, &r) != 0) errors++;
        if (raw && p->from_raw(raw, &drop) != -EINVAL) errors++;  // only once
      }
    }
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; t++) ts.emplace_back(worker, static_cast<uint64_t>(t + 1));
  for (auto& t : ts) t.join();
  exchange.clear();
  for (void* raw : lent) {
    Buffer r;
    EXPECT_EQ(p->from_raw(raw, &r), 0);
  }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(got.load(), kRounds);
  EXPECT_EQ(p->free_count(), p->frame_count());  // no leaks
  // And every one of them can be had again from here: nothing is stranded
  // in the caches of threads that exited.
  std::vector<Buffer> all;
  for (Buffer b = p->get(); b; b = p->get()) all.push_back(std::move(b));
  EXPECT_EQ(all.size(), p->frame_count());
}

TEST(PoolThreadsTest, ThreadCacheGoesBackWhenTheThreadExits) {
  auto p = make_pool(64, 256, 1);  // one area, so frames cannot come from growth
  ASSERT_TRUE(p);
  std::thread t([&] {
    std::vector<Buffer> v;
    for (int i = 0; i < 40; i++) v.push_back(p->get());
    v.clear();  // into this thread's cache, then spilled past its capacity
  });
  t.join();
  std::vector<Buffer> all;
  for (Buffer b = p->get(); b; b = p->get()) all.push_back(std::move(b));
  EXPECT_EQ(all.size(), 256u);
}

// Made in a thread before its first pool use, so destroyed after the
// thread gave its slot back: it uses the pool then, as an exit handler or
// another thread_local's destructor may. What it saw goes to globals (the
// thread's storage is gone after join).
std::atomic<int> g_late_slot{0};
std::atomic<bool> g_late_got{false};
struct UsesPoolAfterItsSlot {
  Pool* pool = nullptr;
  ~UsesPoolAfterItsSlot() {
    if (!pool) return;
    g_late_slot = detail::thread_slot();
    Buffer b = pool->get();
    g_late_got = static_cast<bool>(b);
  }
};
thread_local UsesPoolAfterItsSlot t_late;

TEST(PoolThreadsTest, AThreadPastItsSlotUsesTheSharedList) {
  auto p = make_pool(64, 256, 1);
  ASSERT_TRUE(p);
  int slot = -5;
  std::thread t([&] {
    t_late.pool = p.get();  // first: destroyed after the thread's slot
    std::vector<Buffer> v;
    for (int i = 0; i < 8; i++) v.push_back(p->get());
    slot = detail::thread_slot();
  });
  t.join();
  EXPECT_GE(slot, 0);
  EXPECT_TRUE(g_late_got.load());
  // It kept the slot before: another thread taking it then ran the same
  // cache unlocked (a frame handed out twice).
  EXPECT_LT(g_late_slot.load(), 0);
  EXPECT_EQ(p->free_count(), p->frame_count());
}

TEST(PoolThreadsTest, ForkChildGetsTheCachesOfThreadsItDidNotInherit) {
  auto p = make_pool(64, 256, 1);
  ASSERT_TRUE(p);
  std::mutex mu;
  std::condition_variable cv;
  bool cached = false, done = false;
  std::thread t([&] {
    {
      std::vector<Buffer> v;
      for (int i = 0; i < 40; i++) v.push_back(p->get());
    }  // now in this thread's cache, which it keeps while it lives
    std::unique_lock lock(mu);
    cached = true;
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return cached; });
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    size_t n = 0;
    std::vector<Buffer> all;
    for (Buffer b = p->get(); b; b = p->get()) all.push_back(std::move(b));
    n = all.size();
    _exit(n == 256 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  t.join();
}

// dont_fork: a fork child has no copy of the frames (msync finds no
// mapping there), the parent's stay as they were.
TEST(PoolTest, DontForkLeavesTheAreaOutOfAChild) {
  for (bool dont_fork : {false, true}) {
    PoolOptions o;
    o.frames_per_chunk = 16;
    o.backing = Backing::kPrivate;
    o.dont_fork = dont_fork;
    std::unique_ptr<Pool> p;
    ASSERT_EQ(Pool::create(o, &p), 0);
    Buffer b = p->get();
    ASSERT_TRUE(b);
    memset(b.data(), 0x5a, 64);
    void* base = p->chunk_base(0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const bool mapped = msync(base, 4096, MS_ASYNC) == 0;
      _exit(mapped == !dont_fork ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << (dont_fork ? "the child got the area" : "the child lost an ordinary pool");
    EXPECT_EQ(static_cast<const uint8_t*>(b.data())[63], 0x5a);
  }
}

// HugePages_Free from /proc/meminfo (0 when absent).
size_t free_hugepages() {
  FILE* f = fopen("/proc/meminfo", "re");
  if (!f) return 0;
  char line[128];
  size_t n = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "HugePages_Free: %zu", &n) == 1) break;
  fclose(f);
  return n;
}

TEST(PoolHugepagesTest, AllowedButUnavailableFallsBackToNormalPages) {
  for (Backing backing : {Backing::kPrivate, Backing::kShared}) {
    PoolOptions opt;
    opt.frame_size = 4096;
    opt.frames_per_chunk = 16;
    opt.backing = backing;
    opt.hugepages = true;
    const size_t free_huge_before = free_hugepages();
    std::unique_ptr<Pool> p;
    ASSERT_EQ(Pool::create(opt, &p), 0);
    const size_t free_huge = free_huge_before;
    if (free_huge == 0) {
      EXPECT_FALSE(p->chunk_huge(0));
    } else if (free_huge >= 4) {  // plenty, unless someone takes them meanwhile
      EXPECT_TRUE(p->chunk_huge(0));
    }
    Buffer b = p->get();
    ASSERT_TRUE(b);
    std::memset(b.frame(), 1, b.frame_size());
  }
}

}  // namespace
}  // namespace ss::mem
