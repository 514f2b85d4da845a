// ListenerSet::fork_child (listener_set.h): in a fork child the members
// the child can serve go on, those it cannot (verbs: the parent's rdma_cm
// ids) are let go of, never destroyed; 1 then, -ENOTSUP when none is left.
// Called here outside a fork: the set only swaps its epoll set and asks
// its members.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include <gtest/gtest.h>

#include "core/prov/listener_set.h"

namespace ss::prov {
namespace {

// A member readable when `pending`, answering fork_child with `fork_rc`;
// counts its destruction.
class FakeListener final : public Listener {
 public:
  FakeListener(int fork_rc, int* destroyed) : fork_rc_(fork_rc), destroyed_(destroyed) {
    efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~FakeListener() override {
    ++*destroyed_;
    ::close(efd_);
  }
  int fd() const override { return efd_; }
  int get_request(std::unique_ptr<Endpoint>*) override { return -EAGAIN; }
  int fork_child() override { return fork_rc_; }
  void make_readable() const {
    uint64_t one = 1;
    ASSERT_EQ(sizeof one, static_cast<size_t>(::write(efd_, &one, sizeof one)));
  }

 private:
  int efd_ = -1;
  int fork_rc_;
  int* destroyed_;
};

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

TEST(ListenerSetFork, ChildKeepsTheMembersItCanServe) {
  int destroyed = 0;
  std::unique_ptr<ListenerSet> set;
  ASSERT_EQ(0, ListenerSet::create(&set));
  auto ours = std::make_unique<FakeListener>(0, &destroyed);
  auto* kept = ours.get();
  // The parent's: leaked on purpose by the set (its objects are not ours).
  auto* parents = new FakeListener(-ENOTSUP, &destroyed);
  ASSERT_EQ(0, set->add(std::move(ours)));
  ASSERT_EQ(0, set->add(std::unique_ptr<Listener>(parents)));
  EXPECT_EQ(1, set->fork_child());
  EXPECT_EQ(0, destroyed);
  ASSERT_GE(set->fd(), 0);
  EXPECT_FALSE(readable(set->fd()));
  parents->make_readable();  // the parent's member no longer wakes the set
  EXPECT_FALSE(readable(set->fd()));
  kept->make_readable();
  EXPECT_TRUE(readable(set->fd())) << "the kept member is not in the child's epoll set";
  set.reset();
  EXPECT_EQ(1, destroyed);  // the kept one only
  delete parents;
}

TEST(ListenerSetFork, NothingLeftIsNotSupported) {
  int destroyed = 0;
  std::unique_ptr<ListenerSet> set;
  ASSERT_EQ(0, ListenerSet::create(&set));
  auto* parents = new FakeListener(-ENOTSUP, &destroyed);
  ASSERT_EQ(0, set->add(std::unique_ptr<Listener>(parents)));
  EXPECT_EQ(-ENOTSUP, set->fork_child());
  EXPECT_EQ(-1, set->fd());
  set.reset();
  EXPECT_EQ(0, destroyed);
  delete parents;
}

TEST(ListenerSetFork, AllServedIsZero) {
  int destroyed = 0;
  std::unique_ptr<ListenerSet> set;
  ASSERT_EQ(0, ListenerSet::create(&set));
  ASSERT_EQ(0, set->add(std::make_unique<FakeListener>(0, &destroyed)));
  ASSERT_EQ(0, set->add(std::make_unique<FakeListener>(0, &destroyed)));
  EXPECT_EQ(0, set->fork_child());
  set.reset();
  EXPECT_EQ(2, destroyed);
}

}  // namespace
}  // namespace ss::prov
