// SO_VMA_RING_ALLOC_LOGIC's value (libvmacompat/ring_logic.h): libvma's
// EINVAL cases (null, a size other than the struct's, a comp_mask with no
// known bit) and ours (a logic not ring_logic_t's, a profile key: none
// exists here), each leaving the socket's logic as it was; every
// ring_logic_t value accepted for the side the value names, with its user
// id; a value naming no side accepted and changing nothing.
#include "libvmacompat/ring_logic.h"

#include <gtest/gtest.h>
#include <mellanox/vma_extra.h>

#include <cerrno>

namespace ss::vma {
namespace {

vma_ring_alloc_logic_attr attr(uint32_t mask, int logic, bool in, bool out) {
  vma_ring_alloc_logic_attr a{};
  a.comp_mask = mask;
  a.ring_alloc_logic = static_cast<ring_logic_t>(logic);
  a.ingress = in;
  a.engress = out;
  return a;
}

constexpr uint32_t kIn = VMA_RING_ALLOC_MASK_RING_INGRESS, kOut = VMA_RING_ALLOC_MASK_RING_ENGRESS;

TEST(RingLogicTest, StartsAsTheSettings) {
  const RingLogic l(20, 31);
  EXPECT_EQ(l.rx().logic, 20);
  EXPECT_EQ(l.tx().logic, 31);
  EXPECT_EQ(l.rx().user_id, 0u);
}

TEST(RingLogicTest, LibvmasEinvals) {
  RingLogic l(0, 0);
  auto a = attr(kIn | kOut, RING_LOGIC_PER_SOCKET, true, true);
  EXPECT_EQ(l.set(nullptr, sizeof a), -EINVAL);
  EXPECT_EQ(l.set(&a, sizeof a - 1), -EINVAL);
  EXPECT_EQ(l.set(&a, sizeof a + 4), -EINVAL);
  EXPECT_EQ(l.set(&a, 0), -EINVAL);
  a.comp_mask = 1u << 4;  // none of the four
  EXPECT_EQ(l.set(&a, sizeof a), -EINVAL);
  a.comp_mask = 0;
  EXPECT_EQ(l.set(&a, sizeof a), -EINVAL);
  EXPECT_EQ(l.rx().logic, 0);
  EXPECT_EQ(l.tx().logic, 0);
}

TEST(RingLogicTest, UnknownLogicOrProfileKeyIsRefused) {
  RingLogic l(0, 0);
  for (int bad : {2, 9, 12, 21, 29, 32, -1, 1000}) {
    auto a = attr(kIn, bad, true, false);
    EXPECT_EQ(l.set(&a, sizeof a), -EINVAL) << bad;
  }
  auto a = attr(kIn | VMA_RING_ALLOC_MASK_RING_PROFILE_KEY, RING_LOGIC_PER_SOCKET, true, false);
  a.ring_profile_key = 3;
  EXPECT_EQ(l.set(&a, sizeof a), -EINVAL);
  EXPECT_EQ(l.rx().logic, 0);
  a.ring_profile_key = 0;  // no profile named
  EXPECT_EQ(l.set(&a, sizeof a), 0);
  EXPECT_EQ(l.rx().logic, RING_LOGIC_PER_SOCKET);
}

TEST(RingLogicTest, EveryLogicIsKeptForTheSideNamed) {
  for (int logic : {0, 1, 10, 11, 20, 30, 31}) {
    RingLogic l(0, 0);
    auto a = attr(kIn | VMA_RING_ALLOC_MASK_RING_USER_ID, logic, true, false);
    a.user_id = 77;
    ASSERT_EQ(l.set(&a, sizeof a), 0) << logic;
    EXPECT_EQ(l.rx().logic, logic);
    EXPECT_EQ(l.rx().user_id, 77u);
    EXPECT_EQ(l.tx().logic, 0) << "engress not named";
    a = attr(kOut, logic, false, true);
    ASSERT_EQ(l.set(&a, sizeof a), 0);
    EXPECT_EQ(l.tx().logic, logic);
    EXPECT_EQ(l.tx().user_id, 0u) << "no user id bit";
  }
}

TEST(RingLogicTest, ValueNamingNoSideChangesNothing) {
  RingLogic l(10, 10);
  // A mask bit without its flag, a flag without its bit, a user id alone.
  for (auto a :
       {attr(kIn, 20, false, false), attr(VMA_RING_ALLOC_MASK_RING_USER_ID, 20, true, true),
        attr(kOut, 99, true, false)}) {
    EXPECT_EQ(l.set(&a, sizeof a), 0);
    EXPECT_EQ(l.rx().logic, 10);
    EXPECT_EQ(l.tx().logic, 10);
  }
}

}  // namespace
}  // namespace ss::vma
