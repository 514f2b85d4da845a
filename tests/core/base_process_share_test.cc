// ProcessShare across real forks: the count of holders, and the turn that
// says whose copy of a shared object is current (the first holder to use
// it after a fork takes it; the others' copies are stale from then on).
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/base/process_share.h"

namespace ss {
namespace {

// What `child` returns, as the exit status of a fork child running it.
template <class F>
int in_child(F child) {
  const pid_t pid = fork();
  if (pid == 0) _exit(child());
  int st = -1;
  EXPECT_EQ(pid, waitpid(pid, &st, 0));
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

// A fork child that runs `child` (its return value, its exit status) only
// once go() is called; finish() waits for it and says whether it exited 0.
class LaterChild {
 public:
  template <class F>
  explicit LaterChild(F child) {
    if (pipe(go_) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      char c;
      _exit(read(go_[0], &c, 1) == 1 ? child() : 2);
    }
  }
  ~LaterChild() {
    for (int fd : go_)
      if (fd >= 0) close(fd);
  }
  void go() { EXPECT_EQ(1, write(go_[1], "x", 1)); }
  int finish() {
    int st = -1;
    EXPECT_EQ(pid_, waitpid(pid_, &st, 0));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
  }

 private:
  int go_[2] = {-1, -1};
  pid_t pid_ = -1;
};

// As librsocket's fork handler does for each share before fork.
void before_fork(ProcessShare& s) {
  s.add_holder();
  s.forked();
}

TEST(ProcessShareTest, NeverOpenedIsAlwaysCurrent) {
  ProcessShare s;
  EXPECT_TRUE(s.take_turn());
  EXPECT_TRUE(s.holds_turn());
  EXPECT_EQ(1u, s.holders());
}

TEST(ProcessShareTest, TheFirstUserAfterAForkMakesTheOtherCopyStale) {
  ProcessShare s;
  ASSERT_EQ(0, s.open());
  ASSERT_TRUE(s.take_turn());
  before_fork(s);
  EXPECT_TRUE(s.holds_turn());  // the parent's until another copy moves it
  // The child moves it first and exits still holding it.
  EXPECT_EQ(0, in_child([&] { return s.take_turn() && s.holds_turn() ? 0 : 1; }));
  EXPECT_EQ(2u, s.holders());  // the child never dropped its hold
  EXPECT_FALSE(s.holds_turn());
  EXPECT_FALSE(s.take_turn());  // the parent's copy is out of date
  EXPECT_FALSE(s.take_turn());  // for good
  s.drop();
}

TEST(ProcessShareTest, AParentUsingItFirstMakesTheChildsCopyStale) {
  ProcessShare s;
  ASSERT_EQ(0, s.open());
  before_fork(s);
  LaterChild child([&] { return s.take_turn() ? 1 : 0; });  // the parent moved it: stale
  ASSERT_TRUE(s.take_turn());
  child.go();
  EXPECT_EQ(0, child.finish());
  EXPECT_TRUE(s.take_turn());  // still the parent's
  s.drop();
}

TEST(ProcessShareTest, ACopyMadeBeforeAnotherProcessUsedItStaysStaleAfterLaterForks) {
  ProcessShare s;
  ASSERT_EQ(0, s.open());
  before_fork(s);
  // B: forked now, looks only after the parent used it and forked again.
  LaterChild b([&] { return s.take_turn() ? 1 : 0; });
  ASSERT_TRUE(s.take_turn());  // the parent moves it on
  before_fork(s);              // and forks C, whose copy is the parent's
  EXPECT_EQ(0, in_child([&] { return s.take_turn() ? 0 : 1; }));
  b.go();
  EXPECT_EQ(0, b.finish()) << "B's copy taken as current";
  s.drop();
}

TEST(ProcessShareTest, AHolderClosingWithoutMovingItLeavesTheTurnToTheChild) {
  ProcessShare s;
  ASSERT_EQ(0, s.open());
  ASSERT_TRUE(s.take_turn());
  before_fork(s);
  LaterChild child([&] { return !s.current() ? 3 : s.take_turn() && s.holds_turn() ? 0 : 1; });
  EXPECT_FALSE(s.drop());  // the parent closes its copy, the child holds one
  child.go();
  EXPECT_EQ(0, child.finish());
}

TEST(ProcessShareTest, LookingMovesNothing) {
  ProcessShare s;
  ASSERT_EQ(0, s.open());
  before_fork(s);
  // The child only looks; the parent then moves it.
  EXPECT_EQ(0, in_child([&] { return s.current() && !s.holds_turn() ? 0 : 1; }));
  EXPECT_FALSE(s.settled());  // just forked: the library's threads wait for a program
  EXPECT_TRUE(s.take_turn());
  EXPECT_TRUE(s.settled());
  EXPECT_TRUE(s.take_settled());
  s.drop();
}

TEST(ProcessShareTest, AFailedForkLeavesTheTurnToTakeAgain) {
  ProcessShare s;
  ASSERT_EQ(0, s.open());
  ASSERT_TRUE(s.take_turn());
  before_fork(s);
  s.remove_holder();  // no child
  EXPECT_TRUE(s.take_turn());
  EXPECT_EQ(1u, s.holders());
  EXPECT_TRUE(s.drop());
}

}  // namespace
}  // namespace ss
