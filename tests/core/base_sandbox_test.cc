// Locked in (core/base/sandbox.h): in a fork child under a seccomp filter
// that kills the process at sendmsg, recvmsg, eventfd2 or sched_yield (the
// calls core made before), with RLIMIT_NOFILE 0 as OpenSSH's sandbox sets
// it, descriptor passing moves bytes by read and write, refuses to pass a
// descriptor, a Kick makes no eventfd and a poll becomes a busy poll.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include <gtest/gtest.h>

#include "core/base/fd_passing.h"
#include "core/base/interruptible_poll.h"
#include "core/base/kick.h"
#include "core/base/sandbox.h"

namespace ss {
namespace {

// Kills the process at any of `killed`, allows the rest.
bool kill_at(const int* killed, int n) {
  sock_filter f[32];
  int k = 0;
  f[k++] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  f[k++] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  f[k++] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  f[k++] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
  for (int i = 0; i < n; i++) {
    f[k++] = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(killed[i]), 0, 1);
    f[k++] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  }
  f[k++] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog prog{static_cast<unsigned short>(k), f};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// The child's checks: its exit code names the first that failed.
int locked_in_child(int a, int b) {
  const int killed[] = {SYS_sendmsg, SYS_recvmsg, SYS_eventfd2, SYS_sched_yield};
  const rlimit none{0, 0};
  if (setrlimit(RLIMIT_NOFILE, &none) != 0) return 2;
  if (!kill_at(killed, 4)) return 3;
  sandbox::enter();
  if (!sandbox::locked_in()) return 4;
  char hdr[] = "head", body[] = "body";
  iovec out[2] = {{hdr, 4}, {body, 4}};
  // One write of the first iovec: the caller sends the rest next.
  if (send_with_fds(a, out, 2, nullptr, 0, MSG_DONTWAIT) != 4) return 5;
  if (send_with_fds(a, out + 1, 1, nullptr, 0, MSG_DONTWAIT) != 4) return 6;
  const int fd = 0;
  if (send_with_fds(a, out, 1, &fd, 1, MSG_DONTWAIT) != -EOPNOTSUPP) return 7;
  char in[8] = {};
  iovec iov{in, sizeof in};
  int got = -1;
  // Poll refused (RLIMIT_NOFILE 0): the non-blocking read says it.
  if (recv_with_fds(b, &iov, 1, nullptr, 0, &got, MSG_DONTWAIT) != 8 || got != 0) return 8;
  if (memcmp(in, "headbody", 8) != 0) return 9;
  if (recv_with_fds(b, &iov, 1, nullptr, 0, &got, MSG_DONTWAIT) != -EAGAIN) return 10;
  Kick kick;
  if (kick.join() != -EPERM) return 11;
  sandbox::yield_cpu();
  // More descriptors than RLIMIT_NOFILE: each counts as ready after a nap.
  pollfd p{b, POLLIN, 0};
  if (interruptible_poll(&p, 1, 1000) != 1 || p.revents != POLLIN) return 12;
  return 0;
}

TEST(SandboxTest, LockedInMovesBytesByReadAndWriteAlone) {
  int sv[2];
  ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
  const pid_t pid = fork();
  if (pid == 0) _exit(locked_in_child(sv[0], sv[1]));
  int st = -1;
  ASSERT_EQ(pid, waitpid(pid, &st, 0));
  EXPECT_TRUE(WIFEXITED(st)) << "killed by signal " << WTERMSIG(st)
                             << " (31: a call the filter kills)";
  EXPECT_EQ(0, WEXITSTATUS(st)) << "check " << WEXITSTATUS(st) << " of locked_in_child failed";
  close(sv[0]);
  close(sv[1]);
}

TEST(SandboxTest, NotLockedInOutsideAFilter) { EXPECT_FALSE(sandbox::locked_in()); }

}  // namespace
}  // namespace ss
