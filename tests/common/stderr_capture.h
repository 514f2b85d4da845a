// Test helper: redirects fd 2 into a pipe until text() is called (the
// logger writes with write(2), so only an fd-level capture sees it).
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace sstest {

class StderrCapture {
 public:
  StderrCapture() {
    fflush(stderr);
    if (pipe2(fds_, O_CLOEXEC) != 0) return;
    fcntl(fds_[0], F_SETPIPE_SZ, 1 << 20);  // room for chatty code under test
    saved_ = dup(STDERR_FILENO);
    dup2(fds_[1], STDERR_FILENO);
    close(fds_[1]);
  }
  ~StderrCapture() { text(); }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  std::string text() {
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);  // the last writer goes away: read sees EOF
      close(saved_);
      saved_ = -1;
      char buf[4096];
      for (ssize_t n; (n = read(fds_[0], buf, sizeof buf)) > 0;) out_.append(buf, n);
      close(fds_[0]);
    }
    return out_;
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
  std::string out_;
};

}  // namespace sstest
