// Fork tests' children: each runs a body and exits with its result, ended
// by alarm() if it hangs (a failure its exit status names); the parent
// waits for it with a bound.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "tests/librsocket/conformance.h"

namespace rsconf {

constexpr unsigned kChildSeconds = 40;  // a child's alarm

// Runs `body` in a forked child, which exits with its result (0: good).
inline pid_t fork_child(const std::function<int()>& body) {
  fflush(nullptr);  // nothing buffered is written twice
  pid_t pid = fork();
  if (pid == 0) {
    alarm(kChildSeconds);
    _exit(body());
  }
  return pid;
}

// Waits up to `seconds` for the child to exit (then kills it): "" when it
// exited with 0, else what happened.
inline std::string wait_child(Reaper* child, int seconds) {
  int st = 0;
  for (int i = 0; i < seconds * 20; i++) {
    pid_t r = waitpid(child->pid, &st, WNOHANG);
    if (r == child->pid) {
      child->pid = -1;
      if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return "";
      if (WIFEXITED(st)) return "child exited with " + std::to_string(WEXITSTATUS(st));
      return "child killed by signal " + std::to_string(WTERMSIG(st)) +
             (WTERMSIG(st) == SIGALRM ? " (its alarm: it hung)" : "");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "child still running after " + std::to_string(seconds) + " s";
}

}  // namespace rsconf
