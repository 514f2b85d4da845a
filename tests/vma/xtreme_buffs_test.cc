// The buffers socketXtreme lends (libvmacompat/xtreme_buffs.h), on frames
// of a test pool: the vma_buff_t sits at the frame's start and describes
// the payload in place; the frame stays out of the pool until its count
// reaches 0; ref/unref return the new count; a made-up pointer, one
// inside a frame but not at its start, a freed buffer and a packet list
// naming a buffer twice are refused with nothing freed; a shared frame
// (multicast) is copied; a read lends what it wrote into a fresh frame.
#include "libvmacompat/xtreme_buffs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/core/mem_test_pool.h"

namespace ss::vma {
namespace {

class XtremeBuffsTest : public ::testing::Test {
 protected:
  void SetUp() override { pool = mem::make_pool(2048, 16, 1); }
  // A datagram of `text` at `at` in a frame of the pool (as the rings
  // leave it: headers and XDP headroom in front).
  net::Datagram datagram(const char* text, size_t at = 298) {
    net::Datagram d;
    d.buf = pool->get();
    EXPECT_TRUE(d.buf);
    const size_t n = std::strlen(text);
    EXPECT_EQ(d.buf.set_view(at, n), 0);
    std::memcpy(d.buf.data(), text, n);
    d.src = {net::IpAddr::parse("10.0.0.2"), 4000};
    return d;
  }
  static vma_packet_desc_t packet(vma_buff_t* b) {
    vma_packet_desc_t p{};
    p.num_bufs = 1;
    p.total_len = b ? b->len : 0;
    p.buff_lst = b;
    return p;
  }
  std::unique_ptr<mem::Pool> pool;
  XtremeBuffs buffs;
};

// A buffer lent for an owner (a TCP connection) tells it its bytes when
// its last reference goes, and the owner outlives its own release while
// a buffer is out.
TEST_F(XtremeBuffsTest, AnOwnerLearnsTheBytesFreed) {
  LentOwner* owner = LentOwner::make();
  net::Datagram d = datagram("twelve bytes");
  vma_buff_t* b = nullptr;
  ASSERT_EQ(buffs.lend(d, &b, owner), 0);
  EXPECT_FALSE(d.buf);
  owner->unref();  // the connection went; the buffer keeps the owner
  EXPECT_EQ(buffs.ref(b), 2);
  EXPECT_EQ(buffs.unref(b), 1);
  EXPECT_EQ(owner->collect(), 0u);
  owner->ref();  // looked at again below: kept past the last buffer
  EXPECT_EQ(buffs.unref(b), 0);
  EXPECT_EQ(owner->collect(), 12u);
  EXPECT_EQ(owner->collect(), 0u);
  owner->unref();
}

// An owner's wake: once armed, the next free calls it once (on the
// freeing thread); unarmed, frees call nothing. buffers_out counts.
TEST_F(XtremeBuffsTest, AnArmedOwnerWakesAtTheNextFree) {
  LentOwner* owner = LentOwner::make();
  int woken = 0;
  owner->set_wake([](void* n) { ++*static_cast<int*>(n); }, &woken);
  vma_buff_t* b[3] = {};
  for (vma_buff_t*& x : b) {
    net::Datagram d = datagram("abc");
    ASSERT_EQ(buffs.lend(d, &x, owner), 0);
  }
  EXPECT_EQ(owner->buffers_out(), 3u);
  EXPECT_EQ(buffs.unref(b[0]), 0);
  EXPECT_EQ(woken, 0);  // not armed
  owner->arm_wake();
  EXPECT_EQ(buffs.unref(b[1]), 0);
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(owner->buffers_out(), 1u);
  EXPECT_EQ(buffs.unref(b[2]), 0);
  EXPECT_EQ(woken, 1);  // once per arming
  owner->unref();
}

TEST_F(XtremeBuffsTest, ASharedCountWakesAtAnyOwnersFree) {
  LentOwner::Share share;
  int woken = 0;
  LentOwner* owners[2] = {LentOwner::make(), LentOwner::make()};
  vma_buff_t* b[2] = {};
  for (int i = 0; i < 2; i++) {
    owners[i]->set_wake([](void* n) { ++*static_cast<int*>(n); }, &woken);
    owners[i]->set_share(&share);
    net::Datagram d = datagram("abc");
    ASSERT_EQ(buffs.lend(d, &b[i], owners[i]), 0);
  }
  EXPECT_EQ(share.out.load(), 2u);
  share.armed = true;  // a poller stopped at the shared cap, not at owner 1's own
  EXPECT_EQ(buffs.unref(b[1]), 0);
  EXPECT_EQ(woken, 1);
  EXPECT_EQ(share.out.load(), 1u);
  EXPECT_EQ(buffs.unref(b[0]), 0);
  EXPECT_EQ(woken, 1);  // once per arming
  EXPECT_EQ(share.out.load(), 0u);
  for (LentOwner* o : owners) o->unref();
}

TEST_F(XtremeBuffsTest, LentInPlaceAtTheFrameStart) {
  const size_t all = pool->free_count();
  net::Datagram d = datagram("hello");
  void* frame = d.buf.frame();
  void* payload = d.buf.data();
  vma_buff_t* b = nullptr;
  ASSERT_EQ(buffs.lend(d, &b), 0);
  EXPECT_EQ(static_cast<void*>(b), frame);
  EXPECT_EQ(b->payload, payload);
  EXPECT_EQ(b->len, 5);
  EXPECT_EQ(b->next, nullptr);
  EXPECT_EQ(std::memcmp(b->payload, "hello", 5), 0);
  EXPECT_EQ(pool->free_count(), all - 1);
  EXPECT_EQ(buffs.ref(b), 2);
  EXPECT_EQ(buffs.ref(b), 3);
  EXPECT_EQ(buffs.unref(b), 2);
  EXPECT_EQ(buffs.unref(b), 1);
  EXPECT_EQ(pool->free_count(), all - 1);
  EXPECT_EQ(buffs.unref(b), 0);
  EXPECT_EQ(pool->free_count(), all);  // the frame is back
  EXPECT_EQ(buffs.unref(b), -EINVAL);  // freed already
  EXPECT_EQ(buffs.ref(b), -EINVAL);
  EXPECT_EQ(pool->free_count(), all);
}

// lend_read (socketXtreme's kernel-path data): the reader writes into a
// fresh frame, at most `most` bytes and the frame's room; what it wrote
// is lent there; a reader's 0 or -errno lends nothing and the frame goes
// back; an empty pool says -ENOBUFS without calling the reader.
TEST_F(XtremeBuffsTest, ReadIntoAFreshFrameAndLent) {
  const size_t all = pool->free_count();
  size_t offered = 0;
  vma_buff_t* b = nullptr;
  auto write_hello = [&](void* to, size_t room) -> ssize_t {
    offered = room;
    const size_t n = std::min<size_t>(room, 5);
    std::memcpy(to, "hello", n);
    return static_cast<ssize_t>(n);
  };
  ASSERT_EQ(buffs.lend_read(pool.get(), 100000, write_hello, &b), 5);
  EXPECT_LT(offered, 2048u);  // the frame's room after the descriptor
  EXPECT_GT(offered, 1900u);
  EXPECT_EQ(b->len, 5);
  EXPECT_EQ(std::memcmp(b->payload, "hello", 5), 0);
  EXPECT_EQ(pool->free_count(), all - 1);
  vma_buff_t* second = nullptr;
  ASSERT_EQ(buffs.lend_read(pool.get(), 3, write_hello, &second), 3);
  EXPECT_EQ(offered, 3u);
  EXPECT_EQ(std::memcmp(second->payload, "hel", 3), 0);
  EXPECT_EQ(buffs.unref(second), 0);
  vma_buff_t* none = nullptr;
  EXPECT_EQ(buffs.lend_read(
                pool.get(), 100, [](void*, size_t) -> ssize_t { return 0; }, &none),
            0);
  EXPECT_EQ(buffs.lend_read(
                pool.get(), 100, [](void*, size_t) -> ssize_t { return -EAGAIN; }, &none),
            -EAGAIN);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(pool->free_count(), all - 1);  // only the first is out
  std::vector<mem::Buffer> taken;
  while (mem::Buffer f = pool->get()) taken.push_back(std::move(f));
  bool called = false;
  EXPECT_EQ(buffs.lend_read(
                pool.get(), 100,
                [&](void*, size_t) -> ssize_t {
                  called = true;
                  return 1;
                },
                &none),
            -ENOBUFS);
  EXPECT_FALSE(called);
  taken.clear();
  EXPECT_EQ(buffs.unref(b), 0);
  EXPECT_EQ(pool->free_count(), all);
}

TEST_F(XtremeBuffsTest, ForeignPointersRefused) {
  vma_buff_t* b = nullptr;
  net::Datagram x = datagram("x");
  ASSERT_EQ(buffs.lend(x, &b), 0);
  vma_buff_t stack{};
  EXPECT_EQ(buffs.ref(&stack), -EINVAL);
  EXPECT_EQ(buffs.unref(&stack), -EINVAL);
  EXPECT_EQ(buffs.unref(nullptr), -EINVAL);
  // Inside the lent frame, but not its start; a frame never lent.
  auto* inside = reinterpret_cast<vma_buff_t*>(reinterpret_cast<char*>(b) + 8);
  EXPECT_EQ(buffs.unref(inside), -EINVAL);
  mem::Buffer other = pool->get();
  EXPECT_EQ(buffs.unref(static_cast<vma_buff_t*>(other.frame())), -EINVAL);
  // Another XtremeBuffs does not take this one's buffers.
  XtremeBuffs stranger;
  EXPECT_EQ(stranger.unref(b), -EINVAL);
  EXPECT_EQ(buffs.unref(b), 0);
}

TEST_F(XtremeBuffsTest, FreePacketsAllOrNothing) {
  const size_t all = pool->free_count();
  vma_buff_t *a = nullptr, *b = nullptr;
  net::Datagram one = datagram("one"), two = datagram("two");
  ASSERT_EQ(buffs.lend(one, &a), 0);
  ASSERT_EQ(buffs.lend(two, &b), 0);
  EXPECT_EQ(buffs.free_packets(nullptr, 1), -EINVAL);
  vma_packet_desc_t twice[2] = {packet(a), packet(a)};
  EXPECT_EQ(buffs.free_packets(twice, 2), -EINVAL);
  vma_buff_t fake{};
  vma_packet_desc_t bad[2] = {packet(a), packet(&fake)};
  EXPECT_EQ(buffs.free_packets(bad, 2), -EINVAL);
  vma_packet_desc_t none[1] = {packet(nullptr)};
  EXPECT_EQ(buffs.free_packets(none, 1), -EINVAL);
  EXPECT_EQ(pool->free_count(), all - 2);  // nothing freed by the refusals
  EXPECT_EQ(buffs.ref(b), 2);              // b outlives its packet's free
  vma_packet_desc_t good[2] = {packet(a), packet(b)};
  EXPECT_EQ(buffs.free_packets(good, 2), 0);
  EXPECT_EQ(pool->free_count(), all - 1);
  EXPECT_EQ(buffs.free_packets(good, 1), -EINVAL);  // a is freed already
  EXPECT_EQ(buffs.unref(b), 0);
  EXPECT_EQ(pool->free_count(), all);
}

TEST_F(XtremeBuffsTest, SharedOrCrampedFramesCopied) {
  net::Datagram d = datagram("group");
  mem::Buffer member = d.buf.share();  // another member's handle
  vma_buff_t* b = nullptr;
  ASSERT_EQ(buffs.lend(d, &b), 0);
  EXPECT_NE(static_cast<void*>(b), member.frame());
  EXPECT_NE(b->payload, member.data());
  EXPECT_EQ(b->len, 5);
  EXPECT_EQ(std::memcmp(b->payload, "group", 5), 0);
  EXPECT_EQ(member.use_count(), 1u);  // the member's frame untouched
  EXPECT_EQ(buffs.unref(b), 0);
  // No room in front of the payload for the descriptor: copied too.
  net::Datagram tight = datagram("tight", 8);
  void* tight_frame = tight.buf.frame();
  ASSERT_EQ(buffs.lend(tight, &b), 0);
  EXPECT_NE(static_cast<void*>(b), tight_frame);
  EXPECT_EQ(std::memcmp(b->payload, "tight", 5), 0);
  EXPECT_EQ(buffs.unref(b), 0);
}

}  // namespace
}  // namespace ss::vma
