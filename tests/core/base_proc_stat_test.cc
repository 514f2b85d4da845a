// read_proc_stat: this process's own fields against what the kernel says
// through other calls, a zombie child's state and exit flag, and a pid
// that is gone.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/proc_stat.h"

namespace {

TEST(ProcStat, OwnFieldsMatchTheKernels) {
  ss::ProcStat st;
  ASSERT_TRUE(ss::read_proc_stat(getpid(), &st));
  EXPECT_EQ(st.ppid, getppid());
  EXPECT_EQ(st.state, 'R');  // reading its own file
  EXPECT_GT(st.start_ticks, 0u);
  EXPECT_EQ(st.flags & 0x4, 0u);  // not exiting
}

TEST(ProcStat, AnUnreapedChildIsAZombieAndAReapedOneIsGone) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(0);
  ss::ProcStat st;
  for (int i = 0; i < 1000 && ss::read_proc_stat(pid, &st) && st.state != 'Z'; i++) usleep(1000);
  ASSERT_TRUE(ss::read_proc_stat(pid, &st));
  EXPECT_EQ(st.state, 'Z');
  EXPECT_EQ(st.ppid, getpid());
  EXPECT_NE(st.flags & 0x4, 0u);  // PF_EXITING: a zombie has exited
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  EXPECT_FALSE(ss::read_proc_stat(pid, &st));
  EXPECT_FALSE(ss::read_proc_stat(0, &st));
}

}  // namespace
