// The packets the Extra API lends (libvmacompat/held_packets.h) and the
// receive callback's verdicts (libvmacompat/recv_callback.h), on frames
// of a test pool: a held frame stays out of the pool until released; a
// release with a foreign, repeated or freed id refuses all and loses
// nothing; the zero-copy record points into the frame; DROP recycles,
// HOLD keeps, RECV passes.
#include "libvmacompat/held_packets.h"
#include "libvmacompat/recv_callback.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/core/mem_test_pool.h"

namespace ss::vma {
namespace {

class HeldPacketsTest : public ::testing::Test {
 protected:
  void SetUp() override { pool = mem::make_pool(2048, 16, 1); }
  // A datagram of `text` from 10.0.0.2:4000, in a frame of the pool.
  net::Datagram datagram(const char* text) {
    net::Datagram d;
    d.buf = pool->get();
    EXPECT_TRUE(d.buf);
    const size_t n = std::strlen(text);
    EXPECT_EQ(d.buf.set_view(64, n), 0);
    std::memcpy(d.buf.data(), text, n);
    d.src = {net::IpAddr::parse("10.0.0.2"), 4000};
    return d;
  }
  std::unique_ptr<mem::Pool> pool;
};

TEST_F(HeldPacketsTest, HoldsUntilReleasedOnce) {
  HeldPackets held;
  const size_t all = pool->free_count();
  void* a = held.new_id();
  held.hold(a, datagram("one"));
  void* b = held.new_id();
  held.hold(b, datagram("two"));
  EXPECT_NE(a, b);
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(pool->free_count(), all - 2);
  const void* pa[] = {a};
  size_t bytes = 0;
  EXPECT_EQ(held.release(pa, &bytes), 0);
  EXPECT_EQ(bytes, 3u);
  EXPECT_EQ(pool->free_count(), all - 1);  // the frame is back
  EXPECT_EQ(held.release(pa), -ENOENT);    // freed already
  EXPECT_EQ(held.size(), 1u);
}

TEST_F(HeldPacketsTest, OldIdOfARecycledFrameFreesNothing) {
  HeldPackets held;
  void* a = held.new_id();
  net::Datagram one = datagram("one");
  void* frame = one.buf.frame();
  held.hold(a, std::move(one));
  const void* pa[] = {a};
  EXPECT_EQ(held.release(pa), 0);
  void* b = held.new_id();
  net::Datagram two = datagram("two");
  EXPECT_EQ(two.buf.frame(), frame);  // the pool lends the same frame again
  held.hold(b, std::move(two));
  EXPECT_NE(a, b);
  EXPECT_EQ(held.release(pa), -ENOENT);
  EXPECT_EQ(held.size(), 1u);
}

TEST_F(HeldPacketsTest, BadReleaseLosesNothing) {
  HeldPackets held;
  void* a = held.new_id();
  held.hold(a, datagram("one"));
  int foreign = 0;
  const void* two[2] = {a, &foreign};
  EXPECT_EQ(held.release(two), -ENOENT);
  two[1] = a;
  EXPECT_EQ(held.release(two), -ENOENT);  // the same id twice
  EXPECT_EQ(held.release({}), 0);
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(held.release({two, 1}), 0);
  EXPECT_EQ(held.size(), 0u);
}

TEST_F(HeldPacketsTest, TableReleasesWhatIsLeft) {
  const size_t all = pool->free_count();
  {
    HeldPackets held;
    held.hold(held.new_id(), datagram("one"));
    EXPECT_EQ(pool->free_count(), all - 1);
  }
  EXPECT_EQ(pool->free_count(), all);
}

TEST_F(HeldPacketsTest, OnePacketRecordPointsIntoTheFrame) {
  net::Datagram d = datagram("payload");
  alignas(8) uint8_t buf[kZcopyOnePacket + 1];
  // Unaligned on purpose: the records are packed.
  int id = 0;
  EXPECT_EQ(write_one_packet(buf + 1, &id, d), 7);
  // Fields read as values (+) or copied: EXPECT_EQ takes references, and a
  // reference to a packed record's field is misaligned.
  const auto* pk = reinterpret_cast<const vma_packets_t*>(buf + 1);
  EXPECT_EQ(+pk->n_packet_num, 1u);
  EXPECT_EQ(+pk->pkts[0].packet_id, &id);
  EXPECT_EQ(+pk->pkts[0].sz_iov, 1u);
  iovec iov;
  memcpy(&iov, buf + 1 + offsetof(vma_packets_t, pkts) + offsetof(vma_packet_t, iov), sizeof iov);
  EXPECT_EQ(iov.iov_base, d.buf.data());
  EXPECT_EQ(iov.iov_len, 7u);
  EXPECT_EQ(kZcopyOnePacket, 40u);
}

struct Seen {
  vma_recv_callback_retval_t verdict = VMA_PACKET_RECV;
  int calls = 0, fd = -1;
  size_t struct_sz = 0, payload_sz = 0;
  void* id = nullptr;
  std::string payload;
  uint16_t src_port = 0, dst_port = 0;
  bool nested = false;
  RecvCallback* cb = nullptr;
};

vma_recv_callback_retval_t on_packet(int fd, size_t sz_iov, iovec iov[], vma_info_t* info,
                                     void* context) {
  auto* s = static_cast<Seen*>(context);
  s->calls++;
  s->fd = fd;
  s->struct_sz = info->struct_sz;
  s->payload_sz = info->payload_sz;
  s->id = info->packet_id;
  if (sz_iov == 1) s->payload.assign(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len);
  s->src_port = ntohs(info->src->sin_port);
  s->dst_port = ntohs(info->dst->sin_port);
  s->nested = s->cb->running_here();
  return s->verdict;
}

TEST_F(HeldPacketsTest, CallbackVerdicts) {
  HeldPackets held;
  RecvCallback cb;
  Seen seen;
  seen.cb = &cb;
  const net::UdpAddr local{net::IpAddr::parse("10.0.0.1"), 5000};
  const size_t all = pool->free_count();

  net::Datagram d = datagram("none");
  EXPECT_FALSE(cb.active());
  EXPECT_EQ(cb.pass(7, &d, local, 0, 0, &held), VMA_PACKET_RECV);  // no callback: delivered
  EXPECT_EQ(seen.calls, 0);

  cb.set(on_packet, &seen);
  EXPECT_TRUE(cb.active());
  EXPECT_EQ(cb.pass(7, &d, local, 0, 0, &held), VMA_PACKET_RECV);
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.fd, 7);
  EXPECT_EQ(seen.struct_sz, sizeof(vma_info_t));
  EXPECT_EQ(seen.payload, "none");
  EXPECT_EQ(seen.payload_sz, 4u);
  EXPECT_EQ(seen.src_port, 4000);
  EXPECT_EQ(seen.dst_port, 5000);
  EXPECT_TRUE(seen.nested);
  EXPECT_FALSE(cb.running_here());
  EXPECT_TRUE(d.buf);

  seen.verdict = VMA_PACKET_DROP;
  EXPECT_EQ(cb.pass(7, &d, local, 0, 0, &held), VMA_PACKET_DROP);
  EXPECT_FALSE(d.buf);
  EXPECT_EQ(pool->free_count(), all);  // recycled

  seen.verdict = VMA_PACKET_HOLD;
  net::Datagram h = datagram("held");
  EXPECT_EQ(cb.pass(7, &h, local, 0, 0, &held), VMA_PACKET_HOLD);
  EXPECT_EQ(held.size(), 1u);
  EXPECT_EQ(pool->free_count(), all - 1);
  const void* p[] = {seen.id};
  EXPECT_EQ(held.release(p), 0);  // the callback's packet_id frees it
  EXPECT_EQ(pool->free_count(), all);

  cb.set(nullptr, nullptr);
  EXPECT_FALSE(cb.active());
  net::Datagram e = datagram("after");
  EXPECT_EQ(cb.pass(7, &e, local, 0, 0, &held), VMA_PACKET_RECV);
  EXPECT_EQ(seen.calls, 3);
}

}  // namespace
}  // namespace ss::vma
