// A fork child a test made, killed and waited for when the scope ends
// (an assertion that fails leaves no child holding the test's resources);
// release() once the test waited for it itself.
#pragma once
#include <signal.h>
#include <sys/wait.h>

namespace sstest {

struct ChildReaper {
  pid_t pid;
  ~ChildReaper() {
    if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
  }
  void release() { pid = 0; }
};

}  // namespace sstest
